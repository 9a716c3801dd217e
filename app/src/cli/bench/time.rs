//! `texset bench time`: quality against wall time. Each folder is compressed at each rate with a
//! preset's schedule fitted to each training time budget (`--time-budget`), and scored: pooled
//! PSNR and rendered PSNR against the seconds the whole `compress` took; a curve per rate. `--label` names the
//! curve; `--save` keeps its points, and `--from` merges saved curves (builds or settings run one
//! after another on one machine) into one table and chart.

use anyhow::{Context as _, Result};
use std::path::PathBuf;
use std::time::Instant;
use texset::rendered::rendered_scores;
use texset_core::{
    Cancel, NoProgress, compress,
    decode::Decoder,
    eval::{decode_set, score},
    io::write_atomic,
    options::{CompressOptions, Preset},
};

use super::plot::{DbPoint, LegendEntry, Marker, distinct, psnr_panels};
use super::rd::{LIGHTS, RENDER_PX, pooled_rendered};
use super::{DirsArg, load_named};
use crate::cli::common::JsonArg;
use crate::cli::options::{ModelArgs, ScheduleArgs};

// `texset bench time`.
#[derive(clap::Args)]
pub(crate) struct TimeBenchArgs {
    #[command(flatten)]
    dirs: DirsArg,
    /// Training time budgets, seconds, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "15,30,60,120,240")]
    secs: Vec<f64>,
    /// Rates, bits per texel, comma-separated: a curve for each (the shape each rate gets,
    /// `options::RATE_SHAPES`, at every budget).
    #[arg(long, value_delimiter = ',', default_value = "4")]
    bpp: Vec<f64>,
    /// The preset whose schedule (learning rates, freeze points) is fitted to each budget.
    #[arg(long, value_enum, default_value_t = Preset::Default)]
    preset: Preset,
    /// The curve's name in the table and the chart (e.g. the build or the setting).
    #[arg(long, default_value = "texset")]
    label: String,
    /// Where the chart goes (PNG).
    #[arg(long, default_value = "time.png")]
    plot: PathBuf,
    /// Write every point measured so far to this file (JSON) after each one.
    #[arg(long)]
    save: Option<PathBuf>,
    /// Measure nothing: merge these files (from `--save`, comma-separated) into one table and
    /// chart.
    #[arg(long, value_delimiter = ',', conflicts_with = "dirs")]
    from: Vec<PathBuf>,
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    schedule: ScheduleArgs,
    #[command(flatten)]
    json: JsonArg,
}

/// One point of a curve.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) struct TimePoint {
    /// Folder name.
    pub set: String,
    /// The curve (`--label`).
    pub label: String,
    /// The rate asked for, bits per texel (files saved before rates were a list have none).
    #[serde(default)]
    pub asked_bits_per_texel: Option<f64>,
    /// The training time budget asked for, seconds.
    pub budget_secs: f64,
    /// The whole `compress` call (analysis, probe, training, quantisation, packing), seconds.
    pub wall_secs: f64,
    /// Training steps the budget bought.
    pub steps: u32,
    /// Bits per texel of the whole set.
    pub bits_per_texel: f64,
    /// PSNR pooled over every channel value of every map, dB.
    pub pooled_psnr_db: f64,
    /// PSNR of the lit renders, pooled over materials and lights, dB.
    pub rendered_psnr_db: f64,
}

