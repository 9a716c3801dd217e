// texset GPU decoder: the WGSL twin of core/src/model/reference.rs (model spec: core/src/model/params.rs).
//
// A texel of map `m` at `uv` is decoded as: bilinear clamp-to-edge fetch of every latent grid the
// map's channel budget reads (texel centres at (x + 0.5) / width), positional encoding
// sin/cos(pi * 2^k * u * grid0.width) ..., ReLU MLP with the dequantised weights (last layer
// linear, only the map's own outputs), clamp to [0, 1]. `decode_texel_linear` then un-maps the
// stored value for shading (channel range, sRGB -> linear, normal vector in +Y convention).
// A bundle with a mip chain (`PYRAMID_LEVELS > 1` pyramid levels of `MIP_GROUP` mip levels each) has
// a latent pyramid: mip level `m` decodes at LOD level `l = min(m, PYRAMID_LEVELS * MIP_GROUP - 1)`
// and reads pyramid level `k = l / MIP_GROUP`'s grids (entries `k * GRID_COUNT + g` of the
// per-level tables) and its positional encoding, with one more MLP input, the LOD input
// `l * LOD_INPUT_SCALE` (`lod_level`, `pyramid_level`). `decode_texel_lod` filters between
// levels (trilinear of decoded texels); `decode_texel_lod_stochastic` picks one.
//
// f32 constants are given as their IEEE bit patterns (`*_BITS`, read with `bitcast<f32>`) so no
// decimal rounding can differ between the CPU and a shader compiler.
//
// This file is a *template*: the block between the `texset:specialise` markers is generated for
// one model (`texset_shaders::GpuModel`): its shapes as constants, `mlp_input` (the latent fetch
// of its grids, positional encoding and LOD input) and the MLP from texset-core's one generator
// (texset-core's `model::wgsl`: `MlpInput`, `MlpHidden`, `mlp_hidden`, `mlp_output` and their
// `_block` forms for `BLOCK` texels, the `mlp` binding). `GpuDecoder` compiles it and
// `texset export-shader` writes it; the block below is generated for a tiny model so the template
// validates by itself. Everything else is the same for every bundle. The model math the GPU
// trainer shares (`bilinear_corners`, `pe_sin_cos`) is texset-core's model/model.wgsl, which
// `GpuModel::wgsl` prepends.
//
// Buffers (exact layouts: docs/integration.md):
//   latents: every grid's latent levels, bit-packed LSB-first in that grid's bits each,
//            `[y][x][c]` order, grid `g` of pyramid level `k` starting at word
//            `GRID_WORD_OFFSET[k * GRID_COUNT + g]`, one zero word at the end. A cell's record
//            is read as whole words.
//   mlp:     the MLP's weights, dequantised once on the host (the CPU reference's values), as
//            `vec4<f32>`: per hidden layer its rows (inputs padded to 4) and then its biases four
//            to a vec4; the last layer's rows with the bias in one more vec4's x. A uniform
//            buffer where the weights fit the device's uniform limit, else storage
//            (texset-core's `model::wgsl::PackedLayer`).

