//! The per-texture step of the analyse pass: each texture's measurements, whether it repeats an
//! earlier texture (identical, or a colour variant), and otherwise its channel budget and slot.

use crate::analyse::content::{
    CONTENT_TARGET_PSNR_DB, FLAT_PSNR_DB, HALF_BUDGET_SHARE, QUARTER_BUDGET_SHARE, channel_std_devs, is_flat_std_dev,
};
use crate::analyse::variants::{AFFINE_PSNR_DB, fit_color_transform, same_data, texel_hash};
use crate::analyse::{BudgetSource, DuplicateFinding, TextureBudget, channel_priority};
use crate::model::layout::{GridShape, TextureSlot};
use crate::options::CompressOptions;
use crate::set::{MapKind, Texture, TextureSet};
use std::collections::HashMap;

/// What the analyse pass measures of one texture.
struct TextureStats {
    /// `material/kind`.
    name: String,
    /// Mean of its values (all channels).
    mean: f32,
    /// Largest per-channel standard deviation.
    std_dev: f32,
    /// Its loss weight from the options (by kind, 1 by default).
    loss_weight: f32,
}

impl TextureStats {
    /// Measures texture `t` of the material named `material`.
    fn measure(material: &str, t: &Texture, options: &CompressOptions) -> Self {
        let name = format!("{material}/{}", t.info.kind);
        let std_devs = channel_std_devs(t);
        let std_dev = std_devs.iter().copied().fold(0.0f32, f32::max);
        let n = t.texels.len().max(1) as f64;
        let mean = (t.texels.iter().map(|&v| f64::from(v)).sum::<f64>() / n) as f32;
        let loss_weight = options.schedule.loss.weights.get(t.info.kind.token()).copied().unwrap_or(1.0);
        Self { name, mean, std_dev, loss_weight }
    }
}

/// A budget decision: channels, where it came from and why.
type Decision = (u32, BudgetSource, String);

/// An affine colour transform: its rows (`[m0, m1, m2, m3, offset]` per channel) and the PSNR it
/// reproduces the variant at, dB.
type Transform = (Vec<[f32; 5]>, f32);

/// The analyse pass's walk over the textures, in library order: the slots and budgets so far and
/// the earlier textures a later one may repeat.
pub(super) struct Budgeter<'a> {
    set: &'a TextureSet,
    options: &'a CompressOptions,
    /// Latent channels over all grids.
    total: u32,
    /// [`channel_priority`] of the grids: a budget of `k` takes its first `k`.
    priority: Vec<u32>,
    /// Content estimate `(bits, detail)` per material and texture.
    contents: &'a [Vec<(f32, f32)>],
    /// The busiest texture's content bits: the scale of the graded budgets.
    busiest: f32,
    /// Slots per material (the last one is the material being walked).
    pub(super) textures: Vec<Vec<TextureSlot>>,
    /// Budgets, one per texture so far.
    pub(super) budgets: Vec<TextureBudget>,
    /// Textures found to repeat an earlier one.
    pub(super) duplicates: Vec<DuplicateFinding>,
    /// Stored textures by [`texel_hash`].
    seen: HashMap<u32, Vec<(usize, usize)>>,
    /// Stored textures, in order (the candidates a colour variant may transform).
    originals: Vec<(usize, usize)>,
    /// The next free MLP output.
    output_offset: usize,
}

impl<'a> Budgeter<'a> {
    /// A walk over `set` with grids `grids` and content estimates `contents`.
    pub(super) fn new(set: &'a TextureSet, options: &'a CompressOptions, grids: &[GridShape], contents: &'a [Vec<(f32, f32)>]) -> Self {
        let busiest = contents.iter().flatten().map(|c| c.0).fold(0.0f32, f32::max).max(1e-6);
        Self {
            set,
            options,
            total: grids.iter().map(|g| g.channels).sum(),
            priority: channel_priority(grids),
            contents,
            busiest,
            textures: Vec::new(),
            budgets: Vec::new(),
            duplicates: Vec::new(),
            seen: HashMap::new(),
            originals: Vec::new(),
            output_offset: 0,
        }
    }

