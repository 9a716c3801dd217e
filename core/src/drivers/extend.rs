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

use crate::analyse::{BudgetSource, TextureBudget};
use crate::bundle::{Bundle, LayerEntry, Manifest};
use crate::model::layout::{GridShape, ModelLayout, TextureSlot};
use crate::model::params::ModelParams;
use crate::model::quant::{self, QuantizedLayer};
use crate::options::{CompressOptions, GridOptions};
use crate::pipeline::{CompressError, PackReport};
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

/// How the library's latent grids grow: their channels before, and the channels appended to each.
struct Growth {
    /// Channels per grid of the library.
    old_channels: Vec<u32>,
    /// New (adapter) channels per grid.
    added: Vec<u32>,
}

impl Growth {
    /// The adapter channels of `options` (or the default share of the library's) for `manifest`,
    /// refused when the grown grids or decoder would pass the format's limits.
    fn new(manifest: &Manifest, options: &AddOptions) -> Result<Self, CompressError> {
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
        Ok(Self { old_channels, added })
    }

    /// Where an old latent channel index goes ([`remap_old_channel`]).
    fn remap(&self, c: u32) -> u32 {
        remap_old_channel(&self.old_channels, &self.added, c)
    }

    /// Where each local channel of the new materials' own layout goes: local channel `c` of grid
    /// `g` goes after the grid's old channels.
    fn local_to_new(&self) -> Vec<u32> {
        let mut local_to_new = Vec::new();
        let mut start = 0u32;
        for (&o, &a) in self.old_channels.iter().zip(&self.added) {
            local_to_new.extend((0..a).map(|k| start + o + k));
            start += o + a;
        }
        local_to_new
    }
}

/// Refuses what cannot add materials: a GPU backend, a name the library has, a library that is not
/// int8, stores a mip chain or was trained with another latent range.
fn check_addable(manifest: &Manifest, set: &TextureSet, options: &AddOptions) -> Result<(), CompressError> {
    // The library's parameters stay frozen and only the new ones train: the fused CPU trainer's
    // `Trainable` mask. The GPU trainers have no such mask, so asking for one is refused here
    // rather than silently trained on the CPU.
    match options.train.run.backend {
        crate::options::Backend::Auto | crate::options::Backend::Cpu => {}
        other => {
            return Err(CompressError::Backend(crate::train::backend::Unsupported {
                backend: other,
                task: "add materials to a library".to_owned(),
                why: "the library's parameters must stay frozen, which only the CPU trainer does".to_owned(),
            }));
        }
    }
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
    if manifest.grids.iter().any(|g| g.corners) {
        return Err(CompressError::Unsupported(
            "the library's decoder reads grid corners; adding materials to one is not supported yet: compress the whole library again"
                .into(),
        ));
    }
    Ok(())
}

/// The grown model's layout and the new maps' budgets.
struct GrownLayout {
    /// The library's grids with the adapter channels appended, its decoder and the new maps' slots.
    layout: ModelLayout,
    /// Budgets of the new maps.
    budgets: Vec<TextureBudget>,
    /// Where each of the library's latent channels went (index: its old channel).
    shared: Vec<u32>,
}

/// The analyse pass of the new materials: analysed on their own channels (budgets, duplicates,
/// flat maps), then placed in the grown model (their channels after each grid's old ones, their
/// outputs after the library's).
fn analyse_new_materials(
    manifest: &Manifest,
    set: &TextureSet,
    options: &AddOptions,
    growth: &Growth,
    progress: &dyn Progress,
) -> Result<GrownLayout, CompressError> {
    progress.pass_started(Pass::Analyse);
    let mut local = options.train.clone();
    local.model.grids =
        growth.added.iter().zip(&manifest.grids).map(|(&channels, g)| GridOptions { texels_per_cell: 1, channels, bits: g.bits }).collect();
    let (local_layout, local_report) = crate::pipeline::analyse(set, &local)?;
    let old_outputs = manifest.output_channels();
    let old_lc = manifest.latent_channels() as u32;
    let shared: Vec<u32> = (0..old_lc).map(|c| growth.remap(c)).collect();
    let textures = grown_slots(&local_layout.textures, manifest, growth, &shared, options.read_shared);
    let grids: Vec<GridShape> = manifest
        .grids
        .iter()
        .zip(&growth.added)
        .map(|(g, &a)| GridShape { width: g.width, height: g.height, channels: g.channels + a, bits: g.bits, corners: g.corners })
        .collect();
    let hidden_widths: Vec<usize> = manifest.layers[..manifest.layers.len() - 1].iter().map(|l| l.outputs as usize).collect();
    let layout = ModelLayout {
        grids,
        pe_frequencies: manifest.pe_frequencies,
        hidden_widths,
        textures,
        mip_levels: 1,
        mip_group: 1,
        mip_grids: Vec::new(),
        weight_format: crate::model::quant::WeightFormat::Int8,
        activation: manifest.activation(),
    };
    let shared_read = if options.read_shared { old_lc } else { 0 };
    let budgets = grown_budgets(&local_report.budgets, old_lc, shared_read);
    progress.pass_finished(
        Pass::Analyse,
        &format!(
            "{} new maps ({} duplicates, {} flat); grids grow by {:?} channels; {} outputs added",
            budgets.len(),
            local_report.duplicates.len(),
            budgets.iter().filter(|b| b.source == BudgetSource::Flat).count(),
            growth.added,
            layout.output_channels() - old_outputs
        ),
    );
    Ok(GrownLayout { layout, budgets, shared })
}

