// The model math every shader shares (the twins of core/src/model/reference.rs and params.rs):
// the bilinear clamp-to-edge corners of a grid, the positional encoding's sin/cos with one
// angle reduction, and the LOD and pyramid level a mip level reads (`PYRAMID_LEVELS` and
// `MIP_GROUP` are the including shader's specialised constants). One definition for every shader that decodes or trains: texset-shaders'
// decoder (decode.wgsl, the preview and the shaders exported from it) and the GPU trainer
// (train.wgsl) prepend it (`model::MODEL_WGSL`).

// Bilinear clamp-to-edge corners of a grid at `uv` (exactly as model/reference.rs
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

// 2*pi split for Cody-Waite range reduction: C1 has 8 significant bits so n * C1 is exact.
const PE_TWO_PI_C1: f32 = 6.28125;
const PE_TWO_PI_C2: f32 = 0.0019353071693331003;
const PE_TWO_PI_C3: f32 = 1.0253131677018246e-11;
const PE_INV_TWO_PI: f32 = 0.15915493667125702;

// An f32 angle reduced to [-pi, pi] (Cody-Waite): the GPU's built-in sin/cos are only accurate
// near zero, the CPU reference (libm) is accurate everywhere.
fn reduce_angle(p: f32) -> f32 {
    let n = round(p * PE_INV_TWO_PI);
    return ((p - n * PE_TWO_PI_C1) - n * PE_TWO_PI_C2) - n * PE_TWO_PI_C3;
}

// The positional encoding of frequency `k` at grid-0 position `p` (texels of level 0's grid 0):
// (sin, cos) of pi * 2^k * p (`params::pe_angular_frequency`), the angle reduced once.
fn pe_sin_cos(k: u32, p: f32) -> vec2<f32> {
    let a = reduce_angle(6.2831855 * f32(1u << k) * 0.5 * p);
    return vec2<f32>(sin(a), cos(a));
}

// The LOD level mip level `level` decodes at (`lod_level` in core/src/model/params.rs).
fn lod_level(level: u32) -> u32 {
    return min(level, PYRAMID_LEVELS * MIP_GROUP - 1u);
}

// The pyramid level whose grids mip level `level` reads (`pyramid_level` in
// core/src/model/params.rs). A LOD level is its own mip level's: `pyramid_level(lod)` reads its.
fn pyramid_level(level: u32) -> u32 {
    return lod_level(level) / MIP_GROUP;
}
