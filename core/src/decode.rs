//! The CPU decoder: random access to any texel of any map through the scalar reference
//! ([`crate::model::reference`], the specification the GPU shader must match), or whole maps
//! through the batched SIMD path ([`crate::model::batched`]: the same features, the MLP a block of
//! texels at a time; within a few ulps of the reference, tested). Plain Rust (rayon for whole
//! maps); no burn.

use crate::bundle::{Bundle, Manifest, MapEntry};
use crate::model::InputLayout;
use crate::model::batched::{forward_layer, padded_len};
use crate::model::params::ModelParams;
use crate::model::reference::{MlpScratch, features_in, mlp_forward};
use crate::model::wgsl::PackedInt8;
use crate::set::srgb_to_linear;
use crate::set::{ColorSpace, MapKind, NormalConvention};
use rayon::prelude::*;

/// A decode request that does not fit the bundle.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// No such material.
    #[error("material index {0} is out of range")]
    NoMaterial(usize),
    /// No such map.
    #[error("map index {map} is out of range for material '{material}'")]
    NoMap {
        /// Material name.
        material: String,
        /// Map index.
        map: usize,
    },
    /// The output buffer is too small.
    #[error("output buffer holds {got} values, the map has {needed} channels")]
    BufferTooSmall {
        /// Needed.
        needed: usize,
        /// Given.
        got: usize,
    },
    /// Decoding the bundle would take more than the [`DecodeLimits`] allow.
    #[error("the bundle asks for {needed} {what} to decode, over this decoder's limit of {limit} (a flag or setting raises it)")]
    OverBudget {
        /// What ran over: "bytes of decoded values" or "multiply-adds".
        what: &'static str,
        /// What the bundle's manifest declares.
        needed: u64,
        /// The limit.
        limit: u64,
    },
}

/// How much a [`Decoder`] may decode ([`Decoder::with_limits`]): checked against what the
/// bundle's manifest declares before anything is dequantised or decoded, so a small bundle that
/// declares huge maps or a huge decoder is refused at once (the reader's own limits,
/// [`crate::bundle::limits`], allow 16 GiB of decoded values). docs/reliability.md states the
/// defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeLimits {
    /// Most bytes of decoded values (f32) over every map of the library: level 0 and, where the
    /// bundle stores one, the whole mip chain.
    pub max_decoded_bytes: u64,
    /// Most multiply-adds of the decoder's MLP over all those texels.
    pub max_multiply_adds: u64,
}

impl DecodeLimits {
    /// The studio's and texset-bevy's: 1 GiB of decoded values and 2^40 multiply-adds (a few
    /// minutes of the CPU decoder on two cores at most).
    pub const INTERACTIVE: Self = Self { max_decoded_bytes: 1 << 30, max_multiply_adds: 1 << 40 };
    /// The command line's default: 8 GiB of decoded values and 2^44 multiply-adds
    /// (`--max-decode-gib` raises the first, the second with it).
    pub const COMMAND_LINE: Self = Self { max_decoded_bytes: 8 << 30, max_multiply_adds: 1 << 44 };

    /// These limits with room for `gib` GiB of decoded values, multiply-adds scaled alike.
    #[must_use]
    pub fn with_decoded_gib(self, gib: u64) -> Self {
        let bytes = gib.saturating_mul(1 << 30);
        let ratio = (self.max_multiply_adds / self.max_decoded_bytes.max(1)).max(1);
        Self { max_decoded_bytes: bytes, max_multiply_adds: bytes.saturating_mul(ratio) }
    }

    /// What decoding every map of `manifest` costs: `(bytes of decoded f32 values, multiply-adds
    /// of its MLP)`, from the manifest alone.
    #[must_use]
    pub fn cost(manifest: &Manifest) -> (u64, u64) {
        let macs_per_texel = manifest.multiply_adds_per_texel();
        let (mut values, mut texels) = (0u64, 0u64);
        for map in manifest.materials.iter().flat_map(|m| &m.maps) {
            for level in 0..manifest.map_mip_levels(map) {
                let (w, h) = crate::model::level_size(map.info.width, map.info.height, level);
                let level_texels = u64::from(w) * u64::from(h);
                texels = texels.saturating_add(level_texels);
                values = values.saturating_add(level_texels.saturating_mul(u64::from(map.info.channels)));
            }
        }
        (values.saturating_mul(4), texels.saturating_mul(macs_per_texel))
    }

