//! Ingest: real shared sets, the samples, naming, and every error naming its file.
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::{Path, PathBuf};
use texset_core::{
    compress,
    export::decode_to_folder,
    options::ScheduleConfig,
    set::{IngestError, IngestReport, MapKind, load_library, load_material},
};

fn write_png(path: &Path, width: u32, height: u32, channels: u8) {
    let data: Vec<u8> = (0..width * height * u32::from(channels)).map(|i| (i * 37 % 251) as u8).collect();
    let color = match channels {
        1 => image::ExtendedColorType::L8,
        3 => image::ExtendedColorType::Rgb8,
        _ => image::ExtendedColorType::Rgba8,
    };
    image::save_buffer(path, &data, width, height, color).unwrap();
}

#[test]
fn every_shared_material_ingests() {
    let Some(root) = texset_testkit::shared_textures() else {
        texset_testkit::skip("every_shared_material_ingests", "../shared/textures is absent");
        return;
    };
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    assert!(dirs.len() >= 6, "expected the six shared sets, found {dirs:?}");
    for dir in &dirs {
        let mut report = IngestReport::default();
        let m = load_material(dir, &mut report).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        assert!(m.textures.len() >= 3, "{}: {} maps", dir.display(), m.textures.len());
        assert!(m.textures.iter().any(|t| t.info.kind == MapKind::Basecolor));
        assert!(m.textures.iter().any(|t| t.info.kind == MapKind::Normal));
        for t in &m.textures {
            assert_eq!(t.texels.len(), t.texel_count() * t.info.channels as usize);
            assert!(t.texels.iter().all(|v| (0.0..=1.0).contains(v)));
        }
        if m.name == "glass_pattern_001" {
            let height = m.textures.iter().find(|t| t.info.kind == MapKind::Height).unwrap();
            assert_eq!(height.info.sample_format, texset_core::set::SampleFormat::U16, "16-bit height kept");
            assert_eq!(m.textures.len(), 7);
        } else {
            assert!(m.textures.iter().any(|t| t.info.kind == MapKind::Orm), "{}: orm", m.name);
        }
    }
}

#[test]
fn sample_textures_ingest_as_one_library() {
    let (set, report) = load_library(&texset_testkit::sample_dirs()).unwrap();
    assert_eq!(set.materials.len(), 5);
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    let metal = set.materials.iter().find(|m| m.name == "metal_plates").unwrap();
    assert!(metal.textures.iter().any(|t| t.info.kind == MapKind::Orm && t.info.channels == 3));
}

#[test]
fn unknown_names_are_reported_not_guessed_and_config_names_them() {
    let dir = tempfile::tempdir().unwrap();
    write_png(&dir.path().join("mat_basecolor.png"), 8, 8, 3);
    write_png(&dir.path().join("mat_preview.png"), 8, 8, 3);
    std::fs::write(dir.path().join("notes.txt"), "hello").unwrap();
    let mut report = IngestReport::default();
    let m = load_material(dir.path(), &mut report).unwrap();
    assert_eq!(m.textures.len(), 1);
    assert!(report.skipped.iter().any(|s| s.path.ends_with("mat_preview.png") && s.reason.contains("cannot be told")));
    // texset.toml names it.
    std::fs::write(dir.path().join("texset.toml"), "name = \"named\"\nnormal = \"directx\"\n[maps]\n\"mat_preview.png\" = \"normal\"\n")
        .unwrap();
    let mut report = IngestReport::default();
    let m = load_material(dir.path(), &mut report).unwrap();
    assert_eq!(m.name, "named");
    let normal = m.textures.iter().find(|t| t.info.kind == MapKind::Normal).unwrap();
    assert_eq!(normal.info.normal_convention, texset_core::set::NormalConvention::DirectX);
}

#[test]
fn maps_of_different_resolutions_load() {
    let dir = tempfile::tempdir().unwrap();
    write_png(&dir.path().join("m_albedo.png"), 64, 64, 3);
    write_png(&dir.path().join("m_rough.png"), 16, 16, 1);
    let m = load_material(dir.path(), &mut IngestReport::default()).unwrap();
    let sizes: Vec<(u32, u32)> = m.textures.iter().map(|t| (t.info.width, t.info.channels)).collect();
    assert_eq!(sizes, vec![(64, 3), (16, 1)]);
}

