//! Mip chains: the latent pyramid trains on every level of box-filtered references, round-trips
//! through the bundle, and decodes at any level of detail (whole levels, trilinear LOD).
// Exact float comparisons are the point here: the same decode must give the same bits.
#![allow(clippy::unwrap_used, clippy::float_cmp)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use texset_core::{
    Cancel, NoProgress,
    bundle::Bundle,
    compress,
    decode::Decoder,
    eval::{SquaredError, evaluate_mips},
    internal_tests::{box_chain, quantize_to_format},
    model::full_mip_count,
    options::{Backend, CompressOptions, LossConfig, ModelConfig, RunOptions, ScheduleConfig},
    set::{MapKind, Material, MaterialConstants, TextureSet, load_library},
};
use texset_testkit::texture;

/// A material with detail at every scale (so every mip level has something to learn and a level
/// decoded from level 0's latents aliases): base colour, a bumpy normal map, roughness at half size.
fn busy_set(size: u32) -> TextureSet {
    let s = size as f32;
    let base = texture(MapKind::Basecolor, size, size, 3, |x, y, c| {
        let (u, v) = (x as f32 / s, y as f32 / s);
        let fine = ((x as f32 * 0.7 + c as f32).sin() * (y as f32 * 0.55).cos()) * 0.2;
        0.5 + fine + 0.25 * (u * 7.0 + c as f32).sin() * (v * 5.0).cos()
    });
    let height = |x: f32, y: f32| (x * 0.45).sin() * (y * 0.35).sin() + 0.3 * (x * 0.11 + y * 0.07).sin();
    let normal = texture(MapKind::Normal, size, size, 3, |x, y, c| {
        let (x, y) = (x as f32, y as f32);
        let dx = height(x + 0.5, y) - height(x - 0.5, y);
        let dy = height(x, y + 0.5) - height(x, y - 0.5);
        let n = [-dx, -dy, 1.0];
        let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
        n[c as usize] / len * 0.5 + 0.5
    });
    let half = size / 2;
    let rough = texture(MapKind::Roughness, half, half, 1, |x, y, _| 0.5 + 0.3 * (x as f32 * 0.6).sin() * (y as f32 * 0.4).cos());
    TextureSet {
        materials: vec![Material {
            name: "busy".into(),
            source_dir: PathBuf::from("busy"),
            textures: vec![base, normal, rough],
            constants: MaterialConstants::default(),
        }],
    }
}

fn options(mips: bool) -> CompressOptions {
    CompressOptions {
        model: ModelConfig { mips, ..Default::default() },
        // Every map weighted alike, so the pooled PSNR these tests measure the pyramid by is what
        // training minimises (the default weighs normal maps for the light).
        schedule: ScheduleConfig {
            steps: 600,
            batch_texels: 4096,
            loss: LossConfig { weights: BTreeMap::new(), ..Default::default() },
            ..Default::default()
        },
        run: RunOptions { backend: Backend::Cpu, ..Default::default() },
        ..CompressOptions::default()
    }
}

/// Per level, the pooled PSNR of `decoder`'s `decode_map_level` against the box-filtered chain.
fn level_psnr(set: &TextureSet, decoder: &Decoder) -> Vec<f64> {
    let mut pooled: Vec<SquaredError> = Vec::new();
    for (m, _, t) in set.textures() {
        let k = set.materials[m].textures.iter().position(|x| x.info.kind == t.info.kind).unwrap();
        let chain =
            box_chain(&t.texels, t.info.width, t.info.height, t.info.channels, t.info.kind, t.info.color_space, &t.info.channel_ranges);
        let reference = std::iter::once(t.texels.as_slice()).chain(chain.iter().map(|l| l.values.as_slice()));
        for (level, values) in reference.enumerate() {
            let mut d = decoder.decode_map_level(m, k, level as u32).unwrap();
            quantize_to_format(&mut d.values, t.info.sample_format);
            if pooled.len() <= level {
                pooled.push(SquaredError::default());
            }
            pooled[level].add(SquaredError::of(&d.values, values));
        }
    }
    pooled.iter().map(SquaredError::psnr_db).collect()
}

