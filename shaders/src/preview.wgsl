// texset:append-to decode.wgsl
//
// The studio's PBR preview: a sphere, plane or cube lit by two orbiting lights, its material
// decoded per pixel from the bundle by `decode_texel` (this file is appended to the specialised
// decoder), or read from the original maps for comparison. The CPU twin is
// `texset_shaders::preview::shade` (keep them in step).
//
// Camera at (0, 0, 3) looking down -z, vertical field of view 2·atan(0.45); unit-radius shapes.
// Shading: Lambert diffuse + GGX specular (Smith-Schlick visibility, Schlick Fresnel, F0 0.04
// for dielectrics) per light, ambient 0.03 · albedo · AO, Reinhard tone map, sRGB encoding when
// the target is not an sRGB format.

struct Preview {
    // Library map indices (0xffffffff: the material has no such map):
    // basecolor, normal, roughness, metallic.
    maps: vec4<u32>,
    // ao, orm, emissive, unused.
    maps2: vec4<u32>,
    // The same maps' layers in `originals`.
    layers: vec4<u32>,
    layers2: vec4<u32>,
    // Direction towards each light (unit xyz) and its intensity (w).
    light0: vec4<f32>,
    light1: vec4<f32>,
    // x: shape (0 sphere, 1 plane, 2 cube), y: aspect (width / height), z: 1 = shade the original
    // maps, w: 1 = encode sRGB on output.
    view: vec4<f32>,
    // x: viewport height in pixels, y: 1 = filter the decoded maps by level of detail.
    lod_filter: vec4<f32>,
}

const NONE: u32 = 0xffffffffu;
const PI: f32 = 3.14159265;

@group(1) @binding(0) var<uniform> preview: Preview;
@group(1) @binding(1) var originals: texture_2d_array<f32>;

struct Hit {
    found: bool,
    position: vec3<f32>,
    normal: vec3<f32>,
    tangent: vec3<f32>,
    uv: vec2<f32>,
}

// The cube's rotation (fixed, so all three visible faces show).
fn cube_rotation() -> mat3x3<f32> {
    let yaw = 0.6;
    let pitch = 0.45;
    let ry = mat3x3<f32>(vec3<f32>(cos(yaw), 0.0, -sin(yaw)), vec3<f32>(0.0, 1.0, 0.0), vec3<f32>(sin(yaw), 0.0, cos(yaw)));
    let rx = mat3x3<f32>(vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(0.0, cos(pitch), sin(pitch)), vec3<f32>(0.0, -sin(pitch), cos(pitch)));
    return rx * ry;
}

