// texset:append-to preview_scene.wgsl
//
// The studio's PBR preview, its surface pass: what surface lies under each pixel (`SurfaceOut` in
// `preview_scene.wgsl`), for the material pass to decode and the shading pass to light. A shape
// is ray-cast (`fs_surface_shape`, the analytic hit and footprint the one-pass `fs_preview`
// computes); a mesh is rasterised (`vs_mesh`, `fs_surface_mesh`) with a reversed, infinite depth
// range. No decoder: the pass is the same for every bundle and compiles in a moment.

struct SurfaceIn {
    @builtin(position) position: vec4<f32>,
    @location(0) uv: vec2<f32>,
}

// The full-screen triangle, viewport point `uv` with it.
@vertex
fn vs_surface_shape(@builtin(vertex_index) vertex: u32) -> SurfaceIn {
    let uv = vec2<f32>(f32((vertex << 1u) & 2u), f32(vertex & 2u));
    return SurfaceIn(vec4<f32>(uv.x * 2.0 - 1.0, 1.0 - uv.y * 2.0, 0.0, 1.0), uv);
}

@fragment
fn fs_surface_shape(in: SurfaceIn) -> SurfaceOut {
    let hit = scene_hit(in.uv);
    if (!hit.found) {
        return SurfaceOut(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    }
    return pack_surface(hit, pixel_footprint(in.uv, hit.uv, u32(preview.view.x + 0.5)), 1.0);
}

// One vertex of a mesh (`texset_shaders::preview::GpuMesh`'s layout), world space, and whether
// its primitive has the material shown (1) or another (0: drawn in clay).
struct MeshIn {
    @location(0) position: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) tangent: vec4<f32>,
    @location(3) uv: vec2<f32>,
    @location(4) shown: f32,
}

struct MeshOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) normal: vec3<f32>,
    @location(1) tangent: vec4<f32>,
    @location(2) uv: vec2<f32>,
    @location(3) @interpolate(flat) shown: f32,
}

// The camera's projection: x and y as `ray_dir` spans them, depth near / z (1 at the near
// plane, towards 0 far away: reversed and infinite, so depth keeps its precision at any
// distance).
@vertex
fn vs_mesh(v: MeshIn) -> MeshOut {
    let rel = v.position - preview.camera_eye.xyz;
    let tan_half = preview.camera_eye.w;
    let x = dot(rel, preview.camera_right.xyz) / (tan_half * preview.view.y);
    let y = dot(rel, preview.camera_up.xyz) / tan_half;
    let z = dot(rel, preview.camera_forward.xyz);
    var out: MeshOut;
    out.clip = vec4<f32>(x, y, max(preview.surface.x, 1e-6), z);
    out.normal = v.normal;
    out.tangent = v.tangent;
    out.uv = v.uv;
    out.shown = v.shown;
    return out;
}

@fragment
fn fs_surface_mesh(in: MeshOut, @builtin(front_facing) front: bool) -> SurfaceOut {
    var hit: Hit;
    hit.found = true;
    hit.uv = in.uv;
    // A back face (of a double-sided surface) turns its whole frame round.
    let side = select(-1.0, 1.0, front);
    hit.normal = normalize(in.normal) * side;
    hit.tangent = normalize(in.tangent.xyz) * side;
    hit.bitangent_sign = select(1.0, -1.0, in.tangent.w < 0.0) * side;
    // The footprint from screen-space derivatives, scaled to a pixel of the full resolution
    // (`lod_filter.x` high) as the shapes' analytic one is.
    var footprint = 0.0;
    if (preview.lod_filter.y > 0.5 && preview.lod_filter.x > 0.0) {
        let per_pixel = max(length(dpdx(in.uv)), length(dpdy(in.uv)));
        footprint = per_pixel * select(1.0, preview.surface.y / preview.lod_filter.x, preview.surface.y > 0.0);
    }
    return pack_surface(hit, footprint, select(0.5, 1.0, in.shown > 0.5));
}
