//! Training through burn (`--backend wgpu|flex`): the same sampler, schedule and phases as the
//! fused CPU trainer, run by [`trainer::BurnTrainer`] on a burn device chosen here, at
//! the edge.
//!
//! Difference from the fused trainer, stated plainly: burn's path has no int8 straight-through
//! fine-tune yet; its final weights are quantised after training (post-training quantisation).

pub(crate) mod model;
#[cfg(test)]
mod tests;
pub(crate) mod trainer;

use crate::base::rng::Rng;
use crate::io::fault::{self, Fault};
use crate::model::layout::ModelLayout;
use crate::model::params::ModelParams;
use crate::model::quant;
use crate::options::{Backend, CompressOptions};
use crate::progress::{Cancel, Progress, TrainPhase};
use crate::set::TextureSet;
use crate::train::TrainError;
use crate::train::burn::trainer::{AdamOptions, BurnTrainer};
use crate::train::run::{Capabilities, RunState, StepStats, TrainReport, Trainer, train};
use crate::train::sampler::{Batch, CHUNK_TEXELS, Sampler};
use crate::train::schedule::{Schedule, finalize, round_grids};
use burn::prelude::Device;

/// The burn device for a backend.
#[must_use]
pub fn device_for(backend: Backend) -> Device {
    match backend {
        Backend::BurnWgpu => SHARED_WGPU.get().cloned().unwrap_or_else(|| Device::wgpu(burn::tensor::DeviceKind::DefaultDevice)),
        _ => Device::flex(),
    }
}

/// The application's own wgpu device, when it registered one with [`share_wgpu_device`].
static SHARED_WGPU: std::sync::OnceLock<Device> = std::sync::OnceLock::new();

/// Registers an application's wgpu device (the studio's, the one egui renders with) so wgpu
/// training runs on it instead of on a device of its own: one device for training and rendering.
/// The device must have been created with the adapter's own features and limits (burn's kernels
/// need more than wgpu's defaults). Once per process; a second call is an error.
pub fn share_wgpu_device(
    instance: burn::tensor::wgpu::wgpu::Instance,
    adapter: burn::tensor::wgpu::wgpu::Adapter,
    device: burn::tensor::wgpu::wgpu::Device,
    queue: burn::tensor::wgpu::wgpu::Queue,
) -> Result<(), TrainError> {
    let backend = adapter.get_info().backend;
    let setup = burn::tensor::wgpu::WgpuSetup { instance, adapter, device, queue, backend };
    let shared = Device::wgpu_options().setup(setup).init().map_err(|e| TrainError::Gpu(format!("burn could not use the device: {e}")))?;
    SHARED_WGPU.set(shared).map_err(|_| TrainError::Gpu("a wgpu device is already shared with training".to_owned()))
}

/// Whether wgpu training runs on a device the application shared.
#[must_use]
pub fn wgpu_device_is_shared() -> bool {
    SHARED_WGPU.get().is_some()
}

/// A wgpu adapter as wgpu reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterSummary {
    /// Adapter name (`llvmpipe (LLVM 19.1.7, 256 bits)`, `NVIDIA H100`).
    pub name: String,
    /// Graphics API (`Vulkan`, `Metal`, `Dx12`, `Gl`).
    pub backend: String,
    /// True for software rasterisers (lavapipe/llvmpipe, WARP).
    pub is_software: bool,
}

/// Every adapter wgpu can see on this machine (empty when there is none or wgpu cannot start).
#[must_use]
pub fn adapters() -> Vec<AdapterSummary> {
    use burn::tensor::wgpu::wgpu;
    // Vulkan, Metal and DX12 (or what WGPU_BACKEND names): the APIs burn's kernels run on. Not
    // probing GL also spares one "XDG_RUNTIME_DIR is invalid" line from EGL where no session exists.
    let backends = wgpu::Backends::from_env().unwrap_or(wgpu::Backends::PRIMARY);
    let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
    descriptor.backends = backends;
    let instance = wgpu::Instance::new(descriptor);
    // Enumeration is synchronous on native targets: its future is ready at the first poll.
    let mut future = std::pin::pin!(instance.enumerate_adapters(backends));
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    let std::task::Poll::Ready(list) = future.as_mut().poll(&mut context) else {
        return Vec::new();
    };
    list.iter()
        .map(|a| {
            let info = a.get_info();
            AdapterSummary {
                name: info.name,
                backend: format!("{:?}", info.backend),
                is_software: info.device_type == wgpu::DeviceType::Cpu,
            }
        })
        .collect()
}

