//! Training: the texel sampler every backend shares, and the hand-fused CPU trainer (latent
//! gather + MLP forward/backward through the batched SIMD kernels + Adam), with burn as its reference in tests.
//!
//! Determinism: a step's batch is split into fixed chunks of [`CHUNK_TEXELS`]; each chunk draws its
//! texels and noise from a generator seeded by `(seed, step, chunk)` and the gradients are summed
//! in chunk order, so results do not depend on the number of threads. The fused trainer sorts a
//! step's draws by position before the chunks train them (decision 053).

use crate::base::rng::Rng;
use crate::model::layout::ModelLayout;
use crate::model::params::{LayerParams, ModelParams};
use crate::model::quant::{self, QuantizedLayer};
use crate::options::{ChannelPruning, CompressOptions, LearnedBudgets, PruneMethod};
use crate::progress::{Cancel, Progress, TrainPhase};
use crate::set::TextureSet;
use crate::train::TrainError;
use crate::train::adam::{ADAM_BETA2, Adam, AdamStep, adam_update, corrections};
use crate::train::gates::{BudgetGates, LearnedCut, column_norms};
use crate::train::kernel::{ChunkGrads, Noise, forward_backward, scatter_grid_grads, sum_layer_grads};
use crate::train::run::{Capabilities, RunState, StepStats, TrainReport, Trainer, train};
use crate::train::sampler::{Batch, CHUNK_TEXELS, Sampler};
use crate::train::schedule::{Schedule, round_grids, step_at_fraction};
use rayon::prelude::*;
use std::borrow::Cow;
use std::path::Path;

/// Which parameters a run may change; everything else stays bit-identical. Used to add materials
/// to a trained library: the new latent channels, the first layer's columns that read them and
/// the last layer's rows of the new maps train; the shared decoder is frozen.
#[derive(Clone, Debug)]
pub struct Trainable {
    /// Per grid, the first channel that trains (channels before it are frozen).
    pub grid_first_channel: Vec<u32>,
    /// Per first-layer input, whether its column trains (first-layer biases are frozen).
    pub first_layer_columns: Vec<bool>,
    /// First row of the last layer that trains (weights and biases); earlier rows are frozen.
    pub last_layer_first_row: usize,
    /// Per layer, per row, a scale that row's int8 quantisation must keep (`None`: free).
    pub fixed_row_scales: Vec<Vec<Option<f32>>>,
}

impl Trainable {
    /// Zeroes the gradient of every frozen parameter (Adam then leaves it exactly unchanged).
    pub fn mask_grads(&self, grads: &mut ModelParams) {
        for (grid, &first) in grads.grids.iter_mut().zip(&self.grid_first_channel) {
            let ch = grid.channels as usize;
            for cell in grid.values.chunks_exact_mut(ch.max(1)) {
                cell[..(first as usize).min(ch)].fill(0.0);
            }
        }
        let last = grads.layers.len().saturating_sub(1);
        for (l, layer) in grads.layers.iter_mut().enumerate() {
            for o in 0..layer.outputs {
                let row_trains = l == last && o >= self.last_layer_first_row;
                for i in 0..layer.inputs {
                    let trains = row_trains || (l == 0 && self.first_layer_columns.get(i).copied().unwrap_or(false));
                    if !trains {
                        layer.weights[o * layer.inputs + i] = 0.0;
                    }
                }
                if !row_trains {
                    layer.biases[o] = 0.0;
                }
            }
        }
    }

    /// The int8 values of the layers as they will ship, dequantised (fixed scales kept).
    #[must_use]
    pub fn quantise_layers(&self, layers: &[LayerParams]) -> Vec<QuantizedLayer> {
        layers
            .iter()
            .enumerate()
            .map(|(l, layer)| QuantizedLayer::quantize_with_scales(layer, self.fixed_row_scales.get(l).map_or(&[], Vec::as_slice)))
            .collect()
    }
}

