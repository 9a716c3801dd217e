//! glTF materials into texset materials: the maps each binding gives (the rules are in the
//! module doc of `gltf`), one UV layout per material, constants, unique names, and every distinct
//! image decoded once.

use super::GltfFault;
use super::source::{ImageKey, LoadedAsset, decode_image, image_key, image_source_path};
use crate::set::ingest::{IngestError, IngestReport, Skipped, report_maps, resize_constant_maps};
use crate::set::{AlphaMode, MapInfo, MapKind, Material, MaterialConstants, NormalConvention, Texture, UvTransform};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

/// The textured materials of an asset.
pub(super) struct LoadedMaterials {
    /// The materials kept, in document order.
    pub(super) materials: Vec<Material>,
    /// Per glTF material, its index in `materials` (`None`: left out, it has no map).
    pub(super) library_index: Vec<Option<usize>>,
    /// The distinct images decoded, in first-use order.
    pub(super) image_sources: Vec<PathBuf>,
}

/// Which channels of its image a map takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pick {
    /// Every channel.
    All,
    /// Every channel but alpha (gray+alpha → gray, RGBA → RGB).
    DropAlpha,
    /// R, G and B (a gray image's value for each).
    Rgb,
    /// One colour channel (a gray image's value for any).
    Channel(usize),
}

/// One map a material will hold.
struct PlannedMap {
    kind: MapKind,
    image: ImageKey,
    pick: Pick,
}

/// A binding that gives a map, with the UV it reads.
struct Binding {
    /// The glTF property (`baseColorTexture`, …).
    what: &'static str,
    /// The `TEXCOORD_n` set, after a `KHR_texture_transform` override.
    uv_set: u32,
    transform: UvTransform,
}

/// A glTF material's maps and constants, before its images are decoded.
struct Plan {
    /// Its base name (variant, glTF name or file stem), before clashes are suffixed.
    base_name: String,
    constants: MaterialConstants,
    maps: Vec<PlannedMap>,
}

/// `KHR_texture_transform` as JSON, for the bindings the `gltf` crate gives no accessor for.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct TransformJson {
    #[serde(default)]
    offset: Option<[f32; 2]>,
    #[serde(default)]
    rotation: Option<f32>,
    #[serde(default)]
    scale: Option<[f32; 2]>,
    #[serde(default)]
    tex_coord: Option<u32>,
}

/// Reads every material of `asset`: plans each, names the kept ones, decodes each distinct image
/// once (in parallel) and assembles the maps. Maps read and bindings left out go in `report`.
pub(super) fn load_materials(asset: &LoadedAsset, report: &mut IngestReport) -> Result<LoadedMaterials, IngestError> {
    let gltf_fault = |fault: GltfFault| IngestError::Gltf { path: asset.path.clone(), fault };
    let variant_names = variant_names_by_material(asset).map_err(gltf_fault)?;
    let mut plans = Vec::new();
    for (material, variant) in asset.document.materials().zip(variant_names) {
        plans.push(plan_material(asset, &material, variant.as_deref(), &mut report.skipped)?);
    }
    let mut library_index = vec![None; plans.len()];
    let mut kept: Vec<(String, Plan)> = Vec::new();
    let mut used = HashSet::new();
    for (index, plan) in plans.into_iter().enumerate() {
        if plan.maps.is_empty() {
            let reason = format!("material {index} ({}) has no map to compress; left out with its primitives", plan.base_name);
            report.skipped.push(Skipped { path: asset.path.clone(), reason });
            continue;
        }
        let name = unique_name(&plan.base_name, &mut used);
        library_index[index] = Some(kept.len());
        kept.push((name, plan));
    }
    let mut keys: Vec<ImageKey> = Vec::new();
    for map in kept.iter().flat_map(|(_, plan)| &plan.maps) {
        if !keys.contains(&map.image) {
            keys.push(map.image.clone());
        }
    }
    let decoded: Vec<Texture> = keys.par_iter().map(|key| decode_image(asset, key)).collect::<Result<_, _>>()?;
    let images: BTreeMap<&ImageKey, &Texture> = keys.iter().zip(&decoded).collect();
    let mut materials = Vec::with_capacity(kept.len());
    for (name, plan) in kept {
        let mut textures: Vec<Texture> =
            plan.maps.iter().filter_map(|map| images.get(&map.image).map(|image| pick_map(image, map.kind, map.pick))).collect();
        textures.sort_by_key(|t| t.info.kind);
        let resized = resize_constant_maps(&mut textures)?;
        report_maps(&name, &textures, &resized, report);
        materials.push(Material { name, source_dir: asset.path.clone(), textures, constants: plan.constants });
    }
    let image_sources = keys.iter().map(|key| image_source_path(asset, key)).collect();
    Ok(LoadedMaterials { materials, library_index, image_sources })
}

