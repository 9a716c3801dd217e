//! The panels. Each `*_ui` reads the session and pushes [`Command`]s; view settings (split,
//! zoom, lights) are edited in place since they change nothing but the view.

use super::budgets::{BudgetInput, BudgetRow};
use super::session::{RunState, Session};
use super::state::{CentralView, Command, RateGoal, ViewSettings};
use eframe::egui::{self, Color32, RichText};
use texset_core::{
    model::WeightFormat,
    options::{Preset, Quantisation},
};

/// File dialogs: opened on the thread `texset-dialog` so a native dialog never blocks a frame.
pub enum Dialog {
    /// Pick material folders to add.
    OpenFolders,
    /// Pick glTF assets (`.gltf`, `.glb`) to add.
    OpenAssets,
    /// Pick an HDR environment (`.hdr`, `.exr`) for the viewport.
    OpenEnvironment,
    /// Pick where the bundle goes.
    SaveBundle,
    /// Pick a folder for decoded images.
    ExportImages,
    /// Pick a folder for shaders.
    ExportShaders,
    /// Pick a folder for the asset written back as glTF.
    ExportGltf,
    /// Pick where a run's bundle goes.
    ExportRun(u64),
}

/// Rate-control target beside "Target bits/texel": none, a PSNR, or matching block compression.
fn goal_ui(ui: &mut egui::Ui, session: &Session, commands: &mut Vec<Command>) {
    let goal = session.settings.goal;
    ui.horizontal(|ui| {
        let label = ui.label("Target quality");
        let name = |g: RateGoal| match g {
            RateGoal::None => "none".to_owned(),
            RateGoal::Psnr(db) => format!("{db:.1} dB"),
            RateGoal::MatchBcHigh => "match BC7/BC5/BC4".to_owned(),
            RateGoal::MatchBcLow => "match BC1/BC5/BC4".to_owned(),
        };
        egui::ComboBox::from_id_salt("goal")
            .selected_text(name(goal))
            .show_ui(ui, |ui| {
                let psnr = if let RateGoal::Psnr(db) = goal { RateGoal::Psnr(db) } else { RateGoal::Psnr(40.0) };
                for (option, text) in [
                    (RateGoal::None, "none (one training)"),
                    (psnr, "PSNR"),
                    (RateGoal::MatchBcHigh, "match BC high (BC7/BC5/BC4)"),
                    (RateGoal::MatchBcLow, "match BC low (BC1/BC5/BC4)"),
                ] {
                    let selected = std::mem::discriminant(&goal) == std::mem::discriminant(&option);
                    if ui.selectable_label(selected, text).clicked() && !selected {
                        commands.push(Command::SetGoal(option));
                    }
                }
            })
            .response
            .labelled_by(label.id)
            .on_hover_text("Rate control: whole trainings at rates searched between the bracket's ends; the smallest bundle that reaches the target is kept (texset compress --target-psnr / --match-bc)");
        if let RateGoal::Psnr(mut db) = goal
            && ui.add(egui::DragValue::new(&mut db).range(20.0..=60.0).speed(0.1).suffix(" dB")).labelled_by(label.id).changed()
        {
            commands.push(Command::SetGoal(RateGoal::Psnr(db)));
        }
    });
}

/// A training time budget instead of the preset's steps.
fn time_budget_ui(ui: &mut egui::Ui, session: &Session, commands: &mut Vec<Command>) {
    let budget = session.settings.time_budget_secs;
    ui.horizontal(|ui| {
        let mut on = budget.is_some();
        if ui
            .checkbox(&mut on, "Time budget")
            .on_hover_text(
                "Train for about this long: a short timed probe sets the steps so the whole schedule fits (texset compress --time-budget)",
            )
            .changed()
        {
            commands.push(Command::SetTimeBudget(on.then_some(budget.unwrap_or(60.0))));
        }
        if let Some(mut secs) = budget
            && ui.add(egui::DragValue::new(&mut secs).range(5.0..=3600.0).speed(1.0).suffix(" s")).changed()
        {
            commands.push(Command::SetTimeBudget(Some(secs)));
        }
    });
}

