//! Materials: maps from bindings, constants, UV rules, names, image sources.

use super::*;
use crate::set::{AlphaMode, ColorSpace, MapKind, Material, Texture, UvTransform};

fn kinds(material: &Material) -> Vec<MapKind> {
    material.textures.iter().map(|t| t.info.kind).collect()
}

fn map(material: &Material, kind: MapKind) -> &Texture {
    material.textures.iter().find(|t| t.info.kind == kind).unwrap()
}

/// Channel `c` of the fixture image with `seed` (RGB), normalised, for every texel.
fn channel(seed: u8, c: usize) -> Vec<f32> {
    image_bytes(seed, 3).1.chunks_exact(3).map(|t| f32::from(t[c]) / 255.0).collect()
}

fn texels_of_channel(texture: &Texture, c: usize) -> Vec<f32> {
    texture.texels.chunks_exact(texture.info.channels as usize).map(|t| t[c]).collect()
}

#[test]
fn a_shared_occlusion_and_metallic_roughness_image_is_one_orm_map() {
    let dir = tempfile::tempdir().unwrap();
    let mut document = folder_fixture(dir.path());
    document["materials"][0]["normalTexture"] = json!({"index": 1, "scale": 0.5});
    document["materials"][0]["pbrMetallicRoughness"]["metallicRoughnessTexture"] = json!({"index": 2});
    document["materials"][0]["occlusionTexture"] = json!({"index": 2, "strength": 0.75});
    let asset = load(dir.path(), &document).unwrap();
    let material = &asset.materials[0];
    assert_eq!(material.name, "painted");
    assert_eq!(kinds(material), [MapKind::Basecolor, MapKind::Normal, MapKind::Orm]);
    let orm = map(material, MapKind::Orm);
    assert_eq!((orm.info.channels, orm.info.color_space), (3, ColorSpace::Linear));
    assert_eq!(texels_of_channel(orm, 1), channel(40, 1));
    assert_eq!(map(material, MapKind::Basecolor).info.color_space, ColorSpace::Srgb);
    assert_eq!((material.constants.normal_scale, material.constants.occlusion_strength), (0.5, 0.75));
    // Three images bound, three decoded: the ORM image once.
    assert_eq!(asset.image_sources.len(), 3);
    assert_eq!(asset.report.maps.len(), 3);
}

#[test]
fn separate_images_split_into_roughness_metallic_and_ao() {
    let dir = tempfile::tempdir().unwrap();
    let mut document = folder_fixture(dir.path());
    document["materials"][0]["pbrMetallicRoughness"]["metallicRoughnessTexture"] = json!({"index": 3});
    document["materials"][0]["occlusionTexture"] = json!({"index": 4});
    let material = &load(dir.path(), &document).unwrap().materials[0];
    assert_eq!(kinds(material), [MapKind::Basecolor, MapKind::Roughness, MapKind::Metallic, MapKind::Ao]);
    // Roughness is G and metallic B of rough.png (seed 60); AO is R of ao.png (seed 80).
    assert_eq!(map(material, MapKind::Roughness).texels, channel(60, 1));
    assert_eq!(map(material, MapKind::Metallic).texels, channel(60, 2));
    assert_eq!(map(material, MapKind::Ao).texels, channel(80, 0));
    assert!(material.textures.iter().skip(1).all(|t| t.info.channels == 1 && t.info.color_space == ColorSpace::Linear));
}

#[test]
fn metallic_is_left_out_when_the_metallic_factor_is_zero() {
    let dir = tempfile::tempdir().unwrap();
    let mut document = folder_fixture(dir.path());
    document["materials"][0]["pbrMetallicRoughness"]["metallicRoughnessTexture"] = json!({"index": 3});
    document["materials"][0]["pbrMetallicRoughness"]["metallicFactor"] = json!(0.0);
    let asset = load(dir.path(), &document).unwrap();
    assert_eq!(kinds(&asset.materials[0]), [MapKind::Basecolor, MapKind::Roughness]);
    assert_eq!(asset.materials[0].constants.metallic_factor, 0.0);
    assert!(asset.report.skipped.iter().any(|s| s.reason.contains("metallicFactor is 0")), "{:?}", asset.report.skipped);
}

