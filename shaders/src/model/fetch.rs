//! The generated latent fetch, `mlp_input(map_index, uv, level) -> MlpInput`: the first layer's
//! inputs of one texel, read from the bit-packed latent words as core's `model::reference` reads
//! them from `f32`s.

use super::f32_bits;
use texset_core::{
    bundle::Manifest,
    model::{
        InputLayout,
        wgsl::{
            component,
            emit::{Emitter, expr, name},
        },
    },
};

/// One grid as the generated latent fetch reads it; where its channels go in the MLP's input is
/// the input layout's (`GridInputs`).
pub(super) struct GridFetch {
    bits: u32,
    low: f32,
    step: f32,
}

/// How the generated fetch reads each level-0 grid: its bits and the dequantisation step of
/// core's `model::level_value`, evaluated here once.
pub(super) fn grid_fetches(manifest: &Manifest) -> Vec<GridFetch> {
    manifest
        .grids
        .iter()
        .map(|grid| GridFetch {
            bits: grid.bits,
            low: grid.range[0],
            step: (grid.range[1] - grid.range[0]) / ((1u32 << grid.bits) - 1) as f32,
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
pub(super) fn mlp_input_wgsl(layout: &InputLayout, grids: &[GridFetch], mask_words: u32) -> String {
    let mut e = Emitter::new();
    e.function("mlp_input(map_index: u32, uv: vec2<f32>, level: u32) -> MlpInput");
    e.let_("slot", "pyramid_level(level) * GRID_COUNT");
    for w in 0..mask_words {
        e.let_(name("mask", w), expr!("MAP_MASK[map_index * MASK_WORDS + {w}u]"));
    }
    // Each input's expression at its slot of the layout (a multiple of 4, padded with zeros).
    let mut inputs: Vec<String> = vec!["0.0".into(); layout.width().next_multiple_of(4).max(4)];
    for (g, (grid, slot)) in grids.iter().zip(layout.grids()).enumerate() {
        let record = slot.channels as u32 * grid.bits;
        let aligned = record.div_ceil(32);
        let (corners, base) = (name("corners", g), name("base", g));
        e.let_(&corners, expr!("bilinear_corners(uv, GRID_WIDTH[slot + {g}u], GRID_HEIGHT[slot + {g}u])"));
        e.let_(&base, expr!("GRID_WORD_OFFSET[slot + {g}u]"));
        // Corner k's words: `m` as loaded, `r` aligned to the record's first bit.
        let loaded = |k: u32, j: u32| name("m", (g, k, j));
        let word = |k: u32, j: u32| name("r", (g, k, j));
        for k in 0..4 {
            let (bit, at, shift) = (name("bit", (g, k)), name("at", (g, k)), name("s", (g, k)));
            e.let_(&bit, expr!("{corners}.cells[{k}u] * {record}u"));
            e.let_(&at, expr!("{base} + ({bit} >> 5u)"));
            e.let_(&shift, expr!("{bit} & 31u"));
            for j in 0..=aligned {
                e.let_(loaded(k, j), expr!("latents[{at} + {j}u]"));
            }
            // Word j of the record: bits 32j.. from bit s on (the `<< 1u << (31u - s)` pair is 0 at s = 0).
            for j in 0..aligned {
                e.let_(word(k, j), expr!("({} >> {shift}) | (({} << 1u) << (31u - {shift}))", loaded(k, j), loaded(k, j + 1)));
            }
        }
        let mask = (1u64 << grid.bits) - 1;
        for c in 0..slot.channels as u32 {
            let pos = c * grid.bits;
            let (j, off) = (pos / 32, pos % 32);
            let level = |k: u32| {
                if off + grid.bits <= 32 {
                    expr!("f32(({} >> {off}u) & {mask}u)", word(k, j))
                } else {
                    expr!("f32((({} >> {off}u) | ({} << {}u)) & {mask}u)", word(k, j), word(k, j + 1), 32 - off)
                }
            };
            let value = |k: u32| expr!("({} + {} * {})", f32_literal(grid.low), level(k), f32_literal(grid.step));
            let channel = slot.first_channel as u32 + c;
            let masked = |v: String| expr!("select(0.0, {v}, (({} >> {}u) & 1u) != 0u)", name("mask", channel / 32), channel % 32);
            let weighted = |k: u32| expr!("{corners}.weights.{} * {}", component(k), value(k));
            if slot.corners {
                for k in 0..4 {
                    let v = name("v", (channel, k));
                    e.let_(&v, weighted(k));
                    inputs[slot.input(c as usize, k as usize)] = masked(v);
                }
            } else {
                let sum: Vec<String> = (0..4).map(weighted).collect();
                let v = name("v", channel);
                e.let_(&v, sum.join(" + "));
                inputs[slot.input(c as usize, 0)] = masked(v);
            }
        }
    }
    if layout.pe_frequencies() > 0 {
        e.let_("px", "uv.x * f32(GRID_WIDTH[slot])");
        e.let_("py", "uv.y * f32(GRID_HEIGHT[slot])");
    }
    for k in 0..layout.pe_frequencies() {
        let (x, y) = pe_names(k);
        e.let_(&x, expr!("pe_sin_cos({k}u, px)"));
        e.let_(&y, expr!("pe_sin_cos({k}u, py)"));
        for (j, value) in [expr!("{x}.x"), expr!("{x}.y"), expr!("{y}.x"), expr!("{y}.y")].into_iter().enumerate() {
            inputs[layout.pe_input(k, j)] = value;
        }
    }
    if let Some(lod) = layout.lod_input() {
        inputs[lod] = "f32(lod_level(level)) * LOD_INPUT_SCALE".into();
    }
    let fields: Vec<String> = inputs.chunks(4).map(|c| expr!("vec4<f32>({})", c.join(", "))).collect();
    e.ret(expr!("MlpInput({})", fields.join(", ")));
    e.close();
    e.finish()
}

/// The sine and cosine pairs of positional-encoding frequency `k` along x and along y.
fn pe_names(k: usize) -> (String, String) {
    (name("pe", (k, "x")), name("pe", (k, "y")))
}

/// An f32 as a WGSL expression of its exact bits.
fn f32_literal(value: f32) -> String {
    expr!("bitcast<f32>({})", f32_bits(value))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The arguments of a call's text `f(a, g(b, c), d)`, split at its top-level commas.
    fn arguments(call: &str) -> Vec<&str> {
        let inner = &call[call.find('(').unwrap() + 1..call.rfind(')').unwrap()];
        let (mut depth, mut start, mut out) = (0, 0, Vec::new());
        for (i, ch) in inner.char_indices() {
            match ch {
                '(' => depth += 1,
                ')' => depth -= 1,
                ',' if depth == 0 => {
                    out.push(inner[start..i].trim());
                    start = i + 1;
                }
                _ => {}
            }
        }
        out.push(inner[start..].trim());
        out
    }

    /// The generated fetch puts each value where core's input layout says (issue 69): a channel's
    /// feature (`v{channel}`) or corner (`v{channel}_{k}`) under its budget bit, each
    /// positional-encoding value and the LOD input, zeros past the width.
    #[test]
    fn the_latent_fetch_reads_the_input_layouts_slots() {
        let bundle = texset_testkit::tiny_bundle_with_corner_reads(3);
        let layout = bundle.manifest.input_layout();
        assert!(layout.grids()[0].corners && layout.lod_input().is_some() && layout.pe_frequencies() > 0);
        let text = mlp_input_wgsl(&layout, &grid_fetches(&bundle.manifest), 1);
        let ret = text.lines().find_map(|l| l.trim().strip_prefix("return ")).unwrap().trim_end_matches(';');
        let inputs: Vec<String> = arguments(ret).into_iter().flat_map(arguments).map(str::to_owned).collect();
        // `select(0.0, v3_1, …)` (a channel's) only by its name: a whole name, not a prefix.
        let names = |e: &str, name: &str| e.contains(&format!(", {name}, "));
        let mut want: Vec<Option<String>> = vec![None; inputs.len()];
        for slot in layout.grids() {
            for c in 0..slot.channels {
                let channel = slot.first_channel + c;
                for k in 0..slot.reads() {
                    let name = if slot.corners { format!("v{channel}_{k}") } else { format!("v{channel}") };
                    want[slot.input(c, k)] = Some(name);
                }
            }
        }
        for (k, j) in (0..layout.pe_frequencies()).flat_map(|k| (0..4).map(move |j| (k, j))) {
            let (x, y) = pe_names(k);
            want[layout.pe_input(k, j)] = Some(format!("{}.{}", [&x, &x, &y, &y][j], ["x", "y"][j % 2]));
        }
        want[layout.lod_input().unwrap()] = Some("f32(lod_level(level))".to_owned());
        for (i, (got, want)) in inputs.iter().zip(&want).enumerate() {
            match want {
                Some(w) if w.starts_with('v') => assert!(names(got, w), "input {i}: {got}, its slot reads {w}"),
                Some(w) => assert!(got.starts_with(w.as_str()), "input {i}: {got}, its slot reads {w}"),
                None => assert_eq!(got, "0.0", "input {i} past the layout's width"),
            }
        }
        assert_eq!(inputs.len(), layout.width().next_multiple_of(4));
    }
}
