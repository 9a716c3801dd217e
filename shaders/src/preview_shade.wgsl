// texset:append-to preview_scene.wgsl environment/tonemap.wgsl
//
// The studio's PBR preview, its shading pass: lights the G-buffer the material pass
// (`preview.wgsl`) wrote on the surface the surface pass (`preview_surface.wgsl`) found, pixel for
// pixel (both have the target's size). No decoder: the lights and the environment move at the
// cost of this pass alone, and the pipeline is the same for every bundle.
//
// Two ways to light: the two point lights of `lit` (Reinhard, what the one-pass `fs_preview`
// draws), or split-sum image-based lighting from an environment (`texset_shaders::environment`:
// a GGX-prefiltered specular cube, nine SH coefficients of irradiance/π, the split-sum table),
// the point lights optionally added, exposed and tone mapped (`tonemap.wgsl`). The CPU twin is
// `texset_shaders::preview::shade_environment` (keep them in step).

@group(0) @binding(0) var gbuffer_a: texture_2d<f32>;
@group(0) @binding(1) var gbuffer_b: texture_2d<f32>;
@group(0) @binding(2) var gbuffer_c: texture_2d<f32>;
@group(0) @binding(3) var surface_a: texture_2d<f32>;
@group(0) @binding(4) var surface_b: texture_2d<f32>;
@group(0) @binding(5) var surface_c: texture_2d<f32>;

// The environment and how it lights (`EnvironmentLighting` on the Rust side, same layout).
struct Lighting {
    // Irradiance/π as nine SH coefficients (rgb; w unused), in `sh9_basis` order.
    sh: array<vec4<f32>, 9>,
    // x: 1 = light by the environment (0: the point lights alone, as `lit`), y: 1 = add the point
    // lights, z: exposure in EV, w: the tone mapper (`ToneMapper::wgsl_id`).
    mode: vec4<f32>,
    // x, y: cos and sin of the environment's rotation about +Y; z: the specular cube's last mip
    // level; w: the background (0 the environment, 1 blurred, 2 a solid colour).
    environment: vec4<f32>,
    // The solid background's linear colour (rgb); w: the mip level the blurred background reads.
    background: vec4<f32>,
    // x: what is shown (`ViewMode::wgsl_id`: 0 lit, 1 base colour, 2 normal, 3 roughness,
    // 4 metallic, 5 occlusion, 6 height, 7 emissive, 8 uv, 9 uv checker, 10 mip level, 11 error);
    // y: the channel views' background grey; z: the error that reads as the top of the heat
    // ramp; w unused.
    view: vec4<f32>,
}

@group(2) @binding(0) var<uniform> lighting: Lighting;
@group(2) @binding(1) var env_specular: texture_cube<f32>;
@group(2) @binding(2) var env_brdf: texture_2d<f32>;
@group(2) @binding(3) var env_sampler: sampler;

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

// A world direction turned into the environment's frame: the environment turns by the rotation
// about +Y, so a lookup turns the other way.
fn environment_dir(d: vec3<f32>) -> vec3<f32> {
    let c = lighting.environment.x;
    let s = lighting.environment.y;
    return vec3<f32>(c * d.x - s * d.z, d.y, s * d.x + c * d.z);
}

// Irradiance/π at a surface facing `n` (unit, world), clamped at 0.
fn environment_irradiance(n: vec3<f32>) -> vec3<f32> {
    let d = environment_dir(n);
    let basis = array<f32, 9>(
        0.282095,
        0.488603 * d.y,
        0.488603 * d.z,
        0.488603 * d.x,
        1.092548 * d.x * d.y,
        1.092548 * d.y * d.z,
        0.315392 * (3.0 * d.z * d.z - 1.0),
        1.092548 * d.x * d.z,
        0.546274 * (d.x * d.x - d.y * d.y),
    );
    var out = vec3<f32>(0.0);
    for (var i = 0u; i < 9u; i++) {
        out += lighting.sh[i].xyz * basis[i];
    }
    return max(out, vec3<f32>(0.0));
}

