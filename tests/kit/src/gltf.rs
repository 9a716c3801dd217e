//! Small glTF 2.0 assets for tests, written into a temporary folder: a one-quad mesh (4
//! vertices, 2 triangles) whose buffer sits in a `.bin`, a `data:` URI or a `.glb`, and 8×8 PNGs.

#![allow(clippy::must_use_candidate)] // Test fixtures: a caller may write a file and not want its samples.
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// The quad's vertices: a unit square in z = 0 facing +z, UVs along +x and +y.
pub const QUAD_POSITIONS: [[f32; 3]; 4] = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0]];

/// The quad's buffer: positions (48 bytes), normals (48), UVs (32), u16 indices (12) = 140.
pub fn quad_bytes() -> Vec<u8> {
    let mut bytes = Vec::new();
    for p in QUAD_POSITIONS {
        bytes.extend(p.iter().flat_map(|v| v.to_le_bytes()));
    }
    for _ in 0..4 {
        bytes.extend([0.0f32, 0.0, 1.0].iter().flat_map(|v| v.to_le_bytes()));
    }
    for p in QUAD_POSITIONS {
        bytes.extend([p[0], 1.0 - p[1]].iter().flat_map(|v| v.to_le_bytes()));
    }
    bytes.extend([0u16, 1, 2, 0, 2, 3].iter().flat_map(|v| v.to_le_bytes()));
    bytes
}

/// A document drawing the quad with material 0, its buffer `buffer` (the JSON object), with
/// `materials`, `textures` and `images` as given.
pub fn quad_document(buffer: &Value, materials: &Value, textures: &Value, images: &Value) -> Value {
    json!({
        "asset": {"version": "2.0"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0, "name": "quad"}],
        "meshes": [{"name": "quad_mesh", "primitives": [{"attributes": {"POSITION": 0, "NORMAL": 1, "TEXCOORD_0": 2}, "indices": 3, "material": 0}]}],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": 4, "type": "VEC3", "min": [0.0, 0.0, 0.0], "max": [1.0, 1.0, 0.0]},
            {"bufferView": 1, "componentType": 5126, "count": 4, "type": "VEC3"},
            {"bufferView": 2, "componentType": 5126, "count": 4, "type": "VEC2"},
            {"bufferView": 3, "componentType": 5123, "count": 6, "type": "SCALAR"}
        ],
        "bufferViews": [
            {"buffer": 0, "byteOffset": 0, "byteLength": 48},
            {"buffer": 0, "byteOffset": 48, "byteLength": 48},
            {"buffer": 0, "byteOffset": 96, "byteLength": 32},
            {"buffer": 0, "byteOffset": 128, "byteLength": 12}
        ],
        "buffers": [buffer],
        "materials": materials,
        "textures": textures,
        "images": images
    })
}

/// An 8×8 image with `channels` channels whose every channel varies and differs from the others
/// (value `(x * 31 + y * 7 + c * 50 + seed) % 256`).
pub fn image_bytes(seed: u8, channels: u8) -> (Vec<u8>, Vec<u8>) {
    let data: Vec<u8> = (0..64u32)
        .flat_map(|i| (0..u32::from(channels)).map(move |c| ((i % 8) * 31 + (i / 8) * 7 + c * 50 + u32::from(seed)) as u8))
        .collect();
    let color = match channels {
        1 => image::ExtendedColorType::L8,
        3 => image::ExtendedColorType::Rgb8,
        _ => image::ExtendedColorType::Rgba8,
    };
    let mut png = Vec::new();
    image::ImageEncoder::write_image(image::codecs::png::PngEncoder::new(&mut png), &data, 8, 8, color).unwrap();
    (png, data)
}

/// Writes [`image_bytes`] as a PNG at `path`, returning the raw samples.
pub fn write_png(path: &Path, seed: u8, channels: u8) -> Vec<u8> {
    let (png, data) = image_bytes(seed, channels);
    std::fs::write(path, png).unwrap();
    data
}

/// Writes `document` as `name` in `dir`.
pub fn write_json(dir: &Path, name: &str, document: &Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec_pretty(document).unwrap()).unwrap();
    path
}

/// A GLB of `json` with `bin` as its binary chunk (padded as the format asks).
pub fn glb(json: &Value, bin: &[u8]) -> Vec<u8> {
    let mut json_bytes = serde_json::to_vec(json).unwrap();
    while !json_bytes.len().is_multiple_of(4) {
        json_bytes.push(b' ');
    }
    let mut bin = bin.to_vec();
    while !bin.len().is_multiple_of(4) {
        bin.push(0);
    }
    let length = 12 + 8 + json_bytes.len() + 8 + bin.len();
    let mut out = Vec::new();
    out.extend(b"glTF");
    out.extend(2u32.to_le_bytes());
    out.extend((length as u32).to_le_bytes());
    out.extend((json_bytes.len() as u32).to_le_bytes());
    out.extend(b"JSON");
    out.extend(json_bytes);
    out.extend((bin.len() as u32).to_le_bytes());
    out.extend(b"BIN\0");
    out.extend(bin);
    out
}

/// Standard base64 with padding, as glTF exporters write `data:` URIs.
pub fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
