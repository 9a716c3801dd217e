// texset GPU decoder: the WGSL twin of core/src/reference.rs (model spec: core/src/params.rs).
//
// A texel of map `m` at `uv` is decoded as: bilinear clamp-to-edge fetch of every latent grid the
// map's channel budget reads (texel centres at (x + 0.5) / width), positional encoding
// sin/cos(pi * 2^k * u * grid0.width) ..., ReLU MLP with quantised weights and scales (last
// layer linear, only the map's own outputs), clamp to [0, 1]. `decode_texel_linear` then un-maps
// the stored value for shading (channel range, sRGB -> linear, normal vector in +Y convention).
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
// This file is a *template*: the block between the `texset:specialise` markers holds one model's
// shapes as constants. `texset_shaders::specialise_wgsl` replaces it with a bundle's own values
// (what `GpuDecoder` compiles and `texset export-shader` writes); the defaults below describe a
// tiny model so the template validates by itself. Everything else is the same for every bundle.
//
// Buffers (exact layouts: docs/integration.md):
//   latents: every grid's latent levels, bit-packed LSB-first in `GRID_BITS[g]` bits each,
//            `[y][x][c]` order, grid `g` of pyramid level `k` starting at word
//            `GRID_WORD_OFFSET[k * GRID_COUNT + g]`.
//   mlp:     per layer `l` from word `LAYER_WORD_OFFSET[l]`: `outputs` rows of weight codes, each
//            row padded to `LAYER_ROW_WORDS[l]` words; then `LAYER_SCALES_PER_ROW[l]` f32 scales
//            per row; then `outputs` f32 biases. `WEIGHT_FORMAT` says what a code is: 0 int8
//            (4 per word, byte 0 = lowest bits; one scale per row), 1 fp16 (2 per word, scale
//            1.0), 2 E4M3 minifloat (4 per word; one scale per row), 3 MXINT8 (int8, 4 per word;
//            one power-of-two scale per block of 32 inputs).

// texset:specialise:begin
const GRID_COUNT: u32 = 1u;
const PYRAMID_LEVELS: u32 = 1u;
const MIP_GROUP: u32 = 1u;
const PE_FREQUENCIES: u32 = 2u;
const LAYER_COUNT: u32 = 2u;
const MAX_WIDTH: u32 = 12u;
const MAP_COUNT: u32 = 1u;
const MASK_WORDS: u32 = 1u;
const WEIGHT_FORMAT: u32 = 0u;
const GRID_WIDTH = array<u32, 1>(8u);
const GRID_HEIGHT = array<u32, 1>(8u);
const GRID_CHANNELS = array<u32, 1>(4u);
const GRID_FIRST_CHANNEL = array<u32, 1>(0u);
const GRID_BITS = array<u32, 1>(4u);
const GRID_WORD_OFFSET = array<u32, 1>(0u);
const GRID_LOW_BITS = array<u32, 1>(0xbf800000u);
const GRID_STEP_BITS = array<u32, 1>(0x3e088889u);
const LAYER_INPUTS = array<u32, 2>(12u, 8u);
const LAYER_OUTPUTS = array<u32, 2>(8u, 3u);
const LAYER_ROW_WORDS = array<u32, 2>(3u, 2u);
const LAYER_SCALES_PER_ROW = array<u32, 2>(1u, 1u);
const LAYER_WORD_OFFSET = array<u32, 2>(0u, 40u);
const MAP_OUTPUT_OFFSET = array<u32, 1>(0u);
const MAP_CHANNELS = array<u32, 1>(3u);
const MAP_MIP_LEVELS = array<u32, 1>(1u);
const MAP_WIDTH = array<u32, 1>(8u);
const MAP_HEIGHT = array<u32, 1>(8u);
const MAP_MASK = array<u32, 1>(15u);
const MAP_SRGB = array<u32, 1>(1u);
const MAP_NORMAL = array<u32, 1>(0u);
const MAP_RANGE_LOW_BITS = array<vec4<u32>, 1>(vec4<u32>(0u, 0u, 0u, 0u));
const MAP_RANGE_SCALE_BITS = array<vec4<u32>, 1>(vec4<u32>(0x3f800000u, 0x3f800000u, 0x3f800000u, 0x3f800000u));
const MAP_TRANSFORM = array<u32, 1>(0u);
const MAP_TRANSFORM_BITS = array<u32, 20>(0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u);
// texset:specialise:end

