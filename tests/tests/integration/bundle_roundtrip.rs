//! Bundle round trip and rejection of corrupted bytes.
#![allow(clippy::unwrap_used, missing_docs)]

use texset_core::{
    Cancel, NoProgress,
    bundle::{Bundle, BundleError},
    compress,
    options::{CompressOptions, ModelConfig, ScheduleConfig},
};

/// A small trained bundle with a `ReLU` decoder: format version 1, the version `forge` writes (the
/// default's HGELU decoder needs version 6: `an_hgelu_decoder_is_written_as_version_6_and_round_trips`).
fn small_bundle() -> Vec<u8> {
    let set = texset_testkit::small_set(32);
    let options = CompressOptions {
        model: ModelConfig { activation: texset_core::model::Activation::Relu, ..Default::default() },
        schedule: ScheduleConfig { steps: 20, batch_texels: 1024, ..Default::default() },
        ..CompressOptions::default()
    };
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
    b[8] = 8;
    assert!(matches!(Bundle::from_bytes(&b), Err(BundleError::UnsupportedVersion { found: 8, supported: 7 })));
    b[8] = 0;
    assert!(matches!(Bundle::from_bytes(&b), Err(BundleError::UnsupportedVersion { found: 0, supported: 7 })));
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
    m.materials[0].maps[1].info.kind = m.materials[0].maps[0].info.kind;
    cases.push(("two maps of one kind", forge(&serde_json::to_vec(&m).unwrap(), latents, weights)));
    let mut m = bundle.manifest.clone();
    m.layers[0].activation = "tanh".into();
    cases.push(("unknown activation", forge(&serde_json::to_vec(&m).unwrap(), latents, weights)));
    let mut m = bundle.manifest.clone();
    m.layers[1].activation = "hgelu".into();
    cases.push(("two hidden activations", forge(&serde_json::to_vec(&m).unwrap(), latents, weights)));
    let mut m = bundle.manifest.clone();
    let hidden = m.layers.len() - 1;
    m.layers[..hidden].iter_mut().for_each(|l| l.activation = "hgelu".into());
    // `forge` writes version 1: an hgelu decoder needs version 6.
    cases.push(("hgelu in a version 1 file", forge(&serde_json::to_vec(&m).unwrap(), latents, weights)));
    let mut m = bundle.manifest.clone();
    m.layers[hidden].activation = "relu".into();
    cases.push(("an activated last layer", forge(&serde_json::to_vec(&m).unwrap(), latents, weights)));
    let mut m = bundle.manifest.clone();
    m.materials[0].maps[0].info.width = 16_384;
    m.materials[0].maps[0].info.height = 16_384;
    m.materials[0].maps[0].info.channels = 4;
    m.materials[0].maps[0].info.channel_ranges = vec![[0.0, 1.0]; 4];
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

/// Limits on the whole library's decode cost (issue 67): a few KB may not ask for hours of
/// decoding. Many materials each within the per-material limit add past the library's, and an MLP
/// of legal layer widths whose multiply-adds per texel pass the limit: both refused by name.
#[test]
fn a_small_bundle_asking_for_hours_of_decoding_is_refused() {
    use texset_core::bundle::limits::{MAX_LIBRARY_VALUES, MAX_MLP_MACS_PER_TEXEL};
    let bytes = small_bundle();
    let bundle = Bundle::from_bytes(&bytes).unwrap();
    let sections = sections_of(&bytes);
    let (latents, weights) = (&sections[1], &sections[2]);
    let with_copies = |copies: usize| {
        let mut m = bundle.manifest.clone();
        for map in &mut m.materials[0].maps {
            (map.info.width, map.info.height) = (4096, 4096);
        }
        let first = m.materials[0].clone();
        for i in 1..copies {
            let mut copy = first.clone();
            copy.name = format!("copy{i}");
            m.materials.push(copy);
        }
        let per_material: u64 = first.maps.iter().map(|e| 4096 * 4096 * u64::from(e.info.channels)).sum();
        (forge(&serde_json::to_vec(&m).unwrap(), latents, weights), per_material * copies as u64)
    };
    // Few copies: accepted (the maps' size alone is legal).
    let (few, values) = with_copies(2);
    assert!(values <= MAX_LIBRARY_VALUES);
    Bundle::from_bytes(&few).unwrap();
    // Enough to pass the library's limit, in a file of a few KB.
    let copies = (MAX_LIBRARY_VALUES / (values / 2) + 1) as usize;
    let (many, values) = with_copies(copies);
    assert!(values > MAX_LIBRARY_VALUES && many.len() < 64 << 10, "{values} values in {} bytes", many.len());
    let start = std::time::Instant::now();
    let message = Bundle::from_bytes(&many).unwrap_err().to_string();
    assert!(message.contains("the library decodes to more than"), "{message}");
    assert!(start.elapsed() < std::time::Duration::from_secs(1));

    // An MLP within the layer limits (width ≤ 4096) but of 4096-wide hidden layers.
    let mut m = bundle.manifest.clone();
    let last = m.layers.len() - 1;
    m.layers[0].outputs = 4096;
    for layer in &mut m.layers[1..] {
        layer.inputs = 4096;
    }
    for layer in &mut m.layers[1..last] {
        layer.outputs = 4096;
    }
    let macs: u64 = m.layers.iter().map(|l| u64::from(l.inputs) * u64::from(l.outputs)).sum();
    assert!(macs > MAX_MLP_MACS_PER_TEXEL);
    let message = Bundle::from_bytes(&forge(&serde_json::to_vec(&m).unwrap(), latents, weights)).unwrap_err().to_string();
    assert!(message.contains("multiply-adds per texel"), "{message}");
}

/// The sections of a real bundle, by tag.
fn sections_of(bytes: &[u8]) -> Vec<Vec<u8>> {
    let n = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    (0..n)
        .map(|i| {
            let e = &bytes[16 + 24 * i..16 + 24 * (i + 1)];
            let offset = u64::from_le_bytes(e[8..16].try_into().unwrap()) as usize;
            let size = u64::from_le_bytes(e[16..24].try_into().unwrap()) as usize;
            bytes[offset..offset + size].to_vec()
        })
        .collect()
}

/// The fuzz target's property (`fuzz/fuzz_targets/bundle_reader.rs`) on stable, in CI: thousands
/// of mutated bundles whose checksums are made right again, so every mutation reaches the parser
/// and the validation behind the checksums. Each must be rejected or decode without a panic.
#[test]
fn mutated_bundles_with_valid_checksums_never_panic() {
    let bytes = small_bundle();
    let original = sections_of(&bytes);
    let interesting =
        ["0", "1", "-1", "2", "3", "255", "4294967295", "4294967296", "1e30", "-0", "65536", "1000000", "null", "\"x\"", "[]"];
    let mut rng = texset_core::rng::Rng::new(2026, 11, 22);
    let (mut accepted, mut rejected) = (0, 0);
    for iteration in 0..4000 {
        let mut s = original.clone();
        for _ in 0..=rng.below(3) {
            let which = rng.below(3) as usize;
            let section = &mut s[which];
            match rng.below(5) {
                // Replace a number of the manifest by an edge value.
                0 if which == 0 => {
                    let text = String::from_utf8_lossy(section).into_owned();
                    let numbers: Vec<(usize, usize)> = text
                        .char_indices()
                        .filter(|(i, c)| c.is_ascii_digit() && (*i == 0 || !text.as_bytes()[i - 1].is_ascii_digit()))
                        .map(|(i, _)| (i, i + text[i..].find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len() - i)))
                        .collect();
                    if let Some(&(a, b)) = numbers.get(rng.below(numbers.len().max(1) as u64) as usize) {
                        let v = interesting[rng.below(interesting.len() as u64) as usize];
                        *section = format!("{}{v}{}", &text[..a], &text[b..]).into_bytes();
                    }
                }
                1 if !section.is_empty() => {
                    let at = rng.below(section.len() as u64) as usize;
                    section[at] ^= 1 << rng.below(8);
                }
                2 if !section.is_empty() => {
                    let at = rng.below(section.len() as u64) as usize;
                    section.truncate(at);
                }
                3 => {
                    let n = rng.below(64) as usize;
                    section.extend(std::iter::repeat_n(rng.below(256) as u8, n));
                }
                _ if !section.is_empty() => {
                    let at = rng.below(section.len() as u64) as usize;
                    section[at] = rng.below(256) as u8;
                }
                _ => {}
            }
        }
        let forged = forge(&s[0], &s[1], &s[2]);
        match Bundle::from_bytes(&forged) {
            Ok(bundle) => {
                accepted += 1;
                let decoder = texset_core::decode::Decoder::new(&bundle);
                let mut out = [0.0_f32; 4];
                for (m, material) in bundle.manifest.materials.iter().enumerate() {
                    for map in 0..material.maps.len() {
                        let _ = decoder.decode_texel(m, map, rng.next_f32(), rng.next_f32(), &mut out);
                    }
                }
            }
            Err(e) => {
                rejected += 1;
                assert!(!e.to_string().is_empty(), "iteration {iteration}: an empty error");
            }
        }
    }
    eprintln!("{accepted} mutated bundles read, {rejected} rejected, none panicked");
    assert!(accepted > 0 && rejected > 0, "the mutations are too weak or too strong: {accepted} read, {rejected} rejected");
}

