// The viewport's finished image drawn as it is: one textured rectangle, no blending, no colour
// arithmetic. A software rasteriser (lavapipe) draws such a rectangle on its fast path for
// texture copies; egui's own shader (tint, blending) costs several times more a pixel there.
// `blit.rs` binds it; `texture_blit_matches_the_image` is its parity test.

struct Params {
    // The image's coordinates at the viewport's top-left and bottom-right corners (the part of
    // the image that is on screen).
    uv_min: vec2<f32>,
    uv_max: vec2<f32>,
};

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var image: texture_2d<f32>;
@group(0) @binding(2) var image_sampler: sampler;

struct Varyings {
    @builtin(position) position: vec4<f32>,
    @location(0) uv: vec2<f32>,
};

// Two triangles over the whole viewport (a rectangle, as the fast path wants it).
@vertex
fn vs_rect(@builtin(vertex_index) index: u32) -> Varyings {
    var corners = array<vec2<f32>, 6>(
        vec2<f32>(0.0, 0.0), vec2<f32>(1.0, 0.0), vec2<f32>(0.0, 1.0),
        vec2<f32>(0.0, 1.0), vec2<f32>(1.0, 0.0), vec2<f32>(1.0, 1.0),
    );
    let corner = corners[index];
    var out: Varyings;
    out.position = vec4<f32>(corner.x * 2.0 - 1.0, 1.0 - corner.y * 2.0, 0.0, 1.0);
    out.uv = mix(params.uv_min, params.uv_max, corner);
    return out;
}

@fragment
fn fs_image(in: Varyings) -> @location(0) vec4<f32> {
    return textureSample(image, image_sampler, in.uv);
}
