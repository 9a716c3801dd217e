// Bilinear clamp-to-edge corners of a grid at `uv` (exactly as model/reference.rs
// `bilinear_corners`): cell indices (x0,y0) (x1,y0) (x0,y1) (x1,y1) and their weights. One
// definition for every shader that reads a grid: texset-shaders' decoder (decode.wgsl, and the
// shaders exported from it) and the GPU trainer (train.wgsl) prepend it (`model::BILINEAR_WGSL`).
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