/// The fused CPU trainer.
pub struct FusedTrainer<'a> {
    /// Current parameters.
    pub params: ModelParams,
    /// Optimiser state.
    pub adam: Adam,
    /// Its run: the sampler, the schedule and the next step to run.
    pub run: RunState<'a>,
    /// Gradient buffer, reused across steps.
    grads: ModelParams,
    /// Parameters that train (all when `None`).
    trainable: Option<Trainable>,
    /// Channel removal during training, and the step it happens at.
    pruning: Option<(ChannelPruning, u32)>,
    /// Per latent channel, whether it was removed.
    pruned: Vec<bool>,
    /// Budgets being learned (gates per texture and channel), or learned.
    gates: Option<BudgetGates>,
}

impl<'a> FusedTrainer<'a> {
    /// A trainer starting from `params` at step 0.
    #[must_use]
    pub fn new(sampler: Sampler<'a>, schedule: Schedule, params: ModelParams) -> Self {
        let adam = Adam::new(&params).with(schedule.adam_beta2, schedule.sparse_updates);
        let grads = params.zeros_like();
        let pruned = vec![false; params.latent_channels()];
        Self { params, adam, run: RunState::new(sampler, schedule), grads, trainable: None, pruning: None, pruned, gates: None }
    }

    /// Learns the textures' budgets ([`LearnedBudgets`]): every texture is sampled on its own,
    /// gated, until the cut.
    #[must_use]
    pub fn with_learned_budgets(mut self, options: LearnedBudgets, layout: &ModelLayout) -> Self {
        self.run.sampler.split_for_gates();
        let mut gates = BudgetGates::new(options, self.run.schedule.steps, layout);
        gates.shares = self.run.sampler.gate_shares(gates.start.len());
        self.gates = Some(gates);
        self
    }

    /// The learned budgets, once cut.
    #[must_use]
    pub fn learned_cut(&self) -> Option<&LearnedCut> {
        self.gates.as_ref().and_then(|g| g.cut.as_ref())
    }

    /// The gates (for checkpoints).
    #[must_use]
    pub fn budget_gates(&self) -> Option<&BudgetGates> {
        self.gates.as_ref()
    }