fn intersect(origin: vec3<f32>, dir: vec3<f32>, shape: u32) -> Hit {
    var hit: Hit;
    hit.found = false;
    if (shape == 0u) {
        // Sphere: u around +y (seam at the back), v from the north pole down.
        let b = dot(origin, dir);
        let c = dot(origin, origin) - 1.0;
        let disc = b * b - c;
        if (disc < 0.0) {
            return hit;
        }
        let t = -b - sqrt(disc);
        let p = origin + t * dir;
        hit.found = true;
        hit.position = p;
        hit.normal = normalize(p);
        let phi = atan2(p.x, p.z);
        hit.uv = vec2<f32>(phi / (2.0 * PI) + 0.5, acos(clamp(p.y, -1.0, 1.0)) / PI);
        hit.tangent = vec3<f32>(cos(phi), 0.0, -sin(phi));
        return hit;
    }
    if (shape == 1u) {
        // Plane z = 0, |x|, |y| <= 1, facing the camera.
        if (abs(dir.z) < 1e-6) {
            return hit;
        }
        let t = -origin.z / dir.z;
        let p = origin + t * dir;
        if (t <= 0.0 || abs(p.x) > 1.0 || abs(p.y) > 1.0) {
            return hit;
        }
        hit.found = true;
        hit.position = p;
        hit.normal = vec3<f32>(0.0, 0.0, 1.0);
        hit.tangent = vec3<f32>(1.0, 0.0, 0.0);
        hit.uv = vec2<f32>(p.x * 0.5 + 0.5, 0.5 - p.y * 0.5);
        return hit;
    }
    // Cube of half-size 0.75, rotated: intersect in its own frame (slabs).
    let r = cube_rotation();
    let o = transpose(r) * origin;
    let d = transpose(r) * dir;
    let size = 0.75;
    let inv = 1.0 / d;
    let t0 = (vec3<f32>(-size) - o) * inv;
    let t1 = (vec3<f32>(size) - o) * inv;
    let tmin = min(t0, t1);
    let tmax = max(t0, t1);
    let near = max(max(tmin.x, tmin.y), tmin.z);
    let far = min(min(tmax.x, tmax.y), tmax.z);
    if (near > far || far < 0.0) {
        return hit;
    }
    let p = o + near * d;
    var n = vec3<f32>(0.0);
    var tangent = vec3<f32>(0.0);
    var uv = vec2<f32>(0.0);
    let q = p / size;
    if (near == tmin.x) {
        n = vec3<f32>(sign(q.x), 0.0, 0.0);
        tangent = vec3<f32>(0.0, 0.0, -sign(q.x));
        uv = vec2<f32>(-sign(q.x) * q.z, -q.y);
    } else if (near == tmin.y) {
        n = vec3<f32>(0.0, sign(q.y), 0.0);
        tangent = vec3<f32>(1.0, 0.0, 0.0);
        uv = vec2<f32>(q.x, sign(q.y) * q.z);
    } else {
        n = vec3<f32>(0.0, 0.0, sign(q.z));
        tangent = vec3<f32>(sign(q.z), 0.0, 0.0);
        uv = vec2<f32>(sign(q.z) * q.x, -q.y);
    }
    hit.found = true;
    hit.position = r * p;
    hit.normal = r * n;
    hit.tangent = r * tangent;
    hit.uv = clamp(uv * 0.5 + 0.5, vec2<f32>(0.0), vec2<f32>(1.0));
    return hit;
}

// What `fetch` keeps between the maps of one pixel, one per mip level it filters between: the
// hidden activations of the last map it decoded at that level, that map's index and the level.
// Maps with the same budget reuse them (a material's maps usually read the same channels), so a
// pixel runs the hidden layers once per distinct budget instead of once per map.
struct Cache {
    map_index: u32,
    level: u32,
    hidden: MlpHidden,
}

// The map's stored values at mip `level`, reusing the hidden activations in `cache` (`cache2`
// for the second of the two levels `fetch` filters between) when its last decode had the same
// budget and level. The one call site of the decoder's MLP in the program (see `fetch`).
fn cached_decode(map_index: u32, uv: vec2<f32>, level: u32, second: bool, cache: ptr<function, Cache>, cache2: ptr<function, Cache>) -> vec4<f32> {
    var c = *cache;
    if (second) {
        c = *cache2;
    }
    if (c.map_index == NONE || c.level != level || !same_budget(c.map_index, map_index)) {
        c.hidden = decode_hidden(map_index, uv, level);
        c.map_index = map_index;
        c.level = level;
        if (second) {
            *cache2 = c;
        } else {
            *cache = c;
        }
    }
    return decode_output(map_index, c.hidden);
}

// The direction of the camera ray through viewport point `uv` (0..1, y down).
fn ray_dir(uv: vec2<f32>) -> vec3<f32> {
    let tan_half = 0.45;
    let ndc = vec2<f32>(uv.x * 2.0 - 1.0, 1.0 - uv.y * 2.0);
    return normalize(vec3<f32>(ndc.x * tan_half * preview.view.y, ndc.y * tan_half, -1.0));
}

// Texture-space distance between two hits (u wraps around the sphere's seam).
fn uv_distance(a: vec2<f32>, b: vec2<f32>) -> f32 {
    let du = abs(a.x - b.x);
    let d = vec2<f32>(min(du, 1.0 - du), a.y - b.y);
    return length(d);
}

