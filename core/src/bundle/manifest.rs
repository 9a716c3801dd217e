//! The manifest: what a bundle holds (materials, maps, grids, layers), and its validation against
//! fixed limits before the reader allocates anything it sizes.

use crate::bundle::{Bundle, BundleError, limits};
use crate::model::params::Activation;
use crate::model::quant::WeightFormat;
use crate::set::MapInfo;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One map of a material, as recorded in the bundle: what the map is ([`MapInfo`], whose fields
/// the manifest's JSON holds inline, first), and where the bundle keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MapEntry {
    /// Kind, size, channels and how the values are stored (`channel_ranges`: value = low +
    /// (high − low) · t).
    #[serde(flatten)]
    pub info: MapInfo,
    /// First MLP output channel of this map.
    pub output_offset: u32,
    /// The map's channel budget: the latent channels it reads (indices over all grids, sorted).
    pub latent_channels: Vec<u32>,
    /// File name the source had (for decode naming and reports).
    pub source_file: String,
    /// An affine colour transform of the map whose outputs this map shares (format version 2):
    /// row `c` is `[m0, m1, m2, m3, offset]` and channel `c` decodes as
    /// `clamp(offset + Σ_k m_k · ref_k, 0, 1)` over the shared map's clamped channels `ref_k`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color_transform: Option<Vec<[f32; 5]>>,
}

impl MapEntry {
    /// Applies the map's colour transform (if any) to its shared outputs `t` (clamped, channels
    /// beyond the map's count 0), in place. Every decoder (CPU, WGSL) uses exactly this order.
    pub fn apply_color_transform(&self, t: &mut [f32]) {
        apply_color_rows(self.color_transform.as_deref(), t);
    }
}

#[cfg(test)]
impl MapEntry {
    /// A plain 8-bit map of `kind` for unit tests: `width`×`height`, the kind's colour space, the
    /// OpenGL convention, full channel ranges, no budget, no transform.
    pub(crate) fn for_test(kind: crate::set::MapKind, channels: u32, (width, height): (u32, u32)) -> Self {
        use crate::set::{NormalConvention, SampleFormat};
        Self {
            info: MapInfo {
                kind,
                width,
                height,
                channels,
                sample_format: SampleFormat::U8,
                color_space: kind.color_space(),
                normal_convention: NormalConvention::OpenGl,
                channel_ranges: vec![[0.0, 1.0]; channels as usize],
            },
            output_offset: 0,
            latent_channels: Vec::new(),
            source_file: String::new(),
            color_transform: None,
        }
    }
}

/// Applies colour transform rows (see [`MapEntry::color_transform`]) to `t` in place; `None`
/// leaves it unchanged.
pub fn apply_color_rows(rows: Option<&[[f32; 5]]>, t: &mut [f32]) {
    {
        let Some(rows) = rows else { return };
        let mut source = [0.0f32; 4];
        for (s, v) in source.iter_mut().zip(t.iter()) {
            *s = *v;
        }
        for (value, row) in t.iter_mut().zip(rows) {
            let mut z = row[4];
            for k in 0..4 {
                z += row[k] * source[k];
            }
            *value = z.clamp(0.0, 1.0);
        }
    }
}

/// One material of the library.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MaterialEntry {
    /// Material name.
    pub name: String,
    /// Its maps.
    pub maps: Vec<MapEntry>,
}

/// Shape and quantisation of one latent grid.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GridEntry {
    /// Cells across.
    pub width: u32,
    /// Cells down.
    pub height: u32,
    /// Channels.
    pub channels: u32,
    /// Bits per latent value (1–8).
    pub bits: u32,
    /// Value range `[low, high]` the levels span.
    pub range: [f32; 2],
    /// The MLP reads each channel's four weighted corners, four inputs (format version 7):
    /// [`crate::model::params::GridParams::corners`].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub corners: bool,
}

/// Shape of one MLP layer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayerEntry {
    /// Input width.
    pub inputs: u32,
    /// Output width.
    pub outputs: u32,
    /// Storage format.
    pub format: WeightFormat,
    /// Activation after the layer: "relu" or "hgelu" (format version 6) on every hidden layer,
    /// all the same, and "linear" on the last.
    pub activation: String,
}

