//! The front door: `compress(&set, &options, &progress, &cancel)`, run as explicit passes
//! (analyse/budget → train → prune → quantise → pack), each a step of its own returning a report;
//! [`progress`] is how they report and are cancelled.

pub use crate::analyse::analyse;
use crate::analyse::{AnalyseReport, BudgetSource};
use crate::bundle::Bundle;
use crate::model::WeightFormat;
use crate::model::layout::ModelLayout;
use crate::model::params::ModelParams;
use crate::model::quant::{self, QuantizedLayer};
use crate::options::{Backend, CompressOptions, Quantisation, StepsOrigin};
use crate::progress::{Cancel, Pass, Progress};
use crate::set::TextureSet;
use crate::train::{TrainError, TrainReport};
use serde::Serialize;
use std::borrow::Cow;
use std::fmt::Write as _;

mod pack;
pub(crate) mod progress;
mod prune;

pub use pack::{PackReport, pack};
pub(crate) use pack::{grid_entries, material_entries, serialise};
pub use prune::{BudgetChange, PruneReport};

/// Why compression failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompressError {
    /// The analyse pass refused the set (an options error of its own is [`Self::Options`]).
    #[error(transparent)]
    Analyse(crate::analyse::AnalyseError),
    /// An option is out of range.
    #[error("invalid options: {0}")]
    Options(#[from] crate::options::OptionsError),
    /// The options or the library ask for something this build cannot do (the message says what).
    #[error("{0}")]
    Unsupported(String),
    /// The backend named cannot do what the options ask; `auto` or the CPU backend can.
    #[error(transparent)]
    Backend(#[from] crate::train::backend::Unsupported),
    /// Training failed or was cancelled.
    #[error(transparent)]
    Train(#[from] TrainError),
    /// The bundle could not be built.
    #[error(transparent)]
    Bundle(#[from] crate::bundle::BundleError),
}

impl From<crate::analyse::AnalyseError> for CompressError {
    /// An options error stays [`CompressError::Options`], whichever pass found it.
    fn from(error: crate::analyse::AnalyseError) -> Self {
        match error {
            crate::analyse::AnalyseError::Options(e) => Self::Options(e),
            other => Self::Analyse(other),
        }
    }
}

/// What the quantise pass did.
#[derive(Clone, Debug, Serialize)]
pub struct QuantiseReport {
    /// Bits per latent, per grid.
    pub latent_bits: Vec<u32>,
    /// Largest |dequantised − trained| weight difference. Training hands over weights already
    /// rounded to the format (QAT or PTQ alike), so this checks that quantising them again is
    /// exact: 0 unless something between training and the pass changed them.
    pub max_weight_error: f32,
    /// Weight format.
    pub weight_format: WeightFormat,
    /// How the latents met their bits in training (`auto` decided: `qat` or `ptq`).
    pub latent_quantisation: Quantisation,
    /// How the weights met their format in training (`auto` decided: `qat` or `ptq`).
    pub weight_quantisation: Quantisation,
}

/// Reports of every pass.
#[derive(Clone, Debug, Serialize)]
pub struct CompressReport {
    /// Analyse/budget.
    pub analyse: AnalyseReport,
    /// Train.
    pub train: TrainReport,
    /// Prune.
    pub prune: PruneReport,
    /// Quantise.
    pub quantise: QuantiseReport,
    /// Pack.
    pub pack: PackReport,
}

/// A compressed library and how it was made.
#[derive(Clone, Debug)]
pub struct Compressed {
    /// The bundle.
    pub bundle: Bundle,
    /// The serialised bundle (what [`Bundle::write`] writes).
    pub bundle_bytes: Vec<u8>,
    /// Reports.
    pub report: CompressReport,
}

/// Quantise pass: latent levels per grid and the layers in the layout's weight format, with the
/// largest |dequantised − trained| weight difference.
#[must_use]
pub fn quantise(layout: &ModelLayout, params: &ModelParams) -> (Vec<Vec<u8>>, Vec<QuantizedLayer>, f32) {
    let per_level = layout.grids.len().max(1);
    let levels = params.all_grids().enumerate().map(|(i, g)| quant::grid_levels(g, layout.grids[i % per_level].bits)).collect();
    let layers: Vec<QuantizedLayer> = params.layers.iter().map(|l| QuantizedLayer::quantize_as(l, layout.weight_format)).collect();
    let max_weight_error = params
        .layers
        .iter()
        .zip(&layers)
        .flat_map(|(p, q)| {
            let d = q.dequantize();
            p.weights.iter().zip(d.weights).map(|(a, b)| (a - b).abs()).collect::<Vec<_>>()
        })
        .fold(0.0f32, f32::max);
    (levels, layers, max_weight_error)
}

/// The bundle a model in training would make if training stopped now: the quantise and pack
/// passes on `params` (what [`Progress::snapshot`] hands over), for live previews.
pub fn snapshot_bundle(set: &TextureSet, layout: &ModelLayout, params: &ModelParams) -> Result<Bundle, CompressError> {
    let (levels, layers, _) = quantise(layout, params);
    let (bundle, _, _) = pack(set, layout, levels, layers)?;
    Ok(bundle)
}

/// How many times a preset's steps `--backend auto` trains when it resolved to the fused GPU
/// trainer (a hardware adapter), at the preset's batch: 30,000 steps of 8,192 texels at the
/// default preset. On an H100 that is the time 12,000 steps of 65,536 texels took (the rule
/// before), and it scored higher on all three sets measured (docs/decisions/004-gpu-steps-rule.md, "On a hardware
/// GPU").
pub(crate) const HARDWARE_GPU_STEPS_SCALE: f64 = 2.5;

/// The options `auto` trains with once it resolved to `resolved`: on the fused GPU trainer, a
/// preset's steps (at the presets' batch) become [`HARDWARE_GPU_STEPS_SCALE`] times as many.
/// `None`: as given (a backend named by the user, the CPU, steps given
/// ([`StepsOrigin::Given`], whatever their value) or a batch not the presets').
fn scaled_for_backend(options: &CompressOptions, resolved: Backend) -> Option<CompressOptions> {
    let presets_batch = crate::options::ScheduleConfig::default().batch_texels;
    (options.run.backend == Backend::Auto
        && resolved == Backend::Gpu
        && options.schedule.batch_texels == presets_batch
        && options.schedule.steps_origin == StepsOrigin::Preset)
        .then(|| {
            let mut scaled = options.clone();
            scaled.schedule.steps = (f64::from(options.schedule.steps) * HARDWARE_GPU_STEPS_SCALE).round() as u32;
            scaled
        })
}

/// With a mip chain in `layout` and [`crate::options::SamplingConfig::mip_level0_batch`], the
/// options with a batch grown by the chain's draws
/// ([`crate::train::sampler::chain_draws_per_level0_draw`], whole chunks) so level 0 trains on
/// as many texels per step as without mips; `None`: as given. Measured: with the preset's batch
/// shared by the chain, level 0 lost 0.5 dB at the fast preset (docs/decisions/018-mip-chain-sampling.md).
fn batch_for_chain(set: &TextureSet, layout: &ModelLayout, options: &CompressOptions) -> Option<CompressOptions> {
    let ratio = crate::train::sampler::chain_draws_per_level0_draw(set, layout, options.schedule.sampling.mip_sample_boost);
    (options.schedule.sampling.mip_level0_batch && ratio > 1.0).then(|| {
        let mut scaled = options.clone();
        let texels = (options.schedule.batch_texels as f64 * ratio).ceil() as usize;
        scaled.schedule.batch_texels = texels.div_ceil(crate::train::CHUNK_TEXELS) * crate::train::CHUNK_TEXELS;
        scaled
    })
}

/// Compresses a library into a bundle. The one entry point of the studio, the CLI and the tests.
pub fn compress(
    set: &TextureSet,
    options: &CompressOptions,
    progress: &dyn Progress,
    cancel: &Cancel,
) -> Result<Compressed, CompressError> {
    let (layout, analyse_report) = analyse_pass(set, options, progress)?;
    let trained = train_pass(set, &layout, options, progress, cancel)?;
    let (layout, params, prune_report) = prune::prune_pass(set, layout, &trained.params, &trained.report, &trained.options, progress);
    let (levels, layers, quantise_report) = quantise_pass(&layout, &params, &trained.options, progress);
    let (bundle, bundle_bytes, pack_report) = pack_pass(set, &layout, levels, layers, progress)?;
    Ok(Compressed {
        bundle,
        bundle_bytes,
        report: CompressReport {
            analyse: analyse_report,
            train: trained.report,
            prune: prune_report,
            quantise: quantise_report,
            pack: pack_report,
        },
    })
}

/// The analyse pass of [`compress`]: the layout (grids, budgets, duplicates, MLP) of `set`.
fn analyse_pass(
    set: &TextureSet,
    options: &CompressOptions,
    progress: &dyn Progress,
) -> Result<(ModelLayout, AnalyseReport), CompressError> {
    progress.pass_started(Pass::Analyse);
    let (layout, analyse_report) = analyse(set, options)?;
    progress.pass_finished(
        Pass::Analyse,
        &format!(
            "{} textures ({} stored once as duplicates, {} flat), grids {}, MLP {:?}",
            analyse_report.budgets.len(),
            analyse_report.duplicates.len(),
            analyse_report.budgets.iter().filter(|b| b.source == BudgetSource::Flat).count(),
            analyse_report
                .grids
                .iter()
                .map(|g| format!("{}x{}x{}@{}b", g.width, g.height, g.channels, g.bits))
                .collect::<Vec<_>>()
                .join(" + "),
            analyse_report.mlp_widths
        ),
    );
    Ok((layout, analyse_report))
}

/// What the train pass hands on: the model, its report and the options it trained with (a
/// hardware GPU's steps, a mip chain's batch: the later passes read them).
struct Trained<'o> {
    options: Cow<'o, CompressOptions>,
    params: ModelParams,
    report: TrainReport,
}

/// The train pass of [`compress`]: the backend chosen ([`crate::train::backend::choose`]), the
/// options it trains with ([`options_for_backend`]) and the run on it
/// ([`crate::train::backend::train_on`]).
fn train_pass<'o>(
    set: &TextureSet,
    layout: &ModelLayout,
    options: &'o CompressOptions,
    progress: &dyn Progress,
    cancel: &Cancel,
) -> Result<Trained<'o>, CompressError> {
    progress.pass_started(Pass::Train);
    let choice = crate::train::backend::choose(options, layout)?;
    let backend = choice.backend;
    let backend_reason = choice.auto_reason.map_or(String::new(), |reason| format!(" (auto: {reason})"));
    let options = options_for_backend(set, layout, options, backend, progress);
    let (params, train_report) = crate::train::backend::train_on(set, layout, &options, backend, progress, cancel)?;
    progress.pass_finished(Pass::Train, &train_summary(&train_report, &backend_reason));
    Ok(Trained { options, params, report: train_report })
}

