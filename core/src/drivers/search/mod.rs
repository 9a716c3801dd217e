//! Precision search: the latent shape, bit depth and decoder size that give the best PSNR at a
//! fixed rate (`texset compress --bpp X --search tpe`).
//!
//! Every point of the [`SearchSpace`] is sized to the same rate by
//! [`CompressOptions::fit_bits_per_texel_for`], so the points compete at equal bits: more latent
//! bits or a finer grid buy fewer channels, a larger decoder leaves fewer bits to the latents.
//!
//! The search is successive halving over two rungs. Every trial is a short compression
//! (`short_fraction` of the steps, scored by pooled PSNR); bad points stop there. The best
//! `finalists` short trials, and the base options' own shape (the baseline the search must beat),
//! then run at full length, and the best full run is the answer. Short trials are proposed by:
//! - [`Strategy::Grid`]: every point of the space, in order (the reference the samplers are
//!   measured against; it ignores the trial budget);
//! - [`Strategy::Random`]: points drawn uniformly without repetition;
//! - [`Strategy::Tpe`]: a tree-structured Parzen estimator (Bergstra et al. 2011) over the
//!   categorical dimensions: after a few random points, the trials are split into the best
//!   quarter and the rest, each dimension's values get smoothed frequencies in both, and the next
//!   point is the one of 24 drawn from the good model with the highest good/bad ratio.
//!
//! The objective is PSNR alone: a point with more latent channels or a wider decoder costs more
//! multiply-adds per texel to decode, which every trial reports, and `max_decoder_macs_per_texel`
//! caps. The first trial is always the base shape; a point that sizes to the same options as an
//! earlier trial (the same bundle) is not trained again. With a cache file, each search stores
//! its trials under a descriptor of the set (size, maps, content estimate, rate); a later search
//! on a similar set runs the cached best points right after it, and the samplers learn from them.

use crate::base::rng::Rng;
use crate::decode::Decoder;
use crate::eval::evaluate;
use crate::options::CompressOptions;
use crate::pipeline::{CompressError, Compressed, compress};
use crate::progress::{Cancel, Progress};
use crate::set::TextureSet;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

mod cache;
mod space;
mod tpe;

pub use cache::SearchCache;
use cache::{CachedSearch, SetDescriptor};
use space::DIMS;
pub use space::{SearchPoint, SearchSpace};
use tpe::{search_rng, tpe_propose};

/// How short trials are proposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Every point of the space.
    Grid,
    /// Uniform draws without repetition.
    Random,
    /// Tree-structured Parzen estimator.
    Tpe,
}

/// How to search.
#[derive(Clone, Debug, Serialize)]
pub struct SearchOptions {
    /// The proposer.
    pub strategy: Strategy,
    /// The rate every point is sized to, bits per texel.
    pub bits_per_texel: f64,
    /// Short trials at most (the samplers; [`Strategy::Grid`] runs the whole space).
    pub trials: usize,
    /// Fraction of the base options' steps a short trial trains for.
    pub short_fraction: f32,
    /// Short trials promoted to a full run (besides the base shape, which always runs in full).
    pub finalists: usize,
    /// Seed of the samplers (training keeps the base options' seed).
    pub seed: u64,
    /// The points.
    pub space: SearchSpace,
    /// Where earlier searches' results are kept; read to start warm, then updated. `None`: no
    /// memory.
    pub cache: Option<PathBuf>,
    /// Points whose decoder costs more multiply-adds per texel than this are skipped (the base
    /// shape excepted): a cap on the shader's decode cost. `None`: no cap.
    pub max_decoder_macs_per_texel: Option<usize>,
}

impl SearchOptions {
    /// A search of `trials` short runs at `bits_per_texel` over the default space: short runs a
    /// quarter of the steps, two finalists, no cache.
    #[must_use]
    pub fn new(strategy: Strategy, bits_per_texel: f64, trials: usize) -> Self {
        Self {
            strategy,
            bits_per_texel,
            trials,
            short_fraction: 0.25,
            finalists: 2,
            seed: 1,
            space: SearchSpace::default(),
            cache: None,
            max_decoder_macs_per_texel: None,
        }
    }
}