/// Quantisation modes (latents, weights) and the decoder weight format.
fn quantisation_ui(ui: &mut egui::Ui, session: &Session, commands: &mut Vec<Command>) {
    let (latents, weights, format) = (session.settings.latent_quant, session.settings.weight_quant, session.settings.weight_format);
    let modes = [Quantisation::Auto, Quantisation::Qat, Quantisation::Ptq];
    ui.horizontal(|ui| {
        let label = ui.label("Latents");
        egui::ComboBox::from_id_salt("latent quant")
            .selected_text(latents.label())
            .show_ui(ui, |ui| {
                for m in modes {
                    if ui.selectable_label(m == latents, m.label()).clicked() && m != latents {
                        commands.push(Command::SetQuantisation(m, weights));
                    }
                }
            })
            .response
            .labelled_by(label.id)
            .on_hover_text("QAT trains against the rounding; PTQ rounds once at the end; auto picks the measured winner (QAT at 2 bits)");
        let label = ui.label("Weights");
        egui::ComboBox::from_id_salt("weight format")
            .selected_text(format.label())
            .show_ui(ui, |ui| {
                for f in WeightFormat::ALL {
                    if ui.selectable_label(f == format, f.label()).clicked() && f != format {
                        commands.push(Command::SetWeightFormat(f));
                    }
                }
            })
            .response
            .labelled_by(label.id)
            .on_hover_text("How the bundle stores the decoder's weights");
        egui::ComboBox::from_id_salt("weight quant")
            .selected_text(weights.label())
            .show_ui(ui, |ui| {
                for m in modes {
                    if ui.selectable_label(m == weights, m.label()).clicked() && m != weights {
                        commands.push(Command::SetQuantisation(latents, m));
                    }
                }
            })
            .response
            .labelled_by(label.id)
            .on_hover_text("QAT fine-tunes through the weight format; auto picks QAT for e4m3 only");
    });
}

/// Engine text for egui's built-in fonts, which lack arrows and some maths signs.
#[must_use]
pub fn plain(text: &str) -> String {
    text.replace('→', "->").replace('−', "-").replace('≥', ">=").replace('≤', "<=").replace('±', "+/-").replace(['–', '—'], "-")
}

/// The menu bar.
pub fn menu_ui(ui: &mut egui::Ui, session: &Session, dialogs: &mut Vec<Dialog>) {
    egui::MenuBar::new().ui(ui, |ui| {
        ui.menu_button("File", |ui| {
            if ui.button("Open folder…").clicked() {
                dialogs.push(Dialog::OpenFolders);
                ui.close();
            }
            if ui.button("Open glTF asset…").clicked() {
                dialogs.push(Dialog::OpenAssets);
                ui.close();
            }
            if ui.button("Open HDR environment…").clicked() {
                dialogs.push(Dialog::OpenEnvironment);
                ui.close();
            }
            let finished = session.shown.trained.as_ref().is_some_and(|t| t.bytes.is_some());
            let any = session.shown.trained.is_some();
            if ui.add_enabled(finished, egui::Button::new("Export bundle…")).clicked() {
                dialogs.push(Dialog::SaveBundle);
                ui.close();
            }
            if ui.add_enabled(any, egui::Button::new("Export decoded images…")).clicked() {
                dialogs.push(Dialog::ExportImages);
                ui.close();
            }
            if ui.add_enabled(any, egui::Button::new("Export shaders…")).clicked() {
                dialogs.push(Dialog::ExportShaders);
                ui.close();
            }
            // An asset opened from glTF goes back out as glTF, its bundle beside it.
            let gltf = finished && session.gltf_asset().is_some();
            if ui
                .add_enabled(gltf, egui::Button::new("Export as glTF…"))
                .on_disabled_hover_text("for a library opened from one glTF asset, once training has finished")
                .clicked()
            {
                dialogs.push(Dialog::ExportGltf);
                ui.close();
            }
        });
        ui.separator();
        ui.label(RichText::new(format!("device: {}", session.status.device)).weak());
    });
}