/// An `HGELUClamp` decoder trains, packs as format version 6 and round-trips bit-exactly; the
/// decoder reads its activation back, and decodes otherwise than the same bundle read as `ReLU`.
#[test]
fn an_hgelu_decoder_is_written_as_version_6_and_round_trips() {
    use texset_core::{decode::Decoder, model::Activation};
    let set = texset_testkit::small_set(32);
    let options = CompressOptions {
        model: ModelConfig { activation: Activation::Hgelu, ..Default::default() },
        schedule: ScheduleConfig { steps: 40, batch_texels: 1024, ..Default::default() },
        ..CompressOptions::default()
    };
    let bytes = compress(&set, &options, &NoProgress, &Cancel::new()).unwrap().bundle_bytes;
    assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 6);
    let bundle = Bundle::from_bytes(&bytes).unwrap();
    assert_eq!(bundle.manifest.activation(), Activation::Hgelu);
    assert_eq!(bundle.model_params().activation, Activation::Hgelu);
    assert_eq!(bundle.to_bytes().unwrap().0, bytes);
    let mut as_relu = bundle.clone();
    let hidden = as_relu.manifest.layers.len() - 1;
    as_relu.manifest.layers[..hidden].iter_mut().for_each(|l| l.activation = "relu".into());
    assert_ne!(Decoder::new(&bundle).decode_map(0, 0).unwrap().values, Decoder::new(&as_relu).decode_map(0, 0).unwrap().values);
    // A ReLU bundle keeps the oldest version that holds it.
    assert_eq!(u32::from_le_bytes(small_bundle()[8..12].try_into().unwrap()), 1);
}