/// Where a short trial's point came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The base options' own shape.
    Base,
    /// A cached search on a similar set.
    Warm,
    /// The grid.
    Grid,
    /// A uniform draw.
    Random,
    /// The TPE model.
    Tpe,
}

/// One short trial.
#[derive(Clone, Debug, Serialize)]
pub struct SearchTrial {
    /// The point.
    pub point: SearchPoint,
    /// Who proposed it.
    pub source: Source,
    /// Grid channels after fitting to the rate (fine, coarse).
    pub channels: [u32; 2],
    /// Decoder multiply-adds per texel ([`ModelConfig::decoder_macs_per_texel`](crate::options::ModelConfig::decoder_macs_per_texel)).
    pub decoder_macs_per_texel: usize,
    /// The bundle's rate.
    pub bits_per_texel: f64,
    /// Pooled PSNR after the short run, dB.
    pub pooled_psnr_db: f64,
    /// Training time.
    pub train_secs: f64,
}

/// One full-length run.
#[derive(Clone, Debug, Serialize)]
pub struct FinalRun {
    /// Index of its short trial in [`SearchReport::trials`].
    pub trial: usize,
    /// The point.
    pub point: SearchPoint,
    /// Decoder multiply-adds per texel.
    pub decoder_macs_per_texel: usize,
    /// The bundle's rate.
    pub bits_per_texel: f64,
    /// Its size.
    pub bundle_bytes: u64,
    /// Pooled PSNR, dB.
    pub pooled_psnr_db: f64,
    /// Training time.
    pub train_secs: f64,
}

/// What the search did.
#[derive(Clone, Debug, Serialize)]
pub struct SearchReport {
    /// How it searched.
    pub options: SearchOptions,
    /// Steps of a short trial and of a full run.
    pub short_steps: u32,
    /// Steps of a full run.
    pub full_steps: u32,
    /// Short trials, in the order run.
    pub trials: Vec<SearchTrial>,
    /// Points that could not be sized to the rate (too few bits for one channel per grid and the
    /// decoder), skipped without training.
    pub infeasible: Vec<SearchPoint>,
    /// Points over the decode-cost cap, skipped without training.
    pub too_costly: Vec<SearchPoint>,
    /// Points whose options, once sized to the rate, equal an earlier trial's (two channel splits
    /// that fit to the same channels, say): the same bundle would train again, so they are not
    /// run. Each comes with the index in `trials` of the trial it equals, whose score the samplers
    /// learn for it; they do not count against the trial budget.
    pub same_as_earlier: Vec<(SearchPoint, usize)>,
    /// Full runs: the finalists and the base shape.
    pub finals: Vec<FinalRun>,
    /// Index in `finals` of the bundle returned.
    pub chosen: usize,
    /// Index in `finals` of the base shape's full run.
    pub baseline: usize,
    /// The chosen run's PSNR above the base shape's at the same rate, dB (0 when the base wins).
    pub gain_db: f64,
    /// 1-based index of the short trial that first ran the chosen point.
    pub found_at_trial: usize,
    /// The cached search this one started from, if any: its materials and rate.
    pub warm_from: Option<String>,
    /// Training time of every run, short and full.
    pub total_train_secs: f64,
}