/// The new materials' slots moved into the grown model: their own channels renumbered, the
/// library's (`shared`) added when they read them, outputs and duplicates after the library's.
fn grown_slots(
    local: &[Vec<TextureSlot>],
    manifest: &Manifest,
    growth: &Growth,
    shared: &[u32],
    read_shared: bool,
) -> Vec<Vec<TextureSlot>> {
    let old_outputs = manifest.output_channels();
    let local_to_new = growth.local_to_new();
    local
        .iter()
        .map(|slots| {
            slots
                .iter()
                .map(|s| {
                    // A flat map reads nothing; the others read the shared channels and their own.
                    let mut latent_channels: Vec<u32> =
                        if s.latent_channels.is_empty() || !read_shared { Vec::new() } else { shared.to_vec() };
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
        .collect()
}

/// The new maps' budgets in the grown model: the `shared_read` library channels a map that reads
/// any also reads, of `old_lc` more in all.
fn grown_budgets(local: &[TextureBudget], old_lc: u32, shared_read: u32) -> Vec<TextureBudget> {
    local
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
        .collect()
}

/// The grown model's starting parameters and which of them train.
struct Adapter {
    /// The library's parameters as stored, plus fresh new channels, columns and rows.
    params: ModelParams,
    /// What trains: the new channels, first-layer columns and last-layer rows.
    trainable: Trainable,
    /// Parameters that train.
    trained_parameters: usize,
    /// Parameters of the grown model.
    total_parameters: usize,
}

impl Adapter {
    /// Fresh parameters for `grown` with the library's copied in, and the mask that freezes them.
    fn new(bundle: &Bundle, set: &TextureSet, grown: &GrownLayout, growth: &Growth, seed: u64) -> Self {
        let manifest = &bundle.manifest;
        let layout = &grown.layout;
        let old = bundle.model_params();
        let mut params: ModelParams = initial_params(set, layout, seed);
        for ((grid, old_grid), &o) in params.grids.iter_mut().zip(&old.grids).zip(&growth.old_channels) {
            let (ch, o) = (grid.channels as usize, o as usize);
            for (cell, old_cell) in grid.values.chunks_exact_mut(ch).zip(old_grid.values.chunks_exact(o)) {
                cell[..o].copy_from_slice(old_cell);
            }
        }
        let old_lc = manifest.latent_channels();
        let new_lc = layout.latent_channels();
        let mut old_column_of = vec![None; new_lc + 4 * manifest.pe_frequencies as usize];
        for (c, &n) in grown.shared.iter().enumerate() {
            old_column_of[n as usize] = Some(c);
        }
        for k in 0..4 * manifest.pe_frequencies as usize {
            old_column_of[new_lc + k] = Some(old_lc + k);
        }
        copy_library_layers(&mut params, &old, &old_column_of);
        let mut fixed_row_scales: Vec<Vec<Option<f32>>> =
            bundle.layers.iter().map(|q| q.scales.iter().copied().map(Some).collect()).collect();
        if let Some(scales) = fixed_row_scales.last_mut() {
            scales.resize(layout.output_channels(), None);
        }
        let trainable = Trainable {
            grid_first_channel: growth.old_channels.clone(),
            first_layer_columns: old_column_of.iter().map(Option::is_none).collect(),
            last_layer_first_row: manifest.output_channels(),
            fixed_row_scales,
        };
        let total_parameters = params.parameter_count();
        let trained_parameters = trained_count(&params, &trainable);
        Self { params, trainable, trained_parameters, total_parameters }
    }
}

/// Copies the library's layers into the grown ones: every bias and weight but the new maps' output
/// rows, the first layer's columns through `old_column_of` (grown input → old input).
fn copy_library_layers(params: &mut ModelParams, old: &ModelParams, old_column_of: &[Option<usize>]) {
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
}

/// How many parameters of `params`' shape `trainable` lets train.
fn trained_count(params: &ModelParams, trainable: &Trainable) -> usize {
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
}

/// The trained adapter, rounded to what the bundle stores.
struct TrainedAdapter {
    /// Training.
    train: TrainReport,
    /// Levels of the grown grids.
    latent_levels: Vec<Vec<u8>>,
    /// The grown layers, int8 with the frozen rows' scales.
    layers: Vec<QuantizedLayer>,
}

/// The train and quantise passes: the adapter trains on the new materials' texels alone, then its
/// latents are rounded and its weights quantised with the frozen rows' scales.
fn train_adapter(
    set: &TextureSet,
    layout: &ModelLayout,
    options: &CompressOptions,
    adapter: Adapter,
    progress: &dyn Progress,
    cancel: &Cancel,
) -> Result<TrainedAdapter, CompressError> {
    let Adapter { params, trainable, trained_parameters, total_parameters } = adapter;
    progress.pass_started(Pass::Train);
    let schedule = Schedule::new(options, layout);
    let mut trainer = FusedTrainer::new(Sampler::new(set, layout), schedule.clone(), params).with_trainable(trainable.clone());
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
    let latent_levels: Vec<Vec<u8>> = final_params.grids.iter().zip(&layout.grids).map(|(g, s)| quant::grid_levels(g, s.bits)).collect();
    progress.pass_finished(Pass::Quantise, "new latents rounded; adapter weights int8 with the frozen rows' scales");
    Ok(TrainedAdapter { train, latent_levels, layers })
}

/// The pack pass: the library's manifest with its maps' channels renumbered, the new materials
/// appended and the grown grids and layers, serialised.
fn pack_grown(
    manifest: &Manifest,
    set: &TextureSet,
    layout: &ModelLayout,
    growth: &Growth,
    latent_levels: Vec<Vec<u8>>,
    layers: Vec<QuantizedLayer>,
    progress: &dyn Progress,
) -> Result<(Bundle, Vec<u8>, PackReport), CompressError> {
    progress.pass_started(Pass::Pack);
    let mut new_manifest = manifest.clone();
    for mat in &mut new_manifest.materials {
        for map in &mut mat.maps {
            map.latent_channels = map.latent_channels.iter().map(|&c| growth.remap(c)).collect();
        }
    }
    new_manifest.materials.extend(crate::pipeline::material_entries(set, &layout.textures));
    new_manifest.grids = crate::pipeline::grid_entries(&layout.grids);
    new_manifest.layers = layers
        .iter()
        .zip(&manifest.layers)
        .map(|(l, e)| LayerEntry { inputs: l.inputs as u32, outputs: l.outputs as u32, ..e.clone() })
        .collect();
    new_manifest.producer = format!("texset {}", env!("CARGO_PKG_VERSION"));
    let grown = Bundle { manifest: new_manifest, latent_levels, layers };
    let (bundle_bytes, pack) = crate::pipeline::serialise(&grown)?;
    progress.pass_finished(Pass::Pack, &format!("{} bytes, {:.3} bits per texel", pack.bundle_bytes, pack.bits_per_texel));
    Ok((grown, bundle_bytes, pack))
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
    let manifest = &bundle.manifest;
    check_addable(manifest, set, options)?;
    let growth = Growth::new(manifest, options)?;
    let grown = analyse_new_materials(manifest, set, options, &growth, progress)?;
    let adapter = Adapter::new(bundle, set, &grown, &growth, options.train.schedule.seed);
    let (trained_parameters, total_parameters) = (adapter.trained_parameters, adapter.total_parameters);
    let trained = train_adapter(set, &grown.layout, &options.train, adapter, progress, cancel)?;
    let (grown_bundle, bundle_bytes, pack) =
        pack_grown(manifest, set, &grown.layout, &growth, trained.latent_levels, trained.layers, progress)?;
    Ok(Extended {
        bundle: grown_bundle,
        bundle_bytes,
        report: AddReport {
            materials_before: manifest.materials.len(),
            materials_added: set.materials.len(),
            adapter_channels: growth.added,
            budgets: grown.budgets,
            trained_parameters,
            total_parameters,
            train: trained.train,
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