fn expect_error(dir: &Path, check: impl Fn(&IngestError) -> bool) -> String {
    let err = load_material(dir, &mut IngestReport::default()).unwrap_err();
    assert!(check(&err), "unexpected error: {err:?}");
    err.to_string()
}

#[test]
fn errors_name_the_file_and_the_problem() {
    // Empty folder.
    let dir = tempfile::tempdir().unwrap();
    let msg = expect_error(dir.path(), |e| matches!(e, IngestError::EmptyFolder { .. }));
    assert!(msg.contains(&dir.path().display().to_string()));

    // Two files for one kind.
    let dir = tempfile::tempdir().unwrap();
    write_png(&dir.path().join("a_basecolor.png"), 4, 4, 3);
    write_png(&dir.path().join("a_albedo.png"), 4, 4, 3);
    let msg = expect_error(dir.path(), |e| matches!(e, IngestError::DuplicateKind { .. }));
    assert!(msg.contains("a_albedo.png") && msg.contains("a_basecolor.png"), "{msg}");

    // Corrupt and truncated PNG.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("c_normal.png"), b"\x89PNG\r\n\x1a\nthis is not a png").unwrap();
    let msg = expect_error(dir.path(), |e| matches!(e, IngestError::Decode { .. }));
    assert!(msg.contains("c_normal.png"), "{msg}");
    let dir = tempfile::tempdir().unwrap();
    write_png(&dir.path().join("t_normal.png"), 64, 64, 3);
    let full = std::fs::read(dir.path().join("t_normal.png")).unwrap();
    std::fs::write(dir.path().join("t_normal.png"), &full[..full.len() / 2]).unwrap();
    let msg = expect_error(dir.path(), |e| matches!(e, IngestError::Decode { .. }));
    assert!(msg.contains("t_normal.png"), "{msg}");

    // A JPEG that is garbage.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("j_roughness.jpg"), [0xFF, 0xD8, 0xFF, 0x00, 0x01]).unwrap();
    expect_error(dir.path(), |e| matches!(e, IngestError::Decode { .. }));

    // Not a folder, missing path.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x_basecolor.png");
    write_png(&file, 4, 4, 3);
    expect_error(&file, |e| matches!(e, IngestError::NotAFolder { .. }));
    expect_error(&dir.path().join("missing"), |e| matches!(e, IngestError::Io { .. }));

    // Bad config.
    let dir = tempfile::tempdir().unwrap();
    write_png(&dir.path().join("x_basecolor.png"), 4, 4, 3);
    std::fs::write(dir.path().join("texset.toml"), "[maps]\n\"x_basecolor.png\" = \"sparkle\"\n").unwrap();
    let msg = expect_error(dir.path(), |e| matches!(e, IngestError::Config { .. }));
    assert!(msg.contains("sparkle") && msg.contains("texset.toml"), "{msg}");

    // Two materials with one name.
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    for d in [&a, &b] {
        write_png(&d.path().join("m_basecolor.png"), 4, 4, 3);
        std::fs::write(d.path().join("texset.toml"), "name = \"same\"\n").unwrap();
    }
    let err = load_library(&[a.path().to_path_buf(), b.path().to_path_buf()]).unwrap_err();
    assert!(matches!(err, IngestError::DuplicateMaterial { .. }), "{err}");
    assert!(matches!(load_library(&[]).unwrap_err(), IngestError::NothingGiven));
}

