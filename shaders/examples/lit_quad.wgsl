// texset:append-to ../src/decode.wgsl
// One lit quad, as an engine would draw it: its own vertex and fragment shader appended to the
// decoder WGSL specialised to a bundle (`GpuModel::wgsl`), calling `decode_texel_linear` per pixel
// (inference on sample). Group 0 is the decoder's (latents, MLP); group 1 is the scene.
//
// The CPU twin of `fs_lit` is `shade` in lit_quad.rs (the example's `--cpu` mode); the screenshot
// test compares the two.

struct Scene {
    // Column-major view-projection matrix.
    view_proj: mat4x4<f32>,
    // xyz: camera position.
    eye: vec4<f32>,
    // xyz: point light position, w: its intensity.
    light: vec4<f32>,
    // Library-wide map indices of basecolor, normal, roughness (or ORM), metallic; NO_MAP if absent.
    maps: vec4<u32>,
    // x: 1 when `maps.z` is an ORM map (roughness in G, metallic in B).
    flags: vec4<u32>,
}

@group(1) @binding(0) var<uniform> scene: Scene;

const NO_MAP: u32 = 0xffffffffu;
const PI: f32 = 3.14159265;

struct QuadOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) uv: vec2<f32>,
    @location(1) world: vec3<f32>,
}

// A triangle strip of four vertices: the quad [-1, 1]^2 in the z = 0 plane, uv (0, 0) at its
// (-1, +1) corner, so texture "up" (+Y, OpenGL normal maps) is world +y.
@vertex
fn vs_quad(@builtin(vertex_index) i: u32) -> QuadOut {
    let corner = vec2<f32>(f32(i & 1u), f32(i >> 1u));
    let world = vec3<f32>(corner.x * 2.0 - 1.0, 1.0 - corner.y * 2.0, 0.0);
    var out: QuadOut;
    out.clip = scene.view_proj * vec4<f32>(world, 1.0);
    out.uv = corner;
    out.world = world;
    return out;
}

fn fetch(map_index: u32, uv: vec2<f32>, fallback: vec4<f32>) -> vec4<f32> {
    if (map_index == NO_MAP) {
        return fallback;
    }
    return decode_texel_linear(map_index, uv);
}

// Reinhard, then the sRGB transfer curve: the target is a plain (linear) float texture.
fn encode(c: f32) -> f32 {
    let x = c / (1.0 + c);
    if (x <= 0.0031308) {
        return 12.92 * x;
    }
    return 1.055 * pow(x, 1.0 / 2.4) - 0.055;
}

@fragment
fn fs_lit(in: QuadOut) -> @location(0) vec4<f32> {
    // One call site of the decoder in a loop over the maps (base colour, normal, roughness or
    // ORM, metallic): each call site inlines the whole MLP, and drivers that compile on the CPU
    // (lavapipe) take far longer for four copies than for one.
    let orm = scene.flags.x == 1u;
    var values: array<vec4<f32>, 4>;
    for (var i = 0u; i < 4u; i++) {
        var map_index = NO_MAP;
        var fallback = vec4<f32>(0.0);
        switch i {
            case 0u: { map_index = scene.maps.x; fallback = vec4<f32>(0.5, 0.5, 0.5, 1.0); }
            case 1u: { map_index = scene.maps.y; fallback = vec4<f32>(0.0, 0.0, 1.0, 0.0); }
            case 2u: { map_index = scene.maps.z; fallback = select(vec4<f32>(0.5), vec4<f32>(1.0, 0.5, 0.0, 0.0), orm); }
            default: { map_index = select(scene.maps.w, NO_MAP, orm); }
        }
        values[i] = fetch(map_index, in.uv, fallback);
    }
    let base = values[0].rgb;
    let n = normalize(values[1].xyz);
    var rough = values[2].x;
    var metal = values[3].x;
    if (orm) {
        rough = values[2].y;
        metal = values[2].z;
    }
    let to_light = scene.light.xyz - in.world;
    let l = normalize(to_light);
    let v = normalize(scene.eye.xyz - in.world);
    let h = normalize(l + v);
    let ndl = max(dot(n, l), 0.0);
    let ndv = max(dot(n, v), 1e-4);
    let ndh = max(dot(n, h), 0.0);
    // GGX with Schlick's Fresnel and the Smith-Schlick visibility term.
    let a = max(rough * rough, 0.002);
    let a2 = a * a;
    let d = a2 / (PI * (ndh * ndh * (a2 - 1.0) + 1.0) * (ndh * ndh * (a2 - 1.0) + 1.0));
    let f0 = mix(vec3<f32>(0.04), base, metal);
    let f = f0 + (vec3<f32>(1.0) - f0) * pow(1.0 - max(dot(h, v), 0.0), 5.0);
    let k = a * 0.5;
    let vis = 1.0 / ((ndl * (1.0 - k) + k) * (ndv * (1.0 - k) + k) * 4.0);
    let radiance = scene.light.w / dot(to_light, to_light);
    let diffuse = base * (1.0 - metal) / PI;
    let c = (diffuse + d * vis * f) * radiance * ndl + 0.03 * base;
    return vec4<f32>(encode(c.x), encode(c.y), encode(c.z), 1.0);
}
