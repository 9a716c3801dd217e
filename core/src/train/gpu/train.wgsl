// texset's fused GPU trainer: one training step is four dispatches (three where the weight
// gradients are fused) over buffers that stay on the device (train/gpu/mod.rs records them, up to
// STATS_RING steps to a submission, each step reading its own slot of a ring of `Step` uniforms):
//   prepare       the decoder's weights as the forward pass reads them, in the decoder's packed
//                 `vec4` layout (a copy, or in the weight fine-tune their values in the bundle's
//                 format: int8, fp16, E4M3 or MXINT8)
//   fwd_bwd       per texel: draw it (counter-based hash of seed, step, texel), gather the latents
//                 (bilinear, its mip level, ±½-step QAT noise), MLP forward, loss, backward
//                 (`mlp_train`, generated); stores each layer's input and output gradient for `wgrad`
//                 (or, fused, sums the weight gradients over its workgroup's texels in workgroup
//                 memory and stores the workgroup's partial: fused.rs), and scatters the latent
//                 gradients into 32.32 fixed-point integer accumulators (integer atomics: exact
//                 and order-free, so a step is deterministic for a seed on one device)
//   wgrad         weight and bias gradients summed over fixed chunks of texels, in order, in
//                 tiles of the adapter's size (generated: wgsl.rs `wgrad_wgsl`); not there when fused
//   adam          one Adam update of every parameter (grid gradients read from fixed point and
//                 cleared, weight gradients summed over the chunks in order; while the grids are
//                 frozen, of the weights alone); its first workgroup also sums the step's loss
//                 into a ring the host reads back asynchronously (a sum per lane)
// The model math is core/src/model/params.rs's; the CPU twin is train/kernel.rs, and the parity
// tests compare the two. The host prepends the constants below (`const N: u32 = …;`) and the
// generated `mlp` (the packed weights, in the memory they are read from) and `load_weights`
// (their copy to workgroup memory, where they go there), `packed_at` (the packed layout),
// `gather` (the features' layout), `mlp_train` (the layers with their shapes, from the one MLP
// generator, core/src/model/wgsl.rs), and the `wgrad` entry point.

struct Step {
    step: u32,
    seed_lo: u32,
    seed_hi: u32,
    flags: u32,
    noise_amplitude: f32,
    lr_grid: f32,
    lr_mlp: f32,
    c1: f32,
    c2: f32,
    grad_scale: f32,
    stats_slot: u32,
    adam_beta2: f32,
    // The first parameter `adam` updates: 0, or GRID_TOTAL while the grids are frozen (the
    // dispatch then covers the weights alone).
    adam_first: u32,
}

// The `Step` flags (FLAG_*), the workgroup size (WG), model/quant.rs's E4M3_MAX and MX_BLOCK,
// train/adam.rs's ADAM_BETA1 and ADAM_EPS and model/params.rs's LOD_INPUT_SCALE are prepended
// by the host from its own constants (wgsl.rs `specialise`).

