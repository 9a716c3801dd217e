//! A bundle laid out for the GPU: the two data buffers the WGSL decoder reads (bit-packed latent
//! levels; the MLP's weights dequantised once into `vec4<f32>`s) and the generated block that
//! specialises `decode.wgsl` to the bundle: its shapes as constants, the latent fetch of its grids
//! (whole words, shifts by literals) and the MLP from texset-core's one generator
//! ([`texset_core::model::wgsl`]). The byte layouts are specified in docs/integration.md.

mod fetch;
mod params;

pub use params::DecodeParams;

use crate::{GpuError, to_u32};
use fetch::{grid_fetches, mlp_input_wgsl};
use texset_core::{
    bundle::{Bundle, Manifest, MapEntry},
    model::{
        MAX_MLP_WIDTH, QuantizedLayer,
        wgsl::{
            MlpPrecision, MlpShape, MlpWgsl, PORTABLE_UNIFORM_BYTES, PackedInt8, WeightMemory,
            emit::{Emitter, binding_attributes, expr},
            pack_weights,
        },
    },
    set::{ColorSpace, MapKind, NormalConvention},
};

/// The marker lines around the generated block of `decode.wgsl`.
const BEGIN_MARKER: &str = "// texset:specialise:begin\n";
const END_MARKER: &str = "// texset:specialise:end\n";

/// Texels a compute invocation decodes by default (`BLOCK` in the WGSL): four share each weight
/// load. (Eight decoded 10 % more texels per second on lavapipe, and would hold twice the
/// registers on a hardware GPU.)
pub const DEFAULT_BLOCK: u32 = 4;

/// How the decoder is specialised beyond the bundle: where the weights live and how many texels a
/// compute invocation decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuModelOptions {
    /// The largest uniform buffer the weights may go to (a device's
    /// `max_uniform_buffer_binding_size`); larger weights go to a storage buffer.
    pub max_uniform_bytes: u64,
    /// Texels per compute invocation, 1 to 8.
    pub block: u32,
    /// The hidden layers' code shape: `vec4` rows (portable, and what hardware GPUs are given),
    /// or scalar loads where the GPU is emulated on the CPU.
    pub shape: MlpShape,
    /// The MLP's arithmetic: `f32` (portable, the default), `f16` (a device with `SHADER_F16`) or
    /// packed `int8` (any device); docs/integration.md says what the last two trade.
    pub precision: MlpPrecision,
    /// Where the `MAP_*` and `GRID_*` tables live: WGSL constants (portable, the default) or
    /// module-scope private arrays, where the GPU is emulated on the CPU.
    pub tables: TableStorage,
}

/// Where the generated `MAP_*` and `GRID_*` tables (read with indices known only at run time)
/// live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TableStorage {
    /// `const` arrays: what an engine includes, and hardware GPUs' drivers place as they see fit.
    #[default]
    Constant,
    /// `var<private>` arrays with the same values. On lavapipe, a constant array indexed at run
    /// time is compiled into every read: the studio preview's fragment pipeline took 51.7 s to
    /// compile cold with constants against 10.7 s with private arrays, and a 256×256 draw once
    /// compiled 0.389 s against 0.184 s (docs/decisions/036).
    Private,
}

impl TableStorage {
    /// The storage a GPU runs best: private arrays on one the CPU emulates (`software`:
    /// lavapipe), constants on hardware.
    #[must_use]
    pub fn fastest(software: bool) -> Self {
        if software { Self::Private } else { Self::Constant }
    }

    /// Declares table `name` of type `ty` with the items `items`.
    fn declare(self, e: &mut Emitter, name: &str, ty: &str, items: &[String]) {
        let value = expr!("{ty}({})", items.join(", "));
        match self {
            Self::Constant => e.constant_inferred(name, value),
            Self::Private => e.private(name, ty, value),
        }
    }
}

impl Default for GpuModelOptions {
    /// What any WebGPU device runs: weights in a uniform buffer up to WebGPU's guaranteed 64 KiB.
    fn default() -> Self {
        Self {
            max_uniform_bytes: PORTABLE_UNIFORM_BYTES,
            block: DEFAULT_BLOCK,
            shape: MlpShape::Vec4Rows,
            precision: MlpPrecision::F32,
            tables: TableStorage::Constant,
        }
    }
}

