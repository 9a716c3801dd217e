//! `compress --batch`: one bundle per material folder of a library directory, as shards or
//! per-material tasks of a batch scheduler, then merged into a library manifest (docs/scale.md).

use crate::cli::Exit;
use anyhow::{Context as _, Result};
use std::path::{Path, PathBuf};
use texset_core::{
    drivers::batch::{self, BatchJob, FailureKind, Shard, ShardOrigin, UnitStatus},
    options::CompressOptions,
};

// `--batch` and what only it takes.
#[derive(clap::Args)]
#[command(next_help_heading = "Batch")]
pub(super) struct BatchArgs {
    /// Batch mode: one bundle per material folder of this directory, `<material>.texset` in
    /// the output folder, with a summary. Unchanged materials are skipped; one failing does not
    /// stop the others (the exit code tells: docs/scale.md).
    #[arg(long, conflicts_with_all = ["dirs", "checkpoint", "resume", "init_from", "report"])]
    pub batch: Option<PathBuf>,
    /// With `--batch`: run shard `i` of `n` (`i/n`), or `auto` for the index and count of the
    /// array job that started this run (Kubernetes, Slurm or AWS Batch). Shards together give
    /// the unsharded run's bundles byte for byte.
    #[arg(long, requires = "batch")]
    pub shard: Option<String>,
    /// With `--batch`: compress only the material folder of this name (a per-material task for
    /// a dynamic scheduler; `--plan` lists them).
    #[arg(long, requires = "batch", conflicts_with = "shard")]
    pub only: Option<String>,
    /// With `--batch`: a cache folder of bundles by content hash, shared between runs and
    /// output folders; a material whose files and options were compressed before is copied.
    #[arg(long, requires = "batch")]
    pub cache: Option<PathBuf>,
    /// With `--batch`: list this run's materials and whether each is up to date; compress
    /// nothing.
    #[arg(long, requires = "batch", conflicts_with = "merge")]
    pub plan: bool,
    /// With `--batch`: check that every material of the library has an up-to-date bundle in the
    /// output folder, with the same options as the shards; merge the shard summaries into
    /// `merged-summary.json` and write `manifest.json`. Exits non-zero if anything is missing.
    #[arg(long, requires = "batch", conflicts_with_all = ["shard", "only"])]
    pub merge: bool,
    /// With `--plan` or `--merge`: print JSON to stdout.
    #[arg(long, requires = "batch")]
    pub json: bool,
    /// With `--batch`: materials compressed at once.
    #[arg(long, default_value_t = 1, requires = "batch")]
    pub jobs: usize,
}

/// Exit code of a run whose job cannot say which shard it is: the array's variables are missing
/// or disagree. A retry fails the same way.
pub(super) const EXIT_CONFIG: i32 = 64;
/// Exit code of a run in which a material failed for good (bad input): a retry fails the same
/// way, so a pod failure policy maps it to `FailIndex`.
pub(super) const EXIT_INPUT: i32 = 65;
/// Exit code of a run in which a material failed for a reason of the machine (the GPU lost, an
/// output not written): worth a retry, which redoes only what is not up to date.
pub(super) const EXIT_TRANSIENT: i32 = 75;

