//! `texset bench ibl`: the viewport's image-based lighting preparation on the CPU: loading an
//! environment, then preparing it at the default options (specular cube 128² × 6 levels, SH9,
//! split-sum table), the phases alternating run after run; min and median milliseconds of each.

use anyhow::Result;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Instant;
use texset_shaders::environment::{Environment, PrepareOptions, STUDIO_WIDTH_PX, prepare};

use super::{TimingArgs, median};
use crate::cli::common::JsonArg;

// `texset bench ibl`.
#[derive(clap::Args)]
pub(crate) struct IblBenchArgs {
    /// An equirectangular .hdr or .exr to load and prepare (default: the built-in studio
    /// environment, 1024x512, generated instead of loaded).
    #[arg(long)]
    env: Option<PathBuf>,
    #[command(flatten)]
    timing: TimingArgs,
}

/// One phase's times (the `--json` array's elements).
#[derive(Serialize)]
struct Phase {
    what: String,
    min_ms: f64,
    median_ms: f64,
    runs: usize,
}

impl IblBenchArgs {
    pub(crate) fn run(self) -> Result<()> {
        let runs = self.timing.runs.max(1);
        let options = PrepareOptions::default();
        let source =
            self.env.as_ref().map_or_else(|| format!("studio {STUDIO_WIDTH_PX}x{}", STUDIO_WIDTH_PX / 2), |p| p.display().to_string());
        let (mut load_ms, mut prepare_ms) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
        for _ in 0..runs {
            let start = Instant::now();
            // An error names the file.
            let environment = Environment::load_or_studio(self.env.as_deref())?;
            load_ms.push(start.elapsed().as_secs_f64() * 1e3);
            let start = Instant::now();
            let prepared = prepare(&environment, &options)?;
            prepare_ms.push(start.elapsed().as_secs_f64() * 1e3);
            std::hint::black_box(prepared);
        }
        let phase = |what: String, times: Vec<f64>| Phase {
            what,
            min_ms: times.iter().copied().fold(f64::INFINITY, f64::min),
            median_ms: median(times),
            runs,
        };
        let load_what = if self.env.is_some() { format!("load {source}") } else { format!("generate {source}") };
        let prepare_what = format!(
            "prepare: cube {}² x {} levels ({}..{} samples), SH9, split-sum {}² x {} samples, {} threads",
            options.face_size_px,
            options.level_count,
            options.level_samples(1),
            options.level_samples(options.level_count - 1),
            options.brdf_size_px,
            options.brdf_samples,
            rayon::current_num_threads()
        );
        let phases = [phase(load_what, load_ms), phase(prepare_what, prepare_ms)];
        if self.timing.json.json {
            return JsonArg::print(&phases);
        }
        for p in &phases {
            println!("{:<100} min {:>8.1} ms  median {:>8.1} ms  ({} runs)", p.what, p.min_ms, p.median_ms, p.runs);
        }
        Ok(())
    }
}
