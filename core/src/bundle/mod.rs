//! The `.texset` bundle: a versioned, checksummed binary container of a compressed library.
//! The byte layout is specified in `docs/bundle-format.md`; this module is its only writer and
//! reader. The reader validates every size against the manifest and fixed limits before it
//! allocates, so hostile bytes give an error, never a panic or an unbounded allocation.

use crate::model::params::{GridParams, ModelParams};
use crate::model::quant::{QuantizedLayer, WeightFormat, level_value};
use serde::Serialize;
use std::path::Path;

mod bits;
mod manifest;

/// Weight storage format of an MLP layer (format version 4 adds every format but int8).
use bits::{pack_levels, packed_len, unpack_levels};
pub use manifest::{GridEntry, LayerEntry, Manifest, MapEntry, MaterialEntry, apply_color_rows};

/// First eight bytes of every bundle.
pub const MAGIC: [u8; 8] = *b"TEXSET\0\x1a";
/// The newest format version this build writes and reads. Version 2 adds per-map colour
/// transforms, version 3 the mip chain (latent pyramid and LOD input), version 4 decoder weights
/// in fp16, E4M3 or MXINT8 (not int8), version 5 pyramid levels that serve groups of mip levels
/// (`Manifest::mip_group`), version 6 a hidden activation other than `ReLU` (`"hgelu"`), version 7
/// grids whose corners the MLP reads (`GridEntry::corners`); a bundle
/// is written with the oldest version that holds what it uses, so older readers read it when they
/// can.
pub const FORMAT_VERSION: u32 = 7;
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
    pub use crate::set::limits::{MAX_MAP_VALUES, MAX_NAME_BYTES};
    /// Largest manifest, in bytes.
    pub const MAX_MANIFEST_BYTES: u64 = 16 << 20;
    /// Largest bundle file read, in bytes (the limits below keep a valid one far smaller:
    /// 2^26 latents of at most 8 bits, a decoder of at most 2^23 multiply-adds a texel).
    pub const MAX_BUNDLE_BYTES: u64 = 1 << 30;
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
    /// Most decoded values of one material's maps together (decoded at once).
    pub const MAX_MATERIAL_VALUES: u64 = 1 << 29;
    /// Most decoded values of the whole library (every map's level 0; 2^32: 16 GiB of f32), so
    /// that many materials at the per-material limit cannot add up to hours of decoding.
    pub const MAX_LIBRARY_VALUES: u64 = 1 << 32;
    /// Most multiply-adds the MLP may take per decoded texel (the sum over its layers of inputs ×
    /// outputs; 2^23). The widest decoder training accepts (15 hidden layers of 512, an output
    /// layer of up to 4096) takes 6.0 M; texset's presets under 2^16. The layer limits alone
    /// would allow 2^28.
    pub const MAX_MLP_MACS_PER_TEXEL: u64 = 1 << 23;
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
impl Bundle {
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
        let version = if self.manifest.all_grids().any(|g| g.corners) {
            7
        } else if self.manifest.activation() != crate::model::params::Activation::Relu {
            6
        } else if self.manifest.mip_group > 1 {
            5
        } else if self.manifest.layers.iter().any(|l| l.format != WeightFormat::Int8) {
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
        let (version, sections) = read_sections(bytes)?;
        let manifest = read_manifest(find_section(&sections, SECTION_MANIFEST)?, version)?;
        let latent_levels = read_latents(&manifest, find_section(&sections, SECTION_LATENTS)?)?;
        let layers = read_layers(&manifest, find_section(&sections, SECTION_WEIGHTS)?)?;
        let bundle = Self { manifest, latent_levels, layers };
        bundle.check_data_shapes()?;
        Ok(bundle)
    }

    /// Reads and validates a bundle file.
    pub fn read(path: &Path) -> Result<Self, BundleError> {
        Self::read_with_bytes(path).map(|(bundle, _)| bundle)
    }

    /// [`Bundle::read`], and the file's bytes (to keep or copy as they are): a regular file of at
    /// most [`limits::MAX_BUNDLE_BYTES`].
    pub fn read_with_bytes(path: &Path) -> Result<(Self, Vec<u8>), BundleError> {
        let bytes = crate::io::read_regular(path, limits::MAX_BUNDLE_BYTES)
            .map_err(|source| BundleError::Io { path: path.to_path_buf(), source })?;
        Ok((Self::from_bytes(&bytes)?, bytes))
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
                corners: g.corners,
            })
            .collect();
        let mip_grids = grids.split_off(self.manifest.grids.len().min(grids.len()));
        ModelParams {
            grids,
            pe_frequencies: self.manifest.pe_frequencies,
            layers: self.layers.iter().map(QuantizedLayer::dequantize).collect(),
            mip_grids,
            mip_group: self.manifest.mip_group(),
            activation: self.manifest.activation(),
        }
    }

    /// Per stored grid (level 0's grids, then the pyramid's, as [`Manifest::all_grids`]), how many
    /// of its values sit at each of its `2^bits` levels, lowest first: how the latents fill
    /// their range (`texset inspect --levels`).
    #[must_use]
    pub fn latent_level_counts(&self) -> Vec<Vec<u64>> {
        self.manifest
            .all_grids()
            .zip(&self.latent_levels)
            .map(|(grid, levels)| {
                let mut counts = vec![0u64; 1usize << grid.bits.min(8)];
                for &level in levels {
                    if let Some(count) = counts.get_mut(usize::from(level)) {
                        *count += 1;
                    }
                }
                counts
            })
            .collect()
    }

    /// Total texels of the library (sum over materials of their largest map).
    #[must_use]
    pub fn texel_count(&self) -> u64 {
        self.manifest
            .materials
            .iter()
            .map(|m| m.maps.iter().map(|map| u64::from(map.info.width) * u64::from(map.info.height)).max().unwrap_or(0))
            .sum()
    }
}

