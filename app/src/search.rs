//! The precision search from the command line: `texset compress --bpp X --search tpe` and
//! `texset bench --search` (strategies compared on each folder).

use anyhow::{Context as _, Result};
use std::path::PathBuf;
use texset_core::drivers::search::{FinalRun, SearchOptions, SearchReport, SearchTrial, Strategy, search_precision};
use texset_core::set::TextureSet;
use texset_core::{Cancel, CompressOptions, Compressed, NoProgress};

/// `$XDG_CACHE_HOME/texset/search.json`, else `~/.cache/texset/search.json`; `None` without either.
pub(crate) fn default_cache_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("texset").join("search.json"))
}

fn trial_line(t: &SearchTrial) -> String {
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

fn final_line(f: &FinalRun) -> String {
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
pub(crate) fn run(set: &TextureSet, base: &CompressOptions, search: &SearchOptions, cancel: &Cancel) -> Result<(Compressed, SearchReport)> {
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

/// One search of the comparison.
#[derive(serde::Serialize)]
struct Row {
    set: String,
    report: SearchReport,
}

/// `texset bench --search`: every strategy of `strategies` on every folder of `dirs` (each its own
/// set), from `base`, as `template` says (rate, trials, cache); a table on stdout (or JSON). With
/// a cache, the searches share it in the order run (later similar sets start warm).
pub(crate) fn bench(dirs: &[PathBuf], strategies: &[Strategy], base: &CompressOptions, template: &SearchOptions, json: bool) -> Result<()> {
    if !json {
        println!(
            "| set | strategy | short runs | full runs | preset shape | searched | gain | chosen | MACs/texel, preset → chosen | found at trial | warm from | train s |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    }
    let mut rows = Vec::new();
    for dir in dirs {
        let (name, set) = crate::bench::load_named(dir)?;
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