// Compute workgroup sides: 8 x 8 texels for whole maps, 64 for sample lists.
const WORKGROUP_SIDE: u32 = 8u;
const SAMPLE_WORKGROUP: u32 = 64u;

// 2*pi split for Cody-Waite range reduction: C1 has 8 significant bits so n * C1 is exact.
const TWO_PI_C1: f32 = 6.28125;
const TWO_PI_C2: f32 = 0.0019353071693331003;
const TWO_PI_C3: f32 = 1.0253131677018246e-11;
const INV_TWO_PI: f32 = 0.15915493667125702;
const TAU: f32 = 6.2831855;
// The LOD input of LOD level l is l * this (`texset_core::model::params::LOD_INPUT_SCALE`).
const LOD_INPUT_SCALE: f32 = 0.25;

// The LOD level mip level `level` decodes at (`texset_core::model::params::lod_level`).
fn lod_level(level: u32) -> u32 {
    return min(level, PYRAMID_LEVELS * MIP_GROUP - 1u);
}

// The pyramid level whose grids mip level `level` reads (`texset_core::model::params::pyramid_level`).
fn pyramid_level(level: u32) -> u32 {
    return lod_level(level) / MIP_GROUP;
}

// `MAP_NORMAL` values.
const NORMAL_NONE: u32 = 0u;
const NORMAL_OPENGL: u32 = 1u;
const NORMAL_DIRECTX: u32 = 2u;

// The model data (read-only, shared by every entry point).
@group(0) @binding(0) var<storage, read> latents: array<u32>;
@group(0) @binding(1) var<storage, read> mlp: array<u32>;

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
    _pad1: u32,
}

@group(0) @binding(2) var<uniform> params: Params;
// Compute outputs: `cs_decode_map` writes `[y][x][c]` with the map's channel count,
// `cs_decode_samples` writes 4 values per sample.
@group(0) @binding(3) var<storage, read_write> output: array<f32>;
// `cs_decode_samples` inputs: one (u, v) per sample.
@group(0) @binding(4) var<storage, read> samples: array<vec2<f32>>;

// sin/cos of an f32 angle after an explicit Cody-Waite reduction to [-pi, pi]: the GPU's built-in
// sin/cos are only accurate near zero, the CPU reference (libm) is accurate everywhere.
fn reduce_angle(p: f32) -> f32 {
    let n = round(p * INV_TWO_PI);
    return ((p - n * TWO_PI_C1) - n * TWO_PI_C2) - n * TWO_PI_C3;
}

// `bilinear_corners` (and `Corners`): texset-core's model/bilinear.wgsl, which `GpuModel::wgsl`
// prepends to this file (the GPU trainer's shader reads grids with the same function).

// The dequantised value of latent `index` (`[y][x][c]` order) of grid `g` at pyramid slot
// `slot` (`level * GRID_COUNT + g`): low + level * step, the expression of
// `texset_core::model::quant::level_value`.
fn latent_value(g: u32, slot: u32, index: u32) -> f32 {
    let bits = GRID_BITS[g];
    let bit = index * bits;
    let word = GRID_WORD_OFFSET[slot] + bit / 32u;
    let shift = bit % 32u;
    var level = latents[word] >> shift;
    if (shift + bits > 32u) {
        level = level | (latents[word + 1u] << (32u - shift));
    }
    level = level & ((1u << bits) - 1u);
    return bitcast<f32>(GRID_LOW_BITS[g]) + f32(level) * bitcast<f32>(GRID_STEP_BITS[g]);
}

// 2^n for an integer n in -126..=127, exactly.
fn pow2(n: i32) -> f32 {
    return bitcast<f32>(u32(n + 127) << 23u);
}

// The value of an E4M3 code (texset_core::model::quant::e4m3_value).
fn e4m3_value(code: u32) -> f32 {
    let exponent = (code >> 3u) & 15u;
    let mantissa = f32(code & 7u);
    var magnitude: f32;
    if ((code & 0x7fu) == 0x7fu) {
        magnitude = 448.0;
    } else if (exponent == 0u) {
        magnitude = mantissa * pow2(-9);
    } else {
        magnitude = (8.0 + mantissa) * pow2(i32(exponent) - 10);
    }
    return select(magnitude, -magnitude, (code & 0x80u) != 0u);
}

