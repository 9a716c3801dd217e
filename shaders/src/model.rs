//! A bundle laid out for the GPU: the two data buffers the WGSL decoder reads (bit-packed latent
//! levels, int8 weights with scales and biases) and the constants block that specialises
//! `decode.wgsl` to the bundle's shapes. The byte layouts are specified in docs/integration.md.

use crate::{GpuError, to_u32};
use std::fmt::Write as _;
use texset_core::bundle::{Bundle, WeightFormat};
use texset_core::model::params::MAX_MLP_WIDTH;
use texset_core::set::{ColorSpace, MapKind, NormalConvention};

/// The marker lines around the constants block of `decode.wgsl`.
const BEGIN_MARKER: &str = "// texset:specialise:begin\n";
const END_MARKER: &str = "// texset:specialise:end\n";

/// A bundle's model as GPU data plus the WGSL constants that describe it.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuModel {
    /// The `latents` storage buffer, as 32-bit words (write them little-endian).
    pub latent_words: Vec<u32>,
    /// The `mlp` storage buffer, as 32-bit words (write them little-endian).
    pub mlp_words: Vec<u32>,
    /// The WGSL `const` declarations that replace the template's block.
    pub constants: String,
    /// Library-wide map index of each material's first map (map `m` of material `k` is
    /// `first_map[k] + m`).
    pub first_map: Vec<u32>,
}

/// Packs `levels` of `bits` bits LSB-first into 32-bit words (the bundle's bit order, word-sized).
fn pack_words(levels: &[u8], bits: u32, words: &mut Vec<u32>) {
    let start = words.len();
    let total_bits = levels.len() as u64 * u64::from(bits);
    words.resize(start + total_bits.div_ceil(32) as usize, 0);
    let mut bit = 0u64;
    for &level in levels {
        let value = u64::from(level) & ((1u64 << bits) - 1);
        let word = start + (bit / 32) as usize;
        let shift = bit % 32;
        let wide = value << shift;
        words[word] |= wide as u32;
        if shift + u64::from(bits) > 32 {
            words[word + 1] |= (wide >> 32) as u32;
        }
        bit += u64::from(bits);
    }
}

/// An f32 as its bit pattern, a WGSL u32 literal (the shader reads it with `bitcast<f32>`, so no
/// decimal rounding can differ between the CPU and a shader compiler).
fn f32_bits(value: f32) -> String {
    format!("{:#010x}u", value.to_bits())
}

fn u32_array(name: &str, values: &[u32]) -> String {
    let items: Vec<String> = values.iter().map(|v| format!("{v}u")).collect();
    format!("const {name} = array<u32, {}>({});\n", values.len(), items.join(", "))
}

fn f32_array(name: &str, values: &[f32]) -> String {
    let items: Vec<String> = values.iter().map(|&v| f32_bits(v)).collect();
    format!("const {name} = array<u32, {}>({});\n", values.len(), items.join(", "))
}

fn vec4_array(name: &str, values: &[[f32; 4]]) -> String {
    let items: Vec<String> = values.iter().map(|v| format!("vec4<u32>({})", v.map(f32_bits).join(", "))).collect();
    format!("const {name} = array<vec4<u32>, {}>({});\n", values.len(), items.join(", "))
}

