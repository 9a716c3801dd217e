//! The bad-input matrix: every case runs the `texset` CLI on one broken input and asserts a
//! non-zero exit, no panic, and one error line that names the file and the problem.
#![allow(clippy::unwrap_used, missing_docs)]

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One CLI run expected to fail.
struct Case {
    name: String,
    args: Vec<OsString>,
    env: Vec<(&'static str, &'static str)>,
    /// Substrings the error must hold (the file's name and a word of the problem), lower case.
    expect: Vec<String>,
}

fn case(name: &str, args: &[&dyn AsRefOs], expect: &[&str]) -> Case {
    Case {
        name: name.to_owned(),
        args: args.iter().map(|a| a.os()).collect(),
        env: Vec::new(),
        expect: expect.iter().map(|s| s.to_lowercase()).collect(),
    }
}

trait AsRefOs {
    fn os(&self) -> OsString;
}
impl AsRefOs for &str {
    fn os(&self) -> OsString {
        OsString::from(*self)
    }
}
impl AsRefOs for PathBuf {
    fn os(&self) -> OsString {
        self.clone().into_os_string()
    }
}

fn png(width: u32, height: u32) -> Vec<u8> {
    png_seeded(width, height, 5)
}

fn png_seeded(width: u32, height: u32, seed: u32) -> Vec<u8> {
    let image = image::RgbImage::from_fn(width, height, |x, y| image::Rgb([(x * 13) as u8, (y * 7) as u8, ((x ^ y) * seed) as u8]));
    let mut bytes = Vec::new();
    image::DynamicImage::ImageRgb8(image).write_to(&mut std::io::Cursor::new(&mut bytes), image::ImageFormat::Png).unwrap();
    bytes
}

fn encoded(width: u32, height: u32, format: image::ImageFormat) -> Vec<u8> {
    let image = image::RgbImage::from_fn(width, height, |x, y| image::Rgb([(x * 13) as u8, (y * 7) as u8, 90]));
    let image = if format == image::ImageFormat::OpenExr {
        image::DynamicImage::ImageRgb32F(image::DynamicImage::ImageRgb8(image).to_rgb32f())
    } else {
        image::DynamicImage::ImageRgb8(image)
    };
    let mut bytes = Vec::new();
    image.write_to(&mut std::io::Cursor::new(&mut bytes), format).unwrap();
    bytes
}

/// A PNG of only a signature and an IHDR chunk (no pixels): enough to claim any size or depth.
fn png_header(width: u32, height: u32, bit_depth: u8, color_type: u8) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut chunk = |tag: &[u8], data: &[u8]| {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut body = tag.to_vec();
        body.extend_from_slice(data);
        out.extend_from_slice(&body);
        out.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
    };
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[bit_depth, color_type, 0, 0, 0]);
    chunk(b"IHDR", &ihdr);
    chunk(b"IDAT", &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]);
    chunk(b"IEND", &[]);
    out
}

/// A real JPEG whose frame header is patched to claim `width` x `height`.
fn jpeg_claiming(width: u16, height: u16) -> Vec<u8> {
    let mut bytes = encoded(16, 16, image::ImageFormat::Jpeg);
    let sof = bytes.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
    bytes[sof + 5..sof + 7].copy_from_slice(&height.to_be_bytes());
    bytes[sof + 7..sof + 9].copy_from_slice(&width.to_be_bytes());
    bytes
}

/// A material folder: a good base colour plus `files`.
fn material(root: &Path, name: &str, files: &[(&str, Vec<u8>)]) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("m_basecolor.png"), png(16, 16)).unwrap();
    for (file, bytes) in files {
        std::fs::write(dir.join(file), bytes).unwrap();
    }
    dir
}

fn texset() -> Command {
    Command::new(env!("CARGO_BIN_EXE_texset"))
}

/// The section table of a bundle: (tag, offset, size) per section, and the table's end.
fn sections(bytes: &[u8]) -> (Vec<([u8; 4], usize, usize)>, usize) {
    let count = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let entries = (0..count)
        .map(|i| {
            let e = &bytes[16 + 24 * i..16 + 24 * (i + 1)];
            let offset = u64::from_le_bytes(e[8..16].try_into().unwrap()) as usize;
            let size = u64::from_le_bytes(e[16..24].try_into().unwrap()) as usize;
            (e[..4].try_into().unwrap(), offset, size)
        })
        .collect();
    (entries, 16 + 24 * count)
}

