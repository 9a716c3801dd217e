//! The `.texset` bundle: a versioned, checksummed binary container of a compressed library.
//! The byte layout is specified in `docs/bundle-format.md`; this module is its only writer and
//! reader. The reader validates every size against the manifest and fixed limits before it
//! allocates, so hostile bytes give an error, never a panic or an unbounded allocation.

use crate::model::params::{GridParams, ModelParams};
use crate::model::quant::{QuantizedLayer, level_value};
use crate::set::{ColorSpace, MapKind, NormalConvention, SampleFormat};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// First eight bytes of every bundle.
pub const MAGIC: [u8; 8] = *b"TEXSET\0\x1a";
/// The newest format version this build writes and reads. Version 2 adds per-map colour
/// transforms, version 3 the mip chain (latent pyramid and LOD input), version 4 decoder weights
/// in fp16, E4M3 or MXINT8 (not int8); a bundle is written with
/// the oldest version that holds what it uses, so older readers read it when they can.
pub const FORMAT_VERSION: u32 = 4;
/// The oldest format version this build reads.
pub const OLDEST_FORMAT_VERSION: u32 = 1;
/// Section tags, in file order.
pub const SECTION_MANIFEST: [u8; 4] = *b"MANI";
/// Bit-packed latent levels.
pub const SECTION_LATENTS: [u8; 4] = *b"LATN";
/// Quantised MLP weights.
pub const SECTION_WEIGHTS: [u8; 4] = *b"MLPW";

/// Limits the reader enforces (documented in `docs/bundle-format.md`).
pub mod limits {
    /// Largest manifest, in bytes.
    pub const MAX_MANIFEST_BYTES: u64 = 16 << 20;
    /// Most sections in a file.
    pub const MAX_SECTIONS: u32 = 16;
    /// Most latent grids (of level 0).
    pub const MAX_GRIDS: usize = 8;
    /// Most mip levels (a 16384² map has 15).
    pub const MAX_MIP_LEVELS: u32 = 15;
    /// Largest grid side, in cells.
    pub const MAX_GRID_SIDE: u32 = 16_384;
    /// Most channels in one grid.
    pub const MAX_GRID_CHANNELS: u32 = 256;
    /// Most latent values over all grids (2^26: 256 MiB once dequantised to f32).
    pub const MAX_LATENT_VALUES: u64 = 1 << 26;
    /// Most decoded values (width × height × channels) of one map (2^28: 1 GiB of f32).
    pub const MAX_MAP_VALUES: u64 = 1 << 28;
    /// Most decoded values of one material's maps together (decoded at once).
    pub const MAX_MATERIAL_VALUES: u64 = 1 << 29;
    /// Longest material name, in bytes.
    pub const MAX_NAME_BYTES: usize = 255;
    /// Most MLP layers.
    pub const MAX_LAYERS: usize = 16;
    /// Widest MLP layer.
    pub const MAX_LAYER_WIDTH: usize = 4096;
    /// Most materials in a library.
    pub const MAX_MATERIALS: usize = 65_536;
    /// Most positional-encoding frequencies.
    pub const MAX_PE_FREQUENCIES: u32 = 16;
    /// Largest map side, in texels.
    pub const MAX_MAP_SIDE: u32 = 16_384;
}