impl GpuModel {
    /// Lays out a bundle for the shader. Fails when the model is wider than
    /// [`MAX_MLP_WIDTH`] (texset-core's limit, which training keeps to: its activations live in a
    /// private array of `2 ×` that many f32 per invocation) or a buffer would not be addressable
    /// with 32-bit indices.
    pub fn new(bundle: &Bundle) -> Result<Self, GpuError> {
        let manifest = &bundle.manifest;
        let mlp_inputs = manifest.mlp_inputs();
        let mut max_width = mlp_inputs;
        if let Some((_, hidden)) = manifest.layers.split_last() {
            for layer in hidden {
                max_width = max_width.max(layer.outputs as usize);
            }
        }
        if max_width > MAX_MLP_WIDTH {
            return Err(GpuError::ModelTooLarge { what: "MLP width", got: max_width, limit: MAX_MLP_WIDTH });
        }

        // Latents: each grid from a word boundary.
        let mut latent_words = Vec::new();
        let mut grid_word_offset = Vec::new();
        let mut grid_first_channel = Vec::new();
        let mut grid_low = Vec::new();
        let mut grid_step = Vec::new();
        let mut first_channel = 0u32;
        for grid in &manifest.grids {
            grid_first_channel.push(first_channel);
            first_channel += grid.channels;
            // The step expression of `texset_core::model::quant::level_value`, evaluated here once.
            grid_low.push(grid.range[0]);
            grid_step.push((grid.range[1] - grid.range[0]) / ((1u32 << grid.bits) - 1) as f32);
        }
        // Every pyramid level's grids (level 0 first) from a word boundary; a pyramid grid has
        // its level-0 grid's channels, bits and range.
        for (grid, levels) in manifest.all_grids().zip(&bundle.latent_levels) {
            grid_word_offset.push(to_u32("latent words", latent_words.len())?);
            pack_words(levels, grid.bits, &mut latent_words);
        }
        to_u32("latent words", latent_words.len())?;

        // MLP: per layer, padded rows of weight codes (8-bit codes four to a word, fp16 two),
        // then the scales (per row; per block for MXINT8; 1.0 for fp16), then biases.
        // One format for every layer (`Bundle` checks it).
        let weight_format = bundle.layers.first().map_or(WeightFormat::Int8, |l| l.format);
        let mut mlp_words = Vec::new();
        let mut row_words = Vec::new();
        let mut scales_per_row = Vec::new();
        let mut word_offset = Vec::new();
        let per_word = if weight_format == WeightFormat::Fp16 { 2 } else { 4 };
        for layer in &bundle.layers {
            let row = layer.inputs.div_ceil(per_word);
            row_words.push(to_u32("MLP row words", row)?);
            word_offset.push(to_u32("MLP words", mlp_words.len())?);
            for o in 0..layer.outputs {
                let mut packed = vec![0u32; row];
                if weight_format == WeightFormat::Fp16 {
                    for (i, &h) in layer.halves[o * layer.inputs..(o + 1) * layer.inputs].iter().enumerate() {
                        packed[i / 2] |= u32::from(h) << (16 * (i % 2));
                    }
                } else {
                    for (i, &w) in layer.weights[o * layer.inputs..(o + 1) * layer.inputs].iter().enumerate() {
                        packed[i / 4] |= u32::from(w.to_le_bytes()[0]) << (8 * (i % 4));
                    }
                }
                mlp_words.extend(packed);
            }
            let per_row = weight_format.scales_per_row(layer.inputs);
            if per_row == 0 {
                scales_per_row.push(1);
                mlp_words.extend(std::iter::repeat_n(1.0f32.to_bits(), layer.outputs));
            } else {
                scales_per_row.push(to_u32("MLP scales", per_row)?);
                mlp_words.extend(layer.scales.iter().map(|s| s.to_bits()));
            }
            mlp_words.extend(layer.biases.iter().map(|b| b.to_bits()));
        }
        to_u32("MLP words", mlp_words.len())?;

        // Maps of every material in library order.
        let latent_channels = manifest.latent_channels();
        let mask_words = latent_channels.div_ceil(32).max(1);
        let mut first_map = Vec::new();
        let mut map_mip_levels = Vec::new();
        let (mut map_width, mut map_height) = (Vec::new(), Vec::new());
        let (mut output_offset, mut channels, mut mask, mut srgb, mut normal, mut low, mut scale) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut transform, mut transform_rows) = (Vec::new(), Vec::new());
        for material in &manifest.materials {
            first_map.push(to_u32("maps", output_offset.len())?);
            for map in &material.maps {
                output_offset.push(map.output_offset);
                channels.push(map.channels);
                map_width.push(map.width);
                map_height.push(map.height);
                map_mip_levels.push(if manifest.mip_levels > 1 {
                    texset_core::model::params::full_mip_count(map.width, map.height)
                } else {
                    1
                });
                let mut words = vec![0u32; mask_words];
                for &c in &map.latent_channels {
                    if let Some(word) = words.get_mut(c as usize / 32) {
                        *word |= 1 << (c % 32);
                    }
                }
                mask.extend(words);
                srgb.push(u32::from(map.color_space == ColorSpace::Srgb));
                normal.push(match (map.kind, map.normal_convention) {
                    (MapKind::Normal, NormalConvention::OpenGl) => 1,
                    (MapKind::Normal, NormalConvention::DirectX) => 2,
                    _ => 0,
                });
                let mut l = [0.0; 4];
                let mut s = [1.0; 4];
                for (c, range) in map.channel_ranges.iter().enumerate().take(4) {
                    l[c] = range[0];
                    s[c] = range[1] - range[0];
                }
                low.push(l);
                scale.push(s);
                let mut rows = [0.0f32; 20];
                if let Some(t) = &map.color_transform {
                    for (c, row) in t.iter().enumerate().take(4) {
                        rows[c * 5..c * 5 + 5].copy_from_slice(row);
                    }
                }
                transform.push(u32::from(map.color_transform.is_some()));
                transform_rows.extend(rows);
            }
        }

