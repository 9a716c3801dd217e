//! The fused GPU trainer: WGSL through wgpu (any Vulkan, Metal or DX12 adapter), every step four
//! dispatches over buffers that stay on the device (`train.wgsl` says what each does). It is one
//! more [`Trainer`] in the one loop ([`run`](crate::train::run::run)); the loop's snapshots and checkpoints are its only
//! read-backs of the model, and the loss comes back through an asynchronous ring every
//! [`STATS_RING`] steps. Steps go to the device [`STATS_RING`] to a submission (one command
//! encoder), each reading its own slot of a ring of uniforms; the host waits only for the loss
//! ring's read-back of the submission before, so the device always has the next steps queued.
//!
//! Determinism: texels and noise come from a counter-based hash of (seed, step, texel); weight
//! gradients are summed over fixed chunks in order, latent gradients in 32.32 fixed point with
//! integer atomics (exact, so their order does not matter): a seed gives the same bundle on the
//! same device, run through or resumed.

use crate::io::fault::{self, Fault};
use crate::model::layout::ModelLayout;
use crate::model::params::ModelParams;
use crate::model::quant::{self, WeightFormat};
use crate::model::wgsl::{MlpShape, WeightMemory};
use crate::options::CompressOptions;
use crate::progress::{Cancel, Progress, TrainPhase};
use crate::set::TextureSet;
use crate::train::TrainError;
use crate::train::run::{Capabilities, RunState, StepStats, TrainReport, Trainer, train};
use crate::train::sampler::Sampler;
use crate::train::schedule::{Schedule, round_grids};
use std::path::Path;
use std::sync::{Arc, Mutex, mpsc};

mod device;
mod fused;
mod layout;
mod profile;
pub(crate) mod wgsl;

use device::Gpu;
pub use device::share_device;
pub use layout::{FUSED_BUDGET_BYTES, KernelChoice, WgradPass, WgradTile};
use layout::{Shapes, Tables, Wgrad, f32_bytes, flatten, u32_bytes, unflatten};
pub use profile::{DispatchTimes, STAGES};
use wgsl::{FLAG_GIVEN_SAMPLES, FLAG_NOISE, FLAG_NOISE_PER_LATENT, FLAG_SPARSE, FLAG_TRAIN_GRIDS, WORKGROUP, format_flag, specialise};

/// Steps whose loss sums one asynchronous read-back brings, and the most steps a submission
/// holds (the uniform ring's slots).
pub const STATS_RING: u32 = 16;

/// Workgroups a dispatch has along x at most (WebGPU's guaranteed 65,535).
const MAX_GROUPS_X: u32 = 65_535;

crate::base::gpu_struct::gpu_struct! {
    /// What the per-step uniform holds: `Step` in train.wgsl, member for member (its layout
    /// test compares the two through naga).
    struct StepUniform {
        step: u32,
        seed_lo: u32,
        seed_hi: u32,
        flags: u32,
        noise_amplitude: f32,
        lr_grid: f32,
        lr_mlp: f32,
        c1: f32,
        c2: f32,
        grad_scale: f32,
        stats_slot: u32,
        adam_beta2: f32,
        /// The first parameter `adam` updates: 0, or past the grids while they are frozen.
        adam_first: u32,
    }
}

impl StepUniform {
    /// This uniform with `seed` in its two words.
    fn with_seed(self, seed: u64) -> Self {
        Self { seed_lo: seed as u32, seed_hi: (seed >> 32) as u32, ..self }
    }
}

/// A dispatch's workgroups for `count` invocations of 64 in rows of at most [`MAX_GROUPS_X`]:
/// (x, y) and the invocations a row holds.
fn spread(count: u32) -> (u32, u32, u32) {
    let groups = count.div_ceil(WORKGROUP).max(1);
    let x = groups.min(MAX_GROUPS_X);
    (x, groups.div_ceil(x), x * WORKGROUP)
}

/// What one step of the GPU trainer costs ([`GpuTrainer::step_cost`]): counted, not measured.
#[derive(Clone, Copy, Debug)]
pub struct StepCost {
    /// Compute dispatches.
    pub dispatches: u32,
    /// Floating-point operations.
    pub flop: f64,
    /// Bytes to and from device memory, at least (caches aside).
    pub bytes: f64,
}