// How far in texture space one pixel of the viewport reaches at `uv` (0 with filtering off): the
// larger of the distances to the hits one pixel right and one pixel down (an analytic stand-in for
// screen-space derivatives, so the CPU reference computes the same).
fn pixel_footprint(uv: vec2<f32>, hit_uv: vec2<f32>, shape: u32) -> f32 {
    if (preview.lod_filter.y < 0.5 || preview.lod_filter.x <= 0.0) {
        return 0.0;
    }
    let origin = vec3<f32>(0.0, 0.0, 3.0);
    let step = 1.0 / preview.lod_filter.x;
    let hx = intersect(origin, ray_dir(uv + vec2<f32>(step / preview.view.y, 0.0)), shape);
    let hy = intersect(origin, ray_dir(uv + vec2<f32>(0.0, step)), shape);
    var footprint = 0.0;
    if (hx.found) {
        footprint = uv_distance(hit_uv, hx.uv);
    }
    if (hy.found) {
        footprint = max(footprint, uv_distance(hit_uv, hy.uv));
    }
    return footprint;
}

// The material's map `map_index` (library index) / `layer` (in `originals`) at `uv`, un-mapped
// for shading; `fallback` where the material has no such map.
// With a pixel `footprint` in texture space, the decoded maps are filtered between mip levels
// (trilinear of decoded texels, `decode_texel_lod`): the level of detail is
// log2(footprint * the map's larger side), the second level's decode cached in `cache2`.
fn fetch(
    map_index: u32,
    layer: u32,
    uv: vec2<f32>,
    footprint: f32,
    fallback: vec4<f32>,
    cache: ptr<function, Cache>,
    cache2: ptr<function, Cache>,
) -> vec4<f32> {
    if (map_index == NONE) {
        return fallback;
    }
    if (preview.view.z > 0.5) {
        let size = textureDimensions(originals);
        let texel = min(vec2<u32>(uv * vec2<f32>(size)), size - vec2<u32>(1u));
        return unmap_texel(map_index, textureLoad(originals, texel, layer, 0));
    }
    let size = f32(max(MAP_WIDTH[map_index], MAP_HEIGHT[map_index]));
    let top = f32(MAP_MIP_LEVELS[map_index] - 1u);
    let lod = clamp(log2(max(footprint * size, 1e-30)), 0.0, top);
    let below = floor(lod);
    let blend = lod - below;
    // Both levels through one call site (a loop of one or two turns the compiler keeps), so the
    // MLP is compiled once: lavapipe's LLVM takes about 40 s per inlined copy of it
    // (docs/decisions/026).
    let levels = select(1u, 2u, blend > 0.0);
    var mixed = vec4<f32>(0.0);
    for (var k = 0u; k < levels; k++) {
        let level = select(u32(below), min(u32(below) + 1u, u32(top)), k == 1u);
        let value = cached_decode(map_index, uv, level, k == 1u, cache, cache2);
        mixed = select(value, mixed + (value - mixed) * blend, k == 1u);
    }
    return unmap_texel(map_index, mixed);
}

fn light_contribution(n: vec3<f32>, v: vec3<f32>, l: vec3<f32>, intensity: f32, albedo: vec3<f32>, roughness: f32, metallic: f32) -> vec3<f32> {
    let n_dot_l = dot(n, l);
    if (n_dot_l <= 0.0) {
        return vec3<f32>(0.0);
    }
    let h = normalize(v + l);
    let n_dot_v = max(dot(n, v), 1e-4);
    let n_dot_h = max(dot(n, h), 0.0);
    let v_dot_h = max(dot(v, h), 0.0);
    let alpha = max(roughness * roughness, 1e-3);
    let a2 = alpha * alpha;
    let denom = n_dot_h * n_dot_h * (a2 - 1.0) + 1.0;
    let d = a2 / (PI * denom * denom);
    let k = alpha * 0.5;
    let vis = 1.0 / ((n_dot_l * (1.0 - k) + k) * (n_dot_v * (1.0 - k) + k) * 4.0);
    let f0 = mix(vec3<f32>(0.04), albedo, metallic);
    let fresnel = f0 + (vec3<f32>(1.0) - f0) * pow(1.0 - v_dot_h, 5.0);
    let specular = d * vis * fresnel;
    let diffuse = (vec3<f32>(1.0) - fresnel) * (1.0 - metallic) * albedo / PI;
    return (diffuse + specular) * n_dot_l * intensity;
}