// texset:specialise:begin
const GRID_COUNT: u32 = 2u;
const PYRAMID_LEVELS: u32 = 1u;
const MIP_GROUP: u32 = 1u;
const LOD_INPUT_SCALE: f32 = 0.25;
const PE_FREQUENCIES: u32 = 2u;
const LAYER_COUNT: u32 = 2u;
const MAX_WIDTH: u32 = 13u;
const MAP_COUNT: u32 = 5u;
const MASK_WORDS: u32 = 1u;
const GRID_WIDTH = array<u32, 2>(9u, 5u);
const GRID_HEIGHT = array<u32, 2>(7u, 4u);
const GRID_WORD_OFFSET = array<u32, 2>(0u, 24u);
const MAP_OUTPUT_OFFSET = array<u32, 5>(0u, 3u, 4u, 7u, 0u);
const MAP_CHANNELS = array<u32, 5>(3u, 1u, 3u, 1u, 3u);
const MAP_MIP_LEVELS = array<u32, 5>(1u, 1u, 1u, 1u, 1u);
const MAP_WIDTH = array<u32, 5>(13u, 6u, 10u, 7u, 9u);
const MAP_HEIGHT = array<u32, 5>(11u, 5u, 12u, 7u, 8u);
const MAP_MASK = array<u32, 5>(31u, 9u, 22u, 0u, 31u);
const MAP_SRGB = array<u32, 5>(1u, 0u, 0u, 0u, 1u);
const MAP_NORMAL = array<u32, 5>(0u, 0u, 2u, 0u, 0u);
const MAP_RANGE_LOW_BITS = array<vec4<u32>, 5>(vec4<u32>(0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u), vec4<u32>(0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u), vec4<u32>(0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u), vec4<u32>(0xbf000000u, 0x00000000u, 0x00000000u, 0x00000000u), vec4<u32>(0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u));
const MAP_RANGE_SCALE_BITS = array<vec4<u32>, 5>(vec4<u32>(0x3f800000u, 0x3f800000u, 0x3f800000u, 0x3f800000u), vec4<u32>(0x3f800000u, 0x3f800000u, 0x3f800000u, 0x3f800000u), vec4<u32>(0x3f800000u, 0x3f800000u, 0x3f800000u, 0x3f800000u), vec4<u32>(0x40400000u, 0x3f800000u, 0x3f800000u, 0x3f800000u), vec4<u32>(0x3f800000u, 0x3f800000u, 0x3f800000u, 0x3f800000u));
const MAP_TRANSFORM = array<u32, 5>(0u, 0u, 0u, 0u, 1u);
const MAP_TRANSFORM_BITS = array<u32, 100>(0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x3f4ccccdu, 0x3dcccccdu, 0x00000000u, 0x00000000u, 0x3d4ccccdu, 0x00000000u, 0xbf000000u, 0x3e4ccccdu, 0x00000000u, 0x3f19999au, 0x3e99999au, 0x3e99999au, 0x3e99999au, 0x00000000u, 0xbdcccccdu, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u);
fn mlp_input(map_index: u32, uv: vec2<f32>, level: u32) -> MlpInput {
    let slot = pyramid_level(level) * GRID_COUNT;
    let mask0 = MAP_MASK[map_index * MASK_WORDS + 0u];
    let corners0 = bilinear_corners(uv, GRID_WIDTH[slot + 0u], GRID_HEIGHT[slot + 0u]);
    let base0 = GRID_WORD_OFFSET[slot + 0u];
    let bit0_0 = corners0.cells[0u] * 12u;
    let at0_0 = base0 + (bit0_0 >> 5u);
    let s0_0 = bit0_0 & 31u;
    let m0_0_0 = latents[at0_0 + 0u];
    let m0_0_1 = latents[at0_0 + 1u];
    let r0_0_0 = (m0_0_0 >> s0_0) | ((m0_0_1 << 1u) << (31u - s0_0));
    let bit0_1 = corners0.cells[1u] * 12u;
    let at0_1 = base0 + (bit0_1 >> 5u);
    let s0_1 = bit0_1 & 31u;
    let m0_1_0 = latents[at0_1 + 0u];
    let m0_1_1 = latents[at0_1 + 1u];
    let r0_1_0 = (m0_1_0 >> s0_1) | ((m0_1_1 << 1u) << (31u - s0_1));
    let bit0_2 = corners0.cells[2u] * 12u;
    let at0_2 = base0 + (bit0_2 >> 5u);
    let s0_2 = bit0_2 & 31u;
    let m0_2_0 = latents[at0_2 + 0u];
    let m0_2_1 = latents[at0_2 + 1u];
    let r0_2_0 = (m0_2_0 >> s0_2) | ((m0_2_1 << 1u) << (31u - s0_2));
    let bit0_3 = corners0.cells[3u] * 12u;
    let at0_3 = base0 + (bit0_3 >> 5u);
    let s0_3 = bit0_3 & 31u;
    let m0_3_0 = latents[at0_3 + 0u];
    let m0_3_1 = latents[at0_3 + 1u];
    let r0_3_0 = (m0_3_0 >> s0_3) | ((m0_3_1 << 1u) << (31u - s0_3));
    let v0 = corners0.weights.x * (bitcast<f32>(0xbf800000u) + f32((r0_0_0 >> 0u) & 15u) * bitcast<f32>(0x3e088889u)) + corners0.weights.y * (bitcast<f32>(0xbf800000u) + f32((r0_1_0 >> 0u) & 15u) * bitcast<f32>(0x3e088889u)) + corners0.weights.z * (bitcast<f32>(0xbf800000u) + f32((r0_2_0 >> 0u) & 15u) * bitcast<f32>(0x3e088889u)) + corners0.weights.w * (bitcast<f32>(0xbf800000u) + f32((r0_3_0 >> 0u) & 15u) * bitcast<f32>(0x3e088889u));
    let v1 = corners0.weights.x * (bitcast<f32>(0xbf800000u) + f32((r0_0_0 >> 4u) & 15u) * bitcast<f32>(0x3e088889u)) + corners0.weights.y * (bitcast<f32>(0xbf800000u) + f32((r0_1_0 >> 4u) & 15u) * bitcast<f32>(0x3e088889u)) + corners0.weights.z * (bitcast<f32>(0xbf800000u) + f32((r0_2_0 >> 4u) & 15u) * bitcast<f32>(0x3e088889u)) + corners0.weights.w * (bitcast<f32>(0xbf800000u) + f32((r0_3_0 >> 4u) & 15u) * bitcast<f32>(0x3e088889u));
    let v2 = corners0.weights.x * (bitcast<f32>(0xbf800000u) + f32((r0_0_0 >> 8u) & 15u) * bitcast<f32>(0x3e088889u)) + corners0.weights.y * (bitcast<f32>(0xbf800000u) + f32((r0_1_0 >> 8u) & 15u) * bitcast<f32>(0x3e088889u)) + corners0.weights.z * (bitcast<f32>(0xbf800000u) + f32((r0_2_0 >> 8u) & 15u) * bitcast<f32>(0x3e088889u)) + corners0.weights.w * (bitcast<f32>(0xbf800000u) + f32((r0_3_0 >> 8u) & 15u) * bitcast<f32>(0x3e088889u));
    let corners1 = bilinear_corners(uv, GRID_WIDTH[slot + 1u], GRID_HEIGHT[slot + 1u]);
    let base1 = GRID_WORD_OFFSET[slot + 1u];
    let bit1_0 = corners1.cells[0u] * 6u;
    let at1_0 = base1 + (bit1_0 >> 5u);
    let s1_0 = bit1_0 & 31u;
    let m1_0_0 = latents[at1_0 + 0u];
    let m1_0_1 = latents[at1_0 + 1u];
    let r1_0_0 = (m1_0_0 >> s1_0) | ((m1_0_1 << 1u) << (31u - s1_0));
    let bit1_1 = corners1.cells[1u] * 6u;
    let at1_1 = base1 + (bit1_1 >> 5u);
    let s1_1 = bit1_1 & 31u;
    let m1_1_0 = latents[at1_1 + 0u];
    let m1_1_1 = latents[at1_1 + 1u];
    let r1_1_0 = (m1_1_0 >> s1_1) | ((m1_1_1 << 1u) << (31u - s1_1));
    let bit1_2 = corners1.cells[2u] * 6u;
    let at1_2 = base1 + (bit1_2 >> 5u);
    let s1_2 = bit1_2 & 31u;
    let m1_2_0 = latents[at1_2 + 0u];
    let m1_2_1 = latents[at1_2 + 1u];
    let r1_2_0 = (m1_2_0 >> s1_2) | ((m1_2_1 << 1u) << (31u - s1_2));
    let bit1_3 = corners1.cells[3u] * 6u;
    let at1_3 = base1 + (bit1_3 >> 5u);
    let s1_3 = bit1_3 & 31u;
    let m1_3_0 = latents[at1_3 + 0u];
    let m1_3_1 = latents[at1_3 + 1u];
    let r1_3_0 = (m1_3_0 >> s1_3) | ((m1_3_1 << 1u) << (31u - s1_3));
    let v3 = corners1.weights.x * (bitcast<f32>(0xbf400000u) + f32((r1_0_0 >> 0u) & 7u) * bitcast<f32>(0x3e924925u)) + corners1.weights.y * (bitcast<f32>(0xbf400000u) + f32((r1_1_0 >> 0u) & 7u) * bitcast<f32>(0x3e924925u)) + corners1.weights.z * (bitcast<f32>(0xbf400000u) + f32((r1_2_0 >> 0u) & 7u) * bitcast<f32>(0x3e924925u)) + corners1.weights.w * (bitcast<f32>(0xbf400000u) + f32((r1_3_0 >> 0u) & 7u) * bitcast<f32>(0x3e924925u));
    let v4 = corners1.weights.x * (bitcast<f32>(0xbf400000u) + f32((r1_0_0 >> 3u) & 7u) * bitcast<f32>(0x3e924925u)) + corners1.weights.y * (bitcast<f32>(0xbf400000u) + f32((r1_1_0 >> 3u) & 7u) * bitcast<f32>(0x3e924925u)) + corners1.weights.z * (bitcast<f32>(0xbf400000u) + f32((r1_2_0 >> 3u) & 7u) * bitcast<f32>(0x3e924925u)) + corners1.weights.w * (bitcast<f32>(0xbf400000u) + f32((r1_3_0 >> 3u) & 7u) * bitcast<f32>(0x3e924925u));
    let px = uv.x * f32(GRID_WIDTH[slot]);
    let py = uv.y * f32(GRID_HEIGHT[slot]);
    let pe0_x = pe_sin_cos(0u, px);
    let pe0_y = pe_sin_cos(0u, py);
    let pe1_x = pe_sin_cos(1u, px);
    let pe1_y = pe_sin_cos(1u, py);
    return MlpInput(vec4<f32>(select(0.0, v0, ((mask0 >> 0u) & 1u) != 0u), select(0.0, v1, ((mask0 >> 1u) & 1u) != 0u), select(0.0, v2, ((mask0 >> 2u) & 1u) != 0u), select(0.0, v3, ((mask0 >> 3u) & 1u) != 0u)), vec4<f32>(select(0.0, v4, ((mask0 >> 4u) & 1u) != 0u), pe0_x.x, pe0_x.y, pe0_y.x), vec4<f32>(pe0_y.y, pe1_x.x, pe1_x.y, pe1_y.x), vec4<f32>(pe1_y.y, 0.0, 0.0, 0.0));
}
// Generated by texset_core::model::wgsl (the one MLP generator).
@group(0) @binding(1) var<uniform> mlp: array<vec4<f32>, 67>;
const BLOCK: u32 = 4u;
struct MlpInput {
    x0: vec4<f32>,
    x1: vec4<f32>,
    x2: vec4<f32>,
    x3: vec4<f32>,
}
struct MlpHidden {
    h0: vec4<f32>,
    h1: vec4<f32>,
}
fn mlp_hidden(a0: MlpInput) -> MlpHidden {
    let x0_0_0 = a0.x0;
    let x0_0_1 = a0.x1;
    let x0_0_2 = a0.x2;
    let x0_0_3 = a0.x3;
    var o0_0: array<vec4<f32>, 2>;
    for (var q = 0u; q < 2u; q++) {
        let r = 0u + q * 16u;
        let b = mlp[32u + q];
        let w0_0 = mlp[r + 0u];
        let w0_1 = mlp[r + 1u];
        let w0_2 = mlp[r + 2u];
        let w0_3 = mlp[r + 3u];
        let s0_0 = dot(w0_0, x0_0_0) + dot(w0_1, x0_0_1) + dot(w0_2, x0_0_2) + dot(w0_3, x0_0_3);
        let w1_0 = mlp[r + 4u];
        let w1_1 = mlp[r + 5u];
        let w1_2 = mlp[r + 6u];
        let w1_3 = mlp[r + 7u];
        let s0_1 = dot(w1_0, x0_0_0) + dot(w1_1, x0_0_1) + dot(w1_2, x0_0_2) + dot(w1_3, x0_0_3);
        let w2_0 = mlp[r + 8u];
        let w2_1 = mlp[r + 9u];
        let w2_2 = mlp[r + 10u];
        let w2_3 = mlp[r + 11u];
        let s0_2 = dot(w2_0, x0_0_0) + dot(w2_1, x0_0_1) + dot(w2_2, x0_0_2) + dot(w2_3, x0_0_3);
        let w3_0 = mlp[r + 12u];
        let w3_1 = mlp[r + 13u];
        let w3_2 = mlp[r + 14u];
        let w3_3 = mlp[r + 15u];
        let s0_3 = dot(w3_0, x0_0_0) + dot(w3_1, x0_0_1) + dot(w3_2, x0_0_2) + dot(w3_3, x0_0_3);
        o0_0[q] = max(b + vec4<f32>(s0_0, s0_1, s0_2, s0_3), vec4<f32>(0.0));
    }
    let x0_1_0 = o0_0[0u];
    let x0_1_1 = o0_0[1u];
    return MlpHidden(x0_1_0, x0_1_1);
}
fn mlp_hidden_block(a: array<MlpInput, BLOCK>) -> array<MlpHidden, BLOCK> {
    let x0_0_0 = a[0u].x0;
    let x0_0_1 = a[0u].x1;
    let x0_0_2 = a[0u].x2;
    let x0_0_3 = a[0u].x3;
    let x1_0_0 = a[1u].x0;
    let x1_0_1 = a[1u].x1;
    let x1_0_2 = a[1u].x2;
    let x1_0_3 = a[1u].x3;
    let x2_0_0 = a[2u].x0;
    let x2_0_1 = a[2u].x1;
    let x2_0_2 = a[2u].x2;
    let x2_0_3 = a[2u].x3;
    let x3_0_0 = a[3u].x0;
    let x3_0_1 = a[3u].x1;
    let x3_0_2 = a[3u].x2;
    let x3_0_3 = a[3u].x3;
    var o0_0: array<vec4<f32>, 2>;
    var o1_0: array<vec4<f32>, 2>;
    var o2_0: array<vec4<f32>, 2>;
    var o3_0: array<vec4<f32>, 2>;
    for (var q = 0u; q < 2u; q++) {
        let r = 0u + q * 16u;
        let b = mlp[32u + q];
        let w0_0 = mlp[r + 0u];
        let w0_1 = mlp[r + 1u];
        let w0_2 = mlp[r + 2u];
        let w0_3 = mlp[r + 3u];
        let s0_0 = dot(w0_0, x0_0_0) + dot(w0_1, x0_0_1) + dot(w0_2, x0_0_2) + dot(w0_3, x0_0_3);
        let s1_0 = dot(w0_0, x1_0_0) + dot(w0_1, x1_0_1) + dot(w0_2, x1_0_2) + dot(w0_3, x1_0_3);
        let s2_0 = dot(w0_0, x2_0_0) + dot(w0_1, x2_0_1) + dot(w0_2, x2_0_2) + dot(w0_3, x2_0_3);
        let s3_0 = dot(w0_0, x3_0_0) + dot(w0_1, x3_0_1) + dot(w0_2, x3_0_2) + dot(w0_3, x3_0_3);
        let w1_0 = mlp[r + 4u];
        let w1_1 = mlp[r + 5u];
        let w1_2 = mlp[r + 6u];
        let w1_3 = mlp[r + 7u];
        let s0_1 = dot(w1_0, x0_0_0) + dot(w1_1, x0_0_1) + dot(w1_2, x0_0_2) + dot(w1_3, x0_0_3);
        let s1_1 = dot(w1_0, x1_0_0) + dot(w1_1, x1_0_1) + dot(w1_2, x1_0_2) + dot(w1_3, x1_0_3);
        let s2_1 = dot(w1_0, x2_0_0) + dot(w1_1, x2_0_1) + dot(w1_2, x2_0_2) + dot(w1_3, x2_0_3);
        let s3_1 = dot(w1_0, x3_0_0) + dot(w1_1, x3_0_1) + dot(w1_2, x3_0_2) + dot(w1_3, x3_0_3);
        let w2_0 = mlp[r + 8u];
        let w2_1 = mlp[r + 9u];
        let w2_2 = mlp[r + 10u];
        let w2_3 = mlp[r + 11u];
        let s0_2 = dot(w2_0, x0_0_0) + dot(w2_1, x0_0_1) + dot(w2_2, x0_0_2) + dot(w2_3, x0_0_3);
        let s1_2 = dot(w2_0, x1_0_0) + dot(w2_1, x1_0_1) + dot(w2_2, x1_0_2) + dot(w2_3, x1_0_3);
        let s2_2 = dot(w2_0, x2_0_0) + dot(w2_1, x2_0_1) + dot(w2_2, x2_0_2) + dot(w2_3, x2_0_3);
        let s3_2 = dot(w2_0, x3_0_0) + dot(w2_1, x3_0_1) + dot(w2_2, x3_0_2) + dot(w2_3, x3_0_3);
        let w3_0 = mlp[r + 12u];
        let w3_1 = mlp[r + 13u];
        let w3_2 = mlp[r + 14u];
        let w3_3 = mlp[r + 15u];
        let s0_3 = dot(w3_0, x0_0_0) + dot(w3_1, x0_0_1) + dot(w3_2, x0_0_2) + dot(w3_3, x0_0_3);
        let s1_3 = dot(w3_0, x1_0_0) + dot(w3_1, x1_0_1) + dot(w3_2, x1_0_2) + dot(w3_3, x1_0_3);
        let s2_3 = dot(w3_0, x2_0_0) + dot(w3_1, x2_0_1) + dot(w3_2, x2_0_2) + dot(w3_3, x2_0_3);
        let s3_3 = dot(w3_0, x3_0_0) + dot(w3_1, x3_0_1) + dot(w3_2, x3_0_2) + dot(w3_3, x3_0_3);
        o0_0[q] = max(b + vec4<f32>(s0_0, s0_1, s0_2, s0_3), vec4<f32>(0.0));
        o1_0[q] = max(b + vec4<f32>(s1_0, s1_1, s1_2, s1_3), vec4<f32>(0.0));
        o2_0[q] = max(b + vec4<f32>(s2_0, s2_1, s2_2, s2_3), vec4<f32>(0.0));
        o3_0[q] = max(b + vec4<f32>(s3_0, s3_1, s3_2, s3_3), vec4<f32>(0.0));
    }
    let x0_1_0 = o0_0[0u];
    let x0_1_1 = o0_0[1u];
    let x1_1_0 = o1_0[0u];
    let x1_1_1 = o1_0[1u];
    let x2_1_0 = o2_0[0u];
    let x2_1_1 = o2_0[1u];
    let x3_1_0 = o3_0[0u];
    let x3_1_1 = o3_0[1u];
    return array<MlpHidden, BLOCK>(MlpHidden(x0_1_0, x0_1_1), MlpHidden(x1_1_0, x1_1_1), MlpHidden(x2_1_0, x2_1_1), MlpHidden(x3_1_0, x3_1_1));
}
fn mlp_output(row: u32, h0: MlpHidden) -> vec4<f32> {
    let r = 34u + row * 3u;
    let w0_0 = mlp[r + 0u];
    let w0_1 = mlp[r + 1u];
    let w0_2 = mlp[r + 2u];
    let z0_0 = w0_2.x + (dot(w0_0, h0.h0) + dot(w0_1, h0.h1));
    let w1_0 = mlp[r + 3u];
    let w1_1 = mlp[r + 4u];
    let w1_2 = mlp[r + 5u];
    let z0_1 = w1_2.x + (dot(w1_0, h0.h0) + dot(w1_1, h0.h1));
    let w2_0 = mlp[r + 6u];
    let w2_1 = mlp[r + 7u];
    let w2_2 = mlp[r + 8u];
    let z0_2 = w2_2.x + (dot(w2_0, h0.h0) + dot(w2_1, h0.h1));
    let w3_0 = mlp[r + 9u];
    let w3_1 = mlp[r + 10u];
    let w3_2 = mlp[r + 11u];
    let z0_3 = w3_2.x + (dot(w3_0, h0.h0) + dot(w3_1, h0.h1));
    let z0 = vec4<f32>(z0_0, z0_1, z0_2, z0_3);
    return z0;
}
fn mlp_output_block(row: u32, h: array<MlpHidden, BLOCK>) -> array<vec4<f32>, BLOCK> {
    let h0 = h[0u];
    let h1 = h[1u];
    let h2 = h[2u];
    let h3 = h[3u];
    let r = 34u + row * 3u;
    let w0_0 = mlp[r + 0u];
    let w0_1 = mlp[r + 1u];
    let w0_2 = mlp[r + 2u];
    let z0_0 = w0_2.x + (dot(w0_0, h0.h0) + dot(w0_1, h0.h1));
    let z1_0 = w0_2.x + (dot(w0_0, h1.h0) + dot(w0_1, h1.h1));
    let z2_0 = w0_2.x + (dot(w0_0, h2.h0) + dot(w0_1, h2.h1));
    let z3_0 = w0_2.x + (dot(w0_0, h3.h0) + dot(w0_1, h3.h1));
    let w1_0 = mlp[r + 3u];
    let w1_1 = mlp[r + 4u];
    let w1_2 = mlp[r + 5u];
    let z0_1 = w1_2.x + (dot(w1_0, h0.h0) + dot(w1_1, h0.h1));
    let z1_1 = w1_2.x + (dot(w1_0, h1.h0) + dot(w1_1, h1.h1));
    let z2_1 = w1_2.x + (dot(w1_0, h2.h0) + dot(w1_1, h2.h1));
    let z3_1 = w1_2.x + (dot(w1_0, h3.h0) + dot(w1_1, h3.h1));
    let w2_0 = mlp[r + 6u];
    let w2_1 = mlp[r + 7u];
    let w2_2 = mlp[r + 8u];
    let z0_2 = w2_2.x + (dot(w2_0, h0.h0) + dot(w2_1, h0.h1));
    let z1_2 = w2_2.x + (dot(w2_0, h1.h0) + dot(w2_1, h1.h1));
    let z2_2 = w2_2.x + (dot(w2_0, h2.h0) + dot(w2_1, h2.h1));
    let z3_2 = w2_2.x + (dot(w2_0, h3.h0) + dot(w2_1, h3.h1));
    let w3_0 = mlp[r + 9u];
    let w3_1 = mlp[r + 10u];
    let w3_2 = mlp[r + 11u];
    let z0_3 = w3_2.x + (dot(w3_0, h0.h0) + dot(w3_1, h0.h1));
    let z1_3 = w3_2.x + (dot(w3_0, h1.h0) + dot(w3_1, h1.h1));
    let z2_3 = w3_2.x + (dot(w3_0, h2.h0) + dot(w3_1, h2.h1));
    let z3_3 = w3_2.x + (dot(w3_0, h3.h0) + dot(w3_1, h3.h1));
    let z0 = vec4<f32>(z0_0, z0_1, z0_2, z0_3);
    let z1 = vec4<f32>(z1_0, z1_1, z1_2, z1_3);
    let z2 = vec4<f32>(z2_0, z2_1, z2_2, z2_3);
    let z3 = vec4<f32>(z3_0, z3_1, z3_2, z3_3);
    return array<vec4<f32>, BLOCK>(z0, z1, z2, z3);
}
// texset:specialise:end

