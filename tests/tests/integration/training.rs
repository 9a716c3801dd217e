//! Training quality, determinism, resume, budgets and the decoder against the burn model.
#![allow(clippy::unwrap_used, missing_docs)]

use texset_core::{
    Cancel, NoProgress, Progress, analyse,
    bundle::Bundle,
    compress,
    decode::Decoder,
    eval::evaluate,
    internal_tests::{NtcModel, burn_loss_and_grads, forward_backward, loss_and_grads, starting_params},
    model::Activation,
    options::{
        BudgetConfig, ChannelPruning, CheckpointOptions, CompressOptions, LearnedBudgets, ModelConfig, PruneMethod, RunOptions,
        ScheduleConfig,
    },
    rng::Rng,
    train::{Batch, Sampler, initial_params},
};

fn quick_options() -> CompressOptions {
    CompressOptions { schedule: ScheduleConfig { steps: 400, batch_texels: 2048, ..Default::default() }, ..CompressOptions::default() }
}

/// PSNR of predicting every channel's mean: what a model that learned nothing spatial reaches.
fn mean_predictor_psnr(set: &texset_core::set::TextureSet) -> f64 {
    let mut se = texset_core::eval::SquaredError::default();
    for (_, _, t) in set.textures() {
        let ch = t.info.channels as usize;
        for c in 0..ch {
            let values: Vec<f32> = t.texels.iter().skip(c).step_by(ch).copied().collect();
            let mean = values.iter().sum::<f32>() / values.len() as f32;
            se.add(texset_core::eval::SquaredError::of(&values, &vec![mean; values.len()]));
        }
    }
    se.psnr_db()
}

#[test]
fn training_reaches_a_psnr_floor_a_broken_model_cannot() {
    let set = texset_testkit::small_set(64);
    let out = compress(&set, &quick_options(), &NoProgress, &Cancel::new()).unwrap();
    let eval = evaluate(&set, &Decoder::new(&out.bundle), true).unwrap();
    let baseline = mean_predictor_psnr(&set);
    // The maps are smooth at this resolution: a working model gets far above predicting the mean
    // (≈ 13 dB here); 30 dB needs the latents, the MLP and quantisation all to work.
    assert!(eval.pooled_psnr_db >= 30.0, "pooled PSNR {:.2} dB (mean predictor {baseline:.2} dB)", eval.pooled_psnr_db);
    assert!(eval.pooled_psnr_db > baseline + 12.0);
    // Maps of different resolutions in one material decode at their own size.
    assert_eq!(out.bundle.manifest.materials[0].maps[1].info.width, 32);
    assert!(eval.maps.iter().all(|m| m.ssim > 0.8), "{:?}", eval.maps);
}

#[test]
fn same_seed_same_bundle_and_other_seed_other_bundle() {
    let set = texset_testkit::small_set(32);
    let o =
        CompressOptions { schedule: ScheduleConfig { steps: 30, batch_texels: 1024, ..Default::default() }, ..CompressOptions::default() };
    let a = compress(&set, &o, &NoProgress, &Cancel::new()).unwrap().bundle_bytes;
    let b = compress(&set, &o, &NoProgress, &Cancel::new()).unwrap().bundle_bytes;
    assert_eq!(a, b);
    let c = compress(&set, &CompressOptions { schedule: ScheduleConfig { seed: 2, ..o.schedule }, ..o }, &NoProgress, &Cancel::new())
        .unwrap()
        .bundle_bytes;
    assert_ne!(a, c);
}

/// Cancels after `step` training steps. Counts steps through `snapshot_due`, which the trainer
/// asks after every step: status reports come at most twice a second, so on a fast machine a
/// short run can end before any report at the step (the old flake).
struct CancelAt {
    step: u32,
    cancel: Cancel,
    steps_seen: std::sync::atomic::AtomicU32,
}
impl CancelAt {
    fn new(step: u32, cancel: Cancel) -> Self {
        Self { step, cancel, steps_seen: std::sync::atomic::AtomicU32::new(0) }
    }
}
impl Progress for CancelAt {
    fn snapshot_due(&self) -> bool {
        let seen = self.steps_seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        if seen >= self.step {
            self.cancel.cancel();
        }
        false
    }
}

