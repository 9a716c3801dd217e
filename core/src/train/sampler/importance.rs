//! Error-driven (importance) sampling: with an error map ([`Sampler::refresh_importance`]) the
//! draws favour tiles of high error: a tile of [`TILE_TEXELS`]² texels is drawn with probability
//! `q = (1 − λ)·u + λ·u·e/ē` (`u` its uniform share, `e` its error, `ē` the mean error), a texel
//! uniformly within it, and the texel's loss weights are multiplied by `u / q`, so the expected
//! loss (and gradient) of a batch is the uniform one: only its variance changes.

use super::{Batch, CHUNK_TEXELS, Sampler};
use crate::base::rng::Rng;
use crate::model::params::ModelParams;
use crate::options::Sampling;
use rayon::prelude::*;

/// Mixed into the seed of the error map's probes: a stream apart from the training draws'.
const REFRESH_STREAM: u64 = 0x5A3B_1E0F_E770_0001;

/// Texels across (and down) of a tile of the error map (tiles at a map's right and bottom edges
/// may be smaller).
pub(crate) const TILE_TEXELS: u32 = 8;

/// Texels of each tile the error map evaluates at a refresh (drawn at random within the tile).
pub(crate) const PROBES_PER_TILE: usize = 4;

/// Tiles per deterministic work chunk of a refresh.
const REFRESH_CHUNK_TILES: usize = CHUNK_TEXELS / PROBES_PER_TILE;

/// Error-driven draws: per tile of every group, its draw probability and the loss-weight factor
/// `u / q` of a texel drawn in it.
#[derive(Clone, Debug)]
pub(super) struct Importance {
    /// Per group, its first tile in the flat tile arrays; one more entry, the tile count.
    first_tile: Vec<usize>,
    /// Per group, tiles across.
    tiles_across: Vec<u32>,
    /// Per tile, the cumulative draw probability up to and with it (the last is 1 up to
    /// rounding).
    cumulative: Vec<f64>,
    /// Per tile, the factor on the loss weights of a texel drawn in it: its uniform share over
    /// its draw probability.
    weight_scale: Vec<f32>,
}

/// The texels of tile `tile` (row-major over `tiles_across`) of a `width`-wide, `height`-high
/// map: (first column, first row, columns, rows).
fn tile_rect(tile: usize, tiles_across: u32, width: u32, height: u32) -> (u32, u32, u32, u32) {
    let (tx, ty) = (tile as u32 % tiles_across, tile as u32 / tiles_across);
    let (x0, y0) = (tx * TILE_TEXELS, ty * TILE_TEXELS);
    (x0, y0, TILE_TEXELS.min(width - x0), TILE_TEXELS.min(height - y0))
}

/// Tiles across and down a `width × height` map.
fn tiles_of(width: u32, height: u32) -> (u32, u32) {
    (width.div_ceil(TILE_TEXELS), height.div_ceil(TILE_TEXELS))
}

/// What [`Sampler::refresh_importance`] measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ImportanceStats {
    /// Tiles measured.
    pub tiles: usize,
    /// The largest loss-weight factor `u / q` of any tile (at most `1 / (1 − mix)`).
    pub max_weight_scale: f32,
    /// The smallest (a tile of the largest error).
    pub min_weight_scale: f32,
}