// The value of an IEEE half (bit pattern in the low 16 bits), by bit arithmetic rather than
// `unpack2x16float`, which needs a capability not every device (or naga's default validator)
// has. Bundles hold no infinities or NaNs (the reader rejects them).
fn f16_value(h: u32) -> f32 {
    let exponent = (h >> 10u) & 31u;
    let mantissa = f32(h & 1023u);
    var magnitude: f32;
    if (exponent == 0u) {
        magnitude = mantissa * pow2(-24);
    } else if (exponent == 31u) {
        magnitude = 65504.0;
    } else {
        magnitude = (1024.0 + mantissa) * pow2(i32(exponent) - 25);
    }
    return select(magnitude, -magnitude, (h & 0x8000u) != 0u);
}

// The weight (row `o`, input `i`) of layer `l`, dequantised: `scale` is the row's
// (`layer_scale`); MXINT8 reads its block's own.
fn weight(l: u32, o: u32, i: u32, scale: f32) -> f32 {
    let row = LAYER_WORD_OFFSET[l] + o * LAYER_ROW_WORDS[l];
    if (WEIGHT_FORMAT == 1u) {
        return f16_value((mlp[row + i / 2u] >> (16u * (i & 1u))) & 0xffffu);
    }
    let word = mlp[row + i / 4u];
    if (WEIGHT_FORMAT == 2u) {
        return e4m3_value((word >> (8u * (i % 4u))) & 0xffu) * scale;
    }
    let q = bitcast<i32>(word << (24u - 8u * (i % 4u))) >> 24u;
    if (WEIGHT_FORMAT == 3u) {
        let scales = LAYER_WORD_OFFSET[l] + LAYER_OUTPUTS[l] * LAYER_ROW_WORDS[l];
        return f32(q) * bitcast<f32>(mlp[scales + o * LAYER_SCALES_PER_ROW[l] + i / 32u]);
    }
    return f32(q) * scale;
}

fn layer_scale(l: u32, o: u32) -> f32 {
    return bitcast<f32>(mlp[LAYER_WORD_OFFSET[l] + LAYER_OUTPUTS[l] * LAYER_ROW_WORDS[l] + o * LAYER_SCALES_PER_ROW[l]]);
}

fn layer_bias(l: u32, o: u32) -> f32 {
    return bitcast<f32>(mlp[LAYER_WORD_OFFSET[l] + LAYER_OUTPUTS[l] * (LAYER_ROW_WORDS[l] + LAYER_SCALES_PER_ROW[l]) + o]);
}