/// Why the search could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// Bad options.
    #[error("precision search: {0}")]
    Options(String),
    /// The cache file cannot be read or written.
    #[error("precision search cache {}: {message}", path.display())]
    Cache {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A trial failed.
    #[error(transparent)]
    Compress(#[from] CompressError),
    /// Scoring a trial failed.
    #[error(transparent)]
    Eval(#[from] crate::eval::EvalError),
}

/// The points a search has proposed but not trained.
#[derive(Default)]
struct Skipped {
    infeasible: Vec<SearchPoint>,
    too_costly: Vec<SearchPoint>,
    same_as_earlier: Vec<(SearchPoint, usize)>,
}

/// Whether a point was run already or skipped (the samplers propose each point once).
fn seen(point: &SearchPoint, trials: &[SearchTrial], skipped: &Skipped) -> bool {
    trials.iter().any(|t| t.point == *point)
        || skipped.infeasible.contains(point)
        || skipped.too_costly.contains(point)
        || skipped.same_as_earlier.iter().any(|(p, _)| p == point)
}

/// Checks the search options and returns the base options' point.
fn check_options(base: &CompressOptions, search: &SearchOptions) -> Result<SearchPoint, SearchError> {
    search.space.validate().map_err(SearchError::Options)?;
    if !(search.short_fraction > 0.0 && search.short_fraction <= 1.0) {
        return Err(SearchError::Options(format!("the short fraction must be in (0, 1], got {}", search.short_fraction)));
    }
    if search.trials == 0 {
        return Err(SearchError::Options("at least one trial is needed".into()));
    }
    SearchPoint::of(base)
        .ok_or_else(|| SearchError::Options("the base options need two grids, the second twice as coarse, with equal bits".into()))
}

/// The points to run first: the base shape, then up to three of a cached search's best points
/// (its chosen point first) that are in `space`.
fn first_points(base_point: SearchPoint, warm: Option<&CachedSearch>, space: &SearchSpace) -> Vec<(SearchPoint, Source)> {
    let mut queue: Vec<(SearchPoint, Source)> = vec![(base_point, Source::Base)];
    if let Some(w) = warm {
        let mut best: Vec<&(SearchPoint, f64)> = w.trials.iter().collect();
        best.sort_by(|a, b| b.1.total_cmp(&a.1));
        let mut seeds = vec![&w.chosen];
        seeds.extend(best.iter().map(|(p, _)| p));
        for p in seeds.into_iter().take(4) {
            if space.index_of(p).is_some() && !queue.iter().any(|(q, _)| q == p) {
                queue.push((p.clone(), Source::Warm));
            }
        }
    }
    queue
}

/// What every run of a search shares: the set, the options and the running training time.
struct Runner<'a> {
    set: &'a TextureSet,
    base: &'a CompressOptions,
    search: &'a SearchOptions,
    progress: &'a dyn Progress,
    cancel: &'a Cancel,
    /// Training time of every run so far.
    total_train_secs: f64,
}

impl Runner<'_> {
    /// Compresses the set with `options` and scores the bundle by pooled PSNR.
    fn score(&mut self, options: &CompressOptions) -> Result<(Compressed, f64), SearchError> {
        let out = compress(self.set, options, self.progress, self.cancel)?;
        let psnr = evaluate(self.set, &Decoder::new(&out.bundle), false)?.pooled_psnr_db;
        self.total_train_secs += out.report.train.train_secs;
        Ok((out, psnr))
    }
}

/// The short rung: the proposers' state, and the trials run and points skipped so far.
struct ShortRung<'a> {
    space: &'a SearchSpace,
    /// Every point of the space, in order.
    all: Vec<[usize; DIMS]>,
    /// Points to run before the proposer's (the base shape and warm points).
    queue: Vec<(SearchPoint, Source)>,
    rng: Rng,
    /// The grid strategy's position in `all`.
    grid_next: usize,
    /// Steps of a short trial.
    short_steps: u32,
    trials: Vec<SearchTrial>,
    /// Index and score of every trial (and of the points that equal one), what TPE learns from.
    observed: Vec<([usize; DIMS], f64)>,
    /// The short-run options of each trial, to find points that size to the same bundle.
    fitted: Vec<CompressOptions>,
    skipped: Skipped,
}