/// The options `options` train with on `backend`, each change noted through `progress`: a
/// preset's steps scaled on a hardware GPU ([`scaled_for_backend`]) and a mip chain's batch
/// ([`batch_for_chain`]).
fn options_for_backend<'o>(
    set: &TextureSet,
    layout: &ModelLayout,
    options: &'o CompressOptions,
    backend: Backend,
    progress: &dyn Progress,
) -> Cow<'o, CompressOptions> {
    let mut options = Cow::Borrowed(options);
    // A hardware GPU's speed goes into more steps (the CPU fallback, if the device fails, goes on
    // with the same schedule, so a checkpoint of the run still matches).
    if let Some(scaled) = scaled_for_backend(&options, backend) {
        progress.note(&format!(
            "training on a hardware GPU: {} steps instead of the preset's {}",
            scaled.schedule.steps, options.schedule.steps
        ));
        options = Cow::Owned(scaled);
    }
    if let Some(chain) = batch_for_chain(set, layout, &options) {
        progress.note(&format!(
            "mip chain: {} texels per step (level 0 gets {}, as without mips)",
            chain.schedule.batch_texels, options.schedule.batch_texels
        ));
        options = Cow::Owned(chain);
    }
    options
}

/// The train pass's summary: steps, backend (and why `auto` chose it), time, throughput and how
/// a time budget set the steps.
fn train_summary(train_report: &TrainReport, backend_reason: &str) -> String {
    let budget = train_report.time_budget.as_ref().map_or(String::new(), |b| {
        let refits = b.refits.iter().fold(String::new(), |mut s, r| {
            let _ = write!(s, ", {} at step {} ({:.1} ms per step)", r.to_steps, r.at_step, 1e3 * r.secs_per_step);
            s
        });
        format!("; time budget {:.1} s: {:.1} ms per step measured, so {} steps{refits}", b.budget_secs, 1e3 * b.secs_per_step, b.steps)
    });
    format!(
        "{} steps on {}{backend_reason} in {:.1} s ({:.2} M texels/s){budget}",
        train_report.steps_run,
        train_report.backend,
        train_report.train_secs,
        train_report.texels_per_sec / 1e6
    )
}