impl GpuModelOptions {
    /// The options for `device`: its uniform buffer limit, and the code shape and table storage
    /// its kind of GPU runs fastest ([`MlpShape::fastest`], [`TableStorage::fastest`]).
    #[cfg(feature = "device")]
    #[must_use]
    pub fn for_device(device: &wgpu::Device) -> Self {
        let software = device.adapter_info().device_type == wgpu::DeviceType::Cpu;
        Self {
            max_uniform_bytes: device.limits().max_uniform_buffer_binding_size,
            shape: MlpShape::fastest(software),
            tables: TableStorage::fastest(software),
            ..Self::default()
        }
    }
}

/// A bundle's model as GPU data plus the WGSL that describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuModel {
    /// The `latents` storage buffer, as 32-bit words (write them little-endian); one zero word
    /// after the last grid, which a whole-word read of the last cell may touch.
    pub latent_words: Vec<u32>,
    /// The `mlp` buffer (uniform or storage, [`GpuModel::weight_memory`]): the dequantised
    /// weights as f32 bit patterns, four to a `vec4` ([`texset_core::model::wgsl::PackedLayer`]);
    /// in int8, [`PackedInt8`]'s words.
    pub mlp_words: Vec<u32>,
    /// The WGSL that replaces the template's block: constants, latent fetch and MLP.
    pub constants: String,
    /// Library-wide map index of each material's first map (map `m` of material `k` is
    /// `first_map[k] + m`).
    pub first_map: Vec<u32>,
    /// Where the shader reads the weights from.
    pub weight_memory: WeightMemory,
    /// Texels a compute invocation decodes (`BLOCK`).
    pub block: u32,
    /// The hidden layers' code shape.
    pub shape: MlpShape,
    /// The MLP's arithmetic ([`GpuModel::wgsl`] begins with its `enable` directive).
    pub precision: MlpPrecision,
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
pub(crate) fn f32_bits(value: f32) -> String {
    expr!("{:#010x}u", value.to_bits())
}

fn u32_array(e: &mut Emitter, tables: TableStorage, name: &str, values: &[u32]) {
    let items: Vec<String> = values.iter().map(|v| expr!("{v}u")).collect();
    tables.declare(e, name, &expr!("array<u32, {}>", values.len()), &items);
}

fn f32_array(e: &mut Emitter, tables: TableStorage, name: &str, values: &[f32]) {
    let items: Vec<String> = values.iter().map(|&v| f32_bits(v)).collect();
    tables.declare(e, name, &expr!("array<u32, {}>", values.len()), &items);
}

fn vec4_array(e: &mut Emitter, tables: TableStorage, name: &str, values: &[[f32; 4]]) {
    let items: Vec<String> = values.iter().map(|v| expr!("vec4<u32>({})", v.map(f32_bits).join(", "))).collect();
    tables.declare(e, name, &expr!("array<vec4<u32>, {}>", values.len()), &items);
}

impl GpuModel {
    /// Lays out a bundle for the shader with the portable defaults ([`GpuModelOptions::default`]):
    /// what `texset export-shader` writes.
    pub fn new(bundle: &Bundle) -> Result<Self, GpuError> {
        Self::with_options(bundle, GpuModelOptions::default())
    }

