//! glTF out: `texset compress ASSET.gltf -o OUT/` writes the asset back as glTF with PNG fallbacks
//! decoded from the bundle and the `TEXSET_neural_texture` extension. The Khronos validator finds
//! no error in it (CI installs it: scripts/gltf-validator.sh), and re-importing it gives the same
//! library, whose texels are the fallbacks'.
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use texset_core::{
    bundle::Bundle,
    decode::{Decoder, unorm8},
    set::{TextureSet, load_library},
};
use texset_testkit::gltf::{glb, quad_bytes, quad_document, write_png};

/// `texset compress ASSET -o OUT`.
fn compress(asset: &Path, out: &Path, steps: &str) {
    compress_in(Path::new("."), asset, out, &["--steps", steps]);
}

/// [`compress`] run in `cwd` (a relative `out` is relative to it) with `args`.
fn compress_in(cwd: &Path, asset: &Path, out: &Path, args: &[&str]) {
    let run = Command::new(env!("CARGO_BIN_EXE_texset"))
        .current_dir(cwd)
        .args(["compress", asset.to_str().unwrap(), "-o", out.to_str().unwrap(), "--preset", "fast"])
        .args(args)
        .output()
        .unwrap();
    assert!(run.status.success(), "compress failed:\n{}", String::from_utf8_lossy(&run.stderr));
}

/// Runs the Khronos glTF validator on `gltf`: no error allowed. Where it is not installed the
/// check is skipped loudly, unless `TEXSET_REQUIRE_GLTF_VALIDATOR` is set (`.ci/run` sets it
/// once it has installed the validator).
fn validate(test: &str, gltf: &Path) {
    let root = texset_testkit::repo_root();
    let dir = std::env::var_os("TEXSET_GLTF_VALIDATOR").map_or_else(|| root.join("target/gltf-validator"), PathBuf::from);
    let installed = dir.join("node_modules/gltf-validator").is_dir();
    if !installed || Command::new("node").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: the glTF validator is not installed in {} (scripts/gltf-validator.sh)",
            dir.display()
        );
        texset_testkit::skip(test, "the Khronos glTF validator is not installed (scripts/gltf-validator.sh installs it)");
        return;
    }
    let run = Command::new("node").arg(root.join("scripts/gltf-validate.mjs")).arg(&dir).arg(gltf).output().unwrap();
    let report = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "the validator found errors in {}:\n{report}{}", gltf.display(), String::from_utf8_lossy(&run.stderr));
    assert!(report.contains("\"errors\":0"), "{report}");
}

/// A map's kind, width, height and channels.
type MapShape = (String, u32, u32, u32);

fn document(gltf: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(gltf).unwrap()).unwrap()
}

/// Re-importing the written asset gives the source's library (names, kinds, sizes, channels),
/// and every map's texels are the bundle's decoded values as 8-bit PNGs hold them.
fn reimports_as_the_same_library(source: &Path, written: &Path, bundle: &Path) {
    let (before, _) = load_library(&[source.to_path_buf()]).unwrap();
    let (after, _) = load_library(&[written.to_path_buf()]).unwrap();
    let shape = |set: &TextureSet| -> Vec<(String, Vec<MapShape>)> {
        set.materials
            .iter()
            .map(|m| {
                (
                    m.name.clone(),
                    m.textures.iter().map(|t| (t.info.kind.to_string(), t.info.width, t.info.height, t.info.channels)).collect(),
                )
            })
            .collect()
    };
    assert_eq!(shape(&after), shape(&before), "the written asset re-imports as another library");
    let bundle = Bundle::read(bundle).unwrap();
    let decoder = Decoder::new(&bundle);
    for material in &after.materials {
        let index = bundle.manifest.materials.iter().position(|m| m.name == material.name).unwrap();
        for texture in &material.textures {
            let map = bundle.manifest.materials[index].maps.iter().position(|m| m.info.kind == texture.info.kind).unwrap();
            let decoded = decoder.decode_map(index, map).unwrap();
            let expected: Vec<f32> = decoded.values.iter().map(|&v| f32::from(unorm8(v)) / 255.0).collect();
            assert!(texture.texels == expected, "{}/{}: the re-imported texels are not the decoded ones", material.name, texture.info.kind);
        }
    }
}