    /// Restores the gates (and the cut, when it happened) from a checkpoint.
    pub fn restore_gates(
        &mut self,
        values: Vec<f32>,
        moments: (Vec<f32>, Vec<f32>, u32),
        cut: Option<LearnedCut>,
    ) -> Result<(), &'static str> {
        let Some(gates) = &mut self.gates else { return Err("the checkpoint has budget gates, this run learns no budgets") };
        let (m, v, t) = moments;
        let n = gates.values.len();
        if values.len() != n || m.len() != n || v.len() != n || cut.as_ref().is_some_and(|c| c.budgets.len() != gates.start.len()) {
            return Err("its budget gates do not fit this library");
        }
        if values.iter().chain(&m).chain(&v).any(|x| !x.is_finite()) {
            return Err("its budget gates hold a non-finite value");
        }
        gates.values = values;
        (gates.m, gates.v, gates.t) = (m, v, t);
        if let Some(cut) = cut {
            let masks = BudgetGates::masks(&cut, gates.latent_channels);
            self.run.sampler.set_masks(&masks);
            gates.cut = Some(cut);
        }
        Ok(())
    }

    /// The cut of learned budgets: decide, fold each kept channel's mean gate into its
    /// first-layer column (the gates return to 1 with the least change to what the textures
    /// read) and regroup the sampler by the new masks.
    fn cut_budgets(&mut self) {
        let Some(gates) = &mut self.gates else { return };
        let Some(first) = self.params.layers.first_mut() else { return };
        let lc = gates.latent_channels;
        let cut = gates.decide(first, self.run.step);
        let mut sum = vec![0.0f32; lc];
        let mut count = vec![0u32; lc];
        for (s, budget) in cut.budgets.iter().enumerate() {
            if gates.duplicate_of[s].is_some() {
                continue;
            }
            for &c in budget {
                sum[c as usize] += gates.values[s * lc + c as usize];
                count[c as usize] += 1;
            }
        }
        for c in 0..lc {
            if count[c] > 0 {
                let mean = sum[c] / count[c] as f32;
                for o in 0..first.outputs {
                    first.weights[o * first.inputs + c] *= mean;
                }
            }
        }
        self.run.sampler.set_masks(&BudgetGates::masks(&cut, lc));
        gates.cut = Some(cut);
    }

    /// Adds the per-(texture, channel) group lasso `λ · share · |g| · ‖column‖₂` to the gates' and
    /// the first layer's gradients (unscaled sums, like the loss's; `share`: the texture's share
    /// of the batch, so the penalty weighs like the loss of its texels).
    fn add_budget_lasso(&self, grads: &mut ModelParams, gate_grads: &mut [f32]) {
        let Some(gates) = &self.gates else { return };
        let (Some(w), Some(g)) = (self.params.layers.first(), grads.layers.first_mut()) else { return };
        let lc = gates.latent_channels;
        let k = gates.options.strength * self.run.schedule.batch_texels as f32;
        let norms = column_norms(w, lc);
        let mut readers = vec![0.0f32; lc];
        for (s, budget) in gates.start.iter().enumerate() {
            if gates.duplicate_of[s].is_some() {
                continue;
            }
            let ks = k * gates.shares[s];
            for &c in budget {
                let c = c as usize;
                let value = gates.values[s * lc + c];
                readers[c] += gates.shares[s] * value.abs();
                gate_grads[s * lc + c] += ks * value.signum() * norms[c];
            }
        }
        for c in 0..lc {
            if norms[c] > 1e-12 && readers[c] > 0.0 {
                for o in 0..w.outputs {
                    g.weights[o * g.inputs + c] += k * readers[c] * w.weights[o * w.inputs + c] / norms[c];
                }
            }
        }
    }

    /// Removes latent channels part-way through training.
    #[must_use]
    pub fn with_pruning(mut self, pruning: ChannelPruning) -> Self {
        let at = step_at_fraction(self.run.schedule.steps, pruning.at);
        self.pruning = Some((pruning, at));
        self
    }

    /// Latent channels removed so far (indices in the layout the trainer started with).
    #[must_use]
    pub fn pruned_channels(&self) -> Vec<u32> {
        self.pruned.iter().enumerate().filter(|(_, p)| **p).map(|(c, _)| c as u32).collect()
    }

    /// After a resume past the pruning step: the removed channels are the read channels whose
    /// first-layer columns are exactly zero (removal zeroes them and they get no gradient after).
    pub fn restore_pruning(&mut self, read: &[bool]) {
        let Some((_, at)) = &self.pruning else { return };
        if self.run.step <= *at {
            return;
        }
        let Some(first) = self.params.layers.first() else { return };
        let dropped: Vec<bool> = (0..self.pruned.len())
            .map(|c| read.get(c).copied().unwrap_or(false) && (0..first.outputs).all(|o| first.weights[o * first.inputs + c] == 0.0))
            .collect();
        self.run.sampler.drop_channels(&dropped);
        self.pruned = dropped;
    }

    /// Chooses the channels to keep per grid and masks the others for every texture.
    fn prune_channels(&mut self, pruning: &ChannelPruning) {
        let Some(first) = self.params.layers.first() else { return };
        let mut dropped = vec![false; self.pruned.len()];
        let mut offset = 0usize;
        let mut rng = Rng::new(self.run.schedule.seed, 0x0091_21E5, 0);
        for (grid, &keep) in self.params.grids.iter().zip(&pruning.keep_per_grid) {
            let ch = grid.channels as usize;
            let mut order: Vec<usize> = (0..ch).collect();
            match pruning.method {
                PruneMethod::L1 => {
                    let norm = |c: usize| (0..first.outputs).map(|o| first.weights[o * first.inputs + offset + c].abs()).sum::<f32>();
                    order.sort_by(|&a, &b| norm(b).total_cmp(&norm(a)).then(a.cmp(&b)));
                }
                PruneMethod::Random => {
                    for i in (1..ch).rev() {
                        order.swap(i, rng.below(i as u64 + 1) as usize);
                    }
                }
            }
            for &c in order.iter().skip(keep as usize) {
                dropped[offset + c] = true;
            }
            offset += ch;
        }
        for layers in [&mut self.params.layers, &mut self.adam.m.layers, &mut self.adam.v.layers] {
            if let Some(first) = layers.first_mut() {
                for o in 0..first.outputs {
                    for (c, d) in dropped.iter().enumerate() {
                        if *d {
                            first.weights[o * first.inputs + c] = 0.0;
                        }
                    }
                }
            }
        }
        self.run.sampler.drop_channels(&dropped);
        self.pruned = dropped;
    }

    /// Adds the group-lasso subgradient `λ · w / ‖column‖₂` on every latent channel's first-layer
    /// column to `grads` (unscaled sums, so multiplied by the batch size).
    fn add_group_lasso(&self, grads: &mut ModelParams, strength: f32) {
        let lc = self.params.latent_channels();
        let (Some(w), Some(g)) = (self.params.layers.first(), grads.layers.first_mut()) else { return };
        let k = strength * self.run.schedule.batch_texels as f32;
        for c in 0..lc {
            let norm = (0..w.outputs).map(|o| w.weights[o * w.inputs + c].powi(2)).sum::<f32>().sqrt();
            if norm > 1e-12 {
                for o in 0..w.outputs {
                    g.weights[o * g.inputs + c] += k * w.weights[o * w.inputs + c] / norm;
                }
            }
        }
    }

    /// Trains only these parameters; the rest stay bit-identical.
    #[must_use]
    pub fn with_trainable(mut self, trainable: Trainable) -> Self {
        self.trainable = Some(trainable);
        self
    }

    /// The layers fake-quantised to the bundle's format (fixed row scales kept when some rows are
    /// frozen).
    fn fake_quantised_layers(&self) -> Vec<LayerParams> {
        match &self.trainable {
            Some(t) => t.quantise_layers(&self.params.layers).iter().map(QuantizedLayer::dequantize).collect(),
            None => self.params.layers.iter().map(|l| quant::fake_quantize(l, self.run.schedule.weight_format)).collect(),
        }
    }

    /// The layers a step's forward and backward run: in float, or through `format`'s
    /// fake-quantisation ([`Schedule::weight_fake_quant`]).
    fn step_layers(&self, format: Option<quant::WeightFormat>) -> Vec<LayerParams> {
        match format {
            None => self.params.layers.clone(),
            Some(f) if f == self.run.schedule.weight_format => self.fake_quantised_layers(),
            Some(f) => self.params.layers.iter().map(|l| quant::fake_quantize(l, f)).collect(),
        }
    }

    /// Runs one step.
    pub fn run_step(&mut self) -> StepStats {
        let step = self.run.step;
        if let Some((pruning, at)) = self.pruning.clone()
            && step == at
        {
            self.prune_channels(&pruning);
        }
        if self.gates.as_ref().is_some_and(|g| g.active() && step == g.at) {
            self.cut_budgets();
        }
        let gating = self.gates.as_ref().filter(|g| g.active()).map(|g| (g.values.as_slice(), g.latent_channels));
        let phase = self.run.schedule.phase(step);
        if self.run.schedule.latent_noise
            && (step == self.run.schedule.freeze_step || (phase != TrainPhase::NoisyLatents && self.adam.t == 0))
        {
            round_grids(&mut self.params, &self.run.schedule.grid_bits);
        }
        let mlp = self.step_layers(self.run.schedule.weight_fake_quant(step));
        let train_grids = phase == TrainPhase::NoisyLatents;
        let chunks = self.run.schedule.batch_texels / CHUNK_TEXELS;
        let params = &self.params;
        let sampler = &self.run.sampler;
        let seed = self.run.schedule.seed;
        let bits = &self.run.schedule.grid_bits;
        let latent_noise = self.run.schedule.latent_noise;
        let per_latent = self.run.schedule.noise_per_latent;
        // One noise amplitude for all grids would be wrong when their bits differ; the kernel takes
        // one amplitude, so use the finest grid's half step (grids share bits in every preset).
        let amplitude = 0.5 * quant::latent_step(bits.first().copied().unwrap_or(8));
        let (draws, rngs) = sorted_draws(sampler, seed, step, chunks);
        let results: Vec<ChunkGrads> = rngs
            .into_par_iter()
            .enumerate()
            .map(|(chunk, mut rng)| {
                let mut batch = Batch::default();
                let texels = (chunk * CHUNK_TEXELS).min(draws.len())..((chunk + 1) * CHUNK_TEXELS).min(draws.len());
                sampler.fill_draws(&draws[texels], CHUNK_TEXELS, &mut batch);
                if let Some((values, lc)) = gating {
                    for (i, &g) in batch.gate.iter().enumerate() {
                        let gate = &values[g as usize * lc..(g as usize + 1) * lc];
                        for (m, v) in batch.mask[i * lc..(i + 1) * lc].iter_mut().zip(gate) {
                            *m *= v;
                        }
                    }
                }
                let noise = match (train_grids && latent_noise, per_latent) {
                    (false, _) => None,
                    (true, false) => Some(Noise::PerRead { amplitude, rng: &mut rng }),
                    (true, true) => Some(Noise::PerLatent { amplitude, seed, step }),
                };
                forward_backward(params, &mlp, &batch, noise)
            })
            .collect();
        let mut grads = std::mem::take(&mut self.grads);
        for g in &mut grads.layers {
            g.weights.fill(0.0);
            g.biases.fill(0.0);
        }
        if train_grids {
            for g in grads.all_grids_mut() {
                g.values.par_chunks_mut(1 << 16).for_each(|c| c.fill(0.0));
            }
        }
        let (mut sq_err, mut targeted) = (0.0f64, 0.0f64);
        let mut gate_grads = vec![0.0f32; gating.map_or(0, |(values, _)| values.len())];
        for r in &results {
            sq_err += r.sq_err;
            targeted += r.targeted;
            for (a, b) in gate_grads.iter_mut().zip(&r.gate_grads) {
                *a += b;
            }
        }
        sum_layer_grads(&results, &mut grads.layers);
        if train_grids {
            scatter_grid_grads(&self.params, &results, &mut grads);
        }
        if let Some(t) = &self.trainable {
            t.mask_grads(&mut grads);
        }
        if let Some((pruning, at)) = &self.pruning
            && step < *at
            && pruning.group_lasso > 0.0
        {
            self.add_group_lasso(&mut grads, pruning.group_lasso);
        }
        let gating = !gate_grads.is_empty();
        if gating {
            self.add_budget_lasso(&mut grads, &mut gate_grads);
        }
        let scale = 1.0 / self.run.schedule.batch_texels as f32;
        let decay = self.run.schedule.decay(step);
        let grid_lr = train_grids.then_some(self.run.schedule.grid_learning_rate * decay);
        self.adam.step(&mut self.params, &grads, scale, grid_lr, self.run.schedule.mlp_learning_rate * decay);
        if gating && let Some(gates) = &mut self.gates {
            gates.t += 1;
            let (c1, c2) = corrections(ADAM_BETA2, gates.t);
            // Gates are few scalars that must travel from 1 towards 0 within the gated steps:
            // they take the grids' (larger) learning rate.
            let lr = self.run.schedule.grid_learning_rate * decay;
            for (g, t) in gate_grads.iter_mut().zip(&gates.trains) {
                *g *= t;
            }
            let k = AdamStep { lr, c1, c2, grad_scale: scale, beta2: ADAM_BETA2, sparse: false };
            adam_update(&mut gates.values, &gate_grads, &mut gates.m, &mut gates.v, k, false);
            // Gates are magnitudes; outside a budget they stay 0 (no gradient reaches them).
            for v in &mut gates.values {
                *v = v.max(0.0);
            }
        }
        self.grads = grads;
        self.run.step += 1;
        StepStats { mse: (sq_err / targeted.max(1.0)) as f32, phase }
    }

    /// The final model: latents rounded, weights int8-quantised (dequantised values).
    #[must_use]
    pub fn final_params(&self) -> ModelParams {
        let mut params = self.params.clone();
        round_grids(&mut params, &self.run.schedule.grid_bits);
        params.layers = self.fake_quantised_layers();
        params
    }
}

