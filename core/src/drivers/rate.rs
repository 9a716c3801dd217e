//! Rate control: the smallest bundle that reaches a target PSNR (`texset compress --target-psnr`).
//!
//! Each trial is a whole compression at one rate ([`CompressOptions::fit_bits_per_texel_for`] sizes
//! the grids' channels to it), scored by pooled PSNR. The search brackets the target between
//! `min_bpp` and `max_bpp` (or, given a start, doubles or halves the rate from it), bisects it in
//! log space while it is wider than 2.5×, then reads the next rate off the line between its ends
//! (PSNR against log(rate), kept inside the bracket's middle 80 %; a bisection after two probes
//! that moved the same end). It stops when a trial lands within `tolerance_db` of the target,
//! either side, or the trials run out. A rate that fits a model already trained (channel counts are
//! whole; training is seeded) is not trained again: the bracket is halved instead. The answer is
//! the smallest bundle among the trials whose PSNR is within `tolerance_db` of the target or above
//! it; every trial is reported.
//!
//! `--match-bc` takes its target from the set itself: every map block-compressed with a real
//! encoder ([`crate::eval::bcn::baseline`]: BC7/BC5/BC4, or BC1/BC5/BC4 for the low profile), its
//! pooled PSNR reached with no tolerance, at rates up to the blocks' own.

use crate::decode::Decoder;
use crate::eval::bcn::Baseline;
use crate::eval::evaluate;
use crate::export::bcn::Profile;
use crate::options::{CompressOptions, OptionsError};
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
    /// Trials at most (the bracket's ends among them).
    pub trials: usize,
    /// Where the search starts, bits per texel: it then doubles or halves the rate until the
    /// target is bracketed. `None`: at `max_bpp`, then `min_bpp`.
    pub start_bpp: Option<f64>,
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
            start_bpp: None,
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

/// The widest bracket, its top rate over its bottom, where the next rate is read off the line
/// between its ends; a wider one is bisected. Over a doubling or so PSNR is close to linear in
/// log(rate); across the whole range it is not (the rows of `options::RATE_SHAPES` change the
/// shape, and with it the curve, at fixed rates).
const LINE_BRACKET_RATIO: f64 = 2.5;

/// Rates probed at most in one search, trained or found already trained: a bound on the loop once
/// the bracket is narrower than one channel's step.
const MAX_PROBES: usize = 64;

/// The next rate to try inside the bracket `(lo, lo_db)` .. `(hi, hi_db)`: where the line
/// between the ends, PSNR against log(rate), reaches `aim_db`, kept within the middle 80 % of the
/// bracket in log space so that it shrinks by a tenth at least. PSNR grows about linearly in
/// log(rate), so the line lands near the target in a trial or two where bisection takes several.
fn next_rate((lo, lo_db): (f64, f64), (hi, hi_db): (f64, f64), aim_db: f64) -> f64 {
    let t = if hi_db > lo_db { (aim_db - lo_db) / (hi_db - lo_db) } else { 0.5 };
    let t = if t.is_finite() { t.clamp(0.1, 0.9) } else { 0.5 };
    (lo.ln() + t * (hi.ln() - lo.ln())).exp()
}

/// A rate, bits per texel, and the pooled PSNR a trial reached there, dB.
type Point = (f64, f64);

/// The trials of one search, and the models they trained.
struct Search<'a> {
    set: &'a TextureSet,
    base: &'a CompressOptions,
    progress: &'a dyn Progress,
    cancel: &'a Cancel,
    on_trial: &'a dyn Fn(&RateTrial),
    trials: Vec<RateTrial>,
    bundles: Vec<Compressed>,
    /// The options of each trial, by fingerprint, and its index: channel counts are whole, so
    /// nearby rates fit the same model, and training is seeded, so it gives the same bundle.
    trained: Vec<(String, usize)>,
    /// Why the last rate that could not be packed could not: the search's error when no trial
    /// ran at all.
    unpackable: Option<OptionsError>,
}