/// Left panel: the materials and their maps, with ingest problems in plain words.
pub fn library_ui(ui: &mut egui::Ui, session: &Session, view: &mut ViewSettings, commands: &mut Vec<Command>) {
    ui.heading("Library");
    ui.label(RichText::new("Drop material folders or glTF assets (.gltf, .glb) here, or use the File menu.").weak());
    ui.separator();
    let set = &session.library.set;
    egui::ScrollArea::vertical().id_salt("library").show(ui, |ui| {
        for (mi, material) in set.materials.iter().enumerate() {
            egui::CollapsingHeader::new(RichText::new(&material.name).strong()).id_salt(("material", mi)).default_open(true).show(
                ui,
                |ui| {
                    for (ti, t) in material.textures.iter().enumerate() {
                        let selected = view.material == mi && view.map == ti;
                        let space = match t.info.color_space {
                            texset_core::set::ColorSpace::Srgb => "sRGB",
                            texset_core::set::ColorSpace::Linear => "linear",
                        };
                        let text = format!(
                            "{}  {}×{}  {}-bit {space}  {} ch",
                            t.info.kind.token(),
                            t.info.width,
                            t.info.height,
                            t.info.sample_format.bits(),
                            t.info.channels
                        );
                        if ui.selectable_label(selected, text).clicked() {
                            view.material = mi;
                            view.map = ti;
                        }
                    }
                    if let Some(folder) = session.settings.folders.iter().position(|f| *f == material.source_dir)
                        && ui.small_button("Remove from library").clicked()
                    {
                        commands.push(Command::RemoveMaterial(folder));
                    }
                },
            );
        }
        if !session.library.problems.is_empty() {
            ui.separator();
            ui.label(RichText::new("Problems").strong());
            for p in &session.library.problems {
                ui.label(RichText::new(plain(&format!("{}: {}", p.path.display(), p.message))).color(Color32::from_rgb(230, 120, 90)));
            }
        }
    });
}

/// Points a training curve is drawn with at most: the plots are a few hundred pixels wide, and on
/// a software GPU every point is triangles to rasterise (a status arrives twice a second, so an
/// hour's run has 7,200).
const MAX_CURVE_POINTS: usize = 400;

/// At most `max_points` of `points` (at least 2), evenly spaced by index, the first and the last
/// always kept.
fn thin_curve(points: &[[f64; 2]], max_points: usize) -> Vec<[f64; 2]> {
    let max_points = max_points.max(2);
    if points.len() <= max_points {
        return points.to_vec();
    }
    let last = points.len() - 1;
    (0..max_points).map(|i| points[i * last / (max_points - 1)]).collect()
}