impl Trainer for FusedTrainer<'_> {
    fn capabilities(&self) -> Capabilities {
        Capabilities::FUSED_CPU
    }

    fn backend(&self) -> String {
        "cpu (fused)".into()
    }

    fn state(&self) -> &RunState<'_> {
        &self.run
    }

    fn run_step(&mut self) -> Result<StepStats, TrainError> {
        Ok(FusedTrainer::run_step(self))
    }

    fn snapshot_layout<'l>(&self, layout: &'l ModelLayout) -> Option<Cow<'l, ModelLayout>> {
        // Before the learned-budget cut every texture reads the latents through its own gates,
        // which no one layout can express: a snapshot then would show another model than the one
        // training, so previews wait for the cut.
        if self.budget_gates().is_some_and(BudgetGates::active) {
            return None;
        }
        Some(self.learned_cut().map_or(Cow::Borrowed(layout), |cut| Cow::Owned(cut.apply(layout))))
    }

    fn final_params(&self) -> Result<ModelParams, TrainError> {
        Ok(FusedTrainer::final_params(self))
    }

    fn refit_steps(&mut self, steps: u32) -> bool {
        // Pruning and the learned-budget cut were placed at a step of the length they started with.
        if self.pruning.is_some() || self.gates.is_some() {
            return false;
        }
        self.run.refit_steps(steps)
    }

    fn refresh_sampling(&mut self, model: Option<&ModelParams>) -> Result<(), TrainError> {
        self.run.refresh_sampling(model);
        Ok(())
    }

    fn save_checkpoint(&self, path: &Path, fingerprint: &str) -> Result<(), TrainError> {
        crate::train::checkpoint::save(path, fingerprint, self)
    }

    fn load_checkpoint(&mut self, path: &Path, fingerprint: &str, layout: &ModelLayout) -> Result<(), TrainError> {
        crate::train::checkpoint::load(path, fingerprint, self)?;
        self.restore_pruning(&layout.read_channels());
        Ok(())
    }

    fn pruned_channels(&self) -> Vec<u32> {
        FusedTrainer::pruned_channels(self)
    }

    fn learned_cut(&self) -> Option<&LearnedCut> {
        FusedTrainer::learned_cut(self)
    }
}

