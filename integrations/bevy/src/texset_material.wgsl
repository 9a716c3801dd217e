// texset-bevy's per-pixel material: Bevy's StandardMaterial lighting with the material's maps
// decoded per pixel by the texset decoder at the fragment's UV and level of detail, instead of
// sampled from textures. `material_shader` (material.rs) replaces the two marker lines below with
// the material's own constants and the decoder's functions (texset-shaders'
// `GpuModel::functions_wgsl`, the generator `texset export-shader --functions-only` uses), bound
// in the material's group at bindings 100 (latents) and 101 (weights).
//
// What the textures' path does, this does on decoded values: base colour (sRGB to linear), the
// normal map through Bevy's `apply_normal_mapping` with the material's flags (its convention),
// roughness from green and metallic from blue of the packed map (or their own maps), occlusion
// and emission. Filtered as hardware filters textures: the level of detail from derivatives
// (`lod_from_derivatives`), the two mip levels around it blended, each level bilinear over its
// four nearest texels decoded at their centres and rounded to 8 bits, as the textures hold them
// (up to eight decodes per map and pixel).
#import bevy_pbr::{
    pbr_fragment::pbr_input_from_standard_material,
    pbr_functions::{alpha_discard, apply_pbr_lighting, main_pass_post_lighting_processing, calculate_tbn_mikktspace, apply_normal_mapping},
    forward_io::{VertexOutput, FragmentOutput},
    pbr_types,
}

// texset:material
// texset:decoder

// The shading values of a slot's filtered values: sRGB maps were un-mapped texel by texel.
fn linear(map: u32, filtered: vec4<f32>) -> vec4<f32> {
    if (MAP_SRGB[map] == 1u) {
        return filtered;
    }
    return unmap_texel(map, filtered);
}

@fragment
fn fragment(in: VertexOutput, @builtin(front_facing) is_front: bool) -> FragmentOutput {
    var pbr_input = pbr_input_from_standard_material(in, is_front);
#ifdef VERTEX_UVS_A
    let uv = in.uv;
    // Every slot's level of detail first, in uniform control flow (derivatives need it).
    var lods: array<f32, SLOT_COUNT>;
    for (var slot = 0u; slot < SLOT_COUNT; slot++) {
        lods[slot] = lod_from_derivatives(uv, vec2<f32>(f32(MAP_WIDTH[SLOT_MAP[slot]]), f32(MAP_HEIGHT[SLOT_MAP[slot]])));
    }
    // Every slot's two mip levels, each filtered bilinearly from its four nearest texels decoded
    // at their centres, as a GPU filters the decode-on-load textures (decoding at `uv` itself
    // would interpolate the latents, not the texels: visibly different at sharp features). All
    // through one decoder call site, so the compiled shader holds one MLP.
    var values: array<vec4<f32>, SLOT_COUNT>;
    for (var job = 0u; job < 8u * SLOT_COUNT; job++) {
        let slot = job / 8u;
        let upper = (job / 4u) % 2u;
        let corner = job % 4u;
        let map = SLOT_MAP[slot];
        let top = f32(MAP_MIP_LEVELS[map] - 1u);
        let l = clamp(lods[slot], 0.0, top);
        let below = floor(l);
        let blend = l - below;
        let level = min(u32(below) + upper, u32(top));
        // The level's texels (`level_size` in core/src/model/mips.rs), centres at (x + 0.5) / w.
        let size = vec2<f32>(f32(max(MAP_WIDTH[map] >> level, 1u)), f32(max(MAP_HEIGHT[map] >> level, 1u)));
        let p = uv * size - 0.5;
        let cell = floor(p);
        let f = p - cell;
        let side = vec2<f32>(f32(corner & 1u), f32(corner >> 1u));
        let bilinear = mix(1.0 - f.x, f.x, side.x) * mix(1.0 - f.y, f.y, side.y);
        let weight = select(1.0 - blend, blend, upper == 1u) * bilinear;
        if (weight <= 0.0) {
            continue;
        }
        let texel = clamp(cell + side, vec2<f32>(0.0), size - 1.0);
        // Rounded to 8 bits, as the decode-on-load textures (and every 8-bit source) hold it.
        var t = round(decode_texel_level(map, (texel + 0.5) / size, level) * 255.0) / 255.0;
        // sRGB maps are filtered in linear light, as a GPU filters an sRGB texture.
        if (MAP_SRGB[map] == 1u) {
            t = unmap_texel(map, t);
        }
        values[slot] += weight * t;
    }
    if (HAS_BASE_COLOR) {
        let map = SLOT_MAP[BASE_COLOR_SLOT];
        var color = linear(map, values[BASE_COLOR_SLOT]);
        if (MAP_CHANNELS[map] < 4u) {
            color.a = 1.0;
        }
        pbr_input.material.base_color *= color;
    }
    if (HAS_ROUGHNESS) {
        pbr_input.material.perceptual_roughness *= values[ROUGHNESS_SLOT][ROUGHNESS_CHANNEL];
    }
    if (HAS_METALLIC) {
        pbr_input.material.metallic *= values[METALLIC_SLOT][METALLIC_CHANNEL];
    }
    if (HAS_OCCLUSION) {
        pbr_input.diffuse_occlusion *= values[OCCLUSION_SLOT][OCCLUSION_CHANNEL];
    }
    if (HAS_EMISSIVE) {
        let emissive = linear(SLOT_MAP[EMISSIVE_SLOT], values[EMISSIVE_SLOT]);
        pbr_input.material.emissive = vec4<f32>(pbr_input.material.emissive.rgb * emissive.rgb, pbr_input.material.emissive.a);
    }
#ifdef VERTEX_TANGENTS
    if (HAS_NORMAL) {
        let TBN = calculate_tbn_mikktspace(pbr_input.world_normal, in.world_tangent);
        let double_sided = (pbr_input.material.flags & pbr_types::STANDARD_MATERIAL_FLAGS_DOUBLE_SIDED_BIT) != 0u;
        // The stored values (n * 0.5 + 0.5 in the map's convention), as a texture holds them.
        pbr_input.N = apply_normal_mapping(pbr_input.material.flags, TBN, double_sided, is_front, values[NORMAL_SLOT].rgb);
    }
#endif
#endif
    pbr_input.material.base_color = alpha_discard(pbr_input.material, pbr_input.material.base_color);
    var out: FragmentOutput;
    if ((pbr_input.material.flags & pbr_types::STANDARD_MATERIAL_FLAGS_UNLIT_BIT) == 0u) {
        out.color = apply_pbr_lighting(pbr_input);
    } else {
        out.color = pbr_input.material.base_color;
    }
    out.color = main_pass_post_lighting_processing(pbr_input, out.color);
    return out;
}
