//! The front door: `compress(&set, &options, &progress, &cancel)`, run as explicit passes
//! (analyse/budget → train → prune → quantise → pack), each returning a report.

pub use crate::analyse::{AnalyseReport, BudgetSource, DuplicateFinding, TextureBudget, analyse};
use crate::bundle::{Bundle, GridEntry, LayerEntry, Manifest, MapEntry, MaterialEntry, SectionSizes, WeightFormat};
use crate::model::layout::{GridShape, ModelLayout, TextureSlot};
use crate::model::params::ModelParams;
use crate::model::quant::{self, QuantizedLayer};
use crate::options::{Backend, CompressOptions, Preset, Quantisation, RunOptions};
use crate::progress::{Cancel, Pass, Progress};
use crate::set::TextureSet;
use crate::train::run::Capabilities;
use crate::train::{TrainError, TrainReport};
use serde::Serialize;
use std::fmt::Write as _;

/// Why compression failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompressError {
    /// The set is empty.
    #[error("the texture set has no maps")]
    EmptySet,
    /// An option is out of range.
    #[error("invalid options: {0}")]
    Options(#[from] crate::options::OptionsError),
    /// The options, the backend or the library ask for something this build cannot do (the
    /// message says what, and what to use instead).
    #[error("{0}")]
    Unsupported(String),
    /// A budget names a texture that is not in the set.
    #[error("budget '{0}' names no texture of the set (use a map kind like 'roughness' or 'material/roughness')")]
    UnknownBudget(String),
    /// Training failed or was cancelled.
    #[error(transparent)]
    Train(#[from] TrainError),
    /// The bundle could not be built.
    #[error(transparent)]
    Bundle(#[from] crate::bundle::BundleError),
}

/// What the prune pass removed.
#[derive(Clone, Debug, Serialize)]
pub struct PruneReport {
    /// Latent channels before.
    pub channels_before: usize,
    /// Latent channels after (channels no texture reads are removed).
    pub channels_after: usize,
    /// What the removal during training did, when it ran.
    pub during_training: Option<String>,
    /// Every texture's budget before training (the analyse pass's, or an override) and in the
    /// bundle, with the reason for a change; in the order of [`AnalyseReport::budgets`].
    pub budgets: Vec<BudgetChange>,
}

/// Why a texture's learned budget is what it is: how many of its channels the cut kept and how
/// strong the kept and the dropped ones were.
fn learned_budget_reason(cut: &crate::train::LearnedCut, slot: usize, before: usize, after: usize) -> String {
    let importance = cut.importance.get(slot).map(Vec::as_slice).unwrap_or_default();
    let bar = cut.drop_below;
    let kept_min = importance.iter().copied().filter(|&i| i >= bar).fold(f32::INFINITY, f32::min);
    let dropped_max = importance.iter().copied().filter(|&i| i < bar).fold(0.0f32, f32::max);
    let pct = |v: f32| format!("{:.1}%", 100.0 * v);
    if before == 0 {
        "unchanged: it read no channels".to_owned()
    } else if after == before {
        format!("learned: kept all {before} (weakest at {} of the library's strongest, the bar {})", pct(kept_min), pct(bar))
    } else if after == 0 {
        format!("learned: dropped all {before} (strongest at {}, under the bar {}): decoded from the biases", pct(dropped_max), pct(bar))
    } else {
        format!(
            "learned: dropped {} of {before} under the bar {} (strongest dropped {}, weakest kept {})",
            before - after,
            pct(bar),
            pct(dropped_max),
            pct(kept_min)
        )
    }
}

/// One texture's channel budget before and after training.
#[derive(Clone, Debug, Serialize)]
pub struct BudgetChange {
    /// `material/kind`.
    pub texture: String,
    /// Latent channels it read when training started.
    pub before: u32,
    /// Latent channels it reads in the bundle.
    pub after: u32,
    /// Why they differ, or that they do not.
    pub reason: String,
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

/// What the pack pass wrote.
#[derive(Clone, Debug, Serialize)]
pub struct PackReport {
    /// Bundle size in bytes.
    pub bundle_bytes: u64,
    /// Bundle bits per texel of the library (bytes × 8 / texels).
    pub bits_per_texel: f64,
    /// Library texels (sum over materials of their largest map).
    pub texel_count: u64,
    /// Bytes per section.
    pub sections: SectionSizes,
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

/// Prune pass: removes latent channels that no texture reads (their inputs are always masked to
/// zero, so removal is exact), with the matching first-layer weight columns.
#[must_use]
pub fn prune(layout: &ModelLayout, params: &ModelParams) -> (ModelLayout, ModelParams, PruneReport) {
    let lc = layout.latent_channels();
    let mut used = layout.read_channels();
    // Keep at least one channel per grid (the format needs one; an unread one costs its bits only).
    let mut offset = 0usize;
    for g in &layout.grids {
        let ch = g.channels as usize;
        if ch > 0 && !used[offset..offset + ch].contains(&true) {
            used[offset] = true;
        }
        offset += ch;
    }
    let mut remap = vec![None; lc];
    let mut next = 0u32;
    for (c, u) in used.iter().enumerate() {
        if *u {
            remap[c] = Some(next);
            next += 1;
        }
    }
    let mut new_layout = layout.clone();
    let mut new_params = params.clone();
    let mut offset = 0usize;
    let mut keep_inputs: Vec<usize> = Vec::new();
    let per_level = layout.grids.len().max(1);
    let mut kept_per_grid: Vec<Vec<usize>> = Vec::with_capacity(per_level);
    for shape in &mut new_layout.grids {
        let ch = shape.channels as usize;
        let kept: Vec<usize> = (0..ch).filter(|c| used[offset + c]).collect();
        keep_inputs.extend(kept.iter().map(|c| offset + c));
        shape.channels = kept.len() as u32;
        kept_per_grid.push(kept);
        offset += ch;
    }
    for (i, shape) in new_layout.mip_grids.iter_mut().enumerate() {
        shape.channels = kept_per_grid[i % per_level].len() as u32;
    }
    // Every pyramid level drops the same channels as level 0.
    for (i, (grid, old)) in new_params.all_grids_mut().zip(params.all_grids()).enumerate() {
        let kept = &kept_per_grid[i % per_level];
        let ch = old.channels as usize;
        let cells = grid.width as usize * grid.height as usize;
        grid.values = (0..cells).flat_map(|cell| kept.iter().map(move |&c| old.values[cell * ch + c])).collect();
        grid.channels = kept.len() as u32;
    }
    keep_inputs.extend(lc..params.mlp_inputs());
    if let (Some(first), Some(old)) = (new_params.layers.first_mut(), params.layers.first()) {
        first.inputs = keep_inputs.len();
        first.weights = (0..old.outputs).flat_map(|o| keep_inputs.iter().map(move |&i| old.weights[o * old.inputs + i])).collect();
    }
    for slot in new_layout.textures.iter_mut().flatten() {
        slot.latent_channels = slot.latent_channels.iter().filter_map(|&c| remap[c as usize]).collect();
    }
    let report = PruneReport { channels_before: lc, channels_after: next as usize, during_training: None, budgets: Vec::new() };
    (new_layout, new_params, report)
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

/// Pack pass: the manifest and the bundle bytes.
pub fn pack(
    set: &TextureSet,
    layout: &ModelLayout,
    latent_levels: Vec<Vec<u8>>,
    layers: Vec<QuantizedLayer>,
) -> Result<(Bundle, Vec<u8>, PackReport), CompressError> {
    let last = layers.len().saturating_sub(1);
    let manifest = Manifest {
        materials: material_entries(set, &layout.textures),
        grids: grid_entries(&layout.grids),
        mip_grids: grid_entries(&layout.mip_grids),
        pe_frequencies: layout.pe_frequencies,
        layers: layers
            .iter()
            .enumerate()
            .map(|(i, l)| LayerEntry {
                inputs: l.inputs as u32,
                outputs: l.outputs as u32,
                format: l.format,
                activation: if i == last { "linear".into() } else { "relu".into() },
            })
            .collect(),
        mip_levels: layout.mip_levels,
        mip_group: layout.mip_group,
        producer: format!("texset {}", env!("CARGO_PKG_VERSION")),
    };
    let bundle = Bundle { manifest, latent_levels, layers };
    let (bytes, report) = serialise(&bundle)?;
    Ok((bundle, bytes, report))
}

/// The manifest entries of the set's materials, each map at its slot (output slice, budget,
/// colour transform).
pub(crate) fn material_entries(set: &TextureSet, slots: &[Vec<TextureSlot>]) -> Vec<MaterialEntry> {
    set.materials
        .iter()
        .zip(slots)
        .map(|(m, slots)| MaterialEntry {
            name: m.name.clone(),
            maps: m
                .textures
                .iter()
                .zip(slots)
                .map(|(t, s)| MapEntry {
                    kind: t.kind,
                    width: t.width,
                    height: t.height,
                    channels: t.channels,
                    sample_format: t.sample_format,
                    color_space: t.color_space,
                    normal_convention: t.normal_convention,
                    channel_ranges: t.channel_ranges.clone(),
                    output_offset: s.output_offset as u32,
                    latent_channels: s.latent_channels.clone(),
                    source_file: t.source_path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned(),
                    color_transform: s.color_transform.clone(),
                })
                .collect(),
        })
        .collect()
}

/// The manifest entries of the grids (levels over [`quant::LATENT_RANGE`]).
pub(crate) fn grid_entries(grids: &[GridShape]) -> Vec<GridEntry> {
    grids
        .iter()
        .map(|g| GridEntry { width: g.width, height: g.height, channels: g.channels, bits: g.bits, range: quant::LATENT_RANGE })
        .collect()
}

/// The bundle's bytes and what the pack pass reports of them.
pub(crate) fn serialise(bundle: &Bundle) -> Result<(Vec<u8>, PackReport), CompressError> {
    let (bytes, sections) = bundle.to_bytes()?;
    let texel_count = bundle.texel_count();
    let report = PackReport {
        bundle_bytes: bytes.len() as u64,
        bits_per_texel: bytes.len() as f64 * 8.0 / texel_count.max(1) as f64,
        texel_count,
        sections,
    };
    Ok((bytes, report))
}

/// How many times a preset's steps `--backend auto` trains when it resolved to the fused GPU
/// trainer (a hardware adapter), at the preset's batch: 30,000 steps of 8,192 texels at the
/// default preset. On an H100 that is the time 12,000 steps of 65,536 texels took (the rule
/// before), and it scored higher on all three sets measured (docs/decisions/004-gpu-steps-rule.md, "On a hardware
/// GPU").
pub const HARDWARE_GPU_STEPS_SCALE: f64 = 2.5;

/// The options `auto` trains with once it resolved to `resolved`: on the fused GPU trainer, a
/// preset's steps (at the presets' batch) become [`HARDWARE_GPU_STEPS_SCALE`] times as many.
/// `None`: as given (a backend named by the user, the CPU, or steps or a batch not a preset's).
fn scaled_for_backend(options: &CompressOptions, resolved: Backend) -> Option<CompressOptions> {
    let presets_batch = crate::options::ScheduleConfig::default().batch_texels;
    let presets_steps =
        |steps: u32| [Preset::Fast, Preset::Default, Preset::High].iter().any(|&p| CompressOptions::preset(p).schedule.steps == steps);
    (options.run.backend == Backend::Auto
        && resolved == Backend::Gpu
        && options.schedule.batch_texels == presets_batch
        && presets_steps(options.schedule.steps))
    .then(|| {
        let mut scaled = options.clone();
        scaled.schedule.steps = (f64::from(options.schedule.steps) * HARDWARE_GPU_STEPS_SCALE).round() as u32;
        scaled
    })
}

/// With a mip chain in `layout` and [`crate::options::ScheduleConfig::mip_level0_batch`], the
/// options with a batch grown by the chain's draws
/// ([`crate::train::sampler::chain_draws_per_level0_draw`], whole chunks) so level 0 trains on
/// as many texels per step as without mips; `None`: as given. Measured: with the preset's batch
/// shared by the chain, level 0 lost 0.5 dB at the fast preset (docs/decisions/018-mip-chain-sampling.md).
fn batch_for_chain(set: &TextureSet, layout: &ModelLayout, options: &CompressOptions) -> Option<CompressOptions> {
    let ratio = crate::train::sampler::chain_draws_per_level0_draw(set, layout, options.schedule.mip_sample_boost);
    (options.schedule.mip_level0_batch && ratio > 1.0).then(|| {
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

    progress.pass_started(Pass::Train);
    let (backend, backend_reason) = match options.run.backend {
        Backend::Auto => {
            let (backend, reason) = crate::train::burn::resolve_auto();
            (backend, format!(" (auto: {reason})"))
        }
        other => (other, String::new()),
    };
    // One capability check: what the chosen trainer cannot train sends `auto` to the fused one.
    let missing = match backend {
        Backend::Wgpu | Backend::Flex => Capabilities::BURN.missing(options, &layout),
        Backend::Gpu => Capabilities::FUSED_GPU.missing(options, &layout),
        Backend::Auto | Backend::Cpu => None,
    };
    let (backend, backend_reason) = match (backend, missing) {
        (Backend::Wgpu | Backend::Flex | Backend::Gpu, Some((what, why))) => {
            if options.run.backend != Backend::Auto {
                return Err(CompressError::Unsupported(format!(
                    "--backend {} cannot train {what} yet ({why}); use --backend cpu or auto",
                    backend.name()
                )));
            }
            (Backend::Cpu, format!(" (auto: {what} trains on the CPU trainer)"))
        }
        (other, _) => (other, backend_reason),
    };
    // A hardware GPU's speed goes into more steps (the CPU fallback, if the device fails, goes on
    // with the same schedule, so a checkpoint of the run still matches).
    let scaled = scaled_for_backend(options, backend);
    if let Some(scaled) = &scaled {
        progress.note(&format!(
            "training on a hardware GPU: {} steps instead of the preset's {}",
            scaled.schedule.steps, options.schedule.steps
        ));
    }
    let options = scaled.as_ref().unwrap_or(options);
    let chain_batch = batch_for_chain(set, &layout, options);
    if let Some(chain) = &chain_batch {
        progress.note(&format!(
            "mip chain: {} texels per step (level 0 gets {}, as without mips)",
            chain.schedule.batch_texels, options.schedule.batch_texels
        ));
    }
    let options = chain_batch.as_ref().unwrap_or(options);
    let on_cpu = |why: String| -> Result<(ModelParams, TrainReport), CompressError> {
        progress.warning(&format!("GPU training failed ({why}); training on the CPU instead"));
        // A run that wrote checkpoints goes on from the last one.
        let mut resumed = options.clone();
        if resumed.run.resume_from.is_none() {
            resumed.run.resume_from = options.run.checkpoint.as_ref().map(|c| c.path.clone());
        }
        let (params, report) = crate::train::train_fused(set, &layout, &resumed, progress, cancel)?;
        Ok((params, TrainReport { gpu_fallback: Some(why), ..report }))
    };
    let (params, train_report) = match backend {
        Backend::Auto | Backend::Cpu => crate::train::train_fused(set, &layout, options, progress, cancel)?,
        Backend::Gpu => match crate::train::gpu::train_gpu(set, &layout, options, progress, cancel) {
            Ok(trained) => trained,
            Err(TrainError::Gpu(why)) => on_cpu(why)?,
            Err(e) => return Err(e.into()),
        },
        Backend::Wgpu | Backend::Flex => {
            let resolved = CompressOptions { run: RunOptions { backend, ..options.run.clone() }, ..options.clone() };
            match crate::train::burn::train_burn_guarded(set, &layout, &resolved, progress, cancel) {
                Ok(trained) => trained,
                Err(TrainError::Gpu(why)) => on_cpu(why)?,
                Err(e) => return Err(e.into()),
            }
        }
    };
    let budget = train_report.time_budget.as_ref().map_or(String::new(), |b| {
        let refits = b.refits.iter().fold(String::new(), |mut s, r| {
            let _ = write!(s, ", {} at step {} ({:.1} ms per step)", r.to_steps, r.at_step, 1e3 * r.secs_per_step);
            s
        });
        format!("; time budget {:.1} s: {:.1} ms per step measured, so {} steps{refits}", b.budget_secs, 1e3 * b.secs_per_step, b.steps)
    });
    progress.pass_finished(
        Pass::Train,
        &format!(
            "{} steps on {}{backend_reason} in {:.1} s ({:.2} M texels/s){budget}",
            train_report.steps_run,
            train_report.backend,
            train_report.train_secs,
            train_report.texels_per_sec / 1e6
        ),
    );

    progress.pass_started(Pass::Prune);
    // Channels training removed are read by no texture any more.
    let mut layout = layout;
    let budgets_before: Vec<usize> = layout.textures.iter().flatten().map(|s| s.latent_channels.len()).collect();
    if !train_report.pruned_channels.is_empty() {
        for slot in layout.textures.iter_mut().flatten() {
            slot.latent_channels.retain(|c| train_report.pruned_channels.binary_search(c).is_err());
        }
    }
    if let Some(cut) = &train_report.learned_budgets {
        layout = cut.apply(&layout);
    }
    let (layout, params, mut prune_report) = prune(&layout, &params);
    if let (Some(cut), Some(b)) = (&train_report.learned_budgets, &options.budgets.learned) {
        let before: usize = budgets_before.iter().sum();
        let after: usize = cut.budgets.iter().map(Vec::len).sum();
        prune_report.during_training = Some(format!(
            "budgets learned: gates per texture and channel with a group lasso of {}, cut at step {} keeping importance ≥ {:.0}% of the largest: {before} → {after} texture-channel reads",
            b.strength,
            cut.step,
            100.0 * cut.drop_below
        ));
    }
    if let Some(p) = &options.budgets.prune {
        prune_report.during_training = Some(format!(
            "{} channels removed at {:.0}% of training by {:?} (group lasso {}), keeping {:?} per grid",
            train_report.pruned_channels.len(),
            100.0 * p.at,
            p.method,
            p.group_lasso,
            p.keep_per_grid
        ));
    }
    // The layout holds one slot per texture of the set, in the set's order (as the analyse pass
    // named them).
    let names = set.materials.iter().flat_map(|m| m.textures.iter().map(move |t| format!("{}/{}", m.name, t.kind)));
    let method = options.budgets.prune.as_ref().map(|p| format!("{:?} pruning at {:.0}% of training", p.method, 100.0 * p.at));
    let learned = train_report.learned_budgets.as_ref();
    prune_report.budgets = layout
        .textures
        .iter()
        .flatten()
        .zip(&budgets_before)
        .zip(names)
        .enumerate()
        .map(|(s, ((slot, &before), texture))| {
            let after = slot.latent_channels.len();
            if let Some(cut) = learned {
                let reason = learned_budget_reason(cut, s, before, after);
                return BudgetChange { texture, before: before as u32, after: after as u32, reason };
            }
            let reason = match (after.cmp(&before), &method) {
                (std::cmp::Ordering::Less, Some(method)) => {
                    format!(
                        "{} of its channels were among the {} that {method} removed",
                        before - after,
                        train_report.pruned_channels.len()
                    )
                }
                (std::cmp::Ordering::Equal, Some(_)) => "unchanged: pruning removed none of its channels".to_owned(),
                _ => "unchanged: no channel pruning during training".to_owned(),
            };
            BudgetChange { texture, before: before as u32, after: after as u32, reason }
        })
        .collect();
    progress.pass_finished(
        Pass::Prune,
        &format!(
            "latent channels {} → {}{}",
            prune_report.channels_before,
            prune_report.channels_after,
            prune_report.during_training.as_deref().map(|d| format!(" ({d})")).unwrap_or_default()
        ),
    );

    progress.pass_started(Pass::Quantise);
    let (levels, layers, max_weight_error) = quantise(&layout, &params);
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

    progress.pass_started(Pass::Pack);
    let (bundle, bundle_bytes, pack_report) = pack(set, &layout, levels, layers)?;
    progress.pass_finished(Pass::Pack, &format!("{} bytes, {:.3} bits per texel", pack_report.bundle_bytes, pack_report.bits_per_texel));

    Ok(Compressed {
        bundle,
        bundle_bytes,
        report: CompressReport {
            analyse: analyse_report,
            train: train_report,
            prune: prune_report,
            quantise: quantise_report,
            pack: pack_report,
        },
    })
}

#[cfg(test)]
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
            for resolved in [Backend::Cpu, Backend::Wgpu, Backend::Flex] {
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
        let mut own = CompressOptions::preset(Preset::Default);
        own.schedule.steps = 5000;
        assert!(scaled_for_backend(&own, Backend::Gpu).is_none());
    }
}
