//! Fuzzing on stable, in CI: the fuzz targets' properties (`texset_testkit::fuzz`, which
//! `fuzz/fuzz_targets/*.rs` call under libFuzzer on nightly) run here on forged bundles of every
//! format version, on seeds and mutations of them, and on every input kept in
//! `tests/data/fuzz-regressions/<target>/` or found in a local `fuzz/corpus/<target>/`
//! (docs/reliability.md, "Fuzzing").
#![allow(clippy::unwrap_used)]

use std::path::Path;
use texset_testkit::{forge_bundle, fuzz};

/// `count` pseudo-random byte strings of `len` bytes, deterministic in `seed`.
fn random_inputs(seed: u64, count: usize, len: usize) -> Vec<Vec<u8>> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) as u8
    };
    (0..count).map(|_| (0..len).map(|_| next()).collect()).collect()
}

/// Every input kept for `target`: the regressions in the repository and a local corpus (made by
/// `fuzz/make_seeds.sh` and grown by the fuzzer), when there is one.
fn kept_inputs(target: &str) -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut inputs = Vec::new();
    for dir in [root.join("tests/data/fuzz-regressions").join(target), root.join("fuzz/corpus").join(target)] {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.filter_map(Result::ok) {
            inputs.push(std::fs::read(entry.path()).unwrap());
        }
    }
    inputs
}

/// Three thousand bundles forged from random bytes: nine in ten or more are valid, every format
/// version (1 to 7: colour transforms, pyramids, fp16/E4M3/MXINT8 weights, mip groups, the hard
/// GELU, corner reads) is among them, and each reads back, fits the interactive budget and decodes
/// whole; every eighth also goes through texset-bevy's images (`bundle_images`), BC or not.
#[test]
fn forged_bundles_of_every_version_decode_whole() {
    let start = std::time::Instant::now();
    let inputs = random_inputs(0x00F0_96ED, 3000, 160);
    let mut versions = [0usize; 8];
    for (i, data) in inputs.iter().enumerate() {
        if let Some(version) = fuzz::forged_bundle(data) {
            versions[version as usize] += 1;
            if i % 8 == 0 {
                let bytes = forge_bundle(data).unwrap().to_bytes().unwrap().0;
                fuzz::bundle_images(&[[0u8, 1, 2, 4, 5, 6][i / 8 % 6]].iter().copied().chain(bytes).collect::<Vec<u8>>());
            }
        }
    }
    let valid: usize = versions.iter().sum();
    println!("{valid} of {} forged bundles valid, by version {:?}, in {:?}", inputs.len(), &versions[1..], start.elapsed());
    assert!(valid * 10 >= inputs.len() * 9, "only {valid} of {} forged bundles are valid", inputs.len());
    assert!(versions[1..].iter().all(|&n| n > 0), "a format version never forged: {:?}", &versions[1..]);
}

/// A fuzz target's name, seed, property and how many mutations of the seed to run.
type Target<'a> = (&'a str, &'a [u8], fn(&[u8]), usize);

/// The other targets' properties on their seeds, a few hundred mutations of each, and every kept
/// input: texset.toml, checkpoints, batch records and summaries, and the images step on bytes
/// that are not a forged bundle.
#[test]
fn fuzz_properties_hold_on_seeds_mutations_and_kept_inputs() {
    let toml = b"name = \"oak\"\nnormal = \"directx\"\n[maps]\nbasecolor = \"m_basecolor.png\"\n".to_vec();
    let checkpoint = fuzz::checkpoint_seed();
    let record = br#"{"material":"m","status":"compressed","input_sha256":"00","bundle_sha256":"11","bundle_bytes":5,"bits_per_texel":1.0,"pooled_psnr_db":30.0,"train_secs":1.0}"#;
    let summary = br#"{"library":"/l","shard":{"index":0,"count":70000},"library_materials":1,"jobs":1,"wall_secs":1.0,"units":[]}"#;
    let batch: Vec<u8> = record.iter().copied().chain([0]).chain(summary.iter().copied()).collect();
    let bundle = forge_bundle(&random_inputs(7, 1, 160)[0]).unwrap().to_bytes().unwrap().0;
    let images: Vec<u8> = [5u8].into_iter().chain(bundle).collect();

    let targets: [Target<'_>; 4] = [
        ("folder_config", &toml, fuzz::folder_config, 200),
        ("checkpoint", &checkpoint, fuzz::checkpoint, 400),
        ("batch_files", &batch, fuzz::batch_files, 200),
        ("bundle_images", &images, fuzz::bundle_images, 200),
    ];
    for (name, seed, property, count) in targets {
        let start = std::time::Instant::now();
        let kept = kept_inputs(name);
        property(seed);
        for input in fuzz::mutations(seed, count).iter().chain(&kept) {
            property(input);
        }
        println!("{name}: the seed, {count} mutations and {} kept inputs in {:?}", kept.len(), start.elapsed());
    }
    for input in kept_inputs("forged_bundle") {
        let _ = fuzz::forged_bundle(&input);
    }
}

/// texset-bevy's loader step (`export::bundle_images`, with the loader's default budget) refuses
/// a bundle of a few KB that asks for over 8 GiB of decoded maps at once: within a second and
/// 200 MB, before it decodes anything (issue 67).
#[test]
fn the_images_step_refuses_a_bundle_over_the_budget_at_once() {
    use texset_core::{
        decode::DecodeLimits,
        export::{ImageMips, bundle_images},
    };
    let bytes = texset_testkit::over_budget_bundle().to_bytes().unwrap().0;
    assert!(bytes.len() < 64 << 10, "{} bytes", bytes.len());
    let start = std::time::Instant::now();
    let error = bundle_images(&bytes, DecodeLimits::INTERACTIVE, true, ImageMips::Bundle).unwrap_err().to_string();
    let elapsed = start.elapsed();
    assert!(error.contains("over this decoder's limit"), "{error}");
    assert!(elapsed < std::time::Duration::from_secs(1), "refused in {elapsed:?}");
    if let Some(peak) = texset_testkit::peak_rss_bytes() {
        assert!(peak < 200 << 20, "peaked at {} MB", peak >> 20);
    }
}
