//! Rate control (`texset compress --target-psnr`): the smallest bundle among the trials that
//! reaches the target, every trial reported.
// The decoder's rate is computed once and copied, never recomputed: exact comparisons are meant.
#![allow(clippy::unwrap_used, clippy::float_cmp)]

use texset_core::{
    Cancel, NoProgress, analyse, compress,
    decode::Decoder,
    drivers::{RateError, RateTarget, RateTrial, compress_to_psnr},
    eval::evaluate,
    options::{CompressOptions, ScheduleConfig},
    set::load_library,
};

#[test]
fn target_psnr_finds_the_smallest_bundle_that_reaches_it() {
    let (set, _) = load_library(&[texset_testkit::repo_root().join("sample_textures/bricks")]).unwrap();
    let base = CompressOptions { schedule: ScheduleConfig { steps: 150, seed: 11, ..Default::default() }, ..CompressOptions::default() };
    // The target: what 3 bits per texel reaches with these options.
    let mut at_3 = base.clone();
    at_3.fit_bits_per_texel_for(3.0, &set).unwrap();
    let reference = compress(&set, &at_3, &NoProgress, &Cancel::new()).unwrap();
    let goal_db = evaluate(&set, &Decoder::new(&reference.bundle), false).unwrap().pooled_psnr_db;

    let target =
        RateTarget { psnr_db: goal_db, tolerance_db: 0.5, min_bpp: 1.5, max_bpp: 8.0, trials: 5, start_bpp: None, bc_baseline: None };
    let (out, report) = compress_to_psnr(&set, &base, &target, &NoProgress, &Cancel::new(), &|_| {}).unwrap();
    for t in &report.trials {
        println!(
            "asked {:.3}, got {:.3} bits/texel, {} bytes: {:.2} dB",
            t.target_bits_per_texel, t.bits_per_texel, t.bundle_bytes, t.pooled_psnr_db
        );
    }
    println!("target {goal_db:.2} dB: trial {} chosen", report.chosen + 1);
    assert!(report.reached);
    // 8 bits/texel reaches it and 1.5 does not: the bracket is searched, until a trial lands
    // within the tolerance of the target or the five trials run out.
    assert!((3..=5).contains(&report.trials.len()), "{:?}", report.trials);
    let within = |t: &RateTrial| (t.pooled_psnr_db - goal_db).abs() <= 0.5;
    assert!(report.trials.len() == 5 || within(report.trials.last().unwrap()), "{:?}", report.trials);
    assert!(report.trials[..report.trials.len() - 1].iter().all(|t| !within(t)), "it went on after landing: {:?}", report.trials);
    // No model is trained twice: every trial is a different bundle.
    for (i, a) in report.trials.iter().enumerate() {
        assert!(report.trials[..i].iter().all(|b| b.bundle_bytes != a.bundle_bytes), "{:?}", report.trials);
    }
    let chosen = &report.trials[report.chosen];
    assert!(chosen.pooled_psnr_db >= goal_db - 0.5);
    // The smallest of the trials that reach it, and the bundle returned is that trial's.
    for t in &report.trials {
        assert!(t.pooled_psnr_db < goal_db - 0.5 || t.bundle_bytes >= chosen.bundle_bytes, "{t:?} is smaller and reaches it");
    }
    assert_eq!(out.report.pack.bundle_bytes, chosen.bundle_bytes);
    let again = evaluate(&set, &Decoder::new(&out.bundle), false).unwrap().pooled_psnr_db;
    assert!((again - chosen.pooled_psnr_db).abs() < 1e-9);
    // The search between 1.5 and 8 after the two ends lands near the 3 bits/texel it came from.
    assert!(chosen.bits_per_texel < 4.5, "{chosen:?}");

    // From a start: the start first, then the rate doubled or halved until the target is
    // bracketed, then the same search.
    let started = RateTarget { start_bpp: Some(2.0), ..target.clone() };
    let (_, report) = compress_to_psnr(&set, &base, &started, &NoProgress, &Cancel::new(), &|_| {}).unwrap();
    println!("from 2 bits/texel: {:?}", report.trials);
    assert!(report.reached && report.trials.len() <= 5, "{report:?}");
    // A rate whose row cannot hold one channel per grid (the row from 2 bits per texel, on this
    // small set) counts as one below the target, untrained: the search doubles on.
    let fits = base.clone().fit_bits_per_texel_for(2.0, &set).is_ok();
    assert_eq!(report.trials[0].target_bits_per_texel.to_bits(), f64::to_bits(if fits { 2.0 } else { 4.0 }), "{report:?}");
    if fits && !within(&report.trials[0]) {
        let next = if report.trials[0].pooled_psnr_db < goal_db - 0.5 { 4.0 } else { 1.5 };
        assert_eq!(report.trials[1].target_bits_per_texel.to_bits(), f64::to_bits(next), "{report:?}");
    }

    // A range whose top its row cannot pack: the fit's error, nothing trained.
    let unpackable = RateTarget { max_bpp: 2.0, start_bpp: None, ..target.clone() };
    if base.clone().fit_bits_per_texel_for(2.0, &set).is_err() {
        let result = compress_to_psnr(&set, &base, &unpackable, &NoProgress, &Cancel::new(), &|_| {});
        assert!(matches!(result, Err(RateError::Options(_))), "{:?}", result.map(|(_, r)| r));
    }

    // Out of reach: one trial at the top, the best kept, and said so.
    let far = RateTarget { psnr_db: 90.0, ..target };
    let (_, report) = compress_to_psnr(&set, &base, &far, &NoProgress, &Cancel::new(), &|_| {}).unwrap();
    assert!(!report.reached);
    assert_eq!(report.trials.len(), 1);
}