/// How far [`GpuTrainer::dispatch`] goes into a step.
#[derive(Clone, Copy, Debug)]
enum Until {
    /// `prepare` only.
    ForwardWeights,
    /// Up to the gradients and the loss sums, without Adam.
    Gradients,
    /// The whole step.
    Update,
}

/// A read-back of the stats ring in flight.
struct PendingStats {
    receiver: mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>,
    /// Its submission: waiting for it leaves the steps submitted after it running.
    submission: wgpu::SubmissionIndex,
}

/// The fused GPU trainer.
pub struct GpuTrainer<'a> {
    gpu: Gpu,
    /// Its run: the sampler (its draw table is on the device), the schedule and the steps done.
    run: RunState<'a>,
    shapes: Shapes,
    /// Zeros of the model's shapes: what read-backs fill.
    template: ModelParams,
    adam_t: u32,
    /// The latest per-channel MSE the ring brought back.
    last_mse: f32,
    pending: Option<PendingStats>,
    /// Fault injection: the step a simulated device loss happens at.
    lost_at_step: Option<u32>,
    /// Where `fwd_bwd` reads the weights from.
    weight_memory: WeightMemory,
    /// The code shape of `fwd_bwd`'s MLP.
    mlp_shape: MlpShape,
    /// The uncaptured error the device reported, if any (device lost, out of memory, …).
    error: Arc<Mutex<Option<String>>>,
    /// Timestamps per dispatch while [`GpuTrainer::profile_steps`] runs.
    timing: Option<profile::Timing>,
    /// Steps a submission holds at most (1 to [`STATS_RING`]).
    steps_per_submission: u32,
}

impl<'a> GpuTrainer<'a> {
    /// Opens a device on the default adapter, uploads the library and the starting `params`, and
    /// compiles the trainer specialised to them.
    pub fn new(sampler: Sampler<'a>, schedule: Schedule, params: &ModelParams) -> Result<Self, TrainError> {
        Self::with_kernels(sampler, schedule, params, KernelChoice::default())
    }

    /// As [`Self::new`], with the kernel variants of `choice` instead of those that suit the
    /// adapter: what lets the parity tests run every variant on one adapter, and the bench
    /// compare them. An error when the weights do not fit the chosen memory on this adapter.
    pub fn with_kernels(sampler: Sampler<'a>, schedule: Schedule, params: &ModelParams, choice: KernelChoice) -> Result<Self, TrainError> {
        let memory = choice.weight_memory;
        if fault::is_active(Fault::GpuNoAdapter) {
            return Err(TrainError::Gpu("no GPU adapter (simulated: TEXSET_FAULT=gpu-no-adapter)".into()));
        }
        if fault::is_active(Fault::GpuDevice) {
            return Err(TrainError::Gpu("the adapter failed to create a device (simulated: TEXSET_FAULT=gpu-device)".into()));
        }
        let mut shapes = Shapes::new(params, schedule.batch_texels)?;
        let tables = Tables::new(&sampler, params, &shapes)?;
        let error = Arc::new(Mutex::new(None));
        let gpu = Gpu::open(&error)?;
        let limits = gpu.device.limits();
        let fastest = layout::fastest_weight_memory(&shapes, &limits);
        let weight_memory = match memory {
            None => fastest,
            // The variants go from fastest to slowest, and each fits where the one before does.
            Some(m) if m as u8 >= fastest as u8 => m,
            Some(m) => return Err(TrainError::Gpu(format!("the decoder's weights do not fit {} memory on this adapter", m.name()))),
        };
        shapes.wgrad = match choice.wgrad {
            Some(pass) => Wgrad::resolve(pass, &shapes, &limits, weight_memory)?,
            // The adapter's pass, or where fused rows fit no round of it, the hardware GPU's tiles.
            None => Wgrad::resolve(WgradPass::for_device(gpu.device_type), &shapes, &limits, weight_memory)
                .unwrap_or(Wgrad::Tiles(WgradTile::SMALL)),
        };
        let (_, _, adam_row) = spread(shapes.all());
        let mlp_shape = choice.mlp_shape.unwrap_or_else(|| layout::mlp_shape_for_device(gpu.device_type)).for_layers(&shapes.packed);
        let wgsl = specialise(params, &shapes, &tables, weight_memory, mlp_shape, adam_row);
        let mut flat = Vec::with_capacity(shapes.all() as usize);
        flatten(params, &mut flat);
        let gpu = gpu.build(&wgsl, &tables, &shapes, &flat, weight_memory)?;
        let template = params.zeros_like();
        let lost_at_step = fault::gpu_lost_at_step();
        Ok(Self {
            gpu,
            run: RunState::new(sampler, schedule),
            shapes,
            template,
            adam_t: 0,
            last_mse: f32::NAN,
            pending: None,
            lost_at_step,
            weight_memory,
            mlp_shape,
            error,
            timing: None,
            steps_per_submission: STATS_RING,
        })
    }

