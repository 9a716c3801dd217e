// texset:append-to decode.wgsl preview_scene.wgsl
//
// The studio's PBR preview, its material pass: the material under each pixel decoded from the
// bundle by the decoder this file is appended to (after `preview_scene.wgsl`), or read from the
// original maps. `fs_material` and `fs_material_originals` write it to a G-buffer, which
// `preview_shade.wgsl` lights (so moving lights cost no decode); `fs_preview` does both in one
// pass. The CPU twin is `texset_shaders::preview::shade` (keep them in step).
//
// A probe (`preview.probe`: the error against the original maps, or the height map) is written
// instead of the material by `fs_material_probe` (decoded; a pipeline of its own, made when first
// asked for, so that the material's pipeline is the same program with or without probes) and by
// `fs_material_originals` (which reaches no decoder either way). Its CPU twin is
// `texset_shaders::preview::shade_probe`.

@group(1) @binding(1) var originals: texture_2d_array<f32>;
// The surface pass's first target (uv, footprint, coverage: `SurfaceOut`), for the material pass.
@group(2) @binding(0) var surface_uv: texture_2d<f32>;

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

// The original map `layer` of `originals` at `uv` (nearest texel), un-mapped as map `map_index`;
// `fallback` where the material has no such map. No decoder is reached from here.
fn fetch_original(map_index: u32, layer: u32, uv: vec2<f32>, fallback: vec4<f32>) -> vec4<f32> {
    if (map_index == NONE) {
        return fallback;
    }
    let size = textureDimensions(originals);
    let texel = min(vec2<u32>(uv * vec2<f32>(size)), size - vec2<u32>(1u));
    return unmap_texel(map_index, textureLoad(originals, texel, layer, 0));
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
        return fetch_original(map_index, layer, uv, fallback);
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

// Which map slot `i` of the material reads (library index and layer in `originals`), and what
// stands in where it has none, in the order base colour, normal, ORM, roughness, metallic, AO,
// emissive (ORM first of the last four: their fallbacks read it, `orm`).
struct Slot {
    map_index: u32,
    layer: u32,
    fallback: vec4<f32>,
}

fn material_slot(i: u32, orm: vec4<f32>) -> Slot {
    switch i {
        case 0u: { return Slot(preview.maps.x, preview.layers.x, vec4<f32>(0.5, 0.5, 0.5, 1.0)); }
        case 1u: { return Slot(preview.maps.y, preview.layers.y, vec4<f32>(0.0, 0.0, 1.0, 0.0)); }
        case 2u: { return Slot(preview.maps2.y, preview.layers2.y, vec4<f32>(1.0, 0.5, 0.0, 0.0)); }
        case 3u: { return Slot(preview.maps.z, preview.layers.z, vec4<f32>(orm.y)); }
        case 4u: { return Slot(preview.maps.w, preview.layers.w, vec4<f32>(orm.z)); }
        case 5u: { return Slot(preview.maps2.x, preview.layers2.x, vec4<f32>(orm.x)); }
        case 6u: { return Slot(preview.maps2.z, preview.layers2.z, vec4<f32>(0.0)); }
        default: { return Slot(preview.maps2.w, preview.layers2.w, vec4<f32>(0.0)); }
    }
}

fn material_of(values: array<vec4<f32>, 7>) -> Material {
    return Material(values[0].xyz, values[3].x, values[1].xyz, values[4].x, values[6].xyz, values[5].x);
}

// The material at `hit` decoded by the bundle's MLP (or the originals, with `preview.view.z`),
// filtered by the pixel's `footprint`.
fn decoded_material(hit: Hit, footprint: f32) -> Material {
    var c: Cache;
    c.map_index = NONE;
    var c2: Cache;
    c2.map_index = NONE;
    // One call site of `fetch` (and so of the decoder's MLP) in a loop over the material's maps.
    // Seven inlined decodes made drivers that compile shaders on the CPU (lavapipe's LLVM) take
    // minutes; the loop compiles once.
    var values: array<vec4<f32>, 7>;
    for (var i = 0u; i < 7u; i++) {
        let slot = material_slot(i, values[2]);
        values[i] = fetch(slot.map_index, slot.layer, hit.uv, footprint, slot.fallback, &c, &c2);
    }
    return material_of(values);
}

// The material at `hit` read from the original maps: the decoder's MLP is not reached, so a
// pipeline of this alone compiles in a moment even where the decoder takes minutes.
fn original_material(hit: Hit) -> Material {
    var values: array<vec4<f32>, 7>;
    for (var i = 0u; i < 7u; i++) {
        let slot = material_slot(i, values[2]);
        values[i] = fetch_original(slot.map_index, slot.layer, hit.uv, slot.fallback);
    }
    return material_of(values);
}

// One pixel at `uv` in the viewport (0..1, y down), decoded and lit in one pass.
fn shade(uv: vec2<f32>) -> vec4<f32> {
    let hit = scene_hit(uv);
    if (!hit.found) {
        return background(uv);
    }
    let footprint = pixel_footprint(uv, hit.uv, u32(preview.view.x + 0.5));
    return lit(uv, hit, decoded_material(hit, footprint));
}

@fragment
fn fs_preview(in: VertexOut) -> @location(0) vec4<f32> {
    return shade(in.uv);
}

// The G-buffer of the material pass: the decoded material on the surface under each pixel (the
// surface pass's uv and footprint; zero off the surface, clay on another material's).
@fragment
fn fs_material(in: VertexOut) -> GBufferOut {
    let surface = textureLoad(surface_uv, vec2<i32>(in.position.xy), 0);
    if (surface.w < 0.25) {
        return GBufferOut(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    }
    if (is_clay(surface.w)) {
        return pack_material(clay_material());
    }
    var hit: Hit;
    hit.uv = surface.xy;
    return pack_material(decoded_material(hit, surface.z));
}

// The same from the original maps (or the probe of them).
@fragment
fn fs_material_originals(in: VertexOut) -> GBufferOut {
    let surface = textureLoad(surface_uv, vec2<i32>(in.position.xy), 0);
    if (surface.w < 0.25) {
        return GBufferOut(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    }
    if (is_clay(surface.w)) {
        return pack_material(clay_material());
    }
    var hit: Hit;
    hit.uv = surface.xy;
    if (probing()) {
        return pack_material(probe_originals(hit));
    }
    return pack_material(original_material(hit));
}

// The stored values of layer `layer` of `originals` at `uv` (nearest texel).
fn original_stored(layer: u32, uv: vec2<f32>) -> vec4<f32> {
    let size = textureDimensions(originals);
    let texel = min(vec2<u32>(uv * vec2<f32>(size)), size - vec2<u32>(1u));
    return textureLoad(originals, texel, layer, 0);
}

// Whether the material pass writes a probe (`preview.probe`) instead of the material.
fn probing() -> bool {
    return preview.probe.x != 0u;
}

// Whether the probe reads map `map_index` (every map the material has, for the pooled error).
fn probed(map_index: u32) -> bool {
    return map_index != NONE && (preview.probe.y == NONE || preview.probe.y == map_index);
}

// Where a probe reads map `map_index`: the centre of the texel under `uv`, so the error is the
// texel's own (the decoded map and the original read the same texel, at level 0).
fn texel_centre(map_index: u32, uv: vec2<f32>) -> vec2<f32> {
    let size = vec2<f32>(f32(MAP_WIDTH[map_index]), f32(MAP_HEIGHT[map_index]));
    return (floor(fract(uv) * size) + 0.5) / size;
}

// What the probe reads of map `slot` whose stored values at `uv` are `stored`: the mean over its
// channels of |stored - reference| (the reference: the original map, `preview.probe.z` layers
// on in `originals`), or the first channel's value.
fn probe_texel(slot: Slot, stored: vec4<f32>, uv: vec2<f32>) -> f32 {
    if (preview.probe.x == 2u) {
        return stored.x;
    }
    let reference = original_stored(slot.layer + preview.probe.z, uv);
    let channels = min(MAP_CHANNELS[slot.map_index], 4u);
    var sum = 0.0;
    for (var c = 0u; c < channels; c++) {
        sum += abs(stored[c] - reference[c]);
    }
    return sum / f32(max(channels, 1u));
}

// The probe as the G-buffer holds it: base colour x the probe's mean over the maps it read, y
// how many it read (0: the material has no such map).
fn probe_material(sum: f32, count: f32) -> Material {
    return Material(vec3<f32>(sum / max(count, 1.0), count, 0.0), 0.0, vec3<f32>(0.0), 0.0, vec3<f32>(0.0), 0.0);
}

// The probe of the maps read from `originals` at `hit` (the side shows its texture's maps).
fn probe_originals(hit: Hit) -> Material {
    var sum = 0.0;
    var count = 0.0;
    for (var i = 0u; i < 8u; i++) {
        let slot = material_slot(i, vec4<f32>(0.0));
        if (probed(slot.map_index)) {
            let uv = texel_centre(slot.map_index, hit.uv);
            sum += probe_texel(slot, original_stored(slot.layer, uv), uv);
            count += 1.0;
        }
    }
    return probe_material(sum, count);
}

// The probe of the decoded maps at `hit`: each map the probe reads decoded at level 0 at its
// texel's centre (one call site of the decoder's MLP, in the loop, as `decoded_material` has).
fn probe_decoded(hit: Hit) -> Material {
    var c: Cache;
    c.map_index = NONE;
    var c2: Cache;
    c2.map_index = NONE;
    var sum = 0.0;
    var count = 0.0;
    for (var i = 0u; i < 8u; i++) {
        let slot = material_slot(i, vec4<f32>(0.0));
        if (probed(slot.map_index)) {
            let uv = texel_centre(slot.map_index, hit.uv);
            sum += probe_texel(slot, cached_decode(slot.map_index, uv, 0u, false, &c, &c2), uv);
            count += 1.0;
        }
    }
    return probe_material(sum, count);
}

// The probe of the decoded material on the surface under each pixel (clay and nothing as
// `fs_material` writes them).
@fragment
fn fs_material_probe(in: VertexOut) -> GBufferOut {
    let surface = textureLoad(surface_uv, vec2<i32>(in.position.xy), 0);
    if (surface.w < 0.25) {
        return GBufferOut(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    }
    if (is_clay(surface.w)) {
        return pack_material(clay_material());
    }
    var hit: Hit;
    hit.uv = surface.xy;
    return pack_material(probe_decoded(hit));
}