#[test]
fn cancel_then_resume_gives_the_uninterrupted_bundle() {
    let set = texset_testkit::small_set(32);
    let dir = tempfile::tempdir().unwrap();
    let checkpoint = dir.path().join("run.ckpt");
    let base =
        CompressOptions { schedule: ScheduleConfig { steps: 120, batch_texels: 1024, ..Default::default() }, ..CompressOptions::default() };
    let straight = compress(&set, &base, &NoProgress, &Cancel::new()).unwrap().bundle_bytes;

    let with_checkpoints = CompressOptions {
        run: RunOptions { checkpoint: Some(CheckpointOptions { path: checkpoint.clone(), every_secs: 0.0 }), ..base.run.clone() },
        ..base.clone()
    };
    let cancel = Cancel::new();
    let stopper = CancelAt::new(50, cancel.clone());
    let err = compress(&set, &with_checkpoints, &stopper, &cancel).unwrap_err();
    assert!(err.to_string().contains("cancelled"), "{err}");
    assert!(checkpoint.exists());

    let resumed_options =
        CompressOptions { run: RunOptions { resume_from: Some(checkpoint.clone()), ..with_checkpoints.run }, ..with_checkpoints };
    let resumed = compress(&set, &resumed_options, &NoProgress, &Cancel::new()).unwrap();
    assert!(resumed.report.train.resumed_from_step.is_some_and(|s| (50..120).contains(&s)));
    assert_eq!(resumed.bundle_bytes, straight, "resumed run differs from the uninterrupted one");
}

#[test]
fn manual_budgets_reach_the_manifest() {
    let set = texset_testkit::small_set(32);
    let mut o =
        CompressOptions { schedule: ScheduleConfig { steps: 10, batch_texels: 512, ..Default::default() }, ..CompressOptions::default() };
    o.budgets.overrides.insert("roughness".into(), 4);
    let out = compress(&set, &o, &NoProgress, &Cancel::new()).unwrap();
    let maps = &out.bundle.manifest.materials[0].maps;
    assert_eq!(maps[1].latent_channels.len(), 4);
    assert_eq!(maps[0].latent_channels.len(), out.bundle.manifest.latent_channels());
    // Roughness's channels are a subset of the base colour's (budgets nest).
    assert!(maps[1].latent_channels.iter().all(|c| maps[0].latent_channels.contains(c)));
    o.budgets.overrides.insert("emissive".into(), 1);
    assert!(compress(&set, &o, &NoProgress, &Cancel::new()).is_err(), "a budget for a missing map must be an error");
}