#[test]
fn emissive_maps_follow_their_factor() {
    let dir = tempfile::tempdir().unwrap();
    let mut document = folder_fixture(dir.path());
    document["materials"][0]["emissiveTexture"] = json!({"index": 5});
    document["materials"][0]["emissiveFactor"] = json!([1.0, 0.5, 0.0]);
    let material = load(dir.path(), &document).unwrap().materials.remove(0);
    let emissive = map(&material, MapKind::Emissive);
    assert_eq!((emissive.info.channels, emissive.info.color_space), (3, ColorSpace::Srgb));
    assert_eq!(texels_of_channel(emissive, 2), channel(100, 2), "the factor is not baked");
    assert_eq!(material.constants.emissive_factor, [1.0, 0.5, 0.0]);
    // glTF's default factor is black: the map cannot show, and is left out.
    document["materials"][0]["emissiveFactor"] = json!([0.0, 0.0, 0.0]);
    let asset = load(dir.path(), &document).unwrap();
    assert_eq!(kinds(&asset.materials[0]), [MapKind::Basecolor]);
    assert!(asset.report.skipped.iter().any(|s| s.reason.contains("emissiveFactor is black")));
}

#[test]
fn factors_and_render_state_are_constants_not_baked() {
    let dir = tempfile::tempdir().unwrap();
    let mut document = folder_fixture(dir.path());
    write_png(&dir.path().join("base.png"), 0, 4);
    document["materials"][0]["pbrMetallicRoughness"]["baseColorFactor"] = json!([0.5, 0.25, 1.0, 0.8]);
    document["materials"][0]["pbrMetallicRoughness"]["roughnessFactor"] = json!(0.3);
    document["materials"][0]["alphaMode"] = json!("MASK");
    document["materials"][0]["alphaCutoff"] = json!(0.25);
    document["materials"][0]["doubleSided"] = json!(true);
    let material = load(dir.path(), &document).unwrap().materials.remove(0);
    let c = material.constants;
    assert_eq!((c.base_color_factor, c.roughness_factor, c.metallic_factor), ([0.5, 0.25, 1.0, 0.8], 0.3, 1.0));
    assert_eq!((c.alpha_mode, c.alpha_cutoff, c.double_sided), (AlphaMode::Mask, 0.25, true));
    let base = map(&material, MapKind::Basecolor);
    assert_eq!(base.info.channels, 4, "alpha kept under MASK");
    let raw: Vec<f32> = image_bytes(0, 4).1.iter().map(|&v| f32::from(v) / 255.0).collect();
    assert_eq!(base.texels, raw, "the factor is not baked");
    // Under OPAQUE glTF ignores alpha: it is dropped.
    document["materials"][0]["alphaMode"] = json!("OPAQUE");
    let material = load(dir.path(), &document).unwrap().materials.remove(0);
    assert_eq!(material.textures[0].info.channels, 3);
    assert_eq!(material.constants.alpha_mode, AlphaMode::Opaque);
}

#[test]
fn a_common_texture_transform_is_kept_and_differing_uvs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut document = folder_fixture(dir.path());
    let transform = json!({"KHR_texture_transform": {"offset": [0.5, 0.0], "rotation": 0.25, "scale": [2.0, 2.0]}});
    document["extensionsUsed"] = json!(["KHR_texture_transform"]);
    document["materials"][0]["pbrMetallicRoughness"]["baseColorTexture"]["extensions"] = transform.clone();
    document["materials"][0]["normalTexture"] = json!({"index": 1, "extensions": transform});
    let material = load(dir.path(), &document).unwrap().materials.remove(0);
    let expected = UvTransform { offset: [0.5, 0.0], rotation_rad: 0.25, scale: [2.0, 2.0] };
    assert_eq!((material.constants.uv_set, material.constants.uv_transform), (0, expected));

    // The normal map without the transform: two UV layouts.
    let mut differing = document.clone();
    differing["materials"][0]["normalTexture"] = json!({"index": 1});
    let err = load(dir.path(), &differing).unwrap_err();
    assert!(
        matches!(err, IngestError::GltfMaterial { ref material, index: 0, fault: GltfFault::TransformsDiffer { .. }, .. } if material == "painted"),
        "{err}"
    );
    assert!(err.to_string().contains("asset.gltf") && err.to_string().contains("normalTexture"), "{err}");

    // Another texCoord set, directly or through the transform's override.
    let mut other_set = document.clone();
    other_set["materials"][0]["normalTexture"]["texCoord"] = json!(1);
    other_set["materials"][0]["normalTexture"]["extensions"]["KHR_texture_transform"]["texCoord"] = json!(1);
    let fault = fault_of(load(dir.path(), &other_set));
    assert!(matches!(fault, GltfFault::TexCoordsDiffer { ref bindings } if bindings.contains("normalTexture TEXCOORD_1")), "{fault}");
}