/// [`train_burn`], with every GPU failure an error instead of an abort: no adapter, a device that
/// cannot be created and a device lost mid-run (burn/cubecl panic on those; the panic is caught
/// here) all return [`TrainError::Gpu`], and [`crate::compress`] goes on with the CPU trainer.
/// Faults can be simulated through [`crate::io::fault`].
pub(crate) fn train_burn_guarded(
    set: &TextureSet,
    layout: &ModelLayout,
    options: &CompressOptions,
    progress: &dyn Progress,
    cancel: &Cancel,
) -> Result<(ModelParams, TrainReport), TrainError> {
    let on_gpu = options.run.backend == Backend::BurnWgpu;
    if on_gpu {
        if fault::is_active(Fault::GpuNoAdapter) {
            return Err(TrainError::Gpu("no GPU adapter (simulated: TEXSET_FAULT=gpu-no-adapter)".into()));
        }
        if fault::is_active(Fault::GpuDevice) {
            return Err(TrainError::Gpu("the adapter failed to create a device (simulated: TEXSET_FAULT=gpu-device)".into()));
        }
        if !wgpu_device_is_shared() && adapters().is_empty() {
            return Err(TrainError::Gpu("no GPU adapter found".into()));
        }
    }
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| train_burn(set, layout, options, progress, cancel)));
    match run {
        Ok(result) => result,
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("unknown panic");
            Err(if on_gpu {
                TrainError::Gpu(format!("the GPU backend failed: {message}"))
            } else {
                TrainError::Backend(format!("burn failed: {message}"))
            })
        }
    }
}

/// burn's trainer as a [`Trainer`]: the same sampler, batches and schedule as the fused one,
/// each step one autodiff graph on `device`.
struct BurnRun<'a> {
    trainer: BurnTrainer,
    /// Its run: the sampler, the schedule and the steps done.
    run: RunState<'a>,
    /// `Backend::BurnWgpu` or `Backend::BurnFlex`.
    backend: Backend,
    device: Device,
    frozen: bool,
    /// Half a latent step: the QAT noise amplitude.
    amplitude: f32,
    /// Fault injection: the step the simulated device loss happens at.
    lost_at_step: Option<u32>,
    batch: Batch,
    chunk: Batch,
}