    /// Steps per submission: [`STATS_RING`] unless set (1 submits every step, as the trainer did
    /// before the uniform ring: `bench train --gpu --submit-steps` compares them). Clamped to 1 to
    /// [`STATS_RING`]; the steps' results do not depend on it.
    pub fn set_steps_per_submission(&mut self, steps: u32) {
        self.gpu.flush();
        self.steps_per_submission = steps.clamp(1, STATS_RING);
    }

    /// Steps per submission ([`Self::set_steps_per_submission`]).
    #[must_use]
    pub fn steps_per_submission(&self) -> u32 {
        self.steps_per_submission
    }

    /// The adapter's name and backend.
    #[must_use]
    pub fn adapter(&self) -> String {
        self.gpu.adapter_name.clone()
    }

    /// How the step sums the weight gradients (the adapter decides).
    #[must_use]
    pub fn wgrad_pass(&self) -> WgradPass {
        self.shapes.wgrad.pass()
    }

    /// Where the forward and backward passes read the layers' weights from (the adapter's limits
    /// decide).
    #[must_use]
    pub fn weight_memory(&self) -> WeightMemory {
        self.weight_memory
    }

    /// The code shape of the forward and backward passes' MLP (the adapter decides).
    #[must_use]
    pub fn mlp_shape(&self) -> MlpShape {
        self.mlp_shape
    }

    fn check_device(&self) -> Result<(), TrainError> {
        match self.error.lock().map(|e| e.clone()) {
            Ok(None) => Ok(()),
            Ok(Some(e)) => Err(TrainError::Gpu(format!("the GPU device failed: {e}"))),
            Err(_) => Err(TrainError::Gpu("the GPU device's error state was poisoned".into())),
        }
    }

    /// The current parameters, read back from the device.
    pub fn params(&self) -> Result<ModelParams, TrainError> {
        let flat = self.gpu.read_f32(&self.gpu.buffers.params, u64::from(self.shapes.all()))?;
        self.check_device()?;
        Ok(unflatten(&self.template, &flat))
    }

    fn upload_params(&self, params: &ModelParams) {
        let mut flat = Vec::with_capacity(self.shapes.all() as usize);
        flatten(params, &mut flat);
        self.gpu.write(&self.gpu.buffers.params, 0, &f32_bytes(&flat));
    }

