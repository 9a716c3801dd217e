//! Unit tests of the options: defaults, validation and what their fingerprints keep.

use super::*;

/// The default options' fingerprint, pinned: a change to it invalidates every checkpoint and
/// `--batch` cache entry made before (they no longer match), so it changes only on purpose, once,
/// with the reason in the commit. Re-pinned for issue 69: the schedule nested by concern
/// (optimiser, quantisation, sampling, loss) and the steps' origin serialised.
#[test]
fn the_default_fingerprint_is_pinned_and_a_schedule_reads_back() {
    use sha2::Digest as _;
    let fingerprint = CompressOptions::default().fingerprint();
    let digest = sha2::Sha256::digest(fingerprint.as_bytes());
    let hex = digest.iter().take(8).fold(String::new(), |mut hex, b| {
        use std::fmt::Write as _;
        let _ = write!(hex, "{b:02x}");
        hex
    });
    assert_eq!(hex, PINNED_DEFAULT_FINGERPRINT, "the default options' fingerprint changed: {fingerprint}");
    for section in ["\"optimiser\":{", "\"quantisation\":{", "\"sampling\":{", "\"loss\":{", "\"steps_origin\":\"preset\""] {
        assert!(fingerprint.contains(section), "{section} in {fingerprint}");
    }
    let mut error = CompressOptions::default();
    error.schedule.sampling.mode = Sampling::Error;
    error.schedule.give_steps(500);
    assert_ne!(error.fingerprint(), fingerprint);
    let json = serde_json::to_string(&error.schedule).expect("a schedule serialises");
    let back: ScheduleConfig = serde_json::from_str(&json).expect("and reads back");
    assert_eq!(back, error.schedule);
}

/// The first 8 bytes of the SHA-256 of `CompressOptions::default().fingerprint()`.
const PINNED_DEFAULT_FINGERPRINT: &str = "f6cd3f2bcfa090b9";

/// No options struct that the fingerprint holds has more than ten fields (issue 69: they nest by
/// concern, as burn nests `AdamConfig`).
#[test]
fn the_schedule_nests_by_concern() {
    let fields = |value: serde_json::Value| value.as_object().map_or(0, serde_json::Map::len);
    let options = CompressOptions::default();
    for (name, value) in [
        ("ModelConfig", serde_json::to_value(&options.model)),
        ("BudgetConfig", serde_json::to_value(&options.budgets)),
        ("ScheduleConfig", serde_json::to_value(&options.schedule)),
        ("OptimiserConfig", serde_json::to_value(&options.schedule.optimiser)),
        ("QuantisationConfig", serde_json::to_value(&options.schedule.quantisation)),
        ("SamplingConfig", serde_json::to_value(&options.schedule.sampling)),
        ("LossConfig", serde_json::to_value(&options.schedule.loss)),
    ] {
        let count = fields(value.expect("serialises"));
        assert!((1..=10).contains(&count), "{name} has {count} fields");
    }
}

#[test]
fn the_default_options_train_the_default_presets_steps() {
    assert_eq!(CompressOptions::default().schedule.steps, DEFAULT_PRESET_STEPS);
}

/// The default decoder is HGELU; a `ReLU` model serialises as it did before the field, and
/// options serialised before it read back as `ReLU`.
#[test]
fn the_activation_defaults_to_hgelu_and_reads_old_options_as_relu() {
    use crate::model::Activation;
    let default = ModelConfig::default();
    assert_eq!(default.activation, Activation::Hgelu);
    let json = serde_json::to_value(&default).expect("options serialise");
    assert_eq!(json["activation"], "hgelu");
    let relu = ModelConfig { activation: Activation::Relu, ..default };
    let mut old = serde_json::to_value(&relu).expect("options serialise");
    assert!(old.get("activation").is_none(), "{old}");
    assert_eq!(serde_json::from_value::<ModelConfig>(old.clone()).expect("and read back"), relu);
    old["activation"] = "hgelu".into();
    assert_eq!(serde_json::from_value::<ModelConfig>(old).expect("and read back").activation, Activation::Hgelu);
}

#[test]
fn presets_train_more_steps_in_their_order() {
    let steps = |p| CompressOptions::preset(p).schedule.steps;
    assert_eq!(steps(Preset::Default), DEFAULT_PRESET_STEPS);
    assert!(steps(Preset::Fast) < steps(Preset::Default));
    assert!(steps(Preset::Default) < steps(Preset::High));
    assert!(steps(Preset::High) <= steps(Preset::Max));
}

/// Training takes decoders up to `MAX_MLP_WIDTH` wide, the GPU decoder's limit, in its hidden
/// layers and its inputs, and nothing wider.
/// Every decoder `validate` lets training make is one the bundle reader accepts: at most
/// `MAX_LAYERS − 1` hidden layers of `MAX_MLP_WIDTH` (inputs too), and an output layer of at most
/// `MAX_LAYER_WIDTH` channels, within the reader's multiply-adds per texel.
#[test]
fn the_costliest_decoder_training_accepts_is_within_the_readers_limit() {
    use crate::bundle::limits::{MAX_LAYER_WIDTH, MAX_LAYERS, MAX_MLP_MACS_PER_TEXEL};
    let width = MAX_MLP_WIDTH as u64;
    let macs = width * width * (MAX_LAYERS as u64 - 1) + width * MAX_LAYER_WIDTH as u64;
    assert!(macs <= MAX_MLP_MACS_PER_TEXEL, "{macs} > {MAX_MLP_MACS_PER_TEXEL}");
}

#[test]
fn the_decoder_width_limit_is_the_gpu_decoders() {
    let base = CompressOptions::default();
    let widest =
        CompressOptions { model: ModelConfig { hidden_widths: vec![MAX_MLP_WIDTH, MAX_MLP_WIDTH], ..base.model.clone() }, ..base.clone() };
    assert_eq!(widest.validate(), Ok(()));
    let wider = CompressOptions { model: ModelConfig { hidden_widths: vec![MAX_MLP_WIDTH + 1], ..base.model.clone() }, ..base.clone() };
    assert!(wider.validate().is_err());
    // Inputs: the latent channels plus 4 per positional-encoding frequency (plus 1 with mips).
    let pe = 4 * base.model.pe_frequencies;
    let fits = vec![
        GridOptions { texels_per_cell: 4, channels: 256, bits: 4 },
        GridOptions { texels_per_cell: 8, channels: MAX_MLP_WIDTH as u32 - 256 - pe, bits: 4 },
    ];
    assert_eq!(CompressOptions { model: ModelConfig { grids: fits.clone(), ..base.model.clone() }, ..base.clone() }.validate(), Ok(()));
    assert!(CompressOptions { model: ModelConfig { grids: fits, mips: true, ..base.model }, ..base }.validate().is_err());
}

/// Corner reads refuse the budget gates that act per input column, naming them.
#[test]
fn corner_reads_refuse_pruning_and_learned_budgets() {
    let mut options = CompressOptions::default();
    options.model.corner_reads = true;
    assert!(options.validate().is_ok());
    options.budgets.prune = Some(ChannelPruning { keep_per_grid: vec![8, 8], method: PruneMethod::L1, at: 0.5, group_lasso: 0.0 });
    assert!(matches!(options.validate(), Err(OptionsError::CornerReads { with: "channel pruning" })));
    options.budgets.prune = None;
    options.budgets.learned = Some(LearnedBudgets::default());
    let error = options.validate().expect_err("learned budgets are refused");
    assert_eq!(error.to_string(), "corner reads do not combine with learned budgets yet");
}