#[test]
fn the_cabinet_is_written_as_valid_gltf_and_reimports_as_the_same_library() {
    let test = "the_cabinet_is_written_as_valid_gltf_and_reimports_as_the_same_library";
    let source = texset_testkit::repo_root().parent().unwrap().join("shared/gltf/painted_wooden_cabinet/painted_wooden_cabinet_1k.gltf");
    if !source.is_file() {
        texset_testkit::skip(test, "../shared/gltf is not beside the checkout");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    compress(&source, &out, "30");
    let gltf = out.join("painted_wooden_cabinet_1k.gltf");
    let json = document(&gltf);
    assert_eq!(json["extensionsUsed"].as_array().unwrap().iter().filter(|e| *e == "TEXSET_neural_texture").count(), 1);
    assert!(json.get("extensionsRequired").is_none_or(|r| !r.as_array().unwrap().iter().any(|e| e == "TEXSET_neural_texture")));
    // Base colour, normal and the packed map (bound as metallic-roughness only: G roughness and
    // B metallic, R unused) each get a PNG and a texture naming the bundle's maps.
    let textures = json["textures"].as_array().unwrap();
    assert_eq!(textures.len(), 3, "{textures:?}");
    for texture in textures {
        let ext = &texture["extensions"]["TEXSET_neural_texture"];
        assert_eq!(ext["bundle"], "painted_wooden_cabinet_1k.texset");
        assert_eq!(ext["material"], "painted_wooden_cabinet");
        let uri = json["images"][texture["source"].as_u64().unwrap() as usize]["uri"].as_str().unwrap();
        assert!(uri.starts_with("textures/") && out.join(uri).is_file(), "{uri}");
    }
    let packed = textures.iter().find(|t| t["extensions"]["TEXSET_neural_texture"]["channels"][0].is_null()).expect("the packed map");
    assert_eq!(
        packed["extensions"]["TEXSET_neural_texture"]["channels"],
        json!([null, {"map": "roughness", "channel": 0}, {"map": "metallic", "channel": 0}])
    );
    assert!(out.join("painted_wooden_cabinet_1k.bin").is_file() && out.join("painted_wooden_cabinet_1k.texset").is_file());
    validate(test, &gltf);
    reimports_as_the_same_library(&source, &gltf, &out.join("painted_wooden_cabinet_1k.texset"));
    // The source folder is untouched: nothing was written beside it.
    let beside: Vec<_> = std::fs::read_dir(source.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(beside.iter().all(|n| n != ".texset-written.json"), "{beside:?}");
}

/// A `.glb` (its buffer in the binary chunk) whose material binds metallic-roughness and
/// occlusion on two images, and an emissive map under a black factor: the buffer gets a file,
/// metallic-roughness a gathered image (R 0), occlusion its own, and the emissive binding, which
/// cannot show, is left out.
#[test]
fn a_glb_is_written_with_its_buffer_and_the_importers_rules_backwards() {
    let test = "a_glb_is_written_with_its_buffer_and_the_importers_rules_backwards";
    let dir = tempfile::tempdir().unwrap();
    let asset_dir = dir.path().join("asset");
    std::fs::create_dir(&asset_dir).unwrap();
    for (name, seed, channels) in [("base.png", 10, 4), ("mr.png", 60, 3), ("ao.png", 120, 1), ("glow.png", 200, 3)] {
        write_png(&asset_dir.join(name), seed, channels);
    }
    let material = json!([{
        "name": "tile",
        "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}, "metallicRoughnessTexture": {"index": 1}, "metallicFactor": 1.0},
        "occlusionTexture": {"index": 2, "strength": 0.5},
        "emissiveTexture": {"index": 3},
        "emissiveFactor": [0.0, 0.0, 0.0]
    }]);
    let textures = json!([{"source": 0, "sampler": 0}, {"source": 1}, {"source": 2}, {"source": 3}]);
    let images = json!([{"uri": "base.png"}, {"uri": "mr.png"}, {"uri": "ao.png"}, {"uri": "glow.png"}]);
    let mut document = quad_document(&json!({"byteLength": 140}), &material, &textures, &images);
    document["samplers"] = json!([{"magFilter": 9729, "wrapS": 33648}]);
    let source = asset_dir.join("tile.glb");
    std::fs::write(&source, glb(&document, &quad_bytes())).unwrap();

    // A relative output folder (the writer once joined it twice).
    compress_in(dir.path(), &source, Path::new("out"), &["--steps", "20", "--gltf-copies", "ktx2"]);
    let out = dir.path().join("out");
    let gltf = out.join("tile.gltf");
    let json = self::document(&gltf);
    assert_eq!(json["buffers"], json!([{"byteLength": 140, "uri": "tile.bin"}]));
    assert_eq!(std::fs::read(out.join("tile.bin")).unwrap(), quad_bytes());
    let written = &json["materials"][0];
    assert!(written.get("emissiveTexture").is_none(), "{written}");
    assert_eq!(written["occlusionTexture"]["strength"], 0.5);
    let texture = |binding: &Value| json["textures"][binding["index"].as_u64().unwrap() as usize].clone();
    assert_eq!(texture(&written["pbrMetallicRoughness"]["baseColorTexture"])["sampler"], 0);
    let channels = |binding: &Value| texture(binding)["extensions"]["TEXSET_neural_texture"]["channels"].clone();
    assert_eq!(channels(&written["occlusionTexture"]), json!([{"map": "ao", "channel": 0}]));
    assert_eq!(
        channels(&written["pbrMetallicRoughness"]["metallicRoughnessTexture"]),
        json!([null, {"map": "roughness", "channel": 0}, {"map": "metallic", "channel": 0}])
    );
    // The gathered image's R is 0 everywhere.
    let mr = texture(&written["pbrMetallicRoughness"]["metallicRoughnessTexture"]);
    let uri = json["images"][mr["source"].as_u64().unwrap() as usize]["uri"].as_str().unwrap();
    let image = image::open(out.join(uri)).unwrap().to_rgb8();
    assert!(image.pixels().all(|p| p.0[0] == 0));
    // Asked for, each texture has a KTX2 copy with its mip chain, named from the extension only.
    for (t, texture) in json["textures"].as_array().unwrap().iter().enumerate() {
        let copy = &texture["extensions"]["TEXSET_neural_texture"]["blockCompressed"];
        let uri = copy["uri"].as_str().unwrap_or_else(|| panic!("texture {t} has no block-compressed copy: {texture}"));
        let bytes = std::fs::read(out.join(uri)).unwrap();
        let reader = ktx2::Reader::new(&bytes[..]).unwrap();
        assert_eq!(reader.header().level_count, 4, "{uri}: 8, 4, 2 and 1 texels across");
        assert_eq!(copy["levels"], 4);
        assert!(["bc7", "bc5", "bc4"].contains(&copy["format"].as_str().unwrap()), "{copy}");
    }
    let png = |i: &Value| Path::new(i["uri"].as_str().unwrap()).extension().is_some_and(|e| e == "png");
    assert!(json["images"].as_array().unwrap().iter().all(png), "a source that is not a PNG");
    validate(test, &gltf);
    reimports_as_the_same_library(&source, &gltf, &out.join("tile.texset"));
    // Written again over itself: texset's own files are replaced.
    compress(&source, &out, "5");
}

/// One glTF among several inputs with a folder as output is refused by name: which asset would
/// the folder hold?
#[test]
fn gltf_output_takes_one_asset() {
    let dir = tempfile::tempdir().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_texset"))
        .args(["compress", "a.gltf", "b_folder", "-o", dir.path().join("out").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("takes one glTF asset"), "{stderr}");
    assert!(!dir.path().join("out").exists());
}