@group(0) @binding(0) var<uniform> u: Step;
// Tables (u32; f32 values as bits): groups, cumulative draws, per group and output channel its
// reference (first value, stride, loss weight), masks, grids, layers,
// and the given samples of a parity test.
@group(0) @binding(1) var<storage, read> tables: array<u32>;
@group(0) @binding(2) var<storage, read> texels: array<f32>;
// Every parameter: the grids of every pyramid level, then per layer its weights and biases.
@group(0) @binding(3) var<storage, read_write> params: array<f32>;
// The layers' weights and biases as the forward and backward passes read them.
@group(0) @binding(4) var<storage, read_write> fwdw: array<f32>;
// Per layer, every texel's input row and output-gradient row, each whole `vec4`s (zero-padded):
// lavapipe runs a storage access lane by lane, so one access of four values costs about one of one.
@group(0) @binding(5) var<storage, read_write> scratch: array<vec4<f32>>;
// Per grid value, its 32.32 fixed-point gradient: (low, high) words of the positive
// contributions, then of the negative ones.
@group(0) @binding(6) var<storage, read_write> grid_grad: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> stats_part: array<f32>;
@group(0) @binding(8) var<storage, read_write> wpart: array<f32>;
@group(0) @binding(9) var<storage, read_write> adam_m: array<f32>;
@group(0) @binding(10) var<storage, read_write> adam_v: array<f32>;
@group(0) @binding(11) var<storage, read_write> stats: array<f32>;
// `fwdw` again, as the generated `mlp` reads it (wgsl.rs `weights_wgsl`): a uniform buffer
// (binding 12) where the adapter binds one that large (every weight is read at an address uniform
// across the invocations, the uniform buffer's case; layout.rs `fastest_weight_memory` says what
// it saves on lavapipe), else workgroup memory copied from `fwdw`, else a read-only storage buffer
// (binding 14).
// `grid_grad` again, as `adam` reads it after `fwd_bwd` has finished: no atomics left to race, so
// each value's four words are one plain load, and the store that clears them happens only where
// a texel added to them (most cells of a large grid get none in a step). lavapipe ran
// four `atomicExchange`s per value, each a locked instruction, for every grid value every step.
@group(0) @binding(13) var<storage, read_write> grid_acc: array<vec4<u32>>;

// Per texel t of the invocation's TPI, at t · MAXW: xa, the MLP's input features; xb, the latent
// features' gradient. Indexed only by loop counters: divergent indices into private arrays were
// miscompiled on lavapipe.
var<private> xa: array<f32, XLEN>;
var<private> xb: array<f32, XLEN>;
// Per texel of the invocation: its group and its texel in the group; where it reads each grid
// (texel t's grid g at t · GRIDS + g) and its mask row (`gather` writes them, `scatter` reads them).
var<private> drawn: array<vec2<u32>, TPI>;
var<private> texel_grids: array<GridAt, TPI_GRIDS>;
var<private> texel_masks: array<u32, TPI>;
var<workgroup> red: array<vec3<f32>, WG>;

fn t_u(i: u32) -> u32 {
    return tables[i];
}

fn t_f(i: u32) -> f32 {
    return bitcast<f32>(tables[i]);
}

// lowbias32 (Chris Wellons): a well-mixed 32-bit hash.
fn hash(x: u32) -> u32 {
    var h = x;
    h ^= h >> 16u;
    h *= 0x7feb352du;
    h ^= h >> 15u;
    h *= 0x846ca68bu;
    h ^= h >> 16u;
    return h;
}

// The counter-based generator: value `k` of texel `i`'s stream at this step and seed.
fn rand(i: u32, k: u32) -> u32 {
    let s = hash(u.seed_lo ^ hash(u.seed_hi ^ 0x9e3779b9u));
    return hash(hash(s ^ hash(u.step * 0x85ebca6bu + 0x632be5abu)) ^ (i * 0x27d4eb2fu) ^ hash(k + 0x165667b1u));
}

// The per-latent QAT noise of grid value j at this step, uniform in [-1, 1): the CPU trainer's
// `latent_noise` (train/kernel.rs), bit for bit.
fn latent_noise(j: u32) -> f32 {
    let s = hash(u.seed_lo ^ hash(u.seed_hi ^ 0x9e3779b9u));
    return unit(hash(hash(s ^ hash(u.step * 0x85ebca6bu + 0x632be5abu)) ^ (j * 0x27d4eb2fu) ^ 0x2c1b3c6du)) * 2.0 - 1.0;
}

// The high word of a 32×32-bit product: `mulhi(h, n)` maps a uniform u32 onto 0..n.
fn mulhi(a: u32, b: u32) -> u32 {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let lo = a0 * b0;
    let m1 = a1 * b0;
    let m2 = a0 * b1;
    let mid = (lo >> 16u) + (m1 & 0xffffu) + (m2 & 0xffffu);
    return a1 * b1 + (m1 >> 16u) + (m2 >> 16u) + (mid >> 16u);
}

fn unit(h: u32) -> f32 {
    return f32(h >> 8u) * (1.0 / 16777216.0);
}

