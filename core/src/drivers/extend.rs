//! Adding materials to a trained library without retraining it.
//!
//! The new materials get latent channels of their own (appended to every grid), the first-layer
//! columns that read those channels and the last-layer rows of their maps: a rank-limited adapter
//! on the frozen shared decoder. On request they also read the library's channels (frozen). Nothing
//! the existing materials read changes: their latents, the hidden layers, the first layer's
//! existing columns, biases and row scales, and their output rows stay bit-identical, and the new
//! columns multiply inputs that are zero for them. So their decoded maps do not change at all
//! (`tests/tests/integration/library_add.rs` checks the PNG bytes), and the run trains a fraction of the
//! parameters on the new material's texels only.

use crate::bundle::{Bundle, LayerEntry};
use crate::model::layout::{GridShape, ModelLayout, TextureSlot};
use crate::model::params::ModelParams;
use crate::model::quant;
use crate::options::{CompressOptions, GridOptions};
use crate::pipeline::{CompressError, PackReport, TextureBudget};
use crate::progress::{Cancel, Pass, Progress};
use crate::set::TextureSet;
use crate::train::{FusedTrainer, Sampler, Schedule, TrainReport, Trainable, initial_params};
use serde::Serialize;

/// How to add materials.
#[derive(Clone, Debug)]
pub struct AddOptions {
    /// Training schedule and seed (grids, widths and bits come from the bundle).
    pub train: CompressOptions,
    /// New latent channels per grid (`None`: the library's channels per grid divided by its
    /// material count, at least one).
    pub adapter_channels: Option<Vec<u32>>,
    /// Whether the new maps also read the library's (frozen) channels. Off by default: for a
    /// material unlike the library they are noise to it (`tea_set_01` added to the shoes: 35.81 dB
    /// reading only its own channels, 29.86 dB reading the shoes' too; docs/decisions/016-library-sharing.md).
    pub read_shared: bool,
}

/// What adding did.
#[derive(Clone, Debug, Serialize)]
pub struct AddReport {
    /// Materials before.
    pub materials_before: usize,
    /// Materials added.
    pub materials_added: usize,
    /// New latent channels per grid.
    pub adapter_channels: Vec<u32>,
    /// Budgets of the new maps (shared channels they read + their own).
    pub budgets: Vec<TextureBudget>,
    /// Parameters that trained.
    pub trained_parameters: usize,
    /// Parameters of the whole model afterwards.
    pub total_parameters: usize,
    /// Training.
    pub train: TrainReport,
    /// The new bundle.
    pub pack: PackReport,
}

/// The result: the grown bundle and its bytes.
#[derive(Clone, Debug)]
pub struct Extended {
    /// The bundle with the new materials appended.
    pub bundle: Bundle,
    /// Its bytes.
    pub bundle_bytes: Vec<u8>,
    /// What happened.
    pub report: AddReport,
}

/// Where an old latent channel index goes once every grid has grown.
fn remap_old_channel(old: &[u32], added: &[u32], c: u32) -> u32 {
    let (mut old_start, mut new_start) = (0u32, 0u32);
    for (&o, &a) in old.iter().zip(added) {
        if c < old_start + o {
            return new_start + (c - old_start);
        }
        old_start += o;
        new_start += o + a;
    }
    c
}