    /// Records a step's work with this uniform, in ring slot `slot`, up to `until`: the whole
    /// step, the gradients without the update (the gradient parity test), or the forward weights
    /// alone (the weight formats' parity test). One pass; while profiling, a pass per dispatch
    /// with its timestamps. A whole step stays recorded until [`Gpu::flush`] submits it with the
    /// steps around it; the others are submitted at once. Steps recorded and not yet submitted
    /// each have a slot of their own: a queue write lands before the next submission and after
    /// the ones before it, so each reads its own `Step`. Returns the steps recorded since the
    /// last submission.
    fn dispatch(&self, uniform: &StepUniform, until: Until, slot: u32) -> u32 {
        let whole_step = matches!(until, Until::Update) && self.timing.is_none();
        if !whole_step {
            self.gpu.flush();
        }
        let offset = u64::from(slot % STATS_RING) * self.gpu.uniform_stride;
        self.gpu.queue.write_buffer(&self.gpu.buffers.uniform, offset, &uniform.bytes());
        let p = &self.gpu.pipelines;
        let (rx, ry, _) = spread(self.shapes.rows);
        // While the grids are frozen, Adam's invocations start past them.
        let (ax, ay, _) = spread(self.shapes.all() - uniform.adam_first);
        let wgrad = p.wgrad.as_ref().map(|s| (s, (self.shapes.tiles().div_ceil(WORKGROUP), self.shapes.chunks())));
        let all = 3 + usize::from(wgrad.is_some());
        let count = match until {
            Until::ForwardWeights => 1,
            Until::Gradients => all - 1,
            Until::Update => all,
        };
        let stages =
            [Some((&p.prepare, (rx, ry))), Some((&p.fwd_bwd, (self.shapes.fwd_bwd_workgroups(), 1))), wgrad, Some((&p.adam, (ax, ay)))];
        let steps = self.gpu.record(|encoder| {
            let stages = stages.into_iter().flatten().take(count);
            if let Some(timing) = &self.timing {
                let names = self.stage_names();
                for (i, (stage, (x, y))) in (0u32..).zip(stages) {
                    let timestamp_writes = Some(timing.writes(i));
                    let mut pass =
                        encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(names[i as usize]), timestamp_writes });
                    pass.set_pipeline(&stage.pipeline);
                    pass.set_bind_group(0, stage.group(slot), &[]);
                    pass.dispatch_workgroups(x, y, 1);
                }
                timing.resolve(encoder, count as u32);
            } else {
                let mut pass =
                    encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("texset train step"), timestamp_writes: None });
                for (stage, (x, y)) in stages {
                    pass.set_pipeline(&stage.pipeline);
                    pass.set_bind_group(0, stage.group(slot), &[]);
                    pass.dispatch_workgroups(x, y, 1);
                }
            }
        });
        if !whole_step {
            self.gpu.flush();
        }
        steps
    }

    /// The step's dispatches, in order: `wgrad` only where the weight gradients are not fused.
    pub(super) fn stage_names(&self) -> Vec<&'static str> {
        STAGES.into_iter().filter(|&s| s != "wgrad" || self.gpu.pipelines.wgrad.is_some()).collect()
    }

    /// The layers as the forward pass of the weight fine-tune reads them in `format` (their
    /// fake-quantised values): the parity test's view of `prepare`.
    pub fn fake_quantised_layers(&self, format: WeightFormat) -> Result<Vec<crate::model::params::LayerParams>, TrainError> {
        self.dispatch(&StepUniform { flags: format_flag(format), ..StepUniform::default() }, Until::ForwardWeights, 0);
        let packed = self.gpu.read_f32(&self.gpu.buffers.fwdw, 4 * u64::from(self.shapes.packed_vec4s))?;
        self.check_device()?;
        // `fwdw` holds the packed layout (`model::wgsl::pack_layout`): each row read back from
        // where `prepare` wrote it.
        let mut layers = self.template.layers.clone();
        let last = layers.len().saturating_sub(1);
        for (l, (layer, place)) in layers.iter_mut().zip(&self.shapes.packed).enumerate() {
            for o in 0..layer.outputs {
                let (row, bias) = place.row_and_bias_at(o as u32, l == last);
                let (row, n) = (row as usize, layer.inputs);
                let (Some(weights), Some(&b)) = (packed.get(row..row + n), packed.get(bias as usize)) else {
                    return Err(TrainError::Gpu("the forward weights read back are shorter than their layout".into()));
                };
                layer.weights[o * n..(o + 1) * n].copy_from_slice(weights);
                layer.biases[o] = b;
            }
        }
        Ok(layers)
    }

    /// One step's loss and gradients (scaled by `1 / batch`, as [`crate::train::loss_and_grads`])
    /// on the given draws ([`Sampler::draw`]), without an update: the parity test's view of the
    /// kernels. `latent_noise`: `(amplitude, seed, step)` of per-latent QAT noise
    /// ([`crate::internal_tests::Noise::PerLatent`]), or none.
    pub fn gradients_for(&mut self, draws: &[(u32, u32)], latent_noise: Option<(f32, u64, u32)>) -> Result<(f32, ModelParams), TrainError> {
        let n = self.shapes.batch as usize;
        if draws.len() != n {
            return Err(TrainError::Backend(format!("{} draws given for a batch of {n}", draws.len())));
        }
        let words: Vec<u32> = draws.iter().flat_map(|&(g, t)| [g, t]).collect();
        let offset = 4 * u64::from(self.gpu.samples_off);
        self.gpu.write(&self.gpu.buffers.tables, offset, &u32_bytes(&words));
        let uniform = match latent_noise {
            None => StepUniform { flags: FLAG_GIVEN_SAMPLES | FLAG_TRAIN_GRIDS, ..StepUniform::default() },
            Some((noise_amplitude, seed, step)) => StepUniform {
                flags: FLAG_GIVEN_SAMPLES | FLAG_TRAIN_GRIDS | FLAG_NOISE | FLAG_NOISE_PER_LATENT,
                noise_amplitude,
                step,
                ..StepUniform::default()
            }
            .with_seed(seed),
        };
        self.dispatch(&uniform, Until::Gradients, 0);
        let fixed = self.gpu.read_u32(&self.gpu.buffers.grid_grad, 4 * u64::from(self.shapes.grid_total))?;
        // Clear the accumulators the update would have cleared.
        let zeros = vec![0u8; fixed.len() * 4];
        self.gpu.write(&self.gpu.buffers.grid_grad, 0, &zeros);
        let parts = self.gpu.read_f32(&self.gpu.buffers.wpart, u64::from(self.shapes.chunks()) * u64::from(self.shapes.layer_total))?;
        // The workgroups' loss sums (`adam` adds them up in a step; it does not run here).
        let sums = self.gpu.read_f32(&self.gpu.buffers.stats_part, 3 * u64::from(self.shapes.fwd_bwd_workgroups()))?;
        let loss: f32 = sums.iter().step_by(3).sum();
        self.check_device()?;
        let scale = 1.0 / n as f32;
        let fixed_point = |lo: u32, hi: u32| f64::from(hi) * 4_294_967_296.0 + f64::from(lo);
        let mut flat: Vec<f32> =
            fixed.chunks_exact(4).map(|w| ((fixed_point(w[0], w[1]) - fixed_point(w[2], w[3])) / 4_294_967_296.0) as f32 * scale).collect();
        let pl = self.shapes.layer_total as usize;
        for p in 0..pl {
            let sum: f32 = parts.iter().skip(p).step_by(pl).sum();
            flat.push(sum * scale);
        }
        Ok((loss * scale, unflatten(&self.template, &flat)))
    }

    /// Takes a finished read-back of the stats ring; every [`STATS_RING`] steps (and after the
    /// first) submits the steps recorded and starts the next read-back, waiting first for the one
    /// still out (submitted after the steps before these), so the host never runs more than two
    /// submissions ahead and the device always has one queued.
    fn poll_stats(&mut self, slot: u32) -> Result<(), TrainError> {
        if let Some(pending) = &self.pending {
            match pending.receiver.try_recv() {
                Ok(result) => {
                    self.pending = None;
                    self.take_stats(result)?;
                }
                Err(mpsc::TryRecvError::Empty) => {
                    // Let the callbacks of finished work run.
                    let _ = self.gpu.device.poll(wgpu::PollType::Poll);
                }
                Err(mpsc::TryRecvError::Disconnected) => return Err(TrainError::Gpu("the loss read-back never finished".into())),
            }
        }
        let first = self.last_mse.is_nan();
        if slot + 1 == STATS_RING || first {
            self.gpu.flush();
            if let Some(pending) = self.pending.take() {
                self.wait_stats(&pending)?;
            }
            let (receiver, submission) = self.gpu.start_stats_read();
            let pending = PendingStats { receiver, submission };
            if first {
                // The first step waits, so status has a loss from the start.
                self.wait_stats(&pending)?;
            } else {
                self.pending = Some(pending);
            }
        }
        Ok(())
    }

    fn wait_stats(&mut self, pending: &PendingStats) -> Result<(), TrainError> {
        self.gpu
            .device
            .poll(wgpu::PollType::Wait { submission_index: Some(pending.submission.clone()), timeout: None })
            .map_err(|e| TrainError::Gpu(format!("waiting for the GPU failed: {e}")))?;
        let result = pending.receiver.recv().map_err(|_| TrainError::Gpu("the loss read-back never finished".into()))?;
        self.take_stats(result)
    }

    fn take_stats(&mut self, result: Result<(), wgpu::BufferAsyncError>) -> Result<(), TrainError> {
        result.map_err(|e| TrainError::Gpu(format!("reading the loss back failed: {e}")))?;
        self.last_mse = self.gpu.take_stats_mse()?;
        Ok(())
    }

    /// Runs one step.
    fn step_once(&mut self) -> Result<StepStats, TrainError> {
        let step = self.run.step;
        if self.lost_at_step == Some(step) {
            return Err(TrainError::Gpu(format!("device lost at step {step} (simulated: TEXSET_FAULT=gpu-lost-at-step={step})")));
        }
        self.check_device()?;
        let schedule = &self.run.schedule;
        let phase = schedule.phase(step);
        if schedule.latent_noise && (step == schedule.freeze_step || (phase != TrainPhase::NoisyLatents && self.adam_t == 0)) {
            let mut params = self.params()?;
            round_grids(&mut params, &schedule.grid_bits);
            self.upload_params(&params);
        }
        let schedule = &self.run.schedule;
        let train_grids = phase == TrainPhase::NoisyLatents;
        let mut flags = 0;
        if train_grids {
            flags |= FLAG_TRAIN_GRIDS;
            if schedule.latent_noise {
                flags |= FLAG_NOISE;
                if schedule.noise_per_latent {
                    flags |= FLAG_NOISE_PER_LATENT;
                }
            }
        }
        if let Some(format) = schedule.weight_fake_quant(step) {
            flags |= format_flag(format);
        }
        if schedule.sparse_updates {
            flags |= FLAG_SPARSE;
        }
        let t = self.adam_t + 1;
        let (c1, c2) = crate::train::adam::corrections(schedule.adam_beta2, t);
        let decay = schedule.decay(step);
        let slot = step % STATS_RING;
        let adam_first = if train_grids { 0 } else { self.shapes.grid_total };
        let uniform = StepUniform {
            step,
            flags,
            noise_amplitude: 0.5 * quant::latent_step(schedule.grid_bits.first().copied().unwrap_or(8)),
            lr_grid: schedule.grid_learning_rate * decay,
            lr_mlp: schedule.mlp_learning_rate * decay,
            c1,
            c2,
            grad_scale: 1.0 / schedule.batch_texels as f32,
            stats_slot: slot,
            adam_beta2: schedule.adam_beta2,
            adam_first,
            ..StepUniform::default()
        }
        .with_seed(schedule.seed);
        let recorded = self.dispatch(&uniform, Until::Update, slot);
        if recorded >= self.steps_per_submission {
            self.gpu.flush();
        }
        self.adam_t = t;
        self.run.step += 1;
        self.poll_stats(slot)?;
        Ok(StepStats { mse: self.last_mse, phase })
    }

    /// The model as it would ship now: latents rounded, weights in their format.
    pub fn shipped_params(&self) -> Result<ModelParams, TrainError> {
        let mut params = self.params()?;
        round_grids(&mut params, &self.run.schedule.grid_bits);
        params.layers = params.layers.iter().map(|l| quant::fake_quantize(l, self.run.schedule.weight_format)).collect();
        Ok(params)
    }

    /// Submits the steps recorded and waits until the device has done them (timing).
    pub fn finish(&self) -> Result<(), TrainError> {
        self.gpu.flush();
        self.gpu
            .device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| TrainError::Gpu(format!("waiting for the GPU failed: {e}")))?;
        self.check_device()
    }

    /// What one step costs, counted from the shapes (not measured): the roofline's inputs.
    #[must_use]
    pub fn step_cost(&self) -> StepCost {
        let n = f64::from(self.shapes.batch);
        let macs: f64 = self.shapes.layers.iter().map(|&(i, o)| f64::from(i) * f64::from(o)).sum();
        let widths: f64 = self.shapes.layers.iter().map(|&(i, o)| f64::from(i) + f64::from(o)).sum();
        let inputs: f64 = self.shapes.layers.iter().map(|&(i, _)| f64::from(i)).sum();
        let lc = self.template.latent_channels() as f64;
        let oc = self.template.output_channels() as f64;
        let all = f64::from(self.shapes.all());
        let layer_total = f64::from(self.shapes.layer_total);
        let chunks = f64::from(self.shapes.chunks());
        // Forward, input gradients and weight gradients: 3 × 2 FLOP per multiply-add; the gather
        // and the scatter: 4 corners × 2 FLOP per latent channel each.
        let flop = n * (6.0 * macs + 16.0 * lc);
        // Per texel: its rows of the scratch written once and read back (backward reads the
        // inputs, `wgrad` both; none where the weight gradients are fused), its latent corners
        // (4 × f32 read, 4 × u32 atomic read-and-write), its targets; per step: the weight
        // partials written and read, Adam's 5 arrays.
        let scratch = if self.shapes.fused().is_some() { 0.0 } else { 4.0 * (widths + inputs + widths) };
        let per_texel = scratch + 4.0 * lc * (4.0 + 8.0) + 4.0 * oc;
        let bytes = n * per_texel + chunks * layer_total * 8.0 + all * 4.0 * 5.0;
        StepCost { dispatches: self.stage_names().len() as u32, flop, bytes }
    }

    /// The sampler (its draws feed [`GpuTrainer::gradients_for`]).
    #[must_use]
    pub fn sampler(&self) -> &Sampler<'a> {
        &self.run.sampler
    }
}