#[test]
fn oversized_dimensions_are_refused_before_decoding() {
    // A valid PNG header claiming 20000×20000 with no data: refused by the size check.
    let dir = tempfile::tempdir().unwrap();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = b"IHDR".to_vec();
    ihdr.extend_from_slice(&20_000u32.to_be_bytes());
    ihdr.extend_from_slice(&20_000u32.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    png.extend_from_slice(&13u32.to_be_bytes());
    png.extend_from_slice(&ihdr);
    png.extend_from_slice(&crc32fast::hash(&ihdr).to_be_bytes());
    // An empty IDAT and IEND, so the header parses; the pixel data is simply absent.
    for tag in [&b"IDAT"[..], &b"IEND"[..]] {
        png.extend_from_slice(&0u32.to_be_bytes());
        png.extend_from_slice(tag);
        png.extend_from_slice(&crc32fast::hash(tag).to_be_bytes());
    }
    std::fs::write(dir.path().join("big_basecolor.png"), &png).unwrap();
    let msg = expect_error(dir.path(), |e| matches!(e, IngestError::TooLarge { width: 20_000, .. }));
    assert!(msg.contains("big_basecolor.png"), "{msg}");
}

#[test]
fn config_errors_are_one_line_and_names_must_be_safe() {
    let dir = tempfile::tempdir().unwrap();
    write_png(&dir.path().join("x_basecolor.png"), 4, 4, 3);
    std::fs::write(dir.path().join("texset.toml"), "name = \"ok\"\nmaps = [broken\n").unwrap();
    let msg = expect_error(dir.path(), |e| matches!(e, IngestError::Config { .. }));
    assert_eq!(msg.lines().count(), 1, "{msg}");
    assert!(msg.contains("line "), "{msg}");
    std::fs::write(dir.path().join("texset.toml"), "name = \"../../escape\"\n").unwrap();
    let msg = expect_error(dir.path(), |e| matches!(e, IngestError::Config { .. }));
    assert!(msg.contains("escape"), "{msg}");
}

#[test]
fn float_exr_maps_keep_their_range_through_compress_and_decode() {
    use texset_core::{Cancel, NoProgress, options::CompressOptions};
    let src = tempfile::tempdir().unwrap();
    let (w, h) = (16u32, 16u32);
    // Height in metres, −2 … 6: outside [0, 1] on purpose.
    let data: Vec<f32> = (0..w * h)
        .flat_map(|i| {
            let v = -2.0 + 8.0 * ((i % w) as f32 / (w - 1) as f32);
            [v, v * 0.5, 1.0]
        })
        .collect();
    let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
    image::save_buffer(src.path().join("rock_height.exr"), &bytes, w, h, image::ExtendedColorType::Rgb32F).unwrap();
    write_png(&src.path().join("rock_basecolor.png"), w, h, 3);
    let (set, _) = load_library(&[src.path().to_path_buf()]).unwrap();
    let height = set.materials[0].textures.iter().find(|t| t.info.kind == MapKind::Height).unwrap();
    assert_eq!(height.info.sample_format, texset_core::set::SampleFormat::F32);
    assert!((height.info.channel_ranges[0][0] + 2.0).abs() < 1e-6 && (height.info.channel_ranges[0][1] - 6.0).abs() < 1e-6);
    let options =
        CompressOptions { schedule: ScheduleConfig { steps: 200, batch_texels: 1024, ..Default::default() }, ..CompressOptions::default() };
    let out = compress(&set, &options, &NoProgress, &Cancel::new()).unwrap();
    let decoded = tempfile::tempdir().unwrap();
    let files =
        decode_to_folder(&texset_core::decode::Decoder::new(&out.bundle), decoded.path(), texset_core::io::Overwrite::OnlyOurs).unwrap();
    let exr = files.iter().find(|p| p.extension().is_some_and(|e| e == "exr")).expect("an EXR output");
    let back = image::open(exr).unwrap().to_rgb32f();
    let (lo, hi) = back.as_raw().iter().step_by(3).fold((f32::MAX, f32::MIN), |(a, b), v| (a.min(*v), b.max(*v)));
    // Decoded at the original scale (metres), not squeezed into [0, 1].
    assert!(lo < -1.0 && hi > 5.0, "decoded range {lo}..{hi}");
}

/// The ingest fuzz target's property (`fuzz/fuzz_targets/ingest_image.rs`) on stable, in CI:
/// mutated PNG, JPEG, TGA and EXR files decode or give an error naming the file, never a panic.
#[test]
fn mutated_image_files_decode_or_give_an_error_naming_the_file() {
    use texset_core::set::{NormalConvention, decode_texture};
    let rgb = image::RgbImage::from_fn(8, 8, |x, y| image::Rgb([(x * 30) as u8, (y * 30) as u8, 128]));
    let encode = |image: image::DynamicImage, format: image::ImageFormat| {
        let mut bytes = Vec::new();
        image.write_to(&mut std::io::Cursor::new(&mut bytes), format).unwrap();
        bytes
    };
    let seeds = [
        ("m_basecolor.png", encode(image::DynamicImage::ImageRgb8(rgb.clone()), image::ImageFormat::Png)),
        ("m_height.png", encode(image::DynamicImage::ImageRgb8(rgb.clone()).to_luma16().into(), image::ImageFormat::Png)),
        ("m_normal.jpg", encode(image::DynamicImage::ImageRgb8(rgb.clone()), image::ImageFormat::Jpeg)),
        ("m_ao.tga", encode(image::DynamicImage::ImageRgb8(rgb.clone()), image::ImageFormat::Tga)),
        (
            "m_emissive.exr",
            encode(image::DynamicImage::ImageRgb32F(image::DynamicImage::ImageRgb8(rgb).to_rgb32f()), image::ImageFormat::OpenExr),
        ),
    ];
    let mut rng = texset_core::rng::Rng::new(7, 7, 7);
    let (mut decoded, mut rejected) = (0, 0);
    for (name, seed) in &seeds {
        let path = std::path::Path::new(name);
        for _ in 0..600 {
            let mut bytes = seed.clone();
            for _ in 0..=rng.below(4) {
                let at = rng.below(bytes.len() as u64) as usize;
                match rng.below(3) {
                    0 => bytes[at] ^= 1 << rng.below(8),
                    1 => bytes[at] = [0, 0xFF, 0x7F, 0x80][rng.below(4) as usize],
                    _ => bytes.truncate(at.max(1)),
                }
            }
            match decode_texture(&bytes, path, MapKind::Basecolor, NormalConvention::default()) {
                Ok(t) => {
                    decoded += 1;
                    assert_eq!(t.texels.len(), (t.info.width * t.info.height * t.info.channels) as usize);
                }
                Err(e) => {
                    rejected += 1;
                    assert!(e.to_string().contains(name), "error does not name {name}: {e}");
                }
            }
        }
    }
    eprintln!("{decoded} mutated images decoded, {rejected} rejected with the file named, none panicked");
    assert!(decoded > 0 && rejected > 0);
}

/// A PNG with every chunk's CRC made right: fuzz builds of the png crate skip CRC checks
/// (`cfg(fuzzing)`), so a found input only reproduces in a normal build with its CRCs fixed.
fn with_png_crcs_fixed(bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    if !out.starts_with(b"\x89PNG\r\n\x1a\n") {
        return out;
    }
    let mut at = 8;
    while at + 12 <= out.len() {
        let len = u32::from_be_bytes(out[at..at + 4].try_into().unwrap()) as usize;
        let Some(end) = (at + 8).checked_add(len).filter(|&e| e + 4 <= out.len()) else { break };
        let crc = crc32fast::hash(&out[at + 4..end]);
        out[end..end + 4].copy_from_slice(&crc.to_be_bytes());
        at = end + 4;
    }
    out
}

/// Every input the ingest fuzz target found a problem with (`tests/data/fuzz-regressions/
/// ingest_image`, first byte choosing the file name as in the target) stays fixed.
#[test]
fn fuzz_regressions_stay_fixed() {
    use texset_core::set::{NormalConvention, decode_texture};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/fuzz-regressions/ingest_image");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let file = entry.unwrap().path();
        let data = std::fs::read(&file).unwrap();
        let Some((&selector, bytes)) = data.split_first() else { continue };
        let name = ["t_basecolor.png", "t_normal.jpg", "t_roughness.tga", "t_height.exr"][usize::from(selector & 3)];
        let bytes = &with_png_crcs_fixed(bytes);
        let result = decode_texture(bytes, Path::new(name), MapKind::Basecolor, NormalConvention::default());
        if let Err(e) = &result {
            assert!(e.to_string().contains(name), "{}: {e}", file.display());
        }
        // The out-of-memory finds are decompression bombs: refused before any allocation.
        if file.file_name().unwrap().to_string_lossy().starts_with("oom-") {
            assert!(matches!(result, Err(IngestError::Bomb { .. })), "{}: {result:?}", file.display());
        }
        count += 1;
    }
    assert!(count > 0, "no regression inputs under {}", dir.display());
}