        let layer_field = |f: &dyn Fn(&texset_core::model::quant::QuantizedLayer) -> usize| -> Result<Vec<u32>, GpuError> {
            bundle.layers.iter().map(|l| to_u32("MLP width", f(l))).collect()
        };
        let mut constants = String::new();
        let grids = &manifest.grids;
        let all_grids: Vec<_> = manifest.all_grids().collect();
        let _ = writeln!(constants, "const GRID_COUNT: u32 = {}u;", grids.len());
        let _ = writeln!(constants, "const PYRAMID_LEVELS: u32 = {}u;", manifest.pyramid_levels());
        let _ = writeln!(constants, "const MIP_GROUP: u32 = {}u;", manifest.mip_group());
        let _ = writeln!(constants, "const PE_FREQUENCIES: u32 = {}u;", manifest.pe_frequencies);
        let _ = writeln!(constants, "const LAYER_COUNT: u32 = {}u;", bundle.layers.len());
        let _ = writeln!(constants, "const MAX_WIDTH: u32 = {max_width}u;");
        let _ = writeln!(constants, "const MAP_COUNT: u32 = {}u;", output_offset.len());
        let _ = writeln!(constants, "const MASK_WORDS: u32 = {mask_words}u;");
        let _ = writeln!(constants, "const WEIGHT_FORMAT: u32 = {}u;", weight_format.code());
        constants += &u32_array("GRID_WIDTH", &all_grids.iter().map(|g| g.width).collect::<Vec<_>>());
        constants += &u32_array("GRID_HEIGHT", &all_grids.iter().map(|g| g.height).collect::<Vec<_>>());
        constants += &u32_array("GRID_CHANNELS", &grids.iter().map(|g| g.channels).collect::<Vec<_>>());
        constants += &u32_array("GRID_FIRST_CHANNEL", &grid_first_channel);
        constants += &u32_array("GRID_BITS", &grids.iter().map(|g| g.bits).collect::<Vec<_>>());
        constants += &u32_array("GRID_WORD_OFFSET", &grid_word_offset);
        constants += &f32_array("GRID_LOW_BITS", &grid_low);
        constants += &f32_array("GRID_STEP_BITS", &grid_step);
        constants += &u32_array("LAYER_INPUTS", &layer_field(&|l| l.inputs)?);
        constants += &u32_array("LAYER_OUTPUTS", &layer_field(&|l| l.outputs)?);
        constants += &u32_array("LAYER_ROW_WORDS", &row_words);
        constants += &u32_array("LAYER_SCALES_PER_ROW", &scales_per_row);
        constants += &u32_array("LAYER_WORD_OFFSET", &word_offset);
        constants += &u32_array("MAP_OUTPUT_OFFSET", &output_offset);
        constants += &u32_array("MAP_CHANNELS", &channels);
        constants += &u32_array("MAP_MIP_LEVELS", &map_mip_levels);
        constants += &u32_array("MAP_WIDTH", &map_width);
        constants += &u32_array("MAP_HEIGHT", &map_height);
        constants += &u32_array("MAP_MASK", &mask);
        constants += &u32_array("MAP_SRGB", &srgb);
        constants += &u32_array("MAP_NORMAL", &normal);
        constants += &vec4_array("MAP_RANGE_LOW_BITS", &low);
        constants += &vec4_array("MAP_RANGE_SCALE_BITS", &scale);
        constants += &u32_array("MAP_TRANSFORM", &transform);
        constants += &f32_array("MAP_TRANSFORM_BITS", &transform_rows);
        Ok(Self { latent_words, mlp_words, constants, first_map })
    }

    /// The decoder WGSL specialised to this model: the template with its constants block
    /// replaced, after the grid-reading function it shares with the GPU trainer
    /// ([`texset_core::model::BILINEAR_WGSL`]).
    #[must_use]
    pub fn wgsl(&self) -> String {
        format!("{}\n{}", texset_core::model::BILINEAR_WGSL, specialise(crate::DECODE_WGSL, &self.constants))
    }
}

