//! Bad assets: each refused whole with an error naming the file and the fault.

use super::*;

#[test]
fn a_missing_buffer_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut document = folder_fixture(dir.path());
    document["buffers"][0]["uri"] = json!("gone.bin");
    let err = load(dir.path(), &document).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("asset.gltf") && message.contains("gone.bin"), "{message}");
    assert!(matches!(err, IngestError::Gltf { fault: GltfFault::MissingFile { ref uri, .. }, .. } if uri == "gone.bin"), "{err}");
}

#[test]
fn a_missing_image_file_is_named() {
    let fault = fault_after_edit(|document| document["images"][0]["uri"] = json!("textures/missing.png"));
    assert!(matches!(fault, GltfFault::MissingFile { ref uri, .. } if uri == "textures/missing.png"), "{fault}");
}

#[test]
fn uris_that_leave_the_folder_are_refused_and_nothing_outside_is_read() {
    let outer = tempfile::tempdir().unwrap();
    let dir = outer.path().join("asset");
    std::fs::create_dir(&dir).unwrap();
    let mut document = folder_fixture(&dir);
    // A readable image and buffer outside the folder: refused, not read.
    write_png(&outer.path().join("outside.png"), 9, 3);
    std::fs::write(outer.path().join("outside.bin"), quad_bytes()).unwrap();
    let outside_png = outer.path().join("outside.png").display().to_string();
    let cases = [
        ("images", "../outside.png".to_owned()),
        ("images", "textures/../../outside.png".to_owned()),
        ("images", "..%2Foutside.png".to_owned()),
        ("images", outside_png.clone()),
        ("images", format!("file://{outside_png}")),
        ("buffers", "../outside.bin".to_owned()),
    ];
    for (array, uri) in cases {
        let mut bad = document.clone();
        bad[array][0]["uri"] = json!(uri);
        let fault = fault_of(load(&dir, &bad));
        assert!(matches!(fault, GltfFault::OutsideFolder { uri: ref named } if *named == uri), "{uri}: {fault}");
    }
    // A link inside the folder that resolves outside it.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(outer.path().join("outside.png"), dir.join("link.png")).unwrap();
        document["images"][0]["uri"] = json!("link.png");
        let fault = fault_of(load(&dir, &document));
        assert!(matches!(fault, GltfFault::OutsideFolder { .. }), "{fault}");
    }
    // `..` that stays inside the folder is fine.
    std::fs::create_dir(dir.join("textures")).unwrap();
    document["images"][0]["uri"] = json!("textures/../base.png");
    assert_eq!(load(&dir, &document).unwrap().materials.len(), 1);
}

#[test]
fn an_accessor_beyond_its_buffer_view_is_refused() {
    let fault = fault_after_edit(|document| document["accessors"][2]["count"] = json!(5));
    assert!(matches!(fault, GltfFault::AccessorOutOfRange { accessor: 2, view: 2, view_bytes: 32, .. }), "{fault}");

    let fault = fault_after_edit(|document| document["accessors"][3]["byteOffset"] = json!(4));
    assert!(matches!(fault, GltfFault::AccessorOutOfRange { accessor: 3, .. }), "{fault}");

    let fault = fault_after_edit(|document| document["bufferViews"][3]["byteLength"] = json!(16));
    assert!(matches!(fault, GltfFault::ViewOutOfRange { view: 3, end_bytes: 144, buffer_bytes: 140, .. }), "{fault}");

    let fault = fault_after_edit(|document| document["meshes"][0]["primitives"][0]["attributes"]["POSITION"] = json!(9));
    assert!(matches!(fault, GltfFault::Invalid(_)), "{fault}");
}

#[test]
fn an_index_beyond_the_vertices_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let document = folder_fixture(dir.path());
    let mut bytes = quad_bytes();
    bytes[130..132].copy_from_slice(&7u16.to_le_bytes());
    std::fs::write(dir.path().join("quad.bin"), bytes).unwrap();
    let fault = fault_of(load(dir.path(), &document));
    assert!(matches!(fault, GltfFault::Primitive { ref reason, .. } if reason.contains("index 7")), "{fault}");
}

#[test]
fn an_unknown_required_extension_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut document = folder_fixture(dir.path());
    document["extensionsRequired"] = json!(["KHR_texture_transform", "KHR_draco_mesh_compression"]);
    document["extensionsUsed"] = json!(["KHR_texture_transform", "KHR_draco_mesh_compression"]);
    let fault = fault_of(load(dir.path(), &document));
    assert!(matches!(fault, GltfFault::RequiredExtension { ref name } if name == "KHR_draco_mesh_compression"), "{fault}");
    // The extensions texset reads may be required.
    document["extensionsRequired"] = json!(["KHR_texture_transform", "KHR_materials_variants"]);
    document["extensionsUsed"] = json!(["KHR_texture_transform", "KHR_materials_variants"]);
    assert!(load(dir.path(), &document).is_ok());
}