/// Per glTF material, the name of the first variant (in the file's order) that maps it.
fn variant_names_by_material(asset: &LoadedAsset) -> Result<Vec<Option<String>>, GltfFault> {
    let mut first = vec![None::<usize>; asset.document.materials().len()];
    for mesh in asset.document.meshes() {
        for primitive in mesh.primitives() {
            for mapping in primitive.mappings() {
                let Some(material) = mapping.material().index() else {
                    let what = format!("mesh {} primitive {} maps a material that does not exist", mesh.index(), primitive.index());
                    return Err(GltfFault::Variant(what));
                };
                for &variant in mapping.variants() {
                    if variant as usize >= asset.variant_names.len() {
                        let count = asset.variant_names.len();
                        return Err(GltfFault::Variant(format!("a mapping names variant {variant}, but the file has {count}")));
                    }
                    if let Some(slot) = first.get_mut(material) {
                        *slot = Some(slot.map_or(variant as usize, |v| v.min(variant as usize)));
                    }
                }
            }
        }
    }
    Ok(first.into_iter().map(|v| v.and_then(|v| asset.variant_names.get(v).cloned())).collect())
}

/// Plans one material's maps and constants (the module doc's rules), refusing bindings that
/// read different UVs. Bindings left out go in `skipped`.
fn plan_material(
    asset: &LoadedAsset,
    material: &gltf::Material<'_>,
    variant: Option<&str>,
    skipped: &mut Vec<Skipped>,
) -> Result<Plan, IngestError> {
    let index = material.index().unwrap_or_default();
    let gltf_name = material.name().unwrap_or_default().to_owned();
    let material_fault =
        |fault: GltfFault| IngestError::GltfMaterial { path: asset.path.clone(), material: gltf_name.clone(), index, fault };
    let key = |texture: gltf::Texture<'_>| {
        image_key(asset, texture.source().index()).map_err(|fault| IngestError::Gltf { path: asset.path.clone(), fault })
    };
    let mut constants = constants_of(material);
    let mut maps = Vec::new();
    let mut bindings = Vec::new();
    let mut leave_out =
        |what: &str| skipped.push(Skipped { path: asset.path.clone(), reason: format!("material {index} ({gltf_name}): {what}") });
    let pbr = material.pbr_metallic_roughness();
    if let Some(info) = pbr.base_color_texture() {
        let pick = if constants.alpha_mode == AlphaMode::Opaque { Pick::DropAlpha } else { Pick::All };
        maps.push(PlannedMap { kind: MapKind::Basecolor, image: key(info.texture())?, pick });
        bindings.push(info_binding("baseColorTexture", &info));
    }
    if let Some(normal) = material.normal_texture() {
        maps.push(PlannedMap { kind: MapKind::Normal, image: key(normal.texture())?, pick: Pick::Rgb });
        bindings.push(
            json_binding("normalTexture", normal.tex_coord(), normal.extension_value("KHR_texture_transform")).map_err(material_fault)?,
        );
    }
    let metallic_roughness = pbr.metallic_roughness_texture();
    let occlusion = material.occlusion_texture();
    let mr_image = metallic_roughness.as_ref().map(|info| key(info.texture())).transpose()?;
    let occlusion_image = occlusion.as_ref().map(|o| key(o.texture())).transpose()?;
    if let (Some(info), Some(image)) = (&metallic_roughness, mr_image.clone()) {
        bindings.push(info_binding("metallicRoughnessTexture", info));
        if occlusion_image.as_ref() == Some(&image) {
            maps.push(PlannedMap { kind: MapKind::Orm, image, pick: Pick::Rgb });
        } else {
            maps.push(PlannedMap { kind: MapKind::Roughness, image: image.clone(), pick: Pick::Channel(1) });
            if constants.metallic_factor > 0.0 {
                maps.push(PlannedMap { kind: MapKind::Metallic, image, pick: Pick::Channel(2) });
            } else {
                leave_out("metallic (B of metallicRoughnessTexture) left out: metallicFactor is 0");
            }
        }
    }
    if let (Some(occlusion), Some(image)) = (&occlusion, occlusion_image) {
        let extension = occlusion.extension_value("KHR_texture_transform");
        bindings.push(json_binding("occlusionTexture", occlusion.tex_coord(), extension).map_err(material_fault)?);
        if mr_image.as_ref() != Some(&image) {
            maps.push(PlannedMap { kind: MapKind::Ao, image, pick: Pick::Channel(0) });
        }
    }
    if let Some(info) = material.emissive_texture() {
        if constants.emissive_factor.iter().any(|&f| f > 0.0) {
            maps.push(PlannedMap { kind: MapKind::Emissive, image: key(info.texture())?, pick: Pick::Rgb });
            bindings.push(info_binding("emissiveTexture", &info));
        } else {
            leave_out("emissiveTexture left out: emissiveFactor is black");
        }
    }
    (constants.uv_set, constants.uv_transform) = common_uv(&bindings).map_err(material_fault)?;
    let base_name = base_name(variant.unwrap_or(&gltf_name), &asset.stem);
    Ok(Plan { base_name, constants, maps })
}

