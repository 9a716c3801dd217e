//! Meshes: node transforms, winding, normals, tangents, UV sets, sparse accessors.

use super::*;

/// Each triangle's geometric normal (from its winding) agrees with its vertices' normals.
fn front_faces_agree(mesh: &crate::set::GltfMesh) -> bool {
    mesh.indices.chunks_exact(3).all(|t| {
        let [a, b, c] = [t[0], t[1], t[2]].map(|i| mesh.positions[i as usize]);
        let (u, v) = ([b[0] - a[0], b[1] - a[1], b[2] - a[2]], [c[0] - a[0], c[1] - a[1], c[2] - a[2]]);
        let face = [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]];
        let n = mesh.normals[t[0] as usize];
        face[0] * n[0] + face[1] * n[1] + face[2] * n[2] > 0.0
    })
}

fn close(a: &[f32], b: &[f32]) -> bool {
    a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-5)
}

#[test]
fn node_transforms_are_applied_and_tangents_computed() {
    let dir = tempfile::tempdir().unwrap();
    let mut document = folder_fixture(dir.path());
    document["nodes"] = json!([
        {"children": [1], "translation": [1.0, 2.0, 3.0]},
        {"mesh": 0, "name": "inner", "scale": [2.0, 2.0, 2.0], "rotation": [0.0, 0.0, 0.0, 1.0]}
    ]);
    let asset = load(dir.path(), &document).unwrap();
    let [mesh] = &asset.meshes[..] else { panic!("{} meshes", asset.meshes.len()) };
    assert_eq!((mesh.name.as_str(), mesh.material), ("inner", 0));
    let mut positions = mesh.positions.clone();
    positions.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let mut expected: Vec<[f32; 3]> = QUAD_POSITIONS.iter().map(|p| [p[0] * 2.0 + 1.0, p[1] * 2.0 + 2.0, 3.0]).collect();
    expected.sort_by(|a, b| a.partial_cmp(b).unwrap());
    assert_eq!(positions, expected);
    assert_eq!(mesh.indices.len(), 6);
    assert!(mesh.normals.iter().all(|n| close(n, &[0.0, 0.0, 1.0])));
    assert!(front_faces_agree(mesh));
    // MikkTSpace: the tangent follows +u (+x here); UV v runs down the image (glTF), against +y,
    // so the bitangent sign is -1 (bitangent = cross(normal, tangent) · w).
    assert_eq!(mesh.tangents.len(), mesh.positions.len());
    assert!(mesh.tangents.iter().all(|t| close(t, &[1.0, 0.0, 0.0, -1.0])), "{:?}", mesh.tangents);
}

#[test]
fn a_mirroring_transform_keeps_front_faces_counter_clockwise() {
    let dir = tempfile::tempdir().unwrap();
    let mut document = folder_fixture(dir.path());
    document["nodes"][0]["scale"] = json!([-1.0, 1.0, 1.0]);
    let asset = load(dir.path(), &document).unwrap();
    let mesh = &asset.meshes[0];
    assert!(mesh.positions.iter().all(|p| p[0] <= 0.0));
    assert!(mesh.normals.iter().all(|n| close(n, &[0.0, 0.0, 1.0])));
    assert!(front_faces_agree(mesh), "{:?}", mesh.indices);
}