#[test]
fn every_mip_level_is_trained_and_round_trips() {
    // The bricks sample (256², five maps): detail at every scale, like a real material.
    let bricks: Vec<PathBuf> = texset_testkit::sample_dirs().into_iter().filter(|d| d.ends_with("bricks")).collect();
    let (set, _) = load_library(&bricks).unwrap();
    let with = compress(&set, &options(true), &NoProgress, &Cancel::new()).unwrap();
    let without = compress(&set, &options(false), &NoProgress, &Cancel::new()).unwrap();

    // The bundle: format version 6 (the default's HGELU decoder; pyramid levels of two mip levels
    // alone need 5), the full chain of the 256² maps, a pyramid level per two of its levels.
    let bytes = &with.bundle_bytes;
    assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 6);
    assert_eq!(u32::from_le_bytes(without.bundle_bytes[8..12].try_into().unwrap()), 6, "the HGELU decoder's version, mips or not");
    let manifest = &with.bundle.manifest;
    assert_eq!((manifest.mip_levels, manifest.mip_group, manifest.pyramid_levels()), (9, 2, 5));
    assert_eq!(manifest.mip_grids.len(), 4 * manifest.grids.len());
    assert_eq!(Bundle::from_bytes(bytes).unwrap(), with.bundle);
    // With the default cell growth of 2 and groups of two levels each pyramid level has half the
    // cells a side of the one above: the pyramid adds about a third to the latent bytes.
    let (lw, lo) = (with.report.pack.sections.latent_bytes as f64, without.report.pack.sections.latent_bytes as f64);
    println!("latent bytes: {lw} with mips, {lo} without ({:.3}x)", lw / lo);
    assert!((1.25..1.45).contains(&(lw / lo)), "latent bytes grew {:.3}x", lw / lo);
    // A pyramid level per mip level (format version 3, as before groups) about doubles them.
    let per_level = compress(
        &set,
        &CompressOptions {
            // `ReLU`: the version below is the per-level chain's own (HGELU's 6 holds it too).
            model: ModelConfig { mip_group: 1, activation: texset_core::model::Activation::Relu, ..options(true).model },
            schedule: ScheduleConfig { steps: 10, ..options(true).schedule },
            ..options(true)
        },
        &NoProgress,
        &Cancel::new(),
    )
    .unwrap();
    assert_eq!(u32::from_le_bytes(per_level.bundle_bytes[8..12].try_into().unwrap()), 3);
    assert_eq!(per_level.bundle.manifest.mip_grids.len(), 8 * manifest.grids.len());
    let ratio = per_level.report.pack.sections.latent_bytes as f64 / lo;
    assert!((1.8..2.2).contains(&ratio), "a pyramid level per mip level: latent bytes grew {ratio:.3}x");

    // Quality of every level against the box-filtered reference chain.
    let report = evaluate_mips(&set, &Decoder::new(&with.bundle)).unwrap().unwrap();
    let with_levels = level_psnr(&set, &Decoder::new(&with.bundle));
    let without_levels = level_psnr(&set, &Decoder::new(&without.bundle));
    println!("pooled PSNR per level with the pyramid:    {with_levels:.2?}");
    println!("pooled PSNR per level from level 0 latents: {without_levels:.2?}");
    for (a, b) in report.pooled_level_psnr_db.iter().zip(&with_levels) {
        assert!((a - b).abs() < 1e-9, "evaluate_mips disagrees with the direct measurement");
    }
    for m in &report.maps {
        let t = set.materials[0].textures.iter().find(|t| t.info.kind.to_string() == m.map).unwrap();
        println!("{}: {:.2?}", m.map, m.level_psnr_db);
        assert_eq!(m.level_psnr_db.len() as u32, full_mip_count(t.info.width, t.info.height), "{}", m.map);
        assert_eq!(m.level_sizes.last(), Some(&[1, 1]));
    }
    // Level 0 keeps most of its quality with the pyramid training beside it...
    assert!(with_levels[0] > without_levels[0] - 1.5, "level 0: {:.2} dB with mips, {:.2} without", with_levels[0], without_levels[0]);
    // ...and the coarser levels are far better than level 0's latents decoded at a smaller size
    // (which point-samples the detail and aliases).
    for level in 1..=4 {
        assert!(
            with_levels[level] > without_levels[level] + 3.0,
            "level {level}: {:.2} dB with the pyramid, {:.2} dB from level 0's latents",
            with_levels[level],
            without_levels[level]
        );
    }
    // No level of this short run (600 steps) falls far below level 0 (1.58 dB measured; the
    // default preset's figures on the shared sets are in docs/benchmarks.md).
    let (drop, at) = report.worst_drop_db();
    println!("worst level below level 0: {drop:.2} dB at {at:?}");
    assert!(drop < 2.5, "a level is {drop:.2} dB below level 0 ({at:?})");
}