// Adds `value` to the fixed-point gradient of grid value `j`: four words, (low, high) of the
// positive contributions, then of the negative ones, each 32.32. Integer additions are exact and
// commute; splitting by sign leaves the high word's atomic for the rare contribution of 1 or
// more and the carries.
fn fx_add(j: u32, value: f32) {
    let m = min(abs(value), 1e9);
    let whole = floor(m);
    let hi = u32(whole);
    let lo = u32((m - whole) * 4294967296.0);
    let at = 4u * j + select(0u, 2u, value < 0.0);
    let old = atomicAdd(&grid_grad[at], lo);
    let high = hi + select(0u, 1u, old + lo < old);
    if high != 0u {
        atomicAdd(&grid_grad[at + 1u], high);
    }
}

// The nearest IEEE half to `x` (ties to even), as an f32: what the `half` crate's `f16::from_f32`
// gives (quantizeToF16 and pack2x16float need a capability not every device has).
fn round_f16(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    let magnitude = bits & 0x7fffffffu;
    if magnitude >= 0x38800000u {
        // Normal in half: keep 10 of the 23 mantissa bits, rounding half to even.
        let lsb = (magnitude >> 13u) & 1u;
        let rounded = (magnitude + 0xfffu + lsb) & 0xffffe000u;
        return bitcast<f32>((bits & 0x80000000u) | min(rounded, 0x477fe000u));
    }
    // Subnormal in half: multiples of 2^-24 (WGSL's round() takes ties to even).
    return sign(x) * round(abs(x) * 16777216.0) / 16777216.0;
}

// Rust's f32::round: halves away from zero (WGSL's round() takes them to even).
fn round_away(x: f32) -> f32 {
    return sign(x) * floor(abs(x) + 0.5);
}

// ⌊log2 |x|⌋ of a normal f32, exactly, from its exponent bits (-127 for zero and subnormals).
fn exponent_of(x: f32) -> i32 {
    return i32((bitcast<u32>(x) >> 23u) & 0xffu) - 127;
}

// 2^n for -126 ≤ n ≤ 127, exactly.
fn pow2(n: i32) -> f32 {
    return bitcast<f32>(u32(n + 127) << 23u);
}

// The E4M3 value nearest to `v` (model/quant.rs `e4m3_value(e4m3_code(v))`): 3 mantissa bits,
// exponents down to -6 (subnormals below), saturating at ±448, ties away from zero.
fn round_e4m3(v: f32) -> f32 {
    let x = abs(v);
    if x >= E4M3_MAX {
        return sign(v) * E4M3_MAX;
    }
    let step = pow2(max(exponent_of(x), -6) - 3);
    return sign(v) * floor(x / step + 0.5) * step;
}

// The sum of every invocation's `value` in the workgroup, reduced as a tree in a fixed order
// (the same bits every run). Call from uniform control flow: it holds barriers.
fn workgroup_sum(lid: u32, value: vec3<f32>) -> vec3<f32> {
    red[lid] = value;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if lid < s {
            red[lid] += red[lid + s];
        }
        workgroupBarrier();
    }
    return red[0];
}

// The loss of output `o` with value `y` for the texel's group (`outputs`: its row of the per-group
// table: data, stride, weight; weight 0: not targeted): adds Σ weight · (y − t)² to `sums` and
// returns dLoss/dy. Called once per output with a literal `o` by the generated `mlp_train`.
fn loss_grad(outputs: u32, texel: u32, o: u32, y: f32, sums: ptr<function, vec3<f32>>) -> f32 {
    let lw = t_f(outputs + 3u * o + 2u);
    var d = 0.0;
    if lw != 0.0 {
        d = y - texels[t_u(outputs + 3u * o) + texel * t_u(outputs + 3u * o + 1u)];
        *sums += vec3<f32>(lw * d * d, d * d, 1.0);
    }
    return 2.0 * lw * d;
}