impl Trainer for GpuTrainer<'_> {
    fn capabilities(&self) -> Capabilities {
        Capabilities::FUSED_GPU
    }

    fn backend(&self) -> String {
        format!("gpu (fused WGSL, {})", self.adapter())
    }

    fn state(&self) -> &RunState<'_> {
        &self.run
    }

    fn refit_steps(&mut self, steps: u32) -> bool {
        // Every use of the schedule is on this side, step by step: the device holds no length.
        self.run.refit_steps(steps)
    }

    fn run_step(&mut self) -> Result<StepStats, TrainError> {
        self.step_once()
    }

    fn wait(&self) -> Result<(), TrainError> {
        self.finish()
    }

    fn final_params(&self) -> Result<ModelParams, TrainError> {
        // A failed read-back is the device's failure (the pipeline goes on on the CPU), never a
        // model of zeros.
        self.shipped_params()
    }

    fn save_checkpoint(&self, path: &Path, fingerprint: &str) -> Result<(), TrainError> {
        let all = u64::from(self.shapes.all());
        let params = unflatten(&self.template, &self.gpu.read_f32(&self.gpu.buffers.params, all)?);
        let m = unflatten(&self.template, &self.gpu.read_f32(&self.gpu.buffers.adam_m, all)?);
        let v = unflatten(&self.template, &self.gpu.read_f32(&self.gpu.buffers.adam_v, all)?);
        self.check_device()?;
        crate::train::checkpoint::save_state(path, fingerprint, self.run.step, self.adam_t, [&params, &m, &v], None)
    }

    fn load_checkpoint(&mut self, path: &Path, fingerprint: &str, _layout: &ModelLayout) -> Result<(), TrainError> {
        let state = crate::train::checkpoint::load_state(path, fingerprint, self.run.schedule.steps, &self.template)?;
        if state.gates.is_some() {
            return Err(TrainError::Checkpoint {
                path: path.to_path_buf(),
                message: "it has budget gates; the GPU trainer learns no budgets".into(),
            });
        }
        let [params, m, v] = &state.params;
        for (buffer, p) in [(&self.gpu.buffers.params, params), (&self.gpu.buffers.adam_m, m), (&self.gpu.buffers.adam_v, v)] {
            let mut flat = Vec::with_capacity(self.shapes.all() as usize);
            flatten(p, &mut flat);
            self.gpu.write(buffer, 0, &f32_bytes(&flat));
        }
        self.run.step = state.step;
        self.adam_t = state.adam_t;
        Ok(())
    }
}