/// `texset compress --batch`: one bundle per material folder of `library` (docs/scale.md).
pub(super) fn run(args: &BatchArgs, library: &Path, out_dir: &Path, options: &CompressOptions, bits_per_texel: Option<f64>) -> Result<()> {
    let (shard, origin) = shard(args.shard.as_deref())?;
    let job = BatchJob { library, out_dir, options, bits_per_texel, shard, only: args.only.as_deref(), cache_dir: args.cache.as_deref() };
    if args.plan {
        return print_plan(&job, args.json);
    }
    if args.merge {
        return run_merge(&job, args.json);
    }
    let done = std::sync::atomic::AtomicUsize::new(0);
    let report = |u: &batch::UnitRecord| {
        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        match u.status {
            UnitStatus::Compressed => eprintln!(
                "[{n}] {}: {:.2} dB, {:.3} bits/texel, {} bytes, trained in {:.1} s",
                u.material, u.pooled_psnr_db, u.bits_per_texel, u.bundle_bytes, u.train_secs
            ),
            UnitStatus::Cached => eprintln!("[{n}] {}: from the cache ({:.2} dB)", u.material, u.pooled_psnr_db),
            UnitStatus::UpToDate => eprintln!("[{n}] {}: up to date ({:.2} dB)", u.material, u.pooled_psnr_db),
            UnitStatus::Failed => eprintln!("[{n}] {}: FAILED: {}", u.material, u.error.as_deref().unwrap_or("")),
        }
        if let Some(warning) = &u.warning {
            eprintln!("[{n}] {}: warning: {warning}", u.material);
        }
    };
    let what = args.only.as_ref().map_or_else(|| format!("shard {shard}"), |m| format!("material {m}"));
    let attempt = origin.attempt.map(|a| format!(", attempt {a}")).unwrap_or_default();
    eprintln!(
        "batch {} {what} ({} scheduler{attempt}, host {}) with {} job(s) into {}",
        library.display(),
        origin.scheduler,
        origin.host,
        args.jobs,
        out_dir.display()
    );
    let summary = batch::run(&job, args.jobs, &origin, &report)?;
    let path = batch::BatchSummary::path(out_dir, shard, job.only);
    let count = |s: UnitStatus| summary.units.iter().filter(|u| u.status == s).count();
    eprintln!(
        "{} of the library's {} materials in this run: {} compressed, {} from the cache, {} up to date, {} failed in {:.1} s; summary {}",
        summary.units.len(),
        summary.library_materials,
        count(UnitStatus::Compressed),
        count(UnitStatus::Cached),
        count(UnitStatus::UpToDate),
        summary.failed(),
        summary.wall_secs,
        path.display()
    );
    let failed = |kind: &str| format!("{} of {} materials failed{kind} (see {})", summary.failed(), summary.units.len(), path.display());
    match summary.failure() {
        None => Ok(()),
        Some(FailureKind::Input) => Err(Exit::new(EXIT_INPUT, failed(" for good: bad input")).into()),
        Some(FailureKind::Transient) => Err(Exit::new(EXIT_TRANSIENT, failed(", some for a reason a retry may clear")).into()),
    }
}

/// The shard `--shard` asks for (the whole library without it), and where the run came from.
fn shard(text: Option<&str>) -> Result<(Shard, ShardOrigin)> {
    let host = host_name();
    match text {
        Some("auto") => {
            let env = |name: &str| std::env::var(name).ok();
            let (shard, scheduler, attempt) =
                Shard::from_scheduler(&env).map_err(|e| Exit::new(EXIT_CONFIG, format!("--shard auto: {e}")))?;
            Ok((shard, ShardOrigin { scheduler, attempt, host }))
        }
        Some(text) => {
            let shard = Shard::parse(text).map_err(|e| Exit::new(EXIT_CONFIG, format!("--shard: {e}")))?;
            Ok((shard, ShardOrigin { host, ..ShardOrigin::default() }))
        }
        None => Ok((Shard::ALL, ShardOrigin { host, ..ShardOrigin::default() })),
    }
}

/// This machine's name, for the summary (empty when the system does not tell).
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .map(|h| h.trim().to_owned())
        .unwrap_or_default()
}

/// `--plan`: this run's materials, one line each (or JSON).
fn print_plan(job: &BatchJob<'_>, json: bool) -> Result<()> {
    let entries = batch::plan(job)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&entries)?);
        return Ok(());
    }
    for e in &entries {
        let state = if e.up_to_date { "up to date" } else { "to do" };
        println!("{}\tshard {}/{}\t{state}\t{}", e.material, e.shard, job.shard.count, e.bundle.display());
    }
    let todo = entries.iter().filter(|e| !e.up_to_date).count();
    eprintln!("{} material(s), {todo} to do", entries.len());
    Ok(())
}

/// `--merge`: the library checked and its manifest written, or what is missing.
fn run_merge(job: &BatchJob<'_>, json: bool) -> Result<()> {
    let merged = batch::merge(job).with_context(|| format!("cannot merge {}", job.out_dir.display()))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&merged)?);
    }
    for run in &merged.runs {
        let attempt = run.origin.attempt.map(|a| format!(" attempt {a}")).unwrap_or_default();
        eprintln!(
            "{}: shard {}, {} material(s), {} failed, {:.1} s ({} on {}{attempt})",
            run.file, run.shard, run.materials, run.failed, run.wall_secs, run.origin.scheduler, run.origin.host
        );
    }
    for shard in &merged.missing_shards {
        eprintln!("shard {shard}: no summary (not run, or stopped before it finished)");
    }
    for gap in &merged.gaps {
        eprintln!("{}: {}", gap.material, gap.reason);
    }
    if !merged.complete {
        anyhow::bail!(
            "{} of the library's {} materials have no up-to-date bundle in {}; no manifest written",
            merged.gaps.len(),
            merged.library_materials,
            job.out_dir.display()
        );
    }
    eprintln!(
        "all {} materials up to date; {} and {}",
        merged.library_materials,
        job.out_dir.join(batch::MERGED_SUMMARY).display(),
        job.out_dir.join(batch::MANIFEST).display()
    );
    Ok(())
}
