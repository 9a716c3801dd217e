// texset:append-to preview_scene.wgsl
//
// The studio's PBR preview, its shading pass: lights the G-buffer the material pass
// (`preview.wgsl`) wrote, pixel for pixel (the G-buffer has the target's size). No decoder: the
// lights move at the cost of this pass alone, and the pipeline is the same for every bundle.

@group(0) @binding(0) var gbuffer_a: texture_2d<f32>;
@group(0) @binding(1) var gbuffer_b: texture_2d<f32>;
@group(0) @binding(2) var gbuffer_c: texture_2d<f32>;

struct ShadeIn {
    @builtin(position) position: vec4<f32>,
    @location(0) uv: vec2<f32>,
}

// The full-screen triangle, viewport point `uv` with it.
@vertex
fn vs_shade(@builtin(vertex_index) vertex: u32) -> ShadeIn {
    let uv = vec2<f32>(f32((vertex << 1u) & 2u), f32(vertex & 2u));
    return ShadeIn(vec4<f32>(uv.x * 2.0 - 1.0, 1.0 - uv.y * 2.0, 0.0, 1.0), uv);
}

@fragment
fn fs_shade(in: ShadeIn) -> @location(0) vec4<f32> {
    let hit = scene_hit(in.uv);
    if (!hit.found) {
        return background(in.uv);
    }
    let texel = vec2<i32>(in.position.xy);
    let m = unpack_material(textureLoad(gbuffer_a, texel, 0), textureLoad(gbuffer_b, texel, 0), textureLoad(gbuffer_c, texel, 0));
    return lit(in.uv, hit, m);
}