@compute @workgroup_size(WG)
fn prepare(@builtin(global_invocation_id) gid: vec3<u32>) {
    let r = gid.x;
    if r >= ROWS {
        return;
    }
    // The layer holding row r.
    var l = 0u;
    var first = 0u;
    loop {
        let outs = layer_outputs(l);
        if r < first + outs || l + 1u >= LAYERS {
            break;
        }
        first += outs;
        l += 1u;
    }
    let nin = layer_inputs(l);
    let o = r - first;
    // The row's weights and bias: `src` and `b` in the flat parameters, `row` and `at.y` in the
    // packed layout (`packed_at`, generated).
    let src = GRID_TOTAL + layer_weights(l) + o * nin;
    let b = layer_biases(l) + o;
    let at = packed_at(l, o);
    let row = at.x;
    fwdw[at.y] = params[GRID_TOTAL + b];
    if (u.flags & (FLAG_INT8 | FLAG_E4M3)) != 0u {
        // One scale per row: its largest magnitude maps to the format's largest code.
        var max_abs = 0.0;
        for (var k = 0u; k < nin; k++) {
            max_abs = max(max_abs, abs(params[src + k]));
        }
        let int8 = (u.flags & FLAG_INT8) != 0u;
        let top = select(E4M3_MAX, 127.0, int8);
        let scale = select(1.0, max_abs / top, max_abs > 0.0);
        for (var k = 0u; k < nin; k++) {
            let q = params[src + k] / scale;
            if int8 {
                fwdw[row + k] = clamp(round_away(q), -127.0, 127.0) * scale;
            } else {
                fwdw[row + k] = round_e4m3(q) * scale;
            }
        }
    } else if (u.flags & FLAG_MXINT8) != 0u {
        // A power-of-two scale per block of MX_BLOCK inputs, its largest magnitude in [64, 128).
        for (var first = 0u; first < nin; first += MX_BLOCK) {
            let end = min(first + MX_BLOCK, nin);
            var max_abs = 0.0;
            for (var k = first; k < end; k++) {
                max_abs = max(max_abs, abs(params[src + k]));
            }
            var scale = 1.0;
            if max_abs > 0.0 {
                scale = pow2(clamp(exponent_of(max_abs) - 6, -126, 127));
            }
            for (var k = first; k < end; k++) {
                fwdw[row + k] = clamp(round_away(params[src + k] / scale), -127.0, 127.0) * scale;
            }
        }
    } else if (u.flags & FLAG_FP16) != 0u {
        for (var k = 0u; k < nin; k++) {
            fwdw[row + k] = round_f16(params[src + k]);
        }
    } else {
        for (var k = 0u; k < nin; k++) {
            fwdw[row + k] = params[src + k];
        }
    }
}

