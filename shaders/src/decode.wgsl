// texset GPU decoder: the WGSL twin of core/src/reference.rs (model spec: core/src/params.rs).
//
// A texel of map `m` at `uv` is decoded as: bilinear clamp-to-edge fetch of every latent grid
// (texel centres at (x + 0.5) / width), times the map's channel-budget mask, positional encoding
// sin/cos(pi * 2^k * u * grid0.width) ..., ReLU MLP (last layer linear), clamp to [0, 1].
//
// This first slice reads *dequantised* f32 latents and f32 weights. Reading the bit-packed latent
// levels and the int8 per-row weights in-shader (4-8x less GPU memory) is a later optimisation.
//
// The fixed maximum sizes below are mirrored in `texset_shaders` (lib.rs), which rejects a bundle
// beyond them with a clear error before any GPU work.

// Most latent grids (same as the bundle limit).
const MAX_GRIDS: u32 = 8u;
// Most MLP layers (same as the bundle limit).
const MAX_LAYERS: u32 = 16u;
// Most latent channels over all grids (the width of a budget mask).
const MAX_LATENT: u32 = 256u;
// Most values of any MLP layer input and of every hidden activation. The last layer's output is
// not bounded: only the decoded map's own slice of it is computed.
const MAX_WIDTH: u32 = 256u;
// Compute workgroup side (8 x 8 texels).
const WORKGROUP_SIDE: u32 = 8u;

// 2*pi split for Cody-Waite range reduction: C1 has 8 significant bits so n * C1 is exact.
const TWO_PI_C1: f32 = 6.28125;
const TWO_PI_C2: f32 = 0.0019353071693331003;
const TWO_PI_C3: f32 = 1.0253131677018246e-11;
const INV_TWO_PI: f32 = 0.15915493667125702;
const TAU: f32 = 6.2831855;

// One latent grid: `height x width x channels` values `[y][x][c]` at `offset` in `values`.
struct GridInfo {
    width: u32,
    height: u32,
    channels: u32,
    offset: u32,
}

// (a) Dequantised latent grids, concatenated.
struct Latents {
    grid_count: u32,
    // Sum of the grids' channels.
    latent_channels: u32,
    _pad0: u32,
    _pad1: u32,
    grids: array<GridInfo, MAX_GRIDS>,
    values: array<f32>,
}

// One dense layer: `outputs x inputs` weights `[out][in]` row-major at `weight_offset`, `outputs`
// biases at `bias_offset` (both in `values`).
struct LayerInfo {
    inputs: u32,
    outputs: u32,
    weight_offset: u32,
    bias_offset: u32,
}

// (b) Dequantised MLP weights and biases.
struct Mlp {
    layer_count: u32,
    pe_frequencies: u32,
    _pad0: u32,
    _pad1: u32,
    layers: array<LayerInfo, MAX_LAYERS>,
    values: array<f32>,
}

// (c) One map of the library (all materials, in library order): its slice of the MLP output and
// its channel budget as a 0/1 mask per latent channel.
struct MapInfo {
    output_offset: u32,
    channels: u32,
    _pad0: u32,
    _pad1: u32,
    mask: array<f32, MAX_LATENT>,
}