impl Search<'_> {
    /// The pooled PSNR at `bpp`: a whole compression, or the trial that trained the same model;
    /// minus infinity where the rate's shape does not fit at all (a finer row's one channel per
    /// grid can cost more than the rate just under it allows): nothing reaches the target there.
    fn psnr_at(&mut self, bpp: f64) -> Result<f64, RateError> {
        let mut options = self.base.clone();
        match options.fit_bits_per_texel_for(bpp, self.set) {
            Ok(()) => {}
            Err(e @ OptionsError::RateTooLow { .. }) => {
                self.unpackable = Some(e);
                return Ok(f64::NEG_INFINITY);
            }
            Err(e) => return Err(e.into()),
        }
        let fingerprint = options.fingerprint();
        if let Some(&(_, i)) = self.trained.iter().find(|(f, _)| *f == fingerprint) {
            return Ok(self.trials[i].pooled_psnr_db);
        }
        let out = compress(self.set, &options, self.progress, self.cancel)?;
        let psnr = evaluate(self.set, &Decoder::new(&out.bundle), false)?.pooled_psnr_db;
        let trial = RateTrial {
            target_bits_per_texel: bpp,
            bits_per_texel: out.report.pack.bits_per_texel,
            bundle_bytes: out.report.pack.bundle_bytes,
            pooled_psnr_db: psnr,
            train_secs: out.report.train.train_secs,
        };
        (self.on_trial)(&trial);
        self.trained.push((fingerprint, self.trials.len()));
        self.trials.push(trial);
        self.bundles.push(out);
        Ok(psnr)
    }
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
    let mut t =
        Search { set, base, progress, cancel, on_trial, trials: Vec::new(), bundles: Vec::new(), trained: Vec::new(), unpackable: None };
    if let Some(((mut lo, mut lo_db), (mut hi, mut hi_db))) = bracket(&mut t, target, lowest_bpp)? {
        // Which end the last probe moved, and whether the one before moved it too: then the line
        // keeps landing on one side (PSNR is concave in log(rate)), and the next probe bisects.
        let (mut last_moved_hi, mut twice) = (None, false);
        let mut probes = 0;
        while t.trials.len() < target.trials && probes < MAX_PROBES {
            probes += 1;
            // A trial within the tolerance of the target, either side, is as close as asked.
            if t.trials.iter().any(|t| t.pooled_psnr_db >= goal && t.pooled_psnr_db <= target.psnr_db + target.tolerance_db) {
                break;
            }
            let count = t.trials.len();
            let line = !twice && hi / lo <= LINE_BRACKET_RATIO;
            let mut next = if line { next_rate((lo, lo_db), (hi, hi_db), target.psnr_db) } else { (lo * hi).sqrt() };
            let mut db = t.psnr_at(next)?;
            if t.trials.len() == count {
                // That rate fits a model already trained: halve the bracket instead. Where that
                // too was trained the bracket still shrinks, and the probes run out once its ends
                // are neighbouring channel counts.
                next = (lo * hi).sqrt();
                db = t.psnr_at(next)?;
            }
            let moved_hi = db >= goal;
            if moved_hi {
                (hi, hi_db) = (next, db);
            } else {
                (lo, lo_db) = (next, db);
            }
            twice = last_moved_hi == Some(moved_hi);
            last_moved_hi = Some(moved_hi);
        }
    }
    let Search { trials, mut bundles, unpackable, .. } = t;
    // No rate tried could be packed (the top of the range is under its row's one channel per
    // grid): nothing was trained, and that is the error.
    if trials.is_empty() {
        return Err(unpackable.map_or_else(|| RateError::Target("no rate in the range could be tried".to_owned()), RateError::from));
    }
    let reaching = (0..trials.len()).filter(|&i| trials[i].pooled_psnr_db >= goal);
    let (chosen, reached) = match reaching.min_by_key(|&i| trials[i].bundle_bytes) {
        Some(i) => (i, true),
        None => ((0..trials.len()).max_by(|&a, &b| trials[a].pooled_psnr_db.total_cmp(&trials[b].pooled_psnr_db)).unwrap_or(0), false),
    };
    let bundle = bundles.swap_remove(chosen);
    let report = RateReport { target: target.clone(), lowest_bpp, trials, chosen, reached };
    Ok((bundle, report))
}

/// Rates and PSNRs on both sides of the goal, `(below, reaching)`, or `None` where the search
/// ends before it has both: the top misses (nothing reaches), or the bottom reaches (it is the
/// answer), or the trials ran out. Without [`RateTarget::start_bpp`] the top of the range is
/// tried first, then the bottom; with it, the start, then rates doubled or halved from it
/// towards the goal, within the range.
fn bracket(t: &mut Search<'_>, target: &RateTarget, lowest_bpp: f64) -> Result<Option<(Point, Point)>, RateError> {
    let goal = target.psnr_db - target.tolerance_db;
    let (mut below, mut reaching) = (None, None);
    let mut rate = match target.start_bpp {
        Some(start) => start.clamp(lowest_bpp, target.max_bpp),
        None => target.max_bpp,
    };
    loop {
        let db = t.psnr_at(rate)?;
        if db >= goal {
            reaching = Some((rate, db));
        } else {
            below = Some((rate, db));
        }
        if let (Some(below), Some(reaching)) = (below, reaching) {
            return Ok(Some((below, reaching)));
        }
        let next = match (target.start_bpp, below.is_some()) {
            (_, true) if rate >= target.max_bpp => return Ok(None),
            (_, false) if rate <= lowest_bpp => return Ok(None),
            (None, _) => lowest_bpp,
            (Some(_), true) => (rate * 2.0).min(target.max_bpp),
            (Some(_), false) => (rate / 2.0).max(lowest_bpp),
        };
        if t.trials.len() >= target.trials {
            return Ok(None);
        }
        rate = next;
    }
}

#[cfg(test)]
mod tests {
    use super::next_rate;

    #[test]
    fn the_next_rate_is_read_off_the_line_and_kept_inside_the_bracket() {
        // 30 dB at 1 bit per texel, 36 at 4: 33 dB is half way in log(rate), at 2.
        assert!((next_rate((1.0, 30.0), (4.0, 36.0), 33.0) - 2.0).abs() < 1e-9);
        // An aim beyond an end stays a tenth of the bracket inside it.
        assert!((next_rate((1.0, 30.0), (4.0, 36.0), 20.0) - 4f64.powf(0.1)).abs() < 1e-9);
        assert!((next_rate((1.0, 30.0), (4.0, 36.0), 50.0) - 4f64.powf(0.9)).abs() < 1e-9);
        // Ends that do not rise (noise) give the middle.
        assert!((next_rate((1.0, 36.0), (4.0, 36.0), 33.0) - 2.0).abs() < 1e-9);
    }
}
