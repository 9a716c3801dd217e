//! Bundles pinned byte for byte: the same inputs, options and seed give the bundle a build of
//! 2026-12-07 wrote (tests/data/pinned/). The fused trainer's bundles were re-pinned then, when
//! the CPU trainer began to sort each step's draws (docs/decisions/053-sorted-cpu-batches.md;
//! burn's bundle did not change), as before when the default decoder took HGELU
//! (docs/decisions/038-hgelu-default.md). `relu_plain.texset` is the default's options before
//! 038, and `classic_plain.texset` the default's before NTC's pieces and the 64-64-64 decoder
//! (docs/decisions/034-ntc-recipe-default.md). A change to any pass that moves a single bit fails
//! here.
//!
//! The pinned files come from the fused CPU trainer and burn's `flex` backend on x86-64 with AVX2
//! and FMA (matrixmultiply picks its kernel by CPU feature; results do not depend on the thread
//! count). When a change of output is intended, rewrite them with `TEXSET_REPIN=1` and say why in
//! the commit.
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::PathBuf;
use texset_core::{
    Cancel, NoProgress, compress,
    drivers::{AddOptions, add_materials},
    model::Activation,
    options::{Backend, BudgetConfig, CompressOptions, LearnedBudgets, ModelConfig, RunOptions, ScheduleConfig},
    set::{TextureSet, load_library},
};

fn pinned(name: &str) -> PathBuf {
    texset_testkit::repo_root().join("tests/data/pinned").join(name)
}

fn sample_library(names: &[&str]) -> TextureSet {
    let dirs: Vec<PathBuf> = names.iter().map(|n| texset_testkit::repo_root().join("sample_textures").join(n)).collect();
    load_library(&dirs).unwrap().0
}

/// Compares `bytes` with the pinned file, or writes it under `TEXSET_REPIN=1`.
fn check(name: &str, bytes: &[u8]) {
    let path = pinned(name);
    if std::env::var("TEXSET_REPIN").is_ok_and(|v| v == "1") {
        std::fs::write(&path, bytes).unwrap();
        eprintln!("wrote {}", path.display());
        return;
    }
    let want = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(bytes.len(), want.len(), "{name}: {} bytes, pinned {}", bytes.len(), want.len());
    let first = bytes.iter().zip(&want).position(|(a, b)| a != b);
    assert!(first.is_none(), "{name}: first differing byte at {first:?} of {}", want.len());
}

/// The fused CPU trainer on a library with a colour variant (indigo/ochre fabric), a mip chain
/// and learned budgets, then `texset add` on top of a plain library.
#[test]
fn the_fused_trainer_and_add_write_the_pinned_bundles() {
    let library = sample_library(&["fabric_indigo", "fabric_ochre", "metal_plates"]);
    let options = CompressOptions {
        model: ModelConfig { mips: true, ..Default::default() },
        schedule: ScheduleConfig { steps: 120, batch_texels: 1024, ..Default::default() },
        budgets: BudgetConfig { learned: Some(LearnedBudgets::default()), ..Default::default() },
        run: RunOptions { backend: Backend::Cpu, ..Default::default() },
    };
    let out = compress(&library, &options, &NoProgress, &Cancel::new()).unwrap();
    check("fused_mips_learned.texset", &out.bundle_bytes);

    let base = sample_library(&["bricks", "wood"]);
    let plain = CompressOptions {
        schedule: ScheduleConfig { steps: 100, batch_texels: 1024, ..Default::default() },
        run: RunOptions { backend: Backend::Cpu, ..Default::default() },
        ..CompressOptions::default()
    };
    let trained = compress(&base, &plain, &NoProgress, &Cancel::new()).unwrap();
    check("fused_plain.texset", &trained.bundle_bytes);
    let extra = sample_library(&["metal_plates"]);
    let add = AddOptions {
        train: CompressOptions { schedule: ScheduleConfig { steps: 60, ..plain.schedule }, ..plain },
        adapter_channels: None,
        read_shared: false,
    };
    let grown = add_materials(&trained.bundle, &extra, &add, &NoProgress, &Cancel::new()).unwrap();
    check("added.texset", &grown.bundle_bytes);
}

/// The classic recipe, with the decoder and normal loss weight it had, writes the bundle the
/// default wrote before decision 034 took NTC's pieces (`fused_plain.texset` as pinned before
/// it): the old default stays one flag set away, and its bundles decode as before.
#[test]
fn the_classic_recipe_writes_the_bundle_of_the_old_default() {
    let base = sample_library(&["bricks", "wood"]);
    let mut schedule = ScheduleConfig { steps: 100, batch_texels: 1024, ..ScheduleConfig::classic() };
    schedule.loss.weights.insert("normal".to_owned(), 6.0);
    let options = CompressOptions {
        model: ModelConfig { hidden_widths: vec![64, 48, 32], activation: Activation::Relu, ..Default::default() },
        schedule,
        run: RunOptions { backend: Backend::Cpu, ..Default::default() },
        ..CompressOptions::default()
    };
    let out = compress(&base, &options, &NoProgress, &Cancel::new()).unwrap();
    check("classic_plain.texset", &out.bundle_bytes);
    let old = texset_core::bundle::Bundle::read(&pinned("classic_plain.texset")).unwrap();
    assert_eq!(old.layers.iter().map(|l| l.outputs).collect::<Vec<_>>()[..3], [64, 48, 32]);
    let decoded = texset_core::decode::Decoder::new(&old).decode_map(0, 0).unwrap();
    assert!(!decoded.values.is_empty() && decoded.values.iter().all(|v| v.is_finite()));
}

/// A `ReLU` decoder writes the bundle the default wrote before decision 038 took HGELU
/// (`fused_plain.texset` as pinned before it), and decodes as a `ReLU` one.
#[test]
fn a_relu_decoder_writes_the_bundle_of_the_default_before_hgelu() {
    let base = sample_library(&["bricks", "wood"]);
    let options = CompressOptions {
        model: ModelConfig { activation: Activation::Relu, ..Default::default() },
        schedule: ScheduleConfig { steps: 100, batch_texels: 1024, ..Default::default() },
        run: RunOptions { backend: Backend::Cpu, ..Default::default() },
        ..CompressOptions::default()
    };
    let out = compress(&base, &options, &NoProgress, &Cancel::new()).unwrap();
    check("relu_plain.texset", &out.bundle_bytes);
    assert_eq!(out.bundle.manifest.activation(), Activation::Relu);
    let default = compress(&base, &CompressOptions { model: ModelConfig::default(), ..options }, &NoProgress, &Cancel::new()).unwrap();
    assert_eq!(default.bundle.manifest.activation(), Activation::Hgelu);
}

/// burn's autodiff on its `flex` CPU backend, the reference trainer.
#[test]
fn the_burn_trainer_writes_the_pinned_bundle() {
    let set = sample_library(&["wood"]);
    let options = CompressOptions {
        schedule: ScheduleConfig { steps: 30, batch_texels: 512, ..Default::default() },
        run: RunOptions { backend: Backend::BurnFlex, ..Default::default() },
        ..CompressOptions::default()
    };
    let out = compress(&set, &options, &NoProgress, &Cancel::new()).unwrap();
    check("burn_flex.texset", &out.bundle_bytes);
}
