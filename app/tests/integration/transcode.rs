//! `texset transcode`: KTX2 and DDS files with full BC mip chains that independent readers (the
//! `ktx2` and `ddsfile` crates) accept, whose blocks decode back close to the bundle's maps.
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::Path;
use std::process::Command;
use texset_core::{
    bundle::Bundle,
    decode::Decoder,
    eval::psnr,
    export::bcn::{self, BcFormat},
    model::full_mip_count,
    set::{MapKind, NormalConvention, decode_texture},
};

fn texset(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_texset")).args(args).output().unwrap()
}

/// Runs `texset` with `args` (and `vars`): whether it succeeded, its stderr and its peak resident
/// memory in bytes (the kernel's count for the child, from `wait4(2)`).
fn texset_peak(args: &[&str], vars: &[(&str, &str)]) -> (bool, String, u64) {
    let dir = tempfile::tempdir().unwrap();
    let stderr_path = dir.path().join("stderr");
    #[expect(clippy::zombie_processes, reason = "reaped by wait4 below, which also reads its resource usage")]
    let child = Command::new(env!("CARGO_BIN_EXE_texset"))
        .args(args)
        .envs(vars.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct.
    #[expect(unsafe_code, reason = "wait4(2) has no safe wrapper in std; it writes only to the two locals passed")]
    let (pid, rusage) = unsafe {
        let mut rusage: libc::rusage = std::mem::zeroed();
        (libc::wait4(child.id() as libc::pid_t, &raw mut status, 0, &raw mut rusage), rusage)
    };
    assert_eq!(pid, child.id() as libc::pid_t, "wait4 failed");
    let success = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    // Linux reports `ru_maxrss` in KiB.
    (success, std::fs::read_to_string(&stderr_path).unwrap(), rusage.ru_maxrss as u64 * 1024)
}

/// A sample library of `size`² maps under `root`, and its `wood` compressed in `steps` steps:
/// the library and the bundle's path.
fn wood_bundle(root: &Path, size: u32, seed: u64, steps: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let library = root.join("library");
    texset::synth::write_sample_textures(&library, size, seed).unwrap();
    let bundle = root.join("wood.texset");
    let run = texset(&["compress", library.join("wood").to_str().unwrap(), "-o", bundle.to_str().unwrap(), "--steps", steps]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    (library, bundle)
}

#[test]
fn transcoded_files_validate_and_decode_close_to_the_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let (library, bundle) = wood_bundle(tmp.path(), 48, 11, "200");
    let wood = library.join("wood");
    let b = Bundle::read(&bundle).unwrap();
    let decoder = Decoder::new(&b);
    let maps = decoder.decode_material(0).unwrap();
    let entries = &b.manifest.materials[0].maps;

    for (format, extension) in [("ktx2", "ktx2"), ("bc1", "ktx2"), ("dds", "dds")] {
        let out = tmp.path().join(format);
        let run = texset(&[
            "transcode",
            bundle.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--format",
            format,
            "--originals",
            wood.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(run.status.success(), "{format}: {stderr}");
        assert!(stderr.contains("against the original"), "{stderr}");
        for (entry, map) in entries.iter().zip(&maps) {
            let path = out.join("wood").join(format!("wood_{}.{extension}", entry.info.kind));
            let bytes = std::fs::read(&path).unwrap();
            let expected = if format == "bc1" {
                match map.channels {
                    1 => BcFormat::Bc4,
                    2 => BcFormat::Bc5,
                    _ => BcFormat::Bc1,
                }
            } else {
                BcFormat::for_map(entry.info.kind, map.channels)
            };
            let level0 = if extension == "ktx2" {
                ktx2_level0(&path, &bytes, map.width, map.height)
            } else {
                dds_level0(&bytes, map.width, map.height)
            };
            let back = bcn::decode(&level0, map.width, map.height, map.channels, entry.info.kind, expected);
            let psnr = psnr(&map.values, &back);
            // BC7/BC4 keep 40+ dB; BC1 and rebuilt-z BC5 normals less.
            let floor = match (expected, entry.info.kind) {
                (BcFormat::Bc1, _) | (BcFormat::Bc5, MapKind::Normal) => 28.0,
                _ => 36.0,
            };
            assert!(psnr > floor, "{format} {}: level 0 {psnr:.2} dB against the bundle's decode", entry.info.kind);
        }
    }
}

/// Level 0 of a KTX2 file, after checking it with the `ktx2` crate: dimensions, a full mip chain
/// with the right block counts, and a basic data format descriptor with 4x4 blocks.
fn ktx2_level0(path: &Path, bytes: &[u8], width: u32, height: u32) -> Vec<u8> {
    let reader = ktx2::Reader::new(bytes).unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
    let header = reader.header();
    assert_eq!((header.pixel_width, header.pixel_height, header.face_count), (width, height, 1));
    let full_chain = 32 - width.max(height).leading_zeros();
    assert_eq!(header.level_count, full_chain, "{}", path.display());
    let block_bytes = match header.format.unwrap().value() {
        131 | 132 | 139 => 8,
        _ => 16,
    };
    for (i, level) in reader.levels().enumerate() {
        let (w, h) = ((width >> i).max(1), (height >> i).max(1));
        assert_eq!(level.data.len(), (w.div_ceil(4) * h.div_ceil(4)) as usize * block_bytes, "level {i} of {}", path.display());
    }
    let dfd = reader.basic_dfd().unwrap();
    assert_eq!(dfd.texel_block_dimensions.map(std::num::NonZeroU8::get), [4, 4, 1, 1]);
    reader.levels().next().unwrap().data.to_vec()
}

/// Level 0 of a DDS file, after checking it with the `ddsfile` crate.
fn dds_level0(bytes: &[u8], width: u32, height: u32) -> Vec<u8> {
    let dds = ddsfile::Dds::read(bytes).unwrap();
    assert_eq!((dds.get_width(), dds.get_height()), (width, height));
    assert_eq!(dds.get_num_mipmap_levels(), 32 - width.max(height).leading_zeros());
    assert!(dds.get_dxgi_format().is_some());
    let size = dds.get_main_texture_size().unwrap() as usize;
    dds.get_data(0).unwrap()[..size].to_vec()
}

/// A bundle with a mip chain transcodes every level from its own latents: level 1 of the KTX2
/// file decodes close to the bundle's own level 1, not to a box filter of level 0.
#[test]
fn a_mip_chain_bundle_transcodes_its_own_levels() {
    let tmp = tempfile::tempdir().unwrap();
    let library = tmp.path().join("library");
    texset::synth::write_sample_textures(&library, 64, 11).unwrap();
    let wood = library.join("wood");
    let bundle = tmp.path().join("wood.texset");
    let run = texset(&["compress", wood.to_str().unwrap(), "-o", bundle.to_str().unwrap(), "--steps", "150", "--mips"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(stderr.contains("mip chain (PSNR against box-filtered references"), "{stderr}");
    let b = Bundle::read(&bundle).unwrap();
    assert_eq!(b.manifest.mip_levels, 7);
    let decoder = Decoder::new(&b);
    let out = tmp.path().join("ktx2");
    let run = texset(&["transcode", bundle.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(stderr.contains("decoded from the bundle's mip chain"), "{stderr}");
    for (k, entry) in b.manifest.materials[0].maps.iter().enumerate() {
        let path = out.join("wood").join(format!("wood_{}.ktx2", entry.info.kind));
        let bytes = std::fs::read(&path).unwrap();
        let reader = ktx2::Reader::new(&bytes[..]).unwrap();
        assert_eq!(reader.header().level_count, full_mip_count(entry.info.width, entry.info.height));
        let level1 = reader.levels().nth(1).unwrap().data.to_vec();
        let own = decoder.decode_map_level(0, k, 1).unwrap();
        let format = BcFormat::for_map(entry.info.kind, own.channels);
        let back = bcn::decode(&level1, own.width, own.height, own.channels, entry.info.kind, format);
        let psnr = psnr(&own.values, &back);
        let floor = if entry.info.kind == MapKind::Normal { 28.0 } else { 36.0 };
        assert!(psnr > floor, "{}: level 1 {psnr:.2} dB against the bundle's own level 1", entry.info.kind);
    }
}

/// Every file of `dir` (recursively) with its bytes and modification time.
fn snapshot(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>, std::time::SystemTime)> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(snapshot(&path));
        } else {
            files.push((path.clone(), std::fs::read(&path).unwrap(), std::fs::metadata(&path).unwrap().modified().unwrap()));
        }
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    files
}

/// `decode` and `transcode` name their outputs as sources are named: pointed at the folder of a
/// material's sources they refuse, naming the file, before anything is written, and replace
/// only their own files, unchanged since they wrote them, unless `--force` is given. Before,
/// nothing checked: `texset decode` into the library replaced the sources with lossy decodes
/// (issue 67).
#[test]
fn decode_and_transcode_never_replace_what_texset_did_not_write() {
    let tmp = tempfile::tempdir().unwrap();
    let (library, bundle) = wood_bundle(tmp.path(), 16, 5, "20");
    let (bundle, lib) = (bundle.to_str().unwrap(), library.to_str().unwrap());
    let sources = snapshot(&library);
    for args in [&["decode", bundle, "-o", lib][..], &["transcode", bundle, "-o", lib, "--format", "png"][..]] {
        let run = texset(args);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(!run.status.success(), "{args:?} replaced sources: {stderr}");
        assert!(stderr.contains("texset did not write it") && stderr.contains("--force") && stderr.contains("wood_"), "{stderr}");
        assert_eq!(snapshot(&library), sources, "{args:?} changed the library");
    }
    // KTX2 files are named apart from the sources: written beside them, sources untouched.
    let run = texset(&["transcode", bundle, "-o", lib]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let after: Vec<_> = snapshot(&library).into_iter().filter(|(p, _, _)| sources.iter().any(|(q, _, _)| q == p)).collect();
    assert_eq!(after, sources, "the KTX2 transcode changed a source");
    // Its own outputs: written again freely; edited since, refused; --force replaces.
    let out = tmp.path().join("decoded");
    let out_str = out.to_str().unwrap();
    for _ in 0..2 {
        let run = texset(&["decode", bundle, "-o", out_str]);
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    }
    let edited =
        std::fs::read_dir(out.join("wood")).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|e| e == "png"));
    let edited = edited.unwrap();
    std::fs::write(&edited, b"retouched").unwrap();
    let run = texset(&["decode", bundle, "-o", out_str]);
    assert!(!run.status.success() && String::from_utf8_lossy(&run.stderr).contains(edited.file_name().unwrap().to_str().unwrap()));
    assert_eq!(std::fs::read(&edited).unwrap(), b"retouched");
    let run = texset(&["decode", bundle, "-o", out_str, "--force"]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert_ne!(std::fs::read(&edited).unwrap(), b"retouched");
}

/// A bundle of a few KB whose maps declare over 8 GiB of decoded values (copies of the test
/// kit's material at 4096², within the reader's limits) is refused by `decode` and `transcode`
/// before they decode or write anything, naming the limit (issue 67); the studio's and Bevy's
/// 1 GiB limit refuses it too, and a limit raised above its cost lets it through.
#[test]
fn a_bundle_over_the_decode_budget_is_refused_at_once() {
    use texset_core::{bundle::limits::MAX_LIBRARY_VALUES, decode::DecodeLimits};
    let bundle = texset_testkit::over_budget_bundle();
    let values: u64 =
        bundle.manifest.materials.iter().flat_map(|m| &m.maps).map(|m| u64::from(m.info.width * m.info.height * m.info.channels)).sum();
    assert!(values * 4 > 8 << 30 && values <= MAX_LIBRARY_VALUES, "{values} values");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forged.texset");
    bundle.write(&path).unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() < 64 << 10);

    for command in ["decode", "transcode"] {
        let out = dir.path().join(command);
        let start = std::time::Instant::now();
        let (success, stderr, peak_bytes) = texset_peak(&[command, path.to_str().unwrap(), "-o", out.to_str().unwrap()], &[]);
        let elapsed = start.elapsed();
        assert!(!success, "{command} decoded a bundle over its limit");
        assert!(stderr.contains("forged.texset") && stderr.contains("over this decoder's limit"), "{command}: {stderr}");
        assert!(!out.exists(), "{command} wrote {} before refusing", out.display());
        println!("{command}: refused in {elapsed:?}, peak {} MB", peak_bytes >> 20);
        assert!(elapsed < std::time::Duration::from_secs(5), "{command} took {elapsed:?} to refuse");
        assert!(peak_bytes < 200 << 20, "{command} held {} MB to refuse", peak_bytes >> 20);
    }
    // Level 0's values, and a stored mip chain's (a third more at most).
    let (bytes, _) = DecodeLimits::cost(&bundle.manifest);
    assert!(bytes >= values * 4 && bytes <= values * 4 * 4 / 3 + (4 << 20), "{bytes} bytes for {values} level-0 values");
    assert!(Decoder::with_limits(&bundle, DecodeLimits::INTERACTIVE).is_err());
    assert!(Decoder::with_limits(&bundle, DecodeLimits::COMMAND_LINE).is_err());
    assert!(Decoder::with_limits(&bundle, DecodeLimits::COMMAND_LINE.with_decoded_gib(bytes.div_ceil(1 << 30))).is_ok());
}

/// `texset decode` writes PNG maps in bands of rows: a material whose two maps are 4096² (a few
/// KB of bundle) decodes in memory that does not grow with the maps, to the same bytes as the
/// whole-map path (`--gpu` without an adapter falls back to the CPU decoding each map whole), which
/// holds every map's f32 values at once (issue 67).
#[test]
fn decode_writes_large_maps_in_bands_in_bounded_memory() {
    let mut bundle = texset_testkit::tiny_bundle();
    // Material m's maps at 4096²; n's stay small (the decoder's outputs serve both).
    for map in &mut bundle.manifest.materials[0].maps {
        (map.info.width, map.info.height) = (4096, 4096);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.texset");
    bundle.write(&path).unwrap();
    let whole_values: u64 = bundle.manifest.materials[0].maps.iter().map(|m| 4096 * 4096 * u64::from(m.info.channels)).sum();
    let mut peaks = Vec::new();
    for (name, args, vars) in [("bands", vec![], vec![]), ("whole", vec!["--gpu"], vec![("TEXSET_FAULT", "gpu-no-adapter")])] {
        let out = dir.path().join(name);
        let mut all = vec!["decode", path.to_str().unwrap(), "-o", out.to_str().unwrap()];
        all.extend(args);
        let start = std::time::Instant::now();
        let (success, stderr, peak_bytes) = texset_peak(&all, &vars);
        assert!(success, "{name}: {stderr}");
        println!("{name}: {:?}, peak {} MB", start.elapsed(), peak_bytes >> 20);
        peaks.push(peak_bytes);
    }
    for map in ["m_basecolor.png", "m_roughness.png"] {
        let bands = std::fs::read(dir.path().join("bands/m").join(map)).unwrap();
        let whole = std::fs::read(dir.path().join("whole/m").join(map)).unwrap();
        assert!(bands == whole, "{map}: the bands' PNG differs from the whole map's");
    }
    // The whole path holds every map's f32 values (256 MiB here); the bands a few MiB of them.
    assert!(peaks[1] > whole_values * 4, "the whole path peaked at {} MB", peaks[1] >> 20);
    assert!(peaks[0] < 200 << 20, "decoding in bands peaked at {} MB", peaks[0] >> 20);
}

/// Float maps end to end (issue 67): the test kit's `n/height` is a one-channel float map whose
/// values span −0.5..2.5. `decode` writes it as a one-channel EXR at that scale (it was refused:
/// "1-channel float maps cannot be written as EXR"); `transcode` refuses it by name, since BC
/// blocks hold 0..1, instead of writing its stored values as if they were its values.
#[test]
fn float_maps_decode_at_their_scale_and_transcode_refuses_what_bc_cannot_hold() {
    let bundle = texset_testkit::tiny_bundle();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.texset");
    bundle.write(&path).unwrap();
    let decoded = dir.path().join("decoded");
    let run = texset(&["decode", path.to_str().unwrap(), "-o", decoded.to_str().unwrap()]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let exr = std::fs::read(decoded.join("n/n_height.exr")).unwrap();
    let height = decode_texture(&exr, Path::new("n_height.exr"), MapKind::Height, NormalConvention::OpenGl).unwrap();
    assert_eq!(height.info.channels, 1);
    let [low, high] = height.info.channel_ranges[0];
    assert!(low >= -0.5 - 1e-4 && high <= 2.5 + 1e-4 && high - low > 0.1, "decoded at {low}..{high}");

    let out = dir.path().join("ktx2");
    let run = texset(&["transcode", path.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "transcode wrote a float map BC cannot hold");
    assert!(stderr.contains("n/height") && stderr.contains("-0.5..2.5") && stderr.contains("tiny.texset"), "{stderr}");
}