impl Trainer for BurnRun<'_> {
    fn capabilities(&self) -> Capabilities {
        Capabilities::BURN
    }

    fn backend(&self) -> String {
        match self.backend {
            Backend::BurnWgpu if wgpu_device_is_shared() => "burn wgpu (the application's device)",
            Backend::BurnWgpu => "burn wgpu",
            _ => "burn flex",
        }
        .to_owned()
    }

    fn state(&self) -> &RunState<'_> {
        &self.run
    }

    fn refit_steps(&mut self, steps: u32) -> bool {
        // The phases and the learning rates are read from the schedule at every step.
        self.run.refit_steps(steps)
    }

    fn run_step(&mut self) -> Result<StepStats, TrainError> {
        let (step, schedule) = (self.run.step, &self.run.schedule);
        if self.lost_at_step == Some(step) {
            return Err(TrainError::Gpu(format!("device lost at step {step} (simulated: TEXSET_FAULT=gpu-lost-at-step={step})")));
        }
        let phase = schedule.phase(step);
        if phase != TrainPhase::NoisyLatents && !self.frozen {
            let mut p = self.trainer.params();
            if schedule.latent_noise {
                round_grids(&mut p, &schedule.grid_bits);
            }
            self.trainer = BurnTrainer::new(&p, &self.device, schedule.grid_learning_rate, schedule.mlp_learning_rate)
                .with_adam(AdamOptions { beta2: schedule.adam_beta2, sparse: schedule.sparse_updates });
            self.frozen = true;
        }
        let (batch, chunk) = (&mut self.batch, &mut self.chunk);
        batch.len = 0;
        batch.uv.clear();
        batch.mask.clear();
        batch.target.clear();
        batch.weight.clear();
        for c in 0..schedule.batch_texels / CHUNK_TEXELS {
            let mut rng = Rng::new(schedule.seed, u64::from(step), c as u64);
            self.run.sampler.fill(&mut rng, CHUNK_TEXELS, chunk);
            batch.len += chunk.len;
            batch.uv.extend_from_slice(&chunk.uv);
            batch.mask.extend_from_slice(&chunk.mask);
            batch.target.extend_from_slice(&chunk.target);
            batch.weight.extend_from_slice(&chunk.weight);
        }
        let decay = schedule.decay(step);
        self.trainer.set_learning_rates(schedule.grid_learning_rate, schedule.mlp_learning_rate * decay);
        let noisy = phase == TrainPhase::NoisyLatents;
        let loss = self.trainer.step(
            &batch.uv,
            &batch.mask,
            &batch.target,
            &batch.weight,
            decay,
            (noisy && schedule.latent_noise).then_some(self.amplitude),
            noisy,
        );
        let targeted = batch.weight.iter().filter(|&&w| w != 0.0).count().max(1) as f32;
        self.run.step += 1;
        Ok(StepStats { mse: loss * batch.len as f32 / targeted, phase })
    }

    fn final_params(&self) -> Result<ModelParams, TrainError> {
        Ok(finalize(self.trainer.params(), &self.run.schedule.grid_bits, self.run.schedule.weight_format))
    }

    fn refresh_sampling(&mut self, model: Option<&ModelParams>) -> Result<(), TrainError> {
        self.run.refresh_sampling(model);
        Ok(())
    }
}

/// Trains with burn on `options.run.backend`'s device, through the one entry ([`train`]) and loop.
pub(crate) fn train_burn(
    set: &TextureSet,
    layout: &ModelLayout,
    options: &CompressOptions,
    progress: &dyn Progress,
    cancel: &Cancel,
) -> Result<(ModelParams, TrainReport), TrainError> {
    if let Some((what, why)) = Capabilities::BURN.missing(options, layout) {
        return Err(TrainError::Backend(format!("burn's trainer cannot train {what} ({why})")));
    }
    let make = |o: &CompressOptions, start: &ModelParams| Ok(Box::new(burn_run(set, layout, o, start)) as Box<dyn Trainer>);
    // Long runs on burn say nothing beforehand.
    train(set, layout, options, None, make, progress, cancel)
}

/// burn's trainer for `options` from `start`, on its backend's device.
fn burn_run<'a>(set: &'a TextureSet, layout: &ModelLayout, options: &CompressOptions, start: &ModelParams) -> BurnRun<'a> {
    let schedule = Schedule::new(options, layout);
    let device = device_for(options.run.backend);
    BurnRun {
        trainer: BurnTrainer::new(start, &device, schedule.grid_learning_rate, schedule.mlp_learning_rate)
            .with_adam(AdamOptions { beta2: schedule.adam_beta2, sparse: schedule.sparse_updates }),
        amplitude: 0.5 * quant::latent_step(schedule.grid_bits.first().copied().unwrap_or(8)),
        run: RunState::new(Sampler::new(set, layout), schedule),
        backend: options.run.backend,
        device,
        frozen: false,
        lost_at_step: if options.run.backend == Backend::BurnWgpu { fault::gpu_lost_at_step() } else { None },
        batch: Batch::default(),
        chunk: Batch::default(),
    }
}