    /// Refuses `manifest` if decoding it runs over these limits.
    pub fn check(&self, manifest: &Manifest) -> Result<(), DecodeError> {
        let (bytes, macs) = Self::cost(manifest);
        if bytes > self.max_decoded_bytes {
            return Err(DecodeError::OverBudget { what: "bytes of decoded values", needed: bytes, limit: self.max_decoded_bytes });
        }
        if macs > self.max_multiply_adds {
            return Err(DecodeError::OverBudget { what: "multiply-adds", needed: macs, limit: self.max_multiply_adds });
        }
        Ok(())
    }
}

/// A decoded map: normalised values in `[0, 1]`, interleaved `[y][x][c]`.
#[derive(Clone, Debug, PartialEq)]
pub struct DecodedMap {
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
    /// Channels.
    pub channels: u32,
    /// Values.
    pub values: Vec<f32>,
}

/// A decoded value in `[0, 1]` as an 8-bit unorm byte (clamped, rounded to nearest): what `texset
/// decode` writes for 8-bit sources, what the BC encoder and FLIP read, and the texels of
/// texset-bevy's uncompressed images.
#[must_use]
pub fn unorm8(value: f32) -> u8 {
    (value.clamp(0.0, 1.0) * 255.0).round() as u8
}

/// A decoded value in `[0, 1]` as a 16-bit unorm (clamped, rounded to nearest): what `texset
/// decode` writes for 16-bit sources, and the C API's 16-bit texels.
#[must_use]
pub fn unorm16(value: f32) -> u16 {
    (value.clamp(0.0, 1.0) * 65535.0).round() as u16
}

/// Un-maps a decoded texel (`t`: stored values in `[0, 1]`, channels beyond the map's count 0)
/// into the values a shader lights with: the channel range applied (`low + (high − low)·t`, which
/// restores float sources), sRGB colour channels (the first three) converted to linear, and a
/// normal map's `xyz` as a unit vector in the +Y (OpenGL) convention whatever the source's was.
/// The WGSL `decode_texel_linear` is the GPU twin of this function.
#[must_use]
pub fn unmap(entry: &MapEntry, t: [f32; 4]) -> [f32; 4] {
    let mut v = [0.0; 4];
    let channels = (entry.info.channels as usize).min(4);
    for (c, value) in v.iter_mut().enumerate() {
        *value = entry.info.scaled(c, t[c]);
    }
    if entry.info.color_space == ColorSpace::Srgb {
        for value in v.iter_mut().take(channels.min(3)) {
            *value = srgb_to_linear(*value);
        }
    }
    if entry.info.kind == MapKind::Normal {
        let mut n = [v[0] * 2.0 - 1.0, v[1] * 2.0 - 1.0, v[2] * 2.0 - 1.0];
        if entry.info.normal_convention == NormalConvention::DirectX {
            n[1] = -n[1];
        }
        let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
        if len > 0.0 {
            n = n.map(|x| x / len);
        }
        v = [n[0], n[1], n[2], v[3]];
    }
    v
}

/// Decodes texels from a bundle on the CPU.
pub struct Decoder {
    manifest: Manifest,
    params: ModelParams,
    /// The latent-channel masks of the distinct channel budgets.
    masks: Vec<Vec<f32>>,
    /// Each map's mask in `masks`, by material and map.
    mask_of: Vec<Vec<usize>>,
    /// The MLP's input layout.
    layout: InputLayout,
    /// The MLP of the GPU's packed-int8 path instead of the reference's ([`Decoder::int8_twin`]).
    int8: Option<PackedInt8>,
}

