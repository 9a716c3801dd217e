//! `texset render`: a glTF asset's mesh drawn headless as the studio's viewport draws it (on
//! lavapipe in CI), its material's `KHR_texture_transform` honoured, a material folder on a
//! shape, and bad requests refused by name.
#![allow(clippy::unwrap_used)]

use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use texset_testkit::gltf::{quad_bytes, quad_document, write_json};

fn texset(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_texset")).args(args).output().unwrap()
}

/// Whether `texset render` found no GPU (the test is then skipped, loudly, or fails where one is
/// required).
fn no_gpu(test: &str, output: &Output) -> bool {
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() && stderr.contains("no GPU adapter") {
        texset_testkit::skip_gpu(test, &stderr);
        return true;
    }
    false
}

/// A quad (the unit square facing +z) whose base colour is an image red on its left half and blue
/// on its right, with `transform` as the binding's `KHR_texture_transform` (none: `null`).
fn quad_asset(dir: &Path, transform: &serde_json::Value) -> PathBuf {
    std::fs::write(dir.join("quad.bin"), quad_bytes()).unwrap();
    let image = image::RgbImage::from_fn(16, 16, |x, _| if x < 8 { image::Rgb([220, 30, 30]) } else { image::Rgb([30, 30, 220]) });
    image.save(dir.join("halves.png")).unwrap();
    let mut base = json!({"index": 0});
    if !transform.is_null() {
        base["extensions"] = json!({"KHR_texture_transform": transform});
    }
    let mut document = quad_document(
        &json!({"uri": "quad.bin", "byteLength": 140}),
        &json!([{"name": "halves", "pbrMetallicRoughness": {"baseColorTexture": base, "metallicFactor": 0.0}, "doubleSided": true}]),
        &json!([{"source": 0}]),
        &json!([{"uri": "halves.png"}]),
    );
    if !transform.is_null() {
        document["extensionsUsed"] = json!(["KHR_texture_transform"]);
    }
    write_json(dir, "quad.gltf", &document)
}

fn pixel(image: &image::RgbaImage, x: u32, y: u32) -> [u8; 4] {
    image.get_pixel(x, y).0
}

#[test]
fn render_draws_the_assets_mesh_with_its_texture_transform() {
    let test = "render_draws_the_assets_mesh_with_its_texture_transform";
    let dir = tempfile::tempdir().unwrap();
    let plain_dir = dir.path().join("plain");
    let moved_dir = dir.path().join("moved");
    std::fs::create_dir_all(&plain_dir).unwrap();
    std::fs::create_dir_all(&moved_dir).unwrap();
    let plain = quad_asset(&plain_dir, &serde_json::Value::Null);
    // Scale 0.5 and offset 0.5 in u: the whole quad reads the image's blue right half.
    let moved = quad_asset(&moved_dir, &json!({"offset": [0.5, 0.0], "scale": [0.5, 1.0]}));
    let mut images = Vec::new();
    for asset in [&plain, &moved] {
        let out = asset.with_extension("png");
        // Face on (yaw 0, pitch 0), a grey background, 64² pixels.
        let args = ["render", asset.to_str().unwrap(), "--camera", "0,0", "--background", "grey", "--size", "64x64", "-o"];
        let output = texset(&[&args[..], &[out.to_str().unwrap()]].concat());
        if no_gpu(test, &output) {
            return;
        }
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        assert!(String::from_utf8_lossy(&output.stderr).contains("halves on the asset's meshes"), "{output:?}");
        images.push(image::open(&out).unwrap().into_rgba8());
    }
    let (plain, moved) = (&images[0], &images[1]);
    assert_eq!(plain.dimensions(), (64, 64));
    // The framed quad spans about x 13..51 of the image: its left quarter near x 22, its right
    // quarter near x 42; the corner is background.
    let [left, right, corner] = [pixel(plain, 22, 32), pixel(plain, 42, 32), pixel(plain, 1, 1)];
    println!("plain: left {left:?}, right {right:?}, corner {corner:?}; moved: left {:?}", pixel(moved, 22, 32));
    assert!(left[0] > left[2] + 40, "the quad's left is not the image's red half: {left:?}");
    assert!(right[2] > right[0] + 40, "the quad's right is not the image's blue half: {right:?}");
    assert!(corner[0].abs_diff(corner[2]) < 8, "the corner is not the grey background: {corner:?}");
    let moved_left = pixel(moved, 22, 32);
    assert!(moved_left[2] > moved_left[0] + 40, "KHR_texture_transform was not applied: {moved_left:?}");
    // The UV view, unlit: u across in red, v down in green (the quad's UVs run 0..1 across it).
    let out = dir.path().join("uv.png");
    let quad = plain_dir.join("quad.gltf");
    let args = ["render", quad.to_str().unwrap(), "--camera", "0,0", "--view", "uv", "--size", "64x64", "-o"];
    let output = texset(&[&args[..], &[out.to_str().unwrap()]].concat());
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let uv = image::open(&out).unwrap().into_rgba8();
    let [centre, left] = [pixel(&uv, 32, 32), pixel(&uv, 22, 32)];
    println!("uv view: centre {centre:?}, left {left:?}");
    assert!(centre[0].abs_diff(128) <= 8 && centre[1].abs_diff(128) <= 8 && centre[2] == 0, "{centre:?}");
    assert!(left[0].abs_diff(64) <= 12 && left[1].abs_diff(128) <= 8, "{left:?}");
}