fn reads_channel(map_index: u32, channel: u32) -> bool {
    return ((MAP_MASK[map_index * MASK_WORDS + channel / 32u] >> (channel % 32u)) & 1u) == 1u;
}

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
    var act: array<f32, 2u * MAX_WIDTH>;
    let src = decode_hidden(map_index, uv, level, &act);
    return decode_output(map_index, &act, src);
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
// hidden layers, in `act` (two halves: a layer's input and output, ping-pong). Returns where in
// `act` the last hidden layer's activations start. Depends on the map only through the latent
// channels it reads (`MAP_MASK`): maps with equal masks (`same_budget`) share the result.
fn decode_hidden(map_index: u32, uv: vec2<f32>, level: u32, act: ptr<function, array<f32, 2u * MAX_WIDTH>>) -> u32 {
    let first_slot = pyramid_level(level) * GRID_COUNT;
    // 1-2. Latent fetch of the channels in the map's budget (the others are 0).
    for (var g = 0u; g < GRID_COUNT; g++) {
        let slot = first_slot + g;
        let corners = bilinear_corners(uv, GRID_WIDTH[slot], GRID_HEIGHT[slot]);
        let channels = GRID_CHANNELS[g];
        for (var c = 0u; c < channels; c++) {
            let feature = GRID_FIRST_CHANNEL[g] + c;
            var value = 0.0;
            if (reads_channel(map_index, feature)) {
                for (var k = 0u; k < 4u; k++) {
                    value += corners.weights[k] * latent_value(g, slot, corners.cells[k] * channels + c);
                }
            }
            act[feature] = value;
        }
    }

    // 3. Positional encoding in the level's grid-0 cells, then the LOD input.
    let pe_start = GRID_FIRST_CHANNEL[GRID_COUNT - 1u] + GRID_CHANNELS[GRID_COUNT - 1u];
    if (PYRAMID_LEVELS > 1u) {
        act[pe_start + 4u * PE_FREQUENCIES] = f32(lod_level(level)) * LOD_INPUT_SCALE;
    }
    let px = uv.x * f32(GRID_WIDTH[first_slot]);
    let py = uv.y * f32(GRID_HEIGHT[first_slot]);
    for (var k = 0u; k < PE_FREQUENCIES; k++) {
        let a = TAU * f32(1u << k) * 0.5;
        let ax = reduce_angle(a * px);
        let ay = reduce_angle(a * py);
        let i = pe_start + 4u * k;
        act[i] = sin(ax);
        act[i + 1u] = cos(ax);
        act[i + 2u] = sin(ay);
        act[i + 3u] = cos(ay);
    }

    // 4. MLP: hidden layers with ReLU, ping-ponging between act[0..MAX_WIDTH] and the rest.
    var src = 0u;
    for (var l = 0u; l + 1u < LAYER_COUNT; l++) {
        let dst = MAX_WIDTH - src;
        for (var o = 0u; o < LAYER_OUTPUTS[l]; o++) {
            let scale = layer_scale(l, o);
            var z = layer_bias(l, o);
            for (var i = 0u; i < LAYER_INPUTS[l]; i++) {
                z += weight(l, o, i, scale) * act[src + i];
            }
            act[dst + o] = max(z, 0.0);
        }
        src = dst;
    }
    return src;
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
fn decode_output(map_index: u32, act: ptr<function, array<f32, 2u * MAX_WIDTH>>, src: u32) -> vec4<f32> {
    let last = LAYER_COUNT - 1u;
    var result = vec4<f32>(0.0);
    for (var c = 0u; c < min(MAP_CHANNELS[map_index], 4u); c++) {
        let o = MAP_OUTPUT_OFFSET[map_index] + c;
        let scale = layer_scale(last, o);
        var z = layer_bias(last, o);
        for (var i = 0u; i < LAYER_INPUTS[last]; i++) {
            z += weight(last, o, i, scale) * (*act)[src + i];
        }
        result[c] = clamp(z, 0.0, 1.0);
    }

    // A colour variant: an affine transform of the shared outputs (as
    // `texset_core::bundle::apply_color_rows`: offset first, then the four channels in order).
    if (MAP_TRANSFORM[map_index] == 1u) {
        let source = result;
        for (var c = 0u; c < min(MAP_CHANNELS[map_index], 4u); c++) {
            let row = map_index * 20u + c * 5u;
            var z = bitcast<f32>(MAP_TRANSFORM_BITS[row + 4u]);
            for (var k = 0u; k < 4u; k++) {
                z += bitcast<f32>(MAP_TRANSFORM_BITS[row + k]) * source[k];
            }
            result[c] = clamp(z, 0.0, 1.0);
        }
    }
    return result;
}

// The sRGB transfer function, inverse (exactly as `texset_core::model::reference::srgb_to_linear`).
fn srgb_to_linear(c: f32) -> f32 {
    if (c <= 0.04045) {
        return c / 12.92;
    }
    return pow((c + 0.055) / 1.055, 2.4);
}

// `decode_texel` un-mapped for shading (as `texset_core::model::reference::unmap`): the channel range
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

fn decode_mode(map_index: u32, uv: vec2<f32>) -> vec4<f32> {
    let t = decode_texel_lod(map_index, uv, params.lod);
    if (params.mode == 1u) {
        return unmap_texel(map_index, t);
    }
    return t;
}

// Decodes one whole map (`params.width x params.height`), one invocation per texel, into
// `output` as f32 `[y][x][c]` with `params.channels` channels.
@compute @workgroup_size(WORKGROUP_SIDE, WORKGROUP_SIDE, 1)
fn cs_decode_map(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x >= params.width || id.y >= params.height || params.map_index >= MAP_COUNT) {
        return;
    }
    let uv = vec2<f32>((f32(id.x) + 0.5) / f32(params.width), (f32(id.y) + 0.5) / f32(params.height));
    let texel = decode_mode(params.map_index, uv);
    let base = (id.y * params.width + id.x) * params.channels;
    for (var c = 0u; c < min(params.channels, 4u); c++) {
        output[base + c] = texel[c];
    }
}

// Decodes `params.sample_count` random-access samples at `samples[i]` into `output[4 i ..]`.
@compute @workgroup_size(SAMPLE_WORKGROUP, 1, 1)
fn cs_decode_samples(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = id.y * groups.x * SAMPLE_WORKGROUP + id.x;
    if (i >= params.sample_count || params.map_index >= MAP_COUNT) {
        return;
    }
    let texel = decode_mode(params.map_index, samples[i]);
    for (var c = 0u; c < 4u; c++) {
        output[4u * i + c] = texel[c];
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
