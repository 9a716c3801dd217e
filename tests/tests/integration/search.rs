//! The precision search (`texset compress --bpp X --search`): every point at the same rate, short
//! runs, the best and the preset's shape in full, a cache that starts a similar set warm.
#![allow(clippy::unwrap_used)]

use texset_core::{
    Cancel, NoProgress,
    decode::Decoder,
    drivers::{SearchOptions, SearchSpace, Source, Strategy, search_precision},
    eval::evaluate,
    options::{CompressOptions, ScheduleConfig},
    set::load_library,
};

/// Four points: the default shape and its neighbours in latent bits and decoder size.
fn small_space() -> SearchSpace {
    SearchSpace {
        latent_bits: vec![2, 4],
        finest_texels_per_cell: vec![4],
        channel_splits: vec![[12, 16]],
        hidden_widths: vec![vec![32, 32], vec![64, 64, 64]],
        weight_formats: vec![texset_core::model::WeightFormat::Int8],
    }
}

#[test]
fn search_runs_every_point_at_equal_bits_and_keeps_the_best_full_run() {
    let (set, _) = load_library(&[texset_testkit::repo_root().join("sample_textures/bricks")]).unwrap();
    let base = CompressOptions { schedule: ScheduleConfig { steps: 200, seed: 5, ..Default::default() }, ..CompressOptions::default() };
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache/search.json");
    let mut options = SearchOptions::new(Strategy::Grid, 3.0, 100);
    options.space = small_space();
    options.cache = Some(cache.clone());
    options.finalists = 1;
    let (out, report) = search_precision(&set, &base, &options, &NoProgress, &Cancel::new(), &|_| {}, &|_| {}).unwrap();
    for t in &report.trials {
        println!("{:?} {} -> {:?}: {:.3} bits/texel, {:.2} dB", t.source, t.point.label(), t.channels, t.bits_per_texel, t.pooled_psnr_db);
    }
    for f in &report.finals {
        println!("full run {}: {:.3} bits/texel, {:.2} dB", f.point.label(), f.bits_per_texel, f.pooled_psnr_db);
    }
    // The grid runs all four points once, the preset's shape first, each at a quarter of the steps.
    assert_eq!(report.trials.len(), 4);
    assert_eq!(report.trials[0].source, Source::Base);
    assert_eq!(report.trials[0].point.label(), "4b 1/4 12:16 64-64-64");
    for (i, a) in report.trials.iter().enumerate() {
        assert!(report.trials[..i].iter().all(|b| b.point != a.point), "{} ran twice", a.point.label());
    }
    assert_eq!(report.short_steps, 50);
    // Equal bits: every bundle is at or under the rate and close to it.
    for t in &report.trials {
        assert!(t.bits_per_texel <= 3.0 && t.bits_per_texel > 2.5, "{t:?}");
    }
    // Fewer latent bits buy more channels at the same rate.
    let channels = |bits: u32, widths: usize| {
        report.trials.iter().find(|t| t.point.latent_bits == bits && t.point.hidden_widths.len() == widths).unwrap().channels
    };
    assert!(channels(2, 3)[0] > channels(4, 3)[0]);
    // Full runs: the preset's shape (the baseline) and the best other short trial; the best full
    // run is returned, and its bundle scores what the report says.
    assert_eq!(report.finals.len(), 2);
    assert_eq!(report.finals[report.baseline].trial, 0);
    let best_other = (1..4).max_by(|&a, &b| report.trials[a].pooled_psnr_db.total_cmp(&report.trials[b].pooled_psnr_db)).unwrap();
    assert_eq!(report.finals[1].trial, best_other);
    let chosen = &report.finals[report.chosen];
    assert!(report.finals.iter().all(|f| f.pooled_psnr_db <= chosen.pooled_psnr_db));
    assert!((report.gain_db - (chosen.pooled_psnr_db - report.finals[report.baseline].pooled_psnr_db)).abs() < 1e-12);
    assert!(report.gain_db >= 0.0);
    assert_eq!(report.found_at_trial, chosen.trial + 1);
    let again = evaluate(&set, &Decoder::new(&out.bundle), false).unwrap().pooled_psnr_db;
    assert!((again - chosen.pooled_psnr_db).abs() < 1e-9);
    assert_eq!(out.report.train.steps_run, 200);

    // The cache now holds this search; a TPE search on the same set starts from its choice, right
    // after the preset's shape, and says where it started from.
    let first_choice = chosen.point.clone();
    let mut warm = SearchOptions::new(Strategy::Tpe, 3.0, 2);
    warm.space = small_space();
    warm.cache = Some(cache.clone());
    warm.finalists = 1;
    let (_, warm_report) = search_precision(&set, &base, &warm, &NoProgress, &Cancel::new(), &|_| {}, &|_| {}).unwrap();
    assert!(warm_report.warm_from.as_deref().unwrap().starts_with("bricks"), "{:?}", warm_report.warm_from);
    assert_eq!(warm_report.trials.len(), 2);
    if first_choice == warm_report.trials[0].point {
        // The preset's shape won the first search: nothing new to seed but the next best.
        assert_eq!(warm_report.trials[1].source, Source::Warm);
    } else {
        assert_eq!(warm_report.trials[1].point, first_choice);
        assert_eq!(warm_report.trials[1].source, Source::Warm);
    }
    let cached = texset_core::drivers::SearchCache::read(&cache).unwrap();
    assert_eq!(cached.searches.len(), 2);

    // A point that cannot fit the rate (a decoder of a quarter megabyte, as wide as training
    // allows) is skipped without training, and said so.
    let mut tight = SearchOptions::new(Strategy::Grid, 3.0, 100);
    tight.space = SearchSpace { latent_bits: vec![4], hidden_widths: vec![vec![64, 64, 64], vec![512, 512]], ..small_space() };
    tight.short_fraction = 0.05;
    tight.finalists = 0;
    let (_, tight_report) = search_precision(&set, &base, &tight, &NoProgress, &Cancel::new(), &|_| {}, &|_| {}).unwrap();
    assert_eq!(tight_report.trials.len(), 1);
    assert_eq!(tight_report.infeasible.len(), 1);
    assert_eq!(tight_report.infeasible[0].hidden_widths, vec![512, 512]);
    assert_eq!(tight_report.finals.len(), 1);

    // A decode-cost cap at the base shape's own multiply-adds: the points that cost more are
    // skipped untrained, the others run, and each trial says what it costs.
    let base_macs = report.trials[0].decoder_macs_per_texel;
    assert_eq!(base_macs, report.finals[report.baseline].decoder_macs_per_texel);
    let mut capped = SearchOptions::new(Strategy::Grid, 3.0, 100);
    capped.space = small_space();
    capped.short_fraction = 0.05;
    capped.finalists = 0;
    capped.max_decoder_macs_per_texel = Some(base_macs);
    let (_, capped_report) = search_precision(&set, &base, &capped, &NoProgress, &Cancel::new(), &|_| {}, &|_| {}).unwrap();
    let costly: Vec<String> = report.trials.iter().filter(|t| t.decoder_macs_per_texel > base_macs).map(|t| t.point.label()).collect();
    assert!(!costly.is_empty(), "no point of the small space costs more than the base shape");
    println!("over the cap of {base_macs} MACs/texel: {costly:?}");
    assert_eq!(capped_report.too_costly.len(), costly.len());
    assert!(capped_report.trials.iter().all(|t| t.decoder_macs_per_texel <= base_macs));
    assert_eq!(capped_report.trials.len() + capped_report.too_costly.len(), 4);

    // Two channel splits in the same ratio size to the same channels at this rate, so the second
    // would train the first's bundle again: it is not run, and the report says which trial it
    // equals.
    let mut same = SearchOptions::new(Strategy::Grid, 3.0, 100);
    same.space = SearchSpace {
        latent_bits: vec![4],
        hidden_widths: vec![vec![64, 64, 64]],
        channel_splits: vec![[12, 16], [6, 8]],
        ..small_space()
    };
    same.short_fraction = 0.05;
    same.finalists = 1;
    let points: Vec<_> = same
        .space
        .channel_splits
        .iter()
        .map(|&s| texset_core::drivers::SearchPoint { channel_split: s, ..report.trials[0].point.clone() })
        .collect();
    let fitted: Vec<_> = points.iter().map(|p| p.options(&base, 3.0, &set).unwrap()).collect();
    assert_eq!(fitted[0], fitted[1], "the test needs both splits to size to the same options at 3 bits per texel");
    let (_, same_report) = search_precision(&set, &base, &same, &NoProgress, &Cancel::new(), &|_| {}, &|_| {}).unwrap();
    assert_eq!(same_report.trials.len(), 1);
    assert_eq!(same_report.same_as_earlier, vec![(points[1].clone(), 0)]);
    // Nothing else to promote: the preset's shape is the only full run.
    assert_eq!(same_report.finals.len(), 1);
}