/// Everything about a bundle except its bulk data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Materials in library order.
    pub materials: Vec<MaterialEntry>,
    /// Latent grids, finest first.
    pub grids: Vec<GridEntry>,
    /// Positional-encoding frequencies.
    pub pe_frequencies: u32,
    /// MLP layers.
    pub layers: Vec<LayerEntry>,
    /// Mip levels the latents encode: 1 (level 0 only), or the full chain of the largest map
    /// (format version 3).
    pub mip_levels: u32,
    /// With `mip_levels > 1`: the latent pyramid's levels 1 and up, level by level, each with
    /// every grid of `grids` in order: same channels, bits and range, 1 to level 0's cells a
    /// side. Their latents follow level 0's in the latent section.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mip_grids: Vec<GridEntry>,
    /// Consecutive mip levels each pyramid level serves (format version 5; absent: 1, one pyramid
    /// level per mip level): [`crate::model::params::lod_level`] and
    /// [`crate::model::params::pyramid_level`] map a mip level to its grids and LOD input.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub mip_group: u32,
    /// Free-form producer string (`texset 0.1.0`).
    pub producer: String,
}

fn one() -> u32 {
    1
}

#[expect(clippy::trivially_copy_pass_by_ref, reason = "serde's skip_serializing_if passes a reference")]
fn is_one(v: &u32) -> bool {
    *v == 1
}

impl Manifest {
    /// Mip levels each pyramid level serves (at least 1).
    #[must_use]
    pub fn mip_group(&self) -> u32 {
        self.mip_group.max(1)
    }

    /// Levels of the latent pyramid: `ceil(mip_levels / mip_group)` (1 without a mip chain).
    #[must_use]
    pub fn pyramid_levels(&self) -> u32 {
        self.mip_levels.max(1).div_ceil(self.mip_group())
    }

    /// The hidden layers' activation (`ReLU` for a bundle without hidden layers; a validated
    /// manifest names one of [`Activation`]'s).
    #[must_use]
    pub fn activation(&self) -> Activation {
        self.layers.first().filter(|_| self.layers.len() > 1).and_then(|l| Activation::from_name(&l.activation)).unwrap_or_default()
    }

    /// Total latent channels.
    #[must_use]
    pub fn latent_channels(&self) -> usize {
        self.grids.iter().map(|g| g.channels as usize).sum()
    }

    /// The MLP's input layout ([`crate::model::InputLayout`]).
    #[must_use]
    pub fn input_layout(&self) -> crate::model::InputLayout {
        crate::model::InputLayout::new(self.grids.iter().map(|g| (g.channels, g.corners)), self.pe_frequencies, self.mip_levels > 1)
    }

    /// MLP inputs the latents give ([`crate::model::InputLayout::latent_features`]).
    #[must_use]
    pub fn latent_features(&self) -> usize {
        self.input_layout().latent_features()
    }

    /// Width of the MLP input ([`crate::model::InputLayout::width`]).
    #[must_use]
    pub fn mlp_inputs(&self) -> usize {
        self.input_layout().width()
    }

    /// Every grid of every pyramid level, level 0 first (the latent section's order).
    pub fn all_grids(&self) -> impl Iterator<Item = &GridEntry> {
        self.grids.iter().chain(&self.mip_grids)
    }

    /// Mip levels `map` decodes at: its full chain when the bundle stores one, else 1.
    #[must_use]
    pub fn map_mip_levels(&self, map: &MapEntry) -> u32 {
        if self.mip_levels > 1 { crate::model::full_mip_count(map.info.width, map.info.height) } else { 1 }
    }

    /// Multiply-adds of the MLP per decoded texel: the sum over its layers of inputs × outputs.
    #[must_use]
    pub fn multiply_adds_per_texel(&self) -> u64 {
        self.layers.iter().map(|l| u64::from(l.inputs) * u64::from(l.outputs)).sum()
    }