/// A step's draws: each of its `chunks` draws [`CHUNK_TEXELS`] texels from its own generator
/// `(seed, step, chunk)`, and the whole batch is then sorted by (group, texel). The batch is the
/// same texels as the chunks' own draws; only which chunk trains each texel changes (and so the
/// order of the gradients' sums). Sorted, a chunk covers a band of a texture's rows: its gather,
/// its targets' reads and its share of the scatter touch a few pages of the grids and textures
/// instead of all of them, and the scatter skips the chunks outside a band. Returned with each
/// chunk's generator past its draws (the chunk's latent noise continues from it).
fn sorted_draws(sampler: &Sampler<'_>, seed: u64, step: u32, chunks: usize) -> (Vec<(u32, u32)>, Vec<Rng>) {
    let (per_chunk, rngs): (Vec<Vec<(u32, u32)>>, Vec<Rng>) = (0..chunks)
        .into_par_iter()
        .map(|chunk| {
            let mut rng = Rng::new(seed, u64::from(step), chunk as u64);
            (sampler.draw(&mut rng, CHUNK_TEXELS), rng)
        })
        .unzip();
    let mut draws = per_chunk.concat();
    draws.sort_unstable();
    (draws, rngs)
}

/// Trains `set` with the fused CPU trainer through the one entry ([`train`]) and loop: progress,
/// cancel and pause, snapshots, checkpoints and resume.
pub(crate) fn train_fused(
    set: &TextureSet,
    layout: &ModelLayout,
    options: &CompressOptions,
    progress: &dyn Progress,
    cancel: &Cancel,
) -> Result<(ModelParams, TrainReport), TrainError> {
    let make = |o: &CompressOptions, start: &ModelParams| Ok(Box::new(fused_trainer(set, layout, o, start.clone())) as Box<dyn Trainer>);
    train(set, layout, options, Some("the CPU"), make, progress, cancel)
}