#[test]
fn every_weight_format_trains_packs_and_round_trips() {
    use texset_core::{decode::Decoder, model::WeightFormat};
    let set = texset_testkit::small_set(32);
    let mut sizes = Vec::new();
    for format in WeightFormat::ALL {
        let options = CompressOptions {
            // ReLU: the versions below are the formats' own (HGELU's version 6 holds them all).
            model: ModelConfig { weight_format: format, activation: texset_core::model::Activation::Relu, ..Default::default() },
            schedule: ScheduleConfig { steps: 40, batch_texels: 1024, ..Default::default() },
            ..CompressOptions::default()
        };
        let out = compress(&set, &options, &NoProgress, &Cancel::new()).unwrap();
        assert_eq!(out.report.quantise.weight_format, format);
        let bytes = &out.bundle_bytes;
        // Version 4 holds the new formats; int8 keeps the oldest version that holds the rest.
        let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
        assert_eq!(version == 4, format != WeightFormat::Int8, "{format:?}: version {version}");
        let bundle = Bundle::from_bytes(bytes).unwrap();
        assert!(bundle.layers.iter().all(|l| l.format == format));
        assert_eq!(&bundle.to_bytes().unwrap().0, bytes, "{format:?} does not re-serialise bit-exactly");
        // The weight section is the size the format implies, and the size estimate counts it.
        let weight_bytes = out.report.pack.sections.weight_bytes as usize;
        let expected: usize = bundle.layers.iter().map(|l| format.layer_bytes(l.inputs, l.outputs)).sum();
        assert_eq!(weight_bytes, expected);
        sizes.push((format, weight_bytes));
        // What trained is what decodes: the bundle's layers are the trainer's final weights.
        let decoded = Decoder::new(&bundle).decode_map(0, 0).unwrap();
        assert!(decoded.values.iter().all(|v| v.is_finite() && (0.0..=1.0).contains(v)));
        // Every truncation of the weight section is an error, not a panic.
        for len in (bytes.len() - weight_bytes..bytes.len()).step_by(7) {
            assert!(Bundle::from_bytes(&bytes[..len]).is_err());
        }
    }
    println!("weight bytes per format: {sizes:?}");
    let size = |f| sizes.iter().find(|(g, _)| *g == f).unwrap().1;
    // fp16 doubles the codes and drops the row scales; E4M3 is int8's size; MXINT8 trades the row
    // scales for an exponent byte per 32 inputs.
    assert!(size(WeightFormat::Fp16) > size(WeightFormat::Int8));
    assert_eq!(size(WeightFormat::Fp8E4m3), size(WeightFormat::Int8));
    assert!(size(WeightFormat::MxInt8) <= size(WeightFormat::Int8));
}