#[test]
fn file_tangents_are_kept_and_missing_normals_become_flat() {
    let dir = tempfile::tempdir().unwrap();
    let mut document = folder_fixture(dir.path());
    let mut bytes = quad_bytes();
    for _ in 0..4 {
        bytes.extend([0.0f32, 1.0, 0.0, 1.0].iter().flat_map(|v| v.to_le_bytes()));
    }
    std::fs::write(dir.path().join("quad.bin"), &bytes).unwrap();
    document["buffers"][0]["byteLength"] = json!(bytes.len());
    document["bufferViews"].as_array_mut().unwrap().push(json!({"buffer": 0, "byteOffset": 140, "byteLength": 64}));
    document["accessors"].as_array_mut().unwrap().push(json!({"bufferView": 4, "componentType": 5126, "count": 4, "type": "VEC4"}));
    document["meshes"][0]["primitives"][0]["attributes"]["TANGENT"] = json!(4);
    let mesh = load(dir.path(), &document).unwrap().meshes.remove(0);
    assert_eq!(mesh.tangents, vec![[0.0, 1.0, 0.0, 1.0]; 4]);
    assert_eq!(mesh.positions.len(), 4);

    // Without NORMAL: flat normals on unwelded triangles, tangents recomputed.
    document["meshes"][0]["primitives"][0]["attributes"].as_object_mut().unwrap().remove("NORMAL");
    let mesh = load(dir.path(), &document).unwrap().meshes.remove(0);
    assert_eq!((mesh.positions.len(), mesh.indices.len()), (6, 6));
    assert!(mesh.normals.iter().all(|n| close(n, &[0.0, 0.0, 1.0])));
    assert!(mesh.tangents.iter().all(|t| close(t, &[1.0, 0.0, 0.0, -1.0])), "{:?}", mesh.tangents);
}

#[test]
fn uvs_follow_the_materials_set_and_missing_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut document = folder_fixture(dir.path());
    document["materials"][0]["pbrMetallicRoughness"]["baseColorTexture"]["texCoord"] = json!(1);
    let fault = fault_of(load(dir.path(), &document));
    assert!(matches!(fault, GltfFault::Primitive { ref reason, .. } if reason.contains("TEXCOORD_1")), "{fault}");
    document["meshes"][0]["primitives"][0]["attributes"]["TEXCOORD_1"] = json!(2);
    let asset = load(dir.path(), &document).unwrap();
    assert_eq!(asset.materials[0].constants.uv_set, 1);
    assert_eq!(asset.meshes[0].uvs.len(), 4);
}

#[test]
fn primitives_without_a_kept_material_are_left_out_and_named_per_primitive() {
    let dir = tempfile::tempdir().unwrap();
    let mut document = folder_fixture(dir.path());
    let primitive = document["meshes"][0]["primitives"][0].clone();
    let mut bare = primitive.clone();
    bare.as_object_mut().unwrap().remove("material");
    document["meshes"][0]["primitives"] = json!([primitive, bare, primitive]);
    let asset = load(dir.path(), &document).unwrap();
    let names: Vec<&str> = asset.meshes.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["quad.0", "quad.2"]);
    assert!(asset.report.skipped.iter().any(|s| s.reason.contains("primitive 1")), "{:?}", asset.report.skipped);
}

#[test]
fn sparse_accessors_are_applied() {
    let dir = tempfile::tempdir().unwrap();
    let mut document = folder_fixture(dir.path());
    let mut bytes = quad_bytes();
    bytes.extend([2u8, 0, 0, 0]);
    bytes.extend([5.0f32, 5.0, 5.0].iter().flat_map(|v| v.to_le_bytes()));
    std::fs::write(dir.path().join("quad.bin"), &bytes).unwrap();
    document["buffers"][0]["byteLength"] = json!(bytes.len());
    let views = document["bufferViews"].as_array_mut().unwrap();
    views.push(json!({"buffer": 0, "byteOffset": 140, "byteLength": 1}));
    views.push(json!({"buffer": 0, "byteOffset": 144, "byteLength": 12}));
    document["accessors"][0]["sparse"] =
        json!({"count": 1, "indices": {"bufferView": 4, "componentType": 5121}, "values": {"bufferView": 5}});
    let mesh = load(dir.path(), &document).unwrap().meshes.remove(0);
    assert!(mesh.positions.contains(&[5.0, 5.0, 5.0]), "{:?}", mesh.positions);
    assert!(!mesh.positions.contains(&[1.0, 1.0, 0.0]));

    // A sparse index beyond the accessor's count is refused.
    let mut bad = bytes.clone();
    bad[140] = 9;
    std::fs::write(dir.path().join("quad.bin"), &bad).unwrap();
    let fault = fault_of(load(dir.path(), &document));
    assert!(matches!(fault, GltfFault::Accessor { accessor: 0, ref reason } if reason.contains("sparse index 9")), "{fault}");
}