impl<'a> ShortRung<'a> {
    /// A rung over `space` that runs `queue` first.
    fn new(space: &'a SearchSpace, queue: Vec<(SearchPoint, Source)>, search: &SearchOptions, short_steps: u32) -> Self {
        Self {
            space,
            all: space.all(),
            queue,
            rng: search_rng(search.seed ^ 0x5EA2_C400),
            grid_next: 0,
            short_steps,
            trials: Vec::new(),
            observed: Vec::new(),
            fitted: Vec::new(),
            skipped: Skipped::default(),
        }
    }

    /// Runs short trials until `runner.search`'s budget is spent or no point is left.
    fn run(&mut self, runner: &mut Runner<'_>, on_trial: &dyn Fn(&SearchTrial)) -> Result<(), SearchError> {
        let search = runner.search;
        let budget = if search.strategy == Strategy::Grid { self.all.len() + 1 } else { search.trials };
        while self.trials.len() < budget {
            let Some((point, source)) = self.propose(search) else { break };
            if seen(&point, &self.trials, &self.skipped) {
                continue;
            }
            self.try_point(runner, point, source, on_trial)?;
        }
        Ok(())
    }

    /// The next point: the queue's, else the strategy's among the points not yet seen (`None`:
    /// none left).
    fn propose(&mut self, search: &SearchOptions) -> Option<(SearchPoint, Source)> {
        if !self.queue.is_empty() {
            return Some(self.queue.remove(0));
        }
        let space = self.space;
        let open: Vec<[usize; DIMS]> = self.all.iter().filter(|x| !seen(&space.point(**x), &self.trials, &self.skipped)).copied().collect();
        if open.is_empty() {
            return None;
        }
        let random = |rng: &mut Rng| space.point(open[(rng.next_u64() % open.len().max(1) as u64) as usize]);
        Some(match search.strategy {
            Strategy::Grid => {
                while self.grid_next < self.all.len() && !open.contains(&self.all[self.grid_next]) {
                    self.grid_next += 1;
                }
                (space.point(*self.all.get(self.grid_next)?), Source::Grid)
            }
            Strategy::Random => (random(&mut self.rng), Source::Random),
            Strategy::Tpe if self.observed.len() < (search.trials / 4).max(3) => (random(&mut self.rng), Source::Random),
            Strategy::Tpe => (space.point(tpe_propose(space.sizes(), &self.observed, &open, &mut self.rng)), Source::Tpe),
        })
    }

    /// Sizes `point` to the rate and runs it short, unless it cannot be sized, costs too much to
    /// decode or sizes to an earlier trial's options (then it is recorded as skipped).
    fn try_point(
        &mut self,
        runner: &mut Runner<'_>,
        point: SearchPoint,
        source: Source,
        on_trial: &dyn Fn(&SearchTrial),
    ) -> Result<(), SearchError> {
        let (set, search) = (runner.set, runner.search);
        let mut options = match point.options(runner.base, search.bits_per_texel, set) {
            Ok(o) => o,
            Err(_) if source != Source::Base => {
                self.skipped.infeasible.push(point);
                return Ok(());
            }
            Err(e) => return Err(SearchError::Options(format!("the base shape at {} bits per texel: {e}", search.bits_per_texel))),
        };
        let macs = options.model.decoder_macs_per_texel(set.output_channels());
        if source != Source::Base && search.max_decoder_macs_per_texel.is_some_and(|cap| macs > cap) {
            self.skipped.too_costly.push(point);
            return Ok(());
        }
        options.schedule.give_steps(self.short_steps);
        if let Some(earlier) = self.fitted.iter().position(|o| *o == options) {
            if let Some(x) = self.space.index_of(&point) {
                self.observed.push((x, self.trials[earlier].pooled_psnr_db));
            }
            self.skipped.same_as_earlier.push((point, earlier));
            return Ok(());
        }
        let (out, psnr) = runner.score(&options)?;
        let trial = SearchTrial {
            point: point.clone(),
            source,
            channels: [options.model.grids[0].channels, options.model.grids[1].channels],
            decoder_macs_per_texel: macs,
            bits_per_texel: out.report.pack.bits_per_texel,
            pooled_psnr_db: psnr,
            train_secs: out.report.train.train_secs,
        };
        on_trial(&trial);
        if let Some(x) = self.space.index_of(&point) {
            self.observed.push((x, psnr));
        }
        self.trials.push(trial);
        self.fitted.push(options);
        Ok(())
    }
}

