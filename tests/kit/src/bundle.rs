//! A small hand-built bundle for the GPU tests (texset-shaders') and the limits both sides share.

use texset_core::{
    bundle::{Bundle, GridEntry, LayerEntry, Manifest, MapEntry, MaterialEntry},
    model::{Activation, QuantizedLayer, WeightFormat, inputs_per_channel, mip_grid_side},
    set::{ColorSpace, MapInfo, MapKind, NormalConvention, SampleFormat},
};

/// A small deterministic generator (`SplitMix64`): the hand-built bundles' values and the forge's.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[-1, 1)`.
    pub(crate) fn signed(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

fn map(
    kind: MapKind,
    width: u32,
    height: u32,
    channels: u32,
    color_space: ColorSpace,
    output_offset: u32,
    latent_channels: Vec<u32>,
) -> MapEntry {
    MapEntry {
        info: MapInfo {
            kind,
            width,
            height,
            channels,
            sample_format: SampleFormat::U8,
            color_space,
            normal_convention: NormalConvention::OpenGl,
            channel_ranges: vec![[0.0, 1.0]; channels as usize],
        },
        output_offset,
        latent_channels,
        source_file: format!("m_{kind}.png"),
        color_transform: None,
    }
}

/// `entry` with its map description changed by `change`.
fn with_info(mut entry: MapEntry, change: impl FnOnce(&mut MapInfo)) -> MapEntry {
    change(&mut entry.info);
    entry
}

/// A two-material library with varied grids (4- and 3-bit), budgets, colour spaces, a DirectX
/// normal map and a float-range map; validated by the bundle writer.
#[must_use]
pub fn tiny_bundle() -> Bundle {
    tiny_bundle_with_mips(1)
}

/// [`tiny_bundle`] with a latent pyramid of `mip_levels` levels (1: none) and the LOD input.
#[must_use]
pub fn tiny_bundle_with_mips(mip_levels: u32) -> Bundle {
    build(mip_levels, 1, &[16, 12], 2, false, &[])
}

/// [`tiny_bundle`] with `frequencies` positional-encoding frequencies: at 10, the highest one's
/// angle reaches pi * 2^9 * 9 (about 14,500 rad) across grid 0.
#[must_use]
pub fn tiny_bundle_with_pe_frequencies(frequencies: u32) -> Bundle {
    build(1, 1, &[16, 12], frequencies, false, &[])
}

/// [`tiny_bundle`] with a chain of `mip_levels` mip levels whose pyramid levels serve `group`
/// of them each (`ceil(mip_levels / group)` pyramid levels; format version 5).
#[must_use]
pub fn tiny_bundle_with_grouped_mips(mip_levels: u32, group: u32) -> Bundle {
    build(mip_levels, group, &[16, 12], 2, false, &[])
}

/// [`tiny_bundle`] with these hidden layer widths (its own are 16 and 12).
#[must_use]
pub fn tiny_bundle_with_widths(hidden_widths: &[u32]) -> Bundle {
    build(1, 1, hidden_widths, 2, false, &[])
}

/// [`tiny_bundle`] whose decoder reads grid 0's four weighted corners (format version 7), with a
/// mip chain of `mip_levels` levels (1: none).
#[must_use]
pub fn tiny_bundle_with_corner_reads(mip_levels: u32) -> Bundle {
    build(mip_levels, 1, &[16, 12], 2, true, &[])
}

/// [`tiny_bundle`] with four latent grids, as rates from 10 bits per texel get (decision 050):
/// a finer and a coarser grid after its two, with a mip chain of `mip_levels` levels (1: none).
#[must_use]
pub fn tiny_bundle_with_four_grids(mip_levels: u32) -> Bundle {
    let more = [
        GridEntry { width: 14, height: 12, channels: 1, bits: 4, range: [-1.5, 0.5], corners: false },
        GridEntry { width: 3, height: 3, channels: 2, bits: 2, range: [-0.5, 0.5], corners: false },
    ];
    build(mip_levels, 1, &[16, 12], 2, false, &more)
}

fn build(mip_levels: u32, group: u32, hidden_widths: &[u32], pe_frequencies: u32, corners: bool, more_grids: &[GridEntry]) -> Bundle {
    let mut rng = Rng(0x007E_75E7);
    let mut grids = vec![
        GridEntry { width: 9, height: 7, channels: 3, bits: 4, range: [-1.0, 1.0], corners },
        // 3 bits: levels straddle 32-bit words in the GPU layout.
        GridEntry { width: 5, height: 4, channels: 2, bits: 3, range: [-0.75, 1.25], corners: false },
    ];
    grids.extend_from_slice(more_grids);
    let mip_grids: Vec<GridEntry> = (1..mip_levels.div_ceil(group))
        .flat_map(|k| {
            // Sized for the pyramid level's first mip level.
            let m = k * group;
            grids.iter().map(move |g| GridEntry {
                // Growth 2 (the compressor's default), for maps up to 13x11.
                width: mip_grid_side(g.width, m, 2.0, (13 >> m).max(1)),
                height: mip_grid_side(g.height, m, 2.0, (11 >> m).max(1)),
                ..g.clone()
            })
        })
        .collect();
    let latent_levels: Vec<Vec<u8>> = grids
        .iter()
        .chain(&mip_grids)
        .map(|g| (0..g.width * g.height * g.channels).map(|_| (rng.next() % (1 << g.bits)) as u8).collect())
        .collect();
    let latent_channels: u32 = grids.iter().map(|g| g.channels).sum();
    // Outputs: m/basecolor 3, m/roughness 1, n/normal 3, n/height 1.
    let latent_features: u32 = grids.iter().map(|g| g.channels * inputs_per_channel(g.corners) as u32).sum();
    let mut widths = vec![latent_features + 4 * pe_frequencies + u32::from(mip_levels > 1)];
    widths.extend_from_slice(hidden_widths);
    widths.push(8);
    let mut layers = Vec::new();
    let mut layer_entries = Vec::new();
    for (i, pair) in widths.windows(2).enumerate() {
        let (inputs, outputs) = (pair[0] as usize, pair[1] as usize);
        let last = i + 2 == widths.len();
        // Weights of magnitude ~1/sqrt(inputs) keep activations O(1); the last bias centres the
        // outputs near 0.5 so most texels are not clamped.
        let scale = if last { 1.0 } else { 2.0 } / (127.0 * (inputs as f32).sqrt());
        layers.push(QuantizedLayer {
            inputs,
            outputs,
            format: WeightFormat::Int8,
            halves: Vec::new(),
            weights: (0..inputs * outputs).map(|_| ((rng.next() % 255) as i32 - 127) as i8).collect(),
            scales: (0..outputs).map(|_| scale * (1.0 + 0.25 * rng.signed())).collect(),
            biases: (0..outputs).map(|_| if last { 0.5 + 0.1 * rng.signed() } else { 0.1 * rng.signed() }).collect(),
        });
        layer_entries.push(LayerEntry {
            inputs: inputs as u32,
            outputs: outputs as u32,
            format: WeightFormat::Int8,
            activation: if last { "linear" } else { "relu" }.to_string(),
        });
    }
    let manifest = Manifest {
        materials: vec![
            MaterialEntry {
                name: "m".to_string(),
                maps: vec![
                    map(MapKind::Basecolor, 13, 11, 3, ColorSpace::Srgb, 0, (0..latent_channels).collect()),
                    map(MapKind::Roughness, 6, 5, 1, ColorSpace::Linear, 3, vec![0, 3]),
                ],
            },
            MaterialEntry {
                name: "n".to_string(),
                maps: vec![
                    with_info(map(MapKind::Normal, 10, 12, 3, ColorSpace::Linear, 4, vec![1, 2, 4]), |info| {
                        info.normal_convention = NormalConvention::DirectX;
                    }),
                    // A float source: the channel range un-maps it.
                    with_info(map(MapKind::Height, 7, 7, 1, ColorSpace::Linear, 7, vec![]), |info| {
                        info.sample_format = SampleFormat::F32;
                        info.channel_ranges = vec![[-0.5, 2.5]];
                    }),
                    // A colour variant of m/basecolor: its outputs through an affine transform.
                    MapEntry {
                        color_transform: Some(vec![[0.8, 0.1, 0.0, 0.0, 0.05], [0.0, -0.5, 0.2, 0.0, 0.6], [0.3, 0.3, 0.3, 0.0, -0.1]]),
                        ..map(MapKind::Emissive, 9, 8, 3, ColorSpace::Srgb, 0, (0..latent_channels).collect())
                    },
                ],
            },
        ],
        grids,
        pe_frequencies,
        layers: layer_entries,
        mip_levels,
        mip_grids,
        mip_group: group,
        producer: "texset-shaders test".to_string(),
    };
    let bundle = Bundle { manifest, latent_levels, layers };
    // Validates the manifest and the data shapes.
    bundle.to_bytes().unwrap();
    bundle
}

/// The tiny bundle with `activation` on its decoder's hidden layers (`hgelu`: format version 6).
#[must_use]
pub fn tiny_bundle_with_activation(activation: Activation) -> Bundle {
    let mut bundle = tiny_bundle();
    let hidden = bundle.manifest.layers.len() - 1;
    for entry in &mut bundle.manifest.layers[..hidden] {
        activation.name().clone_into(&mut entry.activation);
    }
    bundle.to_bytes().unwrap();
    bundle
}

/// The tiny bundle with its decoder's weights stored in `format` (the int8 weights requantised).
#[must_use]
pub fn tiny_bundle_in(format: WeightFormat) -> Bundle {
    let mut bundle = tiny_bundle();
    for (layer, entry) in bundle.layers.iter_mut().zip(&mut bundle.manifest.layers) {
        *layer = QuantizedLayer::quantize_as(&layer.dequantize(), format);
        entry.format = format;
    }
    bundle
}

/// A bundle of under 64 KB that asks for over 8 GiB of decoded values, within the reader's
/// limits: [`tiny_bundle`] with its first material's maps declared 4096² and copied until the
/// maps add up past 8 GiB of f32 values. Every decode budget (`DecodeLimits::INTERACTIVE`,
/// `COMMAND_LINE`) refuses it.
#[must_use]
pub fn over_budget_bundle() -> Bundle {
    let mut bundle = tiny_bundle();
    for map in &mut bundle.manifest.materials[0].maps {
        (map.info.width, map.info.height) = (4096, 4096);
    }
    let first = bundle.manifest.materials[0].clone();
    let per_material: u64 = first.maps.iter().map(|m| 4096 * 4096 * u64::from(m.info.channels)).sum();
    let copies = (8 << 30) / 4 / per_material + 1;
    for i in 1..copies {
        let mut copy = first.clone();
        copy.name = format!("copy{i}");
        bundle.manifest.materials.push(copy);
    }
    bundle
}
