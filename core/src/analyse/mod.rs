//! The analyse/budget pass: grid shapes from the largest map, the channel layout, and each
//! texture's budget with its reason. It finds duplicates and colour variants ([`variants`]),
//! estimates content ([`content`]) and splits channels between related materials ([`groups`]).

pub mod content;
pub mod groups;
pub mod variants;

use crate::analyse::content::{
    CONTENT_TARGET_PSNR_DB, FLAT_PSNR_DB, HALF_BUDGET_SHARE, QUARTER_BUDGET_SHARE, channel_std_devs, content_bits,
};
use crate::analyse::groups::split_channels_by_material_group;
use crate::analyse::variants::{AFFINE_PSNR_DB, fit_color_transform, same_data, texel_hash};
use crate::model::layout::{GridShape, ModelLayout, TextureSlot};
use crate::options::CompressOptions;
use crate::pipeline::CompressError;
use crate::set::{MapKind, TextureSet};
use serde::Serialize;

/// Where a texture's budget came from: what later passes decide on (the words are in
/// [`TextureBudget::reason`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetSource {
    /// The same map as another: stored once.
    Duplicate,
    /// An affine colour transform of another map.
    ColourVariant,
    /// Named in the options' budget overrides.
    Manual,
    /// Near-constant: the MLP bias carries it, no channels.
    Flat,
    /// The content estimate (applied or only proposed).
    Content,
}

/// The budget of one texture, with the reason.
#[derive(Clone, Debug, Serialize)]
pub struct TextureBudget {
    /// `material/kind`.
    pub texture: String,
    /// Latent channels it reads.
    pub channels: u32,
    /// Of how many.
    pub total_channels: u32,
    /// Where the budget came from.
    pub source: BudgetSource,
    /// Why, in words.
    pub reason: String,
    /// Mean of its values (all channels).
    pub mean: f32,
    /// Largest per-channel standard deviation of its values (a first measure of content).
    pub std_dev: f32,
}

/// What the analyse pass decided.
#[derive(Clone, Debug, Serialize)]
pub struct AnalyseReport {
    /// Grid shapes.
    pub grids: Vec<GridShape>,
    /// MLP widths, input to output.
    pub mlp_widths: Vec<usize>,
    /// Budgets per texture.
    pub budgets: Vec<TextureBudget>,
    /// Textures identical to an earlier one (stored once).
    pub duplicates: Vec<DuplicateFinding>,
}

/// A texture found identical to an earlier one at ingest: same size, channels, value ranges and
/// every decoded value. It shares the earlier texture's MLP outputs (stored once).
#[derive(Clone, Debug, Serialize)]
pub struct DuplicateFinding {
    /// `material/kind` of the duplicate.
    pub texture: String,
    /// `material/kind` of the texture it repeats.
    pub same_as: String,
    /// Output channels saved.
    pub channels: u32,
    /// For a colour variant: PSNR of the affine colour transform that reproduces it from the
    /// texture it repeats (`None`: identical).
    pub transform_fit_psnr_db: Option<f32>,
}

/// Channel priority order: grids interleaved in proportion to their channel counts, so a budget
/// of `k` channels takes the same share of every grid and smaller budgets are prefixes of larger
/// ones (the shared channels are the common prefix).
#[must_use]
pub fn channel_priority(grids: &[GridShape]) -> Vec<u32> {
    let mut order = Vec::new();
    let mut taken = vec![0u32; grids.len()];
    let total: u32 = grids.iter().map(|g| g.channels).sum();
    while (order.len() as u32) < total {
        // Next: the grid furthest behind its proportional share.
        let (g, _) = grids
            .iter()
            .enumerate()
            .filter(|(i, grid)| taken[*i] < grid.channels)
            .map(|(i, grid)| (i, f64::from(taken[i]) / f64::from(grid.channels)))
            .fold((usize::MAX, f64::INFINITY), |best, (i, share)| if share < best.1 { (i, share) } else { best });
        let Some(grid) = grids.get(g) else { break };
        let offset: u32 = grids[..g].iter().map(|x| x.channels).sum();
        order.push(offset + taken[g]);
        taken[g] += 1;
        debug_assert!(taken[g] <= grid.channels);
    }
    order
}