/// The decode budget (`DecodeLimits`) counts every level of a stored mip chain (each side halved,
/// rounding down, to 1×1) and the MLP's multiply-adds per texel, from the manifest alone; a limit
/// at the cost lets the bundle through and one a byte or a multiply-add under refuses it, naming
/// what ran over.
#[test]
fn the_decode_budget_counts_the_mip_chain_and_the_mlp() {
    use texset_core::{
        decode::{DecodeError, DecodeLimits, Decoder},
        model::{full_mip_count, level_size},
    };
    for mip_levels in [1, 3] {
        let bundle = texset_testkit::tiny_bundle_with_mips(mip_levels);
        let m = &bundle.manifest;
        let per_texel: u64 = m.layers.iter().map(|l| u64::from(l.inputs) * u64::from(l.outputs)).sum();
        let (mut texels, mut values) = (0u64, 0u64);
        for map in m.materials.iter().flat_map(|mat| &mat.maps) {
            let levels = if m.mip_levels > 1 { full_mip_count(map.info.width, map.info.height) } else { 1 };
            assert_eq!(levels > 1, mip_levels > 1);
            let (mut w, mut h) = (u64::from(map.info.width), u64::from(map.info.height));
            for level in 0..levels {
                assert_eq!(level_size(map.info.width, map.info.height, level), (w as u32, h as u32));
                texels += w * h;
                values += w * h * u64::from(map.info.channels);
                (w, h) = ((w / 2).max(1), (h / 2).max(1));
            }
        }
        let (bytes, macs) = DecodeLimits::cost(m);
        assert_eq!((bytes, macs), (values * 4, texels * per_texel), "mip levels {mip_levels}");
        let at = DecodeLimits { max_decoded_bytes: bytes, max_multiply_adds: macs };
        assert!(Decoder::with_limits(&bundle, at).is_ok());
        let under_bytes = DecodeLimits { max_decoded_bytes: bytes - 1, ..at };
        let under_macs = DecodeLimits { max_multiply_adds: macs - 1, ..at };
        for (limits, what) in [(under_bytes, "bytes of decoded values"), (under_macs, "multiply-adds")] {
            match Decoder::with_limits(&bundle, limits) {
                Err(DecodeError::OverBudget { what: said, needed, limit }) => {
                    assert_eq!(said, what);
                    assert_eq!(needed, limit + 1);
                }
                Err(other) => panic!("{other}"),
                Ok(_) => panic!("{what}: a limit under the cost let the bundle through"),
            }
        }
    }
}