#[test]
fn images_are_told_apart_by_resolved_path_not_index() {
    let dir = tempfile::tempdir().unwrap();
    let mut document = folder_fixture(dir.path());
    document["images"] = json!([{"uri": "base.png"}, {"uri": "./sub/../base.png"}, {"uri": "ba%73e.png"}]);
    document["textures"] = json!([{"source": 0}, {"source": 1}, {"source": 2}]);
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    document["materials"] = json!([
        {"name": "a", "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}},
        {"name": "b", "pbrMetallicRoughness": {"baseColorTexture": {"index": 1}}},
        {"name": "c", "emissiveTexture": {"index": 2}, "emissiveFactor": [1.0, 1.0, 1.0]}
    ]);
    let asset = load(dir.path(), &document).unwrap();
    assert_eq!(asset.image_sources, [std::fs::canonicalize(dir.path().join("base.png")).unwrap()]);
    assert_eq!(asset.materials.len(), 3);
    assert_eq!(asset.materials[0].textures[0].texels, asset.materials[1].textures[0].texels);
}

#[test]
fn variants_name_their_materials_and_clashes_get_suffixes() {
    let dir = tempfile::tempdir().unwrap();
    let mut document = folder_fixture(dir.path());
    let base = json!({"baseColorTexture": {"index": 0}});
    document["materials"] = json!([
        {"name": "shoe", "pbrMetallicRoughness": base},
        {"name": "shoe", "pbrMetallicRoughness": base},
        {"name": "shoe", "pbrMetallicRoughness": base},
        {"name": "a/b:c", "pbrMetallicRoughness": base},
        {"pbrMetallicRoughness": base},
        {"name": "untextured"}
    ]);
    document["extensions"] = json!({"KHR_materials_variants": {"variants": [{"name": "red"}, {"name": "blue"}]}});
    document["meshes"][0]["primitives"][0]["extensions"] =
        json!({"KHR_materials_variants": {"mappings": [{"material": 1, "variants": [1, 0]}, {"material": 0, "variants": [1]}]}});
    let asset = load(dir.path(), &document).unwrap();
    let names: Vec<&str> = asset.materials.iter().map(|m| m.name.as_str()).collect();
    // Material 1 is mapped by red (variant 0) and blue: the first variant names it.
    assert_eq!(names, ["blue", "red", "shoe", "a_b_c", "asset"]);
    assert_eq!(asset.variants.iter().map(|v| v.name.as_str()).collect::<Vec<_>>(), ["red", "blue"]);
    assert_eq!(asset.variants[0].mesh_materials, [(0, 1)]);
    assert_eq!(asset.variants[1].mesh_materials, [(0, 1), (0, 0)]);
    assert!(asset.report.skipped.iter().any(|s| s.reason.contains("untextured")), "{:?}", asset.report.skipped);

    // Without variants, equal names get `_2`, `_3` in document order.
    document.as_object_mut().unwrap().remove("extensions");
    document["meshes"][0]["primitives"][0].as_object_mut().unwrap().remove("extensions");
    let names: Vec<String> = load(dir.path(), &document).unwrap().materials.into_iter().map(|m| m.name).collect();
    assert_eq!(names, ["shoe", "shoe_2", "shoe_3", "a_b_c", "asset"]);
}

#[test]
fn glb_buffer_view_images_and_data_uris_load() {
    let dir = tempfile::tempdir().unwrap();
    let (png, raw) = image_bytes(7, 3);
    let mut bin = quad_bytes();
    let image_offset = bin.len();
    bin.extend(&png);
    let mut document = folder_fixture(dir.path());
    document["buffers"] = json!([{"byteLength": bin.len()}]);
    document["bufferViews"].as_array_mut().unwrap().push(json!({"buffer": 0, "byteOffset": image_offset, "byteLength": png.len()}));
    document["images"] = json!([{"bufferView": 4, "mimeType": "image/png"}]);
    document["textures"] = json!([{"source": 0}]);
    let path = dir.path().join("packed.glb");
    std::fs::write(&path, glb(&document, &bin)).unwrap();
    let asset = load_gltf(&path).unwrap();
    let expected: Vec<f32> = raw.iter().map(|&v| f32::from(v) / 255.0).collect();
    assert_eq!(asset.materials[0].textures[0].texels, expected);
    assert_eq!(asset.image_sources, [PathBuf::from(format!("{}#image0", path.display()))]);
    assert_eq!(asset.meshes.len(), 1);

    // The same with the buffer and the image as data URIs in a .gltf.
    document["buffers"] = json!([{"uri": format!("data:application/octet-stream;base64,{}", base64(&quad_bytes())), "byteLength": 140}]);
    document["images"] = json!([{"uri": format!("data:image/png;base64,{}", base64(&png))}]);
    let asset = load(dir.path(), &document).unwrap();
    assert_eq!(asset.materials[0].textures[0].texels, expected);
    assert_eq!(asset.meshes[0].positions.len(), 4);
}

#[test]
fn load_library_takes_gltf_assets_beside_folders() {
    let dir = tempfile::tempdir().unwrap();
    let document = folder_fixture(dir.path());
    let path = write_json(dir.path(), "asset.GLTF", &document);
    let folder = dir.path().join("wall");
    std::fs::create_dir(&folder).unwrap();
    write_png(&folder.join("wall_basecolor.png"), 3, 3);
    let (set, report) = crate::set::load_library(&[folder, path.clone()]).unwrap();
    let names: Vec<&str> = set.materials.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["wall", "painted"]);
    assert_eq!(set.materials[1].source_dir, path);
    assert_eq!(set.materials[0].constants, crate::set::MaterialConstants::default());
    assert_eq!(report.maps.len(), 2);
    let err = crate::set::load_library(&[path.clone(), path]).unwrap_err();
    assert!(matches!(err, IngestError::DuplicateMaterial { ref name, .. } if name == "painted"), "{err}");
}

