//! `compress --target-psnr` and `--match-bc`: rate control, the smallest bundle at a quality.

use anyhow::Result;
use texset_core::{
    Cancel, Compressed, Progress,
    drivers::{RateReport, RateTarget, RateTrial, compress_to_psnr},
    eval::bcn::Baseline,
    export::bcn::Profile,
    options::CompressOptions,
    set::TextureSet,
};

// The rate-control flags: one target (`--target-psnr` or `--match-bc`, the `rate` group) and
// the search's bounds.
#[derive(clap::Args)]
#[command(next_help_heading = "Rate control")]
pub(super) struct RateArgs {
    /// Rate control: the smallest bundle whose pooled PSNR reaches this many dB (within
    /// `--tolerance-db`), searched between `--min-bpp` and `--max-bpp` in `--rate-trials` runs at
    /// most; the search stops when a run lands within the tolerance of the target.
    #[arg(long, group = "rate", conflicts_with = "batch")]
    pub target_psnr: Option<f64>,
    /// Rate control against what engines ship: block-compress every map with a real encoder
    /// (`high`: BC7 colour, BC5 normals, BC4 one channel; `low`: BC1 for colour and normals),
    /// measure its pooled PSNR, and find the smallest bundle at or above it, at rates up to
    /// the blocks' own (or `--max-bpp`).
    #[arg(long, group = "rate", conflicts_with = "batch", value_enum, num_args = 0..=1, default_missing_value = "high")]
    pub match_bc: Option<Profile>,
    /// With `--target-psnr` or `--match-bc`: the highest rate tried, bits per texel (default 8
    /// with `--target-psnr`; the block-compressed rate with `--match-bc`).
    #[arg(long, requires = "rate")]
    pub max_bpp: Option<f64>,
    /// With `--target-psnr` or `--match-bc`: the lowest rate tried, bits per texel.
    #[arg(long, default_value_t = 0.5, requires = "rate")]
    pub min_bpp: f64,
    /// With `--target-psnr` or `--match-bc`: whole compressions at most.
    #[arg(long, default_value_t = 6, requires = "rate")]
    pub rate_trials: usize,
    /// With `--target-psnr`: how far below the target still counts, dB (`--match-bc` has
    /// none: at or above the blocks' PSNR).
    #[arg(long, default_value_t = 0.5, requires = "target_psnr", conflicts_with = "match_bc")]
    pub tolerance_db: f64,
}

impl RateArgs {
    /// The target these flags ask for on `set` (`--match-bc` block-compresses it first and prints
    /// the baseline); `None` without rate control.
    pub(super) fn target(&self, set: &TextureSet) -> Option<RateTarget> {
        match (self.target_psnr, self.match_bc) {
            (Some(psnr_db), _) => Some(RateTarget {
                psnr_db,
                tolerance_db: self.tolerance_db,
                min_bpp: self.min_bpp,
                max_bpp: self.max_bpp.unwrap_or(8.0),
                trials: self.rate_trials,
                start_bpp: None,
                bc_baseline: None,
            }),
            (None, Some(profile)) => {
                let target = RateTarget::matching_bc(set, profile, self.min_bpp, self.max_bpp, self.rate_trials);
                if let Some(b) = &target.bc_baseline {
                    eprint!("{}", bc_baseline_summary(b));
                }
                Some(target)
            }
            (None, None) => None,
        }
    }
}

/// Compresses to `target`, one line per trial on stderr and which one was kept.
pub(super) fn compress_to_target(
    set: &TextureSet,
    options: &CompressOptions,
    target: &RateTarget,
    progress: &dyn Progress,
    cancel: &Cancel,
) -> Result<(Compressed, RateReport)> {
    let on_trial = |t: &RateTrial| {
        eprintln!(
            "rate trial: asked {:.3} bits/texel, got {:.3} ({} bytes): {:.2} dB, trained in {:.1} s",
            t.target_bits_per_texel, t.bits_per_texel, t.bundle_bytes, t.pooled_psnr_db, t.train_secs
        );
    };
    let (compressed, report) = compress_to_psnr(set, options, target, progress, cancel, &on_trial)?;
    let chosen = &report.trials[report.chosen];
    if report.lowest_bpp > target.min_bpp {
        eprintln!(
            "rate control: searched from {:.3} bits/texel, not {}: one latent channel per grid and the decoder take that much",
            report.lowest_bpp, target.min_bpp
        );
    }
    if report.reached {
        eprintln!(
            "rate control: trial {} of {} is the smallest bundle at or above {:.2} dB (tolerance {:.2} dB): {:.3} bits/texel, {:.2} dB",
            report.chosen + 1,
            report.trials.len(),
            target.psnr_db,
            target.tolerance_db,
            chosen.bits_per_texel,
            chosen.pooled_psnr_db
        );
    } else {
        eprintln!(
            "warning: no trial up to {:.3} bits/texel reaches {:.2} dB; keeping the best one ({:.2} dB at {:.3} bits/texel)",
            target.max_bpp, target.psnr_db, chosen.pooled_psnr_db, chosen.bits_per_texel
        );
    }
    Ok((compressed, report))
}

/// The `--match-bc` baseline, one line per map and the pooled figure.
fn bc_baseline_summary(b: &Baseline) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    let _ = writeln!(
        text,
        "block-compressed baseline ({:?} profile): {:.2} dB pooled at {:.3} bits/texel",
        b.profile, b.pooled_psnr_db, b.bits_per_texel
    );
    for m in &b.maps {
        let _ = writeln!(text, "  {}/{}: {:?} {:.2} dB, {} bytes", m.material, m.map, m.format, m.psnr_db, m.bytes);
    }
    text
}