#[test]
fn cpu_reference_decoder_matches_the_burn_model() {
    let set = texset_testkit::small_set(32);
    let out = compress(
        &set,
        &CompressOptions { schedule: ScheduleConfig { steps: 60, batch_texels: 1024, ..Default::default() }, ..CompressOptions::default() },
        &NoProgress,
        &Cancel::new(),
    )
    .unwrap();
    let decoder = Decoder::new(&out.bundle);
    let device = burn::prelude::Device::flex();
    let model = NtcModel::from_params(decoder.params(), &device);
    let manifest = decoder.manifest();
    let lc = manifest.latent_channels();
    let n = 500;
    let mut rng = Rng::new(9, 0, 0);
    let mut worst = 0.0f32;
    for (mi, material) in manifest.materials.iter().enumerate() {
        for (ti, map) in material.maps.iter().enumerate() {
            let mut uv = Vec::new();
            for i in 0..n {
                // Include the edges and corners.
                let (u, v) = match i {
                    0 => (0.0, 0.0),
                    1 => (1.0, 1.0),
                    2 => (0.0, 1.0),
                    _ => (rng.next_f32(), rng.next_f32()),
                };
                uv.push(u);
                uv.push(v);
            }
            let y = texset_testkit::burn_decode(&model, &device, &uv, &map.latent_channels, lc);
            let oc = manifest.output_channels();
            let mut texel = [0.0f32; 4];
            for i in 0..n {
                decoder.decode_texel(mi, ti, uv[2 * i], uv[2 * i + 1], &mut texel).unwrap();
                for c in 0..map.info.channels as usize {
                    let d = (texel[c] - y[i * oc + map.output_offset as usize + c]).abs();
                    worst = worst.max(d);
                }
            }
        }
    }
    // Same math in f32 with different summation orders (burn's matmul vs a scalar loop):
    // differences stay at rounding level, far below one 8-bit step (3.9e-3).
    assert!(worst <= 1e-4, "max |cpu − burn| = {worst}");
}

#[test]
fn fused_trainer_gradients_match_burn_autodiff() {
    // Both activations; and the default's with grid 0's corners read (`--corner-reads`).
    for (activation, corner_reads) in [(Activation::Relu, false), (Activation::Hgelu, false), (Activation::Hgelu, true)] {
        fused_trainer_gradients_match_burn_autodiff_with(activation, corner_reads);
    }
}

fn fused_trainer_gradients_match_burn_autodiff_with(activation: Activation, corner_reads: bool) {
    let set = texset_testkit::small_set(32);
    let options =
        CompressOptions { model: ModelConfig { activation, corner_reads, ..ModelConfig::default() }, ..CompressOptions::default() };
    let (layout, _) = analyse(&set, &options).unwrap();
    let mut params = initial_params(&set, &layout, 3);
    assert_eq!((params.activation, params.grids[0].corners), (activation, corner_reads));
    if corner_reads {
        // Columns that differ per corner (they start equal, the bilinear model).
        let mut rng = Rng::new(9, 0, 0);
        params.layers[0].weights.iter_mut().for_each(|w| *w += (rng.next_f32() - 0.5) * 0.1);
    }
    let sampler = Sampler::new(&set, &layout);
    let mut batch = Batch::default();
    sampler.fill(&mut Rng::new(4, 0, 0), 256, &mut batch);
    let (loss, grads) = loss_and_grads(&params, &batch);
    let (burn_loss, burn_grads) =
        burn_loss_and_grads(&params, &batch.uv, &batch.mask, &batch.target, &batch.weight, &burn::prelude::Device::flex());
    assert!((loss - burn_loss).abs() <= 1e-5 * loss.abs().max(1.0), "loss {loss} vs burn {burn_loss}");
    // Compare every gradient array relative to its own scale (f32 sums in different orders).
    let check = |name: &str, a: &[f32], b: &[f32]| {
        assert_eq!(a.len(), b.len(), "{name} length");
        let scale = b.iter().fold(0.0f32, |m, v| m.max(v.abs())).max(1e-12);
        let worst = a.iter().zip(b).fold(0.0f32, |m, (x, y)| m.max((x - y).abs()));
        assert!(worst <= 1e-3 * scale, "{activation:?}, corners {corner_reads}: {name}: max diff {worst} vs scale {scale}");
    };
    for (i, (g, b)) in grads.grids.iter().zip(&burn_grads.grids).enumerate() {
        check(&format!("grid {i}"), &g.values, &b.values);
    }
    for (i, (g, b)) in grads.layers.iter().zip(&burn_grads.layers).enumerate() {
        check(&format!("layer {i} weights"), &g.weights, &b.weights);
        check(&format!("layer {i} biases"), &g.biases, &b.biases);
    }
}