/// A bundle that cannot be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BundleError {
    /// The file could not be read or written.
    #[error("cannot access bundle {path:?}: {source}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The bytes are not a bundle.
    #[error("not a texset bundle (bad magic)")]
    BadMagic,
    /// A version this build does not read.
    #[error("bundle format version {found} is not supported (this build reads versions 1 to {supported})")]
    UnsupportedVersion {
        /// Version in the file.
        found: u32,
        /// Version this build reads.
        supported: u32,
    },
    /// The file ends early.
    #[error("bundle is truncated: {what} needs bytes {start}..{end} but the file has {len}")]
    Truncated {
        /// What was being read.
        what: String,
        /// Start offset.
        start: u64,
        /// End offset.
        end: u64,
        /// File length.
        len: u64,
    },
    /// A checksum does not match.
    #[error("checksum mismatch in {section} (stored {stored:#010x}, computed {computed:#010x}): the bundle is corrupt")]
    Checksum {
        /// The section.
        section: String,
        /// Stored CRC32.
        stored: u32,
        /// Computed CRC32.
        computed: u32,
    },
    /// A section is missing or unknown.
    #[error("bundle section {0} is missing")]
    MissingSection(String),
    /// The manifest is not valid JSON of the expected shape.
    #[error("bundle manifest is malformed: {0}")]
    Manifest(String),
    /// The manifest is well-formed but inconsistent or beyond a limit.
    #[error("bundle is invalid: {0}")]
    Invalid(String),
}

/// One map of a material, as recorded in the bundle.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MapEntry {
    /// Map kind.
    pub kind: MapKind,
    /// Width in texels at mip 0.
    pub width: u32,
    /// Height in texels at mip 0.
    pub height: u32,
    /// Channels (1–4).
    pub channels: u32,
    /// Sample format of the source (decode writes the same).
    pub sample_format: SampleFormat,
    /// Colour space of the stored values.
    pub color_space: ColorSpace,
    /// Normal convention (normal maps).
    pub normal_convention: NormalConvention,
    /// Per channel `[low, high]` of the stored values: value = low + (high − low) · t.
    pub channel_ranges: Vec<[f32; 2]>,
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
}

/// Weight storage format of an MLP layer (format version 4 adds every format but int8).
pub use crate::model::quant::WeightFormat;

/// Shape of one MLP layer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayerEntry {
    /// Input width.
    pub inputs: u32,
    /// Output width.
    pub outputs: u32,
    /// Storage format.
    pub format: WeightFormat,
    /// Activation after the layer: "relu" or "linear" (the last).
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
    /// Free-form producer string (`texset 0.1.0`).
    pub producer: String,
}

impl Manifest {
    /// Total latent channels.
    #[must_use]
    pub fn latent_channels(&self) -> usize {
        self.grids.iter().map(|g| g.channels as usize).sum()
    }

    /// Width of the MLP input: latent channels, positional encoding and (with a mip chain) the
    /// LOD input.
    #[must_use]
    pub fn mlp_inputs(&self) -> usize {
        self.latent_channels() + 4 * self.pe_frequencies as usize + usize::from(self.mip_levels > 1)
    }

    /// Every grid of every pyramid level, level 0 first (the latent section's order).
    pub fn all_grids(&self) -> impl Iterator<Item = &GridEntry> {
        self.grids.iter().chain(&self.mip_grids)
    }

    /// Total MLP output channels (a map sharing an earlier map's outputs adds none).
    #[must_use]
    pub fn output_channels(&self) -> usize {
        self.materials.iter().flat_map(|m| &m.maps).map(|m| (m.output_offset + m.channels) as usize).max().unwrap_or(0)
    }
}

/// A compressed library: manifest, latent levels and quantised weights.
#[derive(Clone, Debug, PartialEq)]
pub struct Bundle {
    /// The manifest.
    pub manifest: Manifest,
    /// Per grid, its levels `[y][x][c]`.
    pub latent_levels: Vec<Vec<u8>>,
    /// The MLP layers.
    pub layers: Vec<QuantizedLayer>,
}

/// Bytes per section of a written bundle.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SectionSizes {
    /// Header and section table.
    pub header_bytes: u64,
    /// Manifest JSON.
    pub manifest_bytes: u64,
    /// Latents.
    pub latent_bytes: u64,
    /// MLP weights.
    pub weight_bytes: u64,
}

const SECTION_ENTRY_BYTES: usize = 24;

