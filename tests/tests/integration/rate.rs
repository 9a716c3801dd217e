//! Rate control (`texset compress --target-psnr`): the smallest bundle among the trials that
//! reaches the target, every trial reported.
#![allow(clippy::unwrap_used)]

use crate::common;
use texset_core::decode::Decoder;
use texset_core::eval::evaluate;
use texset_core::rate::{RateTarget, compress_to_psnr};
use texset_core::{Cancel, CompressOptions, NoProgress, compress};

#[test]
fn target_psnr_finds_the_smallest_bundle_that_reaches_it() {
    let (set, _) = texset_core::ingest::load_library(&[common::repo_root().join("sample_textures/bricks")]).unwrap();
    let base = CompressOptions { steps: 150, seed: 11, ..CompressOptions::default() };
    // The target: what 3 bits per texel reaches with these options.
    let mut at_3 = base.clone();
    at_3.fit_bits_per_texel_for(3.0, &set).unwrap();
    let reference = compress(&set, &at_3, &NoProgress, &Cancel::new()).unwrap();
    let goal_db = evaluate(&set, &Decoder::new(&reference.bundle), false).unwrap().pooled_psnr_db;

    let target = RateTarget { psnr_db: goal_db, tolerance_db: 0.5, min_bpp: 1.5, max_bpp: 8.0, trials: 5 };
    let (out, report) = compress_to_psnr(&set, &base, &target, &NoProgress, &Cancel::new(), &|_| {}).unwrap();
    for t in &report.trials {
        println!(
            "asked {:.3}, got {:.3} bits/texel, {} bytes: {:.2} dB",
            t.target_bits_per_texel, t.bits_per_texel, t.bundle_bytes, t.pooled_psnr_db
        );
    }
    println!("target {goal_db:.2} dB: trial {} chosen", report.chosen + 1);
    assert!(report.reached);
    assert_eq!(report.trials.len(), 5, "8 bits/texel reaches it and 1.5 does not: the bracket is searched");
    let chosen = &report.trials[report.chosen];
    assert!(chosen.pooled_psnr_db >= goal_db - 0.5);
    // The smallest of the trials that reach it, and the bundle returned is that trial's.
    for t in &report.trials {
        assert!(t.pooled_psnr_db < goal_db - 0.5 || t.bundle_bytes >= chosen.bundle_bytes, "{t:?} is smaller and reaches it");
    }
    assert_eq!(out.report.pack.bundle_bytes, chosen.bundle_bytes);
    let again = evaluate(&set, &Decoder::new(&out.bundle), false).unwrap().pooled_psnr_db;
    assert!((again - chosen.pooled_psnr_db).abs() < 1e-9);
    // Bisection between 1.5 and 8 after the two ends lands near the 3 bits/texel it came from.
    assert!(chosen.bits_per_texel < 4.5, "{chosen:?}");

    // Out of reach: one trial at the top, the best kept, and said so.
    let far = RateTarget { psnr_db: 90.0, ..target };
    let (_, report) = compress_to_psnr(&set, &base, &far, &NoProgress, &Cancel::new(), &|_| {}).unwrap();
    assert!(!report.reached);
    assert_eq!(report.trials.len(), 1);
}