/// Replaces the constants block of the template (between the marker lines) by `constants`.
fn specialise(template: &str, constants: &str) -> String {
    match (template.find(BEGIN_MARKER), template.find(END_MARKER)) {
        (Some(begin), Some(end)) if begin < end => {
            let body_start = begin + BEGIN_MARKER.len();
            format!("{}{}{}", &template[..body_start], constants, &template[end..])
        }
        // The template is a compile-time constant with both markers (tested below).
        _ => template.to_owned(),
    }
}

/// Little-endian bytes of 32-bit words (what the storage buffers hold).
#[must_use]
pub fn words_to_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_has_one_constants_block() {
        assert_eq!(crate::DECODE_WGSL.matches(BEGIN_MARKER).count(), 1);
        assert_eq!(crate::DECODE_WGSL.matches(END_MARKER).count(), 1);
        let replaced = specialise(crate::DECODE_WGSL, "// nothing\n");
        assert!(!replaced.contains("const GRID_COUNT"));
        assert!(replaced.contains("// nothing\n// texset:specialise:end"));
    }

    /// Packing into words reads back level for level, for every bit depth, across word edges.
    #[test]
    fn packed_words_read_back() {
        for bits in 1..=8u32 {
            let levels: Vec<u8> = (0..301u32).map(|i| ((i * 37 + 11) % (1 << bits)) as u8).collect();
            let mut words = vec![0xdead_beef];
            pack_words(&levels, bits, &mut words);
            assert_eq!(words.len(), 1 + (301 * bits as usize).div_ceil(32));
            for (i, &level) in levels.iter().enumerate() {
                // The shader's expression.
                let bit = i as u32 * bits;
                let word = 1 + (bit / 32) as usize;
                let shift = bit % 32;
                let mut v = words[word] >> shift;
                if shift + bits > 32 {
                    v |= words[word + 1] << (32 - shift);
                }
                assert_eq!(v & ((1 << bits) - 1), u32::from(level), "bits {bits}, index {i}");
            }
        }
    }

    #[test]
    fn f32_constants_are_exact() {
        assert_eq!(f32_bits(1.0), "0x3f800000u");
        assert_eq!(f32_bits(-0.0), "0x80000000u");
        // The template's default step is 2/15 at 4 bits, as Rust computes it.
        assert_eq!(f32_bits(2.0 / 15.0), "0x3e088889u");
    }
}
