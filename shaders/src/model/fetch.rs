//! The generated latent fetch, `mlp_input(map_index, uv, level) -> MlpInput`: the first layer's
//! inputs of one texel, read from the bit-packed latent words as core's `model::reference` reads
//! them from `f32`s.

use super::f32_bits;
use std::fmt::Write as _;
use texset_core::{bundle::Manifest, model::inputs_per_channel};

/// One grid as the generated latent fetch reads it.
pub(super) struct GridFetch {
    channels: u32,
    bits: u32,
    /// Its first latent channel (the budget mask's bit).
    channel: u32,
    /// Its first MLP input.
    first: u32,
    /// Four inputs per channel, each corner times its bilinear weight, instead of their sum.
    corners: bool,
    low: f32,
    step: f32,
}

/// How the generated fetch reads each level-0 grid: its first latent channel and MLP input, and
/// the dequantisation step of core's `model::level_value`, evaluated here once.
pub(super) fn grid_fetches(manifest: &Manifest) -> Vec<GridFetch> {
    let (mut channel, mut first) = (0u32, 0u32);
    manifest
        .grids
        .iter()
        .map(|grid| {
            let step = (grid.range[1] - grid.range[0]) / ((1u32 << grid.bits) - 1) as f32;
            let fetch =
                GridFetch { channels: grid.channels, bits: grid.bits, channel, first, corners: grid.corners, low: grid.range[0], step };
            channel += grid.channels;
            first += grid.channels * inputs_per_channel(grid.corners) as u32;
            fetch
        })
        .collect()
}

/// `mlp_input(map_index, uv, level) -> MlpInput`: the first layer's inputs of one texel. Per grid
/// of the level's pyramid level and per bilinear corner, the cell's record of `channels × bits`
/// bits is read as whole words (the words it spans plus one, aligned by one funnel shift each),
/// and every channel is cut from them by shifts by literals; each value is dequantised
/// (`low + level × step`, as core's `model::level_value`), blended over the corners in
/// the CPU reference's order (or, for a grid that reads its corners, each corner times its
/// weight as an input of its own), and zeroed outside the map's budget (`MAP_MASK`). Then the
/// positional encoding (`pe_sin_cos`, model.wgsl) and, with a pyramid, the LOD input.
pub(super) fn mlp_input_wgsl(grids: &[GridFetch], mask_words: u32, pe_frequencies: u32, lod: bool) -> String {
    let mut t = String::from("fn mlp_input(map_index: u32, uv: vec2<f32>, level: u32) -> MlpInput {\n");
    t.push_str("    let slot = pyramid_level(level) * GRID_COUNT;\n");
    for w in 0..mask_words {
        let _ = writeln!(t, "    let mask{w} = MAP_MASK[map_index * MASK_WORDS + {w}u];");
    }
    let mut inputs: Vec<String> = Vec::new();
    for (g, grid) in grids.iter().enumerate() {
        let record = grid.channels * grid.bits;
        let aligned = record.div_ceil(32);
        let _ = writeln!(t, "    let corners{g} = bilinear_corners(uv, GRID_WIDTH[slot + {g}u], GRID_HEIGHT[slot + {g}u]);");
        let _ = writeln!(t, "    let base{g} = GRID_WORD_OFFSET[slot + {g}u];");
        for k in 0..4 {
            let _ = writeln!(t, "    let bit{g}_{k} = corners{g}.cells[{k}u] * {record}u;");
            let _ = writeln!(t, "    let at{g}_{k} = base{g} + (bit{g}_{k} >> 5u);");
            let _ = writeln!(t, "    let s{g}_{k} = bit{g}_{k} & 31u;");
            for j in 0..=aligned {
                let _ = writeln!(t, "    let m{g}_{k}_{j} = latents[at{g}_{k} + {j}u];");
            }
            // Word j of the record: bits 32j.. from bit s on (the `<< 1u << (31u - s)` pair is 0 at s = 0).
            for j in 0..aligned {
                let _ =
                    writeln!(t, "    let r{g}_{k}_{j} = (m{g}_{k}_{j} >> s{g}_{k}) | ((m{g}_{k}_{} << 1u) << (31u - s{g}_{k}));", j + 1);
            }
        }
        let mask = (1u64 << grid.bits) - 1;
        for c in 0..grid.channels {
            let pos = c * grid.bits;
            let (j, off) = (pos / 32, pos % 32);
            let level = |k: u32| {
                if off + grid.bits <= 32 {
                    format!("f32((r{g}_{k}_{j} >> {off}u) & {mask}u)")
                } else {
                    format!("f32(((r{g}_{k}_{j} >> {off}u) | (r{g}_{k}_{} << {}u)) & {mask}u)", j + 1, 32 - off)
                }
            };
            let value = |k: u32| format!("({} + {} * {})", f32_literal(grid.low), level(k), f32_literal(grid.step));
            let channel = grid.channel + c;
            let masked = |e: String| format!("select(0.0, {e}, ((mask{} >> {}u) & 1u) != 0u)", channel / 32, channel % 32);
            let weighted = |k: u32| format!("corners{g}.weights.{} * {}", ["x", "y", "z", "w"][k as usize], value(k));
            if grid.corners {
                for k in 0..4 {
                    let _ = writeln!(t, "    let v{channel}_{k} = {};", weighted(k));
                    inputs.push(masked(format!("v{channel}_{k}")));
                }
            } else {
                let sum: Vec<String> = (0..4).map(weighted).collect();
                let _ = writeln!(t, "    let v{channel} = {};", sum.join(" + "));
                inputs.push(masked(format!("v{channel}")));
            }
        }
        debug_assert_eq!(inputs.len() as u32, grid.first + grid.channels * inputs_per_channel(grid.corners) as u32);
    }
    if pe_frequencies > 0 {
        t.push_str("    let px = uv.x * f32(GRID_WIDTH[slot]);\n    let py = uv.y * f32(GRID_HEIGHT[slot]);\n");
    }
    for k in 0..pe_frequencies {
        let _ = writeln!(t, "    let pe{k}x = pe_sin_cos({k}u, px);\n    let pe{k}y = pe_sin_cos({k}u, py);");
        inputs.extend([format!("pe{k}x.x"), format!("pe{k}x.y"), format!("pe{k}y.x"), format!("pe{k}y.y")]);
    }
    if lod {
        inputs.push("f32(lod_level(level)) * LOD_INPUT_SCALE".into());
    }
    while !inputs.len().is_multiple_of(4) || inputs.is_empty() {
        inputs.push("0.0".into());
    }
    let fields: Vec<String> = inputs.chunks(4).map(|c| format!("vec4<f32>({})", c.join(", "))).collect();
    let _ = writeln!(t, "    return MlpInput({});\n}}", fields.join(", "));
    t
}

/// An f32 as a WGSL expression of its exact bits.
fn f32_literal(value: f32) -> String {
    format!("bitcast<f32>({})", f32_bits(value))
}
