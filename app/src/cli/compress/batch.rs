//! `compress --batch`: one bundle per material folder of a library directory (docs/scale.md).

use anyhow::{Result, bail};
use std::path::{Path, PathBuf};
use texset_core::CompressOptions;

// `--batch` and what only it takes.
#[derive(clap::Args)]
#[command(next_help_heading = "Batch")]
pub struct BatchArgs {
    /// Batch mode: one bundle per material folder of this directory, `<material>.texset` in
    /// the output folder, with a `summary.json`. Unchanged materials are skipped; one failing
    /// does not stop the others (the exit code tells).
    #[arg(long, conflicts_with_all = ["dirs", "checkpoint", "resume", "init_from", "report"])]
    pub batch: Option<PathBuf>,
    /// With `--batch`: run shard `i` of `n` (`i/n`); shards together give the unsharded
    /// run's bundles byte for byte.
    #[arg(long, requires = "batch")]
    pub shard: Option<String>,
    /// With `--batch`: materials compressed at once.
    #[arg(long, default_value_t = 1, requires = "batch")]
    pub jobs: usize,
}

/// `texset compress --batch`: one bundle per material folder of `library` (docs/scale.md).
pub fn run(library: &Path, out_dir: &Path, options: &CompressOptions, bpp: Option<f64>, shard: Option<&str>, jobs: usize) -> Result<()> {
    use texset_core::drivers::batch::{self, Shard, UnitStatus};
    let shard = shard.map(Shard::parse).transpose()?.unwrap_or(Shard::ALL);
    let options_for = |set: &texset_core::TextureSet| -> std::result::Result<CompressOptions, texset_core::OptionsError> {
        let mut o = options.clone();
        if let Some(bpp) = bpp {
            o.fit_bits_per_texel_for(bpp, set)?;
        }
        Ok(o)
    };
    let done = std::sync::atomic::AtomicUsize::new(0);
    let report = |u: &batch::UnitRecord| {
        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        match u.status {
            UnitStatus::Compressed => eprintln!(
                "[{n}] {}: {:.2} dB, {:.3} bits/texel, {} bytes, trained in {:.1} s",
                u.material, u.pooled_psnr_db, u.bits_per_texel, u.bundle_bytes, u.train_secs
            ),
            UnitStatus::UpToDate => eprintln!("[{n}] {}: up to date ({:.2} dB)", u.material, u.pooled_psnr_db),
            UnitStatus::Failed => eprintln!("[{n}] {}: FAILED: {}", u.material, u.error.as_deref().unwrap_or("")),
        }
    };
    eprintln!("batch {} shard {}/{} with {jobs} job(s) into {}", library.display(), shard.index, shard.count, out_dir.display());
    let summary = batch::run(library, out_dir, &options_for, shard, jobs, &report)?;
    let path = batch::BatchSummary::path(out_dir, shard);
    let count = |s: UnitStatus| summary.units.iter().filter(|u| u.status == s).count();
    eprintln!(
        "{} of the library's {} materials in this shard: {} compressed, {} up to date, {} failed in {:.1} s; summary {}",
        summary.units.len(),
        summary.library_materials,
        count(UnitStatus::Compressed),
        count(UnitStatus::UpToDate),
        summary.failed(),
        summary.wall_secs,
        path.display()
    );
    if summary.failed() > 0 {
        bail!("{} of {} materials failed (see {})", summary.failed(), summary.units.len(), path.display());
    }
    Ok(())
}
