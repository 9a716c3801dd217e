//! Rate control: the smallest bundle that reaches a target PSNR (`texset compress --target-psnr`).
//!
//! Each trial is a whole compression at one rate ([`CompressOptions::fit_bits_per_texel_for`]
//! sizes the grids' channels to it), scored by pooled PSNR. The search brackets the target between
//! `min_bpp` and `max_bpp` and bisects the rate in log space; PSNR rises with the rate, so every
//! trial halves the bracket. The answer is the smallest bundle among the trials whose PSNR is
//! within `tolerance_db` of the target or above it; every trial is reported.
//!
//! `--match-bc` takes its target from the set itself: every map block-compressed with a real
//! encoder ([`crate::eval::bcn::baseline`]: BC7/BC5/BC4, or BC1/BC5/BC4 for the low profile), its
//! pooled PSNR reached with no tolerance, at rates up to the blocks' own.

use crate::decode::Decoder;
use crate::eval::bcn::Baseline;
use crate::eval::evaluate;
use crate::export::bcn::Profile;
use crate::options::CompressOptions;
use crate::pipeline::{CompressError, Compressed, compress};
use crate::progress::{Cancel, Progress};
use crate::set::TextureSet;
use serde::Serialize;

/// What to search for.
#[derive(Clone, Debug, Serialize)]
pub struct RateTarget {
    /// Pooled PSNR to reach, dB.
    pub psnr_db: f64,
    /// A trial this far below the target still counts as reaching it, dB.
    pub tolerance_db: f64,
    /// The lowest rate tried, bits per texel.
    pub min_bpp: f64,
    /// The highest rate tried, bits per texel.
    pub max_bpp: f64,
    /// Trials at most (the first two are the bracket's ends).
    pub trials: usize,
    /// Where the target comes from with `--match-bc`: the set block-compressed as engines ship it.
    pub bc_baseline: Option<Baseline>,
}

impl RateTarget {
    /// `--match-bc`: the set's own block-compressed PSNR with `profile`, reached without tolerance
    /// (at or above it), at rates from `min_bpp` up to `max_bpp` or, when that is `None`, up to
    /// the block-compressed bits per texel (a bundle larger than the blocks it replaces is no
    /// answer).
    #[must_use]
    pub fn matching_bc(set: &TextureSet, profile: Profile, min_bpp: f64, max_bpp: Option<f64>, trials: usize) -> Self {
        let baseline = crate::eval::bcn::baseline(set, profile);
        Self {
            psnr_db: baseline.pooled_psnr_db,
            tolerance_db: 0.0,
            min_bpp,
            max_bpp: max_bpp.unwrap_or(baseline.bits_per_texel),
            trials,
            bc_baseline: Some(baseline),
        }
    }
}

/// One trial run.
#[derive(Clone, Debug, Serialize)]
pub struct RateTrial {
    /// The rate asked for.
    pub target_bits_per_texel: f64,
    /// The bundle's actual rate.
    pub bits_per_texel: f64,
    /// Its size.
    pub bundle_bytes: u64,
    /// Its pooled PSNR, dB.
    pub pooled_psnr_db: f64,
    /// Training time.
    pub train_secs: f64,
}

/// The search's result.
#[derive(Clone, Debug, Serialize)]
pub struct RateReport {
    /// The target.
    pub target: RateTarget,
    /// The bracket's bottom as searched: `min_bpp`, or the smallest rate this set can be packed
    /// at when that is higher.
    pub lowest_bpp: f64,
    /// Every trial, in the order run.
    pub trials: Vec<RateTrial>,
    /// Index in `trials` of the bundle returned.
    pub chosen: usize,
    /// Whether the chosen trial reaches the target (within the tolerance); if none does, the best
    /// one is returned.
    pub reached: bool,
}