/// Bytes `start..start + n` of `bytes`, or the error that names `what` when they are not all there.
fn byte_range<'a>(bytes: &'a [u8], what: &str, start: u64, n: u64) -> Result<&'a [u8], BundleError> {
    let len = bytes.len() as u64;
    let end = start.checked_add(n).ok_or_else(|| BundleError::Invalid(format!("{what} offset overflows")))?;
    if end > len {
        return Err(BundleError::Truncated { what: what.to_owned(), start, end, len });
    }
    Ok(&bytes[start as usize..end as usize])
}

/// The sections of a bundle's bytes, tag and data, checksums checked.
type Sections<'a> = Vec<([u8; 4], &'a [u8])>;

/// Reads the header: magic, version and section table (checksummed), then every section's data
/// (checksummed). Returns the format version and the sections in table order.
fn read_sections(bytes: &[u8]) -> Result<(u32, Sections<'_>), BundleError> {
    let head = byte_range(bytes, "header", 0, 16)?;
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
    let header = byte_range(bytes, "section table", 0, 16 + table_len)?;
    let stored_crc_bytes = byte_range(bytes, "header checksum", 16 + table_len, 4)?;
    let stored = u32::from_le_bytes([stored_crc_bytes[0], stored_crc_bytes[1], stored_crc_bytes[2], stored_crc_bytes[3]]);
    let computed = crc32fast::hash(header);
    // Fuzz builds skip checksums, so the fuzzer reaches the parser behind them.
    if stored != computed && !cfg!(fuzzing) {
        return Err(BundleError::Checksum { section: "header".into(), stored, computed });
    }
    let mut sections: Sections<'_> = Vec::new();
    for i in 0..section_count as usize {
        let e = &header[16 + i * SECTION_ENTRY_BYTES..16 + (i + 1) * SECTION_ENTRY_BYTES];
        let tag = [e[0], e[1], e[2], e[3]];
        let crc = u32::from_le_bytes([e[4], e[5], e[6], e[7]]);
        let offset = u64::from_le_bytes([e[8], e[9], e[10], e[11], e[12], e[13], e[14], e[15]]);
        let size = u64::from_le_bytes([e[16], e[17], e[18], e[19], e[20], e[21], e[22], e[23]]);
        let name = String::from_utf8_lossy(&tag).into_owned();
        let data = byte_range(bytes, &format!("section {name}"), offset, size)?;
        let computed = crc32fast::hash(data);
        if computed != crc && !cfg!(fuzzing) {
            return Err(BundleError::Checksum { section: name, stored: crc, computed });
        }
        sections.push((tag, data));
    }
    Ok((version, sections))
}

/// The data of the first section tagged `tag`.
fn find_section<'a>(sections: &Sections<'a>, tag: [u8; 4]) -> Result<&'a [u8], BundleError> {
    sections
        .iter()
        .find(|(t, _)| *t == tag)
        .map(|(_, d)| *d)
        .ok_or_else(|| BundleError::MissingSection(String::from_utf8_lossy(&tag).into_owned()))
}

/// Parses the manifest section of a bundle of format `version` and validates it: within the
/// limits, consistent, and using only what that version holds.
fn read_manifest(manifest_bytes: &[u8], version: u32) -> Result<Manifest, BundleError> {
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
    if version < 5 && manifest.mip_group != 1 {
        return Err(BundleError::Invalid(format!(
            "a version {version} bundle cannot hold pyramid levels of {} mip levels (version 5 adds them)",
            manifest.mip_group
        )));
    }
    if version < 7 && manifest.all_grids().any(|g| g.corners) {
        return Err(BundleError::Invalid(format!("a version {version} bundle cannot hold corner reads (version 7 adds them)")));
    }
    if version < 6 && manifest.layers.iter().any(|l| l.activation == crate::model::params::Activation::Hgelu.name()) {
        return Err(BundleError::Invalid(format!("a version {version} bundle cannot hold an hgelu decoder (version 6 adds it)")));
    }
    if version < 4 && manifest.layers.iter().any(|l| l.format != WeightFormat::Int8) {
        return Err(BundleError::Invalid(format!("a version {version} bundle cannot hold weights other than int8 (version 4 adds them)")));
    }
    Bundle::validate_manifest(&manifest)?;
    Ok(manifest)
}

/// Unpacks the latent section: every grid's levels, level 0's grids first (the size checked
/// against the manifest first).
fn read_latents(manifest: &Manifest, latent_bytes: &[u8]) -> Result<Vec<Vec<u8>>, BundleError> {
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
    Ok(latent_levels)
}

/// Little-endian f32s: the first `n` of `data`.
fn read_f32s(data: &[u8], n: usize) -> Vec<f32> {
    data.chunks_exact(4).take(n).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// Reads the weight section: every layer's codes or halves, scales and biases in its format (the
/// size checked against the manifest first).
fn read_layers(manifest: &Manifest, weight_bytes: &[u8]) -> Result<Vec<QuantizedLayer>, BundleError> {
    let expected: usize = manifest.layers.iter().map(|l| l.format.layer_bytes(l.inputs as usize, l.outputs as usize)).sum();
    if weight_bytes.len() != expected {
        return Err(BundleError::Invalid(format!("weight section has {} bytes, the manifest needs {expected}", weight_bytes.len())));
    }
    let mut layers = Vec::with_capacity(manifest.layers.len());
    let mut at = 0usize;
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
    Ok(layers)
}