#[test]
fn match_bc_reaches_the_block_compressed_psnr_at_fewer_bits() {
    use texset_core::{
        eval::bcn::{baseline, round_trip},
        export::bcn::Profile,
    };
    let (set, _) = load_library(&[texset_testkit::repo_root().join("sample_textures/metal_plates")]).unwrap();

    // The baseline is each map's own block-compression round trip, pooled by value count.
    let low = baseline(&set, Profile::Low);
    let (mut squared_sum, mut values, mut bytes) = (0.0f64, 0u64, 0u64);
    for (texture, map) in set.textures().map(|(_, _, t)| t).zip(&low.maps) {
        let format = Profile::Low.format(texture.info.kind, texture.info.channels);
        assert_eq!(map.format, format);
        let rt = round_trip(texture, format);
        assert!((rt.psnr_db - map.psnr_db).abs() < 1e-9, "{}: {} vs {}", map.map, rt.psnr_db, map.psnr_db);
        let n = texture.texels.len() as u64;
        squared_sum += 10f64.powf(-rt.psnr_db / 10.0) * n as f64;
        values += n;
        let blocks = u64::from(texture.info.width.div_ceil(4) * texture.info.height.div_ceil(4));
        assert_eq!(map.bytes, blocks * (format.bits_per_texel() as u64 * 2));
        bytes += map.bytes;
    }
    let pooled = -10.0 * (squared_sum / values as f64).log10();
    assert!((pooled - low.pooled_psnr_db).abs() < 1e-6, "{pooled} vs {}", low.pooled_psnr_db);
    assert!((low.bits_per_texel - bytes as f64 * 8.0 / set.texel_count() as f64).abs() < 1e-9);
    // BC7 beats BC1 on the same maps, at twice the bits for the colour ones.
    let high = baseline(&set, Profile::High);
    assert!(high.pooled_psnr_db > low.pooled_psnr_db && high.bits_per_texel > low.bits_per_texel, "{high:?} vs {low:?}");

    // The search: no tolerance, capped at the blocks' own rate, and what it returns reaches the
    // blocks' PSNR in fewer bits.
    let base = CompressOptions { schedule: ScheduleConfig { steps: 300, seed: 5, ..Default::default() }, ..CompressOptions::default() };
    // 0.5 bits per texel cannot hold one latent channel per grid: the search starts where it can.
    let target = RateTarget::matching_bc(&set, Profile::Low, 0.5, None, 4);
    assert_eq!((target.psnr_db, target.tolerance_db, target.max_bpp), (low.pooled_psnr_db, 0.0, low.bits_per_texel));
    let (out, report) = compress_to_psnr(&set, &base, &target, &NoProgress, &Cancel::new(), &|_| {}).unwrap();
    for t in &report.trials {
        println!(
            "{:.3} bits/texel: {:.2} dB (BC1/BC5/BC4 {:.2} dB at {:.3})",
            t.bits_per_texel, t.pooled_psnr_db, low.pooled_psnr_db, low.bits_per_texel
        );
        assert!(t.target_bits_per_texel <= low.bits_per_texel + 1e-9);
    }
    assert!(report.reached, "{report:?}");
    assert!(report.lowest_bpp > 0.5 && report.lowest_bpp < 4.0, "{report:?}");
    assert_eq!(report.trials[1].target_bits_per_texel.to_bits(), report.lowest_bpp.to_bits());
    assert!(report.trials[1].bits_per_texel <= report.lowest_bpp * 1.01, "{report:?}");
    let chosen = &report.trials[report.chosen];
    assert!(chosen.pooled_psnr_db >= low.pooled_psnr_db);
    assert!(chosen.bits_per_texel < low.bits_per_texel, "{chosen:?}");
    assert_eq!(out.report.pack.bundle_bytes, chosen.bundle_bytes);
    assert_eq!(report.target.bc_baseline.as_ref().map(|b| b.maps.len()), Some(set.textures().count()));
}