#[test]
fn budget_gate_gradients_match_finite_differences() {
    let set = texset_testkit::small_set(32);
    // The classic 64-48-32 decoder: with the default's 64-64-64 (or 64-48-48) a ±0.01 step of a
    // gate crosses ReLU kinks and the central difference is off by a quarter, as is a ±0.001 step
    // by f32 rounding of the loss. The input gradient gate gradients are made of is the one
    // `fused_trainer_gradients_match_burn_autodiff` checks on the default layout.
    let options = CompressOptions { model: ModelConfig { hidden_widths: vec![64, 48, 32], ..Default::default() }, ..Default::default() };
    let (layout, _) = analyse(&set, &options).unwrap();
    let params = initial_params(&set, &layout, 3);
    let mut sampler = Sampler::new(&set, &layout);
    sampler.split_for_gates();
    let mut batch = Batch::default();
    sampler.fill(&mut Rng::new(4, 0, 0), 256, &mut batch);
    assert_eq!(batch.gate.len(), 256);
    let slots: std::collections::BTreeSet<u32> = batch.gate.iter().copied().collect();
    assert!(slots.len() > 1, "every texture is sampled on its own: {slots:?}");
    let lc = params.latent_channels();
    let chunk = forward_backward(&params, &params.layers, &batch, None);
    // d loss / d gate: move the mask entries of one texture's texels together.
    let loss_with = |slot: u32, c: usize, delta: f32| {
        let mut b = batch.clone();
        for (i, &g) in batch.gate.iter().enumerate() {
            if g == slot {
                b.mask[i * lc + c] += delta;
            }
        }
        forward_backward(&params, &params.layers, &b, None).weighted_sq_err
    };
    let mut checked = 0;
    for &slot in &slots {
        for c in [0, lc / 2, lc - 1] {
            let eps = 1e-2;
            let numeric = ((loss_with(slot, c, eps) - loss_with(slot, c, -eps)) / (2.0 * f64::from(eps))) as f32;
            let analytic = chunk.gate_grads[slot as usize * lc + c];
            assert!(
                (numeric - analytic).abs() <= 2e-2 * numeric.abs().max(analytic.abs()).max(1e-2),
                "slot {slot} channel {c}: finite difference {numeric}, gradient {analytic}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 6);
}

fn pruned_options(method: PruneMethod) -> CompressOptions {
    CompressOptions {
        schedule: ScheduleConfig { steps: 120, batch_texels: 1024, ..Default::default() },
        budgets: BudgetConfig {
            prune: Some(ChannelPruning { keep_per_grid: vec![6, 8], method, at: 0.3, group_lasso: 1e-3 }),
            ..Default::default()
        },
        ..CompressOptions::default()
    }
}

#[test]
fn channels_removed_during_training_leave_the_bundle() {
    let set = texset_testkit::small_set(32);
    let l1 = compress(&set, &pruned_options(PruneMethod::L1), &NoProgress, &Cancel::new()).unwrap();
    let grids: Vec<u32> = l1.bundle.manifest.grids.iter().map(|g| g.channels).collect();
    assert_eq!(grids, vec![6, 8]);
    assert_eq!(l1.report.train.pruned_channels.len(), 14);
    assert!(l1.report.prune.during_training.as_deref().is_some_and(|d| d.contains("14 channels removed")));
    // Every texture's budget before and after, matching the bundle, with the reason.
    let budgets = &l1.report.prune.budgets;
    assert_eq!(budgets.len(), l1.bundle.manifest.materials.iter().map(|m| m.maps.len()).sum::<usize>());
    let maps = l1.bundle.manifest.materials.iter().flat_map(|m| m.maps.iter());
    for (b, (entry, analysed)) in budgets.iter().zip(maps.zip(&l1.report.analyse.budgets)) {
        println!("{}: {} -> {} ({})", b.texture, b.before, b.after, b.reason);
        assert_eq!(b.texture, analysed.texture);
        assert_eq!(b.before, analysed.channels);
        assert_eq!(b.after as usize, entry.latent_channels.len());
        let removed = b.before - b.after;
        if removed > 0 {
            assert!(b.reason.starts_with(&format!("{removed} of its channels were among the 14 that L1 pruning")), "{}", b.reason);
        } else {
            assert!(b.reason.starts_with("unchanged"), "{}", b.reason);
        }
    }
    assert!(budgets.iter().any(|b| b.after < b.before), "pruning 14 channels changed no texture's budget");
    let random = compress(&set, &pruned_options(PruneMethod::Random), &NoProgress, &Cancel::new()).unwrap();
    assert_ne!(l1.report.train.pruned_channels, random.report.train.pruned_channels);
    for out in [&l1, &random] {
        let read = Bundle::from_bytes(&out.bundle_bytes).unwrap();
        let eval = evaluate(&set, &Decoder::new(&read), false).unwrap();
        assert!(eval.pooled_psnr_db > 25.0, "{:?}", eval.maps);
    }
}

#[test]
fn a_run_resumed_after_the_removal_gives_the_uninterrupted_bundle() {
    let set = texset_testkit::small_set(32);
    let dir = tempfile::tempdir().unwrap();
    let checkpoint = dir.path().join("run.ckpt");
    let base = pruned_options(PruneMethod::L1);
    let straight = compress(&set, &base, &NoProgress, &Cancel::new()).unwrap().bundle_bytes;
    let with_checkpoints = CompressOptions {
        run: RunOptions { checkpoint: Some(CheckpointOptions { path: checkpoint.clone(), every_secs: 0.0 }), ..base.run.clone() },
        ..base.clone()
    };
    let cancel = Cancel::new();
    // Removal happens at step 36; stop well after it.
    let stopper = CancelAt::new(60, cancel.clone());
    assert!(compress(&set, &with_checkpoints, &stopper, &cancel).is_err());
    let resumed_options = CompressOptions { run: RunOptions { resume_from: Some(checkpoint), ..with_checkpoints.run }, ..with_checkpoints };
    let resumed = compress(&set, &resumed_options, &NoProgress, &Cancel::new()).unwrap();
    assert!(resumed.report.train.resumed_from_step.is_some_and(|s| (37..120).contains(&s)));
    assert_eq!(resumed.bundle_bytes, straight, "resumed run differs from the uninterrupted one");
}

#[test]
fn a_run_that_learns_budgets_resumes_before_and_after_the_cut_to_the_uninterrupted_bundle() {
    let set = texset_testkit::small_set(32);
    let dir = tempfile::tempdir().unwrap();
    let checkpoint = dir.path().join("run.ckpt");
    // The cut is at step 36 of 120.
    let base = CompressOptions {
        schedule: ScheduleConfig { steps: 120, batch_texels: 1024, ..Default::default() },
        budgets: BudgetConfig { learned: Some(LearnedBudgets { at: 0.3, ..LearnedBudgets::default() }), ..Default::default() },
        ..CompressOptions::default()
    };
    let straight = compress(&set, &base, &NoProgress, &Cancel::new()).unwrap();
    let cut = straight.report.train.learned_budgets.clone().unwrap();
    assert_eq!(cut.step, 36);
    for stop_at in [20, 60] {
        let with_checkpoints = CompressOptions {
            run: RunOptions { checkpoint: Some(CheckpointOptions { path: checkpoint.clone(), every_secs: 0.0 }), ..base.run.clone() },
            ..base.clone()
        };
        let cancel = Cancel::new();
        let stopper = CancelAt::new(stop_at, cancel.clone());
        assert!(compress(&set, &with_checkpoints, &stopper, &cancel).is_err());
        let resumed_options =
            CompressOptions { run: RunOptions { resume_from: Some(checkpoint.clone()), ..with_checkpoints.run }, ..with_checkpoints };
        let resumed = compress(&set, &resumed_options, &NoProgress, &Cancel::new()).unwrap();
        let from = resumed.report.train.resumed_from_step.unwrap();
        // One resume in the gated steps, one after the cut.
        assert_eq!(from < cut.step, stop_at < cut.step, "stopped at {stop_at}, resumed from {from}");
        assert_eq!(resumed.report.train.learned_budgets.as_ref(), Some(&cut));
        assert_eq!(resumed.bundle_bytes, straight.bundle_bytes, "resumed from step {from}: differs from the uninterrupted run");
        std::fs::remove_file(&checkpoint).unwrap();
    }
}

/// Asks for a snapshot after every step and keeps each one's budgets (per texture, the latent
/// channels it reads).
#[derive(Default)]
struct EverySnapshot {
    budgets: std::sync::Mutex<Vec<Vec<Vec<u32>>>>,
}
impl Progress for EverySnapshot {
    fn snapshot_due(&self) -> bool {
        true
    }
    fn snapshot(&self, layout: &texset_core::model::ModelLayout, _params: &texset_core::model::ModelParams) {
        let budgets = layout.textures.iter().flatten().map(|t| t.latent_channels.clone()).collect();
        self.budgets.lock().unwrap().push(budgets);
    }
}

#[test]
fn learned_budgets_cut_after_a_step_and_previews_show_only_the_cut_model() {
    let set = texset_testkit::small_set(32);
    // 5% of 10 steps rounds to step 0, before anything trained: the cut waits for step 1.
    let options = CompressOptions {
        schedule: ScheduleConfig { steps: 10, batch_texels: 1024, ..Default::default() },
        budgets: BudgetConfig { learned: Some(LearnedBudgets { at: 0.05, ..LearnedBudgets::default() }), ..Default::default() },
        ..CompressOptions::default()
    };
    let progress = EverySnapshot::default();
    let out = compress(&set, &options, &progress, &Cancel::new()).unwrap();
    let cut = out.report.train.learned_budgets.clone().unwrap();
    assert_eq!(cut.step, 1);
    // While gated, each texture reads through its own gates, which no layout expresses: no
    // snapshot then; after the cut, every one has the cut budgets.
    let snapshots = progress.budgets.lock().unwrap();
    assert_eq!(snapshots.len(), 10 - 1);
    assert!(snapshots.iter().all(|b| *b == cut.budgets), "a snapshot decodes other budgets than the cut's");
}

#[test]
fn a_fine_tune_starts_from_the_bundle_and_refuses_another_librarys() {
    let set = texset_testkit::small_set(64);
    let dir = tempfile::tempdir().unwrap();
    let first = compress(&set, &quick_options(), &NoProgress, &Cancel::new()).unwrap();
    let path = dir.path().join("first.texset");
    std::fs::write(&path, &first.bundle_bytes).unwrap();
    let first_db = evaluate(&set, &Decoder::new(&first.bundle), false).unwrap().pooled_psnr_db;

    // 40 steps from the bundle keep (about) its quality; 40 steps from scratch are far below.
    let short = CompressOptions { schedule: ScheduleConfig { steps: 40, ..quick_options().schedule }, ..quick_options() };
    let tuned = compress(
        &set,
        &CompressOptions { run: RunOptions { init_from: Some(path.clone()), ..short.run.clone() }, ..short.clone() },
        &NoProgress,
        &Cancel::new(),
    )
    .unwrap();
    let tuned_db = evaluate(&set, &Decoder::new(&tuned.bundle), false).unwrap().pooled_psnr_db;
    let scratch = compress(&set, &short, &NoProgress, &Cancel::new()).unwrap();
    let scratch_db = evaluate(&set, &Decoder::new(&scratch.bundle), false).unwrap().pooled_psnr_db;
    println!("first {first_db:.2} dB; 40 more steps from it {tuned_db:.2} dB; 40 steps from scratch {scratch_db:.2} dB");
    assert!(tuned_db > first_db - 0.5, "the fine-tune lost quality: {tuned_db:.2} vs {first_db:.2} dB");
    assert!(tuned_db > scratch_db + 3.0, "the fine-tune did not start from the bundle: {tuned_db:.2} vs {scratch_db:.2} dB");

    // A bundle of another shape is a clear error naming it.
    let other = texset_testkit::small_set(32);
    let wide = CompressOptions { model: ModelConfig { hidden_widths: vec![32, 16], ..quick_options().model }, ..quick_options() };
    let err = compress(
        &other,
        &CompressOptions { run: RunOptions { init_from: Some(path.clone()), ..wide.run }, ..wide },
        &NoProgress,
        &Cancel::new(),
    )
    .unwrap_err();
    let message = err.to_string();
    assert!(message.contains("first.texset") && message.contains("not this library's"), "{message}");
}

/// A time budget sets the steps from a timed probe of the trainer: the run trains exactly the
/// steps the report names (the probe's, or the last re-fit's when the speed changed part-way),
/// the probe is counted against the budget, and budgets that are not positive seconds are
/// refused.
#[test]
fn a_time_budget_sets_the_steps_from_a_timed_probe() {
    let set = texset_testkit::small_set(32);
    let mut options =
        CompressOptions { schedule: ScheduleConfig { steps: 7, batch_texels: 1024, ..Default::default() }, ..CompressOptions::default() };
    options.run.time_budget_secs = Some(1.0);
    let out = compress(&set, &options, &NoProgress, &Cancel::new()).unwrap();
    let train = &out.report.train;
    let budget = train.time_budget.as_ref().expect("the report says how the budget became steps");
    let ended_with = budget.refits.last().map_or(budget.steps, |r| r.to_steps);
    assert_eq!((train.steps_run, train.total_steps), (ended_with, ended_with), "{budget:?}");
    // Each re-fit starts from the length the one before left.
    let mut length = budget.steps;
    for r in &budget.refits {
        assert_eq!(r.from_steps, length, "{budget:?}");
        assert!(r.at_step < r.to_steps && r.secs_per_step > 0.0, "{budget:?}");
        length = r.to_steps;
    }
    assert!(budget.probe_steps >= 2 && budget.secs_per_step > 0.0, "{budget:?}");
    assert!(budget.probe_secs < budget.budget_secs, "{budget:?}");
    // The steps come from the measurement, not from `schedule.steps`.
    assert_eq!(budget.steps, texset_core::internal_tests::TimeBudget::steps_for(1.0, budget.probe_secs, budget.secs_per_step));
    assert_eq!(CompressOptions::default().run.time_budget_secs, None);
    for bad in [0.0, -3.0, f64::NAN, f64::INFINITY] {
        options.run.time_budget_secs = Some(bad);
        let err = compress(&set, &options, &NoProgress, &Cancel::new()).unwrap_err();
        assert!(matches!(err, texset_core::CompressError::Options(texset_core::options::OptionsError::TimeBudget { .. })), "{err}");
    }
}

/// `--latent-init pca`: on a library whose only variation is a horizontal ramp (in a colour map
/// and, inverted, in a roughness map), every grid's first channel starts as that ramp: one value
/// per column, monotonic across, at the target spread. The other channels keep their noise.
#[test]
fn pca_latents_start_on_the_contents_principal_direction() {
    use texset_core::{
        options::LatentInit,
        set::{MapKind, Material, MaterialConstants},
    };
    let ramp = |x: u32| x as f32 / 63.0;
    let base = texset_testkit::texture(MapKind::Basecolor, 64, 64, 3, |x, _, c| 0.2 + 0.6 * ramp(x) * (1.0 - 0.2 * c as f32));
    let rough = texset_testkit::texture(MapKind::Roughness, 64, 64, 1, |x, _, _| 0.9 - 0.7 * ramp(x));
    let set = texset_core::set::TextureSet {
        materials: vec![Material {
            name: "ramp".into(),
            source_dir: "ramp".into(),
            textures: vec![base, rough],
            constants: MaterialConstants::default(),
        }],
    };
    // PCA's other channels start as the uniform noise initialisation's (the classic recipe's).
    let mut options = CompressOptions::default();
    options.schedule.latent_init = LatentInit::Noise;
    let (layout, _) = analyse(&set, &options).unwrap();
    let noise = starting_params(&set, &layout, &options).unwrap();
    options.schedule.latent_init = LatentInit::Pca;
    let pca = starting_params(&set, &layout, &options).unwrap();
    for (grid, before) in pca.grids.iter().zip(&noise.grids) {
        let (w, h, ch) = (grid.width as usize, grid.height as usize, grid.channels as usize);
        let at = |x: usize, y: usize| grid.values[(y * w + x) * ch];
        let column: Vec<f32> = (0..w).map(|x| at(x, 0)).collect();
        for y in 0..h {
            for (x, &top) in column.iter().enumerate() {
                assert!((at(x, y) - top).abs() < 1e-5, "cell ({x}, {y}) of a {w}x{h} grid");
            }
        }
        let rising = column.windows(2).all(|p| p[1] > p[0]);
        let falling = column.windows(2).all(|p| p[1] < p[0]);
        assert!(rising || falling, "{column:?}");
        let mean = column.iter().sum::<f32>() / w as f32;
        let sd = (column.iter().map(|v| (v - mean).powi(2)).sum::<f32>() / w as f32).sqrt();
        assert!((sd - 0.25).abs() < 0.01, "spread {sd}");
        // One direction of content: the other channels are the noise initialisation's.
        for (cell, old) in grid.values.chunks_exact(ch).zip(before.values.chunks_exact(ch)) {
            assert_eq!(cell[1..], old[1..]);
        }
    }
}

/// Records the notes a run gives, and cancels it at the first (the run itself would be long).
struct NoteThenCancel {
    notes: std::sync::Mutex<Vec<String>>,
    cancel: Cancel,
}
impl Progress for NoteThenCancel {
    fn note(&self, message: &str) {
        self.notes.lock().unwrap().push(message.to_owned());
        self.cancel.cancel();
    }
}

/// A run of more than `ANNOUNCE_ABOVE_TEXELS` (here 20,000 steps of 8,192 texels, the scale of
/// `--preset max` on a small set) says how long it will take before it trains; a short one says
/// nothing.
#[test]
fn a_long_run_says_beforehand_how_long_it_will_take() {
    let set = texset_testkit::small_set(16);
    let cancel = Cancel::new();
    let progress = NoteThenCancel { notes: std::sync::Mutex::new(Vec::new()), cancel: cancel.clone() };
    let long =
        CompressOptions { schedule: ScheduleConfig { steps: 20_000, batch_texels: 8192, ..Default::default() }, ..Default::default() };
    const { assert!(20_000.0 * 8192.0 > texset_core::internal_tests::ANNOUNCE_ABOVE_TEXELS) };
    let err = compress(&set, &long, &progress, &cancel).unwrap_err();
    assert!(err.to_string().contains("cancelled"), "{err}");
    let notes = progress.notes.lock().unwrap().clone();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].starts_with("20000 steps × 8192 texels on the CPU") && notes[0].contains("ms per step measured, so about"),
        "{notes:?}"
    );

    let quiet = NoteThenCancel { notes: std::sync::Mutex::new(Vec::new()), cancel: Cancel::new() };
    let short = CompressOptions { schedule: ScheduleConfig { steps: 20, batch_texels: 512, ..Default::default() }, ..Default::default() };
    compress(&set, &short, &quiet, &Cancel::new()).unwrap();
    assert!(quiet.notes.lock().unwrap().is_empty());
}
