//! `texset bench search`: the precision search's strategies compared on each folder: the
//! preset's shape against the best point found, in how many trials.

use anyhow::{Context as _, Result};
use std::path::PathBuf;
use texset_core::{
    Cancel, NoProgress,
    drivers::{SearchOptions, SearchReport, Strategy, search_precision},
    options::{Backend, CompressOptions, Preset},
};

use super::{DirsArg, load_named};
use crate::cli::common::JsonArg;
use crate::cli::search::{final_line, trial_line};

// `texset bench search`.
#[derive(clap::Args)]
pub(crate) struct SearchBenchArgs {
    #[command(flatten)]
    dirs: DirsArg,
    /// Strategies compared, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "random,tpe")]
    strategies: Vec<Strategy>,
    /// The rate searched at, bits per texel.
    #[arg(long, default_value_t = 4.0)]
    bpp: f64,
    /// Short runs per search.
    #[arg(long, default_value_t = 12)]
    trials: usize,
    /// The preset whose shape and steps the searches start from.
    #[arg(long, value_enum, default_value_t = Preset::Fast)]
    preset: Preset,
    /// Training steps of a full run instead of the preset's.
    #[arg(long)]
    steps: Option<u32>,
    /// A cache file the searches share in order (default: none, every search cold).
    #[arg(long)]
    cache: Option<PathBuf>,
    /// Skip points whose decoder takes more multiply-adds per texel than this.
    #[arg(long)]
    max_macs: Option<usize>,
    #[command(flatten)]
    json: JsonArg,
}

impl SearchBenchArgs {
    pub(crate) fn run(self) -> Result<()> {
        let dirs = self.dirs.or_samples()?;
        let mut base = CompressOptions::preset(self.preset);
        base.run.backend = Backend::Cpu;
        if let Some(steps) = self.steps {
            base.schedule.give_steps(steps);
        }
        let mut template = SearchOptions::new(Strategy::Tpe, self.bpp, self.trials);
        template.cache = self.cache;
        template.max_decoder_macs_per_texel = self.max_macs;
        bench(&dirs, &self.strategies, &base, &template, self.json.json)
    }
}

/// One search of the comparison.
#[derive(serde::Serialize)]
struct Row {
    set: String,
    report: SearchReport,
}

/// `texset bench search`: every strategy of `strategies` on every folder of `dirs` (each its own
/// set), from `base`, as `template` says (rate, trials, cache); a table on stdout (or JSON). With
/// a cache, the searches share it in the order run (later similar sets start warm).
fn bench(dirs: &[PathBuf], strategies: &[Strategy], base: &CompressOptions, template: &SearchOptions, json: bool) -> Result<()> {
    if !json {
        println!(
            "| set | strategy | short runs | full runs | preset shape | searched | gain | chosen | MACs/texel, preset → chosen | found at trial | warm from | train s |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    }
    let mut rows = Vec::new();
    for dir in dirs {
        let (name, set) = load_named(dir)?;
        for &strategy in strategies {
            let options = SearchOptions { strategy, ..template.clone() };
            let (_, report) =
                search_precision(&set, base, &options, &NoProgress, &Cancel::new(), &|t| eprintln!("{name}: {}", trial_line(t)), &|f| {
                    eprintln!("{name}: {}", final_line(f));
                })
                .with_context(|| format!("{}: {strategy:?} search", dir.display()))?;
            if !json {
                let chosen = &report.finals[report.chosen];
                let base_run = &report.finals[report.baseline];
                println!(
                    "| {name} | {strategy:?} | {} | {} | {:.2} dB @ {:.3} | {:.2} dB @ {:.3} | {:+.2} dB | {} | {} → {} | {} | {} | {:.0} |",
                    report.trials.len(),
                    report.finals.len(),
                    base_run.pooled_psnr_db,
                    base_run.bits_per_texel,
                    chosen.pooled_psnr_db,
                    chosen.bits_per_texel,
                    report.gain_db,
                    chosen.point.label(),
                    base_run.decoder_macs_per_texel,
                    chosen.decoder_macs_per_texel,
                    report.found_at_trial,
                    report.warm_from.as_deref().unwrap_or("–"),
                    report.total_train_secs
                );
            }
            rows.push(Row { set: name.clone(), report });
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    }
    Ok(())
}