impl Sampler<'_> {
    /// One draw by the error map: a tile by its probability, a texel uniformly in it.
    pub(super) fn draw_by_error(&self, importance: &Importance, rng: &mut Rng) -> (u32, u32) {
        let r = rng.next_f64();
        let last = importance.cumulative.len().saturating_sub(1);
        // Rounding may leave the last cumulative value a hair under 1: such an `r` takes the last tile.
        let tile = importance.cumulative.partition_point(|&c| c <= r).min(last);
        let g = importance.first_tile.partition_point(|&f| f <= tile).saturating_sub(1).min(self.groups.len() - 1);
        let group = &self.groups[g];
        let (x0, y0, w, h) = tile_rect(tile - importance.first_tile[g], importance.tiles_across[g], group.width, group.height);
        let k = rng.below(u64::from(w) * u64::from(h)) as u32;
        (g as u32, (y0 + k / w) * group.width + x0 + k % w)
    }

    /// The loss-weight factor of a draw of `texel` in group `g` (1 without an error map).
    pub(super) fn weight_scale(&self, g: usize, texel: usize) -> f32 {
        let (Some(importance), Some(group)) = (&self.importance, self.groups.get(g)) else { return 1.0 };
        let (x, y) = ((texel % group.width as usize) as u32, (texel / group.width as usize) as u32);
        let tile = importance.first_tile[g] + (y / TILE_TEXELS * importance.tiles_across[g] + x / TILE_TEXELS) as usize;
        importance.weight_scale.get(tile).copied().unwrap_or(1.0)
    }

    /// Whether the draws follow an error map.
    #[must_use]
    pub fn error_driven(&self) -> bool {
        self.importance.is_some()
    }

    /// Draws uniformly again.
    pub fn clear_importance(&mut self) {
        self.importance = None;
    }

    /// `Trainer::refresh_sampling` of a trainer that draws from this sampler on the CPU: draws by
    /// `model`'s error ([`Sampler::refresh_importance`] with `schedule`'s sampling, mix and seed,
    /// at `step`), or uniformly again with `None`.
    pub fn refresh_for(&mut self, model: Option<&ModelParams>, schedule: &crate::train::schedule::Schedule, step: u32) {
        match model {
            Some(model) => {
                self.refresh_importance(model, schedule.sampling, schedule.sampling_mix, schedule.seed, step);
            }
            None => self.clear_importance(),
        }
    }

    /// Measures the error of the model `params` (as it would ship: the layers in `params` are run
    /// as they are) on [`PROBES_PER_TILE`] random texels of every tile of every group, and from
    /// now on draws by it ([`Sampling::Error`]: by each tile's mean weighted squared error;
    /// [`Sampling::RmsError`]: by its square root), `mix` of the draws by the error and the rest
    /// uniformly. The probes come from generators seeded by `(seed, step, chunk)`: the map does
    /// not depend on the thread count. [`Sampling::Uniform`], or a model without error, draws
    /// uniformly again.
    pub fn refresh_importance(
        &mut self,
        params: &ModelParams,
        sampling: Sampling,
        mix: f32,
        seed: u64,
        step: u32,
    ) -> Option<ImportanceStats> {
        self.importance = None;
        if sampling == Sampling::Uniform || self.groups.is_empty() {
            return None;
        }
        let mut first_tile = Vec::with_capacity(self.groups.len() + 1);
        let mut tiles_across = Vec::with_capacity(self.groups.len());
        let mut tiles = 0usize;
        for g in &self.groups {
            let (across, down) = tiles_of(g.width, g.height);
            first_tile.push(tiles);
            tiles_across.push(across);
            tiles += across as usize * down as usize;
        }
        first_tile.push(tiles);
        // Per tile (flat), its mean weighted squared error over its probes.
        let errors: Vec<f32> = (0..tiles.div_ceil(REFRESH_CHUNK_TILES))
            .into_par_iter()
            .flat_map_iter(|chunk| {
                let mut rng = Rng::new(seed ^ REFRESH_STREAM, u64::from(step), chunk as u64);
                let range = chunk * REFRESH_CHUNK_TILES..((chunk + 1) * REFRESH_CHUNK_TILES).min(tiles);
                let mut draws = Vec::with_capacity(range.len() * PROBES_PER_TILE);
                for tile in range.clone() {
                    let g = first_tile.partition_point(|&f| f <= tile) - 1;
                    let group = &self.groups[g];
                    let (x0, y0, w, h) = tile_rect(tile - first_tile[g], tiles_across[g], group.width, group.height);
                    for _ in 0..PROBES_PER_TILE {
                        let k = rng.below(u64::from(w) * u64::from(h)) as u32;
                        draws.push((g as u32, (y0 + k / w) * group.width + x0 + k % w));
                    }
                }
                let mut batch = Batch::default();
                self.fill_unscaled(&draws, draws.len(), &mut batch);
                let per_texel = crate::train::kernel::weighted_texel_errors(params, &params.layers, &batch);
                per_texel.chunks(PROBES_PER_TILE).map(|probes| probes.iter().sum::<f32>() / PROBES_PER_TILE as f32).collect::<Vec<f32>>()
            })
            .collect();
        let importance = self.importance_from_errors(first_tile, tiles_across, &errors, sampling, mix)?;
        let (min, max) = importance.weight_scale.iter().fold((f32::INFINITY, 0.0f32), |(lo, hi), &w| (lo.min(w), hi.max(w)));
        self.importance = Some(importance);
        Some(ImportanceStats { tiles, max_weight_scale: max, min_weight_scale: min })
    }

    /// The draw probabilities and weight factors of tiles of the given per-tile `errors`
    /// (`None` when no tile has a finite, positive error: uniform draws).
    fn importance_from_errors(
        &self,
        first_tile: Vec<usize>,
        tiles_across: Vec<u32>,
        errors: &[f32],
        sampling: Sampling,
        mix: f32,
    ) -> Option<Importance> {
        let total = self.texel_count() as f64;
        let mix = f64::from(mix.clamp(0.0, crate::options::MAX_SAMPLING_MIX));
        // Per tile its uniform share `u` and its error `e`.
        let mut uniform = Vec::with_capacity(errors.len());
        for (g, group) in self.groups.iter().enumerate() {
            let tiles = first_tile[g + 1] - first_tile[g];
            for t in 0..tiles {
                let (_, _, w, h) = tile_rect(t, tiles_across[g], group.width, group.height);
                uniform.push((u64::from(w) * u64::from(h) * self.repeats[g]) as f64 / total);
            }
        }
        let error = |e: f32| {
            let e = if e.is_finite() { f64::from(e.max(0.0)) } else { 0.0 };
            if sampling == Sampling::RmsError { e.sqrt() } else { e }
        };
        let mean_error: f64 = uniform.iter().zip(errors).map(|(u, &e)| u * error(e)).sum();
        if !(mean_error.is_finite() && mean_error > 0.0) {
            return None;
        }
        let mut cumulative = Vec::with_capacity(errors.len());
        let mut weight_scale = Vec::with_capacity(errors.len());
        let mut sum = 0.0f64;
        for (u, &e) in uniform.iter().zip(errors) {
            // q / u = (1 − λ) + λ·e/ē ≥ 1 − λ: the factor u / q is at most 1 / (1 − λ).
            let ratio = (1.0 - mix) + mix * error(e) / mean_error;
            sum += u * ratio;
            cumulative.push(sum);
            weight_scale.push((1.0 / ratio) as f32);
        }
        Some(Importance { first_tile, tiles_across, cumulative, weight_scale })
    }
}