    /// Total MLP output channels (a map sharing an earlier map's outputs adds none).
    #[must_use]
    pub fn output_channels(&self) -> usize {
        self.materials.iter().flat_map(|m| &m.maps).map(|m| (m.output_offset + m.info.channels) as usize).max().unwrap_or(0)
    }
}

/// A [`BundleError::Invalid`] with `message`.
fn invalid<T>(message: String) -> Result<T, BundleError> {
    Err(BundleError::Invalid(message))
}

impl Bundle {
    /// Validates the manifest's internal consistency and limits (the reader calls this before
    /// allocating anything sized by the manifest).
    pub fn validate_manifest(m: &Manifest) -> Result<(), BundleError> {
        if m.grids.is_empty() || m.grids.len() > limits::MAX_GRIDS {
            return invalid(format!("{} latent grids (1..={} allowed)", m.grids.len(), limits::MAX_GRIDS));
        }
        validate_pyramid(m)?;
        validate_grids(m)?;
        let width = validate_layers(m)?;
        let outputs = validate_materials(m)?;
        if outputs != width {
            return invalid(format!("maps have {outputs} channels but the MLP outputs {width}"));
        }
        Ok(())
    }
}

/// The mip chain: its level count, the mip group, and the pyramid grids' count and shapes (each
/// with its level-0 grid's channels, bits and range, and no more cells).
fn validate_pyramid(m: &Manifest) -> Result<(), BundleError> {
    if m.mip_levels == 0 || m.mip_levels > limits::MAX_MIP_LEVELS {
        return invalid(format!("{} mip levels (1..={})", m.mip_levels, limits::MAX_MIP_LEVELS));
    }
    if m.mip_group == 0 || m.mip_group > limits::MAX_MIP_LEVELS || (m.mip_group > 1 && m.mip_levels <= m.mip_group) {
        return invalid(format!(
            "mip group of {} for {} mip levels (1, or 2..={} and fewer than the mip levels)",
            m.mip_group,
            m.mip_levels,
            limits::MAX_MIP_LEVELS
        ));
    }
    let pyramid_levels = m.pyramid_levels() as usize;
    if m.mip_grids.len() != (pyramid_levels - 1) * m.grids.len() {
        return invalid(format!(
            "{} pyramid grids for {} mip levels in groups of {} of {} grids (expected {})",
            m.mip_grids.len(),
            m.mip_levels,
            m.mip_group,
            m.grids.len(),
            (pyramid_levels - 1) * m.grids.len()
        ));
    }
    for (i, p) in m.mip_grids.iter().enumerate() {
        let level = i / m.grids.len() + 1;
        let g = &m.grids[i % m.grids.len()];
        // The range must be level 0's exactly (bit for bit: one dequantisation per grid).
        let same_range = p.range.map(f32::to_bits) == g.range.map(f32::to_bits);
        if p.width == 0
            || p.height == 0
            || p.width > g.width
            || p.height > g.height
            || p.channels != g.channels
            || p.bits != g.bits
            || p.corners != g.corners
            || !same_range
        {
            return invalid(format!(
                "pyramid level {level} grid {} is {}x{}x{}@{} bits; it must have level 0's {} channels at {} bits and range, and 1 to {}x{} cells",
                i % m.grids.len(),
                p.width,
                p.height,
                p.channels,
                p.bits,
                g.channels,
                g.bits,
                g.width,
                g.height
            ));
        }
    }
    Ok(())
}

/// Every grid of every pyramid level within the limits, and the latent values of all of them.
fn validate_grids(m: &Manifest) -> Result<(), BundleError> {
    use limits::{MAX_GRID_CHANNELS, MAX_GRID_SIDE, MAX_LATENT_VALUES};
    let mut latent_values: u64 = 0;
    for (i, g) in m.all_grids().enumerate() {
        if g.width == 0 || g.height == 0 || g.width > MAX_GRID_SIDE || g.height > MAX_GRID_SIDE {
            return invalid(format!("grid {i} is {}x{} cells (1..={MAX_GRID_SIDE} per side)", g.width, g.height));
        }
        if g.channels == 0 || g.channels > MAX_GRID_CHANNELS {
            return invalid(format!("grid {i} has {} channels (1..={MAX_GRID_CHANNELS})", g.channels));
        }
        if !(1..=8).contains(&g.bits) {
            return invalid(format!("grid {i} has {} bits per latent (1..=8)", g.bits));
        }
        if !(g.range[0].is_finite() && g.range[1].is_finite() && g.range[0] < g.range[1]) {
            return invalid(format!("grid {i} has an invalid range {:?}", g.range));
        }
        latent_values += u64::from(g.width) * u64::from(g.height) * u64::from(g.channels);
    }
    if latent_values > MAX_LATENT_VALUES {
        return invalid(format!("{latent_values} latent values (limit {MAX_LATENT_VALUES})"));
    }
    Ok(())
}