impl TimeBenchArgs {
    pub(crate) fn run(self) -> Result<()> {
        let json = self.json.json;
        let points = if self.from.is_empty() { self.measure()? } else { load(&self.from)? };
        if !self.from.is_empty() {
            print_header(json);
            for p in &points {
                print_point(p, json);
            }
        }
        let image = chart(&points)?;
        let mut png = Vec::new();
        image.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)?;
        write_atomic(&self.plot, &png).with_context(|| format!("writing {}", self.plot.display()))?;
        if json {
            println!("{}", serde_json::to_string_pretty(&points)?);
        }
        eprintln!("wrote {}", self.plot.display());
        Ok(())
    }

    /// Every folder at every budget, in order.
    fn measure(&self) -> Result<Vec<TimePoint>> {
        anyhow::ensure!(
            !self.secs.is_empty() && self.secs.iter().all(|s| s.is_finite() && *s > 0.0),
            "--secs needs positive seconds, got {:?}",
            self.secs
        );
        anyhow::ensure!(
            !self.bpp.is_empty() && self.bpp.iter().all(|b| b.is_finite() && *b > 0.0),
            "--bpp needs positive rates, got {:?}",
            self.bpp
        );
        let json = self.json.json;
        let mut base = CompressOptions::preset(self.preset);
        self.model.apply(&mut base.model)?;
        self.schedule.apply(&mut base.schedule, &mut base.model.explicit)?;
        let mut points = Vec::new();
        print_header(json);
        for dir in self.dirs.clone().or_samples()? {
            let (name, set) = load_named(&dir)?;
            for (&bpp, &budget_secs) in self.bpp.iter().flat_map(|b| self.secs.iter().map(move |s| (b, s))) {
                let mut options = base.clone();
                options.fit_bits_per_texel_for(bpp, &set).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
                options.run.time_budget_secs = Some(budget_secs);
                let start = Instant::now();
                let out = compress(&set, &options, &NoProgress, &Cancel::new())
                    .with_context(|| format!("{}: {bpp} bits per texel, a {budget_secs} s budget", dir.display()))?;
                let wall_secs = start.elapsed().as_secs_f64();
                let decoded = decode_set(&set, &Decoder::new(&out.bundle))?;
                let rendered = rendered_scores(&set, &out.bundle.manifest, &decoded, LIGHTS, RENDER_PX);
                let point = TimePoint {
                    set: name.clone(),
                    label: self.label.clone(),
                    asked_bits_per_texel: Some(bpp),
                    budget_secs,
                    wall_secs,
                    steps: out.report.train.steps_run,
                    bits_per_texel: out.report.pack.bits_per_texel,
                    pooled_psnr_db: score(&set, &decoded, false).pooled_psnr_db,
                    rendered_psnr_db: pooled_rendered(&rendered),
                };
                print_point(&point, json);
                points.push(point);
                if let Some(save) = &self.save {
                    let text = serde_json::to_string_pretty(&points)?;
                    write_atomic(save, text.as_bytes()).with_context(|| format!("writing {}", save.display()))?;
                }
            }
        }
        Ok(points)
    }
}

/// The points of `files`, in file order.
fn load(files: &[PathBuf]) -> Result<Vec<TimePoint>> {
    let mut points = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let list: Vec<TimePoint> = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a list of quality-against-time points (`bench time --save` writes them)", file.display()))?;
        points.extend(list);
    }
    Ok(points)
}

/// The table's head (nothing under `--json`).
fn print_header(json: bool) {
    if !json {
        println!("| set | curve | rate asked | budget s | wall s | steps | bits/texel | PSNR | rendered PSNR |");
        println!("|---|---|---|---|---|---|---|---|---|");
    }
}

/// One point: a table row, or under `--json` a progress line on stderr.
fn print_point(p: &TimePoint, json: bool) {
    if json {
        eprintln!("{} {}: {} s budget, {:.1} s wall, {:.2} dB", p.set, p.series(), p.budget_secs, p.wall_secs, p.pooled_psnr_db);
    } else {
        let asked = p.asked_bits_per_texel.map_or_else(|| "–".to_owned(), |b| b.to_string());
        println!(
            "| {} | {} | {asked} | {} | {:.1} | {} | {:.3} | {:.2} dB | {:.2} dB |",
            p.set, p.label, p.budget_secs, p.wall_secs, p.steps, p.bits_per_texel, p.pooled_psnr_db, p.rendered_psnr_db
        );
    }
}

impl TimePoint {
    /// The curve this point is drawn on: its label, and its rate where one was saved.
    fn series(&self) -> String {
        self.asked_bits_per_texel.map_or_else(|| self.label.clone(), |b| format!("{} {b} bpt", self.label))
    }
}