fn encode_srgb(c: f32) -> f32 {
    if (c <= 0.0031308) {
        return c * 12.92;
    }
    return 1.055 * pow(c, 1.0 / 2.4) - 0.055;
}

// One pixel at `uv` in the viewport (0..1, y down).
fn shade(uv: vec2<f32>) -> vec4<f32> {
    let dir = ray_dir(uv);
    let origin = vec3<f32>(0.0, 0.0, 3.0);
    let shape = u32(preview.view.x + 0.5);
    let hit = intersect(origin, dir, shape);
    if (!hit.found) {
        let g = 0.08 + 0.06 * (1.0 - uv.y);
        return vec4<f32>(g, g, g * 1.1, 1.0);
    }
    let fp = pixel_footprint(uv, hit.uv, shape);
    var c: Cache;
    c.map_index = NONE;
    var c2: Cache;
    c2.map_index = NONE;
    // One call site of `fetch` (and so of the decoder's MLP) in a loop over the material's maps,
    // in the order base colour, normal, ORM, roughness, metallic, AO, emissive (ORM first of the
    // last four: their fallbacks read it). Seven inlined decodes made drivers that compile
    // shaders on the CPU (lavapipe's LLVM) take minutes; the loop compiles once.
    var values: array<vec4<f32>, 7>;
    for (var i = 0u; i < 7u; i++) {
        var map_index = NONE;
        var layer = NONE;
        var fallback = vec4<f32>(0.0);
        let orm = values[2];
        switch i {
            case 0u: { map_index = preview.maps.x; layer = preview.layers.x; fallback = vec4<f32>(0.5, 0.5, 0.5, 1.0); }
            case 1u: { map_index = preview.maps.y; layer = preview.layers.y; fallback = vec4<f32>(0.0, 0.0, 1.0, 0.0); }
            case 2u: { map_index = preview.maps2.y; layer = preview.layers2.y; fallback = vec4<f32>(1.0, 0.5, 0.0, 0.0); }
            case 3u: { map_index = preview.maps.z; layer = preview.layers.z; fallback = vec4<f32>(orm.y); }
            case 4u: { map_index = preview.maps.w; layer = preview.layers.w; fallback = vec4<f32>(orm.z); }
            case 5u: { map_index = preview.maps2.x; layer = preview.layers2.x; fallback = vec4<f32>(orm.x); }
            default: { map_index = preview.maps2.z; layer = preview.layers2.z; fallback = vec4<f32>(0.0); }
        }
        values[i] = fetch(map_index, layer, hit.uv, fp, fallback, &c, &c2);
    }
    let base = values[0];
    let normal_ts = values[1];
    let roughness = values[3].x;
    let metallic = values[4].x;
    let ao = values[5].x;
    let emissive = values[6].xyz;

    let n_geo = hit.normal;
    let t = normalize(hit.tangent - n_geo * dot(n_geo, hit.tangent));
    let b = cross(n_geo, t);
    let n = normalize(t * normal_ts.x + b * normal_ts.y + n_geo * max(normal_ts.z, 1e-3));
    let v = -dir;
    let albedo = base.xyz;
    var color = 0.03 * albedo * ao + emissive;
    color += light_contribution(n, v, preview.light0.xyz, preview.light0.w, albedo, clamp(roughness, 0.0, 1.0), clamp(metallic, 0.0, 1.0));
    color += light_contribution(n, v, preview.light1.xyz, preview.light1.w, albedo, clamp(roughness, 0.0, 1.0), clamp(metallic, 0.0, 1.0));
    color = color / (vec3<f32>(1.0) + color);
    if (preview.view.w > 0.5) {
        color = vec3<f32>(encode_srgb(color.x), encode_srgb(color.y), encode_srgb(color.z));
    }
    return vec4<f32>(color, 1.0);
}

@fragment
fn fs_preview(in: VertexOut) -> @location(0) vec4<f32> {
    return shade(in.uv);
}