/// A 1×1 (or any small) image of one value per channel: 8-bit gray, 8-bit RGB or 16-bit RGB.
fn write_constant_png(path: &Path, width: u32, height: u32, value: &[u16], sixteen_bit: bool) {
    let texels = (width * height) as usize;
    let (color, bytes): (image::ExtendedColorType, Vec<u8>) = match (value.len(), sixteen_bit) {
        (1, false) => (image::ExtendedColorType::L8, value.iter().map(|&v| v as u8).collect::<Vec<_>>().repeat(texels)),
        (3, false) => (image::ExtendedColorType::Rgb8, value.iter().map(|&v| v as u8).collect::<Vec<_>>().repeat(texels)),
        (3, true) => (image::ExtendedColorType::Rgb16, value.iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<_>>().repeat(texels)),
        _ => unreachable!("test helper: gray8, rgb8 or rgb16"),
    };
    image::save_buffer(path, &bytes, width, height, color).unwrap();
}

#[test]
fn tiny_constant_maps_load_flat_and_decode_to_their_value_at_the_material_size() {
    use texset_core::{Cancel, NoProgress, options::CompressOptions};
    let src = tempfile::tempdir().unwrap();
    write_png(&src.path().join("m_basecolor.png"), 32, 32, 3);
    // A glTF-style export: 1×1 roughness, a 1×1 16-bit ORM, and a 4×4 constant metallic.
    let roughness = 77u16;
    let orm = [13_107u16, 39_321, 58_982];
    let metallic = 200u16;
    write_constant_png(&src.path().join("m_roughness.png"), 1, 1, &[roughness], false);
    write_constant_png(&src.path().join("m_orm.png"), 1, 1, &orm, true);
    write_constant_png(&src.path().join("m_metallic.png"), 4, 4, &[metallic], false);
    let before: Vec<(PathBuf, Vec<u8>)> = {
        let mut v: Vec<_> =
            std::fs::read_dir(src.path()).unwrap().map(|e| e.unwrap().path()).map(|p| (p.clone(), std::fs::read(&p).unwrap())).collect();
        v.sort();
        v
    };

    let (set, report) = load_library(&[src.path().to_path_buf()]).unwrap();
    let material = &set.materials[0];
    // Every map at the material's resolution, the constants filled with their value; the
    // kinds and channel layouts are those of the files.
    for t in &material.textures {
        assert_eq!((t.info.width, t.info.height), (32, 32), "{}", t.info.kind);
        assert_eq!(t.texels.len(), 32 * 32 * t.info.channels as usize);
    }
    let map = |kind: MapKind| material.textures.iter().find(|t| t.info.kind == kind).unwrap();
    assert_eq!(
        (map(MapKind::Roughness).info.channels, map(MapKind::Roughness).info.sample_format),
        (1, texset_core::set::SampleFormat::U8)
    );
    assert_eq!((map(MapKind::Orm).info.channels, map(MapKind::Orm).info.sample_format), (3, texset_core::set::SampleFormat::U16));
    assert!(map(MapKind::Roughness).texels.iter().all(|v| v.to_bits() == (f32::from(roughness) / 255.0).to_bits()));
    assert!(report.maps.iter().any(|m| m.contains("/roughness: 32x32 1ch 8-bit, constant (1x1 in the file)")), "{:?}", report.maps);
    assert!(report.maps.iter().any(|m| m.contains("/metallic: 32x32 1ch 8-bit, constant (4x4 in the file)")), "{:?}", report.maps);
    assert!(report.maps.iter().any(|m| m.contains("/basecolor: 32x32 3ch 8-bit (")), "{:?}", report.maps);

    // 600 short steps (training alone left a flat map within 0.01 of an 8-bit step after 600
    // steps under the classic recipe, 0.74 under the default of decision 034; the prune pass
    // then sets its row to its mean).
    let options =
        CompressOptions { schedule: ScheduleConfig { steps: 600, batch_texels: 1024, ..Default::default() }, ..CompressOptions::default() };
    let out = compress(&set, &options, &NoProgress, &Cancel::new()).unwrap();
    let manifest = &out.bundle.manifest.materials[0];
    for kind in [MapKind::Roughness, MapKind::Orm, MapKind::Metallic] {
        let budget = out.report.analyse.budgets.iter().find(|b| b.texture.ends_with(&format!("/{kind}"))).unwrap();
        assert_eq!(budget.channels, 0, "{kind}: {}", budget.reason);
        assert!(budget.reason.starts_with("flat"), "{kind}: {}", budget.reason);
        let entry = manifest.maps.iter().find(|m| m.info.kind == kind).unwrap();
        assert!(entry.latent_channels.is_empty(), "{kind}: {:?}", entry.latent_channels);
        assert_eq!((entry.info.width, entry.info.height), (32, 32), "{kind}");
    }

    // Decoded at 32×32, every texel the constant. A flat map decodes from the MLP's output bias
    // alone, its mean (the prune pass zeroes its row of the last layer): within half an 8-bit
    // step, so the written 8-bit file holds exactly the source's value.
    assert_eq!(out.report.prune.flat_outputs.len(), 3, "{:?}", out.report.prune.flat_outputs);
    let decoder = texset_core::decode::Decoder::new(&out.bundle);
    for (kind, value) in [
        (MapKind::Roughness, vec![f32::from(roughness) / 255.0]),
        (MapKind::Metallic, vec![f32::from(metallic) / 255.0]),
        (MapKind::Orm, orm.iter().map(|&v| f32::from(v) / 65535.0).collect()),
    ] {
        let index = manifest.maps.iter().position(|m| m.info.kind == kind).unwrap();
        let decoded = decoder.decode_map(0, index).unwrap();
        assert_eq!((decoded.width, decoded.height, decoded.channels as usize), (32, 32, value.len()), "{kind}");
        let worst =
            decoded.values.chunks(value.len()).flat_map(|t| t.iter().zip(&value).map(|(a, b)| (a - b).abs())).fold(0.0f32, f32::max);
        println!("{kind}: worst decoded error {:.3} steps of 8 bits", worst * 255.0);
        assert!(worst < 0.5 / 255.0, "{kind}: decoded {worst} from its value");
    }
    let decoded_dir = tempfile::tempdir().unwrap();
    decode_to_folder(&decoder, decoded_dir.path(), texset_core::io::Overwrite::OnlyOurs).unwrap();
    let name = &manifest.name;
    let rough_png = image::open(decoded_dir.path().join(name).join(format!("{name}_roughness.png"))).unwrap();
    assert_eq!(rough_png.color(), image::ColorType::L8);
    let rough_png = rough_png.to_luma8();
    assert_eq!(rough_png.dimensions(), (32, 32));
    assert!(rough_png.pixels().all(|p| u16::from(p.0[0]) == roughness), "{:?}", rough_png.pixels().next());
    let orm_png = image::open(decoded_dir.path().join(name).join(format!("{name}_orm.png"))).unwrap();
    assert_eq!(orm_png.color(), image::ColorType::Rgb16, "16-bit RGB kept");
    let orm_png = orm_png.to_rgb16();
    assert_eq!(orm_png.dimensions(), (32, 32));
    // Within a quarter of an 8-bit step (64 of 16 bits); about one 16-bit step measured.
    assert!(orm_png.pixels().all(|p| p.0.iter().zip(&orm).all(|(a, b)| a.abs_diff(*b) <= 64)), "{:?}", orm_png.pixels().next());

    // The source folder is untouched.
    for (path, bytes) in &before {
        assert_eq!(&std::fs::read(path).unwrap(), bytes, "{}", path.display());
    }
}

