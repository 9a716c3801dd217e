// texset's fused GPU trainer: one training step is five dispatches over buffers that stay on the
// device (train/gpu/mod.rs records them):
//   prepare       the decoder's weights as the forward pass reads them (a copy, or in the weight
//                 fine-tune their values in the bundle's format: int8, fp16, E4M3 or MXINT8)
//   fwd_bwd       per texel: draw it (counter-based hash of seed, step, texel), gather the latents
//                 (bilinear, its mip level, ±½-step QAT noise), MLP forward, loss, backward;
//                 stores each layer's input and output gradient for `wgrad`, and scatters the
//                 latent gradients into 32.32 fixed-point integer accumulators (integer atomics:
//                 exact and order-free, so a step is deterministic for a seed on one device)
//   wgrad         weight and bias gradients summed over fixed chunks of texels, in order, in
//                 4×4 tiles
//   stats_reduce  the step's loss sums into a ring the host reads back asynchronously
//   adam          one Adam update of every parameter (grid gradients read from fixed point and
//                 cleared, weight gradients summed over the chunks in order)
// The model math is core/src/model/params.rs's; the CPU twin is train/kernel.rs, and the parity
// tests compare the two. The host prepends the constants below (`const N: u32 = …;`).

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
    pad: u32,
}

const FLAG_GIVEN_SAMPLES: u32 = 1u;
const FLAG_NOISE: u32 = 2u;
const FLAG_TRAIN_GRIDS: u32 = 4u;
const FLAG_INT8: u32 = 8u;
const FLAG_FP16: u32 = 16u;
const FLAG_E4M3: u32 = 32u;
const FLAG_MXINT8: u32 = 64u;
// model/quant.rs's E4M3_MAX and MX_BLOCK.
const E4M3_MAX: f32 = 448.0;
const MX_BLOCK: u32 = 32u;

const ADAM_BETA1: f32 = 0.9;
const ADAM_BETA2: f32 = 0.99;
const ADAM_EPS: f32 = 1e-8;
const TAU: f32 = 6.283185307179586;
const LOD_INPUT_SCALE: f32 = 0.25;
const WG: u32 = 64u;

@group(0) @binding(0) var<uniform> u: Step;
// Tables (u32; f32 values as bits): groups, cumulative draws, per group and output channel its
// reference (first value, stride, loss weight), masks, grids, layers,
// and the given samples of a parity test.
@group(0) @binding(1) var<storage, read> tables: array<u32>;
@group(0) @binding(2) var<storage, read> texels: array<f32>;
// Every parameter: the grids of every pyramid level, then per layer its weights and biases.
@group(0) @binding(3) var<storage, read_write> params: array<f32>;
// The layers' weights and biases as the forward pass reads them, then the weights transposed
// (`[input][output]` per layer, at the same offsets plus PL).
@group(0) @binding(4) var<storage, read_write> fwdw: array<f32>;
// Per layer, every texel's input row and output-gradient row.
@group(0) @binding(5) var<storage, read_write> scratch: array<f32>;
// Per grid value, its 32.32 fixed-point gradient: (low, high) words of the positive
// contributions, then of the negative ones.
@group(0) @binding(6) var<storage, read_write> grid_grad: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> stats_part: array<f32>;
@group(0) @binding(8) var<storage, read_write> wpart: array<f32>;
@group(0) @binding(9) var<storage, read_write> adam_m: array<f32>;
@group(0) @binding(10) var<storage, read_write> adam_v: array<f32>;
@group(0) @binding(11) var<storage, read_write> stats: array<f32>;

var<private> xa: array<f32, MAXW>;
var<private> xb: array<f32, MAXW>;
var<workgroup> wsh: array<f32, WSH_LEN>;
var<workgroup> red: array<vec3<f32>, WG>;

fn t_u(i: u32) -> u32 {
    return tables[i];
}

fn t_f(i: u32) -> f32 {
    return bitcast<f32>(tables[i]);
}