// The prefiltered radiance towards `d` (world) at perceptual `roughness`.
fn environment_specular(d: vec3<f32>, roughness: f32) -> vec3<f32> {
    return textureSampleLevel(env_specular, env_sampler, environment_dir(d), roughness * lighting.environment.z).rgb;
}

// The linear radiance of material `m` on `hit` seen along the camera ray through `uv`, lit by the
// environment (split sum) and, when asked, the point lights.
fn environment_radiance(uv: vec2<f32>, hit: Hit, m: Material) -> vec3<f32> {
    let n_geo = hit.normal;
    let t = normalize(hit.tangent - n_geo * dot(n_geo, hit.tangent));
    let b = cross(n_geo, t) * select(1.0, -1.0, hit.bitangent_sign < 0.0);
    let n = normalize(t * m.normal_ts.x + b * m.normal_ts.y + n_geo * max(m.normal_ts.z, 1e-3));
    let v = -ray_dir(uv);
    let albedo = m.base;
    let roughness = clamp(m.roughness, 0.0, 1.0);
    let metallic = clamp(m.metallic, 0.0, 1.0);
    let n_dot_v = clamp(dot(n, v), 1e-4, 1.0);
    let f0 = mix(vec3<f32>(0.04), albedo, metallic);
    let split = textureSampleLevel(env_brdf, env_sampler, vec2<f32>(n_dot_v, roughness), 0.0).xy;
    let r = reflect(-v, n);
    let specular = environment_specular(r, roughness) * (f0 * split.x + split.y);
    let diffuse = environment_irradiance(n) * albedo * (1.0 - metallic);
    var color = (diffuse + specular) * m.ao + m.emissive;
    if (lighting.mode.y > 0.5) {
        color += light_contribution(n, v, preview.light0.xyz, preview.light0.w, albedo, roughness, metallic);
        color += light_contribution(n, v, preview.light1.xyz, preview.light1.w, albedo, roughness, metallic);
    }
    return color;
}

// What a pixel off the surface shows under the environment: the environment itself, blurred, or
// a solid colour, through the same exposure and tone mapper.
fn environment_background(uv: vec2<f32>) -> vec3<f32> {
    let mode = u32(lighting.environment.w + 0.5);
    if (mode == 2u) {
        return lighting.background.rgb;
    }
    let level = select(0.0, lighting.background.w, mode == 1u);
    return textureSampleLevel(env_specular, env_sampler, environment_dir(ray_dir(uv)), level).rgb;
}

// Exposed, tone mapped and (for targets that are not sRGB) encoded.
fn display(linear: vec3<f32>) -> vec4<f32> {
    var color = tonemap(linear, u32(lighting.mode.w + 0.5), lighting.mode.z);
    if (preview.view.w > 0.5) {
        color = vec3<f32>(encode_srgb(color.x), encode_srgb(color.y), encode_srgb(color.z));
    }
    return vec4<f32>(color, 1.0);
}

// Encoded as sRGB where the target is not an sRGB format (colours); data is shown as stored.
fn shown_colour(c: vec3<f32>) -> vec3<f32> {
    let clamped = clamp(c, vec3<f32>(0.0), vec3<f32>(1.0));
    if (preview.view.w > 0.5) {
        return vec3<f32>(encode_srgb(clamped.x), encode_srgb(clamped.y), encode_srgb(clamped.z));
    }
    return clamped;
}

// The heat ramp (`preview::HEAT_RAMP`, the legend's colours; keep them in step) at `t` in 0..1:
// display values, shown as they are.
fn heat(t: f32) -> vec3<f32> {
    let stops = array<vec3<f32>, 5>(
        vec3<f32>(0.05, 0.03, 0.20),
        vec3<f32>(0.10, 0.35, 0.85),
        vec3<f32>(0.15, 0.80, 0.55),
        vec3<f32>(0.95, 0.80, 0.15),
        vec3<f32>(0.85, 0.10, 0.05),
    );
    let x = clamp(t, 0.0, 1.0) * 4.0;
    let i = min(u32(x), 3u);
    return mix(stops[i], stops[i + 1u], x - f32(i));
}

