//! glTF import on the four real assets in `../shared/gltf` (MANIFEST.md there says what each
//! tests): materials, maps, sizes and meshes, as `load_gltf` and `load_library` read them.
// Floats compared exactly are copied from the file or set to ±1, never computed.
#![allow(clippy::unwrap_used, clippy::float_cmp, missing_docs)]

use std::path::PathBuf;
use texset_core::set::{GltfAsset, MapKind, Material, load_gltf, load_library};

/// `../shared/gltf/<folder>/<file>`, or `None` (the test is counted as skipped) when absent.
fn shared_asset(test: &str, folder: &str, file: &str) -> Option<PathBuf> {
    let path = texset_testkit::repo_root().parent()?.join("shared").join("gltf").join(folder).join(file);
    if path.is_file() {
        Some(path)
    } else {
        texset_testkit::skip(test, &format!("{} is absent", path.display()));
        None
    }
}

fn kinds(material: &Material) -> Vec<MapKind> {
    material.textures.iter().map(|t| t.info.kind).collect()
}

/// Every map's texels in range, sized as stated.
fn assert_maps_sound(asset: &GltfAsset) {
    for material in &asset.materials {
        for t in &material.textures {
            assert_eq!(t.texels.len(), t.texel_count() * t.info.channels as usize, "{}/{}", material.name, t.info.kind);
            assert!(t.texels.iter().all(|v| (0.0..=1.0).contains(v)), "{}/{}", material.name, t.info.kind);
        }
    }
    for mesh in &asset.meshes {
        let n = mesh.positions.len();
        assert!(n > 0 && mesh.indices.len() % 3 == 0, "{}", mesh.name);
        assert_eq!((mesh.normals.len(), mesh.tangents.len(), mesh.uvs.len()), (n, n, n), "{}", mesh.name);
        assert!(mesh.indices.iter().all(|&i| (i as usize) < n), "{}", mesh.name);
        assert!(mesh.material < asset.materials.len());
        assert!(mesh.tangents.iter().all(|t| t[3].abs() == 1.0 && (t[0] * t[0] + t[1] * t[1] + t[2] * t[2] - 1.0).abs() < 1e-3));
    }
}

#[test]
fn shoe_variants_become_three_materials_named_by_variant() {
    let Some(path) =
        shared_asset("shoe_variants_become_three_materials_named_by_variant", "MaterialsVariantsShoe", "MaterialsVariantsShoe.gltf")
    else {
        return;
    };
    let asset = load_gltf(&path).unwrap();
    assert_maps_sound(&asset);
    // All three glTF materials are called `phong1SG`: each is named by the variant mapping it.
    let names: Vec<&str> = asset.materials.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["midnight", "beach", "street"]);
    assert_eq!(asset.variants.iter().map(|v| v.name.as_str()).collect::<Vec<_>>(), ["midnight", "beach", "street"]);
    for material in &asset.materials {
        // The packed map is bound as occlusion and as metallic-roughness: one ORM map.
        assert_eq!(kinds(material), [MapKind::Basecolor, MapKind::Normal, MapKind::Orm], "{}", material.name);
        for t in &material.textures {
            assert_eq!((t.info.width, t.info.height, t.info.channels), (1024, 1024, 3), "{}/{}", material.name, t.info.kind);
        }
    }
    // The normal and ORM maps are the same source files in every material, decoded once:
    // three colourways, one normal map, one packed map.
    for kind in [MapKind::Normal, MapKind::Orm] {
        let sources: Vec<_> =
            asset.materials.iter().map(|m| &m.textures.iter().find(|t| t.info.kind == kind).unwrap().source_path).collect();
        assert!(sources.windows(2).all(|w| w[0] == w[1]), "{kind}: {sources:?}");
    }
    assert_eq!(asset.image_sources.len(), 5);
    // One primitive, shown with the midnight colourway by default; each variant maps it.
    let [mesh] = &asset.meshes[..] else { panic!("{} meshes", asset.meshes.len()) };
    assert_eq!((mesh.name.as_str(), mesh.material), ("Shoe", 0));
    let mapped: Vec<Vec<(usize, usize)>> = asset.variants.iter().map(|v| v.mesh_materials.clone()).collect();
    assert_eq!(mapped, [vec![(0, 0)], vec![(0, 1)], vec![(0, 2)]]);
}