#[test]
fn lod_filtering_blends_levels_and_clamps() {
    let set = busy_set(32);
    let out = compress(
        &set,
        &CompressOptions { schedule: ScheduleConfig { steps: 60, ..options(true).schedule }, ..options(true) },
        &NoProgress,
        &Cancel::new(),
    )
    .unwrap();
    let decoder = Decoder::new(&out.bundle);
    let levels = decoder.map_mip_levels(0, 0).unwrap();
    assert_eq!(levels, 6);
    assert_eq!(decoder.map_mip_levels(0, 2).unwrap(), 5, "the 16² roughness has its own chain");
    let at = |lod: f32| {
        let mut t = [0.0; 4];
        decoder.decode_texel_lod(0, 0, 0.3, 0.7, lod, &mut t).unwrap();
        t
    };
    // Whole levels are the whole-map decode's texels, within the batched path's rounding (one
    // fused multiply-add per term; decode_parity.rs holds it to 1e-5 everywhere).
    for level in 0..levels {
        let map = decoder.decode_map_level(0, 0, level).unwrap();
        let (w, h) = (map.width as usize, map.height as usize);
        let (x, y) = (w / 3, h / 2);
        let (u, v) = ((x as f32 + 0.5) / w as f32, (y as f32 + 0.5) / h as f32);
        let mut t = [0.0; 4];
        decoder.decode_texel_lod(0, 0, u, v, level as f32, &mut t).unwrap();
        for (texel, whole) in t[..3].iter().zip(&map.values[(y * w + x) * 3..][..3]) {
            assert!((texel - whole).abs() <= 1e-5, "level {level}: {texel} against {whole}");
        }
    }
    // A fractional LOD is the linear blend of its two levels.
    let (a, b, mid) = (at(1.0), at(2.0), at(1.25));
    for c in 0..3 {
        assert!((mid[c] - (a[c] + (b[c] - a[c]) * 0.25)).abs() < 1e-6);
    }
    assert_ne!(a, b, "levels 1 and 2 decode alike");
    // Out of range clamps; NaN is level 0.
    assert_eq!(at(-3.0), at(0.0));
    assert_eq!(at(100.0), at((levels - 1) as f32));
    assert_eq!(at(f32::NAN), at(0.0));

    // Without a mip chain every LOD decodes level 0.
    let flat = compress(
        &set,
        &CompressOptions { schedule: ScheduleConfig { steps: 60, ..options(false).schedule }, ..options(false) },
        &NoProgress,
        &Cancel::new(),
    )
    .unwrap();
    let decoder = Decoder::new(&flat.bundle);
    assert_eq!(decoder.map_mip_levels(0, 0).unwrap(), 1);
    let (mut t0, mut t3) = ([0.0; 4], [0.0; 4]);
    decoder.decode_texel_lod(0, 0, 0.3, 0.7, 0.0, &mut t0).unwrap();
    decoder.decode_texel_lod(0, 0, 0.3, 0.7, 3.5, &mut t3).unwrap();
    assert_eq!(t0, t3);
    assert!(evaluate_mips(&set, &decoder).unwrap().is_none());
}