#[cfg(test)]
mod tests {
    use super::{PROBES_PER_TILE, TILE_TEXELS};
    use crate::base::rng::Rng;
    use crate::model::layout::ModelLayout;
    use crate::options::{CompressOptions, Sampling};
    use crate::set::TextureSet;
    use crate::train::sampler::tests_support::set;
    use crate::train::sampler::{Batch, Sampler};

    fn layout(set: &TextureSet, mips: bool) -> ModelLayout {
        let mut options = CompressOptions::default();
        options.model.mips = mips;
        crate::analyse::analyse(set, &options).expect("layout").0
    }

    /// A known per-texel function of a draw: its group's targets' first channel value.
    fn value(sampler: &Sampler<'_>, g: u32, texel: u32) -> f64 {
        let group = &sampler.groups[g as usize];
        let t = &group.targets[0];
        f64::from(t.data[texel as usize * t.channels])
    }

    /// Over many draws, the mean loss-weight factor is 1 and the weighted mean of a known
    /// per-texel function is its uniform mean: error-driven draws leave the expected loss the
    /// uniform one. Exactly, too: Σ q·(u/q) over the tiles is 1.
    #[test]
    fn error_driven_sampling_keeps_the_expected_loss_uniform() {
        let set = set();
        for mips in [false, true] {
            let layout = layout(&set, mips);
            let mut sampler = Sampler::new(&set, &layout).with_level_boost(1.5);
            let params = crate::train::initial_params(&set, &layout, 1);
            // The uniform mean of the function, every texel counted its level's repeats.
            let total = sampler.texel_count() as f64;
            let uniform_mean: f64 = sampler
                .groups
                .iter()
                .enumerate()
                .map(|(g, group)| {
                    let texels = group.width * group.height;
                    (0..texels).map(|t| value(&sampler, g as u32, t)).sum::<f64>() * sampler.repeats[g] as f64 / total
                })
                .sum();
            for sampling in [Sampling::Error, Sampling::RmsError] {
                let stats = sampler.refresh_importance(&params, sampling, 0.5, 7, 100).expect("an error map");
                assert!(stats.max_weight_scale <= 2.0 + 1e-6, "u/q ≤ 1/(1 − λ): {stats:?}");
                assert!(stats.min_weight_scale < 0.9 * stats.max_weight_scale, "the map favours some tiles: {stats:?}");
                let importance = sampler.importance.as_ref().expect("importance");
                // Σ_t q_t · (u_t / q_t) = Σ_t u_t = 1.
                let mut previous = 0.0;
                let exact: f64 = importance
                    .cumulative
                    .iter()
                    .zip(&importance.weight_scale)
                    .map(|(&c, &w)| {
                        let q = c - previous;
                        previous = c;
                        q * f64::from(w)
                    })
                    .sum();
                assert!((exact - 1.0).abs() < 1e-6, "Σ q·u/q = {exact}");
                assert!((previous - 1.0).abs() < 1e-9, "Σ q = {previous}");

                let draws = 400_000;
                let (mut scale_sum, mut value_sum) = (0.0f64, 0.0f64);
                let mut rng = Rng::new(3, 0, 0);
                for (g, texel) in sampler.draw(&mut rng, draws) {
                    let scale = f64::from(sampler.weight_scale(g as usize, texel as usize));
                    scale_sum += scale;
                    value_sum += scale * value(&sampler, g, texel);
                }
                let n = draws as f64;
                // Factors lie in [0.5/…, 2] and values in [0, 1]: the standard error of each mean
                // is under 2/√n ≈ 3e-3; 1e-2 is more than three of them.
                assert!((scale_sum / n - 1.0).abs() < 1e-2, "mips {mips}, {sampling:?}: mean factor {}", scale_sum / n);
                assert!(
                    (value_sum / n - uniform_mean).abs() < 1e-2,
                    "mips {mips}, {sampling:?}: weighted mean {} against the uniform mean {uniform_mean}",
                    value_sum / n
                );
            }
        }
    }