/// The bundle with its manifest replaced, every checksum made right again.
fn with_manifest(bytes: &[u8], manifest: &[u8]) -> Vec<u8> {
    let (table, _) = sections(bytes);
    let mut data: Vec<([u8; 4], Vec<u8>)> =
        table.iter().map(|(tag, o, s)| (*tag, if tag == b"MANI" { manifest.to_vec() } else { bytes[*o..o + s].to_vec() })).collect();
    let mut out = bytes[..16].to_vec();
    let mut offset = 16 + 24 * data.len() + 4;
    for (tag, d) in &mut data {
        out.extend_from_slice(tag.as_slice());
        out.extend_from_slice(&crc32fast::hash(d).to_le_bytes());
        out.extend_from_slice(&(offset as u64).to_le_bytes());
        out.extend_from_slice(&(d.len() as u64).to_le_bytes());
        offset += d.len();
    }
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    for (_, d) in data {
        out.extend_from_slice(&d);
    }
    out
}

fn is_root() -> bool {
    // Permission bits do not stop root: the chmod cases only run for other users.
    std::fs::read_to_string("/proc/self/status")
        .is_ok_and(|s| s.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0")))
}

#[test]
fn every_bad_input_is_a_clear_error_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let out = root.join("out.texset");
    let good_dir = material(root, "good", &[("m_roughness.png", png(16, 16))]);
    let mut cases = image_cases(root, &out);
    cases.extend(folder_cases(root, &out));
    let (option_cases, bundle) = option_cases(root, &out, &good_dir);
    cases.extend(option_cases);
    cases.extend(bundle_cases(root, &bundle));
    cases.extend(output_cases(root, &good_dir, &bundle));

    let bundle_before = std::fs::read(&bundle).unwrap();
    let mut failures = Vec::new();
    for c in &cases {
        let output = texset().args(&c.args).envs(c.env.iter().copied()).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        let lower = stderr.to_lowercase();
        let mut wrong = Vec::new();
        if output.status.success() {
            wrong.push("exited 0".to_owned());
        }
        if lower.contains("panicked") || output.status.code().is_none() {
            wrong.push("panicked or was killed".to_owned());
        }
        let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("texset: error:")).collect();
        if errors.len() != 1 {
            wrong.push(format!("{} error lines", errors.len()));
        }
        for e in &c.expect {
            if !lower.contains(e.as_str()) {
                wrong.push(format!("no {e:?}"));
            }
        }
        if !wrong.is_empty() {
            failures.push(format!("{}: {} -- stderr: {}", c.name, wrong.join(", "), stderr.trim()));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases wrong:\n{}", failures.len(), cases.len(), failures.join("\n"));
    assert!(cases.len() >= 40, "the matrix has {} cases", cases.len());
    eprintln!("{} bad-input cases, each a clear error", cases.len());

    // A failed write left the earlier file as it was and no temporary file behind.
    assert_eq!(std::fs::read(&bundle).unwrap(), bundle_before, "a failed export damaged the file it was replacing");
    let leftovers: Vec<_> =
        std::fs::read_dir(root).unwrap().filter_map(Result::ok).filter(|e| e.file_name().to_string_lossy().contains(".tmp-")).collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

/// Broken images: corrupt, truncated, empty, bombs, unsupported depths, NaN.
fn image_cases(root: &Path, out: &Path) -> Vec<Case> {
    let mut cases = Vec::new();
    let compress =
        |dir: &Path, expect: &[&str], name: &str| case(name, &[&"compress", &dir.to_path_buf(), &"-o", &out.to_path_buf()], expect);
    // --- Images ---------------------------------------------------------------------------
    let good = png(16, 16);
    let mut corrupt = b"\x89PNG\r\n\x1a\n".to_vec();
    corrupt.extend_from_slice(&[0x55; 64]);
    let d = material(root, "corrupt_png", &[("m_roughness.png", corrupt)]);
    cases.push(compress(&d, &["m_roughness.png", "cannot decode"], "corrupt PNG"));
    let d = material(root, "truncated_png", &[("m_roughness.png", good[..good.len() * 3 / 5].to_vec())]);
    cases.push(compress(&d, &["m_roughness.png", "cannot decode"], "truncated PNG"));
    let mut bad_crc = good.clone();
    bad_crc[29] ^= 0x40; // inside IHDR: the chunk's CRC no longer matches
    let d = material(root, "png_crc", &[("m_roughness.png", bad_crc)]);
    cases.push(compress(&d, &["m_roughness.png", "cannot decode"], "PNG with a bad chunk CRC"));
    let jpeg = encoded(16, 16, image::ImageFormat::Jpeg);
    let d = material(root, "corrupt_jpeg", &[("m_normal.jpg", [&jpeg[..20], &[0x13; 200][..]].concat())]);
    cases.push(compress(&d, &["m_normal.jpg", "cannot decode"], "corrupt JPEG"));
    let d = material(root, "truncated_jpeg", &[("m_normal.jpg", jpeg[..jpeg.len() / 3].to_vec())]);
    cases.push(compress(&d, &["m_normal.jpg", "cannot decode"], "truncated JPEG"));
    let exr = encoded(16, 16, image::ImageFormat::OpenExr);
    let d = material(root, "corrupt_exr", &[("m_height.exr", [&exr[..40], &[0xEE; 100][..]].concat())]);
    cases.push(compress(&d, &["m_height.exr", "cannot decode"], "corrupt EXR"));
    let d = material(root, "truncated_exr", &[("m_height.exr", exr[..exr.len() / 2].to_vec())]);
    cases.push(compress(&d, &["m_height.exr", "cannot decode"], "truncated EXR"));
    let tga = encoded(16, 16, image::ImageFormat::Tga);
    let d = material(root, "truncated_tga", &[("m_ao.tga", tga[..tga.len() / 2].to_vec())]);
    cases.push(compress(&d, &["m_ao.tga", "cannot decode"], "truncated TGA"));
    let d = material(root, "not_an_image", &[("m_ao.png", b"just some text, not an image at all".to_vec())]);
    cases.push(compress(&d, &["m_ao.png", "cannot decode"], "text named .png"));
    let d = material(root, "empty_file", &[("m_ao.png", Vec::new())]);
    cases.push(compress(&d, &["m_ao.png", "cannot decode"], "zero-byte file"));
    let d = material(root, "zero_size", &[("m_ao.png", png_header(0, 16, 8, 0))]);
    cases.push(compress(&d, &["m_ao.png"], "zero-width PNG"));
    // A constant map may be 1×1 (it takes the material's size); a 2×2 checker is content below 4×4.
    let checker = image::GrayImage::from_fn(2, 2, |x, y| image::Luma([if (x + y) % 2 == 0 { 0 } else { 255 }]));
    let mut checker_bytes = Vec::new();
    checker.write_to(&mut std::io::Cursor::new(&mut checker_bytes), image::ImageFormat::Png).unwrap();
    let d = material(root, "two_by_two", &[("m_metallic.png", checker_bytes)]);
    cases.push(compress(&d, &["m_metallic.png", "2x2", "not constant", "at least 4x4"], "2x2 PNG that is not constant"));
    let d = material(root, "png_bomb", &[("m_height.png", png_header(100_000, 100_000, 16, 6))]);
    cases.push(compress(&d, &["m_height.png", "100000x100000", "beyond the limit"], "PNG decompression bomb"));
    let d = material(root, "jpeg_bomb", &[("m_normal.jpg", jpeg_claiming(65_000, 65_000))]);
    cases.push(compress(&d, &["m_normal.jpg", "65000x65000", "beyond the limit"], "JPEG decompression bomb"));
    let d = material(root, "png_small_bomb", &[("m_height.png", png_header(16_000, 16_000, 16, 6))]);
    cases.push(compress(&d, &["m_height.png", "16000x16000", "decompression bomb"], "small PNG claiming 2 GB of texels"));
    let d = material(root, "png_bit_depth", &[("m_ao.png", png_header(16, 16, 3, 0))]);
    cases.push(compress(&d, &["m_ao.png", "cannot decode"], "PNG of bit depth 3"));
    let d = material(root, "png_color_type", &[("m_ao.png", png_header(16, 16, 8, 5))]);
    cases.push(compress(&d, &["m_ao.png", "cannot decode"], "PNG of colour type 5"));
    let mut nan = image::Rgb32FImage::from_pixel(8, 8, image::Rgb([0.5, 0.5, 0.5]));
    nan.put_pixel(3, 3, image::Rgb([f32::NAN, 0.0, 0.0]));
    let mut nan_bytes = Vec::new();
    image::DynamicImage::ImageRgb32F(nan).write_to(&mut std::io::Cursor::new(&mut nan_bytes), image::ImageFormat::OpenExr).unwrap();
    let d = material(root, "nan_exr", &[("m_height.exr", nan_bytes)]);
    cases.push(compress(&d, &["m_height.exr", "nan"], "EXR holding NaN"));

    cases
}

/// Folders and names: unknown or duplicate kinds, empty folders, links, FIFOs, non-UTF-8 names,
/// bad `texset.toml`, unreadable files.
fn folder_cases(root: &Path, out: &Path) -> Vec<Case> {
    let mut cases = Vec::new();
    let out = out.to_path_buf();
    let compress = |dir: &Path, expect: &[&str], name: &str| case(name, &[&"compress", &dir.to_path_buf(), &"-o", &out.clone()], expect);
    let jpeg = encoded(16, 16, image::ImageFormat::Jpeg);
    // --- Folders and names ------------------------------------------------------------------
    let d = root.join("unknown_names");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("foo.png"), png(16, 16)).unwrap();
    cases.push(compress(&d, &["unknown_names", "foo.png", "map kind cannot be told"], "unknown map name"));
    let d = material(root, "duplicate_kind", &[("m_albedo.png", png(16, 16))]);
    cases.push(compress(&d, &["m_albedo.png", "m_basecolor.png", "two files for map kind"], "two names for one map"));
    let d = material(root, "duplicate_ext", &[("m_basecolor.jpg", jpeg.clone())]);
    cases.push(compress(&d, &["m_basecolor.jpg", "two files for map kind"], "one map as .png and .jpg"));
    let d = root.join("empty_folder");
    std::fs::create_dir_all(&d).unwrap();
    cases.push(compress(&d, &["empty_folder", "no texture maps found"], "empty folder"));
    let d = root.join("only_text");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("readme.txt"), "hello").unwrap();
    cases.push(compress(&d, &["only_text", "readme.txt", "not a supported image"], "folder without images"));
    cases.push(compress(&root.join("no_such_folder"), &["no_such_folder", "no such file"], "missing folder"));
    let file = root.join("a_file.png");
    std::fs::write(&file, png(16, 16)).unwrap();
    cases.push(compress(&file, &["a_file.png", "is not a folder"], "a file given as a folder"));
    let d = material(root, "symlink_loop", &[]);
    std::os::unix::fs::symlink("m_roughness.png", d.join("m_roughness.png")).unwrap();
    cases.push(compress(&d, &["m_roughness.png", "symbolic links"], "symlink loop (file)"));
    let d = root.join("folder_loop");
    std::os::unix::fs::symlink("folder_loop", &d).unwrap();
    cases.push(compress(&d, &["folder_loop", "symbolic links"], "symlink loop (folder)"));
    let d = material(root, "dangling", &[]);
    std::os::unix::fs::symlink("gone.png", d.join("m_roughness.png")).unwrap();
    cases.push(compress(&d, &["m_roughness.png", "no such file"], "dangling symlink"));
    let d = material(root, "fifo", &[]);
    assert!(Command::new("mkfifo").arg(d.join("m_roughness.png")).status().unwrap().success());
    cases.push(compress(&d, &["m_roughness.png", "not a regular file"], "FIFO named like a map"));
    let d = material(root, "fifo_toml", &[("m_roughness.png", png(16, 16))]);
    assert!(Command::new("mkfifo").arg(d.join("texset.toml")).status().unwrap().success());
    cases.push(compress(&d, &["texset.toml", "not a regular file"], "texset.toml that is a FIFO"));
    let d = root.join(OsString::from_vec(b"non_utf8_file".to_vec()));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join(OsString::from_vec(b"m_basecolor\xff.png".to_vec())), png(16, 16)).unwrap();
    cases.push(compress(&d, &["m_basecolor", "not valid utf-8"], "non-UTF-8 file name"));
    let d = root.join(OsString::from_vec(b"mat\xfe".to_vec()));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("m_basecolor.png"), png(16, 16)).unwrap();
    cases.push(compress(&d, &["texset.toml", "not valid utf-8"], "non-UTF-8 folder name"));
    let d = material(root, "bad_toml", &[("texset.toml", b"name = [unclosed".to_vec())]);
    cases.push(compress(&d, &["texset.toml"], "malformed texset.toml"));
    let d = material(root, "toml_missing_file", &[("texset.toml", b"[maps]\n\"gone.png\" = \"roughness\"\n".to_vec())]);
    cases.push(compress(&d, &["texset.toml", "gone.png", "not a file"], "texset.toml names a missing file"));
    let d =
        material(root, "toml_unknown_kind", &[("m_x.png", png(16, 16)), ("texset.toml", b"[maps]\n\"m_x.png\" = \"sparkle\"\n".to_vec())]);
    cases.push(compress(&d, &["texset.toml", "sparkle", "unknown map kind"], "texset.toml names an unknown kind"));
    let (a, b) = (root.join("lib_a/mat"), root.join("lib_b/mat"));
    for dir in [&a, &b] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("m_basecolor.png"), png(16, 16)).unwrap();
    }
    cases.push(case("two materials of one name", &[&"compress", &a, &b, &"-o", &out], &["lib_a/mat", "lib_b/mat", "two materials named"]));
    let upper = root.join("lib_c/Mat");
    std::fs::create_dir_all(&upper).unwrap();
    std::fs::write(upper.join("m_basecolor.png"), png(16, 16)).unwrap();
    cases.push(case(
        "two materials whose names differ in case",
        &[&"compress", &a, &upper, &"-o", &out],
        &["lib_c/Mat", "differ only in case"],
    ));
    let d = material(root, "con", &[("m_basecolor.png", png(16, 16))]);
    cases.push(compress(&d, &["'con'", "device name Windows reserves"], "a material named as a Windows device"));
    let d = material(root, "ask", &[("m_basecolor.png", png(16, 16)), ("texset.toml", b"name = \"what?\"\n".to_vec())]);
    cases.push(compress(&d, &["'what?'", "could not be written on Windows"], "texset.toml names the material with a '?'"));
    if !is_root() {
        let d = material(root, "unreadable_file", &[("m_roughness.png", png(16, 16))]);
        std::fs::set_permissions(d.join("m_roughness.png"), std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
        cases.push(compress(&d, &["m_roughness.png", "permission denied"], "unreadable file"));
        let d = material(root, "unreadable_folder", &[]);
        std::fs::set_permissions(&d, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
        cases.push(compress(&d, &["unreadable_folder", "permission denied"], "unreadable folder"));
    }

    cases
}

/// Bad option values, checkpoints and start bundles; also makes the good bundle the later cases
/// break, returned beside the cases.
fn option_cases(root: &Path, out: &Path, good_dir: &Path) -> (Vec<Case>, PathBuf) {
    let mut cases = Vec::new();
    let (out, good_dir) = (out.to_path_buf(), good_dir.to_path_buf());
    // --- Options ------------------------------------------------------------------------------
    let with = |name: &str, extra: &[&str], expect: &[&str]| {
        let mut args: Vec<&dyn AsRefOs> = vec![&"compress", &good_dir, &"-o", &out];
        args.extend(extra.iter().map(|s| s as &dyn AsRefOs));
        case(name, &args, expect)
    };
    cases.push(with("budget for an unknown map", &["--budget", "sparkle=3"], &["sparkle"]));
    cases.push(with("budget that is not a number", &["--budget", "roughness=lots"], &["roughness=lots", "not a channel count"]));
    cases.push(with("budget without =", &["--budget", "roughness"], &["roughness", "not kind=n"]));
    let garbage = root.join("garbage.bin");
    std::fs::write(&garbage, b"not a checkpoint and not a bundle").unwrap();
    cases.push(with("--init-from a file that is no bundle", &["--init-from", garbage.to_str().unwrap()], &["garbage.bin", "bad magic"]));
    cases.push(with(
        "--resume from a file that is no checkpoint",
        &["--checkpoint", garbage.to_str().unwrap(), "--resume", "--steps", "5"],
        &["garbage.bin", "not a texset checkpoint"],
    ));

    // A good bundle (and a checkpoint of another set) to break.
    let bundle = root.join("good.texset");
    let checkpoint = root.join("other.ckpt");
    let other = material(root, "other", &[]);
    let made = texset()
        .args(["compress", other.to_str().unwrap(), "-o", bundle.to_str().unwrap(), "--steps", "30", "--checkpoint"])
        .arg(&checkpoint)
        .args(["--checkpoint-secs", "0"])
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    cases.push(with(
        "--resume from another set's checkpoint",
        &["--checkpoint", checkpoint.to_str().unwrap(), "--resume", "--steps", "30"],
        &["other.ckpt", "another set"],
    ));
    let other_shape = material(root, "other_shape", &[("m_normal.png", png_seeded(16, 16, 3)), ("m_height.png", png_seeded(16, 16, 11))]);
    cases.push(case(
        "--init-from a bundle of another shape",
        &[&"compress", &other_shape, &"-o", &out, &"--init-from", &bundle, &"--steps", &"5"],
        &["good.texset", "cannot start from"],
    ));

    (cases, bundle)
}

/// The good bundle broken every way: truncated at every boundary, bits flipped in every section,
/// versions it does not support, a manifest that lies.
fn bundle_cases(root: &Path, bundle: &Path) -> Vec<Case> {
    let mut cases = Vec::new();
    // --- Bundles ------------------------------------------------------------------------------
    let good_bytes = std::fs::read(bundle).unwrap();
    let (table, table_end) = sections(&good_bytes);
    let mut broken: Vec<(String, Vec<u8>, &str)> = vec![
        ("empty bundle".into(), Vec::new(), "truncated"),
        ("bundle with bad magic".into(), [b"NOTABNDL".as_slice(), &good_bytes[8..]].concat(), "bad magic"),
    ];
    for (version, why) in [(0u32, "earlier"), (8, "later"), (u32::MAX, "much later")] {
        let mut b = good_bytes.clone();
        b[8..12].copy_from_slice(&version.to_le_bytes());
        broken.push((format!("bundle of {why} version {version}"), b, "not supported"));
    }
    let mut cuts =
        vec![(4, "inside the magic"), (12, "inside the header"), (16, "after the header"), (16 + 24, "inside the section table")];
    cuts.push((table_end, "before the header checksum"));
    for (tag, offset, size) in &table {
        let tag = String::from_utf8_lossy(tag).into_owned();
        cuts.push((*offset, Box::leak(format!("at the start of {tag}").into_boxed_str())));
        cuts.push((offset + size - 1, Box::leak(format!("one byte short of the end of {tag}").into_boxed_str())));
    }
    for (at, what) in cuts {
        broken.push((format!("bundle cut {what} (byte {at})"), good_bytes[..at].to_vec(), "truncated"));
    }
    let mut flip = |what: String, at: usize, expect: &'static str| {
        let mut b = good_bytes.clone();
        b[at] ^= 0x10;
        broken.push((what, b, expect));
    };
    flip("bit flip in the section count".into(), 13, "");
    flip("bit flip in the section table".into(), 16 + 10, "checksum");
    flip("bit flip in the header checksum".into(), table_end + 1, "checksum");
    for (tag, offset, size) in &table {
        flip(format!("bit flip in section {}", String::from_utf8_lossy(tag)), offset + size / 2, "checksum");
    }
    let manifest = &good_bytes[table[0].1..table[0].1 + table[0].2];
    let text = String::from_utf8(manifest.to_vec()).unwrap();
    let width = text.find("\"width\":").unwrap();
    let end = width + text[width..].find(',').unwrap();
    let huge = format!("{}\"width\":1000000{}", &text[..width], &text[end..]);
    broken.push(("manifest claiming a 1000000-wide grid (checksums right)".into(), with_manifest(&good_bytes, huge.as_bytes()), "invalid"));
    broken.push((
        "manifest that is not JSON (checksums right)".into(),
        with_manifest(&good_bytes, b"{\"grids\": [1, 2"),
        "manifest is malformed",
    ));
    for (i, (what, bytes, expect)) in broken.into_iter().enumerate() {
        let path = root.join(format!("broken_{i}.texset"));
        std::fs::write(&path, bytes).unwrap();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        let args: &[&dyn AsRefOs] = if i % 2 == 0 { &[&"inspect", &path] } else { &[&"decode", &path, &"-o", &root.join("decoded")] };
        let expect: Vec<&str> = [name.as_str(), expect].into_iter().filter(|s| !s.is_empty()).collect();
        cases.push(case(&what, args, &expect));
    }
    cases.push(case("bundle path that is a folder", &[&"inspect", &root.to_path_buf()], &["not a regular file"]));
    // Not opened at all: opening a FIFO blocks until a writer comes, /dev/zero never ends.
    cases.push(case("bundle path that is a device", &[&"inspect", &"/dev/zero"], &["/dev/zero", "not a regular file"]));
    let fifo = root.join("fifo.texset");
    if Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success()) {
        cases.push(case("bundle path that is a FIFO", &[&"inspect", &fifo], &["fifo.texset", "not a regular file"]));
    }
    cases.push(case("missing bundle", &[&"inspect", &root.join("nowhere.texset")], &["nowhere.texset", "no such file"]));

    cases
}