#[test]
fn a_texture_transform_scales_then_rotates_then_offsets() {
    let close = |a: [f32; 2], b: [f32; 2]| (a[0] - b[0]).abs() < 1e-6 && (a[1] - b[1]).abs() < 1e-6;
    assert!(close(UvTransform::default().apply([0.3, 0.7]), [0.3, 0.7]));
    // The extension's example: offsets (0.5, 0) move (0, 0) to (0.5, 0); scale 1.5 then.
    let t = UvTransform { offset: [0.5, 0.0], rotation_rad: 0.0, scale: [1.5, 1.0] };
    assert!(close(t.apply([0.0, 0.0]), [0.5, 0.0]) && close(t.apply([1.0, 1.0]), [2.0, 1.0]));
    // A quarter turn takes (1, 0) to (cos, sin) = (0, 1) and (0, 1) to (-1, 0): the matrix's
    // columns are (cos, sin) and (-sin, cos).
    let quarter = UvTransform { rotation_rad: std::f32::consts::FRAC_PI_2, ..UvTransform::default() };
    assert!(close(quarter.apply([1.0, 0.0]), [0.0, 1.0]) && close(quarter.apply([0.0, 1.0]), [-1.0, 0.0]));
    // Scale is applied before the rotation, the offset after it.
    let all = UvTransform { offset: [0.25, 0.5], rotation_rad: std::f32::consts::FRAC_PI_2, scale: [2.0, 3.0] };
    assert!(close(all.apply([1.0, 1.0]), [0.25 - 3.0, 0.5 + 2.0]));
}
