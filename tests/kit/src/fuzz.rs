//! The fuzz targets' properties, one function each: `fuzz/fuzz_targets/*.rs` call them on what
//! libFuzzer makes (nightly), and CI's stable tests (`tests/tests/integration/forged.rs`) on
//! seeds, mutations of them and the inputs kept in `tests/data/fuzz-regressions/<target>/`. Each
//! panics when its property fails; an input that is refused with a clear error passes.

use crate::forge_bundle;
#[cfg(feature = "ingest")]
use texset_core::set::{IngestReport, load_material};
use texset_core::{
    bundle::Bundle,
    decode::{DecodeLimits, Decoder},
    export::{ImageMips, TexelFormat, bundle_images as images_of},
};
#[cfg(feature = "train")]
use texset_core::{
    drivers::batch::{BatchJob, Shard, merge},
    internal_tests::{checkpoint_seed_bytes, checkpoint_step_from_bytes},
    options::CompressOptions,
};

/// `forged_bundle`: a bundle forged from `data` ([`forge_bundle`]) writes, reads back to the same
/// bytes, is within the interactive decode budget and decodes whole, every value finite. Returns
/// its format version (`None`: the forge made none).
#[must_use]
pub fn forged_bundle(data: &[u8]) -> Option<u32> {
    let bundle = forge_bundle(data)?;
    let (bytes, _) = bundle.to_bytes().expect("a forged bundle writes");
    let read = Bundle::from_bytes(&bytes).expect("a forged bundle reads back");
    assert!(read.to_bytes().expect("it writes again").0 == bytes, "a forged bundle does not read back to its bytes");
    let decoder = Decoder::with_limits(&read, DecodeLimits::INTERACTIVE).expect("a forged bundle is within the interactive budget");
    for (m, material) in read.manifest.materials.iter().enumerate() {
        let maps = decoder.decode_material(m).expect("a forged material decodes");
        for (map, entry) in maps.iter().zip(&material.maps) {
            assert_eq!(
                map.values.len(),
                (entry.info.width * entry.info.height * entry.info.channels) as usize,
                "{}/{}",
                material.name,
                entry.info.kind
            );
            assert!(map.values.iter().all(|v| v.is_finite()), "{}/{} decodes to a non-finite value", material.name, entry.info.kind);
        }
    }
    Some(u32::from_le_bytes(bytes[8..12].try_into().expect("a header")))
}

/// `bundle_images`: the first byte picks the mips and BC or not; the rest, as a bundle's bytes,
/// gives texset-bevy's images (texset-core's `export::bundle_images`) or an error, and every
/// image holds the bytes its size, format and levels say.
pub fn bundle_images(data: &[u8]) {
    let Some((&selector, bytes)) = data.split_first() else { return };
    let mips = [ImageMips::Bundle, ImageMips::Generated, ImageMips::None][usize::from(selector % 3)];
    let Ok(materials) = images_of(bytes, DecodeLimits::INTERACTIVE, selector & 4 != 0, mips) else { return };
    for image in materials.iter().flat_map(|m| m.maps.iter().chain(&m.metallic_roughness)) {
        let expected: usize = (0..image.mip_levels)
            .map(|l| {
                let (w, h) = ((image.width >> l).max(1) as usize, (image.height >> l).max(1) as usize);
                match image.format {
                    TexelFormat::Bc { format, .. } => w.div_ceil(4) * h.div_ceil(4) * format.block_bytes(),
                    TexelFormat::R8Unorm => w * h,
                    TexelFormat::Rg8Unorm | TexelFormat::R16Float => w * h * 2,
                    TexelFormat::Rgba8Unorm | TexelFormat::Rgba8UnormSrgb | TexelFormat::Rg16Float => w * h * 4,
                    TexelFormat::Rgba16Float => w * h * 8,
                }
            })
            .sum();
        assert_eq!(image.data.len(), expected, "{}x{} {:?} with {} levels", image.width, image.height, image.format, image.mip_levels);
    }
}

/// `folder_config`: `data` as a material folder's `texset.toml` (beside one 4×4 base colour map)
/// loads, or is refused with an error that names `texset.toml`.
#[cfg(feature = "ingest")]
pub fn folder_config(data: &[u8]) {
    let dir = TempDir::new();
    let folder = dir.0.join("m");
    std::fs::create_dir(&folder).expect("a material folder");
    image::RgbImage::from_fn(4, 4, |x, y| image::Rgb([(x * 60) as u8, (y * 60) as u8, 90]))
        .save(folder.join("m_basecolor.png"))
        .expect("a map");
    std::fs::write(folder.join("texset.toml"), data).expect("the config");
    let mut report = IngestReport::default();
    if let Err(e) = load_material(&folder, &mut report) {
        let message = e.to_string();
        assert!(message.contains("texset.toml") || message.contains(&*folder.to_string_lossy()), "an error that names no file: {message}");
    }
}