// `lod_level` and `pyramid_level` are model.wgsl's (core's `model::MODEL_WGSL`, prepended).

// `MAP_NORMAL` values.
const NORMAL_NONE: u32 = 0u;
const NORMAL_OPENGL: u32 = 1u;
const NORMAL_DIRECTX: u32 = 2u;

// The latents (read-only, shared by every entry point); the weights, `mlp`, are bound by the
// generated block above (binding 1).
@group(0) @binding(0) var<storage, read> latents: array<u32>;

// Decodes every channel of library map `map_index` (maps of all materials in library order) at
// texture coordinates `uv` in [0, 1]^2 (texel centres at (x + 0.5) / width). Returns the stored
// values in [0, 1] (sRGB-encoded for colour maps, n * 0.5 + 0.5 for normals); channels beyond
// the map's count are 0. Callable from compute and fragment shaders.
fn decode_texel(map_index: u32, uv: vec2<f32>) -> vec4<f32> {
    return decode_texel_level(map_index, uv, 0u);
}

// `decode_texel` at mip level `level` (clamped to the latent pyramid; a bundle without a mip
// chain decodes level 0).
fn decode_texel_level(map_index: u32, uv: vec2<f32>, level: u32) -> vec4<f32> {
    return decode_output(map_index, decode_hidden(map_index, uv, level));
}

