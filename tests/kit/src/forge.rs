//! Valid bundles of every format version forged from bytes: what the structure-aware fuzz target
//! (`fuzz/fuzz_targets/forged_bundle.rs`) decodes, and what CI's stable stand-in for it
//! (`forged_bundles_of_every_version_decode_whole`) feeds from seeds. Every byte read picks a
//! shape: grids (1 to 8 bits, corner reads), a latent pyramid (grouped or not), positional
//! encoding, layer widths, a weight format (int8, fp16, E4M3, MXINT8), the hidden activation, and
//! materials whose maps have varied kinds, sizes, sample formats and ranges, channel budgets, and
//! shared outputs with colour transforms. Sizes stay small (maps up to 48², MLPs up to 24 wide), so
//! a forged bundle decodes whole in milliseconds.

use crate::bundle::Rng;
use texset_core::{
    bundle::{Bundle, GridEntry, LayerEntry, Manifest, MapEntry, MaterialEntry},
    model::{Activation, LayerParams, QuantizedLayer, WeightFormat, inputs_per_channel, mip_grid_side},
    set::{ColorSpace, MapInfo, MapKind, NormalConvention, SampleFormat},
};

/// The bytes a forge reads its choices from; past their end every choice is 0.
struct Choices<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Choices<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.bytes.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    /// In `0..n` (`n` ≥ 1).
    fn below(&mut self, n: u32) -> u32 {
        u32::from(self.byte()) % n.max(1)
    }

    /// True one time in `n`.
    fn one_in(&mut self, n: u32) -> bool {
        self.below(n) == 0
    }

    /// A 64-bit seed for the values (latents, weights) that need no choosing one by one.
    fn seed(&mut self) -> u64 {
        (0..8).fold(0u64, |s, _| (s << 8) | u64::from(self.byte()))
    }
}

/// Largest side of a forged map.
const MAX_SIDE: u32 = 48;

/// Map kinds a forged material draws from, with their channel counts.
const KINDS: [(MapKind, &[u32]); 8] = [
    (MapKind::Basecolor, &[3, 4]),
    (MapKind::Normal, &[3]),
    (MapKind::Roughness, &[1]),
    (MapKind::Metallic, &[1]),
    (MapKind::Ao, &[1]),
    (MapKind::Height, &[1, 2]),
    (MapKind::Emissive, &[3]),
    (MapKind::Orm, &[3]),
];

/// A bundle forged from `bytes`, valid as the writer checks it (`None` in the rare case the
/// choices make one it refuses, e.g. more outputs than the layer width limit).
#[must_use]
pub fn forge_bundle(bytes: &[u8]) -> Option<Bundle> {
    let mut c = Choices { bytes, at: 0 };
    let mut values = Rng(c.seed());
    let corners = c.one_in(4);
    let ranges = [[-1.0, 1.0], [-0.75, 1.25], [0.0, 1.0], [-3.0, 0.5]];
    let grids: Vec<GridEntry> = (0..=c.below(3))
        .map(|i| GridEntry {
            width: 1 + c.below(12),
            height: 1 + c.below(12),
            channels: 1 + c.below(4),
            bits: 1 + c.below(8),
            range: ranges[c.below(4) as usize],
            corners: corners && i == 0,
        })
        .collect();
    let mip_levels = if c.one_in(2) { 1 } else { 2 + c.below(3) };
    let mip_group = if mip_levels > 2 && c.one_in(4) { 2 } else { 1 };
    let mip_grids: Vec<GridEntry> = (1..mip_levels.div_ceil(mip_group))
        .flat_map(|k| {
            let m = k * mip_group;
            grids.iter().map(move |g| GridEntry {
                width: mip_grid_side(g.width, m, 2.0, (MAX_SIDE >> m).max(1)),
                height: mip_grid_side(g.height, m, 2.0, (MAX_SIDE >> m).max(1)),
                ..g.clone()
            })
        })
        .collect();
    let latent_levels: Vec<Vec<u8>> = grids
        .iter()
        .chain(&mip_grids)
        .map(|g| (0..g.width * g.height * g.channels).map(|_| (values.next() % (1 << g.bits)) as u8).collect())
        .collect();
    let latent_channels: u32 = grids.iter().map(|g| g.channels).sum();

    let materials = forge_materials(&mut c, &mut values, latent_channels);
    let outputs = materials.iter().flat_map(|m| &m.maps).map(|m| m.output_offset + m.info.channels).max()?;

    let pe_frequencies = c.below(4);
    let latent_features: u32 = grids.iter().map(|g| g.channels * inputs_per_channel(g.corners) as u32).sum();
    let mut widths = vec![latent_features + 4 * pe_frequencies + u32::from(mip_levels > 1)];
    widths.extend((0..c.below(3)).map(|_| 1 + c.below(24)));
    widths.push(outputs);
    let activation = if c.one_in(4) { Activation::Hgelu } else { Activation::Relu };
    // One weight format for the whole MLP (the format's rule), int8 half the time.
    let format = if c.one_in(2) { WeightFormat::Int8 } else { WeightFormat::ALL[c.below(4) as usize] };
    let mut layers = Vec::new();
    let mut layer_entries = Vec::new();
    for (i, pair) in widths.windows(2).enumerate() {
        let (inputs, outputs) = (pair[0] as usize, pair[1] as usize);
        let last = i + 2 == widths.len();
        let scale = 1.5 / (inputs as f32).sqrt();
        let params = LayerParams {
            inputs,
            outputs,
            weights: (0..inputs * outputs).map(|_| scale * values.signed()).collect(),
            biases: (0..outputs).map(|_| if last { 0.5 + 0.2 * values.signed() } else { 0.1 * values.signed() }).collect(),
        };
        layers.push(QuantizedLayer::quantize_as(&params, format));
        layer_entries.push(LayerEntry {
            inputs: inputs as u32,
            outputs: outputs as u32,
            format,
            activation: if last { "linear" } else { activation.name() }.to_owned(),
        });
    }
    let manifest = Manifest {
        materials,
        grids,
        pe_frequencies,
        layers: layer_entries,
        mip_levels,
        mip_grids,
        mip_group,
        producer: "texset forge".to_owned(),
    };
    let bundle = Bundle { manifest, latent_levels, layers };
    bundle.to_bytes().ok()?;
    Some(bundle)
}

