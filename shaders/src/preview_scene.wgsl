// The preview's scene, shared by its two programs: the material pass (`preview.wgsl`, appended
// to the decoder specialised to a bundle) and the shading pass (`preview_shade.wgsl`, no decoder).
// The CPU twin is `texset_shaders::preview::shade` (keep them in step).
//
// A pinhole camera (`texset_shaders::preview::Camera`); shapes of unit radius about the origin.
// Shading: Lambert diffuse + GGX specular (Smith-Schlick visibility, Schlick Fresnel, F0 0.04
// for dielectrics) per light, ambient 0.03 · albedo · AO, Reinhard tone map, sRGB encoding when
// the target is not an sRGB format.

struct Preview {
    // Library map indices (0xffffffff: the material has no such map):
    // basecolor, normal, roughness, metallic.
    maps: vec4<u32>,
    // ao, orm, emissive, height (only a probe reads it).
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
    // x: viewport height in pixels, y: 1 = filter the decoded maps by level of detail, z: the
    // material's largest map side in texels (the mip view's level of detail), w unused.
    lod_filter: vec4<f32>,
    // The camera: eye (xyz) and tan(vertical fov / 2) (w); unit right, up and forward (xyz).
    camera_eye: vec4<f32>,
    camera_right: vec4<f32>,
    camera_up: vec4<f32>,
    camera_forward: vec4<f32>,
    // The surface pass: x: the mesh pass's near plane (world units), y: the surface's height in
    // pixels (a mesh's footprint is a full-resolution pixel's, as the shapes' is), zw unused.
    surface: vec4<f32>,
    // What the material pass writes (`Probe` on the Rust side): x: 0 the material, 1 the error
    // against the reference, 2 a map's stored value; y: the map probed (library index; NONE: the
    // error pooled over the material's maps); z: the reference's layer offset in `originals`
    // (0: the original maps themselves), w unused.
    probe: vec4<u32>,
}

const NONE: u32 = 0xffffffffu;
const PI: f32 = 3.14159265;

@group(1) @binding(0) var<uniform> preview: Preview;

struct Hit {
    found: bool,
    position: vec3<f32>,
    normal: vec3<f32>,
    tangent: vec3<f32>,
    uv: vec2<f32>,
    // glTF's tangent.w: the bitangent is cross(normal, tangent) times its sign (0 reads as +1,
    // what the shapes' frames have).
    bitangent_sign: f32,
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

// The direction of the camera ray through viewport point `uv` (0..1, y down).
fn ray_dir(uv: vec2<f32>) -> vec3<f32> {
    let tan_half = preview.camera_eye.w;
    let ndc = vec2<f32>(uv.x * 2.0 - 1.0, 1.0 - uv.y * 2.0);
    let d = preview.camera_forward.xyz + ndc.x * tan_half * preview.view.y * preview.camera_right.xyz + ndc.y * tan_half * preview.camera_up.xyz;
    return normalize(d);
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
    let origin = preview.camera_eye.xyz;
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

// What shading needs of the material at one pixel, un-mapped (the maps' own values).
struct Material {
    base: vec3<f32>,
    roughness: f32,
    normal_ts: vec3<f32>,
    metallic: f32,
    emissive: vec3<f32>,
    ao: f32,
}

// The material as the G-buffer stores it: three `Rgba32Float` targets, so shading a G-buffer
// gives the bits of shading the material directly.
struct GBufferOut {
    @location(0) a: vec4<f32>,
    @location(1) b: vec4<f32>,
    @location(2) c: vec4<f32>,
}

fn pack_material(m: Material) -> GBufferOut {
    return GBufferOut(vec4<f32>(m.base, m.roughness), vec4<f32>(m.normal_ts, m.metallic), vec4<f32>(m.emissive, m.ao));
}

fn unpack_material(a: vec4<f32>, b: vec4<f32>, c: vec4<f32>) -> Material {
    return Material(a.xyz, a.w, b.xyz, b.w, c.xyz, c.w);
}

// The surface under each pixel, as the surface pass (`preview_surface.wgsl`) writes it for the
// other two passes to read: three `Rgba32Float` targets holding
// a: uv, the pixel's footprint in texture space, coverage (0 nothing, 0.5 another material's
//    surface, drawn in clay, 1 the material shown);
// b: the unit geometric normal, the bitangent sign; c: the unit tangent, unused.
struct SurfaceOut {
    @location(0) a: vec4<f32>,
    @location(1) b: vec4<f32>,
    @location(2) c: vec4<f32>,
}

fn pack_surface(hit: Hit, footprint: f32, coverage: f32) -> SurfaceOut {
    let sign = select(1.0, -1.0, hit.bitangent_sign < 0.0);
    return SurfaceOut(vec4<f32>(hit.uv, footprint, coverage), vec4<f32>(hit.normal, sign), vec4<f32>(hit.tangent, 0.0));
}

// The hit a surface texel describes (`found` where its coverage is above 0).
fn unpack_surface(a: vec4<f32>, b: vec4<f32>, c: vec4<f32>) -> Hit {
    var hit: Hit;
    hit.found = a.w > 0.25;
    hit.uv = a.xy;
    hit.normal = b.xyz;
    hit.bitangent_sign = b.w;
    hit.tangent = c.xyz;
    return hit;
}

// Whether a surface texel of coverage `a.w` shows another material (drawn in clay).
fn is_clay(coverage: f32) -> bool {
    return coverage > 0.25 && coverage < 0.75;
}

// What a surface of another material than the one shown looks like: matte grey clay.
fn clay_material() -> Material {
    return Material(vec3<f32>(0.5), 0.6, vec3<f32>(0.0, 0.0, 1.0), 0.0, vec3<f32>(0.0), 1.0);
}

// The shape under viewport point `uv` (0..1, y down).
fn scene_hit(uv: vec2<f32>) -> Hit {
    return intersect(preview.camera_eye.xyz, ray_dir(uv), u32(preview.view.x + 0.5));
}

// What a pixel that misses the shape shows.
fn background(uv: vec2<f32>) -> vec4<f32> {
    let g = 0.08 + 0.06 * (1.0 - uv.y);
    return vec4<f32>(g, g, g * 1.1, 1.0);
}

// The pixel at `uv` whose ray hit the shape at `hit`, with material `m`, under the lights.
fn lit(uv: vec2<f32>, hit: Hit, m: Material) -> vec4<f32> {
    let normal_ts = m.normal_ts;
    let n_geo = hit.normal;
    let t = normalize(hit.tangent - n_geo * dot(n_geo, hit.tangent));
    let b = cross(n_geo, t) * select(1.0, -1.0, hit.bitangent_sign < 0.0);
    let n = normalize(t * normal_ts.x + b * normal_ts.y + n_geo * max(normal_ts.z, 1e-3));
    let v = -ray_dir(uv);
    let albedo = m.base;
    let roughness = clamp(m.roughness, 0.0, 1.0);
    let metallic = clamp(m.metallic, 0.0, 1.0);
    var color = 0.03 * albedo * m.ao + m.emissive;
    color += light_contribution(n, v, preview.light0.xyz, preview.light0.w, albedo, roughness, metallic);
    color += light_contribution(n, v, preview.light1.xyz, preview.light1.w, albedo, roughness, metallic);
    color = color / (vec3<f32>(1.0) + color);
    if (preview.view.w > 0.5) {
        color = vec3<f32>(encode_srgb(color.x), encode_srgb(color.y), encode_srgb(color.z));
    }
    return vec4<f32>(color, 1.0);
}
