//! The analyse/budget pass: grid shapes from the largest map, the channel layout, and each
//! texture's budget with its reason. It finds duplicates and colour variants ([`variants`]),
//! estimates content ([`content`]) and splits channels between related materials ([`groups`]).

mod budget;
pub(crate) mod content;
pub(crate) mod groups;
pub(crate) mod variants;

use crate::analyse::budget::Budgeter;
use crate::analyse::content::content_bits;
use crate::analyse::groups::split_channels_by_material_group;
use crate::model::layout::{GridShape, ModelLayout};
use crate::options::CompressOptions;
use crate::set::TextureSet;
use serde::Serialize;

/// Why the analyse pass refused a set and its options.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnalyseError {
    /// The set is empty.
    #[error("the texture set has no maps")]
    EmptySet,
    /// An option is out of range.
    #[error("invalid options: {0}")]
    Options(#[from] crate::options::OptionsError),
    /// A budget names a texture that is not in the set.
    #[error("budget '{0}' names no texture of the set (use a map kind like 'roughness' or 'material/roughness')")]
    UnknownBudget(String),
}

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
    /// What the target rate chose for the grids, and why (none: no rate was fitted).
    pub shape: Option<crate::options::ShapeChoice>,
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
pub(crate) fn channel_priority(grids: &[GridShape]) -> Vec<u32> {
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
pub fn analyse(set: &TextureSet, options: &CompressOptions) -> Result<(ModelLayout, AnalyseReport), AnalyseError> {
    options.validate()?;
    if set.textures().next().is_none() {
        return Err(AnalyseError::EmptySet);
    }
    let mut grids = grid_shapes(set, options);
    if let Some(first) = grids.first_mut() {
        first.corners = options.model.corner_reads;
    }
    check_budget_overrides(set, options)?;
    let contents = content_estimates(set, options);
    let mut budgeter = Budgeter::new(set, options, &grids, &contents);
    for mi in 0..set.materials.len() {
        budgeter.add_material(mi);
    }
    let Budgeter { mut textures, mut budgets, duplicates, .. } = budgeter;
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
        activation: options.model.activation,
    };
    let layout = if options.model.mips { with_pyramid(layout, set.max_extent(), &options.model) } else { layout };
    let mut mlp_widths = vec![layout.mlp_inputs()];
    mlp_widths.extend(&options.model.hidden_widths);
    mlp_widths.push(layout.output_channels());
    let shape = options.model.shape_choice.clone();
    Ok((layout, AnalyseReport { grids, mlp_widths, budgets, duplicates, shape }))
}

/// The latent grids' shapes: each grid of the options sized to the set's largest map.
fn grid_shapes(set: &TextureSet, options: &CompressOptions) -> Vec<GridShape> {
    let extent = set.max_extent();
    options
        .model
        .grids
        .iter()
        .map(|g| {
            let (width, height) = g.cells(extent);
            GridShape { width, height, channels: g.channels, bits: g.bits, corners: false }
        })
        .collect()
}

/// Refuses a budget override that names no texture of the set (by kind, or `material/kind`).
fn check_budget_overrides(set: &TextureSet, options: &CompressOptions) -> Result<(), AnalyseError> {
    for key in options.budgets.overrides.keys() {
        let matches =
            set.textures().any(|(m, _, t)| *key == t.info.kind.token() || *key == format!("{}/{}", set.materials[m].name, t.info.kind));
        if !matches {
            return Err(AnalyseError::UnknownBudget(key.clone()));
        }
    }
    Ok(())
}

/// The content estimate `(bits, detail)` of every texture, per material, at the finest grid's
/// cell as each map sees it; the busiest sets the scale of the graded budgets.
fn content_estimates(set: &TextureSet, options: &CompressOptions) -> Vec<Vec<(f32, f32)>> {
    let block = options.model.grids.iter().map(|g| g.texels_per_cell).min().unwrap_or(1);
    let extent = set.max_extent();
    set.materials
        .iter()
        .map(|m| {
            m.textures
                .iter()
                .map(|t| {
                    // The grid cell as this map sees it (a smaller map has fewer texels per cell).
                    let scaled = (block as usize * t.info.width as usize).div_ceil(extent.0.max(1) as usize).max(1) as u32;
                    content_bits(t, scaled)
                })
                .collect()
        })
        .collect()
}

/// `layout` with a latent pyramid for the full mip chain of maps up to `extent` (width, height):
/// pyramid levels of `model.mip_group` mip levels ([`crate::options::ModelConfig::effective_mip_group`]),
/// level `k`'s grids sized by [`crate::model::params::pyramid_grid_cells`] with
/// `model.mip_cell_growth`.
#[must_use]
pub(crate) fn with_pyramid(mut layout: ModelLayout, extent: (u32, u32), model: &crate::options::ModelConfig) -> ModelLayout {
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
