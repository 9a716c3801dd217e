//! `texset bench`: one subcommand per measurement. `train` and `decode` time the engine's hot
//! loops; `ui` the studio's frame time; `rd`, `time`, `quantisation`, `search` and `shared` compare
//! settings by whole compressions; `load` watches memory under sustained work; `ibl` times the viewport's
//! lighting preparation.

mod decode;
mod ibl;
mod load;
mod ntc;
mod plot;
mod quantisation;
mod rd;
mod search;
mod shared;
mod time;
mod train;
mod ui;

use anyhow::Result;
use std::path::{Path, PathBuf};

use super::common::{JsonArg, sample_folders};
use texset_core::set::load_library;

#[derive(clap::Subcommand)]
pub(super) enum BenchCommand {
    /// Training texels/s: the fused CPU trainer, and burn's backends when asked.
    Train(train::TrainBenchArgs),
    /// Decode texels/s: the CPU reference, and the WGSL decoder on a GPU when asked.
    ///
    /// Whole materials (multi- and single-threaded) and one texel at a time through the public
    /// API; with `--gpu`, whole maps and a 1920x1080 frame of random samples.
    Decode(decode::DecodeBenchArgs),
    /// The studio's frame time while it trains.
    ///
    /// Headless UI + tessellation in the Compare view, then rendered on a wgpu adapter with
    /// Compare and with the PBR preview open.
    Ui(ui::UiBenchArgs),
    /// Rate–distortion of texset's presets against BC, per folder: a table and a chart.
    ///
    /// BC7/BC5/BC4 and BC1/BC5/BC4 by the real encoder; PSNR and rendered PSNR against bits per
    /// texel.
    Rd(rd::RdArgs),
    /// Quality against wall time: a preset fitted to each training time budget, per folder.
    ///
    /// PSNR and rendered PSNR against the seconds each whole compression took; `--label` names
    /// the curve, `--from` merges saved curves into one chart.
    Time(Box<time::TimeBenchArgs>),
    /// QAT against PTQ, latents and weights, at each latent bit depth; the weight formats.
    ///
    /// Quantisation-aware training against post-training quantisation, one whole compression per
    /// cell; then the decoder's weight formats, each both ways.
    Quantisation(quantisation::QuantisationArgs),
    /// The precision search's strategies compared on each folder.
    ///
    /// `compress --search` with each strategy: the preset's shape against the best point found,
    /// in how many trials.
    Search(search::SearchBenchArgs),
    /// What sharing latents buys: a set compressed together against each texture alone.
    ///
    /// Each texture alone is compressed to the PSNR it has in the combined bundle (rate
    /// control); reports Σ bits alone ÷ combined bits, identical textures counted once and per
    /// material.
    Shared(shared::SharedArgs),
    /// Memory under load: many compressions, then a long run of random-texel decoding.
    ///
    /// Compresses generated materials one after another, then decodes random texels through the
    /// runtime API at a fixed rate; reports RSS at the start and end of each.
    Load(load::LoadArgs),
    /// Image-based lighting preparation: load an environment, then prepare it.
    ///
    /// Loading (or generating the studio environment), then the specular cube, SH9 and
    /// split-sum table at the default options, alternating; min and median ms of each.
    Ibl(ibl::IblBenchArgs),
}

impl BenchCommand {
    pub(super) fn run(self) -> Result<()> {
        match self {
            Self::Train(args) => args.run(),
            Self::Decode(args) => args.run(),
            Self::Ui(args) => args.run(),
            Self::Rd(args) => args.run(),
            Self::Time(args) => (*args).run(),
            Self::Quantisation(args) => args.run(),
            Self::Search(args) => args.run(),
            Self::Shared(args) => args.run(),
            Self::Load(args) => args.run(),
            Self::Ibl(args) => args.run(),
        }
    }
}

// The material folders a bench runs on.
#[derive(Clone, clap::Args)]
pub(super) struct DirsArg {
    /// Material folders (default: `sample_textures`/*).
    pub dirs: Vec<PathBuf>,
}

impl DirsArg {
    /// The folders given, or when none are the sample folders (an error when there are none either).
    pub(super) fn or_samples(self) -> Result<Vec<PathBuf>> {
        if !self.dirs.is_empty() {
            return Ok(self.dirs);
        }
        let dirs = sample_folders();
        if dirs.is_empty() {
            anyhow::bail!("no material folders given and no ./sample_textures to bench");
        }
        Ok(dirs)
    }
}

// `--runs` and `--json` of the throughput benches.
#[derive(clap::Args)]
pub(super) struct TimingArgs {
    /// Timed runs per measurement (median reported).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    #[command(flatten)]
    pub json: JsonArg,
}

/// One throughput figure of `bench train` or `bench decode` (the `--json` array's elements).
#[derive(serde::Serialize)]
pub(super) struct Measurement {
    pub what: String,
    pub texels_per_sec: f64,
    pub runs: usize,
    /// Extra figures (FLOP rate against the ceiling, frame time).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// Prints measurements as a JSON array or one line each.
pub(super) fn print_measurements(results: &[Measurement], json: bool) -> Result<()> {
    if json {
        return JsonArg::print(&results);
    }
    for r in results {
        println!("{:<80} {:>12.0} texels/s (median of {})", r.what, r.texels_per_sec, r.runs);
        if !r.note.is_empty() {
            println!("    {}", r.note);
        }
    }
    Ok(())
}

/// The median (the upper one of an even count; 0 for none).
pub(super) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// One material folder as its own set, named by the folder (what every per-set bench reports).
pub(super) fn load_named(dir: &Path) -> Result<(String, texset_core::set::TextureSet)> {
    let (set, _) = load_library(std::slice::from_ref(&dir.to_path_buf()))?;
    let name = dir.file_name().map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned());
    Ok((name, set))
}

// Helpers more than one bench reads: here, so that no bench module imports another.

/// `--mlp-shape`'s value.
pub(super) fn parse_shape(text: &str) -> Result<texset_core::model::wgsl::MlpShape, String> {
    match text {
        "vec4-rows" => Ok(texset_core::model::wgsl::MlpShape::Vec4Rows),
        "scalar" => Ok(texset_core::model::wgsl::MlpShape::Scalar),
        _ => Err(format!("{text:?} is not an MLP code shape: vec4-rows or scalar")),
    }
}

/// This CPU's f32 FLOP ceiling estimate: cores × FLOP per cycle per core × clock. FLOP per cycle
/// is 32 with AVX2 + FMA (two 8-lane FMA ports), else 8 (SSE: one 4-lane add and one mul); the
/// clock is the highest `cpu MHz` in /proc/cpuinfo (3 GHz when it cannot be read).
pub(super) fn flop_ceiling(cores: usize) -> (f64, String) {
    #[cfg(target_arch = "x86_64")]
    let per_cycle = if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") { 32.0 } else { 8.0 };
    #[cfg(not(target_arch = "x86_64"))]
    let per_cycle = 8.0;
    let mhz = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .filter(|l| l.starts_with("cpu MHz"))
                .filter_map(|l| l.split(':').nth(1)?.trim().parse::<f64>().ok())
                .reduce(f64::max)
        })
        .unwrap_or(3000.0);
    let flops = cores as f64 * per_cycle * mhz * 1e6;
    (flops, format!("{cores} cores x {per_cycle} FLOP/cycle x {:.2} GHz = {:.0} GFLOP/s", mhz / 1000.0, flops / 1e9))
}
