//! Unit tests of glTF import on small assets written into a temporary folder: a one-quad mesh
//! (4 vertices, 2 triangles) in a `.bin`, a data URI or a `.glb`, and 8×8 PNGs.
// Tests: a broken fixture fails loudly; the floats compared exactly are copied, never computed.
#![allow(clippy::unwrap_used, clippy::float_cmp)]

mod faults;
mod materials;
mod meshes;

use super::{GltfAsset, GltfFault, load_gltf};
use crate::set::ingest::IngestError;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
pub(super) use texset_testkit::gltf::{QUAD_POSITIONS, base64, glb, image_bytes, quad_bytes, quad_document, write_json, write_png};

/// A folder with `quad.bin` and `base.png` (RGB), `normal.png`, `orm.png`, `rough.png`,
/// `ao.png` and `emissive.png` (seeds 0..6), and the quad document with material 0 binding
/// `base.png` as its base colour (texture i is image i, images in that order).
pub(super) fn folder_fixture(dir: &Path) -> Value {
    std::fs::write(dir.join("quad.bin"), quad_bytes()).unwrap();
    let names = ["base.png", "normal.png", "orm.png", "rough.png", "ao.png", "emissive.png"];
    for (seed, name) in names.iter().enumerate() {
        write_png(&dir.join(name), seed as u8 * 20, 3);
    }
    let images: Vec<Value> = names.iter().map(|n| json!({ "uri": n })).collect();
    let textures: Vec<Value> = (0..names.len()).map(|i| json!({ "source": i })).collect();
    quad_document(
        &json!({"uri": "quad.bin", "byteLength": 140}),
        &json!([{"name": "painted", "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}]),
        &Value::Array(textures),
        &Value::Array(images),
    )
}

/// The fault of the [`folder_fixture`] asset once `edit` has changed its document (panics when
/// it loads).
pub(super) fn fault_after_edit(edit: impl FnOnce(&mut Value)) -> GltfFault {
    let dir = tempfile::tempdir().unwrap();
    let mut document = folder_fixture(dir.path());
    edit(&mut document);
    fault_of(load(dir.path(), &document))
}

/// Loads `document` written as `asset.gltf` in `dir`.
pub(super) fn load(dir: &Path, document: &Value) -> Result<GltfAsset, IngestError> {
    load_gltf(&write_json(dir, "asset.gltf", document))
}

/// The fault of a refused asset (panics on success or another error).
pub(super) fn fault_of(result: Result<GltfAsset, IngestError>) -> GltfFault {
    match result {
        Err(IngestError::Gltf { fault, .. } | IngestError::GltfMaterial { fault, .. }) => fault,
        Err(other) => panic!("expected a glTF fault, got {other}"),
        Ok(_) => panic!("expected a glTF fault, the asset loaded"),
    }
}