    /// Lays out a bundle for the shader. Fails when the model is wider than [`MAX_MLP_WIDTH`]
    /// (texset-core's limit, which training keeps to) or a buffer would not be addressable with
    /// 32-bit indices.
    pub fn with_options(bundle: &Bundle, options: GpuModelOptions) -> Result<Self, GpuError> {
        let manifest = &bundle.manifest;
        let max_width = mlp_max_width(manifest)?;
        let (latent_words, grid_word_offset) = pack_latents(bundle)?;

        // MLP: the weights the CPU reference multiplies by (`QuantizedLayer::dequantize`, as
        // `Bundle::model_params`), dequantised once, here, and packed for the generated code; in
        // int8, the hidden layers' codes as they are (`PackedInt8`).
        let (packed_layers, int8_layers, mlp_words) = if options.precision == MlpPrecision::Int8 {
            let packed = PackedInt8::new(&bundle.layers, manifest.activation());
            let words = packed.words();
            (packed.layers, packed.hidden, words)
        } else {
            let layers: Vec<_> = bundle.layers.iter().map(QuantizedLayer::dequantize).collect();
            let packed = pack_weights(&layers);
            let words = packed.words();
            (packed.layers, Vec::new(), words)
        };
        let mlp_vec4s = to_u32("MLP vec4s", mlp_words.len() / 4)?;
        let weight_memory = WeightMemory::for_limit(u64::from(mlp_vec4s) * 16, options.max_uniform_bytes);
        let block = options.block.clamp(1, 8);

        let latent_channels = manifest.latent_channels();
        let mask_words = latent_channels.div_ceil(32).max(1);
        let maps = MapTables::new(manifest, mask_words)?;
        let mut e = Emitter::new();
        shape_constants(&mut e, bundle, options.tables, [max_width, maps.output_offset.len(), mask_words], &grid_word_offset);
        maps.constants(&mut e, options.tables);
        e.verbatim(&mlp_input_wgsl(&manifest.input_layout(), &grid_fetches(manifest), mask_words as u32));
        let mlp = MlpWgsl {
            layers: &packed_layers,
            block,
            memory: weight_memory,
            vec4s: mlp_vec4s,
            group: 0,
            binding: 1,
            shape: options.shape,
            precision: options.precision,
            int8: &int8_layers,
            activation: manifest.activation(),
        };
        e.verbatim(&mlp.code());
        let constants = e.finish();
        let shape = options.shape.for_layers(&packed_layers);
        Ok(Self {
            latent_words,
            mlp_words,
            constants,
            first_map: maps.first_map,
            weight_memory,
            block,
            shape,
            precision: options.precision,
        })
    }

    /// The decoder WGSL specialised to this model: the template with its generated block
    /// replaced, after the model math it shares with the GPU trainer
    /// ([`texset_core::model::MODEL_WGSL`]).
    #[must_use]
    pub fn wgsl(&self) -> String {
        [self.precision.enable(), texset_core::model::MODEL_WGSL, "\n", &specialise(crate::DECODE_WGSL, &self.constants)].concat()
    }

    /// The decoder's functions alone, for an engine's own shader to include: [`GpuModel::wgsl`]
    /// up to the template's entry points (so without `GpuDecoder`'s `params`, `output` and
    /// `samples` bindings), with the two buffers it reads bound where `bindings` says. What
    /// `texset export-shader --functions-only` writes and texset-bevy's material compiles.
    #[must_use]
    pub fn functions_wgsl(&self, bindings: Bindings) -> String {
        let full = specialise(crate::DECODE_WGSL, &self.constants);
        let functions = full.find(ENTRY_POINTS_MARKER).map_or(full.as_str(), |end| &full[..end]);
        [self.precision.enable(), texset_core::model::MODEL_WGSL, "\n", &bindings.rebind(functions, FUNCTION_BUFFERS)].concat()
    }

    /// [`GpuModel::wgsl`] with its five buffers bound where `bindings` says (`latents` at its
    /// first binding, then `mlp`, `params`, `output` and `samples`).
    #[must_use]
    pub fn wgsl_bound(&self, bindings: Bindings) -> String {
        bindings.rebind(&self.wgsl(), ALL_BUFFERS)
    }
}

/// Where the decoder's buffers are bound ([`GpuModel::functions_wgsl`], [`GpuModel::wgsl_bound`]):
/// all in one group, in binding order from `latents` (`mlp` the next).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bindings {
    /// The bind group (0: `GpuDecoder`'s).
    pub group: u32,
    /// The binding of `latents` (0: `GpuDecoder`'s).
    pub first: u32,
}

impl Bindings {
    /// `source` with the declarations of its first `count` buffers (`@group(0) @binding(b) var`,
    /// as the template and the generated block write them) moved to `self.group`, binding
    /// `self.first + b`.
    fn rebind(self, source: &str, count: u32) -> String {
        let mut source = source.to_owned();
        if self != Self::default() {
            for b in 0..count {
                source = source.replacen(&binding_attributes(0, b), &binding_attributes(self.group, self.first + b), 1);
            }
        }
        source
    }
}