#[test]
fn inconsistent_pyramids_are_rejected() {
    let set = busy_set(16);
    let out = compress(
        &set,
        &CompressOptions { schedule: ScheduleConfig { steps: 10, ..options(true).schedule }, ..options(true) },
        &NoProgress,
        &Cancel::new(),
    )
    .unwrap();
    let good = out.bundle;
    assert!(good.to_bytes().is_ok());
    let mut cases: Vec<(&str, Bundle)> = Vec::new();
    let mut b = good.clone();
    b.manifest.mip_levels = 3;
    cases.push(("too few pyramid grids for the levels", b));
    let mut b = good.clone();
    b.manifest.mip_grids[0].width += 1;
    cases.push(("a pyramid grid of the wrong size", b));
    let mut b = good.clone();
    b.manifest.mip_grids[1].bits = 2;
    cases.push(("a pyramid grid with other bits", b));
    let mut b = good.clone();
    b.manifest.mip_levels = 99;
    cases.push(("beyond the level limit", b));
    let mut b = good.clone();
    b.latent_levels.pop();
    cases.push(("latents missing for a level", b));
    let mut b = good.clone();
    b.manifest.mip_group = 1;
    cases.push(("a pyramid level per mip level over grids made for groups", b));
    let mut b = good.clone();
    b.manifest.mip_group = 0;
    cases.push(("a group of no mip levels", b));
    let mut b = good.clone();
    b.manifest.mip_group = 5;
    cases.push(("one pyramid level for the whole chain", b));
    for (name, b) in cases {
        let result = b.to_bytes();
        assert!(result.is_err(), "{name}: written");
        println!("{name}: {}", result.unwrap_err());
    }
    // A version-2 header cannot carry a mip chain.
    let (mut bytes, _) = good.to_bytes().unwrap();
    bytes[8..12].copy_from_slice(&2u32.to_le_bytes());
    let header_end = 16 + 24 * 3;
    let crc = crc32fast::hash(&bytes[..header_end]);
    bytes[header_end..header_end + 4].copy_from_slice(&crc.to_le_bytes());
    let err = Bundle::from_bytes(&bytes).unwrap_err().to_string();
    assert!(err.contains("mip chain"), "{err}");
    // A version-4 header cannot carry pyramid levels of several mip levels.
    bytes[8..12].copy_from_slice(&4u32.to_le_bytes());
    let crc = crc32fast::hash(&bytes[..header_end]);
    bytes[header_end..header_end + 4].copy_from_slice(&crc.to_le_bytes());
    let err = Bundle::from_bytes(&bytes).unwrap_err().to_string();
    assert!(err.contains("version 5"), "{err}");
}

/// The grouped chain's spec on the CPU reference: the mip levels of a group read the same grids
/// at their own texel centres, the LOD input says which level; levels past the pyramid clamp.
#[test]
fn mip_levels_of_a_group_share_grids_and_differ_in_the_lod_input() {
    use texset_core::{
        internal_tests::{features_at_level, lod_level, pyramid_level},
        model::LOD_INPUT_SCALE,
    };
    // 4 mip levels in groups of 2: mips 0-1 read level 0's grids, mips 2-3 pyramid level 1's.
    let bundle = texset_testkit::tiny_bundle_with_grouped_mips(4, 2);
    let params = bundle.model_params();
    assert_eq!((params.pyramid_levels(), params.mip_group()), (2, 2));
    let lc = params.latent_channels();
    let lod_at = lc + 4 * params.pe_frequencies as usize;
    let mask = vec![1.0; lc];
    let features = |mip: u32| {
        let mut f = vec![0.0; params.mlp_inputs()];
        features_at_level(&params, 0.3, 0.6, mip, &mask, &mut f);
        f
    };
    let (m0, m1, m2, m3, m9) = (features(0), features(1), features(2), features(3), features(9));
    assert_eq!(m0[..lod_at], m1[..lod_at], "mips 0 and 1 read the same grids at the same place");
    assert_eq!(m2[..lod_at], m3[..lod_at], "mips 2 and 3 read the same grids at the same place");
    assert_ne!(m0[..lc], m2[..lc], "mip 2 reads pyramid level 1");
    for (mip, f) in [(0, &m0), (1, &m1), (2, &m2), (3, &m3)] {
        assert_eq!(f[lod_at], mip as f32 * LOD_INPUT_SCALE, "mip {mip}'s LOD input");
    }
    assert_eq!(m9, m3, "levels past the pyramid's last group decode as its last level");
    // The mapping itself, one function of (pyramid levels, group).
    assert_eq!(
        (0..6).map(|m| (lod_level(m, 3, 2), pyramid_level(m, 3, 2))).collect::<Vec<_>>(),
        [(0, 0), (1, 0), (2, 1), (3, 1), (4, 2), (5, 2)]
    );
    assert_eq!((lod_level(7, 3, 2), pyramid_level(7, 3, 2)), (5, 2));
    // Group 1 (format versions 3 and 4) is the old mapping: level k = min(m, levels - 1).
    assert_eq!((0..5).map(|m| pyramid_level(m, 3, 1)).collect::<Vec<_>>(), [0, 1, 2, 2, 2]);
    assert_eq!((0..5).map(|m| lod_level(m, 3, 1)).collect::<Vec<_>>(), [0, 1, 2, 2, 2]);
}