/// Right panel, part 1: training controls, status and curves.
pub fn training_ui(ui: &mut egui::Ui, session: &Session, commands: &mut Vec<Command>) {
    ui.heading("Training");
    let training = session.is_training();
    ui.add_enabled_ui(!training, |ui| {
        ui.horizontal(|ui| {
            ui.label("Preset");
            for (preset, name) in [(Preset::Fast, "fast"), (Preset::Default, "default"), (Preset::High, "high"), (Preset::Max, "max")] {
                if ui.selectable_label(session.settings.preset == preset, name).clicked() && session.settings.preset != preset {
                    commands.push(Command::SetPreset(preset));
                }
            }
        });
        ui.horizontal(|ui| {
            let mut on = session.settings.bits_per_texel.is_some();
            let checkbox = ui.checkbox(&mut on, "Target bits/texel");
            if checkbox.changed() {
                commands.push(Command::SetBitsPerTexel(on.then_some(2.0)));
            }
            // Every value field is named by its label (screen readers; the UI tests check it).
            if let Some(mut bpp) = session.settings.bits_per_texel
                && ui.add(egui::DragValue::new(&mut bpp).range(0.25..=16.0).speed(0.05)).labelled_by(checkbox.id).changed()
            {
                commands.push(Command::SetBitsPerTexel(Some(bpp)));
            }
        });
        ui.horizontal(|ui| {
            let label = ui.label("Steps");
            let mut steps = session.settings.steps.unwrap_or_else(|| session.options().schedule.steps);
            if ui.add(egui::DragValue::new(&mut steps).range(10..=100_000).speed(10)).labelled_by(label.id).changed() {
                commands.push(Command::SetSteps(Some(steps)));
            }
        });
        let mut mips = session.settings.mips;
        if ui
            .checkbox(&mut mips, "Mip chain")
            .on_hover_text("Store a latent pyramid so every mip level decodes from its own latents (about a third more latent bits); the preview then filters by distance")
            .changed()
        {
            commands.push(Command::SetMips(mips));
        }
        goal_ui(ui, session, commands);
        time_budget_ui(ui, session, commands);
        quantisation_ui(ui, session, commands);
        let mut learn = session.settings.learn_budgets;
        if ui
            .checkbox(&mut learn, "Learn budgets")
            .on_hover_text("Let training drop the channels a texture does not use (a gate per texture and channel under a group lasso, cut at 30% of the steps); the budgets panel then shows what each texture kept and why. Trains on the CPU")
            .changed()
        {
            commands.push(Command::SetLearnBudgets(learn));
        }
    });
    ui.horizontal(|ui| {
        match session.training.run.state {
            RunState::Running => {
                if ui.button("Pause").clicked() {
                    commands.push(Command::PauseTraining);
                }
            }
            RunState::Paused => {
                if ui.button("Resume").clicked() {
                    commands.push(Command::ResumeTraining);
                }
            }
            _ => {
                let enabled = !session.library.set.materials.is_empty();
                if ui.add_enabled(enabled, egui::Button::new("Start training")).clicked() {
                    commands.push(Command::StartTraining);
                }
            }
        }
        if training && ui.button("Cancel").clicked() {
            commands.push(Command::CancelTraining);
        }
    });
    let run = &session.training.run;
    let state = match run.state {
        RunState::Idle => "idle",
        RunState::Running => "running",
        RunState::Paused => "paused",
        RunState::Finished => "finished",
        RunState::Cancelled => "cancelled",
        RunState::Failed => "failed",
    };
    ui.label(format!("State: {state}{}", run.pass.map(|p| format!(" ({p:?})")).unwrap_or_default()));
    if let Some(s) = &run.status {
        let steps_per_sec = f64::from(s.step) / s.elapsed_secs.max(1e-9);
        ui.label(format!(
            "step {}/{} · {} · {:.1} steps/s · ETA {:.0} s · ~{:.2} dB",
            s.step, s.total_steps, s.phase_label, steps_per_sec, s.eta_secs, s.psnr_estimate_db
        ));
        ui.add(egui::ProgressBar::new(s.step as f32 / s.total_steps.max(1) as f32));
    }
    if !run.psnr.is_empty() {
        let background = !super::paint_sparingly(ui.ctx());
        egui_plot::Plot::new("psnr_curve")
            .height(110.0)
            .allow_scroll(false)
            .show_background(background)
            .legend(egui_plot::Legend::default())
            .show(ui, |plot| {
                plot.line(egui_plot::Line::new("PSNR estimate (dB)", thin_curve(&run.psnr, MAX_CURVE_POINTS)));
            });
        egui_plot::Plot::new("loss_curve")
            .height(90.0)
            .allow_scroll(false)
            .show_background(background)
            .legend(egui_plot::Legend::default())
            .show(ui, |plot| {
                let log_loss: Vec<[f64; 2]> =
                    thin_curve(&run.loss, MAX_CURVE_POINTS).into_iter().map(|[x, y]| [x, y.max(1e-12).log10()]).collect();
                plot.line(egui_plot::Line::new("log10 loss (MSE)", log_loss));
            });
    }
    for line in &run.lines {
        ui.label(RichText::new(plain(line)).small());
    }
}

/// The rows the budget panel shows: from the bundle on screen, else from the analyse pass.
#[must_use]
pub fn budget_rows(session: &Session) -> Vec<BudgetRow> {
    if let Some(trained) = &session.shown.trained {
        return BudgetInput::from_manifest(&trained.bundle.manifest).rows();
    }
    if let Some(Ok(analysis)) = &session.library.analysis {
        let names: Vec<(String, Vec<String>)> = session
            .library
            .set
            .materials
            .iter()
            .map(|m| (m.name.clone(), m.textures.iter().map(|t| t.info.kind.token().to_owned()).collect()))
            .collect();
        return BudgetInput::from_layout(&analysis.layout, &names).rows();
    }
    Vec::new()
}