impl Decoder {
    /// Prepares a bundle for decoding within `limits`: refused, before anything is dequantised,
    /// if decoding all of it would run over them ([`DecodeLimits::check`]). What a bundle from
    /// elsewhere (a file, a download, a mod) should be opened with; [`Decoder::new`] is for
    /// bundles this process made.
    pub fn with_limits(bundle: &Bundle, limits: DecodeLimits) -> Result<Self, DecodeError> {
        limits.check(&bundle.manifest)?;
        Ok(Self::new(bundle))
    }

    /// Prepares a bundle for decoding (dequantises latents and weights once), with no limit
    /// beyond the reader's own.
    #[must_use]
    pub fn new(bundle: &Bundle) -> Self {
        // One mask per distinct channel budget, shared by the maps that have it: the masks take
        // memory in proportion to the budgets the manifest spells out, not to maps × channels.
        let lc = bundle.manifest.latent_channels();
        let mut masks: Vec<Vec<f32>> = Vec::new();
        let mut budgets: std::collections::HashMap<&[u32], usize> = std::collections::HashMap::new();
        let mask_of = bundle
            .manifest
            .materials
            .iter()
            .map(|m| {
                m.maps
                    .iter()
                    .map(|map| {
                        *budgets.entry(&map.latent_channels).or_insert_with(|| {
                            let mut mask = vec![0.0; lc];
                            for &c in &map.latent_channels {
                                if let Some(v) = mask.get_mut(c as usize) {
                                    *v = 1.0;
                                }
                            }
                            masks.push(mask);
                            masks.len() - 1
                        })
                    })
                    .collect()
            })
            .collect();
        let params = bundle.model_params();
        Self { manifest: bundle.manifest.clone(), layout: params.input_layout(), params, masks, mask_of, int8: None }
    }

    /// A decoder whose MLP computes as the GPU decoder's packed-int8 path does
    /// ([`crate::model::wgsl::MlpPrecision::Int8`]: int8 activations, [`PackedInt8::forward`]):
    /// its CPU twin, to test that path against and to measure what it trades. Slower than
    /// [`Decoder::new`]: one texel at a time.
    #[must_use]
    pub fn int8_twin(bundle: &Bundle) -> Self {
        Self { int8: Some(PackedInt8::new(&bundle.layers, bundle.manifest.activation())), ..Self::new(bundle) }
    }

    /// The bundle's manifest.
    #[must_use]
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The dequantised model.
    #[must_use]
    pub fn params(&self) -> &ModelParams {
        &self.params
    }

    /// The latent-channel mask of a (checked) map.
    fn mask(&self, material: usize, map: usize) -> &[f32] {
        &self.masks[self.mask_of[material][map]]
    }

    fn check(&self, material: usize, map: usize) -> Result<(), DecodeError> {
        let mat = self.manifest.materials.get(material).ok_or(DecodeError::NoMaterial(material))?;
        if map >= mat.maps.len() {
            return Err(DecodeError::NoMap { material: mat.name.clone(), map });
        }
        Ok(())
    }

    /// Decodes every channel of one map at `(u, v)` into `out` (normalised `[0, 1]`), mip 0.
    pub fn decode_texel(&self, material: usize, map: usize, u: f32, v: f32, out: &mut [f32]) -> Result<(), DecodeError> {
        self.decode_texel_lod(material, map, u, v, 0.0, out)
    }

    /// Mip levels a map decodes at: its full chain when the bundle stores one, else 1.
    pub fn map_mip_levels(&self, material: usize, map: usize) -> Result<u32, DecodeError> {
        self.check(material, map)?;
        Ok(self.manifest.map_mip_levels(&self.manifest.materials[material].maps[map]))
    }