    /// Walks every texture of material `mi`.
    pub(super) fn add_material(&mut self, mi: usize) {
        self.textures.push(Vec::new());
        for ti in 0..self.set.materials[mi].textures.len() {
            self.add_texture(mi, ti);
        }
    }

    /// Texture `ti` of material `mi`: shares an earlier texture's outputs when it repeats one,
    /// else gets its budget and outputs of its own.
    fn add_texture(&mut self, mi: usize, ti: usize) {
        let set = self.set;
        let material = &set.materials[mi];
        let t = &material.textures[ti];
        let stats = TextureStats::measure(&material.name, t, self.options);
        // Exact duplicate of an earlier texture: share its outputs and budget.
        let hash = texel_hash(t);
        let original = self
            .seen
            .get(&hash)
            .and_then(|candidates| candidates.iter().copied().find(|&(m, k)| same_data(&set.materials[m].textures[k], t)));
        if let Some(original) = original {
            self.share(mi, original, t, stats, None);
            return;
        }
        // A colour variant of an earlier texture: its outputs plus an affine transform.
        if let Some((original, transform)) = self.colour_variant_of(t) {
            self.share(mi, original, t, stats, Some(transform));
            return;
        }
        self.seen.entry(hash).or_default().push((mi, ti));
        self.originals.push((mi, ti));
        let decision = self.decide(t, &stats, self.contents[mi][ti]);
        self.add_original(mi, t, stats, decision);
    }

    /// The stored texture of the same kind, colour space and ranges whose affine colour transform
    /// reproduces `t` best, at [`AFFINE_PSNR_DB`] or more: its index and the transform.
    fn colour_variant_of(&self, t: &Texture) -> Option<((usize, usize), Transform)> {
        let set = self.set;
        self.originals
            .iter()
            .copied()
            .filter(|&(m, k)| {
                let o = &set.materials[m].textures[k];
                o.info.kind == t.info.kind && o.info.color_space == t.info.color_space && o.info.channel_ranges == t.info.channel_ranges
            })
            .filter_map(|(m, k)| fit_color_transform(&set.materials[m].textures[k], t).map(|fit| ((m, k), fit)))
            .filter(|(_, (_, db))| *db >= AFFINE_PSNR_DB)
            .max_by(|a, b| a.1.1.total_cmp(&b.1.1))
    }

    /// `t` (of material `mi`) shares the outputs of stored texture `(m, k)`, through a colour
    /// transform or, with `None`, as an identical copy.
    fn share(&mut self, mi: usize, (m, k): (usize, usize), t: &Texture, stats: TextureStats, transform: Option<Transform>) {
        // The original is trained once for every copy: its loss counts each of them, as an
        // evaluation of the whole set does.
        let source = &mut self.textures[m][k];
        source.loss_weight += stats.loss_weight;
        let mut slot = TextureSlot { duplicate_of: Some((m, k)), loss_weight: stats.loss_weight, ..source.clone() };
        let same_as = format!("{}/{}", self.set.materials[m].name, self.set.materials[m].textures[k].info.kind);
        let (budget_source, reason, fit_db) = match transform {
            None => (BudgetSource::Duplicate, format!("identical to {same_as}: stored once, shares its outputs"), None),
            Some((rows, fit_db)) => {
                slot.color_transform = Some(rows);
                let reason = format!(
                    "colour variant of {same_as}: an affine transform reproduces it at {fit_db:.1} dB (>= {AFFINE_PSNR_DB} dB), stored as its outputs plus a {}x5 matrix",
                    t.info.channels
                );
                (BudgetSource::ColourVariant, reason, Some(fit_db))
            }
        };
        self.budgets.push(TextureBudget {
            texture: stats.name.clone(),
            channels: slot.latent_channels.len() as u32,
            total_channels: self.total,
            source: budget_source,
            reason,
            mean: stats.mean,
            std_dev: stats.std_dev,
        });
        self.duplicates.push(DuplicateFinding { texture: stats.name, same_as, channels: t.info.channels, transform_fit_psnr_db: fit_db });
        self.textures[mi].push(slot);
    }