// `decode_texel` at level of detail `lod` (clamped to the map's mip levels, `MAP_MIP_LEVELS`):
// a fractional `lod` blends the two levels around it (trilinear filtering of decoded texels,
// two decodes), as `texset_core::decode::Decoder::decode_texel_lod`.
fn decode_texel_lod(map_index: u32, uv: vec2<f32>, lod: f32) -> vec4<f32> {
    let top = f32(MAP_MIP_LEVELS[map_index] - 1u);
    let l = clamp(lod, 0.0, top);
    let below = floor(l);
    let blend = l - below;
    let a = decode_texel_level(map_index, uv, u32(below));
    if (blend <= 0.0) {
        return a;
    }
    let b = decode_texel_level(map_index, uv, min(u32(below) + 1u, u32(top)));
    return a + (b - a) * blend;
}

// Stochastic filtering between levels (one decode): level floor(lod) + 1 with probability
// fract(lod), chosen by `xi` in [0, 1) (a per-pixel blue-noise or hash value); averaged over
// frames (TAA) it converges to `decode_texel_lod`.
fn decode_texel_lod_stochastic(map_index: u32, uv: vec2<f32>, lod: f32, xi: f32) -> vec4<f32> {
    let top = f32(MAP_MIP_LEVELS[map_index] - 1u);
    let l = clamp(lod, 0.0, top);
    let below = floor(l);
    var level = u32(below);
    if (xi < l - below) {
        level = min(level + 1u, u32(top));
    }
    return decode_texel_level(map_index, uv, level);
}