#[test]
fn a_tiny_map_that_varies_is_refused_naming_the_file() {
    // A 2×2 checker: not constant, and below 4×4.
    let dir = tempfile::tempdir().unwrap();
    write_png(&dir.path().join("m_basecolor.png"), 16, 16, 3);
    image::save_buffer(dir.path().join("m_roughness.png"), &[0, 255, 255, 0], 2, 2, image::ExtendedColorType::L8).unwrap();
    let msg = expect_error(dir.path(), |e| matches!(e, IngestError::TooSmall { width: 2, height: 2, .. }));
    assert!(msg.contains("m_roughness.png") && msg.contains("2x2") && msg.contains("not constant") && msg.contains("4x4"), "{msg}");

    // One level of difference is the file's quantisation, not content: a constant, at its mean.
    image::save_buffer(dir.path().join("m_roughness.png"), &[127, 128, 128, 127], 2, 2, image::ExtendedColorType::L8).unwrap();
    let m = load_material(dir.path(), &mut IngestReport::default()).unwrap();
    let rough = m.textures.iter().find(|t| t.info.kind == MapKind::Roughness).unwrap();
    assert_eq!((rough.info.width, rough.info.height), (16, 16));
    assert!(rough.texels.iter().all(|&v| (v - 127.5 / 255.0).abs() < 1e-6));
    // Two levels is content.
    image::save_buffer(dir.path().join("m_roughness.png"), &[127, 129, 129, 127], 2, 2, image::ExtendedColorType::L8).unwrap();
    expect_error(dir.path(), |e| matches!(e, IngestError::TooSmall { .. }));
}