/// Right panel, part 2: channel budgets per texture, as bars, with the artist's overrides.
pub fn budgets_ui(ui: &mut egui::Ui, session: &Session, commands: &mut Vec<Command>) {
    ui.heading("Channel budgets");
    let rows = budget_rows(session);
    if rows.is_empty() {
        ui.label("Load a library to see its budgets.");
        return;
    }
    match &session.library.analysis {
        Some(Err(e)) => {
            ui.label(RichText::new(plain(e)).color(Color32::from_rgb(230, 120, 90)));
        }
        // What the rate chose for the grids, as the CLI prints it.
        Some(Ok(a)) => {
            if let Some(shape) = &a.report.shape {
                ui.label(RichText::new(format!("model shape for {}", shape.describe())).weak());
            }
        }
        None => {}
    }
    let total_bits: f64 = rows.iter().map(|r| r.bits).sum::<f64>().max(1.0);
    let mut reasons: std::collections::BTreeMap<&str, String> = match &session.library.analysis {
        Some(Ok(a)) => a.report.budgets.iter().map(|b| (b.texture.as_str(), b.reason.clone())).collect(),
        _ => std::collections::BTreeMap::new(),
    };
    // After a run: what training made of each budget (learned or pruned), below the analysis's.
    if let Some(report) = session.shown.trained.as_ref().and_then(|t| t.report.as_ref()) {
        for change in &report.prune.budgets {
            if let Some(reason) = reasons.get_mut(change.texture.as_str()) {
                *reason = format!("{reason}\nin the bundle: {} channels; {}", change.after, change.reason);
            }
        }
    }
    ui.label(RichText::new("channels read (shared/own) · share of the bundle's bits · budget").weak());
    let training = session.is_training();
    egui::Grid::new("budgets").striped(!super::paint_sparingly(ui.ctx())).num_columns(4).show(ui, |ui| {
        for row in &rows {
            let name = ui
                .label(RichText::new(&row.texture).monospace())
                .on_hover_text(plain(reasons.get(row.texture.as_str()).map_or("", String::as_str)));
            let share = (row.bits / total_bits) as f32;
            let fraction = row.channels as f32 / row.total_channels.max(1) as f32;
            let bar = egui::ProgressBar::new(fraction)
                .desired_width(130.0)
                .text(format!("{}/{}, {} shared", row.channels, row.total_channels, row.shared_channels));
            ui.add(bar);
            ui.label(if row.stored_once { "stored once".to_owned() } else { format!("{:.1}%", 100.0 * share) });
            ui.add_enabled_ui(!training, |ui| {
                let overridden = session.settings.budgets.get(&row.texture).copied();
                let mut value = overridden.unwrap_or(row.channels);
                let response = ui.add(egui::DragValue::new(&mut value).range(0..=row.total_channels).prefix("ch ")).labelled_by(name.id);
                if response.changed() {
                    commands.push(Command::SetBudget(row.texture.clone(), Some(value)));
                }
                if overridden.is_some() && ui.small_button("auto").on_hover_text("Let the analysis choose again").clicked() {
                    commands.push(Command::SetBudget(row.texture.clone(), None));
                }
            });
            ui.end_row();
        }
    });
    if !session.settings.budgets.is_empty() && session.shown.trained.is_some() {
        ui.label(RichText::new("Budgets changed: Start training to retrain with them.").weak());
    }
}