#[test]
fn render_draws_a_folder_on_a_shape_and_refuses_bad_requests_by_name() {
    let test = "render_draws_a_folder_on_a_shape_and_refuses_bad_requests_by_name";
    let dir = tempfile::tempdir().unwrap();
    let folder = texset_testkit::repo_root().join("sample_textures").join("bricks");
    let out = dir.path().join("bricks.png");
    let output = texset(&["render", folder.to_str().unwrap(), "--shape", "cube", "--size", "48x32", "-o", out.to_str().unwrap()]);
    if no_gpu(test, &output) {
        return;
    }
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let originals = image::open(&out).unwrap().into_rgba8();
    assert_eq!(originals.dimensions(), (48, 32));
    // Decoded from a bundle of the folder, trained briefly: the same picture, roughly (the
    // decoder's error, not another material or a blank image).
    let bundle = dir.path().join("bricks.texset");
    let output = texset(&["compress", folder.to_str().unwrap(), "-o", bundle.to_str().unwrap(), "--steps", "40", "--no-ssim"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    // Timed as well (`--gpu-time`, lavapipe has timestamp queries): the frame and its passes.
    let decoded_png = dir.path().join("bricks_decoded.png");
    let args = ["render", folder.to_str().unwrap(), "--bundle", bundle.to_str().unwrap(), "--shape", "cube", "--size", "48x32", "-o"];
    let output = texset(&[&args[..], &[decoded_png.to_str().unwrap(), "--gpu-time", "3"]].concat());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success() && stderr.contains("decoded from the bundle"), "{stderr}");
    let timed = stderr.lines().find(|l| l.starts_with("GPU time at 48x32 on ")).unwrap_or_else(|| panic!("no GPU time: {stderr}"));
    println!("{timed}");
    assert!(
        timed.contains("median of 3") && timed.contains("surface ") && timed.contains("material ") && timed.contains("shading "),
        "{timed}"
    );
    let decoded = image::open(&decoded_png).unwrap().into_rgba8();
    let mean = decoded.pixels().zip(originals.pixels()).map(|(a, b)| f64::from(a.0[0].abs_diff(b.0[0]))).sum::<f64>() / (48.0 * 32.0);
    println!("decoded against originals: mean |red difference| {mean:.1} of 255");
    assert!(mean < 25.0, "the decoded render is far from the originals' ({mean:.1} of 255)");
    assert_ne!(decoded, originals, "the bundle's render is the originals' image");
    // The error view as a wipe on a plane, face on: decoded left of the middle shows where the
    // bundle loses; the originals right of it have none (the ramp's foot, exactly).
    let error_png = dir.path().join("bricks_error.png");
    let args = ["render", folder.to_str().unwrap(), "--bundle", bundle.to_str().unwrap(), "--shape", "plane", "--camera", "0,0"];
    let wipe = ["--ab", "decoded,original", "--view", "error", "--error-scale", "0.05", "--size", "48x32", "-o"];
    let output = texset(&[&args[..], &wipe[..], &[error_png.to_str().unwrap()]].concat());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success() && stderr.contains("decoded from the bundle left, the original maps right, error"), "{stderr}");
    let error = image::open(&error_png).unwrap().into_rgba8();
    let foot = texset_shaders::preview::heat(0.0).map(|v| (v * 255.0).round() as u8);
    let at_foot = |p: [u8; 4]| (0..3).all(|c| p[c].abs_diff(foot[c]) <= 1);
    let right: Vec<[u8; 4]> = (12..20).flat_map(|y| (27..34).map(move |x| (x, y))).map(|(x, y)| pixel(&error, x, y)).collect();
    let left: Vec<[u8; 4]> = (12..20).flat_map(|y| (15..22).map(move |x| (x, y))).map(|(x, y)| pixel(&error, x, y)).collect();
    println!("error wipe: right {:?}…, left {:?}…", &right[..2], &left[..2]);
    assert!(right.iter().all(|&p| at_foot(p)), "the originals' side shows an error: {right:?}");
    assert!(left.iter().filter(|&&p| !at_foot(p)).count() > left.len() / 2, "the decoded side shows no error: {left:?}");
    assert_eq!(pixel(&error, 24, 2), [255; 4], "no divider at the split");
    // FLIP of the two sides drawn whole, as shown: none between the originals and themselves,
    // some where the bundle's decode differs; the mean is printed.
    let flip_png = dir.path().join("bricks_flip.png");
    for (ab, differs) in [("original,original", false), ("original,decoded", true)] {
        let flip = ["--ab", ab, "--flip", "--size", "48x32", "-o", flip_png.to_str().unwrap()];
        let output = texset(&[&args[..], &flip[..]].concat());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{ab}: {stderr}");
        let mean: f64 = stderr.split("mean FLIP ").nth(1).and_then(|t| t.split(')').next()).and_then(|t| t.parse().ok()).unwrap();
        let image = image::open(&flip_png).unwrap().into_rgba8();
        let uniform = image.pixels().all(|p| *p == *image.get_pixel(0, 0));
        println!("FLIP {ab}: mean {mean}, uniform {uniform}");
        assert_eq!((mean > 1e-4, !uniform), (differs, differs), "{ab}: mean FLIP {mean}, uniform image {uniform}");
    }
    // A turntable of three frames: the cube turns between them.
    let turn = dir.path().join("turn.png");
    let args = ["render", folder.to_str().unwrap(), "--shape", "cube", "--turntable", "3", "--size", "48x32", "-o"];
    let output = texset(&[&args[..], &[turn.to_str().unwrap()]].concat());
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let frames: Vec<image::RgbaImage> =
        (0..3).map(|i| image::open(dir.path().join(format!("turn_{i:03}.png"))).unwrap().into_rgba8()).collect();
    assert_eq!(frames[0], originals, "the first frame is not the camera's own view");
    assert!(frames[0] != frames[1] && frames[1] != frames[2], "the turntable did not turn");
    // A material it does not have, a size out of range, a camera it cannot read, sides it cannot
    // draw: each named.
    let cases: [(&[&str], &str); 7] = [
        (&["--material", "marble"], "no material named \"marble\""),
        (&["--flip"], "--ab"),
        (&["--gpu-time", "0"], "--gpu-time 0"),
        (&["--size", "0x10"], "--size 0x10"),
        (&["--camera", "up"], "--camera \"up\""),
        (&["--ab", "decoded,original"], "--ab decoded needs --bundle"),
        (&["--ab", "left,right"], "--ab \"left,right\""),
    ];
    for (extra, expected) in cases {
        let bad = dir.path().join("bad.png");
        let args = [&["render", folder.to_str().unwrap(), "-o", bad.to_str().unwrap()], extra].concat();
        let output = texset(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success() && stderr.contains(expected), "{extra:?}: {stderr}");
        assert!(!bad.exists(), "{extra:?} wrote an image");
    }
}
