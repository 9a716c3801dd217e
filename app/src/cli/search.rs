//! The precision search from the command line: `texset compress --bpp X --search tpe` (its
//! flags and what it prints); `texset bench search` compares the strategies (bench/search.rs).

use anyhow::Result;
use std::path::PathBuf;
use texset_core::{
    Cancel, Compressed, NoProgress,
    drivers::{FinalRun, SearchOptions, SearchReport, SearchTrial, Strategy, search_precision},
    model::WeightFormat,
    options::CompressOptions,
    set::TextureSet,
};

// `compress --search` and its settings.
#[derive(clap::Args)]
#[command(next_help_heading = "Precision search")]
pub(super) struct SearchArgs {
    /// Precision search at `--bpp`: try latent bits, grid scales, channel splits and decoder
    /// sizes on short runs (`random` or `tpe` for `--search-trials` of them; `grid` for all 81),
    /// run the best and the preset's own shape in full, keep the best.
    #[arg(long, value_enum, requires = "bpp", conflicts_with_all = ["rate", "batch", "prune_to", "latent_bits", "grids"])]
    pub search: Option<Strategy>,
    /// With `--search`: short runs at most.
    #[arg(long, default_value_t = 12, requires = "search")]
    pub search_trials: usize,
    /// With `--search`: earlier searches' results, read to start warm on a similar set and
    /// updated (default: `$XDG_CACHE_HOME/texset/search.json` or `~/.cache/texset/search.json`).
    #[arg(long, requires = "search")]
    pub search_cache: Option<PathBuf>,
    /// With `--search`: the decoder weight formats searched, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "int8", requires = "search")]
    pub search_weight_formats: Vec<WeightFormat>,
    /// With `--search`: skip points whose decoder takes more multiply-adds per texel than this
    /// (a cap on the shader's decode cost; the preset's own shape always runs).
    #[arg(long, requires = "search")]
    pub search_max_macs: Option<usize>,
    /// With `--search`: start cold and remember nothing.
    #[arg(long, requires = "search", conflicts_with = "search_cache")]
    pub no_search_cache: bool,
}

impl SearchArgs {
    /// The search `--search` asks for at `bpp` bits per texel; `None` without `--search`.
    pub(super) fn options(&self, bpp: f64) -> Option<SearchOptions> {
        let strategy = self.search?;
        let mut options = SearchOptions::new(strategy, bpp, self.search_trials);
        options.max_decoder_macs_per_texel = self.search_max_macs;
        options.space.weight_formats.clone_from(&self.search_weight_formats);
        options.cache = if self.no_search_cache { None } else { self.search_cache.clone().or_else(default_cache_path) };
        Some(options)
    }
}

/// `$XDG_CACHE_HOME/texset/search.json`, else `~/.cache/texset/search.json`; `None` without either.
fn default_cache_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("texset").join("search.json"))
}

pub(super) fn trial_line(t: &SearchTrial) -> String {
    format!(
        "search trial ({:?}): {} -> {}+{} channels, {} MACs/texel, {:.3} bits/texel: {:.2} dB, trained in {:.1} s",
        t.source,
        t.point.label(),
        t.channels[0],
        t.channels[1],
        t.decoder_macs_per_texel,
        t.bits_per_texel,
        t.pooled_psnr_db,
        t.train_secs
    )
}

pub(super) fn final_line(f: &FinalRun) -> String {
    format!(
        "search full run of trial {}: {}, {:.3} bits/texel: {:.2} dB, trained in {:.1} s",
        f.trial + 1,
        f.point.label(),
        f.bits_per_texel,
        f.pooled_psnr_db,
        f.train_secs
    )
}

/// Runs the search with one line per trial on stderr and a closing summary.
pub(super) fn run(set: &TextureSet, base: &CompressOptions, search: &SearchOptions, cancel: &Cancel) -> Result<(Compressed, SearchReport)> {
    if let Some(path) = &search.cache {
        eprintln!("precision search cache: {}", path.display());
    }
    let (compressed, report) =
        search_precision(set, base, search, &NoProgress, cancel, &|t| eprintln!("{}", trial_line(t)), &|f| eprintln!("{}", final_line(f)))?;
    eprint!("{}", summary(&report));
    Ok((compressed, report))
}

fn summary(r: &SearchReport) -> String {
    let chosen = &r.finals[r.chosen];
    let base = &r.finals[r.baseline];
    let mut out = Vec::new();
    if let Some(w) = &r.warm_from {
        out.push(format!("precision search started warm from {w}"));
    }
    if !r.too_costly.is_empty() {
        out.push(format!(
            "precision search: {} points decode with more than {} multiply-adds per texel and were skipped",
            r.too_costly.len(),
            r.options.max_decoder_macs_per_texel.unwrap_or(0)
        ));
    }
    if !r.infeasible.is_empty() {
        out.push(format!(
            "precision search: {} points do not fit {:.3} bits/texel and were skipped",
            r.infeasible.len(),
            r.options.bits_per_texel
        ));
    }
    if !r.same_as_earlier.is_empty() {
        let same: Vec<String> = r.same_as_earlier.iter().map(|(p, t)| format!("{} = trial {}", p.label(), t + 1)).collect();
        out.push(format!(
            "precision search: {} points size to an earlier trial's bundle and were not run again ({})",
            same.len(),
            same.join(", ")
        ));
    }
    out.push(format!(
        "precision search ({:?}): {} short runs of {} steps, {} full runs of {}; chosen {} ({:.2} dB, {} MACs/texel; {:+.2} dB over the preset's {} at {:.2} dB, {} MACs/texel), first run as trial {}; {:.0} s of training",
        r.options.strategy,
        r.trials.len(),
        r.short_steps,
        r.finals.len(),
        r.full_steps,
        chosen.point.label(),
        chosen.pooled_psnr_db,
        chosen.decoder_macs_per_texel,
        r.gain_db,
        base.point.label(),
        base.pooled_psnr_db,
        base.decoder_macs_per_texel,
        r.found_at_trial,
        r.total_train_secs
    ));
    out.push(String::new());
    out.join("\n")
}
