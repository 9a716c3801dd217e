//! The experiment log: every training run that finished, with the settings it ran with, its
//! size and scores; its bundle is kept in the studio's data folder (`runs/run-N.texset`). The log
//! is a file of its own there ([`super::store::ExperimentLog`]). Any run can be shown,
//! exported, have its settings restored, or be put beside another (A/B) in Compare and in the
//! PBR preview.

use super::panels::Dialog;
use super::session::Session;
use super::state::{Command, RateGoal, Settings, ViewSettings};
use eframe::egui::{self, RichText};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use texset_core::{
    model::WeightFormat,
    options::{Preset, Quantisation},
};

/// The settings a run trained with (what "restore" puts back).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    /// Training preset.
    pub preset: Preset,
    /// Target bits per texel (`None`: the preset's grids).
    pub bits_per_texel: Option<f64>,
    /// Steps (`None`: the preset's).
    pub steps: Option<u32>,
    /// Mip chain stored.
    pub mips: bool,
    /// Budgets learned in training.
    pub learn_budgets: bool,
    /// The artist's budgets: `material/kind` → channels.
    pub budgets: BTreeMap<String, u32>,
    /// Rate-control goal.
    #[serde(default)]
    pub goal: RateGoal,
    /// Time budget, seconds.
    #[serde(default)]
    pub time_budget_secs: Option<f64>,
    /// Latent quantisation.
    #[serde(default)]
    pub latent_quant: Quantisation,
    /// Weight quantisation.
    #[serde(default)]
    pub weight_quant: Quantisation,
    /// Weight format.
    #[serde(default)]
    pub weight_format: WeightFormat,
}

impl RunSettings {
    /// The run-related part of `settings`.
    #[must_use]
    pub fn of(settings: &Settings) -> Self {
        Self {
            preset: settings.preset,
            bits_per_texel: settings.bits_per_texel,
            steps: settings.steps,
            mips: settings.mips,
            learn_budgets: settings.learn_budgets,
            budgets: settings.budgets.clone(),
            goal: settings.goal,
            time_budget_secs: settings.time_budget_secs,
            latent_quant: settings.latent_quant,
            weight_quant: settings.weight_quant,
            weight_format: settings.weight_format,
        }
    }

    /// Puts these back into `settings`.
    pub fn restore(&self, settings: &mut Settings) {
        settings.preset = self.preset;
        settings.bits_per_texel = self.bits_per_texel;
        settings.steps = self.steps;
        settings.mips = self.mips;
        settings.learn_budgets = self.learn_budgets;
        settings.budgets.clone_from(&self.budgets);
        settings.goal = self.goal;
        settings.time_budget_secs = self.time_budget_secs;
        settings.latent_quant = self.latent_quant;
        settings.weight_quant = self.weight_quant;
        settings.weight_format = self.weight_format;
    }

    /// A short description: preset, steps, target and options.
    #[must_use]
    pub fn summary(&self) -> String {
        let preset = match self.preset {
            Preset::Fast => "fast",
            Preset::Default => "default",
            Preset::High => "high",
            Preset::Max => "max",
        };
        let mut parts = vec![preset.to_owned()];
        if let Some(secs) = self.time_budget_secs {
            parts.push(format!("{secs:.0} s budget"));
        } else if let Some(steps) = self.steps {
            parts.push(format!("{steps} steps"));
        }
        if let Some(bpp) = self.bits_per_texel {
            parts.push(format!("target {bpp:.2} b/t"));
        }
        if self.mips {
            parts.push("mips".into());
        }
        if self.learn_budgets {
            parts.push("learned budgets".into());
        }
        match self.goal {
            RateGoal::None => {}
            RateGoal::Psnr(db) => parts.push(format!("target {db:.1} dB")),
            RateGoal::MatchBcHigh => parts.push("match BC7/BC5/BC4".into()),
            RateGoal::MatchBcLow => parts.push("match BC1/BC5/BC4".into()),
        }
        parts.push(format!("latents {}, weights {} {}", self.latent_quant.label(), self.weight_format.label(), self.weight_quant.label()));
        if !self.budgets.is_empty() {
            parts.push(format!("{} budget override(s)", self.budgets.len()));
        }
        parts.join(", ")
    }
}

/// One finished run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Number in the log (1, 2, …; never reused).
    pub id: u64,
    /// The library it trained on.
    pub folders: Vec<PathBuf>,
    /// Its settings.
    pub settings: RunSettings,
    /// Bundle size.
    pub bundle_bytes: u64,
    /// Bundle bits per texel of the library.
    pub bits_per_texel: f64,
    /// Pooled PSNR of the decoded maps (filled in once scored).
    pub psnr_db: Option<f64>,
    /// Mean rendered (lit) PSNR over the materials (filled in once scored).
    pub rendered_psnr_db: Option<f64>,
    /// Training time, seconds.
    pub train_secs: f64,
    /// Where its bundle is kept.
    pub bundle: PathBuf,
}

impl RunRecord {
    /// "#3".
    #[must_use]
    pub fn name(&self) -> String {
        format!("#{}", self.id)
    }
}

/// The folder in the data folder where run bundles are kept.
#[must_use]
pub fn runs_dir(data_dir: &std::path::Path) -> PathBuf {
    data_dir.join("runs")
}