/// Why the search could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RateError {
    /// Bad target.
    #[error("rate control: {0}")]
    Target(String),
    /// A rate the options cannot be sized to.
    #[error("rate control: {0}")]
    Options(#[from] crate::options::OptionsError),
    /// A trial failed.
    #[error(transparent)]
    Compress(#[from] CompressError),
    /// Scoring a trial failed.
    #[error(transparent)]
    Eval(#[from] crate::eval::EvalError),
}

/// Compresses `set` with `base` at the smallest rate found to reach `target.psnr_db`; `on_trial`
/// hears of each trial as it ends.
pub fn compress_to_psnr(
    set: &TextureSet,
    base: &CompressOptions,
    target: &RateTarget,
    progress: &dyn Progress,
    cancel: &Cancel,
    on_trial: &dyn Fn(&RateTrial),
) -> Result<(Compressed, RateReport), RateError> {
    if !(target.psnr_db.is_finite() && target.tolerance_db >= 0.0) {
        return Err(RateError::Target(format!("target {} dB with tolerance {} dB", target.psnr_db, target.tolerance_db)));
    }
    if !(target.min_bpp > 0.0 && target.max_bpp > target.min_bpp && target.max_bpp.is_finite()) {
        return Err(RateError::Target(format!("rates must satisfy 0 < {} < {} bits per texel", target.min_bpp, target.max_bpp)));
    }
    if target.trials < 2 {
        return Err(RateError::Target(format!("at least 2 trials are needed, got {}", target.trials)));
    }
    let mut trials: Vec<RateTrial> = Vec::new();
    let mut bundles: Vec<Compressed> = Vec::new();
    let mut run = |bpp: f64| -> Result<f64, RateError> {
        let mut options = base.clone();
        options.fit_bits_per_texel_for(bpp, set)?;
        let out = compress(set, &options, progress, cancel)?;
        let psnr = evaluate(set, &Decoder::new(&out.bundle), false)?.pooled_psnr_db;
        let trial = RateTrial {
            target_bits_per_texel: bpp,
            bits_per_texel: out.report.pack.bits_per_texel,
            bundle_bytes: out.report.pack.bundle_bytes,
            pooled_psnr_db: psnr,
            train_secs: out.report.train.train_secs,
        };
        on_trial(&trial);
        trials.push(trial);
        bundles.push(out);
        Ok(psnr)
    };
    // A bracket starting below what one latent channel per grid costs starts at that instead.
    let smallest_bpp = base.smallest_bits_per_texel_for(set) * (1.0 + 1e-9);
    if smallest_bpp >= target.max_bpp {
        return Err(RateError::Target(format!(
            "{} bits per texel is too few for this set: one latent channel per grid and the decoder take {smallest_bpp:.3}",
            target.max_bpp
        )));
    }
    let goal = target.psnr_db - target.tolerance_db;
    let lowest_bpp = target.min_bpp.max(smallest_bpp);
    let (mut lo, mut hi) = (lowest_bpp, target.max_bpp);
    // The top of the bracket first (if even it misses, there is nothing to search), then the
    // bottom (if it reaches, it is the answer), then bisection.
    if run(hi)? >= goal && run(lo)? < goal {
        for _ in 2..target.trials {
            let mid = (lo * hi).sqrt();
            if run(mid)? >= goal {
                hi = mid;
            } else {
                lo = mid;
            }
        }
    }
    let reaching = (0..trials.len()).filter(|&i| trials[i].pooled_psnr_db >= goal);
    let (chosen, reached) = match reaching.min_by_key(|&i| trials[i].bundle_bytes) {
        Some(i) => (i, true),
        None => ((0..trials.len()).max_by(|&a, &b| trials[a].pooled_psnr_db.total_cmp(&trials[b].pooled_psnr_db)).unwrap_or(0), false),
    };
    let report = RateReport { target: target.clone(), lowest_bpp, trials, chosen, reached };
    let bundle = bundles.swap_remove(chosen);
    Ok((bundle, report))
}