/// The positional encoding and the MLP: each layer taking the previous one's outputs (the first
/// the MLP inputs), within the width limit, `relu` but the last (`linear`). Returns the MLP's
/// output width.
fn validate_layers(m: &Manifest) -> Result<usize, BundleError> {
    use limits::{MAX_LAYER_WIDTH, MAX_LAYERS, MAX_PE_FREQUENCIES};
    if m.pe_frequencies > MAX_PE_FREQUENCIES {
        return invalid(format!("{} positional-encoding frequencies (limit {MAX_PE_FREQUENCIES})", m.pe_frequencies));
    }
    if m.layers.is_empty() || m.layers.len() > MAX_LAYERS {
        return invalid(format!("{} MLP layers (1..={MAX_LAYERS})", m.layers.len()));
    }
    let mut width = m.mlp_inputs();
    for (i, l) in m.layers.iter().enumerate() {
        if l.inputs as usize != width {
            return invalid(format!("MLP layer {i} takes {} inputs, the previous gives {width}", l.inputs));
        }
        if l.outputs == 0 || l.outputs as usize > MAX_LAYER_WIDTH {
            return invalid(format!("MLP layer {i} has {} outputs (1..={MAX_LAYER_WIDTH})", l.outputs));
        }
        let last = i + 1 == m.layers.len();
        let hidden = Activation::from_name(&m.layers[0].activation).filter(|_| m.layers.len() > 1);
        let ok = if last { l.activation == "linear" } else { hidden.is_some_and(|a| a.name() == l.activation) };
        if !ok {
            let expected = match hidden {
                _ if last => "\"linear\"".to_owned(),
                Some(a) if i > 0 => format!("{:?} (layer 0's)", a.name()),
                _ => "\"relu\" or \"hgelu\"".to_owned(),
            };
            return invalid(format!("MLP layer {i} activation is {:?}, expected {expected}", l.activation));
        }
        width = l.outputs as usize;
    }
    let macs = m.multiply_adds_per_texel();
    if macs > limits::MAX_MLP_MACS_PER_TEXEL {
        return invalid(format!("an MLP of {macs} multiply-adds per texel (limit {})", limits::MAX_MLP_MACS_PER_TEXEL));
    }
    Ok(width)
}

/// The MLP outputs the maps claim, in order: each map takes the next ones, or shares an earlier
/// map's with the same channel count and budget.
#[derive(Default)]
struct OutputClaims<'a> {
    /// The next unclaimed output.
    next: usize,
    /// Channels and budget of the map that claimed each first output.
    claimed: BTreeMap<u32, (u32, &'a Vec<u32>)>,
}

impl<'a> OutputClaims<'a> {
    /// Claims `map`'s outputs (`name` is `material/kind`); a colour transform needs an earlier
    /// map's outputs to transform.
    fn claim(&mut self, name: &str, map: &'a MapEntry) -> Result<(), BundleError> {
        let next_output = self.next;
        if map.color_transform.is_some() && map.output_offset as usize == next_output {
            return invalid(format!("map {name} has a colour transform but no map to transform (it must share an earlier map's outputs)"));
        }
        if map.output_offset as usize == next_output {
            self.next += map.info.channels as usize;
            self.claimed.insert(map.output_offset, (map.info.channels, &map.latent_channels));
        } else if self.claimed.get(&map.output_offset) != Some(&(map.info.channels, &map.latent_channels)) {
            // A map may share an earlier map's outputs (a duplicate stored once) only with the
            // same channel count and budget.
            return invalid(format!(
                "map {name} output offset {} is neither the next ({next_output}) nor an earlier map's with the same channels and budget",
                map.output_offset
            ));
        }
        Ok(())
    }
}