// Where a probe found no map (the material has none): grey stripes in texture space.
fn no_map(uv: vec2<f32>) -> vec3<f32> {
    return vec3<f32>(select(0.2, 0.3, fract((uv.x + uv.y) * 16.0) < 0.5));
}

// A UV checker: 8 x 8 cells a tile, coloured by cell so a flipped or stretched island shows.
fn uv_checker(uv: vec2<f32>) -> vec3<f32> {
    let cell = floor(fract(uv) * 8.0);
    let hue = vec3<f32>(0.25 + 0.6 * cell.x / 7.0, 0.25 + 0.6 * cell.y / 7.0, 0.85 - 0.6 * cell.x / 7.0);
    let even = (u32(cell.x) + u32(cell.y)) % 2u == 0u;
    return hue * select(0.55, 1.0, even);
}

// The level of detail a pixel of texture-space `footprint` reads of the material's largest map
// (`preview.lod_filter.z` texels a side) on the heat ramp: mip -1 (magnified twice) and below at
// the bottom, mip 4 and above at the top.
fn mip_colour(footprint: f32) -> vec3<f32> {
    let lod = log2(max(footprint * preview.lod_filter.z, 1e-30));
    return heat((lod + 1.0) / 5.0);
}

// Channel view `view` (1 to 11) of material `m` on `hit` (its texture `footprint`), unlit.
fn channel_view(view: u32, hit: Hit, m: Material, footprint: f32) -> vec3<f32> {
    switch view {
        case 1u: { return shown_colour(m.base); }
        case 2u: { return clamp(m.normal_ts * 0.5 + 0.5, vec3<f32>(0.0), vec3<f32>(1.0)); }
        case 3u: { return vec3<f32>(clamp(m.roughness, 0.0, 1.0)); }
        case 4u: { return vec3<f32>(clamp(m.metallic, 0.0, 1.0)); }
        case 5u: { return vec3<f32>(clamp(m.ao, 0.0, 1.0)); }
        case 6u: {
            if (m.base.y < 0.5) {
                return no_map(hit.uv);
            }
            return vec3<f32>(clamp(m.base.x, 0.0, 1.0));
        }
        case 7u: { return shown_colour(m.emissive); }
        case 8u: { return vec3<f32>(fract(hit.uv), 0.0); }
        case 9u: { return uv_checker(hit.uv); }
        case 10u: { return mip_colour(footprint); }
        default: {
            if (m.base.y < 0.5) {
                return no_map(hit.uv);
            }
            return heat(m.base.x / max(lighting.view.z, 1e-6));
        }
    }
}

@fragment
fn fs_shade(in: ShadeIn) -> @location(0) vec4<f32> {
    let texel = vec2<i32>(in.position.xy);
    let surface = textureLoad(surface_a, texel, 0);
    let hit = unpack_surface(surface, textureLoad(surface_b, texel, 0), textureLoad(surface_c, texel, 0));
    let view = u32(lighting.view.x + 0.5);
    if (view != 0u) {
        if (!hit.found) {
            return vec4<f32>(shown_colour(vec3<f32>(lighting.view.y)), 1.0);
        }
        let m = unpack_material(textureLoad(gbuffer_a, texel, 0), textureLoad(gbuffer_b, texel, 0), textureLoad(gbuffer_c, texel, 0));
        if (is_clay(surface.w)) {
            // Another material's surface: clay, whatever the view.
            return vec4<f32>(shown_colour(clay_material().base), 1.0);
        }
        return vec4<f32>(channel_view(view, hit, m, surface.z), 1.0);
    }
    let by_environment = lighting.mode.x > 0.5;
    if (!hit.found) {
        if (by_environment) {
            return display(environment_background(in.uv));
        }
        return background(in.uv);
    }
    let m = unpack_material(textureLoad(gbuffer_a, texel, 0), textureLoad(gbuffer_b, texel, 0), textureLoad(gbuffer_c, texel, 0));
    if (by_environment) {
        return display(environment_radiance(in.uv, hit, m));
    }
    return lit(in.uv, hit, m);
}