    /// Decodes every channel of one map at `(u, v)` and level of detail `lod` into `out`
    /// (normalised `[0, 1]`): `lod` is clamped to the map's mip levels
    /// ([`Self::map_mip_levels`]); a fractional `lod` blends the two levels around it (trilinear
    /// filtering of decoded texels). A bundle without a mip chain decodes level 0 at any `lod`.
    pub fn decode_texel_lod(&self, material: usize, map: usize, u: f32, v: f32, lod: f32, out: &mut [f32]) -> Result<(), DecodeError> {
        let top = self.map_mip_levels(material, map)? - 1;
        let entry = &self.manifest.materials[material].maps[map];
        let channels = entry.info.channels as usize;
        if out.len() < channels {
            return Err(DecodeError::BufferTooSmall { needed: channels, got: out.len() });
        }
        let lod = if lod.is_nan() { 0.0 } else { lod.clamp(0.0, top as f32) };
        let below = lod.floor() as u32;
        let blend = lod - below as f32;
        let mut t = self.decode_level_texel(material, map, u, v, below);
        if blend > 0.0 {
            let above = self.decode_level_texel(material, map, u, v, (below + 1).min(top));
            for (a, b) in t.iter_mut().zip(above) {
                *a += (b - *a) * blend;
            }
        }
        out[..channels].copy_from_slice(&t[..channels]);
        Ok(())
    }

    /// One map at one integer level, clamped outputs with its colour transform (checked indices).
    fn decode_level_texel(&self, material: usize, map: usize, u: f32, v: f32, level: u32) -> [f32; 4] {
        let entry = &self.manifest.materials[material].maps[map];
        let channels = entry.info.channels as usize;
        let mut features = vec![0.0; self.layout.width()];
        features_in(&self.layout, &self.params, u, v, level, self.mask(material, map), &mut features);
        let mut scratch = MlpScratch::default();
        let int8;
        let y = match &self.int8 {
            Some(packed) => {
                int8 = packed.forward(&features);
                &int8[..]
            }
            None => mlp_forward(&self.params, &features, &mut scratch),
        };
        let offset = entry.output_offset as usize;
        let mut t = [0.0f32; 4];
        for (o, value) in t.iter_mut().zip(&y[offset..offset + channels]) {
            *o = value.clamp(0.0, 1.0);
        }
        entry.apply_color_transform(&mut t);
        t
    }

    /// Decodes one map at `(u, v)` and un-maps it for shading ([`unmap`]): up to 4 values.
    pub fn decode_texel_linear(&self, material: usize, map: usize, u: f32, v: f32) -> Result<[f32; 4], DecodeError> {
        let mut t = [0.0; 4];
        self.decode_texel(material, map, u, v, &mut t)?;
        Ok(unmap(&self.manifest.materials[material].maps[map], t))
    }

    /// Decodes one whole map at its own resolution.
    pub fn decode_map(&self, material: usize, map: usize) -> Result<DecodedMap, DecodeError> {
        self.decode_map_level(material, map, 0)
    }

    /// Decodes mip level `level` of one map (its size halved `level` times, rounding down, at
    /// least 1×1). Without a mip chain in the bundle every level decodes level 0's latents at the
    /// smaller size, which aliases: check [`Self::map_mip_levels`].
    pub fn decode_map_level(&self, material: usize, map: usize, level: u32) -> Result<DecodedMap, DecodeError> {
        self.check(material, map)?;
        let mut maps = self.decode_maps(material, &[map], level)?;
        maps.pop().ok_or(DecodeError::NoMaterial(material))
    }

    /// Decodes every map of a material. Maps that share a resolution and a channel budget are
    /// decoded together: one MLP evaluation per texel serves all of them.
    pub fn decode_material(&self, material: usize) -> Result<Vec<DecodedMap>, DecodeError> {
        self.decode_material_level(material, 0)
    }

    /// Decodes mip level `level` of every map of a material (see [`Self::decode_map_level`]).
    pub fn decode_material_level(&self, material: usize, level: u32) -> Result<Vec<DecodedMap>, DecodeError> {
        let count = self.manifest.materials.get(material).ok_or(DecodeError::NoMaterial(material))?.maps.len();
        let all: Vec<usize> = (0..count).collect();
        self.decode_maps(material, &all, level)
    }