/// The shape follows the rate (issue 66): each rate takes its row's grids, channels fitted to it,
/// its decoder and its share of the preset's steps, but for what was given explicitly; the
/// analyse pass reports the choice.
#[test]
fn a_rate_picks_its_rows_grids_but_keeps_what_was_given() {
    use texset_core::options::{ExplicitShape, GridOptions, RATE_SHAPES, rate_shape};
    // The five sample materials as one library: five times the texels of one 256² grid extent,
    // so that even the lowest row's rate holds the decoder.
    let (set, _) = load_library(&texset_testkit::sample_dirs()).unwrap();
    let shape = |o: &CompressOptions| o.model.grids.iter().map(|g| (g.texels_per_cell, g.bits)).collect::<Vec<_>>();
    let row_shape = |bpp: f64| rate_shape(bpp).grids.iter().map(|g| (g.texels_per_cell, g.bits)).collect::<Vec<_>>();
    assert!(RATE_SHAPES.windows(2).all(|w| w[0].from_bits_per_texel < w[1].from_bits_per_texel));
    for row in &RATE_SHAPES {
        let bpp = row.from_bits_per_texel.max(1.0) + 0.5;
        let mut options = CompressOptions::default();
        options.fit_bits_per_texel_for(bpp, &set).unwrap();
        assert_eq!(shape(&options), row_shape(bpp), "at {bpp}");
        assert_eq!(options.model.hidden_widths, row.hidden_widths, "at {bpp}");
        let steps = (f64::from(texset_core::options::DEFAULT_PRESET_STEPS) * row.steps_scale).round() as u32;
        assert_eq!(options.schedule.steps, steps, "at {bpp}");
        let preset_rate = CompressOptions::default().schedule.optimiser.mlp_learning_rate;
        assert_eq!(options.schedule.optimiser.mlp_learning_rate, preset_rate * row.mlp_learning_rate_scale, "at {bpp}");
        // Fitted again at another rate, the options start from the preset's steps and decoder
        // learning rate, not these.
        let mut again = options.clone();
        again.fit_bits_per_texel_for(RATE_SHAPES[1].from_bits_per_texel + 0.5, &set).unwrap();
        assert_eq!(
            again.schedule.steps,
            (f64::from(texset_core::options::DEFAULT_PRESET_STEPS) * RATE_SHAPES[1].steps_scale).round() as u32
        );
        assert_eq!(again.schedule.optimiser.mlp_learning_rate, preset_rate * RATE_SHAPES[1].mlp_learning_rate_scale);
        let choice = options.model.shape_choice.clone().unwrap();
        assert_eq!((choice.bits_per_texel, choice.kept.len()), (bpp, 0));
        assert!(choice.describe().contains(rate_shape(bpp).why));
        // The fit kept the row's split of channels, roughly, and filled the rate.
        let (a, _) = analyse(&set, &options).unwrap();
        assert!(a.grids.iter().all(|g| g.channels >= 1));
        let bundle_bits = options.model.estimated_rate_bytes(set.max_extent(), set.output_channels(), 0) as f64 * 8.0;
        assert!(bundle_bits <= bpp * set.texel_count() as f64);
    }
    // The analyse pass says what the rate chose.
    let mut options = CompressOptions::default();
    options.fit_bits_per_texel_for(3.0, &set).unwrap();
    let (_, report) = analyse(&set, &options).unwrap();
    assert_eq!(report.shape.as_ref().map(|s| s.row_from_bits_per_texel), Some(rate_shape(3.0).from_bits_per_texel));

    // Grids given explicitly are kept at every rate; latent bits given explicitly too.
    let mut given = CompressOptions::default();
    given.model.grids = vec![GridOptions { texels_per_cell: 8, channels: 4, bits: 8 }];
    given.model.explicit.grids = true;
    let before = given.fingerprint();
    for bpp in [3.0, 12.0] {
        let mut options = given.clone();
        options.fit_bits_per_texel_for(bpp, &set).unwrap();
        assert_eq!(shape(&options), [(8, 8)]);
        assert_eq!(options.model.shape_choice.as_ref().unwrap().kept, ["grids"]);
    }
    let mut bits = CompressOptions::default();
    bits.model.explicit.latent_bits = true;
    for g in &mut bits.model.grids {
        g.bits = 8;
    }
    for bpp in [3.0, 12.0] {
        let mut options = bits.clone();
        options.fit_bits_per_texel_for(bpp, &set).unwrap();
        let row: Vec<(u32, u32)> = row_shape(bpp).into_iter().map(|(cells, _)| (cells, 8)).collect();
        assert_eq!(shape(&options), row, "at {bpp}");
        assert_eq!(options.model.shape_choice.as_ref().unwrap().kept, ["latent bits"]);
    }
    // A decoder and steps given are kept too, and a decoder given trains at the preset's rate
    // at every rate (the rows' rates are their decoders').
    let scaled = RATE_SHAPES.iter().find(|r| r.mlp_learning_rate_scale != 1.0).expect("a row scales the decoder's rate");
    let mut decoder = CompressOptions::default();
    decoder.model.hidden_widths = vec![32, 32];
    decoder.model.explicit.decoder = true;
    decoder.schedule.give_steps(777);
    let preset_rate = decoder.schedule.optimiser.mlp_learning_rate;
    for bpp in [3.0, scaled.from_bits_per_texel + 0.5, 12.0] {
        let mut options = decoder.clone();
        options.fit_bits_per_texel_for(bpp, &set).unwrap();
        assert_eq!((options.model.hidden_widths.as_slice(), options.schedule.steps), ([32, 32].as_slice(), 777));
        assert_eq!(options.schedule.optimiser.mlp_learning_rate, preset_rate, "at {bpp}");
        assert_eq!(options.model.shape_choice.as_ref().unwrap().kept, ["decoder", "steps"]);
    }
    // A decoder learning rate given is kept at the row that would scale it, and said.
    let mut rate = CompressOptions::default();
    rate.schedule.optimiser.mlp_learning_rate = 0.003;
    rate.model.explicit.mlp_learning_rate = true;
    let mut options = rate.clone();
    options.fit_bits_per_texel_for(scaled.from_bits_per_texel + 0.5, &set).unwrap();
    assert_eq!(options.schedule.optimiser.mlp_learning_rate, 0.003);
    assert_eq!(options.model.shape_choice.as_ref().unwrap().kept, ["decoder learning rate"]);
    // Where the row scales it, the analyse pass says so.
    let mut options = CompressOptions::default();
    options.fit_bits_per_texel_for(scaled.from_bits_per_texel + 0.5, &set).unwrap();
    assert!(options.model.shape_choice.as_ref().unwrap().describe().contains("decoder learning rate"));
    // Where a value came from is not part of what the bundle depends on.
    let mut unmarked = given.clone();
    unmarked.model.explicit = ExplicitShape::default();
    assert_eq!(unmarked.fingerprint(), before);
}