/// The fused trainer for `options` from `start`: sampler, schedule, pruning and budget gates.
fn fused_trainer<'a>(set: &'a TextureSet, layout: &ModelLayout, options: &CompressOptions, start: ModelParams) -> FusedTrainer<'a> {
    let sampler = Sampler::new(set, layout).with_level_boost(options.schedule.sampling.mip_sample_boost);
    let mut trainer = FusedTrainer::new(sampler, Schedule::new(options, layout), start);
    if let Some(pruning) = &options.budgets.prune {
        trainer = trainer.with_pruning(pruning.clone());
    }
    if let Some(learned) = &options.budgets.learned {
        trainer = trainer.with_learned_budgets(learned.clone(), layout);
    }
    trainer
}

#[cfg(test)]
mod tests {
    use super::{fused_trainer, sorted_draws};
    use crate::base::rng::Rng;
    use crate::options::{CompressOptions, Recipe};
    use crate::train::sampler::{CHUNK_TEXELS, Sampler};

    /// A step's batch is every chunk's own draws, sorted, and each chunk's generator continues
    /// from its draws; with mip levels too (several groups).
    #[test]
    fn a_steps_draws_are_the_chunks_own_draws_sorted() {
        let set = crate::train::sampler::tests_support::set();
        for mips in [false, true] {
            let mut options = CompressOptions::default();
            options.model.mips = mips;
            let (layout, _) = crate::analyse::analyse(&set, &options).expect("layout");
            let sampler = Sampler::new(&set, &layout);
            let (draws, rngs) = sorted_draws(&sampler, 7, 3, 4);
            let mut expected = Vec::new();
            for (chunk, after) in rngs.into_iter().enumerate() {
                let mut rng = Rng::new(7, 3, chunk as u64);
                expected.extend(sampler.draw(&mut rng, CHUNK_TEXELS));
                assert_eq!(rng.next_u64(), after.clone().next_u64(), "chunk {chunk}'s generator");
            }
            assert_eq!(draws.len(), 4 * CHUNK_TEXELS);
            assert!(draws.is_sorted(), "mips {mips}");
            assert_ne!(draws, expected, "mips {mips}: the chunks' own order was already sorted");
            expected.sort_unstable();
            assert_eq!(draws, expected, "mips {mips}");
            assert_eq!(draws.iter().any(|&(g, _)| g > 0), mips, "mips {mips}: groups drawn");
        }
    }