/// Trains `set` with the fused GPU trainer through the one entry ([`train`]) and loop.
/// [`TrainError::Gpu`] when no adapter, no device or a lost device stops it: [`crate::compress`]
/// then goes on on the CPU.
pub(crate) fn train_gpu(
    set: &TextureSet,
    layout: &ModelLayout,
    options: &CompressOptions,
    progress: &dyn Progress,
    cancel: &Cancel,
) -> Result<(ModelParams, TrainReport), TrainError> {
    let make = |o: &CompressOptions, start: &ModelParams| Ok(Box::new(gpu_trainer(set, layout, o, start)?) as Box<dyn Trainer>);
    train(set, layout, options, Some("the GPU"), make, progress, cancel)
}

/// The GPU trainer for `options` from `start`.
pub(crate) fn gpu_trainer<'a>(
    set: &'a TextureSet,
    layout: &ModelLayout,
    options: &CompressOptions,
    start: &ModelParams,
) -> Result<GpuTrainer<'a>, TrainError> {
    if let Some((what, why)) = Capabilities::FUSED_GPU.missing(options, layout) {
        return Err(TrainError::Backend(format!("the GPU trainer cannot train {what} ({why})")));
    }
    let sampler = Sampler::new(set, layout).with_level_boost(options.schedule.sampling.mip_sample_boost);
    GpuTrainer::new(sampler, Schedule::new(options, layout), start)
}

/// The error of a count (of `whose` `what`) that the GPU trainer's 32-bit indices cannot address.
fn beyond_u32(whose: &str, what: &str) -> TrainError {
    TrainError::Gpu(format!("the {whose} {what} exceed what the GPU trainer addresses (2³² values)"))
}

#[cfg(test)]
mod tests;