/// Checks that a material name is safe as a single path component (decode writes
/// `<dir>/<name>/<name>_<map>.png`): non-empty, at most 255 bytes, no separators, NUL or control
/// characters, not `.` or `..`.
pub fn check_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() || name.len() > limits::MAX_NAME_BYTES {
        return Err("must be 1 to 255 bytes long");
    }
    if name == "." || name == ".." {
        return Err("must not be '.' or '..'");
    }
    if name.chars().any(|c| c == '/' || c == '\\' || c == ':' || c.is_control()) {
        return Err("must not contain '/', '\\', ':' or control characters");
    }
    Ok(())
}

fn packed_len(values: u64, bits: u32) -> u64 {
    (values * u64::from(bits)).div_ceil(8)
}

fn pack_levels(levels: &[u8], bits: u32, out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + packed_len(levels.len() as u64, bits) as usize, 0);
    for (i, &level) in levels.iter().enumerate() {
        for b in 0..bits as usize {
            if level >> b & 1 == 1 {
                let bit = i * bits as usize + b;
                out[start + bit / 8] |= 1 << (bit % 8);
            }
        }
    }
}

fn unpack_levels(bytes: &[u8], count: usize, bits: u32) -> Vec<u8> {
    let mut levels = vec![0u8; count];
    for (i, level) in levels.iter_mut().enumerate() {
        for b in 0..bits as usize {
            let bit = i * bits as usize + b;
            if bytes.get(bit / 8).is_some_and(|byte| byte >> (bit % 8) & 1 == 1) {
                *level |= 1 << b;
            }
        }
    }
    levels
}