fn weight(i: u32) -> f32 {
    if W_SHARED {
        return wsh[i];
    }
    return fwdw[i];
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

struct Corners {
    cells: vec4<u32>,
    weights: vec4<f32>,
}

// Bilinear clamp-to-edge corners, as model/reference.rs `bilinear_corners`.
fn corners(uu: f32, vv: f32, width: u32, height: u32) -> Corners {
    let gx = uu * f32(width) - 0.5;
    let gy = vv * f32(height) - 0.5;
    let fx0 = floor(gx);
    let fy0 = floor(gy);
    let fx = gx - fx0;
    let fy = gy - fy0;
    let max_x = f32(width - 1u);
    let max_y = f32(height - 1u);
    let x0 = u32(clamp(fx0, 0.0, max_x));
    let x1 = u32(clamp(fx0 + 1.0, 0.0, max_x));
    let y0 = u32(clamp(fy0, 0.0, max_y));
    let y1 = u32(clamp(fy0 + 1.0, 0.0, max_y));
    var c: Corners;
    c.cells = vec4<u32>(y0 * width + x0, y0 * width + x1, y1 * width + x0, y1 * width + x1);
    c.weights = vec4<f32>((1.0 - fx) * (1.0 - fy), fx * (1.0 - fy), (1.0 - fx) * fy, fx * fy);
    return c;
}

// One layer forward for texel i: xa (its input) → xa (its output); the input row is kept in the
// scratch for the backward pass and `wgrad`. Four outputs at a time, from the transposed
// weights (`fwdw[PL..]`, `[input][output]`): each input is read once per four multiply-adds.
fn forward_layer(i: u32, nin: u32, nout: u32, w: u32, b: u32, act_base: u32, relu: bool) {
    let act = act_base + i * nin;
    for (var k = 0u; k < nin; k++) {
        scratch[act + k] = xa[k];
    }
    let wt = PL + w;
    var o = 0u;
    for (; o + 4u <= nout; o += 4u) {
        var s = vec4<f32>(weight(b + o), weight(b + o + 1u), weight(b + o + 2u), weight(b + o + 3u));
        for (var k = 0u; k < nin; k++) {
            let at = wt + k * nout + o;
            s += vec4<f32>(weight(at), weight(at + 1u), weight(at + 2u), weight(at + 3u)) * xa[k];
        }
        if relu {
            s = max(s, vec4<f32>(0.0));
        }
        xb[o] = s.x;
        xb[o + 1u] = s.y;
        xb[o + 2u] = s.z;
        xb[o + 3u] = s.w;
    }
    for (; o < nout; o++) {
        var s = weight(b + o);
        for (var k = 0u; k < nin; k++) {
            s += weight(wt + k * nout + o) * xa[k];
        }
        xb[o] = select(s, max(s, 0.0), relu);
    }
    for (var q = 0u; q < nout; q++) {
        xa[q] = xb[q];
    }
}

// One layer backward for texel i: xb (its output's gradient) → xb (its input's); the output
// gradient row is kept for `wgrad`. `hidden`: the input is a ReLU output (not the features), so
// its gradient is masked where the stored input is 0. Four inputs at a time, from the weights'
// rows (`[output][input]`).
fn backward_layer(i: u32, nin: u32, nout: u32, w: u32, act_base: u32, dz_base: u32, hidden: bool) {
    let act = act_base + i * nin;
    let dz = dz_base + i * nout;
    for (var o = 0u; o < nout; o++) {
        scratch[dz + o] = xb[o];
    }
    var k = 0u;
    for (; k + 4u <= nin; k += 4u) {
        var s = vec4<f32>(0.0);
        for (var o = 0u; o < nout; o++) {
            let at = w + o * nin + k;
            s += vec4<f32>(weight(at), weight(at + 1u), weight(at + 2u), weight(at + 3u)) * xb[o];
        }
        if hidden {
            let a = vec4<f32>(scratch[act + k], scratch[act + k + 1u], scratch[act + k + 2u], scratch[act + k + 3u]);
            s = select(vec4<f32>(0.0), s, a > vec4<f32>(0.0));
        }
        xa[k] = s.x;
        xa[k + 1u] = s.y;
        xa[k + 2u] = s.z;
        xa[k + 3u] = s.w;
    }
    for (; k < nin; k++) {
        var s = 0.0;
        for (var o = 0u; o < nout; o++) {
            s += weight(w + o * nin + k) * xb[o];
        }
        if hidden && scratch[act + k] <= 0.0 {
            s = 0.0;
        }
        xa[k] = s;
    }
    for (var q = 0u; q < nin; q++) {
        xb[q] = xa[q];
    }
}

@compute @workgroup_size(64)
fn prepare(@builtin(global_invocation_id) gid: vec3<u32>) {
    let r = gid.x;
    if r >= ROWS {
        return;
    }
    // The layer holding row r.
    var l = 0u;
    var first = 0u;
    loop {
        let outs = t_u(LAYER_OFF + l * 6u + 1u);
        if r < first + outs || l + 1u >= LAYERS {
            break;
        }
        first += outs;
        l += 1u;
    }
    let lb = LAYER_OFF + l * 6u;
    let nin = t_u(lb);
    let nout = t_u(lb + 1u);
    let o = r - first;
    let row = t_u(lb + 2u) + o * nin;
    let b = t_u(lb + 3u) + o;
    fwdw[b] = params[GRID_TOTAL + b];
    let src = GRID_TOTAL + row;
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
    // The transposed copy the forward pass reads: `[input][output]`.
    let wt = PL + t_u(lb + 2u);
    for (var k = 0u; k < nin; k++) {
        fwdw[wt + k * nout + o] = fwdw[row + k];
    }
}

@compute @workgroup_size(64)
fn fwd_bwd(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    if W_SHARED {
        for (var k = lid; k < 2u * PL; k += WG) {
            wsh[k] = fwdw[k];
        }
        workgroupBarrier();
    }
    // N is a multiple of the workgroup size: every invocation is a texel.
    let i = gid.x;

    // Draw a texel: a group by its share of the draws, then a texel of it.
    var g = 0u;
    var texel = 0u;
    if (u.flags & FLAG_GIVEN_SAMPLES) != 0u {
        g = t_u(SAMPLES_OFF + 2u * i);
        texel = t_u(SAMPLES_OFF + 2u * i + 1u);
    } else {
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
        g = min(lo, GROUPS - 1u);
        var start = 0u;
        if g > 0u {
            start = t_u(CUM_OFF + g - 1u);
        }
        texel = (r - start) / t_u(GROUP_OFF + g * 4u + 3u);
    }
    let gb = GROUP_OFF + g * 4u;
    let width = t_u(gb);
    let height = t_u(gb + 1u);
    let level = t_u(gb + 2u);
    let mask_base = MASK_OFF + g * LC;
    let uu = (f32(texel % width) + 0.5) / f32(width);
    let vv = (f32(texel / width) + 0.5) / f32(height);
    let noisy = (u.flags & FLAG_NOISE) != 0u;

    // Latent gather (masked) and positional encoding into xa.
    var feature = 0u;
    for (var gi = 0u; gi < GRIDS; gi++) {
        let ch = t_u(GRID_OFF + gi);
        let info = GRID_OFF + GRIDS + (level * GRIDS + gi) * 3u;
        let base = t_u(info);
        let c = corners(uu, vv, t_u(info + 1u), t_u(info + 2u));
        for (var k = 0u; k < ch; k++) {
            var value = 0.0;
            for (var corner = 0u; corner < 4u; corner++) {
                var x = params[base + c.cells[corner] * ch + k];
                if noisy {
                    x += (unit(rand(i, 1u + (feature + k) * 4u + corner)) * 2.0 - 1.0) * u.noise_amplitude;
                }
                value += c.weights[corner] * x;
            }
            xa[feature + k] = value * t_f(mask_base + feature + k);
        }
        feature += ch;
    }
    let grid0 = GRID_OFF + GRIDS + level * GRIDS * 3u;
    let px = uu * f32(t_u(grid0 + 1u));
    let py = vv * f32(t_u(grid0 + 2u));
    for (var k = 0u; k < PE; k++) {
        let a = TAU * f32(1u << k) * 0.5;
        xa[LC + 4u * k] = sin(a * px);
        xa[LC + 4u * k + 1u] = cos(a * px);
        xa[LC + 4u * k + 2u] = sin(a * py);
        xa[LC + 4u * k + 3u] = cos(a * py);
    }
    if HAS_LOD {
        xa[LC + 4u * PE] = f32(level) * LOD_INPUT_SCALE;
    }

    // Forward (`forward`, generated: one `forward_layer` call per layer with its shapes as
    // constants, so the compiler can unroll and keep activations in registers).
    forward(i);

    // Loss: Σ weight · (y − t)² over the maps the group trains; xb becomes dLoss/dy. One pass over
    // every output with a per-group table (data, stride, weight; weight 0: not targeted), so the
    // private arrays are indexed alike in every invocation: divergent indices into them were
    // miscompiled on lavapipe.
    var sums = vec3<f32>(0.0);
    let outputs = TARGET_OFF + g * OC * 3u;
    for (var o = 0u; o < OC; o++) {
        let lw = t_f(outputs + 3u * o + 2u);
        var d = 0.0;
        if lw != 0.0 {
            d = xa[o] - texels[t_u(outputs + 3u * o) + texel * t_u(outputs + 3u * o + 1u)];
            sums += vec3<f32>(lw * d * d, d * d, 1.0);
        }
        xb[o] = 2.0 * lw * d;
    }

    // Backward (`backward`, generated likewise): xb ends as the MLP input's gradient.
    backward(i);

    // Latent gradients: bilinear scatter of the masked feature gradients.
    if (u.flags & FLAG_TRAIN_GRIDS) != 0u {
        feature = 0u;
        for (var gi = 0u; gi < GRIDS; gi++) {
            let ch = t_u(GRID_OFF + gi);
            let info = GRID_OFF + GRIDS + (level * GRIDS + gi) * 3u;
            let base = t_u(info);
            let c = corners(uu, vv, t_u(info + 1u), t_u(info + 2u));
            for (var k = 0u; k < ch; k++) {
                let d = xb[feature + k] * t_f(mask_base + feature + k);
                if d != 0.0 {
                    for (var corner = 0u; corner < 4u; corner++) {
                        fx_add(base + c.cells[corner] * ch + k, c.weights[corner] * d);
                    }
                }
            }
            feature += ch;
        }
    }

    // The workgroup's loss sums.
    let total = workgroup_sum(lid, sums);
    if lid == 0u {
        stats_part[wid.x * 3u] = total.x;
        stats_part[wid.x * 3u + 1u] = total.y;
        stats_part[wid.x * 3u + 2u] = total.z;
    }
}

// Weight and bias gradients of one chunk of CHUNK texels, summed in texel order: an invocation
// per 4×4 tile of a layer's weights (the layer's last column of tiles: its biases), so each
// texel's rows are read once per 16 multiply-adds.
@compute @workgroup_size(64)
fn wgrad(@builtin(global_invocation_id) gid: vec3<u32>) {
    var t = gid.x;
    let chunk = gid.y;
    if t >= TILES {
        return;
    }
    var l = 0u;
    loop {
        let lb = LAYER_OFF + l * 6u;
        let tiles = ((t_u(lb + 1u) + 3u) / 4u) * ((t_u(lb) + 3u) / 4u + 1u);
        if t < tiles || l + 1u >= LAYERS {
            break;
        }
        t -= tiles;
        l += 1u;
    }
    let lb = LAYER_OFF + l * 6u;
    let nin = t_u(lb);
    let nout = t_u(lb + 1u);
    let w = t_u(lb + 2u);
    let b = t_u(lb + 3u);
    let act = t_u(lb + 4u);
    let dz = t_u(lb + 5u);
    let k_tiles = (nin + 3u) / 4u + 1u;
    let o0 = (t / k_tiles) * 4u;
    let k0 = (t % k_tiles) * 4u;
    let bias = k0 >= nin;
    let o_in = vec4<bool>(o0 < nout, o0 + 1u < nout, o0 + 2u < nout, o0 + 3u < nout);
    let k_in = vec4<bool>(k0 < nin, k0 + 1u < nin, k0 + 2u < nin, k0 + 3u < nin);
    var c0 = vec4<f32>(0.0);
    var c1 = vec4<f32>(0.0);
    var c2 = vec4<f32>(0.0);
    var c3 = vec4<f32>(0.0);
    let first = chunk * CHUNK;
    for (var n = first; n < first + CHUNK; n++) {
        let d_row = dz + n * nout + o0;
        let d = select(vec4<f32>(0.0), vec4<f32>(scratch[d_row], scratch[d_row + 1u], scratch[d_row + 2u], scratch[d_row + 3u]), o_in);
        if bias {
            c0 += d;
        } else {
            let a_row = act + n * nin + k0;
            let a = select(vec4<f32>(0.0), vec4<f32>(scratch[a_row], scratch[a_row + 1u], scratch[a_row + 2u], scratch[a_row + 3u]), k_in);
            c0 += d * a.x;
            c1 += d * a.y;
            c2 += d * a.z;
            c3 += d * a.w;
        }
    }
    let out = chunk * PL;
    for (var j = 0u; j < 4u; j++) {
        let o = o0 + j;
        if o >= nout {
            break;
        }
        if bias {
            wpart[out + b + o] = c0[j];
        } else {
            let row = out + w + o * nin + k0;
            let c = vec4<f32>(c0[j], c1[j], c2[j], c3[j]);
            for (var i = 0u; i < 4u && k0 + i < nin; i++) {
                wpart[row + i] = c[i];
            }
        }
    }
}

@compute @workgroup_size(64)
fn adam(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.y * ADAM_ROW + gid.x;
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
        let pos_lo = atomicExchange(&grid_grad[4u * j], 0u);
        let pos_hi = atomicExchange(&grid_grad[4u * j + 1u], 0u);
        let neg_lo = atomicExchange(&grid_grad[4u * j + 2u], 0u);
        let neg_hi = atomicExchange(&grid_grad[4u * j + 3u], 0u);
        g = f32(bitcast<i32>(pos_hi - neg_hi)) + (f32(pos_lo) - f32(neg_lo)) * 2.3283064365386963e-10;
        lr = u.lr_grid;
    } else {
        let p = j - GRID_TOTAL;
        for (var c = 0u; c < CHUNKS; c++) {
            g += wpart[c * PL + p];
        }
    }
    g *= u.grad_scale;
    let m = ADAM_BETA1 * adam_m[j] + (1.0 - ADAM_BETA1) * g;
    let v = ADAM_BETA2 * adam_v[j] + (1.0 - ADAM_BETA2) * g * g;
    adam_m[j] = m;
    adam_v[j] = v;
    var theta = params[j] - lr * (m / u.c1) / (sqrt(v / u.c2) + ADAM_EPS);
    if is_grid {
        theta = clamp(theta, -1.0, 1.0);
    }
    params[j] = theta;
}

@compute @workgroup_size(64)
fn stats_reduce(@builtin(local_invocation_index) lid: u32) {
    var acc = vec3<f32>(0.0);
    for (var w = lid; w < N / WG; w += WG) {
        acc += vec3<f32>(stats_part[w * 3u], stats_part[w * 3u + 1u], stats_part[w * 3u + 2u]);
    }
    let total = workgroup_sum(lid, acc);
    if lid == 0u {
        stats[u.stats_slot * 3u] = total.x;
        stats[u.stats_slot * 3u + 1u] = total.y;
        stats[u.stats_slot * 3u + 2u] = total.z;
    }
}