/// The fingerprint and model of the checkpoints [`checkpoint`] reads: the test kit's bundle's.
#[cfg(feature = "train")]
pub const CHECKPOINT_FINGERPRINT: &str = "texset-fuzz";

/// `checkpoint`: `data` as a checkpoint of a 1,000-step run of the test kit's model
/// ([`crate::tiny_bundle`]) resumes at a step within the run, or is refused naming the file.
#[cfg(feature = "train")]
pub fn checkpoint(data: &[u8]) {
    let shape = crate::tiny_bundle().model_params();
    let path = std::path::Path::new("fuzz.ckpt");
    match checkpoint_step_from_bytes(data, path, CHECKPOINT_FINGERPRINT, 1000, &shape) {
        Ok(step) => assert!(step <= 1000, "resumes at step {step} of 1000"),
        Err(e) => assert!(e.to_string().contains("fuzz.ckpt"), "an error that names no file: {e}"),
    }
}

/// A checkpoint [`checkpoint`] resumes from (at step 400): a seed.
#[cfg(feature = "train")]
#[must_use]
pub fn checkpoint_seed() -> Vec<u8> {
    checkpoint_seed_bytes(CHECKPOINT_FINGERPRINT, 400, &crate::tiny_bundle().model_params())
}

/// `batch_files`: `data`, split at its first NUL, as a material's batch record and as a shard's
/// summary in an output folder, merged against a library of one material `m`: the merge
/// completes or lists the gap, names bundles by folder, and never fails on what the files say.
#[cfg(feature = "train")]
pub fn batch_files(data: &[u8]) {
    let (record, summary) = data.iter().position(|&b| b == 0).map_or((data, &[][..]), |at| (&data[..at], &data[at + 1..]));
    let dir = TempDir::new();
    let (library, out) = (dir.0.join("library"), dir.0.join("out"));
    std::fs::create_dir_all(library.join("m")).expect("a material folder");
    std::fs::create_dir_all(&out).expect("an output folder");
    image::RgbImage::from_fn(4, 4, |x, y| image::Rgb([(x * 60) as u8, (y * 60) as u8, 90]))
        .save(library.join("m/m_basecolor.png"))
        .expect("a map");
    std::fs::write(out.join("m.texset.json"), record).expect("the record");
    std::fs::write(out.join("summary-shard-0-of-1.json"), summary).expect("the summary");
    let options = CompressOptions::default();
    let job = BatchJob {
        library: &library,
        out_dir: &out,
        options: &options,
        bits_per_texel: None,
        shard: Shard::ALL,
        only: None,
        cache_dir: None,
    };
    let merged = merge(&job).expect("a merge reads whatever the files say");
    assert_eq!(merged.library_materials, 1);
    assert!(merged.units.iter().all(|u| u.material == "m"), "a unit named by its record, not its folder");
    assert_eq!(merged.complete, merged.gaps.is_empty());
    assert!(merged.missing_shards.len() <= 1, "{} missing shards for one material", merged.missing_shards.len());
}

/// A folder of its own under the system's temporary folder, removed when dropped (the kit does
/// without the `tempfile` crate, which the fuzz workspace does not lock).
#[cfg(feature = "ingest")]
struct TempDir(std::path::PathBuf);

#[cfg(feature = "ingest")]
impl TempDir {
    fn new() -> Self {
        static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("texset-fuzz-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("a temporary folder");
        Self(path)
    }
}

#[cfg(feature = "ingest")]
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Mutations of `seed` for the stable stand-ins: bit flips, bytes set to edge values, cuts and
/// extensions, `count` of them, deterministic in `count`.
#[must_use]
pub fn mutations(seed: &[u8], count: usize) -> Vec<Vec<u8>> {
    let mut state = 0x5EED_u64 ^ seed.len() as u64;
    let mut next = move || {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize
    };
    (0..count)
        .map(|i| {
            let mut m = seed.to_vec();
            let at = if m.is_empty() { 0 } else { next() % m.len() };
            match i % 5 {
                0 if !m.is_empty() => m[at] ^= 1 << (next() % 8),
                1 if !m.is_empty() => m[at] = [0, 0xFF, 0x7F, 0x80, b'9', b'"', b'-'][next() % 7],
                2 => m.truncate(at),
                3 => m.extend((0..=next() % 16).map(|_| next() as u8)),
                _ => {
                    for _ in 0..4 {
                        if !m.is_empty() {
                            let k = next() % m.len();
                            m[k] = next() as u8;
                        }
                    }
                }
            }
            m
        })
        .collect()
}