impl Bundle {
    /// Validates the manifest's internal consistency and limits (the reader calls this before
    /// allocating anything sized by the manifest).
    pub fn validate_manifest(m: &Manifest) -> Result<(), BundleError> {
        use limits::{
            MAX_GRID_CHANNELS, MAX_GRID_SIDE, MAX_GRIDS, MAX_LATENT_VALUES, MAX_LAYER_WIDTH, MAX_LAYERS, MAX_MAP_SIDE, MAX_MAP_VALUES,
            MAX_MATERIAL_VALUES, MAX_MATERIALS, MAX_PE_FREQUENCIES,
        };
        let invalid = |s: String| Err(BundleError::Invalid(s));
        if m.grids.is_empty() || m.grids.len() > MAX_GRIDS {
            return invalid(format!("{} latent grids (1..={MAX_GRIDS} allowed)", m.grids.len()));
        }
        if m.mip_levels == 0 || m.mip_levels > limits::MAX_MIP_LEVELS {
            return invalid(format!("{} mip levels (1..={})", m.mip_levels, limits::MAX_MIP_LEVELS));
        }
        if m.mip_grids.len() != (m.mip_levels as usize - 1) * m.grids.len() {
            return invalid(format!(
                "{} pyramid grids for {} mip levels of {} grids (expected {})",
                m.mip_grids.len(),
                m.mip_levels,
                m.grids.len(),
                (m.mip_levels as usize - 1) * m.grids.len()
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
        if m.pe_frequencies > MAX_PE_FREQUENCIES {
            return invalid(format!("{} positional-encoding frequencies (limit {MAX_PE_FREQUENCIES})", m.pe_frequencies));
        }
        if m.layers.is_empty() || m.layers.len() > MAX_LAYERS {
            return invalid(format!("{} MLP layers (1..={MAX_LAYERS})", m.layers.len()));
        }
        let latent_channels = m.latent_channels();
        let mut width = m.mlp_inputs();
        for (i, l) in m.layers.iter().enumerate() {
            if l.inputs as usize != width {
                return invalid(format!("MLP layer {i} takes {} inputs, the previous gives {width}", l.inputs));
            }
            if l.outputs == 0 || l.outputs as usize > MAX_LAYER_WIDTH {
                return invalid(format!("MLP layer {i} has {} outputs (1..={MAX_LAYER_WIDTH})", l.outputs));
            }
            let expected = if i + 1 == m.layers.len() { "linear" } else { "relu" };
            if l.activation != expected {
                return invalid(format!("MLP layer {i} activation is {:?}, expected {expected:?}", l.activation));
            }
            width = l.outputs as usize;
        }
        if m.materials.is_empty() || m.materials.len() > MAX_MATERIALS {
            return invalid(format!("{} materials (1..={MAX_MATERIALS})", m.materials.len()));
        }
        let mut next_output = 0usize;
        let mut outputs: std::collections::BTreeMap<u32, (u32, &Vec<u32>)> = std::collections::BTreeMap::new();
        let mut names = std::collections::BTreeSet::new();
        for mat in &m.materials {
            if let Err(why) = check_name(&mat.name) {
                return invalid(format!("material name {:?}: {why}", mat.name));
            }
            if !names.insert(mat.name.as_str()) {
                return invalid(format!("two materials named '{}'", mat.name));
            }
            if mat.maps.is_empty() {
                return invalid(format!("material '{}' has no maps", mat.name));
            }
            let mut kinds = std::collections::BTreeSet::new();
            let mut material_values = 0u64;
            for map in &mat.maps {
                if !kinds.insert(map.kind) {
                    return invalid(format!("material '{}' has two {} maps", mat.name, map.kind));
                }
                let values = u64::from(map.width) * u64::from(map.height) * u64::from(map.channels);
                material_values += values;
                if values > MAX_MAP_VALUES || material_values > MAX_MATERIAL_VALUES {
                    return invalid(format!(
                        "material '{}' decodes to more than the limit of {MAX_MAP_VALUES} values per map / {MAX_MATERIAL_VALUES} per material",
                        mat.name
                    ));
                }
                let name = format!("{}/{}", mat.name, map.kind);
                if map.width == 0 || map.height == 0 || map.width > MAX_MAP_SIDE || map.height > MAX_MAP_SIDE {
                    return invalid(format!("map {name} is {}x{} (1..={MAX_MAP_SIDE} per side)", map.width, map.height));
                }
                if !(1..=4).contains(&map.channels) || map.channel_ranges.len() != map.channels as usize {
                    return invalid(format!("map {name} has {} channels and {} ranges", map.channels, map.channel_ranges.len()));
                }
                if map.channel_ranges.iter().any(|r| !(r[0].is_finite() && r[1].is_finite() && r[0] < r[1])) {
                    return invalid(format!("map {name} has an invalid channel range"));
                }
                if map.latent_channels.windows(2).any(|w| w[0] >= w[1])
                    || map.latent_channels.iter().any(|&c| c as usize >= latent_channels)
                {
                    return invalid(format!("map {name} has an invalid channel budget"));
                }
                if let Some(rows) = &map.color_transform {
                    if rows.len() != map.channels as usize || rows.iter().flatten().any(|v| !v.is_finite() || v.abs() > 1e4) {
                        return invalid(format!("map {name} has an invalid colour transform (one row of 5 finite values per channel)"));
                    }
                    if map.output_offset as usize == next_output {
                        return invalid(format!(
                            "map {name} has a colour transform but no map to transform (it must share an earlier map's outputs)"
                        ));
                    }
                }
                if map.output_offset as usize == next_output {
                    next_output += map.channels as usize;
                    outputs.insert(map.output_offset, (map.channels, &map.latent_channels));
                } else if outputs.get(&map.output_offset) != Some(&(map.channels, &map.latent_channels)) {
                    // A map may share an earlier map's outputs (a duplicate stored once) only
                    // with the same channel count and budget.
                    return invalid(format!(
                        "map {name} output offset {} is neither the next ({next_output}) nor an earlier map's with the same channels and budget",
                        map.output_offset
                    ));
                }
            }
        }
        if next_output != width {
            return invalid(format!("maps have {next_output} channels but the MLP outputs {width}"));
        }
        Ok(())
    }

    /// Serialises the bundle.
    pub fn to_bytes(&self) -> Result<(Vec<u8>, SectionSizes), BundleError> {
        Self::validate_manifest(&self.manifest)?;
        self.check_data_shapes()?;
        let manifest = serde_json::to_vec(&self.manifest).map_err(|e| BundleError::Manifest(e.to_string()))?;
        let mut latents = Vec::new();
        for (grid, levels) in self.manifest.all_grids().zip(&self.latent_levels) {
            pack_levels(levels, grid.bits, &mut latents);
        }
        let mut weights = Vec::new();
        for layer in &self.layers {
            match layer.format {
                WeightFormat::Int8 | WeightFormat::Fp8E4m3 => {
                    weights.extend(layer.weights.iter().map(|&w| w.to_le_bytes()[0]));
                    weights.resize(weights.len().next_multiple_of(4), 0);
                    for s in &layer.scales {
                        weights.extend_from_slice(&s.to_le_bytes());
                    }
                }
                WeightFormat::Fp16 => {
                    for h in &layer.halves {
                        weights.extend_from_slice(&h.to_le_bytes());
                    }
                    weights.resize(weights.len().next_multiple_of(4), 0);
                }
                WeightFormat::MxInt8 => {
                    weights.extend(layer.weights.iter().map(|&w| w.to_le_bytes()[0]));
                    weights.resize(weights.len().next_multiple_of(4), 0);
                    // The biased exponent of each power-of-two block scale (E8M0).
                    weights.extend(layer.scales.iter().map(|s| (s.to_bits() >> 23) as u8));
                    weights.resize(weights.len().next_multiple_of(4), 0);
                }
            }
            for b in &layer.biases {
                weights.extend_from_slice(&b.to_le_bytes());
            }
        }
        let sections: [(&[u8; 4], &Vec<u8>); 3] =
            [(&SECTION_MANIFEST, &manifest), (&SECTION_LATENTS, &latents), (&SECTION_WEIGHTS, &weights)];
        let header_len = 16 + SECTION_ENTRY_BYTES * sections.len() + 4;
        let mut out = Vec::with_capacity(header_len + manifest.len() + latents.len() + weights.len());
        out.extend_from_slice(&MAGIC);
        let version = if self.manifest.layers.iter().any(|l| l.format != WeightFormat::Int8) {
            4
        } else if self.manifest.mip_levels > 1 {
            3
        } else if self.manifest.materials.iter().flat_map(|m| &m.maps).any(|m| m.color_transform.is_some()) {
            2
        } else {
            OLDEST_FORMAT_VERSION
        };
        out.extend_from_slice(&version.to_le_bytes());
        out.extend_from_slice(&(sections.len() as u32).to_le_bytes());
        let mut offset = header_len as u64;
        for (tag, data) in &sections {
            out.extend_from_slice(*tag);
            out.extend_from_slice(&crc32fast::hash(data).to_le_bytes());
            out.extend_from_slice(&offset.to_le_bytes());
            out.extend_from_slice(&(data.len() as u64).to_le_bytes());
            offset += data.len() as u64;
        }
        let header_crc = crc32fast::hash(&out);
        out.extend_from_slice(&header_crc.to_le_bytes());
        for (_, data) in &sections {
            out.extend_from_slice(data);
        }
        let sizes = SectionSizes {
            header_bytes: header_len as u64,
            manifest_bytes: manifest.len() as u64,
            latent_bytes: latents.len() as u64,
            weight_bytes: weights.len() as u64,
        };
        Ok((out, sizes))
    }

    fn check_data_shapes(&self) -> Result<(), BundleError> {
        let m = &self.manifest;
        if self.latent_levels.len() != m.grids.len() + m.mip_grids.len() || self.layers.len() != m.layers.len() {
            return Err(BundleError::Invalid("data does not match the manifest's grid/layer counts".into()));
        }
        for (i, (g, levels)) in m.all_grids().zip(&self.latent_levels).enumerate() {
            let n = g.width as usize * g.height as usize * g.channels as usize;
            if levels.len() != n || levels.iter().any(|&l| u32::from(l) >> g.bits != 0) {
                return Err(BundleError::Invalid(format!("grid {i} levels do not match its shape or bits")));
            }
        }
        if self.layers.iter().any(|l| l.scales.iter().chain(&l.biases).any(|v| !v.is_finite())) {
            return Err(BundleError::Invalid("non-finite weight scale or bias (did training diverge?)".into()));
        }
        if m.layers.windows(2).any(|w| w[0].format != w[1].format) {
            return Err(BundleError::Invalid("the MLP layers must share one weight format".into()));
        }
        for (i, (e, l)) in m.layers.iter().zip(&self.layers).enumerate() {
            let n = l.inputs * l.outputs;
            let (codes, halves) = if l.format == WeightFormat::Fp16 { (0, n) } else { (n, 0) };
            if l.inputs != e.inputs as usize
                || l.outputs != e.outputs as usize
                || l.format != e.format
                || l.weights.len() != codes
                || l.halves.len() != halves
                || l.scales.len() != l.outputs * l.format.scales_per_row(l.inputs)
                || l.biases.len() != l.outputs
            {
                return Err(BundleError::Invalid(format!("layer {i} data does not match its shape and format")));
            }
            if l.halves.iter().any(|h| h & 0x7C00 == 0x7C00) {
                return Err(BundleError::Invalid(format!("layer {i}: a non-finite fp16 weight")));
            }
            if l.format == WeightFormat::MxInt8 && l.scales.iter().any(|s| s.to_bits() & 0x807F_FFFF != 0 || *s == 0.0) {
                return Err(BundleError::Invalid(format!("layer {i}: an MXINT8 block scale is not a normal power of two")));
            }
        }
        Ok(())
    }

    /// Parses and validates a bundle.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, BundleError> {
        let len = bytes.len() as u64;
        let slice = |what: &str, start: u64, n: u64| -> Result<&[u8], BundleError> {
            let end = start.checked_add(n).ok_or_else(|| BundleError::Invalid(format!("{what} offset overflows")))?;
            if end > len {
                return Err(BundleError::Truncated { what: what.to_owned(), start, end, len });
            }
            Ok(&bytes[start as usize..end as usize])
        };
        let head = slice("header", 0, 16)?;
        if head[..8] != MAGIC {
            return Err(BundleError::BadMagic);
        }
        let version = u32::from_le_bytes([head[8], head[9], head[10], head[11]]);
        if !(OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(BundleError::UnsupportedVersion { found: version, supported: FORMAT_VERSION });
        }
        let section_count = u32::from_le_bytes([head[12], head[13], head[14], head[15]]);
        if section_count > limits::MAX_SECTIONS {
            return Err(BundleError::Invalid(format!("{section_count} sections (limit {})", limits::MAX_SECTIONS)));
        }
        let table_len = SECTION_ENTRY_BYTES as u64 * u64::from(section_count);
        let header = slice("section table", 0, 16 + table_len)?;
        let stored_crc_bytes = slice("header checksum", 16 + table_len, 4)?;
        let stored = u32::from_le_bytes([stored_crc_bytes[0], stored_crc_bytes[1], stored_crc_bytes[2], stored_crc_bytes[3]]);
        let computed = crc32fast::hash(header);
        // Fuzz builds skip checksums, so the fuzzer reaches the parser behind them.
        if stored != computed && !cfg!(fuzzing) {
            return Err(BundleError::Checksum { section: "header".into(), stored, computed });
        }
        let mut sections: Vec<([u8; 4], &[u8])> = Vec::new();
        for i in 0..section_count as usize {
            let e = &header[16 + i * SECTION_ENTRY_BYTES..16 + (i + 1) * SECTION_ENTRY_BYTES];
            let tag = [e[0], e[1], e[2], e[3]];
            let crc = u32::from_le_bytes([e[4], e[5], e[6], e[7]]);
            let offset = u64::from_le_bytes([e[8], e[9], e[10], e[11], e[12], e[13], e[14], e[15]]);
            let size = u64::from_le_bytes([e[16], e[17], e[18], e[19], e[20], e[21], e[22], e[23]]);
            let name = String::from_utf8_lossy(&tag).into_owned();
            let data = slice(&format!("section {name}"), offset, size)?;
            let computed = crc32fast::hash(data);
            if computed != crc && !cfg!(fuzzing) {
                return Err(BundleError::Checksum { section: name, stored: crc, computed });
            }
            sections.push((tag, data));
        }
        let find = |tag: [u8; 4]| {
            sections
                .iter()
                .find(|(t, _)| *t == tag)
                .map(|(_, d)| *d)
                .ok_or_else(|| BundleError::MissingSection(String::from_utf8_lossy(&tag).into_owned()))
        };
        let manifest_bytes = find(SECTION_MANIFEST)?;
        if manifest_bytes.len() as u64 > limits::MAX_MANIFEST_BYTES {
            return Err(BundleError::Invalid(format!("manifest of {} bytes (limit {})", manifest_bytes.len(), limits::MAX_MANIFEST_BYTES)));
        }
        let manifest: Manifest = serde_json::from_slice(manifest_bytes).map_err(|e| BundleError::Manifest(e.to_string()))?;
        if version < 2 && manifest.materials.iter().flat_map(|m| &m.maps).any(|m| m.color_transform.is_some()) {
            return Err(BundleError::Invalid(format!("a version {version} bundle cannot hold colour transforms (version 2 adds them)")));
        }
        if version < 3 && manifest.mip_levels > 1 {
            return Err(BundleError::Invalid(format!("a version {version} bundle cannot hold a mip chain (version 3 adds it)")));
        }
        if version < 4 && manifest.layers.iter().any(|l| l.format != WeightFormat::Int8) {
            return Err(BundleError::Invalid(format!(
                "a version {version} bundle cannot hold weights other than int8 (version 4 adds them)"
            )));
        }
        Self::validate_manifest(&manifest)?;

        let latent_bytes = find(SECTION_LATENTS)?;
        let expected: u64 =
            manifest.all_grids().map(|g| packed_len(u64::from(g.width) * u64::from(g.height) * u64::from(g.channels), g.bits)).sum();
        if latent_bytes.len() as u64 != expected {
            return Err(BundleError::Invalid(format!("latent section has {} bytes, the manifest needs {expected}", latent_bytes.len())));
        }
        let mut latent_levels = Vec::with_capacity(manifest.grids.len() + manifest.mip_grids.len());
        let mut at = 0usize;
        for g in manifest.all_grids() {
            let count = g.width as usize * g.height as usize * g.channels as usize;
            let n = packed_len(count as u64, g.bits) as usize;
            latent_levels.push(unpack_levels(&latent_bytes[at..at + n], count, g.bits));
            at += n;
        }

        let weight_bytes = find(SECTION_WEIGHTS)?;
        let expected: usize = manifest.layers.iter().map(|l| l.format.layer_bytes(l.inputs as usize, l.outputs as usize)).sum();
        if weight_bytes.len() != expected {
            return Err(BundleError::Invalid(format!("weight section has {} bytes, the manifest needs {expected}", weight_bytes.len())));
        }
        let mut layers = Vec::with_capacity(manifest.layers.len());
        let mut at = 0usize;
        let read_f32s = |data: &[u8], n: usize| -> Vec<f32> {
            data.chunks_exact(4).take(n).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
        };
        for l in &manifest.layers {
            let (inputs, outputs, format) = (l.inputs as usize, l.outputs as usize, l.format);
            let n = inputs * outputs;
            let (mut weights, mut halves, mut scales) = (Vec::new(), Vec::new(), Vec::new());
            if format == WeightFormat::Fp16 {
                halves = weight_bytes[at..at + 2 * n].chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
                at += (2 * n).next_multiple_of(4);
            } else {
                weights = weight_bytes[at..at + n].iter().map(|&b| i8::from_le_bytes([b])).collect();
                at += n.next_multiple_of(4);
            }
            match format {
                WeightFormat::Int8 | WeightFormat::Fp8E4m3 => {
                    scales = read_f32s(&weight_bytes[at..at + 4 * outputs], outputs);
                    at += 4 * outputs;
                }
                WeightFormat::MxInt8 => {
                    // E8M0 exponents; 0 (a zero scale) and 255 (infinity) are rejected below, as
                    // scales that are not normal powers of two.
                    let count = outputs * format.scales_per_row(inputs);
                    scales = weight_bytes[at..at + count].iter().map(|&e| f32::from_bits(u32::from(e) << 23)).collect();
                    at += count.next_multiple_of(4);
                }
                WeightFormat::Fp16 => {}
            }
            let biases = read_f32s(&weight_bytes[at..at + 4 * outputs], outputs);
            at += 4 * outputs;
            if scales.iter().chain(&biases).any(|v| !v.is_finite()) {
                return Err(BundleError::Invalid("non-finite weight scale or bias".into()));
            }
            layers.push(QuantizedLayer { inputs, outputs, format, weights, halves, scales, biases });
        }
        let bundle = Self { manifest, latent_levels, layers };
        bundle.check_data_shapes()?;
        Ok(bundle)
    }

    /// Reads and validates a bundle file.
    pub fn read(path: &Path) -> Result<Self, BundleError> {
        let bytes = std::fs::read(path).map_err(|source| BundleError::Io { path: path.to_path_buf(), source })?;
        Self::from_bytes(&bytes)
    }

    /// Writes the bundle atomically (temporary file, fsync, rename).
    pub fn write(&self, path: &Path) -> Result<SectionSizes, BundleError> {
        let (bytes, sizes) = self.to_bytes()?;
        crate::io::fsutil::write_atomic(path, &bytes).map_err(|source| BundleError::Io { path: path.to_path_buf(), source })?;
        Ok(sizes)
    }

    /// The float model these quantised values stand for (what every decoder evaluates).
    #[must_use]
    pub fn model_params(&self) -> ModelParams {
        let mut grids: Vec<GridParams> = self
            .manifest
            .all_grids()
            .zip(&self.latent_levels)
            .map(|(g, levels)| GridParams {
                width: g.width,
                height: g.height,
                channels: g.channels,
                values: levels.iter().map(|&l| level_value(l, g.bits, g.range)).collect(),
            })
            .collect();
        let mip_grids = grids.split_off(self.manifest.grids.len().min(grids.len()));
        ModelParams {
            grids,
            pe_frequencies: self.manifest.pe_frequencies,
            layers: self.layers.iter().map(QuantizedLayer::dequantize).collect(),
            mip_grids,
        }
    }

    /// Total texels of the library (sum over materials of their largest map).
    #[must_use]
    pub fn texel_count(&self) -> u64 {
        self.manifest
            .materials
            .iter()
            .map(|m| m.maps.iter().map(|map| u64::from(map.width) * u64::from(map.height)).max().unwrap_or(0))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_packing_round_trips() {
        for bits in 1..=8 {
            let levels: Vec<u8> = (0..1000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8 >> (8 - bits)).collect();
            let mut packed = Vec::new();
            pack_levels(&levels, bits, &mut packed);
            assert_eq!(packed.len() as u64, packed_len(1000, bits));
            assert_eq!(unpack_levels(&packed, 1000, bits), levels);
        }
    }
}