/// Curve colours, by order of first appearance.
const PALETTE: [[u8; 3]; 6] = [[127, 127, 127], [31, 119, 180], [255, 127, 14], [44, 160, 44], [214, 39, 40], [148, 103, 189]];

/// Two panels per set (PSNR and rendered PSNR against wall seconds), a joined series per curve
/// (label and rate).
fn chart(points: &[TimePoint]) -> Result<image::RgbImage> {
    let sets = distinct(points.iter().map(|p| p.set.as_str()));
    let series: Vec<String> = points.iter().map(TimePoint::series).collect();
    let labels = distinct(series.iter().map(String::as_str));
    let colour = |i: usize| PALETTE[i % PALETTE.len()];
    let style = |label: &str| (colour(labels.iter().position(|l| *l == label).unwrap_or(0)), Marker::Circle, true);
    let db: Vec<DbPoint<'_>> = points
        .iter()
        .zip(&series)
        .map(|(p, s)| DbPoint { set: &p.set, series: s, x: p.wall_secs, psnr_db: p.pooled_psnr_db, rendered_psnr_db: p.rendered_psnr_db })
        .collect();
    let panels = psnr_panels(&db, &labels, "seconds (whole compress)", style);
    let legend: Vec<LegendEntry> = labels
        .iter()
        .enumerate()
        .map(|(i, &label)| LegendEntry { label: label.to_owned(), colour: colour(i), marker: Some(Marker::Circle), line: true })
        .collect();
    super::plot::render_grid(&panels, if sets.len() > 1 { 4 } else { 2 }, &legend, 560, 420)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn point(set: &str, label: &str, wall_secs: f64, psnr: f64) -> TimePoint {
        TimePoint {
            set: set.into(),
            label: label.into(),
            asked_bits_per_texel: None,
            budget_secs: wall_secs,
            wall_secs,
            steps: 100,
            bits_per_texel: 4.0,
            pooled_psnr_db: psnr,
            rendered_psnr_db: psnr + 3.0,
        }
    }

    #[test]
    fn the_chart_has_two_panels_per_set_and_a_colour_per_curve() {
        let points = vec![
            point("a", "before", 15.0, 30.0),
            point("a", "before", 30.0, 32.0),
            point("a", "after", 15.0, 31.0),
            point("a", "after", 30.0, 33.5),
        ];
        let chart = chart(&points).unwrap();
        assert_eq!(chart.width(), 2 * 560);
        assert!(chart.height() > 420);
        let count = |c: [u8; 3]| chart.pixels().filter(|p| p.0 == c).count();
        assert!(count(PALETTE[0]) > 50 && count(PALETTE[1]) > 50);
        assert_eq!(count(PALETTE[2]), 0, "two curves, two colours");
    }

    #[test]
    fn each_rate_is_its_own_curve() {
        let at =
            |bpp: f64, wall_secs: f64, psnr: f64| TimePoint { asked_bits_per_texel: Some(bpp), ..point("a", "texset", wall_secs, psnr) };
        let points = vec![at(4.0, 15.0, 30.0), at(4.0, 30.0, 32.0), at(8.0, 15.0, 31.0), at(8.0, 30.0, 34.0)];
        assert_eq!(points[2].series(), "texset 8 bpt");
        let chart = chart(&points).unwrap();
        let count = |c: [u8; 3]| chart.pixels().filter(|p| p.0 == c).count();
        assert!(count(PALETTE[0]) > 50 && count(PALETTE[1]) > 50, "a colour per rate");
        assert_eq!(count(PALETTE[2]), 0);
    }

    #[test]
    fn saved_points_load_back_and_a_foreign_file_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("a.json");
        let points = vec![point("a", "before", 15.0, 30.0)];
        std::fs::write(&good, serde_json::to_string(&points).unwrap()).unwrap();
        assert_eq!(load(std::slice::from_ref(&good)).unwrap(), points);
        let bad = dir.path().join("b.json");
        std::fs::write(&bad, "{\"not\": 1}").unwrap();
        let err = format!("{:#}", load(&[bad]).unwrap_err());
        assert!(err.contains("b.json") && err.contains("bench time --save"), "{err}");
    }
}