#[test]
fn a_buffer_claiming_more_than_its_file_is_refused_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    let mut document = folder_fixture(dir.path());
    // A terabyte: allocating it would fail the test; it must be refused from the file's size.
    document["buffers"][0]["byteLength"] = json!(1u64 << 40);
    let fault = fault_of(load(dir.path(), &document));
    assert!(
        matches!(fault, GltfFault::BufferTooShort { buffer: 0, claimed_bytes, available_bytes: 140 } if claimed_bytes == 1 << 40),
        "{fault}"
    );

    // The same for a data URI and for a GLB's binary chunk.
    document["buffers"][0] = json!({"uri": format!("data:application/octet-stream;base64,{}", base64(&quad_bytes())), "byteLength": 141});
    let fault = fault_of(load(dir.path(), &document));
    assert!(matches!(fault, GltfFault::BufferTooShort { claimed_bytes: 141, available_bytes: 140, .. }), "{fault}");
    document["buffers"][0] = json!({"byteLength": 1u64 << 40});
    std::fs::write(dir.path().join("asset.glb"), glb(&document, &quad_bytes())).unwrap();
    let fault = fault_of(load_gltf(&dir.path().join("asset.glb")));
    assert!(matches!(fault, GltfFault::BufferTooShort { available_bytes: 140, .. }), "{fault}");
}

#[test]
fn a_malformed_glb_container_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut document = folder_fixture(dir.path());
    document["buffers"][0] = json!({"byteLength": 140});
    let good = glb(&document, &quad_bytes());
    let path = dir.path().join("asset.glb");
    let cases: [(&str, Vec<u8>); 4] = [
        ("header claims more than the file", {
            let mut bytes = good.clone();
            bytes[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
            bytes
        }),
        ("header claims less than a header", {
            let mut bytes = good.clone();
            bytes[8..12].copy_from_slice(&3u32.to_le_bytes());
            bytes
        }),
        ("JSON chunk overruns", {
            let mut bytes = good.clone();
            bytes[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
            bytes
        }),
        ("truncated", good[..10].to_vec()),
    ];
    for (what, bytes) in cases {
        std::fs::write(&path, bytes).unwrap();
        let fault = fault_of(load_gltf(&path));
        assert!(matches!(fault, GltfFault::Container(_)), "{what}: {fault}");
    }
    // A GLB buffer without a binary chunk.
    let mut json_only = good[..12].to_vec();
    let json_bytes = serde_json::to_vec(&document).unwrap();
    json_only.extend((json_bytes.len() as u32).to_le_bytes());
    json_only.extend(b"JSON");
    json_only.extend(&json_bytes);
    let length = json_only.len() as u32;
    json_only[8..12].copy_from_slice(&length.to_le_bytes());
    std::fs::write(&path, json_only).unwrap();
    assert!(matches!(fault_of(load_gltf(&path)), GltfFault::MissingBinChunk { buffer: 0 }));
}

#[test]
fn other_primitive_modes_are_refused_by_name() {
    let fault = fault_after_edit(|document| document["meshes"][0]["primitives"][0]["mode"] = json!(1));
    assert!(matches!(fault, GltfFault::NotTriangles { ref mesh, primitive: 0, .. } if mesh == "quad_mesh"), "{fault}");
    assert!(fault.to_string().contains("Lines"), "{fault}");
}

#[test]
fn a_node_reached_twice_is_refused() {
    let fault = fault_after_edit(|document| document["nodes"] = json!([{"children": [1]}, {"mesh": 0, "children": [0]}]));
    assert!(matches!(fault, GltfFault::NodeGraph { node: 0 }), "{fault}");
}

#[test]
fn bad_data_uris_and_variant_mappings_are_refused() {
    let fault = fault_after_edit(|document| document["images"][0]["uri"] = json!("data:image/png;base64,iVBOR*w0KGgo="));
    assert!(matches!(fault, GltfFault::BadUri { .. }), "{fault}");
    // A data: URI without its comma, and one whose media type is not ASCII: errors, not panics.
    let fault = fault_after_edit(|document| document["images"][0]["uri"] = json!("data:image/png;base64"));
    assert!(matches!(fault, GltfFault::BadUri { ref reason, .. } if reason.contains("comma")), "{fault}");
    let dir = tempfile::tempdir().unwrap();
    let mut document = folder_fixture(dir.path());
    document["images"][0]["uri"] = json!("data:imagé/pñg;bäse64,iVBOR");
    let err = load(dir.path(), &document).unwrap_err();
    assert!(matches!(err, IngestError::Decode { ref path, .. } if path.to_string_lossy().contains("#image0")), "{err}");

    let fault = fault_after_edit(|document| {
        document["extensions"] = json!({"KHR_materials_variants": {"variants": [{"name": "a"}]}});
        document["meshes"][0]["primitives"][0]["extensions"] =
            json!({"KHR_materials_variants": {"mappings": [{"material": 0, "variants": [3]}]}});
    });
    assert!(matches!(fault, GltfFault::Variant(ref what) if what.contains("variant 3")), "{fault}");
}

#[test]
fn an_asset_without_a_textured_material_is_refused() {
    let fault = fault_after_edit(|document| {
        document["materials"] = json!([{"name": "plain", "pbrMetallicRoughness": {"baseColorFactor": [1.0, 0.0, 0.0, 1.0]}}]);
    });
    assert!(matches!(fault, GltfFault::NoTexturedMaterial), "{fault}");
}

#[test]
fn a_bad_image_is_named_by_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let document = folder_fixture(dir.path());
    std::fs::write(dir.path().join("base.png"), b"not a png").unwrap();
    let err = load(dir.path(), &document).unwrap_err();
    assert!(matches!(err, IngestError::Decode { ref path, .. } if path.ends_with("base.png")), "{err}");
}