    /// Decodes mip level `level` of every map of a material in bands of rows, for a writer that
    /// streams: memory grows with a band (about `band_texels` texels of every map decoded
    /// together), not with a map's size. `sink(map, first_row, band)` gets each map's rows in
    /// order, top first, `band.height` rows from `first_row`; a map is whole once `first_row +
    /// band.height` reaches its height. Maps that share a resolution and a channel budget come band
    /// by band together (one MLP evaluation per texel serves all of them), then the next such group.
    pub fn decode_material_bands<E: From<DecodeError>>(
        &self,
        material: usize,
        level: u32,
        band_texels: usize,
        mut sink: impl FnMut(usize, u32, DecodedMap) -> Result<(), E>,
    ) -> Result<(), E> {
        let count = self.manifest.materials.get(material).ok_or(DecodeError::NoMaterial(material))?.maps.len();
        let all: Vec<usize> = (0..count).collect();
        for group in self.groups(material, &all) {
            let entry = &self.manifest.materials[material].maps[group[0]];
            let (width, height) = crate::model::mips::level_size(entry.info.width, entry.info.height, level);
            let band_rows = (band_texels / width.max(1) as usize).clamp(1, height as usize) as u32;
            for first_row in (0..height).step_by(band_rows as usize) {
                let rows = first_row..(first_row + band_rows).min(height);
                for (map, band) in group.iter().zip(self.decode_rows(material, &group, level, rows)) {
                    sink(*map, first_row, band)?;
                }
            }
        }
        Ok(())
    }

    fn decode_maps(&self, material: usize, maps: &[usize], level: u32) -> Result<Vec<DecodedMap>, DecodeError> {
        for &m in maps {
            self.check(material, m)?;
        }
        let mut out: Vec<Option<DecodedMap>> = vec![None; maps.len()];
        for group in self.groups(material, maps) {
            let entry = &self.manifest.materials[material].maps[group[0]];
            let (_, height) = crate::model::mips::level_size(entry.info.width, entry.info.height, level);
            for (map, decoded) in group.iter().zip(self.decode_rows(material, &group, level, 0..height)) {
                if let Some(slot) = maps.iter().position(|m| m == map).and_then(|i| out.get_mut(i)) {
                    *slot = Some(decoded);
                }
            }
        }
        out.into_iter().map(|m| m.ok_or(DecodeError::NoMaterial(material))).collect()
    }

    /// `maps` (checked indices of one material) grouped by resolution and channel budget, each
    /// group in the order of `maps`, duplicates dropped.
    fn groups(&self, material: usize, maps: &[usize]) -> Vec<Vec<usize>> {
        let entries = &self.manifest.materials[material].maps;
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for &m in maps {
            let e = &entries[m];
            match groups.iter_mut().find(|g| {
                let k = &entries[g[0]];
                k.info.width == e.info.width && k.info.height == e.info.height && k.latent_channels == e.latent_channels
            }) {
                Some(g) if !g.contains(&m) => g.push(m),
                Some(_) => {}
                None => groups.push(vec![m]),
            }
        }
        groups
    }

    /// Rows `rows` of level `level` of the maps `group` (checked indices of one material that share
    /// a resolution and a channel budget: [`Self::groups`]), one band each.
    fn decode_rows(&self, material: usize, group: &[usize], level: u32, rows: std::ops::Range<u32>) -> Vec<DecodedMap> {
        let entries = &self.manifest.materials[material].maps;
        let key = &entries[group[0]];
        let (width, height) = crate::model::mips::level_size(key.info.width, key.info.height, level);
        let (width, height) = (width as usize, height as usize);
        // A level past the map's own chain is its last (1×1) level, as `decode_texel_lod` and the
        // WGSL clamp it.
        let level = level.min(crate::model::params::full_mip_count(key.info.width, key.info.height) - 1);
        let mask = self.mask(material, group[0]);
        let decoded: Vec<Vec<Vec<f32>>> = (rows.start as usize..rows.end as usize)
            .into_par_iter()
            .map(|y| {
                let mut row_out: Vec<Vec<f32>> =
                    group.iter().map(|&m| Vec::with_capacity(width * entries[m].info.channels as usize)).collect();
                let v = (y as f32 + 0.5) / height as f32;
                let mut block = BlockScratch::new(&self.params, &self.layout);
                for x0 in (0..width).step_by(DECODE_BLOCK_TEXELS) {
                    let count = DECODE_BLOCK_TEXELS.min(width - x0);
                    let texel_u = |i: usize| ((x0 + i) as f32 + 0.5) / width as f32;
                    let (y_all, np) = block.decode(&self.params, self.int8.as_ref(), count, texel_u, v, level, mask);
                    for i in 0..count {
                        for (r, &m) in row_out.iter_mut().zip(group) {
                            let e = &entries[m];
                            let (o, ch) = (e.output_offset as usize, e.info.channels as usize);
                            let mut t = [0.0f32; 4];
                            for (c, dst) in t.iter_mut().enumerate().take(ch) {
                                *dst = y_all[(o + c) * np + i].clamp(0.0, 1.0);
                            }
                            e.apply_color_transform(&mut t);
                            r.extend_from_slice(&t[..ch]);
                        }
                    }
                }
                row_out
            })
            .collect();
        let band_rows = rows.len();
        let mut bands: Vec<DecodedMap> = group
            .iter()
            .map(|&m| DecodedMap {
                width: width as u32,
                height: band_rows as u32,
                channels: entries[m].info.channels,
                values: Vec::with_capacity(width * band_rows * entries[m].info.channels as usize),
            })
            .collect();
        for row in decoded {
            for (band, r) in bands.iter_mut().zip(row) {
                band.values.extend_from_slice(&r);
            }
        }
        bands
    }
}