// The level of detail of a texture of `size` texels at `uv` from screen-space derivatives, as
// hardware computes it for an isotropic sample: log2 of the longer screen-space footprint axis.
// Fragment shaders only (it uses `dpdx`/`dpdy`), in uniform control flow.
fn lod_from_derivatives(uv: vec2<f32>, size: vec2<f32>) -> f32 {
    let dx = dpdx(uv) * size;
    let dy = dpdy(uv) * size;
    return max(0.0, 0.5 * log2(max(dot(dx, dx), dot(dy, dy))));
}

// Steps 1-4 of `decode_texel`: latent fetch under the map's budget, positional encoding and the
// hidden layers. Depends on the map only through the latent channels it reads (`MAP_MASK`): maps
// with equal masks (`same_budget`) share the result.
fn decode_hidden(map_index: u32, uv: vec2<f32>, level: u32) -> MlpHidden {
    return mlp_hidden(mlp_input(map_index, uv, level));
}

// Whether two maps read the same latent channels (and so share `decode_hidden`).
fn same_budget(a: u32, b: u32) -> bool {
    for (var w = 0u; w < MASK_WORDS; w++) {
        if (MAP_MASK[a * MASK_WORDS + w] != MAP_MASK[b * MASK_WORDS + w]) {
            return false;
        }
    }
    return true;
}