/// The line of `decode.wgsl` after which its entry points and their bindings begin.
const ENTRY_POINTS_MARKER: &str = "// texset:entry-points\n";
/// The buffers the decoder's functions read: `latents` and `mlp`.
const FUNCTION_BUFFERS: u32 = 2;
/// Every buffer of the whole decoder: `latents`, `mlp`, `params`, `output`, `samples`.
pub(crate) const ALL_BUFFERS: u32 = 5;

/// The widest vector the decoder holds: the MLP inputs or a hidden layer's outputs, refused over
/// [`MAX_MLP_WIDTH`].
fn mlp_max_width(manifest: &Manifest) -> Result<usize, GpuError> {
    let mut max_width = manifest.mlp_inputs();
    if let Some((_, hidden)) = manifest.layers.split_last() {
        for layer in hidden {
            max_width = max_width.max(layer.outputs as usize);
        }
    }
    if max_width > MAX_MLP_WIDTH {
        return Err(GpuError::ModelTooLarge { what: "MLP width", got: max_width, limit: MAX_MLP_WIDTH });
    }
    Ok(max_width)
}

/// The `latents` buffer's words and each grid's first word: every pyramid level's grids (level 0
/// first) from a word boundary, then one zero word.
fn pack_latents(bundle: &Bundle) -> Result<(Vec<u32>, Vec<u32>), GpuError> {
    let mut latent_words = Vec::new();
    let mut grid_word_offset = Vec::new();
    // A pyramid grid has its level-0 grid's channels, bits and range.
    for (grid, levels) in bundle.manifest.all_grids().zip(&bundle.latent_levels) {
        grid_word_offset.push(to_u32("latent words", latent_words.len())?);
        pack_words(levels, grid.bits, &mut latent_words);
    }
    // The word after the last cell's, which its whole-word read loads (and shifts out).
    latent_words.push(0);
    to_u32("latent words", latent_words.len())?;
    Ok((latent_words, grid_word_offset))
}

/// The model's shape as WGSL constants (`GRID_COUNT` to `MASK_WORDS`, and core's
/// `LOD_INPUT_SCALE`) and the grid tables
/// (`GRID_WIDTH`, `GRID_HEIGHT`, `GRID_WORD_OFFSET`, every pyramid level's grids).
fn shape_constants(
    e: &mut Emitter,
    bundle: &Bundle,
    tables: TableStorage,
    [max_width, map_count, mask_words]: [usize; 3],
    grid_word_offset: &[u32],
) {
    let manifest = &bundle.manifest;
    let all_grids: Vec<_> = manifest.all_grids().collect();
    e.constant_u32("GRID_COUNT", manifest.grids.len());
    e.constant_u32("PYRAMID_LEVELS", manifest.pyramid_levels());
    e.constant_u32("MIP_GROUP", manifest.mip_group());
    e.constant_f32("LOD_INPUT_SCALE", texset_core::model::LOD_INPUT_SCALE);
    e.constant_u32("PE_FREQUENCIES", manifest.pe_frequencies);
    e.constant_u32("LAYER_COUNT", bundle.layers.len());
    e.constant_u32("MAX_WIDTH", max_width);
    e.constant_u32("MAP_COUNT", map_count);
    e.constant_u32("MASK_WORDS", mask_words);
    u32_array(e, tables, "GRID_WIDTH", &all_grids.iter().map(|g| g.width).collect::<Vec<_>>());
    u32_array(e, tables, "GRID_HEIGHT", &all_grids.iter().map(|g| g.height).collect::<Vec<_>>());
    u32_array(e, tables, "GRID_WORD_OFFSET", grid_word_offset);
}

