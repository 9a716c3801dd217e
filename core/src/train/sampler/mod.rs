//! The texel sampler every trainer shares: texels drawn uniformly over every texel of every
//! texture group (and mip level) of the library, in fixed chunks of [`CHUNK_TEXELS`] from a
//! generator seeded by `(seed, step, chunk)`, so results do not depend on the thread count.
//!
//! With an error map ([`Sampler::refresh_importance`], in `importance.rs`: error-driven sampling)
//! the draws favour tiles of high error, with loss weights that keep the expected loss the
//! uniform one.

mod importance;

use crate::base::rng::Rng;
use crate::model::layout::ModelLayout;
use crate::set::TextureSet;
use importance::Importance;

use std::borrow::Cow;

/// Texels per deterministic work chunk.
pub(crate) const CHUNK_TEXELS: usize = 256;

/// A batch in dense form: what every backend consumes.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    /// Texels in the batch.
    pub len: usize,
    /// `[len][2]` texture coordinates.
    pub uv: Vec<f32>,
    /// `[len][latent_channels]` channel masks.
    pub mask: Vec<f32>,
    /// `[len][output_channels]` targets (0 where not targeted).
    pub target: Vec<f32>,
    /// `[len][output_channels]` loss weights (0 where not targeted).
    pub weight: Vec<f32>,
    /// `[len]` mip level of each texel (empty: all level 0).
    pub level: Vec<u32>,
    /// `[len]` the texture (flat slot index) whose budget gates each texel's mask, while budgets
    /// are learned (empty otherwise: no gate gradients).
    pub gate: Vec<u32>,
}

/// A group of the draw table ([`Sampler::draw_table`]): textures of one material sharing a
/// resolution, a mip level and a channel mask.
#[derive(Clone, Debug)]
pub struct DrawGroup<'s> {
    /// Texels across.
    pub width: u32,
    /// Texels down.
    pub height: u32,
    /// Mip level of its reference.
    pub level: u32,
    /// Draws per texel (coarse mip levels more).
    pub repeats: u64,
    /// `[latent_channels]` channel mask.
    pub mask: &'s [f32],
    /// Whether its mask is scaled by budget gates (learned budgets).
    pub gated: bool,
    /// The maps it trains.
    pub targets: Vec<DrawTarget<'s>>,
}

/// A map a draw-table group trains: its reference texels and its slice of the MLP's outputs.
#[derive(Clone, Debug)]
pub struct DrawTarget<'s> {
    /// `[height][width][channels]` reference values.
    pub data: &'s [f32],
    /// Channels.
    pub channels: usize,
    /// First MLP output.
    pub output_offset: usize,
    /// Loss weight of each channel.
    pub weights: &'s [f32],
}

struct TargetRef<'a> {
    data: Cow<'a, [f32]>,
    channels: usize,
    output_offset: usize,
    /// Loss weight of each channel.
    weights: Vec<f32>,
    /// Flat index of its texture's slot (over `layout.textures`, materials in order).
    slot: usize,
}

/// Textures of one material that share a resolution and a channel mask, at one mip level: one MLP
/// evaluation per texel serves all of them.
struct Group<'a> {
    material: usize,
    width: u32,
    height: u32,
    level: u32,
    mask: Vec<f32>,
    /// While budgets are learned each texture is a group of its own, gated by its slot's gates.
    gate: Option<u32>,
    targets: Vec<TargetRef<'a>>,
}

/// Draws training texels uniformly over every texel of every texture group of the library (and,
/// with a mip chain, of every level of their box-filtered chains), so each map and level is
/// trained in proportion to its size.
pub struct Sampler<'a> {
    groups: Vec<Group<'a>>,
    /// Per group, how many times each of its texels counts in the draw (coarse mip levels more).
    repeats: Vec<u64>,
    cumulative_texels: Vec<u64>,
    latent_channels: usize,
    output_channels: usize,
    level_boost: f32,
    /// The error map the draws follow (`None`: uniform draws).
    importance: Option<Importance>,
}

/// Draws per texel of mip level `level` with `boost` ([`Sampler::with_level_boost`]): 16 ×
/// boost^level, rounded, so fractional boosts keep their ratios; without a mip chain (`chain`
/// false) one each (the draws of a run without mips are what they always were).
fn level_repeats(level: u32, boost: f32, chain: bool) -> u64 {
    if !chain {
        return 1;
    }
    (16.0 * f64::from(boost.max(1.0)).powi(level.min(64) as i32)).round().max(1.0) as u64
}