// The compute dispatch: decode map `map_index` at `width x height` texels into
// `output[out_offset + (y * width + x) * channels + c]`.
struct Dispatch {
    map_index: u32,
    width: u32,
    height: u32,
    channels: u32,
    out_offset: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<storage, read> latents: Latents;
@group(0) @binding(1) var<storage, read> mlp: Mlp;
@group(0) @binding(2) var<storage, read> maps: array<MapInfo>;
@group(0) @binding(3) var<uniform> dispatch: Dispatch;
@group(0) @binding(4) var<storage, read_write> output: array<f32>;

// sin/cos of an f32 angle after an explicit Cody-Waite reduction to [-pi, pi]: the GPU's built-in
// sin/cos are only accurate near zero, the CPU reference (libm) is accurate everywhere.
fn reduce_angle(p: f32) -> f32 {
    let n = round(p * INV_TWO_PI);
    return ((p - n * TWO_PI_C1) - n * TWO_PI_C2) - n * TWO_PI_C3;
}

// Bilinear clamp-to-edge corners of grid `g` at `uv` (exactly as reference.rs
// `bilinear_corners`): cell indices (x0,y0) (x1,y0) (x0,y1) (x1,y1) and their weights.
struct Corners {
    cells: vec4<u32>,
    weights: vec4<f32>,
}

fn bilinear_corners(uv: vec2<f32>, width: u32, height: u32) -> Corners {
    let gx = uv.x * f32(width) - 0.5;
    let gy = uv.y * f32(height) - 0.5;
    let fx0 = floor(gx);
    let fy0 = floor(gy);
    let fx = gx - fx0;
    let fy = gy - fy0;
    let max_x = f32(max(width, 1u) - 1u);
    let max_y = f32(max(height, 1u) - 1u);
    let x0 = u32(clamp(fx0, 0.0, max_x));
    let x1 = u32(clamp(fx0 + 1.0, 0.0, max_x));
    let y0 = u32(clamp(fy0, 0.0, max_y));
    let y1 = u32(clamp(fy0 + 1.0, 0.0, max_y));
    var c: Corners;
    c.cells = vec4<u32>(y0 * width + x0, y0 * width + x1, y1 * width + x0, y1 * width + x1);
    c.weights = vec4<f32>((1.0 - fx) * (1.0 - fy), fx * (1.0 - fy), (1.0 - fx) * fy, fx * fy);
    return c;
}

// Decodes every channel of library map `map_index` at texture coordinates `uv` (texel centres at
// (x + 0.5) / width). Returns the map's channels clamped to [0, 1]; channels beyond the map's
// count (maps have 1-4) are 0. Usable from compute and fragment shaders.
fn decode_texel(map_index: u32, uv: vec2<f32>) -> vec4<f32> {
    // Two halves: activations of the current layer's input and output (ping-pong).
    var act: array<f32, 512>;

    // 1-2. Latent fetch times the budget mask.
    var feature = 0u;
    let grid_count = min(latents.grid_count, MAX_GRIDS);
    for (var g = 0u; g < grid_count; g++) {
        let grid = latents.grids[g];
        let corners = bilinear_corners(uv, grid.width, grid.height);
        for (var c = 0u; c < grid.channels; c++) {
            var value = 0.0;
            for (var k = 0u; k < 4u; k++) {
                value += corners.weights[k] * latents.values[grid.offset + corners.cells[k] * grid.channels + c];
            }
            if (feature < MAX_LATENT) {
                act[feature] = value * maps[map_index].mask[feature];
            }
            feature++;
        }
    }

    // 3. Positional encoding in grid-0 cells.
    let px = uv.x * f32(latents.grids[0].width);
    let py = uv.y * f32(latents.grids[0].height);
    for (var k = 0u; k < mlp.pe_frequencies; k++) {
        let a = TAU * f32(1u << k) * 0.5;
        let ax = reduce_angle(a * px);
        let ay = reduce_angle(a * py);
        let i = feature + 4u * k;
        if (i + 3u < MAX_WIDTH) {
            act[i] = sin(ax);
            act[i + 1u] = cos(ax);
            act[i + 2u] = sin(ay);
            act[i + 3u] = cos(ay);
        }
    }

    // 4. MLP: hidden layers with ReLU, ping-ponging between act[0..256] and act[256..512].
    let info = maps[map_index];
    let layer_count = min(mlp.layer_count, MAX_LAYERS);
    var src = 0u;
    for (var l = 0u; l + 1u < layer_count; l++) {
        let layer = mlp.layers[l];
        let dst = MAX_WIDTH - src;
        for (var o = 0u; o < min(layer.outputs, MAX_WIDTH); o++) {
            var z = mlp.values[layer.bias_offset + o];
            let row = layer.weight_offset + o * layer.inputs;
            for (var i = 0u; i < min(layer.inputs, MAX_WIDTH); i++) {
                z += mlp.values[row + i] * act[src + i];
            }
            act[dst + o] = max(z, 0.0);
        }
        src = dst;
    }

    // The last (linear) layer: only this map's slice of the outputs, then 5. clamp.
    var result = vec4<f32>(0.0);
    if (layer_count == 0u) {
        return result;
    }
    let last = mlp.layers[layer_count - 1u];
    for (var c = 0u; c < min(info.channels, 4u); c++) {
        let o = info.output_offset + c;
        var z = mlp.values[last.bias_offset + o];
        let row = last.weight_offset + o * last.inputs;
        for (var i = 0u; i < min(last.inputs, MAX_WIDTH); i++) {
            z += mlp.values[row + i] * act[src + i];
        }
        result[c] = clamp(z, 0.0, 1.0);
    }
    return result;
}

// Decodes one whole map, one invocation per texel, into `output` as f32 `[y][x][c]`.
@compute @workgroup_size(WORKGROUP_SIDE, WORKGROUP_SIDE, 1)
fn cs_main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x >= dispatch.width || id.y >= dispatch.height) {
        return;
    }
    let uv = vec2<f32>((f32(id.x) + 0.5) / f32(dispatch.width), (f32(id.y) + 0.5) / f32(dispatch.height));
    let texel = decode_texel(dispatch.map_index, uv);
    let base = dispatch.out_offset + (id.y * dispatch.width + id.x) * dispatch.channels;
    for (var c = 0u; c < min(dispatch.channels, 4u); c++) {
        output[base + c] = texel[c];
    }
}