// Draws texel i of the step: a group by its share of the draws, then a texel of it; (group,
// texel). A parity test gives them instead.
fn draw(i: u32) -> vec2<u32> {
    if (u.flags & FLAG_GIVEN_SAMPLES) != 0u {
        return vec2<u32>(t_u(SAMPLES_OFF + 2u * i), t_u(SAMPLES_OFF + 2u * i + 1u));
    }
    let r = mulhi(rand(i, 0u), TOTAL_DRAWS);
    var lo = 0u;
    var hi = GROUPS;
    while lo < hi {
        let mid = (lo + hi) / 2u;
        if t_u(CUM_OFF + mid) <= r {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    let g = min(lo, GROUPS - 1u);
    var start = 0u;
    if g > 0u {
        start = t_u(CUM_OFF + g - 1u);
    }
    return vec2<u32>(g, (r - start) / t_u(GROUP_OFF + g * 4u + 3u));
}

// The texel's centre in its group's (u, v).
fn texel_uv(g: u32, texel: u32) -> vec2<f32> {
    let width = t_u(GROUP_OFF + g * 4u);
    let height = t_u(GROUP_OFF + g * 4u + 1u);
    return vec2<f32>((f32(texel % width) + 0.5) / f32(width), (f32(texel / width) + 0.5) / f32(height));
}

// A group's level word is its LOD level (`texset_core::model::params::lod_level`); the pyramid
// level whose grids it reads is model.wgsl's `pyramid_level` of it.

// Grid gi's pyramid level `level` as a texel at `uv` reads it: where its values start, its
// channels, and the texel's bilinear corners in it.
struct GridAt {
    base: u32,
    channels: u32,
    corners: Corners,
}

fn grid_at(level: u32, gi: u32, uv: vec2<f32>) -> GridAt {
    let info = GRID_OFF + GRIDS + (level * GRIDS + gi) * 3u;
    return GridAt(t_u(info), t_u(GRID_OFF + gi), bilinear_corners(uv, t_u(info + 1u), t_u(info + 2u)));
}

// Where texel (group g, `texel`) reads: its LOD level, the pyramid level of its grids, its mask row
// and its (u, v).
struct TexelAt {
    lod: u32,
    level: u32,
    mask_base: u32,
    uv: vec2<f32>,
}

fn texel_at(g: u32, texel: u32) -> TexelAt {
    let lod = t_u(GROUP_OFF + g * 4u + 2u);
    return TexelAt(lod, pyramid_level(lod), MASK_OFF + g * LC, texel_uv(g, texel));
}

// Latent feature `feature` (channel k of `grid`) of texel i: bilinear, masked, with QAT noise
// when it trains. The generated `gather` calls it per feature with literals, so each lands in
// `xa` at an index known at compile time.
fn latent_feature(i: u32, grid: GridAt, k: u32, feature: u32, mask_base: u32) -> f32 {
    let noisy = (u.flags & FLAG_NOISE) != 0u;
    let per_latent = (u.flags & FLAG_NOISE_PER_LATENT) != 0u;
    var value = 0.0;
    for (var corner = 0u; corner < 4u; corner++) {
        let j = grid.base + grid.corners.cells[corner] * grid.channels + k;
        var x = params[j];
        if noisy && per_latent {
            x = clamp(x + latent_noise(j) * u.noise_amplitude, -1.0, 1.0);
        } else if noisy {
            x += (unit(rand(i, 1u + feature * 4u + corner)) * 2.0 - 1.0) * u.noise_amplitude;
        }
        value += grid.corners.weights[corner] * x;
    }
    return value * t_f(mask_base + feature);
}

// Channel k of `grid` at one of its four corners, times the corner's bilinear weight (a grid whose
// corners the decoder reads gives the four as inputs of their own), with `latent_feature`'s noise.
fn latent_corner(i: u32, grid: GridAt, k: u32, corner: u32, channel: u32, mask_base: u32) -> f32 {
    let j = grid.base + grid.corners.cells[corner] * grid.channels + k;
    var x = params[j];
    if (u.flags & FLAG_NOISE) != 0u {
        if (u.flags & FLAG_NOISE_PER_LATENT) != 0u {
            x = clamp(x + latent_noise(j) * u.noise_amplitude, -1.0, 1.0);
        } else {
            x += (unit(rand(i, 1u + channel * 4u + corner)) * 2.0 - 1.0) * u.noise_amplitude;
        }
    }
    return grid.corners.weights[corner] * x * t_f(mask_base + channel);
}

// The texel's position in grid 0's cells at its level: the positional encoding's input (model.wgsl's
// `pe_sin_cos`, the decoder's, with its angle reduction).
fn pe_position(at: TexelAt) -> vec2<f32> {
    let grid0 = GRID_OFF + GRIDS + at.level * GRIDS * 3u;
    return at.uv * vec2<f32>(f32(t_u(grid0 + 1u)), f32(t_u(grid0 + 2u)));
}

// Adds the gradient `d` of a corner input (`latent_corner`) to its cell, times the corner's weight.
fn scatter_corner(grid: GridAt, k: u32, corner: u32, d: f32) {
    if d != 0.0 {
        fx_add(grid.base + grid.corners.cells[corner] * grid.channels + k, grid.corners.weights[corner] * d);
    }
}

// Adds the gradient `d` of channel k of `grid` to its four corners, each times its bilinear
// weight. The generated `scatter` calls it per feature with literals.
fn scatter_feature(grid: GridAt, k: u32, d: f32) {
    if d != 0.0 {
        for (var corner = 0u; corner < 4u; corner++) {
            fx_add(grid.base + grid.corners.cells[corner] * grid.channels + k, grid.corners.weights[corner] * d);
        }
    }
}

// Every invocation trains TPI consecutive texels (N is a multiple of a workgroup's texels): the
// generated `mlp_train` loads each weight once for all of them (wgsl.rs `mlp_wgsl` says why that
// pays).
@compute @workgroup_size(WG)
fn fwd_bwd(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    load_weights(lid);
    let first = gid.x * TPI;
    // Draws the TPI texels and gathers their features into xa (generated).
    gather(first);

    // Forward, loss and backward of the TPI texels (`mlp_train`, generated with the layers' shapes as
    // literals: each activation a named value, so none is indexed at run time). xb[t · MAXW..][..LC]
    // ends as texel t's latent features' gradient.
    let sums = mlp_train(first, lid, wid.x);

    if (u.flags & FLAG_TRAIN_GRIDS) != 0u {
        // The latent gradients of the TPI texels, scattered (generated).
        scatter();
    }

    // The workgroup's loss sums.
    let total = workgroup_sum(lid, sums);
    if lid == 0u {
        stats_part[wid.x * 3u] = total.x;
        stats_part[wid.x * 3u + 1u] = total.y;
        stats_part[wid.x * 3u + 2u] = total.z;
    }
}

@compute @workgroup_size(WG)
fn adam(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    // The step's loss sums into the ring (`fwd_bwd`, which wrote them, has finished): a pass of
    // its own would cost a dispatch per step.
    if wid.x == 0u && wid.y == 0u {
        reduce_stats(lid);
    }
    let j = u.adam_first + gid.y * ADAM_ROW + gid.x;
    if j >= P_ALL {
        return;
    }
    var g = 0.0;
    var lr = u.lr_mlp;
    let is_grid = j < GRID_TOTAL;
    if is_grid {
        if (u.flags & FLAG_TRAIN_GRIDS) == 0u {
            return;
        }
        // (low, high) of the positive contributions, then of the negative ones.
        let w = grid_acc[j];
        if any(w != vec4<u32>(0u)) {
            grid_acc[j] = vec4<u32>(0u);
        }
        g = f32(bitcast<i32>(w.y - w.w)) + (f32(w.x) - f32(w.z)) * 2.3283064365386963e-10;
        lr = u.lr_grid;
    } else {
        let p = j - GRID_TOTAL;
        for (var c = 0u; c < CHUNKS; c++) {
            g += wpart[c * PL + p];
        }
    }
    if g == 0.0 && (u.flags & FLAG_SPARSE) != 0u {
        return;
    }
    g *= u.grad_scale;
    let m = ADAM_BETA1 * adam_m[j] + (1.0 - ADAM_BETA1) * g;
    let v = u.adam_beta2 * adam_v[j] + (1.0 - u.adam_beta2) * g * g;
    adam_m[j] = m;
    adam_v[j] = v;
    var theta = params[j] - lr * (m / u.c1) / (sqrt(v / u.c2) + ADAM_EPS);
    if is_grid {
        theta = clamp(theta, -1.0, 1.0);
    }
    params[j] = theta;
}

// The workgroups' loss sums of `fwd_bwd` into the ring's slot of this step: each lane of one
// workgroup sums every WG-th of them, and the host adds the lanes' sums up when it reads the ring.
// No barrier: llvmpipe runs every workgroup of a kernel with one as coroutines (`adam` took
// 0.5 ms longer per step with a workgroup reduction here).
fn reduce_stats(lid: u32) {
    var acc = vec3<f32>(0.0);
    for (var w = lid; w < N / (WG * TPI); w += WG) {
        acc += vec3<f32>(stats_part[w * 3u], stats_part[w * 3u + 1u], stats_part[w * 3u + 2u]);
    }
    let at = (u.stats_slot * WG + lid) * 3u;
    stats[at] = acc.x;
    stats[at + 1u] = acc.y;
    stats[at + 2u] = acc.z;
}