#[test]
fn cabinet_arm_map_bound_as_metallic_roughness_alone_gives_roughness_and_metallic() {
    let test = "cabinet_arm_map_bound_as_metallic_roughness_alone_gives_roughness_and_metallic";
    let Some(path) = shared_asset(test, "painted_wooden_cabinet", "painted_wooden_cabinet_1k.gltf") else { return };
    let asset = load_gltf(&path).unwrap();
    assert_maps_sound(&asset);
    let [material] = &asset.materials[..] else { panic!("{} materials", asset.materials.len()) };
    assert_eq!(material.name, "painted_wooden_cabinet");
    // The `arm` map is bound only as metallicRoughnessTexture (no occlusionTexture) with the
    // default metallicFactor 1: glTF reads its G as roughness and its B as metallic, and never its
    // R (AO), so it becomes a roughness map and a metallic map, not an ORM map and no AO.
    assert_eq!(kinds(material), [MapKind::Basecolor, MapKind::Normal, MapKind::Roughness, MapKind::Metallic]);
    let arm = |kind| material.textures.iter().find(|t| t.info.kind == kind).unwrap();
    assert_eq!(arm(MapKind::Roughness).source_path, arm(MapKind::Metallic).source_path);
    assert!(arm(MapKind::Roughness).source_path.ends_with("painted_wooden_cabinet_arm_1k.jpg"));
    assert_eq!((arm(MapKind::Roughness).info.channels, arm(MapKind::Basecolor).info.channels), (1, 3));
    assert!(material.constants.double_sided);
    assert_eq!(asset.meshes.len(), 5);
    assert_eq!(asset.image_sources.len(), 3);
}

#[test]
fn tea_set_is_one_material_on_ten_meshes() {
    let Some(path) = shared_asset("tea_set_is_one_material_on_ten_meshes", "tea_set_01", "tea_set_01_1k.gltf") else { return };
    let asset = load_gltf(&path).unwrap();
    assert_maps_sound(&asset);
    let [material] = &asset.materials[..] else { panic!("{} materials", asset.materials.len()) };
    assert_eq!(material.name, "tea_set_01");
    assert_eq!(kinds(material), [MapKind::Basecolor, MapKind::Normal, MapKind::Roughness, MapKind::Metallic]);
    assert!(material.textures.iter().all(|t| (t.info.width, t.info.height) == (1024, 1024)));
    assert_eq!(asset.meshes.len(), 10);
    assert!(asset.meshes.iter().all(|m| m.material == 0));
    assert!(asset.meshes.iter().any(|m| m.name == "tea_set_01_teapot_01"));
}

#[test]
fn sofa_materials_share_textures_and_bind_roughness_only() {
    let Some(path) = shared_asset("sofa_materials_share_textures_and_bind_roughness_only", "sofa_03", "sofa_03_1k.gltf") else { return };
    let asset = load_gltf(&path).unwrap();
    assert_maps_sound(&asset);
    let names: Vec<&str> = asset.materials.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["sofa_03", "sofa_03_fringe"]);
    for material in &asset.materials {
        // A roughness map bound as metallicRoughnessTexture with metallicFactor 0: roughness only.
        assert_eq!(kinds(material), [MapKind::Basecolor, MapKind::Normal, MapKind::Roughness], "{}", material.name);
        assert_eq!(material.constants.metallic_factor, 0.0);
    }
    assert_eq!(asset.materials[1].constants.alpha_mode, texset_core::set::AlphaMode::Blend);
    // The diffuse JPEG is listed twice (image 1 and image 3): one image, decoded once.
    assert_eq!(asset.image_sources.len(), 3);
    for (a, b) in asset.materials[0].textures.iter().zip(&asset.materials[1].textures) {
        assert_eq!((&a.source_path, &a.texels), (&b.source_path, &b.texels), "{}", a.info.kind);
    }
    assert_eq!(asset.meshes.iter().map(|m| m.material).collect::<Vec<_>>(), [0, 1]);
    assert!(asset.report.skipped.iter().filter(|s| s.reason.contains("metallicFactor is 0")).count() == 2);
}

#[test]
fn load_library_reads_gltf_assets_and_folders_together() {
    let test = "load_library_reads_gltf_assets_and_folders_together";
    let (Some(sofa), Some(tea)) =
        (shared_asset(test, "sofa_03", "sofa_03_1k.gltf"), shared_asset(test, "tea_set_01", "tea_set_01_1k.gltf"))
    else {
        return;
    };
    let mut paths = vec![sofa, tea];
    paths.extend(texset_testkit::sample_dirs().into_iter().take(1));
    let (set, report) = load_library(&paths).unwrap();
    assert_eq!(set.materials.len(), 4);
    assert_eq!(set.materials[2].name, "tea_set_01");
    assert_eq!(report.maps.len(), 3 + 3 + 4 + set.materials[3].textures.len());
}