/// Texels of one row decoded together by the batched path (a multiple of the kernels' tile).
const DECODE_BLOCK_TEXELS: usize = 128;

/// The batched path's buffers for one block of texels: the features and every layer's output,
/// feature-major (`[feature][texel]`).
struct BlockScratch {
    features: Vec<f32>,
    texel: Vec<f32>,
    layers: Vec<Vec<f32>>,
    /// The MLP's input layout.
    layout: InputLayout,
}

impl BlockScratch {
    fn new(params: &ModelParams, layout: &InputLayout) -> Self {
        let np = padded_len(DECODE_BLOCK_TEXELS);
        Self {
            features: vec![0.0; layout.width() * np],
            texel: vec![0.0; layout.width()],
            layers: params.layers.iter().map(|l| vec![0.0; l.outputs * np]).collect(),
            layout: layout.clone(),
        }
    }

    /// Decodes `count` texels at `(u(i), v)` of pyramid level `level` with channel mask `mask`:
    /// the reference's features ([`features_in`], bit-identical), then the MLP through the
    /// batched kernels (or, with `int8`, texel by texel through [`PackedInt8::forward`]). Returns
    /// every output channel, unclamped, `[output][np]`, and `np`.
    #[expect(clippy::too_many_arguments, reason = "one private helper of the row loop, each argument a different axis")]
    fn decode(
        &mut self,
        params: &ModelParams,
        int8: Option<&PackedInt8>,
        count: usize,
        u: impl Fn(usize) -> f32,
        v: f32,
        level: u32,
        mask: &[f32],
    ) -> (&[f32], usize) {
        let np = padded_len(count);
        let inputs = self.layout.width();
        if let (Some(int8), Some(out)) = (int8, self.layers.last_mut()) {
            for i in 0..count {
                features_in(&self.layout, params, u(i), v, level, mask, &mut self.texel);
                for (o, y) in int8.forward(&self.texel).into_iter().enumerate() {
                    out[o * np + i] = y;
                }
            }
            return (&self.layers[self.layers.len() - 1][..], np);
        }
        let features = &mut self.features[..inputs * np];
        features.fill(0.0);
        for i in 0..count {
            features_in(&self.layout, params, u(i), v, level, mask, &mut self.texel);
            for (k, &f) in self.texel.iter().enumerate() {
                features[k * np + i] = f;
            }
        }
        let last = params.layers.len().saturating_sub(1);
        for (l, layer) in params.layers.iter().enumerate() {
            let (done, rest) = self.layers.split_at_mut(l);
            let input: &[f32] = if l == 0 { &self.features[..inputs * np] } else { &done[l - 1][..layer.inputs * np] };
            let act = (l != last).then_some(params.activation);
            forward_layer(&layer.weights, &layer.biases, layer.inputs, input, np, act, None, &mut rest[0][..layer.outputs * np]);
        }
        (self.layers.last().map_or(&[][..], |y| &y[..]), np)
    }
}