/// Adds the materials of `set` to a trained library. The existing materials decode exactly as
/// before; only the new latents and adapter weights train.
pub fn add_materials(
    bundle: &Bundle,
    set: &TextureSet,
    options: &AddOptions,
    progress: &dyn Progress,
    cancel: &Cancel,
) -> Result<Extended, CompressError> {
    // The library's parameters stay frozen and only the new ones train: the fused CPU trainer's
    // `Trainable` mask. The GPU trainers have no such mask, so asking for one is refused here
    // rather than silently trained on the CPU.
    match options.train.run.backend {
        crate::Backend::Auto | crate::Backend::Cpu => {}
        other => {
            return Err(CompressError::Unsupported(format!(
                "--backend {} cannot add materials to a library yet (the library's parameters must stay frozen, which only the CPU trainer does); use --backend cpu or auto",
                other.name()
            )));
        }
    }
    let manifest = &bundle.manifest;
    for m in &set.materials {
        if manifest.materials.iter().any(|old| old.name == m.name) {
            return Err(CompressError::Unsupported(format!("the library already has a material named '{}'", m.name)));
        }
    }
    if let Some(l) = manifest.layers.iter().find(|l| l.format != crate::model::quant::WeightFormat::Int8) {
        return Err(CompressError::Unsupported(format!(
            "the library's decoder weights are {:?}; adding materials keeps frozen int8 rows, so it needs an int8 library: compress the whole library again",
            l.format
        )));
    }
    if manifest.mip_levels > 1 {
        return Err(CompressError::Unsupported(format!(
            "the library stores a mip chain ({} levels); adding materials to one is not supported yet: compress the whole library again",
            manifest.mip_levels
        )));
    }
    if manifest.grids.iter().any(|g| g.range != quant::LATENT_RANGE) {
        return Err(CompressError::Unsupported("the bundle's latent range is not the one this build trains with".into()));
    }
    let old_channels: Vec<u32> = manifest.grids.iter().map(|g| g.channels).collect();
    let added: Vec<u32> = match &options.adapter_channels {
        Some(a) if a.len() == old_channels.len() => a.clone(),
        Some(a) => {
            return Err(CompressError::Unsupported(format!(
                "{} adapter channel counts given, the bundle has {} grids",
                a.len(),
                old_channels.len()
            )));
        }
        None => old_channels.iter().map(|&c| (c / manifest.materials.len().max(1) as u32).max(1)).collect(),
    };
    if old_channels.iter().zip(&added).any(|(o, a)| o + a > crate::bundle::limits::MAX_GRID_CHANNELS) {
        return Err(CompressError::Unsupported("the grown grids would exceed 256 channels".into()));
    }
    let grown_inputs = manifest.mlp_inputs() + added.iter().sum::<u32>() as usize;
    if grown_inputs > crate::model::params::MAX_MLP_WIDTH {
        return Err(CompressError::Unsupported(format!(
            "the grown decoder would take {grown_inputs} inputs; at most {}",
            crate::model::params::MAX_MLP_WIDTH
        )));
    }

    // Analyse the new materials on their own channels (budgets, duplicates, flat maps).
    progress.pass_started(Pass::Analyse);
    let mut local = options.train.clone();
    local.model.grids =
        added.iter().zip(&manifest.grids).map(|(&channels, g)| GridOptions { texels_per_cell: 1, channels, bits: g.bits }).collect();
    let (local_layout, local_report) = crate::pipeline::analyse(set, &local)?;
    let old_outputs = manifest.output_channels();
    let old_lc = manifest.latent_channels() as u32;
    // Local channel `c` of grid `g` goes after the grid's old channels.
    let mut local_to_new = Vec::new();
    let mut start = 0u32;
    for (&o, &a) in old_channels.iter().zip(&added) {
        local_to_new.extend((0..a).map(|k| start + o + k));
        start += o + a;
    }
    let shared: Vec<u32> = (0..old_lc).map(|c| remap_old_channel(&old_channels, &added, c)).collect();
    let textures: Vec<Vec<TextureSlot>> = local_layout
        .textures
        .iter()
        .map(|slots| {
            slots
                .iter()
                .map(|s| {
                    // A flat map reads nothing; the others read the shared channels and their own.
                    let mut latent_channels: Vec<u32> =
                        if s.latent_channels.is_empty() || !options.read_shared { Vec::new() } else { shared.clone() };
                    latent_channels.extend(s.latent_channels.iter().map(|&c| local_to_new[c as usize]));
                    latent_channels.sort_unstable();
                    TextureSlot {
                        output_offset: old_outputs + s.output_offset,
                        latent_channels,
                        duplicate_of: s.duplicate_of.map(|(m, k)| (m + manifest.materials.len(), k)),
                        ..s.clone()
                    }
                })
                .collect()
        })
        .collect();
    let grids: Vec<GridShape> = manifest
        .grids
        .iter()
        .zip(&added)
        .map(|(g, &a)| GridShape { width: g.width, height: g.height, channels: g.channels + a, bits: g.bits })
        .collect();
    let hidden_widths: Vec<usize> = manifest.layers[..manifest.layers.len() - 1].iter().map(|l| l.outputs as usize).collect();
    let layout = ModelLayout {
        grids: grids.clone(),
        pe_frequencies: manifest.pe_frequencies,
        hidden_widths,
        textures,
        mip_levels: 1,
        mip_group: 1,
        mip_grids: Vec::new(),
        weight_format: crate::model::quant::WeightFormat::Int8,
    };
    let shared_read = if options.read_shared { old_lc } else { 0 };
    let budgets: Vec<TextureBudget> = local_report
        .budgets
        .iter()
        .map(|b| {
            let shared = if b.channels == 0 { 0 } else { shared_read };
            TextureBudget {
                channels: b.channels + shared,
                total_channels: old_lc + b.total_channels,
                reason: format!("{} ({shared} shared, frozen + {} of its own)", b.reason, b.channels),
                ..b.clone()
            }
        })
        .collect();
    progress.pass_finished(
        Pass::Analyse,
        &format!(
            "{} new maps ({} duplicates, {} flat); grids grow by {:?} channels; {} outputs added",
            budgets.len(),
            local_report.duplicates.len(),
            budgets.iter().filter(|b| b.source == crate::pipeline::BudgetSource::Flat).count(),
            added,
            layout.output_channels() - old_outputs
        ),
    );

    // Parameters: the library's as stored, plus fresh new channels, columns and rows.
    let old = bundle.model_params();
    let mut params: ModelParams = initial_params(set, &layout, options.train.schedule.seed);
    for ((grid, old_grid), &o) in params.grids.iter_mut().zip(&old.grids).zip(&old_channels) {
        let (ch, o) = (grid.channels as usize, o as usize);
        for (cell, old_cell) in grid.values.chunks_exact_mut(ch).zip(old_grid.values.chunks_exact(o)) {
            cell[..o].copy_from_slice(old_cell);
        }
    }
    let new_lc = layout.latent_channels();
    let mut old_column_of = vec![None; new_lc + 4 * manifest.pe_frequencies as usize];
    for (c, &n) in shared.iter().enumerate() {
        old_column_of[n as usize] = Some(c);
    }
    for k in 0..4 * manifest.pe_frequencies as usize {
        old_column_of[new_lc + k] = Some(old_lc as usize + k);
    }
    let last = params.layers.len() - 1;
    for (l, (layer, old_layer)) in params.layers.iter_mut().zip(&old.layers).enumerate() {
        for o in 0..layer.outputs {
            if l == last && o >= old_layer.outputs {
                continue;
            }
            layer.biases[o] = old_layer.biases[o];
            let row = &mut layer.weights[o * layer.inputs..(o + 1) * layer.inputs];
            for (i, w) in row.iter_mut().enumerate() {
                let from = if l == 0 { old_column_of[i] } else { Some(i) };
                if let Some(j) = from {
                    *w = old_layer.weights[o * old_layer.inputs + j];
                }
            }
        }
    }
    let mut fixed_row_scales: Vec<Vec<Option<f32>>> = bundle.layers.iter().map(|q| q.scales.iter().copied().map(Some).collect()).collect();
    if let Some(scales) = fixed_row_scales.last_mut() {
        scales.resize(layout.output_channels(), None);
    }
    let trainable = Trainable {
        grid_first_channel: old_channels.clone(),
        first_layer_columns: old_column_of.iter().map(Option::is_none).collect(),
        last_layer_first_row: old_outputs,
        fixed_row_scales,
    };
    let total_parameters = params.parameter_count();
    let trained_parameters = {
        let mut ones = params.zeros_like();
        for g in &mut ones.grids {
            g.values.fill(1.0);
        }
        for l in &mut ones.layers {
            l.weights.fill(1.0);
            l.biases.fill(1.0);
        }
        trainable.mask_grads(&mut ones);
        ones.grids
            .iter()
            .flat_map(|g| &g.values)
            .chain(ones.layers.iter().flat_map(|l| l.weights.iter().chain(&l.biases)))
            .filter(|&&v| v != 0.0)
            .count()
    };

    progress.pass_started(Pass::Train);
    let schedule = Schedule::new(&options.train, &layout);
    let mut trainer = FusedTrainer::new(Sampler::new(set, &layout), schedule.clone(), params).with_trainable(trainable.clone());
    // No snapshots: the model is the grown library's, the layout only the new materials'.
    let outcome = crate::train::run::run(&mut trainer, &crate::train::run::LoopOptions::default(), progress, cancel)?;
    let train = TrainReport::new("cpu (fused, adapter only)".into(), &schedule, &outcome);
    progress.pass_finished(
        Pass::Train,
        &format!(
            "{} steps on the new material(s) in {:.1} s, {trained_parameters} of {total_parameters} parameters trained",
            train.steps_run, train.train_secs
        ),
    );

    progress.pass_started(Pass::Quantise);
    let mut final_params = trainer.params.clone();
    crate::train::round_grids(&mut final_params, &schedule.grid_bits);
    let layers = trainable.quantise_layers(&final_params.layers);
    let latent_levels: Vec<Vec<u8>> = final_params.grids.iter().zip(&grids).map(|(g, s)| quant::grid_levels(g, s.bits)).collect();
    progress.pass_finished(Pass::Quantise, "new latents rounded; adapter weights int8 with the frozen rows' scales");

    progress.pass_started(Pass::Pack);
    let mut new_manifest = manifest.clone();
    for mat in &mut new_manifest.materials {
        for map in &mut mat.maps {
            map.latent_channels = map.latent_channels.iter().map(|&c| remap_old_channel(&old_channels, &added, c)).collect();
        }
    }
    new_manifest.materials.extend(crate::pipeline::material_entries(set, &layout.textures));
    new_manifest.grids = crate::pipeline::grid_entries(&grids);
    new_manifest.layers = layers
        .iter()
        .zip(&manifest.layers)
        .map(|(l, e)| LayerEntry { inputs: l.inputs as u32, outputs: l.outputs as u32, ..e.clone() })
        .collect();
    new_manifest.producer = format!("texset {}", env!("CARGO_PKG_VERSION"));
    let grown = Bundle { manifest: new_manifest, latent_levels, layers };
    let (bundle_bytes, pack) = crate::pipeline::serialise(&grown)?;
    progress.pass_finished(Pass::Pack, &format!("{} bytes, {:.3} bits per texel", pack.bundle_bytes, pack.bits_per_texel));
    Ok(Extended {
        bundle: grown,
        bundle_bytes,
        report: AddReport {
            materials_before: manifest.materials.len(),
            materials_added: set.materials.len(),
            adapter_channels: added,
            budgets,
            trained_parameters,
            total_parameters,
            train,
            pack,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::remap_old_channel;

    #[test]
    fn old_channels_keep_their_grid_and_order() {
        // Grids of 3 and 2 channels grow by 2 and 1: old 0,1,2 | 3,4 → 0,1,2 | 5,6.
        let got: Vec<u32> = (0..5).map(|c| remap_old_channel(&[3, 2], &[2, 1], c)).collect();
        assert_eq!(got, vec![0, 1, 2, 5, 6]);
    }
}