/// One to three materials of one to four maps each; a map takes the next outputs or (one in four,
/// where an earlier map has as many channels) shares an earlier map's, often through a colour
/// transform.
fn forge_materials(c: &mut Choices<'_>, values: &mut Rng, latent_channels: u32) -> Vec<MaterialEntry> {
    let mut materials = Vec::new();
    let mut claimed: Vec<(u32, u32, Vec<u32>)> = Vec::new(); // (offset, channels, budget)
    let mut next_output = 0;
    for index in 0..=c.below(3) {
        let mut kinds: Vec<usize> = (0..KINDS.len()).collect();
        let mut maps = Vec::new();
        for _ in 0..=c.below(4) {
            let (kind, counts) = KINDS[kinds.remove(c.below(kinds.len() as u32) as usize)];
            let channels = counts[c.below(counts.len() as u32) as usize];
            let sample_format = [SampleFormat::U8, SampleFormat::U16, SampleFormat::F32][c.below(3) as usize];
            let channel_ranges: Vec<[f32; 2]> = (0..channels)
                .map(|_| if sample_format == SampleFormat::F32 { [-(c.below(4) as f32), 0.5 + c.below(8) as f32] } else { [0.0, 1.0] })
                .collect();
            let shared = claimed.iter().filter(|(_, ch, _)| *ch == channels).nth(c.below(4) as usize).cloned().filter(|_| c.one_in(4));
            let (output_offset, budget, color_transform) = if let Some((offset, _, budget)) = shared {
                let rows = c.one_in(3).then(|| (0..channels).map(|_| std::array::from_fn(|_| values.signed())).collect());
                (offset, budget, rows)
            } else {
                let budget: Vec<u32> = (0..latent_channels).filter(|_| !c.one_in(3)).collect();
                let offset = next_output;
                next_output += channels;
                claimed.push((offset, channels, budget.clone()));
                (offset, budget, None)
            };
            maps.push(MapEntry {
                info: MapInfo {
                    kind,
                    width: 1 + c.below(MAX_SIDE),
                    height: 1 + c.below(MAX_SIDE),
                    channels,
                    sample_format,
                    color_space: if sample_format == SampleFormat::F32 { ColorSpace::Linear } else { kind.color_space() },
                    normal_convention: if c.one_in(2) { NormalConvention::OpenGl } else { NormalConvention::DirectX },
                    channel_ranges,
                },
                output_offset,
                latent_channels: budget,
                source_file: format!("m{index}_{kind}.png"),
                color_transform,
            });
        }
        materials.push(MaterialEntry { name: format!("m{index}"), maps });
    }
    materials
}