#[test]
fn only_constant_maps_take_the_material_resolution() {
    let dir = tempfile::tempdir().unwrap();
    // 64×64 base colour; a 16×16 roughness that varies keeps its size, a 16×16 constant takes 64×64.
    write_png(&dir.path().join("m_basecolor.png"), 64, 64, 3);
    write_png(&dir.path().join("m_roughness.png"), 16, 16, 1);
    write_constant_png(&dir.path().join("m_metallic.png"), 16, 16, &[9], false);
    let m = load_material(dir.path(), &mut IngestReport::default()).unwrap();
    let sizes: Vec<(MapKind, u32, u32)> = m.textures.iter().map(|t| (t.info.kind, t.info.width, t.info.height)).collect();
    assert_eq!(sizes, vec![(MapKind::Basecolor, 64, 64), (MapKind::Roughness, 16, 16), (MapKind::Metallic, 64, 64)]);

    // A material of only constants: the largest of them, and at least 4×4.
    let dir = tempfile::tempdir().unwrap();
    write_constant_png(&dir.path().join("m_basecolor.png"), 1, 1, &[200, 100, 50], false);
    write_constant_png(&dir.path().join("m_roughness.png"), 2, 2, &[128], false);
    let m = load_material(dir.path(), &mut IngestReport::default()).unwrap();
    assert!(
        m.textures.iter().all(|t| (t.info.width, t.info.height) == (4, 4)),
        "{:?}",
        m.textures.iter().map(|t| (t.info.width, t.info.height)).collect::<Vec<_>>()
    );
    let base = m.textures.iter().find(|t| t.info.kind == MapKind::Basecolor).unwrap();
    assert_eq!(base.texels.len(), 4 * 4 * 3);
    assert_eq!(&base.texels[..3], &[200.0 / 255.0, 100.0 / 255.0, 50.0 / 255.0]);
    let dir = tempfile::tempdir().unwrap();
    write_constant_png(&dir.path().join("m_basecolor.png"), 1, 1, &[1, 2, 3], false);
    write_constant_png(&dir.path().join("m_roughness.png"), 8, 6, &[128], false);
    let m = load_material(dir.path(), &mut IngestReport::default()).unwrap();
    assert!(m.textures.iter().all(|t| (t.info.width, t.info.height) == (8, 6)));
}