/// The material's factors and render state.
fn constants_of(material: &gltf::Material<'_>) -> MaterialConstants {
    let pbr = material.pbr_metallic_roughness();
    MaterialConstants {
        base_color_factor: pbr.base_color_factor(),
        metallic_factor: pbr.metallic_factor(),
        roughness_factor: pbr.roughness_factor(),
        emissive_factor: material.emissive_factor(),
        occlusion_strength: material.occlusion_texture().map_or(1.0, |o| o.strength()),
        normal_scale: material.normal_texture().map_or(1.0, |n| n.scale()),
        alpha_mode: match material.alpha_mode() {
            gltf::material::AlphaMode::Opaque => AlphaMode::Opaque,
            gltf::material::AlphaMode::Mask => AlphaMode::Mask,
            gltf::material::AlphaMode::Blend => AlphaMode::Blend,
        },
        alpha_cutoff: material.alpha_cutoff().unwrap_or(0.5),
        double_sided: material.double_sided(),
        ..MaterialConstants::default()
    }
}

/// The UV a `textureInfo` binding reads.
fn info_binding(what: &'static str, info: &gltf::texture::Info<'_>) -> Binding {
    let transform = info.texture_transform();
    Binding {
        what,
        uv_set: transform.as_ref().and_then(gltf::texture::TextureTransform::tex_coord).unwrap_or(info.tex_coord()),
        transform: transform.map_or_else(UvTransform::default, |t| UvTransform {
            offset: t.offset(),
            rotation_rad: t.rotation(),
            scale: t.scale(),
        }),
    }
}

/// The UV a normal or occlusion binding reads (its `KHR_texture_transform` as raw JSON).
fn json_binding(what: &'static str, tex_coord: u32, extension: Option<&serde_json::Value>) -> Result<Binding, GltfFault> {
    let Some(value) = extension else { return Ok(Binding { what, uv_set: tex_coord, transform: UvTransform::default() }) };
    let json: TransformJson =
        serde_json::from_value(value.clone()).map_err(|e| GltfFault::Invalid(format!("{what}'s KHR_texture_transform: {e}")))?;
    let identity = UvTransform::default();
    let transform = UvTransform {
        offset: json.offset.unwrap_or(identity.offset),
        rotation_rad: json.rotation.unwrap_or(identity.rotation_rad),
        scale: json.scale.unwrap_or(identity.scale),
    };
    Ok(Binding { what, uv_set: json.tex_coord.unwrap_or(tex_coord), transform })
}