/// The materials: their count, names, maps and outputs. Returns the outputs the maps claim.
fn validate_materials(m: &Manifest) -> Result<usize, BundleError> {
    use limits::{MAX_LIBRARY_VALUES, MAX_MAP_VALUES, MAX_MATERIAL_VALUES, MAX_MATERIALS};
    if m.materials.is_empty() || m.materials.len() > MAX_MATERIALS {
        return invalid(format!("{} materials (1..={MAX_MATERIALS})", m.materials.len()));
    }
    let latent_channels = m.latent_channels();
    let mut outputs = OutputClaims::default();
    let mut names = BTreeSet::new();
    let mut library_values = 0u64;
    for mat in &m.materials {
        if let Err(why) = crate::set::check_name(&mat.name) {
            return invalid(format!("material name {:?}: {why}", mat.name));
        }
        if !names.insert(mat.name.as_str()) {
            return invalid(format!("two materials named '{}'", mat.name));
        }
        if mat.maps.is_empty() {
            return invalid(format!("material '{}' has no maps", mat.name));
        }
        let mut kinds = BTreeSet::new();
        let mut material_values = 0u64;
        for map in &mat.maps {
            if !kinds.insert(map.info.kind) {
                return invalid(format!("material '{}' has two {} maps", mat.name, map.info.kind));
            }
            let values = u64::from(map.info.width) * u64::from(map.info.height) * u64::from(map.info.channels);
            material_values += values;
            library_values += values;
            if library_values > MAX_LIBRARY_VALUES {
                return invalid(format!(
                    "the library decodes to more than the limit of {MAX_LIBRARY_VALUES} values (reached at material '{}')",
                    mat.name
                ));
            }
            if values > MAX_MAP_VALUES || material_values > MAX_MATERIAL_VALUES {
                return invalid(format!(
                    "material '{}' decodes to more than the limit of {MAX_MAP_VALUES} values per map / {MAX_MATERIAL_VALUES} per material",
                    mat.name
                ));
            }
            let name = format!("{}/{}", mat.name, map.info.kind);
            validate_map(&name, map, latent_channels)?;
            outputs.claim(&name, map)?;
        }
    }
    Ok(outputs.next)
}

/// One map (`name` is `material/kind`) on its own: its size, channels and their ranges, its budget
/// over `latent_channels` and its colour transform's rows.
fn validate_map(name: &str, map: &MapEntry, latent_channels: usize) -> Result<(), BundleError> {
    use limits::MAX_MAP_SIDE;
    if map.info.width == 0 || map.info.height == 0 || map.info.width > MAX_MAP_SIDE || map.info.height > MAX_MAP_SIDE {
        return invalid(format!("map {name} is {}x{} (1..={MAX_MAP_SIDE} per side)", map.info.width, map.info.height));
    }
    if !(1..=4).contains(&map.info.channels) || map.info.channel_ranges.len() != map.info.channels as usize {
        return invalid(format!("map {name} has {} channels and {} ranges", map.info.channels, map.info.channel_ranges.len()));
    }
    if map.info.channel_ranges.iter().any(|r| !(r[0].is_finite() && r[1].is_finite() && r[0] < r[1])) {
        return invalid(format!("map {name} has an invalid channel range"));
    }
    if map.latent_channels.windows(2).any(|w| w[0] >= w[1]) || map.latent_channels.iter().any(|&c| c as usize >= latent_channels) {
        return invalid(format!("map {name} has an invalid channel budget"));
    }
    if let Some(rows) = &map.color_transform
        && (rows.len() != map.info.channels as usize || rows.iter().flatten().any(|v| !v.is_finite() || v.abs() > 1e4))
    {
        return invalid(format!("map {name} has an invalid colour transform (one row of 5 finite values per channel)"));
    }
    Ok(())
}