/// Analyse/budget pass: grid shapes from the largest map, budgets from the options.
pub fn analyse(set: &TextureSet, options: &CompressOptions) -> Result<(ModelLayout, AnalyseReport), CompressError> {
    options.validate()?;
    if set.textures().next().is_none() {
        return Err(CompressError::EmptySet);
    }
    let extent = set.max_extent();
    let grids: Vec<GridShape> = options
        .model
        .grids
        .iter()
        .map(|g| {
            let (width, height) = g.cells(extent);
            GridShape { width, height, channels: g.channels, bits: g.bits }
        })
        .collect();
    let total: u32 = grids.iter().map(|g| g.channels).sum();
    let priority = channel_priority(&grids);
    for key in options.budgets.overrides.keys() {
        let matches = set.textures().any(|(m, _, t)| *key == t.kind.token() || *key == format!("{}/{}", set.materials[m].name, t.kind));
        if !matches {
            return Err(CompressError::UnknownBudget(key.clone()));
        }
    }
    let mut textures: Vec<Vec<TextureSlot>> = Vec::new();
    let mut budgets = Vec::new();
    let mut duplicates = Vec::new();
    let mut seen: std::collections::HashMap<u32, Vec<(usize, usize)>> = std::collections::HashMap::new();
    let mut output_offset = 0;
    let mut originals: Vec<(usize, usize)> = Vec::new();
    // Content of every texture; the busiest sets the scale of the graded budgets.
    let block = options.model.grids.iter().map(|g| g.texels_per_cell).min().unwrap_or(1);
    let extent = set.max_extent();
    let contents: Vec<Vec<(f32, f32)>> = set
        .materials
        .iter()
        .map(|m| {
            m.textures
                .iter()
                .map(|t| {
                    // The grid cell as this map sees it (a smaller map has fewer texels per cell).
                    let scaled = (block as usize * t.width as usize).div_ceil(extent.0.max(1) as usize).max(1) as u32;
                    content_bits(t, scaled)
                })
                .collect()
        })
        .collect();
    let busiest = contents.iter().flatten().map(|c| c.0).fold(0.0f32, f32::max).max(1e-6);
    for (mi, material) in set.materials.iter().enumerate() {
        let mut slots: Vec<TextureSlot> = Vec::new();
        for (ti, t) in material.textures.iter().enumerate() {
            let name = format!("{}/{}", material.name, t.kind);
            let std_devs = channel_std_devs(t);
            let std_dev = std_devs.iter().copied().fold(0.0f32, f32::max);
            let n = t.texels.len().max(1) as f64;
            let mean = (t.texels.iter().map(|&v| f64::from(v)).sum::<f64>() / n) as f32;
            let loss_weight = options.schedule.loss_weights.get(t.kind.token()).copied().unwrap_or(1.0);

            // Exact duplicate of an earlier texture: share its outputs and budget.
            let hash = texel_hash(t);
            let original = seen
                .get(&hash)
                .and_then(|candidates| candidates.iter().copied().find(|&(m, k)| same_data(&set.materials[m].textures[k], t)));
            if let Some((m, k)) = original {
                // The original is trained once for every copy: its loss counts each of them, as
                // an evaluation of the whole set does.
                let source = if m == mi { &mut slots[k] } else { &mut textures[m][k] };
                source.loss_weight += loss_weight;
                let slot = TextureSlot { duplicate_of: Some((m, k)), loss_weight, ..source.clone() };
                let same_as = format!("{}/{}", set.materials[m].name, set.materials[m].textures[k].kind);
                budgets.push(TextureBudget {
                    texture: name.clone(),
                    channels: slot.latent_channels.len() as u32,
                    total_channels: total,
                    source: BudgetSource::Duplicate,
                    reason: format!("identical to {same_as}: stored once, shares its outputs"),
                    mean,
                    std_dev,
                });
                duplicates.push(DuplicateFinding { texture: name, same_as, channels: t.channels, transform_fit_psnr_db: None });
                slots.push(slot);
                continue;
            }
            // A colour variant of an earlier texture: its outputs plus an affine transform.
            let variant = originals
                .iter()
                .copied()
                .filter(|&(m, k)| {
                    let o = &set.materials[m].textures[k];
                    o.kind == t.kind && o.color_space == t.color_space && o.channel_ranges == t.channel_ranges
                })
                .filter_map(|(m, k)| fit_color_transform(&set.materials[m].textures[k], t).map(|(rows, db)| ((m, k), rows, db)))
                .filter(|(_, _, db)| *db >= AFFINE_PSNR_DB)
                .max_by(|a, b| a.2.total_cmp(&b.2));
            if let Some(((m, k), rows, fit_db)) = variant {
                let source = if m == mi { &mut slots[k] } else { &mut textures[m][k] };
                source.loss_weight += loss_weight;
                let slot = TextureSlot { duplicate_of: Some((m, k)), color_transform: Some(rows), loss_weight, ..source.clone() };
                let same_as = format!("{}/{}", set.materials[m].name, set.materials[m].textures[k].kind);
                budgets.push(TextureBudget {
                    texture: name.clone(),
                    channels: slot.latent_channels.len() as u32,
                    total_channels: total,
                    source: BudgetSource::ColourVariant,
                    reason: format!(
                        "colour variant of {same_as}: an affine transform reproduces it at {fit_db:.1} dB (>= {AFFINE_PSNR_DB} dB), stored as its outputs plus a {}x5 matrix",
                        t.channels
                    ),
                    mean,
                    std_dev,
                });
                duplicates.push(DuplicateFinding { texture: name, same_as, channels: t.channels, transform_fit_psnr_db: Some(fit_db) });
                slots.push(slot);
                continue;
            }
            seen.entry(hash).or_default().push((mi, ti));
            originals.push((mi, ti));

            let (count, source, reason) = match options
                .budgets
                .overrides
                .get(&name)
                .or_else(|| options.budgets.overrides.get(t.kind.token()))
            {
                Some(&k) => (k.min(total), BudgetSource::Manual, format!("manual override ({k} requested)")),
                // PSNR of its mean as a constant: -10 log10(variance).
                None if std_dev <= 10f32.powf(-FLAT_PSNR_DB / 20.0) => (
                    0,
                    BudgetSource::Flat,
                    format!(
                        "flat: its mean reproduces it at {:.1} dB (>= {FLAT_PSNR_DB} dB), so the MLP bias carries it",
                        -20.0 * std_dev.max(1e-12).log10()
                    ),
                ),
                None => {
                    let (bits, detail) = contents[mi][ti];
                    let share = bits / busiest;
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
                    if options.budgets.auto {
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
            };
            let mut latent_channels: Vec<u32> = priority[..count as usize].to_vec();
            latent_channels.sort_unstable();
            budgets.push(TextureBudget { texture: name, channels: count, total_channels: total, source, reason, mean, std_dev });
            let normal = t.kind == MapKind::Normal && t.channels >= 3;
            let channel_loss_factors = if normal {
                (0..t.channels).map(|c| if c == 2 { options.schedule.normal_z_weight } else { 1.0 }).collect()
            } else {
                Vec::new()
            };
            slots.push(TextureSlot {
                output_offset,
                channels: t.channels as usize,
                latent_channels,
                loss_weight,
                channel_loss_factors,
                unit_normal_targets: normal && options.schedule.normal_targets == crate::options::NormalTargets::Unit,
                duplicate_of: None,
                color_transform: None,
            });
            output_offset += t.channels as usize;
        }
        textures.push(slots);
    }
    if options.budgets.sharing == crate::options::LibrarySharing::Related && set.materials.len() > 1 {
        split_channels_by_material_group(set, &grids, &contents, &mut textures, &mut budgets);
    }
    let layout = ModelLayout {
        grids: grids.clone(),
        pe_frequencies: options.model.pe_frequencies,
        hidden_widths: options.model.hidden_widths.clone(),
        textures,
        mip_levels: 1,
        mip_group: 1,
        mip_grids: Vec::new(),
        weight_format: options.model.weight_format,
    };
    let layout = if options.model.mips { with_pyramid(layout, set.max_extent(), &options.model) } else { layout };
    let mut mlp_widths = vec![layout.latent_channels() + 4 * options.model.pe_frequencies as usize + usize::from(layout.mip_levels > 1)];
    mlp_widths.extend(&options.model.hidden_widths);
    mlp_widths.push(layout.output_channels());
    Ok((layout, AnalyseReport { grids, mlp_widths, budgets, duplicates }))
}

/// `layout` with a latent pyramid for the full mip chain of maps up to `extent` (width, height):
/// pyramid levels of `model.mip_group` mip levels ([`crate::options::ModelConfig::effective_mip_group`]),
/// level `k`'s grids sized by [`crate::model::params::pyramid_grid_cells`] with
/// `model.mip_cell_growth`.
#[must_use]
pub fn with_pyramid(mut layout: ModelLayout, extent: (u32, u32), model: &crate::options::ModelConfig) -> ModelLayout {
    layout.mip_levels = crate::model::params::full_mip_count(extent.0, extent.1);
    let group = model.effective_mip_group(layout.mip_levels);
    layout.mip_group = group;
    layout.mip_grids = (1..layout.mip_levels.div_ceil(group))
        .flat_map(|k| {
            layout.grids.iter().map(move |g| {
                let (width, height) =
                    crate::model::params::pyramid_grid_cells((g.width, g.height), k, group, model.mip_cell_growth, extent);
                GridShape { width, height, ..g.clone() }
            })
        })
        .collect();
    layout
}