    /// The budget of stored texture `t`: a manual override by name or kind, none for a flat map,
    /// else from its `content` estimate.
    fn decide(&self, t: &Texture, stats: &TextureStats, content: (f32, f32)) -> Decision {
        let overrides = &self.options.budgets.overrides;
        match overrides.get(&stats.name).or_else(|| overrides.get(t.info.kind.token())) {
            Some(&k) => (k.min(self.total), BudgetSource::Manual, format!("manual override ({k} requested)")),
            // PSNR of its mean as a constant: -10 log10(variance).
            None if is_flat_std_dev(stats.std_dev) => (
                0,
                BudgetSource::Flat,
                format!(
                    "flat: its mean reproduces it at {:.1} dB (>= {FLAT_PSNR_DB} dB), so the MLP bias carries it",
                    -20.0 * stats.std_dev.max(1e-12).log10()
                ),
            ),
            None => self.content_budget(content),
        }
    }

    /// The graded budget of content `(bits, detail)`: a quarter, half or all of the channels by
    /// its share of the busiest texture's bits, applied with `--auto-budgets`, else only proposed.
    fn content_budget(&self, (bits, detail): (f32, f32)) -> Decision {
        let total = self.total;
        let share = bits / self.busiest;
        let proposed = if share <= QUARTER_BUDGET_SHARE {
            total.div_ceil(4)
        } else if share <= HALF_BUDGET_SHARE {
            total.div_ceil(2)
        } else {
            total
        }
        .max(1);
        let content = format!(
            "content {bits:.1} bits/texel at {CONTENT_TARGET_PSNR_DB} dB ({:.0}% of the busiest), detail above the grid {:.1} dB below full scale",
            100.0 * share,
            -10.0 * detail.max(1e-12).log10()
        );
        if self.options.budgets.auto {
            (proposed, BudgetSource::Content, content)
        } else if proposed < total {
            (
                total,
                BudgetSource::Content,
                format!("every channel; {content}: the analysis proposes {proposed} (--auto-budgets applies it)"),
            )
        } else {
            (total, BudgetSource::Content, format!("every channel; {content}"))
        }
    }

    /// A stored texture `t` of material `mi`: its budget, and a slot with outputs of its own that
    /// reads the first `count` channels of the priority order.
    fn add_original(&mut self, mi: usize, t: &Texture, stats: TextureStats, (count, source, reason): Decision) {
        let schedule = &self.options.schedule;
        let mut latent_channels: Vec<u32> = self.priority[..count as usize].to_vec();
        latent_channels.sort_unstable();
        self.budgets.push(TextureBudget {
            texture: stats.name,
            channels: count,
            total_channels: self.total,
            source,
            reason,
            mean: stats.mean,
            std_dev: stats.std_dev,
        });
        let normal = t.info.kind == MapKind::Normal && t.info.channels >= 3;
        let channel_loss_factors = if normal {
            (0..t.info.channels).map(|c| if c == 2 { schedule.loss.normal_z_weight } else { 1.0 }).collect()
        } else {
            Vec::new()
        };
        self.textures[mi].push(TextureSlot {
            output_offset: self.output_offset,
            channels: t.info.channels as usize,
            latent_channels,
            loss_weight: stats.loss_weight,
            channel_loss_factors,
            unit_normal_targets: normal && schedule.loss.normal_targets == crate::options::NormalTargets::Unit,
            duplicate_of: None,
            color_transform: None,
        });
        self.output_offset += t.info.channels as usize;
    }
}