/// The row from 5 reads grid 0's corners (decision 050): a rate in it turns them on and a rate
/// below turns them off again, but corner reads given either way are kept, and pruning or learned
/// budgets, which corner reads refuse, keep the bilinear reads; the analyse pass says which.
#[test]
fn a_rows_corner_reads_give_way_to_what_was_given_and_to_pruning() {
    use texset_core::options::{ChannelPruning, LearnedBudgets, PruneMethod, RATE_SHAPES};
    let (set, _) = load_library(&texset_testkit::sample_dirs()).unwrap();
    let reads = RATE_SHAPES.iter().find(|r| r.corner_reads).expect("a row reads corners");
    let plain = RATE_SHAPES.iter().find(|r| !r.corner_reads).expect("a row reads bilinear");
    let (at_reads, at_plain) = (reads.from_bits_per_texel + 0.5, plain.from_bits_per_texel.max(1.0) + 0.5);
    let fit = |mut options: CompressOptions, bpp: f64| {
        options.fit_bits_per_texel_for(bpp, &set).unwrap();
        options.validate().unwrap();
        let kept = options.model.shape_choice.as_ref().unwrap().kept.clone();
        (options, kept)
    };
    let (options, kept) = fit(CompressOptions::default(), at_reads);
    assert!(options.model.corner_reads && kept.is_empty());
    // Corner reads widen the decoder's first layer: the fit counted them in the rate.
    let bits = options.model.estimated_rate_bytes(set.max_extent(), set.output_channels(), 0) as f64 * 8.0;
    assert!(bits <= at_reads * set.texel_count() as f64);
    let (lower, _) = fit(options, at_plain);
    assert!(!lower.model.corner_reads, "a row without them turns them off again");

    let mut off = CompressOptions::default();
    off.model.explicit.corner_reads = true;
    let (options, kept) = fit(off.clone(), at_reads);
    assert!(!options.model.corner_reads);
    assert_eq!(kept, ["corner reads"]);
    off.model.corner_reads = true;
    let (options, kept) = fit(off, at_plain);
    assert!(options.model.corner_reads);
    assert_eq!(kept, ["corner reads"]);

    let mut pruned = CompressOptions::default();
    pruned.budgets.prune = Some(ChannelPruning { keep_per_grid: vec![1, 1, 1], method: PruneMethod::L1, at: 0.5, group_lasso: 0.0 });
    let (options, kept) = fit(pruned, at_reads);
    assert!(!options.model.corner_reads);
    assert_eq!(kept, ["bilinear reads, for channel pruning"]);
    let mut learned = CompressOptions::default();
    learned.budgets.learned = Some(LearnedBudgets::default());
    let (options, kept) = fit(learned, at_reads);
    assert!(!options.model.corner_reads);
    assert!(options.model.shape_choice.unwrap().describe().contains("bilinear reads, for learned budgets"));
    assert!(kept.len() == 1);
}