    /// Every parameter's bits after `steps` steps of the fused trainer on `threads` threads, and
    /// how many of them moved from the start.
    fn trained_bits(threads: usize, steps: u32, recipe: Recipe) -> (Vec<u32>, usize) {
        let set = crate::train::sampler::tests_support::set();
        let mut options = CompressOptions::default();
        options.schedule.steps = steps;
        options.schedule.apply_recipe(recipe, &[]);
        options.schedule.batch_texels = 4 * crate::train::sampler::CHUNK_TEXELS;
        let (layout, _) = crate::analyse::analyse(&set, &options).expect("layout");
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
        pool.install(|| {
            let start = crate::train::init::initial_params(&set, &layout, options.schedule.seed);
            let mut trainer = fused_trainer(&set, &layout, &options, start.clone());
            for _ in 0..steps {
                trainer.run_step();
            }
            let bits = |p: &crate::model::params::ModelParams| -> Vec<u32> {
                let grids = p.all_grids().flat_map(|g| g.values.iter());
                let layers = p.layers.iter().flat_map(|l| l.weights.iter().chain(&l.biases));
                grids.chain(layers).map(|v| v.to_bits()).collect()
            };
            let (before, after) = (bits(&start), bits(&trainer.params));
            let moved = before.iter().zip(&after).filter(|(a, b)| a != b).count();
            (after, moved)
        })
    }

    /// The gradient sums and the grid scatter split their work by the thread count, never the
    /// order in which a value receives its terms: a run gives the same bits on 1, 3 or 4 threads.
    #[test]
    fn training_gives_the_same_bits_on_any_thread_count() {
        // NTC's recipe too: its per-latent noise, sparse Adam and staged weight QAT (12 steps
        // reach each of its phases).
        for recipe in [Recipe::Texset, Recipe::Ntc] {
            let (one, moved) = trained_bits(1, 12, recipe);
            assert!(moved > one.len() / 2, "{recipe:?}: only {moved} of {} parameters trained", one.len());
            for threads in [3, 4] {
                assert!(trained_bits(threads, 12, recipe).0 == one, "{recipe:?}: {threads} threads changed the trained bits");
            }
        }
        assert_ne!(trained_bits(1, 12, Recipe::Texset).0, trained_bits(1, 12, Recipe::Ntc).0);
    }
}