/// Outputs that cannot be written (read-only, a folder, a full disk), and commands given inputs
/// that do not fit.
fn output_cases(root: &Path, good_dir: &Path, bundle: &Path) -> Vec<Case> {
    let mut cases = Vec::new();
    let (good_dir, bundle) = (good_dir.to_path_buf(), bundle.to_path_buf());
    // --- Outputs ------------------------------------------------------------------------------
    let out_case = |name: &str, output: &Path, expect: &[&str]| {
        case(name, &[&"compress", &good_dir, &"-o", &output.to_path_buf(), &"--steps", &"5"], expect)
    };
    cases.push(out_case("output in a read-only file system", Path::new("/proc/texset-out.texset"), &["/proc/texset-out.texset"]));
    let occupied = root.join("occupied.texset");
    std::fs::create_dir_all(&occupied).unwrap();
    cases.push(out_case("output path that is a folder", &occupied, &["occupied.texset", "directory"]));
    cases.push(out_case(
        "output in a missing folder",
        &root.join("missing/deeper/out.texset"),
        &["missing/deeper/out.texset", "no such file"],
    ));
    let mut full = out_case("full disk (simulated)", &bundle, &["good.texset", "no space left"]);
    full.env.push(("TEXSET_FAULT", "disk-full"));
    cases.push(full);
    let mut full_decode =
        case("full disk while decoding (simulated)", &[&"decode", &bundle, &"-o", &root.join("decoded_full")], &["no space left", ".png"]);
    full_decode.env.push(("TEXSET_FAULT", "disk-full"));
    cases.push(full_decode);
    if !is_root() {
        let ro = root.join("read_only");
        std::fs::create_dir_all(&ro).unwrap();
        std::fs::set_permissions(&ro, std::os::unix::fs::PermissionsExt::from_mode(0o555)).unwrap();
        cases.push(out_case("output in a read-only folder", &ro.join("out.texset"), &["read_only", "permission denied"]));
    }
    let originals = root.join("eval_sizes/other");
    std::fs::create_dir_all(&originals).unwrap();
    std::fs::write(originals.join("m_basecolor.png"), png(32, 32)).unwrap();
    cases.push(case("eval against originals of another size", &[&"eval", &originals, &bundle], &["m_basecolor.png", "32x32"]));

    // The UI bench trains while it measures: a library that does not load ends it at once.
    let missing = root.join("no_such_material");
    cases.push(case("bench ui on a folder that is not there", &[&"bench", &"ui", &missing], &["no_such_material", "did not load"]));

    cases
}

#[test]
fn inspect_prints_a_bundles_producer_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let mut bundle = texset_testkit::tiny_bundle();
    bundle.manifest.producer = "evil \u{1b}[2J\u{7} tool".into();
    let path = dir.path().join("evil.texset");
    bundle.write(&path).unwrap();
    let output = texset().arg("inspect").arg(&path).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8(output.stdout).unwrap();
    // The escape sequence and the bell arrive as text, not as control characters.
    assert!(!stdout.contains('\u{1b}') && !stdout.contains('\u{7}'), "{stdout:?}");
    assert!(stdout.contains("evil \\u{1b}[2J\\u{7} tool"), "{stdout}");
}