// Steps 5-6 of `decode_texel`: the last (linear) layer for this map's slice of the outputs,
// clamp, and a colour variant's transform.
fn decode_output(map_index: u32, hidden: MlpHidden) -> vec4<f32> {
    return finish_output(map_index, mlp_output(MAP_OUTPUT_OFFSET[map_index], hidden));
}

// The last layer's outputs `z` of a map clamped (channels beyond its count 0), then a colour
// variant's affine transform of them (as `apply_color_rows` in core/src/bundle: offset first,
// then the four channels in order).
fn finish_output(map_index: u32, z: vec4<f32>) -> vec4<f32> {
    let channels = MAP_CHANNELS[map_index];
    let keep = vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(channels);
    var result = select(vec4<f32>(0.0), clamp(z, vec4<f32>(0.0), vec4<f32>(1.0)), keep);
    if (MAP_TRANSFORM[map_index] == 1u) {
        let source = result;
        for (var c = 0u; c < min(channels, 4u); c++) {
            let row = map_index * 20u + c * 5u;
            var t = bitcast<f32>(MAP_TRANSFORM_BITS[row + 4u]);
            for (var k = 0u; k < 4u; k++) {
                t += bitcast<f32>(MAP_TRANSFORM_BITS[row + k]) * source[k];
            }
            result[c] = clamp(t, 0.0, 1.0);
        }
    }
    return result;
}