    /// Each draw lands in its group and the filled batch carries the factor on every weight.
    #[test]
    fn error_driven_batches_scale_their_weights_by_the_tile_factor() {
        let set = set();
        let layout = layout(&set, false);
        let mut sampler = Sampler::new(&set, &layout);
        let mut uniform = Batch::default();
        sampler.fill(&mut Rng::new(1, 2, 3), 256, &mut uniform);
        let params = crate::train::initial_params(&set, &layout, 1);
        sampler.refresh_importance(&params, Sampling::Error, 0.5, 1, 10).expect("an error map");
        let draws = sampler.draw(&mut Rng::new(1, 2, 3), 256);
        let mut batch = Batch::default();
        sampler.fill_draws(&draws, 256, &mut batch);
        let oc = sampler.output_channels;
        let mut unscaled = Batch::default();
        sampler.fill_unscaled(&draws, 256, &mut unscaled);
        for (i, &(g, texel)) in draws.iter().enumerate() {
            let group = &sampler.groups[g as usize];
            assert!(texel < group.width * group.height);
            let scale = sampler.weight_scale(g as usize, texel as usize);
            for o in 0..oc {
                assert_eq!(batch.weight[i * oc + o].to_bits(), (unscaled.weight[i * oc + o] * scale).to_bits());
            }
        }
        // Back to uniform: the draws and batches are the uniform ones again, bit for bit.
        sampler.clear_importance();
        let mut again = Batch::default();
        sampler.fill(&mut Rng::new(1, 2, 3), 256, &mut again);
        assert_eq!(again.uv, uniform.uv);
        assert_eq!(again.weight, uniform.weight);
    }

    /// The error map and the draws by it are a function of (seed, step): equal on any thread
    /// count, different for another seed.
    #[test]
    fn the_error_map_is_deterministic_per_seed_on_any_thread_count() {
        let set = set();
        let layout = layout(&set, true);
        let params = crate::train::initial_params(&set, &layout, 1);
        let map = |threads: usize, seed: u64| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
            pool.install(|| {
                let mut sampler = Sampler::new(&set, &layout).with_level_boost(1.5);
                sampler.refresh_importance(&params, Sampling::Error, 0.5, seed, 300).expect("an error map");
                let importance = sampler.importance.clone().expect("importance");
                let draws = sampler.draw(&mut Rng::new(seed, 300, 0), 512);
                (importance.weight_scale, importance.cumulative, draws)
            })
        };
        let one = map(1, 1);
        assert_eq!(one, map(3, 1));
        assert_ne!(one.0, map(1, 2).0);
        let tiles = 20u32.div_ceil(TILE_TEXELS) * 12u32.div_ceil(TILE_TEXELS);
        assert!(one.0.len() >= tiles as usize && PROBES_PER_TILE > 0);
    }

    /// Uniform sampling asks for no error map, and a model without error leaves the draws uniform.
    #[test]
    fn uniform_sampling_and_a_perfect_model_keep_uniform_draws() {
        let set = set();
        let layout = layout(&set, false);
        let mut sampler = Sampler::new(&set, &layout);
        let params = crate::train::initial_params(&set, &layout, 1);
        assert!(sampler.refresh_importance(&params, Sampling::Uniform, 0.5, 1, 1).is_none());
        assert!(!sampler.error_driven());
        let (first_tile, tiles_across) = (vec![0, 6], vec![3]);
        assert!(sampler.importance_from_errors(first_tile, tiles_across, &[0.0; 6], Sampling::Error, 0.5).is_none());
    }
}