/// The one UV set and transform all `bindings` read (set 0 and the identity for none).
fn common_uv(bindings: &[Binding]) -> Result<(u32, UvTransform), GltfFault> {
    let Some(first) = bindings.first() else { return Ok((0, UvTransform::default())) };
    if bindings.iter().any(|b| b.uv_set != first.uv_set) {
        let list: Vec<String> = bindings.iter().map(|b| format!("{} TEXCOORD_{}", b.what, b.uv_set)).collect();
        return Err(GltfFault::TexCoordsDiffer { bindings: list.join(", ") });
    }
    if bindings.iter().any(|b| b.transform != first.transform) {
        let list: Vec<String> = bindings
            .iter()
            .map(|b| {
                let t = b.transform;
                format!("{} offset {:?} rotation {} rad scale {:?}", b.what, t.offset, t.rotation_rad, t.scale)
            })
            .collect();
        return Err(GltfFault::TransformsDiffer { bindings: list.join(", ") });
    }
    Ok((first.uv_set, first.transform))
}

/// A name a bundle accepts: `/`, `\`, `:` and control characters become `_`, at most 240 bytes
/// (room for a suffix); the file stem (else `material`) when nothing is left.
fn base_name(name: &str, stem: &str) -> String {
    let clean = |text: &str| -> String {
        let mut out = String::new();
        for c in text.chars().map(|c| if matches!(c, '/' | '\\' | ':') || c.is_control() { '_' } else { c }) {
            if out.len() + c.len_utf8() > 240 {
                break;
            }
            out.push(c);
        }
        out
    };
    [clean(name), clean(stem)].into_iter().find(|n| !n.is_empty() && n != "." && n != "..").unwrap_or_else(|| "material".to_owned())
}

/// `base`, or `base_2`, `base_3`, … when taken; the name is added to `used`.
fn unique_name(base: &str, used: &mut HashSet<String>) -> String {
    let mut name = base.to_owned();
    let mut suffix = 2;
    while used.contains(&name) {
        name = format!("{base}_{suffix}");
        suffix += 1;
    }
    used.insert(name.clone());
    name
}

/// The map of `kind` taken from a decoded image: the channels `pick` names, the kind's colour
/// space, glTF's (OpenGL) normal convention.
fn pick_map(image: &Texture, kind: MapKind, pick: Pick) -> Texture {
    let ch = image.info.channels as usize;
    // A gray image (1 or 2 channels) gives its value for R, G and B.
    let colour = |c: usize| if ch < 3 { 0 } else { c };
    let channels: Vec<usize> = match pick {
        Pick::DropAlpha if ch == 2 || ch == 4 => (0..ch - 1).collect(),
        Pick::All | Pick::DropAlpha => (0..ch).collect(),
        Pick::Rgb => (0..3).map(colour).collect(),
        Pick::Channel(c) => vec![colour(c)],
    };
    let (texels, channel_ranges) = if channels.iter().copied().eq(0..ch) {
        (image.texels.clone(), image.info.channel_ranges.clone())
    } else {
        let texels =
            image.texels.chunks_exact(ch.max(1)).flat_map(|texel| channels.iter().map(|&c| texel.get(c).copied().unwrap_or(0.0))).collect();
        (texels, channels.iter().map(|&c| image.info.channel_ranges.get(c).copied().unwrap_or([0.0, 1.0])).collect())
    };
    Texture {
        info: MapInfo {
            kind,
            width: image.info.width,
            height: image.info.height,
            channels: channels.len() as u32,
            sample_format: image.info.sample_format,
            color_space: kind.color_space(),
            normal_convention: NormalConvention::OpenGl,
            channel_ranges,
        },
        source_path: image.source_path.clone(),
        texels,
    }
}
