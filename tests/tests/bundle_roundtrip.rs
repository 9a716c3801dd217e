//! Bundle round trip and rejection of corrupted bytes.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use texset_core::bundle::{Bundle, BundleError};
use texset_core::{Cancel, CompressOptions, NoProgress, compress};

fn small_bundle() -> Vec<u8> {
    let set = common::small_set(32);
    let options = CompressOptions { steps: 20, batch_texels: 1024, ..CompressOptions::default() };
    compress(&set, &options, &NoProgress, &Cancel::new()).unwrap().bundle_bytes
}

#[test]
fn bundle_round_trips_bit_exactly() {
    let bytes = small_bundle();
    let bundle = Bundle::from_bytes(&bytes).unwrap();
    let (again, _) = bundle.to_bytes().unwrap();
    assert_eq!(bytes, again, "re-serialised bundle differs");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.texset");
    bundle.write(&path).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(Bundle::read(&path).unwrap(), bundle);
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = small_bundle();
    for len in 0..bytes.len() {
        assert!(Bundle::from_bytes(&bytes[..len]).is_err(), "truncated to {len} bytes was accepted");
    }
}

#[test]
fn bit_flips_are_detected() {
    let bytes = small_bundle();
    // Flip one bit at many positions spread over every section (and the header).
    let step = (bytes.len() / 997).max(1);
    let mut checked = 0;
    for at in (0..bytes.len()).step_by(step).chain(0..64) {
        for bit in [0, 3, 7] {
            let mut b = bytes.clone();
            b[at] ^= 1 << bit;
            assert!(Bundle::from_bytes(&b).is_err(), "bit {bit} of byte {at} flipped was accepted");
            checked += 1;
        }
    }
    assert!(checked > 1000);
}

#[test]
fn version_and_magic_are_checked() {
    let bytes = small_bundle();
    let mut b = bytes.clone();
    b[8] = 3;
    assert!(matches!(Bundle::from_bytes(&b), Err(BundleError::UnsupportedVersion { found: 3, supported: 2 })));
    b[8] = 0;
    assert!(matches!(Bundle::from_bytes(&b), Err(BundleError::UnsupportedVersion { found: 0, supported: 2 })));
    let mut b = bytes;
    b[0] = b'X';
    assert!(matches!(Bundle::from_bytes(&b), Err(BundleError::BadMagic)));
}

#[test]
fn hostile_manifest_is_rejected_before_allocation() {
    // A valid container whose manifest claims a 1-million-squared grid: rejected by validation.
    let bytes = small_bundle();
    let mut bundle = Bundle::from_bytes(&bytes).unwrap();
    bundle.manifest.grids[0].width = 1_000_000;
    bundle.manifest.grids[0].height = 1_000_000;
    assert!(bundle.to_bytes().is_err(), "writer accepted a hostile manifest");
    assert!(Bundle::validate_manifest(&bundle.manifest).is_err());
}

/// Builds a container with valid checksums around arbitrary section payloads.
fn forge(manifest: &[u8], latents: &[u8], weights: &[u8]) -> Vec<u8> {
    let sections: [(&[u8; 4], &[u8]); 3] = [(b"MANI", manifest), (b"LATN", latents), (b"MLPW", weights)];
    let header_len = 16 + 24 * 3 + 4;
    let mut out = Vec::new();
    out.extend_from_slice(&texset_core::bundle::MAGIC);
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&3u32.to_le_bytes());
    let mut offset = header_len as u64;
    for (tag, data) in &sections {
        out.extend_from_slice(*tag);
        out.extend_from_slice(&crc32fast::hash(data).to_le_bytes());
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&(data.len() as u64).to_le_bytes());
        offset += data.len() as u64;
    }
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    for (_, d) in &sections {
        out.extend_from_slice(d);
    }
    out
}

#[test]
fn forged_hostile_bundles_are_rejected_by_the_reader() {
    let bytes = small_bundle();
    let bundle = Bundle::from_bytes(&bytes).unwrap();
    // The forger reproduces a real bundle exactly (so the cases below differ only where intended).
    let manifest = serde_json::to_vec(&bundle.manifest).unwrap();
    let start = |tag: &[u8; 4]| -> (usize, usize) {
        let n = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
        (0..n)
            .map(|i| &bytes[16 + 24 * i..16 + 24 * (i + 1)])
            .find(|e| &e[..4] == tag)
            .map(|e| {
                (u64::from_le_bytes(e[8..16].try_into().unwrap()) as usize, u64::from_le_bytes(e[16..24].try_into().unwrap()) as usize)
            })
            .unwrap()
    };
    let (lo, ll) = start(b"LATN");
    let (wo, wl) = start(b"MLPW");
    let latents = &bytes[lo..lo + ll];
    let weights = &bytes[wo..wo + wl];
    assert_eq!(forge(&manifest, latents, weights), bytes);

    let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
    let mut m = bundle.manifest.clone();
    m.grids[0].width = 1_000_000;
    m.grids[0].height = 1_000_000;
    cases.push(("million-squared grid", forge(&serde_json::to_vec(&m).unwrap(), latents, weights)));
    let mut m = bundle.manifest.clone();
    m.grids[0].bits = 9;
    cases.push(("9-bit latents", forge(&serde_json::to_vec(&m).unwrap(), latents, weights)));
    let mut m = bundle.manifest.clone();
    m.layers[0].outputs = 1 << 30;
    cases.push(("huge layer", forge(&serde_json::to_vec(&m).unwrap(), latents, weights)));
    let mut m = bundle.manifest.clone();
    m.materials[0].maps[0].latent_channels = vec![9999];
    cases.push(("budget out of range", forge(&serde_json::to_vec(&m).unwrap(), latents, weights)));
    let mut m = bundle.manifest.clone();
    m.materials[0].maps[0].output_offset = 5;
    cases.push(("overlapping outputs", forge(&serde_json::to_vec(&m).unwrap(), latents, weights)));
    for bad_name in ["../escape", "/abs", "a\\b", "", "..", "tab\there"] {
        let mut m = bundle.manifest.clone();
        m.materials[0].name = bad_name.into();
        cases.push(("unsafe material name", forge(&serde_json::to_vec(&m).unwrap(), latents, weights)));
    }
    let mut m = bundle.manifest.clone();
    m.materials[0].maps[1].kind = m.materials[0].maps[0].kind;
    cases.push(("two maps of one kind", forge(&serde_json::to_vec(&m).unwrap(), latents, weights)));
    let mut m = bundle.manifest.clone();
    m.materials[0].maps[0].width = 16_384;
    m.materials[0].maps[0].height = 16_384;
    m.materials[0].maps[0].channels = 4;
    m.materials[0].maps[0].channel_ranges = vec![[0.0, 1.0]; 4];
    cases.push(("decodes to gigabytes", forge(&serde_json::to_vec(&m).unwrap(), latents, weights)));
    cases.push(("manifest not JSON", forge(b"{not json", latents, weights)));
    cases.push(("short latents", forge(&manifest, &latents[..latents.len() - 1], weights)));
    cases.push(("long weights", forge(&manifest, latents, &[weights, &[0u8; 4]].concat())));
    let mut nan_weights = weights.to_vec();
    let n = nan_weights.len();
    nan_weights[n - 4..].copy_from_slice(&f32::NAN.to_le_bytes());
    cases.push(("NaN bias", forge(&manifest, latents, &nan_weights)));
    for (name, b) in cases {
        let result = Bundle::from_bytes(&b);
        assert!(result.is_err(), "{name}: accepted");
        let message = result.unwrap_err().to_string();
        assert!(!message.is_empty(), "{name}: empty message");
    }
}