// `BLOCK` texels of one map at one mip level, sharing each weight load (the compute entry points).
fn decode_block_level(map_index: u32, uvs: array<vec2<f32>, BLOCK>, level: u32) -> array<vec4<f32>, BLOCK> {
    var inputs: array<MlpInput, BLOCK>;
    for (var p = 0u; p < BLOCK; p++) {
        inputs[p] = mlp_input(map_index, uvs[p], level);
    }
    var z = mlp_output_block(MAP_OUTPUT_OFFSET[map_index], mlp_hidden_block(inputs));
    for (var p = 0u; p < BLOCK; p++) {
        z[p] = finish_output(map_index, z[p]);
    }
    return z;
}

// The sRGB transfer function, inverse (exactly as `srgb_to_linear` in core/src/model/reference.rs).
fn srgb_to_linear(c: f32) -> f32 {
    if (c <= 0.04045) {
        return c / 12.92;
    }
    return pow((c + 0.055) / 1.055, 2.4);
}

// `decode_texel` un-mapped for shading (as `unmap` in core/src/decode.rs): the channel range
// applied (float sources), sRGB colour channels to linear, and normal maps as a unit vector in the
// +Y (OpenGL) convention whatever the source's convention was.
fn decode_texel_linear(map_index: u32, uv: vec2<f32>) -> vec4<f32> {
    return unmap_texel(map_index, decode_texel(map_index, uv));
}

// The un-mapping of `decode_texel_linear` for stored values `t` of map `map_index` from any
// source (the studio's preview feeds it the original maps too).
fn unmap_texel(map_index: u32, t: vec4<f32>) -> vec4<f32> {
    var v = bitcast<vec4<f32>>(MAP_RANGE_LOW_BITS[map_index]) + bitcast<vec4<f32>>(MAP_RANGE_SCALE_BITS[map_index]) * t;
    let channels = MAP_CHANNELS[map_index];
    if (MAP_SRGB[map_index] == 1u) {
        for (var c = 0u; c < min(channels, 3u); c++) {
            v[c] = srgb_to_linear(v[c]);
        }
    }
    let normal = MAP_NORMAL[map_index];
    if (normal != NORMAL_NONE) {
        var n = v.xyz * 2.0 - 1.0;
        if (normal == NORMAL_DIRECTX) {
            n.y = -n.y;
        }
        let len = length(n);
        if (len > 0.0) {
            n = n / len;
        }
        v = vec4<f32>(n, v.w);
    }
    return v;
}

// `decode_texel_linear` at level of detail `lod` (see `decode_texel_lod`).
fn decode_texel_linear_lod(map_index: u32, uv: vec2<f32>, lod: f32) -> vec4<f32> {
    return unmap_texel(map_index, decode_texel_lod(map_index, uv, lod));
}

// texset:entry-points
// Everything above is the decoder's functions (`GpuModel::functions_wgsl`, `texset export-shader
// --functions-only`, what an engine's material shader includes); below are the entry points of
// `GpuDecoder` and their bindings.

// Compute workgroup sides: 8 x 8 invocations for whole maps (each `BLOCK` texels along x), 64
// for sample lists (each `BLOCK` consecutive samples).
const WORKGROUP_SIDE: u32 = 8u;
const SAMPLE_WORKGROUP: u32 = 64u;