/// Right panel, part 3: scores of the bundle on screen.
pub fn scores_ui(ui: &mut egui::Ui, session: &Session) {
    ui.heading("Quality");
    let Some(decoded) = &session.shown.decoded else {
        ui.label(if session.shown.trained.is_some() { "decoding…" } else { "Train to see scores." });
        return;
    };
    let Some(scores) = &decoded.scores else { return };
    if session.current_decoded().is_none() {
        // The bundle on screen is still decoding: these scores are the previous one's, and its
        // size would not match them.
        ui.label(format!("decoding the new bundle… (previous: pooled {:.2} dB)", scores.pooled_psnr_db));
        return;
    }
    let trained = session.shown.trained.as_ref();
    let bytes = trained.and_then(|t| t.bytes.as_ref()).map(|b| b.len());
    let texels = session.library.set.texel_count().max(1);
    match bytes {
        Some(b) => {
            ui.label(format!("{b} bytes · {:.3} bits/texel · pooled {:.2} dB", b as f64 * 8.0 / texels as f64, scores.pooled_psnr_db))
        }
        None => ui.label(format!("snapshot of the model in training · pooled {:.2} dB", scores.pooled_psnr_db)),
    };
    egui::Grid::new("scores").striped(!super::paint_sparingly(ui.ctx())).show(ui, |ui| {
        for m in &scores.maps {
            ui.label(RichText::new(format!("{}/{}", m.material, m.map)).monospace());
            ui.label(format!("{:.2} dB", m.psnr_db));
            if m.ssim > 0.0 {
                ui.label(format!("SSIM {:.4}", m.ssim));
            }
            if let Some(flip) = m.flip {
                ui.label(format!("FLIP {flip:.4}"));
            }
            if let Some(degrees) = m.normal_angular_error_deg {
                ui.label(format!("{degrees:.2}° mean angle"));
            }
            ui.end_row();
        }
    });
    if !decoded.rendered.is_empty() {
        ui.label(RichText::new("Rendered (preview plane, 8 lights, original vs decoded maps)").weak());
        egui::Grid::new("rendered scores").striped(!super::paint_sparingly(ui.ctx())).show(ui, |ui| {
            for r in &decoded.rendered {
                ui.label(RichText::new(&r.material).monospace());
                ui.label(format!("{:.2} dB", r.rendered_psnr_db));
                ui.label(format!("FLIP {:.4}", r.rendered_flip));
                ui.end_row();
            }
        });
    }
}

/// Bottom bar: the newest messages.
pub fn status_ui(ui: &mut egui::Ui, session: &Session) {
    ui.horizontal(|ui| {
        if session.is_busy() {
            busy_indicator(ui);
        }
        if let Some(m) = session.status.messages.last() {
            let color = if m.is_error { Color32::from_rgb(230, 120, 90) } else { ui.visuals().text_color() };
            ui.label(RichText::new(plain(&m.text)).color(color));
        }
    });
}

/// A spinner while the session is busy. egui's asks for every frame it can get, which on a
/// software GPU is CPU time taken from the work it waits for (1.5 of 2 cores on lavapipe while
/// training, decision 021): there it turns only as fast as the busy studio repaints anyway
/// (every 250 ms).
fn busy_indicator(ui: &mut egui::Ui) {
    if !super::paint_sparingly(ui.ctx()) {
        ui.spinner();
        return;
    }
    let size = ui.style().spacing.interact_size.y;
    let (rect, _) = ui.allocate_exact_size(egui::vec2(size, size), egui::Sense::hover());
    let radius = rect.height() / 2.0 - 2.0;
    let start = ui.input(|i| i.time) * std::f64::consts::TAU;
    let points: Vec<egui::Pos2> = (0..=12)
        .map(|i| {
            let angle = (start + f64::from(i) * std::f64::consts::PI / 8.0) as f32;
            rect.center() + radius * egui::vec2(angle.cos(), angle.sin())
        })
        .collect();
    ui.painter().add(egui::Shape::line(points, egui::Stroke::new(2.0, ui.visuals().strong_text_color())));
}

/// Central tabs.
pub fn central_tabs_ui(ui: &mut egui::Ui, view: &mut ViewSettings) {
    ui.horizontal(|ui| {
        ui.selectable_value(&mut view.central, CentralView::Compare, "Compare");
        ui.selectable_value(&mut view.central, CentralView::Preview, "PBR preview");
        ui.separator();
        ui.checkbox(&mut view.side_panels, "side panels").on_hover_text("P: hide them and the view takes the window");
    });
}

#[cfg(test)]
mod tests {
    use super::thin_curve;

    #[test]
    fn thin_curves_keep_their_ends_and_order() {
        let points: Vec<[f64; 2]> = (0..1000).map(|i| [f64::from(i), f64::from(i * i)]).collect();
        let thin = thin_curve(&points, 400);
        assert_eq!(thin.len(), 400);
        assert_eq!(thin.first(), points.first());
        assert_eq!(thin.last(), points.last());
        assert!(thin.windows(2).all(|w| w[0][0] < w[1][0]), "strictly increasing steps");
        // Short curves are left alone.
        assert_eq!(thin_curve(&points[..10], 400), points[..10].to_vec());
        assert_eq!(thin_curve(&points, 0).len(), 2);
    }
}