/// The per-map tables of the `MAP_*` constants: every material's maps, in library order.
#[derive(Default)]
struct MapTables {
    /// Library-wide index of each material's first map.
    first_map: Vec<u32>,
    output_offset: Vec<u32>,
    channels: Vec<u32>,
    mip_levels: Vec<u32>,
    width: Vec<u32>,
    height: Vec<u32>,
    /// `mask_words` words per map: bit `c` set for each latent channel `c` it reads.
    mask: Vec<u32>,
    srgb: Vec<u32>,
    /// 0: not a normal map; 1: OpenGL; 2: DirectX.
    normal: Vec<u32>,
    low: Vec<[f32; 4]>,
    scale: Vec<[f32; 4]>,
    transform: Vec<u32>,
    /// 20 values per map: four colour-transform rows of five.
    transform_rows: Vec<f32>,
}

impl MapTables {
    /// The tables of every map of `manifest`, with budget masks of `mask_words` words.
    fn new(manifest: &Manifest, mask_words: usize) -> Result<Self, GpuError> {
        let mut tables = Self::default();
        for material in &manifest.materials {
            tables.first_map.push(to_u32("maps", tables.output_offset.len())?);
            for map in &material.maps {
                tables.push(map, manifest.map_mip_levels(map), mask_words);
            }
        }
        Ok(tables)
    }

    /// Appends `map`, which decodes at `mip_levels` levels.
    fn push(&mut self, map: &MapEntry, mip_levels: u32, mask_words: usize) {
        self.output_offset.push(map.output_offset);
        self.channels.push(map.info.channels);
        self.width.push(map.info.width);
        self.height.push(map.info.height);
        self.mip_levels.push(mip_levels);
        let mut words = vec![0u32; mask_words];
        for &c in &map.latent_channels {
            if let Some(word) = words.get_mut(c as usize / 32) {
                *word |= 1 << (c % 32);
            }
        }
        self.mask.extend(words);
        self.srgb.push(u32::from(map.info.color_space == ColorSpace::Srgb));
        self.normal.push(match (map.info.kind, map.info.normal_convention) {
            (MapKind::Normal, NormalConvention::OpenGl) => 1,
            (MapKind::Normal, NormalConvention::DirectX) => 2,
            _ => 0,
        });
        let mut l = [0.0; 4];
        let mut s = [1.0; 4];
        for (c, range) in map.info.channel_ranges.iter().enumerate().take(4) {
            l[c] = range[0];
            s[c] = range[1] - range[0];
        }
        self.low.push(l);
        self.scale.push(s);
        let mut rows = [0.0f32; 20];
        if let Some(t) = &map.color_transform {
            for (c, row) in t.iter().enumerate().take(4) {
                rows[c * 5..c * 5 + 5].copy_from_slice(row);
            }
        }
        self.transform.push(u32::from(map.color_transform.is_some()));
        self.transform_rows.extend(rows);
    }

    /// The tables as WGSL constants (or private arrays), `MAP_OUTPUT_OFFSET` to
    /// `MAP_TRANSFORM_BITS`.
    fn constants(&self, e: &mut Emitter, tables: TableStorage) {
        for (name, values) in [
            ("MAP_OUTPUT_OFFSET", &self.output_offset),
            ("MAP_CHANNELS", &self.channels),
            ("MAP_MIP_LEVELS", &self.mip_levels),
            ("MAP_WIDTH", &self.width),
            ("MAP_HEIGHT", &self.height),
            ("MAP_MASK", &self.mask),
            ("MAP_SRGB", &self.srgb),
            ("MAP_NORMAL", &self.normal),
        ] {
            u32_array(e, tables, name, values);
        }
        vec4_array(e, tables, "MAP_RANGE_LOW_BITS", &self.low);
        vec4_array(e, tables, "MAP_RANGE_SCALE_BITS", &self.scale);
        u32_array(e, tables, "MAP_TRANSFORM", &self.transform);
        f32_array(e, tables, "MAP_TRANSFORM_BITS", &self.transform_rows);
    }
}