/// With a mip chain in `layout`, how many texels a batch draws in all for each texel of level 0
/// when a texel of level `k` is drawn `boost^k` as often as one of level 0 (1 without a chain):
/// what a batch must grow by for level 0 to get the texels it gets without mips.
#[must_use]
pub(crate) fn chain_draws_per_level0_draw(set: &TextureSet, layout: &ModelLayout, boost: f32) -> f64 {
    if layout.mip_levels <= 1 {
        return 1.0;
    }
    let (mut all, mut level0) = (0u64, 0u64);
    for (material, slots) in set.materials.iter().zip(&layout.textures) {
        for (texture, _) in material.textures.iter().zip(slots).filter(|(_, s)| s.duplicate_of.is_none()) {
            for level in 0..crate::model::params::full_mip_count(texture.info.width, texture.info.height) {
                let (w, h) = crate::model::mips::level_size(texture.info.width, texture.info.height, level);
                let draws = u64::from(w) * u64::from(h) * level_repeats(level, boost, true);
                all = all.saturating_add(draws);
                if level == 0 {
                    level0 = level0.saturating_add(draws);
                }
            }
        }
    }
    if level0 == 0 { 1.0 } else { all as f64 / level0 as f64 }
}

impl<'a> Sampler<'a> {
    /// Groups the set's textures by (material, resolution, mask) and, with a mip chain, builds
    /// every level's reference ([`crate::model::mips::box_chain`]).
    #[must_use]
    pub fn new(set: &'a TextureSet, layout: &ModelLayout) -> Self {
        let mut groups: Vec<Group<'a>> = Vec::new();
        let mut flat_slot = 0usize;
        for (material_index, (material, slots)) in set.materials.iter().zip(&layout.textures).enumerate() {
            let first_group = groups.len();
            for (texture, slot) in material.textures.iter().zip(slots) {
                let slot_index = flat_slot;
                flat_slot += 1;
                if slot.duplicate_of.is_some() {
                    // Stored once: its original is sampled.
                    continue;
                }
                let mask = layout.mask(slot);
                // A normal map trained towards unit normals: its references are renormalised
                // (each coarser level is renormalised by the box chain anyway).
                let level0: Cow<'a, [f32]> = if slot.unit_normal_targets {
                    Cow::Owned(texture.unit_normal_texels())
                } else {
                    Cow::Borrowed(texture.texels.as_slice())
                };
                let weights: Vec<f32> = (0..texture.info.channels as usize)
                    .map(|c| slot.loss_weight * slot.channel_loss_factors.get(c).copied().unwrap_or(1.0))
                    .collect();
                let chain = if layout.mip_levels > 1 {
                    crate::model::mips::box_chain(
                        &level0,
                        texture.info.width,
                        texture.info.height,
                        texture.info.channels,
                        texture.info.kind,
                        texture.info.color_space,
                        &texture.info.channel_ranges,
                    )
                } else {
                    Vec::new()
                };
                let levels = std::iter::once((texture.info.width, texture.info.height, level0))
                    .chain(chain.into_iter().map(|l| (l.width, l.height, Cow::Owned(l.values))));
                for (level, (width, height, data)) in levels.enumerate() {
                    let level = level as u32;
                    let target = TargetRef {
                        data,
                        channels: texture.info.channels as usize,
                        output_offset: slot.output_offset,
                        weights: weights.clone(),
                        slot: slot_index,
                    };
                    if let Some(g) = groups[first_group..]
                        .iter_mut()
                        .find(|g| g.width == width && g.height == height && g.level == level && g.mask == mask)
                    {
                        g.targets.push(target);
                    } else {
                        groups.push(Group {
                            material: material_index,
                            width,
                            height,
                            level,
                            mask: mask.clone(),
                            gate: None,
                            targets: vec![target],
                        });
                    }
                }
            }
        }
        let mut sampler = Self {
            groups,
            repeats: Vec::new(),
            cumulative_texels: Vec::new(),
            latent_channels: layout.latent_channels(),
            output_channels: layout.output_channels(),
            level_boost: 1.0,
            importance: None,
        };
        sampler.weigh_levels(1.0);
        sampler
    }

    /// Splits the groups so that every texture is sampled on its own, its texels tagged with its
    /// slot (`Batch::gate`): what learning its budget's gates needs.
    pub fn split_for_gates(&mut self) {
        let mut groups = Vec::new();
        for g in std::mem::take(&mut self.groups) {
            for t in g.targets {
                groups.push(Group {
                    material: g.material,
                    width: g.width,
                    height: g.height,
                    level: g.level,
                    mask: g.mask.clone(),
                    gate: Some(t.slot as u32),
                    targets: vec![t],
                });
            }
        }
        self.groups = groups;
        self.weigh_levels(self.level_boost);
    }

    /// Per flat slot (up to `slots`), the share of draws that land on its texels while gated
    /// (0 for slots no gated group samples).
    #[must_use]
    pub fn gate_shares(&self, slots: usize) -> Vec<f32> {
        let total = self.texel_count().max(1) as f64;
        let mut shares = vec![0.0f32; slots];
        let mut previous = 0u64;
        for (g, &c) in self.groups.iter().zip(&self.cumulative_texels) {
            if let Some(share) = g.gate.and_then(|s| shares.get_mut(s as usize)) {
                *share += ((c - previous) as f64 / total) as f32;
            }
            previous = c;
        }
        shares
    }

    /// Gives each texture the mask of its slot in `masks` (flat slot order) and groups again the
    /// textures of a material that share a resolution, a level and a mask; ends gating.
    pub fn set_masks(&mut self, masks: &[Vec<f32>]) {
        let mut groups: Vec<Group<'a>> = Vec::new();
        for g in std::mem::take(&mut self.groups) {
            for t in g.targets {
                let mask = masks.get(t.slot).cloned().unwrap_or_else(|| g.mask.clone());
                if let Some(found) = groups.iter_mut().find(|h| {
                    h.material == g.material && h.width == g.width && h.height == g.height && h.level == g.level && h.mask == mask
                }) {
                    found.targets.push(t);
                } else {
                    groups.push(Group {
                        material: g.material,
                        width: g.width,
                        height: g.height,
                        level: g.level,
                        mask,
                        gate: None,
                        targets: vec![t],
                    });
                }
            }
        }
        self.groups = groups;
        self.weigh_levels(self.level_boost);
    }

    /// Draws each texel of mip level `k` `boost^k` times as often as one of level 0
    /// ([`crate::options::SamplingConfig::mip_sample_boost`]; 1: every texel alike).
    #[must_use]
    pub fn with_level_boost(mut self, boost: f32) -> Self {
        self.level_boost = boost;
        self.weigh_levels(boost);
        self
    }

    fn weigh_levels(&mut self, boost: f32) {
        // The groups (or their shares) changed: an error map of the old ones no longer fits.
        self.importance = None;
        let chain = self.groups.iter().any(|g| g.level > 0);
        self.repeats = self.groups.iter().map(|g| level_repeats(g.level, boost, chain)).collect();
        let mut total = 0u64;
        self.cumulative_texels = self
            .groups
            .iter()
            .zip(&self.repeats)
            .map(|(g, r)| {
                total = total.saturating_add((u64::from(g.width) * u64::from(g.height)).saturating_mul(*r));
                total
            })
            .collect();
    }

    /// Total draws over all groups and levels (texels times their level's weight).
    #[must_use]
    pub fn texel_count(&self) -> u64 {
        self.cumulative_texels.last().copied().unwrap_or(0)
    }

    /// Masks these latent channels (`true`: removed) for every texture group from now on.
    pub fn drop_channels(&mut self, dropped: &[bool]) {
        for g in &mut self.groups {
            for (m, d) in g.mask.iter_mut().zip(dropped) {
                if *d {
                    *m = 0.0;
                }
            }
        }
    }

    /// The draw table in flat form: what a trainer that draws texels on a device uploads.
    #[must_use]
    pub fn draw_table(&self) -> Vec<DrawGroup<'_>> {
        self.groups
            .iter()
            .zip(&self.repeats)
            .map(|(g, &repeats)| DrawGroup {
                width: g.width,
                height: g.height,
                level: g.level,
                repeats,
                mask: &g.mask,
                gated: g.gate.is_some(),
                targets: g
                    .targets
                    .iter()
                    .map(|t| DrawTarget { data: &t.data, channels: t.channels, output_offset: t.output_offset, weights: &t.weights })
                    .collect(),
            })
            .collect()
    }

    /// Draws `len` texels as (group of [`Sampler::draw_table`], texel index in the group's
    /// `width × height`), exactly the draws [`Sampler::fill`] makes from the same generator state.
    pub fn draw(&self, rng: &mut Rng, len: usize) -> Vec<(u32, u32)> {
        let total = self.texel_count();
        if total == 0 {
            return Vec::new();
        }
        if let Some(importance) = &self.importance {
            return (0..len).map(|_| self.draw_by_error(importance, rng)).collect();
        }
        (0..len)
            .map(|_| {
                let r = rng.below(total);
                // r < total: a group always holds it.
                let g = self.cumulative_texels.partition_point(|&c| c <= r).min(self.groups.len() - 1);
                let start = if g == 0 { 0 } else { self.cumulative_texels[g - 1] };
                (g as u32, ((r - start) / self.repeats[g]) as u32)
            })
            .collect()
    }

    /// Fills `batch` with `len` random texels.
    pub fn fill(&self, rng: &mut Rng, len: usize, batch: &mut Batch) {
        let draws = self.draw(rng, len);
        self.fill_draws(&draws, len, batch);
    }

    /// Fills `batch` with `len` texels, the given `draws` ([`Sampler::draw`]) first and empty
    /// texels (no target) after them. With an error map each texel's loss weights are scaled by
    /// its tile's `u / q`.
    pub fn fill_draws(&self, draws: &[(u32, u32)], len: usize, batch: &mut Batch) {
        self.fill_unscaled(draws, len, batch);
        if self.importance.is_some() {
            let oc = self.output_channels;
            for (i, &(g, texel)) in draws.iter().enumerate().take(len) {
                let scale = self.weight_scale(g as usize, texel as usize);
                for w in &mut batch.weight[i * oc..(i + 1) * oc] {
                    *w *= scale;
                }
            }
        }
    }

    /// [`Sampler::fill_draws`] with every texel's own loss weights (no error-map factor).
    fn fill_unscaled(&self, draws: &[(u32, u32)], len: usize, batch: &mut Batch) {
        let (lc, oc) = (self.latent_channels, self.output_channels);
        batch.len = len;
        batch.uv.clear();
        batch.uv.resize(len * 2, 0.0);
        batch.mask.clear();
        batch.mask.resize(len * lc, 0.0);
        batch.target.clear();
        batch.target.resize(len * oc, 0.0);
        batch.weight.clear();
        batch.weight.resize(len * oc, 0.0);
        batch.level.clear();
        batch.level.resize(len, 0);
        batch.gate.clear();
        if self.groups.iter().any(|g| g.gate.is_some()) {
            batch.gate.resize(len, 0);
        }
        for (i, &(g, texel)) in draws.iter().enumerate().take(len) {
            let Some(group) = self.groups.get(g as usize) else { continue };
            let texel = texel as usize;
            let (x, y) = (texel % group.width as usize, texel / group.width as usize);
            batch.uv[2 * i] = (x as f32 + 0.5) / group.width as f32;
            batch.uv[2 * i + 1] = (y as f32 + 0.5) / group.height as f32;
            batch.level[i] = group.level;
            if let (Some(gate), Some(b)) = (group.gate, batch.gate.get_mut(i)) {
                *b = gate;
            }
            batch.mask[i * lc..(i + 1) * lc].copy_from_slice(&group.mask);
            for t in &group.targets {
                for c in 0..t.channels {
                    let o = i * oc + t.output_offset + c;
                    batch.target[o] = t.data.get(texel * t.channels + c).copied().unwrap_or(0.0);
                    batch.weight[o] = t.weights.get(c).copied().unwrap_or(0.0);
                }
            }
        }
    }
}

/// A small library for the tests of the sampler and of the loop.
#[cfg(test)]
pub(crate) mod tests_support {
    use crate::set::TextureSet;

    /// One material, a 20×12 colour map (its right and bottom tiles partial) whose right half
    /// is busy and left half flat: the error map has something to find.
    pub(crate) fn set() -> TextureSet {
        let (width, height) = (20u32, 12u32);
        let texels = (0..width * height * 3)
            .map(|i| {
                let x = (i / 3) % width;
                if x < width / 2 { 0.5 } else { ((i * 37) % 101) as f32 / 101.0 }
            })
            .collect();
        crate::set::test_sets::one_colour_map(width, height, texels)
    }
}