/// The trials that run in full: the base shape's (the first) and the `count` best others.
fn finalists(trials: &[SearchTrial], count: usize) -> Vec<usize> {
    let mut by_score: Vec<usize> = (0..trials.len()).collect();
    by_score.sort_by(|&a, &b| trials[b].pooled_psnr_db.total_cmp(&trials[a].pooled_psnr_db));
    let mut finalists = vec![0usize];
    for i in by_score {
        if finalists.len() > count {
            break;
        }
        if i != 0 {
            finalists.push(i);
        }
    }
    finalists
}

/// Runs the `finalists` among `trials` at full length: their reports and bundles, in order.
fn run_finals(
    runner: &mut Runner<'_>,
    trials: &[SearchTrial],
    finalists: &[usize],
    on_final: &dyn Fn(&FinalRun),
) -> Result<(Vec<FinalRun>, Vec<Compressed>), SearchError> {
    let mut finals = Vec::new();
    let mut bundles = Vec::new();
    for &i in finalists {
        let options = trials[i]
            .point
            .options(runner.base, runner.search.bits_per_texel, runner.set)
            .map_err(|e| SearchError::Options(e.to_string()))?;
        let (out, psnr) = runner.score(&options)?;
        let run = FinalRun {
            trial: i,
            point: trials[i].point.clone(),
            decoder_macs_per_texel: trials[i].decoder_macs_per_texel,
            bits_per_texel: out.report.pack.bits_per_texel,
            bundle_bytes: out.report.pack.bundle_bytes,
            pooled_psnr_db: psnr,
            train_secs: out.report.train.train_secs,
        };
        on_final(&run);
        finals.push(run);
        bundles.push(out);
    }
    Ok((finals, bundles))
}

/// Stores the search in the cache file at `path` (read as `cache`) under `descriptor`.
fn remember(mut cache: SearchCache, path: &Path, descriptor: SetDescriptor, report: &SearchReport) -> Result<(), SearchError> {
    cache.version = 1;
    cache.searches.push(CachedSearch {
        descriptor,
        trials: report.trials.iter().map(|t| (t.point.clone(), t.pooled_psnr_db)).collect(),
        chosen: report.finals[report.chosen].point.clone(),
    });
    cache.write(path)
}