// What the compute and fragment entry points decode. `mode` 0 writes the stored values
// (`decode_texel`), 1 the shading values (`decode_texel_linear`).
struct Params {
    map_index: u32,
    width: u32,
    height: u32,
    channels: u32,
    sample_count: u32,
    mode: u32,
    // Level of detail to decode at (`decode_texel_lod`): a whole number decodes that mip level.
    lod: f32,
    pad: u32,
}

@group(0) @binding(2) var<uniform> params: Params;
// Compute outputs: `cs_decode_map` writes `[y][x][c]` with the map's channel count,
// `cs_decode_samples` writes 4 values per sample.
@group(0) @binding(3) var<storage, read_write> output: array<f32>;
// `cs_decode_samples` inputs: one (u, v) per sample.
@group(0) @binding(4) var<storage, read> samples: array<vec2<f32>>;

// `decode_texel_lod` (then, in `mode` 1, `unmap_texel`) of `BLOCK` texels at `params.lod`.
fn decode_block_mode(map_index: u32, uvs: array<vec2<f32>, BLOCK>) -> array<vec4<f32>, BLOCK> {
    let top = f32(MAP_MIP_LEVELS[map_index] - 1u);
    let l = clamp(params.lod, 0.0, top);
    let below = floor(l);
    let blend = l - below;
    var t = decode_block_level(map_index, uvs, u32(below));
    if (blend > 0.0) {
        let b = decode_block_level(map_index, uvs, min(u32(below) + 1u, u32(top)));
        for (var p = 0u; p < BLOCK; p++) {
            t[p] = t[p] + (b[p] - t[p]) * blend;
        }
    }
    if (params.mode == 1u) {
        for (var p = 0u; p < BLOCK; p++) {
            t[p] = unmap_texel(map_index, t[p]);
        }
    }
    return t;
}

// `decode_texel_lod` (then, in `mode` 1, `unmap_texel`) at `params.lod`.
fn decode_mode(map_index: u32, uv: vec2<f32>) -> vec4<f32> {
    let t = decode_texel_lod(map_index, uv, params.lod);
    if (params.mode == 1u) {
        return unmap_texel(map_index, t);
    }
    return t;
}

// Decodes one whole map (`params.width x params.height`) into `output` as f32 `[y][x][c]` with
// `params.channels` channels: each invocation `BLOCK` neighbouring texels of a row.
@compute @workgroup_size(WORKGROUP_SIDE, WORKGROUP_SIDE, 1)
fn cs_decode_map(@builtin(global_invocation_id) id: vec3<u32>) {
    let x0 = id.x * BLOCK;
    if (x0 >= params.width || id.y >= params.height || params.map_index >= MAP_COUNT) {
        return;
    }
    var uvs: array<vec2<f32>, BLOCK>;
    for (var p = 0u; p < BLOCK; p++) {
        let x = min(x0 + p, params.width - 1u);
        uvs[p] = vec2<f32>((f32(x) + 0.5) / f32(params.width), (f32(id.y) + 0.5) / f32(params.height));
    }
    let texels = decode_block_mode(params.map_index, uvs);
    for (var p = 0u; p < BLOCK; p++) {
        if (x0 + p < params.width) {
            let base = (id.y * params.width + x0 + p) * params.channels;
            for (var c = 0u; c < min(params.channels, 4u); c++) {
                output[base + c] = texels[p][c];
            }
        }
    }
}

// Decodes `params.sample_count` random-access samples at `samples[i]` into `output[4 i ..]`:
// each invocation `BLOCK` consecutive samples.
@compute @workgroup_size(SAMPLE_WORKGROUP, 1, 1)
fn cs_decode_samples(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let first = (id.y * groups.x * SAMPLE_WORKGROUP + id.x) * BLOCK;
    if (first >= params.sample_count || params.map_index >= MAP_COUNT) {
        return;
    }
    var uvs: array<vec2<f32>, BLOCK>;
    for (var p = 0u; p < BLOCK; p++) {
        uvs[p] = samples[min(first + p, params.sample_count - 1u)];
    }
    let texels = decode_block_mode(params.map_index, uvs);
    for (var p = 0u; p < BLOCK; p++) {
        if (first + p < params.sample_count) {
            output[4u * (first + p)] = texels[p].x;
            output[4u * (first + p) + 1u] = texels[p].y;
            output[4u * (first + p) + 2u] = texels[p].z;
            output[4u * (first + p) + 3u] = texels[p].w;
        }
    }
}

// A full-screen triangle for `fs_decode_map`.
struct VertexOut {
    @builtin(position) position: vec4<f32>,
    @location(0) uv: vec2<f32>,
}

@vertex
fn vs_fullscreen(@builtin(vertex_index) vertex: u32) -> VertexOut {
    let uv = vec2<f32>(f32((vertex << 1u) & 2u), f32(vertex & 2u));
    var out: VertexOut;
    out.position = vec4<f32>(uv.x * 2.0 - 1.0, 1.0 - uv.y * 2.0, 0.0, 1.0);
    out.uv = uv;
    return out;
}

// Decodes `params.map_index` per pixel in a fragment shader (what a material shader does): draw
// the full-screen triangle into a render target of the map's size to decode it on load.
@fragment
fn fs_decode_map(in: VertexOut) -> @location(0) vec4<f32> {
    return decode_mode(min(params.map_index, MAP_COUNT - 1u), in.uv);
}