/// Replaces the constants block of the template (between the marker lines) by `constants`.
fn specialise(template: &str, constants: &str) -> String {
    match (template.find(BEGIN_MARKER), template.find(END_MARKER)) {
        (Some(begin), Some(end)) if begin < end => {
            let body_start = begin + BEGIN_MARKER.len();
            [&template[..body_start], constants, &template[end..]].concat()
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
    use std::fmt::Write as _;

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

    /// The template's own block is what the generator writes for the test kit's tiny bundle (with
    /// one hidden layer of 8, to keep decode.wgsl under 700 lines), so
    /// the template that validates alone is the code every bundle gets. On a change of the
    /// generator, the message holds the block to paste.
    #[test]
    #[allow(clippy::unwrap_used, reason = "a test: a failure is the message")]
    fn template_block_is_generated() {
        let model = GpuModel::new(&texset_testkit::tiny_bundle_with_widths(&[8])).unwrap();
        let template = crate::DECODE_WGSL;
        let begin = template.find(BEGIN_MARKER).unwrap() + BEGIN_MARKER.len();
        let end = template.find(END_MARKER).unwrap();
        if template[begin..end] != model.constants {
            let path = std::env::temp_dir().join("texset-decode-block.wgsl");
            std::fs::write(&path, &model.constants).unwrap();
            panic!("decode.wgsl's generated block is stale: the new one is in {}", path.display());
        }
    }

    /// Private tables hold the constants' values, declared as module-scope private arrays, and
    /// the whole program still validates (naga) with them.
    #[test]
    #[allow(clippy::unwrap_used, reason = "a test: a failure is the message")]
    fn private_tables_hold_the_constants_values() {
        let bundle = texset_testkit::tiny_bundle_with_mips(3);
        let constant = GpuModel::new(&bundle).unwrap().wgsl();
        let options = GpuModelOptions { tables: TableStorage::Private, ..GpuModelOptions::default() };
        let private = GpuModel::with_options(&bundle, options).unwrap().wgsl();
        assert!(constant.contains("const MAP_WIDTH = array<u32, ") && !constant.contains("var<private>"));
        let tables = private.matches("var<private> ").count();
        assert_eq!(tables, 15, "the twelve MAP_* and three GRID_* tables");
        // `var<private> NAME: TYPE = TYPE(` → `const NAME = TYPE(`: the constant program.
        let mut undone = String::new();
        for line in private.lines() {
            match line.strip_prefix("var<private> ").and_then(|rest| rest.split_once(": ")) {
                Some((name, rest)) => {
                    let (ty, values) = rest.split_once(" = ").unwrap();
                    assert!(values.starts_with(ty), "{line}");
                    let _ = writeln!(undone, "const {name} = {values}");
                }
                None => {
                    let _ = writeln!(undone, "{line}");
                }
            }
        }
        assert_eq!(undone.trim_end(), constant.trim_end());
        let module = naga::front::wgsl::parse_str(&private).unwrap();
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::default()).validate(&module).unwrap();
    }

    /// The whole-word latent fetch reads, for every bit depth and record width, the level the
    /// bit-by-bit reader reads: the generated expressions, evaluated here as the shader does.
    #[test]
    fn whole_word_reads_match_bit_reads() {
        for bits in 1..=8u32 {
            for channels in [1u32, 3, 4, 5, 8, 12, 16] {
                let cells = 37u32;
                let levels: Vec<u8> = (0..cells * channels).map(|i| ((i * 37 + 11) % (1 << bits)) as u8).collect();
                let mut words = vec![0x5555_5555];
                pack_words(&levels, bits, &mut words);
                words.push(0);
                let record = channels * bits;
                for cell in 0..cells {
                    let bit = cell * record;
                    let at = 1 + (bit >> 5) as usize;
                    let s = bit & 31;
                    let aligned: Vec<u32> =
                        (0..record.div_ceil(32) as usize).map(|j| (words[at + j] >> s) | ((words[at + j + 1] << 1) << (31 - s))).collect();
                    for c in 0..channels {
                        let pos = c * bits;
                        let (j, off) = ((pos / 32) as usize, pos % 32);
                        let mut v = aligned[j] >> off;
                        if off + bits > 32 {
                            v |= aligned[j + 1] << (32 - off);
                        }
                        let want = u32::from(levels[(cell * channels + c) as usize]);
                        assert_eq!(v & ((1 << bits) - 1), want, "bits {bits}, channels {channels}, cell {cell}, channel {c}");
                    }
                }
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