/// Searches the shape of `base` at `search.bits_per_texel` on `set` and returns the best full
/// run's bundle; `on_trial` hears of each short trial and `on_final` of each full run.
pub fn search_precision(
    set: &TextureSet,
    base: &CompressOptions,
    search: &SearchOptions,
    progress: &dyn Progress,
    cancel: &Cancel,
    on_trial: &dyn Fn(&SearchTrial),
    on_final: &dyn Fn(&FinalRun),
) -> Result<(Compressed, SearchReport), SearchError> {
    let base_point = check_options(base, search)?;
    let descriptor = SetDescriptor::of(set, search.bits_per_texel);
    let cache = search.cache.as_deref().map(SearchCache::read).transpose()?;
    let warm = cache.as_ref().and_then(|c| c.nearest(&descriptor)).cloned();
    let short_steps = ((base.schedule.steps as f32 * search.short_fraction).round() as u32).max(1);
    let mut runner = Runner { set, base, search, progress, cancel, total_train_secs: 0.0 };
    let mut rung = ShortRung::new(&search.space, first_points(base_point, warm.as_ref(), &search.space), search, short_steps);
    rung.run(&mut runner, on_trial)?;

    // Full runs: the base shape and the best short trials.
    let ShortRung { trials, skipped, .. } = rung;
    let (finals, mut bundles) = run_finals(&mut runner, &trials, &finalists(&trials, search.finalists), on_final)?;
    let chosen = (0..finals.len()).max_by(|&a, &b| finals[a].pooled_psnr_db.total_cmp(&finals[b].pooled_psnr_db)).unwrap_or(0);
    let baseline = 0;
    let report = SearchReport {
        options: search.clone(),
        short_steps,
        full_steps: base.schedule.steps,
        found_at_trial: finals[chosen].trial + 1,
        gain_db: finals[chosen].pooled_psnr_db - finals[baseline].pooled_psnr_db,
        chosen,
        baseline,
        trials,
        infeasible: skipped.infeasible,
        too_costly: skipped.too_costly,
        same_as_earlier: skipped.same_as_earlier,
        finals,
        warm_from: warm.map(|w| format!("{} at {:.3} bits/texel", w.descriptor.materials, w.descriptor.bits_per_texel)),
        total_train_secs: runner.total_train_secs,
    };
    if let (Some(cache), Some(path)) = (cache, search.cache.as_deref()) {
        remember(cache, path, descriptor, &report)?;
    }
    let bundle = bundles.swap_remove(chosen);
    Ok((bundle, report))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_space_holds_the_default_preset() {
        let space = SearchSpace::default();
        let point = SearchPoint::of(&CompressOptions::default()).expect("the default preset is a search point");
        assert_eq!(point.label(), "4b 1/4 12:16 64-64-64");
        assert!(space.index_of(&point).is_some());
        assert_eq!(space.all().len(), 81);
    }

    #[test]
    fn tpe_prefers_the_values_of_the_best_trials() {
        // Scores rise with dimension 0's value and ignore the others: the model must propose
        // dimension 0's best value.
        let sizes = [3, 3, 3, 3, 1];
        let space = SearchSpace::default();
        let all = space.all();
        let mut rng = search_rng(7);
        let observed: Vec<([usize; DIMS], f64)> = all.iter().step_by(5).map(|x| (*x, x[0] as f64 * 10.0 + x[3] as f64 * 0.1)).collect();
        let open: Vec<[usize; DIMS]> = all.iter().filter(|x| !observed.iter().any(|(o, _)| o == *x)).copied().collect();
        let mut best_value = 0;
        for _ in 0..10 {
            if tpe_propose(sizes, &observed, &open, &mut rng)[0] == 2 {
                best_value += 1;
            }
        }
        assert!(best_value >= 9, "TPE proposed dimension 0's best value {best_value} times of 10");
    }

    #[test]
    fn similar_sets_are_near_and_unlike_ones_far() {
        let a = SetDescriptor {
            materials: "a".into(),
            texels_log2: 22.0,
            maps: 3,
            output_channels: 9,
            content_bits_per_texel: 2.0,
            bits_per_texel: 4.0,
        };
        let similar = SetDescriptor { materials: "b".into(), content_bits_per_texel: 2.2, ..a.clone() };
        let other_rate = SetDescriptor { bits_per_texel: 1.0, ..a.clone() };
        let busier = SetDescriptor { content_bits_per_texel: 4.0, ..a.clone() };
        assert!(a.distance(&a).abs() < 1e-12);
        assert!(a.distance(&similar) < 1.0);
        assert!(a.distance(&other_rate) >= 0.9);
        assert!(a.distance(&busier) >= 0.9);
    }

    #[test]
    fn a_broken_cache_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("search.json");
        assert_eq!(SearchCache::read(&path).expect("missing is empty").searches.len(), 0);
        std::fs::write(&path, "{ not json").expect("write");
        let e = SearchCache::read(&path).expect_err("broken cache");
        assert!(e.to_string().contains("search.json"), "{e}");
    }
}