/// The quantise pass of [`compress`]: [`quantise`], reported with how `options` met the bits in
/// training.
fn quantise_pass(
    layout: &ModelLayout,
    params: &ModelParams,
    options: &CompressOptions,
    progress: &dyn Progress,
) -> (Vec<Vec<u8>>, Vec<QuantizedLayer>, QuantiseReport) {
    progress.pass_started(Pass::Quantise);
    let (levels, layers, max_weight_error) = quantise(layout, params);
    let quantise_report = QuantiseReport {
        latent_bits: layout.grids.iter().map(|g| g.bits).collect(),
        max_weight_error,
        weight_format: layout.weight_format,
        latent_quantisation: options.resolved_latent_quantisation(),
        weight_quantisation: options.resolved_weight_quantisation(),
    };
    progress.pass_finished(
        Pass::Quantise,
        &format!(
            "latents at {:?} bits ({}), weights {} ({}; re-quantisation error {:.2e})",
            quantise_report.latent_bits,
            quantise_report.latent_quantisation.label(),
            quantise_report.weight_format.label(),
            quantise_report.weight_quantisation.label(),
            quantise_report.max_weight_error
        ),
    );
    (levels, layers, quantise_report)
}

/// The pack pass of [`compress`]: [`pack`], reported.
fn pack_pass(
    set: &TextureSet,
    layout: &ModelLayout,
    levels: Vec<Vec<u8>>,
    layers: Vec<QuantizedLayer>,
    progress: &dyn Progress,
) -> Result<(Bundle, Vec<u8>, PackReport), CompressError> {
    progress.pass_started(Pass::Pack);
    let (bundle, bundle_bytes, pack_report) = pack(set, layout, levels, layers)?;
    progress.pass_finished(Pass::Pack, &format!("{} bytes, {:.3} bits per texel", pack_report.bundle_bytes, pack_report.bits_per_texel));
    Ok((bundle, bundle_bytes, pack_report))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests fail loudly on any error")]
mod tests {
    use super::scaled_for_backend;
    use crate::options::{Backend, CompressOptions, Preset};

    #[test]
    fn auto_on_a_hardware_gpu_trains_more_of_the_presets_steps_at_its_batch() {
        for preset in [Preset::Fast, Preset::Default, Preset::High] {
            let options = CompressOptions::preset(preset);
            let scaled = scaled_for_backend(&options, Backend::Gpu).expect("auto resolved to the GPU trainer");
            assert_eq!(scaled.schedule.steps, options.schedule.steps * 5 / 2, "{preset:?}: 2.5× the steps");
            assert_eq!(scaled.schedule.batch_texels, options.schedule.batch_texels);
            // The CPU, and the trainers named by the user, keep the preset's steps.
            for resolved in [Backend::Cpu, Backend::BurnWgpu, Backend::BurnFlex] {
                assert!(scaled_for_backend(&options, resolved).is_none());
            }
            let mut named = options.clone();
            named.run.backend = Backend::Gpu;
            assert!(scaled_for_backend(&named, Backend::Gpu).is_none());
        }
        assert_eq!(scaled_for_backend(&CompressOptions::preset(Preset::Default), Backend::Gpu).map(|o| o.schedule.steps), Some(30_000));
        // A batch that is not the presets' (max's, or the caller's own) is kept, and so are steps
        // that are not a preset's (the caller's own).
        assert!(scaled_for_backend(&CompressOptions::preset(Preset::Max), Backend::Gpu).is_none());
        let mut own = CompressOptions::preset(Preset::Default);
        own.schedule.batch_texels = 1024;
        assert!(scaled_for_backend(&own, Backend::Gpu).is_none());
        // Steps given are trained as given, a preset's value or not (before, `--steps 12000`
        // was taken for the default preset's and scaled to 30,000).
        for steps in [5000, 12_000, 1500] {
            let mut own = CompressOptions::preset(Preset::Default);
            own.schedule.give_steps(steps);
            assert!(scaled_for_backend(&own, Backend::Gpu).is_none(), "--steps {steps}");
        }
        // The origin is the choice: a preset's steps changed in place are still scaled.
        let mut preset = CompressOptions::preset(Preset::Default);
        preset.schedule.steps = 5000;
        assert_eq!(scaled_for_backend(&preset, Backend::Gpu).map(|o| o.schedule.steps), Some(12_500));
    }

    /// The origin is part of the fingerprint (it decides the steps a hardware GPU trains), and
    /// reads back.
    #[test]
    fn steps_origin_is_part_of_the_fingerprint() {
        let preset = CompressOptions::preset(Preset::Default);
        assert!(preset.fingerprint().contains(r#""steps_origin":"preset""#), "{}", preset.fingerprint());
        let mut given = preset.clone();
        given.schedule.give_steps(preset.schedule.steps);
        assert!(given.fingerprint().contains(r#""steps_origin":"given""#), "{}", given.fingerprint());
        let back: crate::options::ScheduleConfig = serde_json::from_str(&serde_json::to_string(&given.schedule).unwrap()).unwrap();
        assert_eq!(back, given.schedule);
    }
}