/// The experiment log panel: one row per run of this library (newest first) with its scores, and
/// buttons to show it, put it on the A or B side, restore its settings, export or delete it.
pub fn runs_ui(ui: &mut egui::Ui, session: &Session, view: &mut ViewSettings, commands: &mut Vec<Command>, dialogs: &mut Vec<Dialog>) {
    ui.heading("Runs");
    let runs: Vec<&RunRecord> = session.log.runs.iter().rev().filter(|r| session.run_matches_library(r)).collect();
    let other = session.log.runs.len() - runs.len();
    if runs.is_empty() {
        ui.label("Every finished training run is kept here, with its settings and scores.");
    }
    if let Some([a, b]) = view.ab {
        ui.horizontal(|ui| {
            ui.label(RichText::new(format!("A/B: #{a} left, #{b} right (Compare and PBR preview)")).strong());
            if ui.button("end A/B").clicked() {
                view.ab = None;
            }
        });
    }
    egui::Grid::new("runs").striped(!super::paint_sparingly(ui.ctx())).show(ui, |ui| {
        for label in ["run", "bytes", "b/texel", "PSNR", "lit PSNR", "train", ""] {
            ui.label(RichText::new(label).weak());
        }
        ui.end_row();
        let db = |v: Option<f64>| v.map_or_else(|| "…".to_owned(), |v| format!("{v:.2} dB"));
        for run in &runs {
            ui.label(RichText::new(run.name()).monospace()).on_hover_text(run.settings.summary());
            ui.label(run.bundle_bytes.to_string());
            ui.label(format!("{:.3}", run.bits_per_texel));
            ui.label(db(run.psnr_db));
            ui.label(db(run.rendered_psnr_db));
            ui.label(format!("{:.1} s", run.train_secs));
            ui.horizontal(|ui| {
                if ui.small_button("show").on_hover_text("Show this run's bundle (Compare, preview, scores)").clicked() {
                    commands.push(Command::ShowRun(run.id));
                }
                let (a, b) = view.ab.map_or((None, None), |[a, b]| (Some(a), Some(b)));
                if ui.selectable_label(a == Some(run.id), "A").on_hover_text("Put this run on the left of the A/B views").clicked() {
                    view.ab = Some([run.id, b.or(a).filter(|&x| x != run.id).unwrap_or(run.id)]);
                }
                if ui.selectable_label(b == Some(run.id), "B").on_hover_text("Put this run on the right of the A/B views").clicked() {
                    view.ab = Some([a.or(b).filter(|&x| x != run.id).unwrap_or(run.id), run.id]);
                }
                if ui
                    .small_button("restore")
                    .on_hover_text(format!("Train with these settings again: {}", run.settings.summary()))
                    .clicked()
                {
                    commands.push(Command::RestoreRun(run.id));
                }
                if ui.small_button("export…").clicked() {
                    dialogs.push(Dialog::ExportRun(run.id));
                }
                if ui.small_button("delete").clicked() {
                    commands.push(Command::DeleteRun(run.id));
                }
            });
            ui.end_row();
        }
    });
    if other > 0 {
        ui.label(RichText::new(format!("{other} run(s) of other libraries are kept too")).weak());
    }
    rd_chart_ui(ui, session, &runs, commands);
    // Both sides of an A/B view must be loaded (and decoded) first.
    if let Some(ab) = view.ab {
        for id in ab {
            if !session.compare.loaded_runs.contains_key(&id) {
                commands.push(Command::LoadRun(id));
            }
        }
    }
}

/// What the bytes buy: the runs' pooled PSNR against bits per texel, beside the library
/// block-compressed as engines ship it (BC7/BC5/BC4 and BC1/BC5/BC4, measured with the real
/// encoder as `texset bench rd` does).
fn rd_chart_ui(ui: &mut egui::Ui, session: &Session, runs: &[&RunRecord], commands: &mut Vec<Command>) {
    if session.library.set.materials.is_empty() {
        return;
    }
    if session.compare.bc_baselines.is_none() {
        commands.push(Command::ComputeBcBaselines);
    }
    let points: Vec<[f64; 2]> = runs.iter().filter_map(|r| Some([r.bits_per_texel, r.psnr_db?])).collect();
    // A margin of 2 dB above and below every point, so no marker sits on the frame; the legend in
    // the lower right, where BC's points (higher rates, higher PSNR) are not.
    let psnrs = points.iter().map(|p| p[1]).chain(session.compare.bc_baselines.iter().flatten().map(|b| b.pooled_psnr_db));
    let (low_db, high_db) = psnrs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), db| (lo.min(db), hi.max(db)));
    let mut plot = egui_plot::Plot::new("runs_rd")
        .height(170.0)
        .allow_scroll(false)
        .show_background(!super::paint_sparingly(ui.ctx()))
        .include_x(0.0)
        .x_axis_label("bits per texel")
        .y_axis_label("PSNR (dB)")
        .legend(egui_plot::Legend::default().position(egui_plot::Corner::RightBottom));
    if low_db.is_finite() {
        plot = plot.include_y(low_db - 2.0).include_y(high_db + 2.0);
    }
    plot.show(ui, |plot| {
        plot.points(egui_plot::Points::new("runs", points).radius(4.0).color(egui::Color32::from_rgb(90, 170, 250)));
        for r in runs {
            if let Some(db) = r.psnr_db {
                plot.text(egui_plot::Text::new("run ids", egui_plot::PlotPoint::new(r.bits_per_texel, db + 0.4), r.name()));
            }
        }
        if let Some([high, low]) = &session.compare.bc_baselines {
            for (baseline, name, color) in
                [(high, "BC7/BC5/BC4", egui::Color32::from_rgb(240, 150, 60)), (low, "BC1/BC5/BC4", egui::Color32::from_rgb(200, 90, 90))]
            {
                plot.points(
                    egui_plot::Points::new(name, vec![[baseline.bits_per_texel, baseline.pooled_psnr_db]])
                        .radius(5.0)
                        .shape(egui_plot::MarkerShape::Diamond)
                        .color(color),
                );
            }
        }
    });
    if session.compare.bc_baselines.is_none() {
        ui.label(RichText::new("block-compressing the library for the BC points…").weak());
    }
}
