//! The GPU trainer's device, buffers, pipelines and read-backs.

use super::STATS_RING;
use super::layout::{Shapes, Tables, f32_bytes, u32_bytes};
use super::wgsl::WORKGROUP;
use super::wgsl::mlp_binding;
use crate::base::executor::block_on;
use crate::model::wgsl::WeightMemory;
use crate::train::TrainError;
use std::sync::{Arc, Mutex, PoisonError, mpsc};

/// Vulkan, Metal and DX12 (or what `WGPU_BACKEND` names), as burn's adapters list them.
fn instance() -> wgpu::Instance {
    let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
    descriptor.backends = wgpu::Backends::from_env().unwrap_or(wgpu::Backends::PRIMARY);
    wgpu::Instance::new(descriptor)
}

/// The trainer's buffers.
pub(super) struct Buffers {
    pub uniform: wgpu::Buffer,
    pub tables: wgpu::Buffer,
    pub texels: wgpu::Buffer,
    pub params: wgpu::Buffer,
    pub fwdw: wgpu::Buffer,
    pub scratch: wgpu::Buffer,
    pub grid_grad: wgpu::Buffer,
    pub stats_part: wgpu::Buffer,
    pub wpart: wgpu::Buffer,
    pub adam_m: wgpu::Buffer,
    pub adam_v: wgpu::Buffer,
    pub stats: wgpu::Buffer,
    pub stats_staging: wgpu::Buffer,
}

/// An entry point's pipeline and its bind groups: one per slot of the uniform ring (the same
/// buffers, each with its slot's `Step`), or one where the entry point reads no uniform.
pub(super) struct Stage {
    pub pipeline: wgpu::ComputePipeline,
    groups: Vec<wgpu::BindGroup>,
}

impl Stage {
    /// The bind group of ring slot `slot`.
    pub(super) fn group(&self, slot: u32) -> &wgpu::BindGroup {
        &self.groups[slot as usize % self.groups.len()]
    }
}

/// Each entry point's pipeline and bind groups.
pub(super) struct Pipelines {
    pub prepare: Stage,
    pub fwd_bwd: Stage,
    /// None where `fwd_bwd` sums the weight gradients itself.
    pub wgrad: Option<Stage>,
    pub adam: Stage,
}

/// Bytes of the loss ring: per step, per lane of `adam`'s first workgroup, its sums of the loss,
/// the squared error and the values counted (`reduce_stats` in train.wgsl).
const STATS_BYTES: u64 = STATS_RING as u64 * WORKGROUP as u64 * 12;

/// Bytes of the `Step` uniform (`StepUniform::bytes`).
pub(super) const STEP_BYTES: u64 = std::mem::size_of::<super::StepUniform>() as u64;

/// Steps recorded and not yet submitted: one command encoder.
struct Pending {
    encoder: wgpu::CommandEncoder,
    steps: u32,
}

/// An opened device, before the trainer's buffers exist.
pub(super) struct Opened {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    adapter_name: String,
    /// A hardware GPU's, or `Cpu` for one the CPU emulates (`WgradTile` takes it into account).
    pub device_type: wgpu::DeviceType,
}

/// The device with the trainer on it.
pub(super) struct Gpu {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub adapter_name: String,
    pub buffers: Buffers,
    pub pipelines: Pipelines,
    pub samples_off: u32,
    /// Bytes between the uniform ring's slots (the adapter's offset alignment).
    pub uniform_stride: u64,
    /// Steps recorded since the last submission ([`Gpu::record`]).
    pending: Mutex<Option<Pending>>,
}

/// An application's device the trainer runs on instead of one of its own ([`share_device`]).
static SHARED: std::sync::OnceLock<(wgpu::Device, wgpu::Queue, String, wgpu::DeviceType)> = std::sync::OnceLock::new();

/// Registers an application's device (the studio's, the one egui renders with): the GPU trainer
/// then trains on it, beside the frames, instead of opening a device of its own. Once per process.
pub fn share_device(adapter: &wgpu::Adapter, device: wgpu::Device, queue: wgpu::Queue) -> Result<(), TrainError> {
    let info = adapter.get_info();
    SHARED
        .set((device, queue, format!("{} ({:?}), shared with the application", info.name, info.backend), info.device_type))
        .map_err(|_| TrainError::Gpu("a device is already shared with the GPU trainer".to_owned()))
}

impl Gpu {
    /// The shared device ([`share_device`]) or the default adapter's (`WGPU_BACKEND`,
    /// `WGPU_ADAPTER_NAME`… respected) with its own limits; a device of its own sends uncaptured
    /// errors to `error` instead of a panic (a shared one keeps the application's handler).
    pub(crate) fn open(error: &Arc<Mutex<Option<String>>>) -> Result<Opened, TrainError> {
        if let Some((device, queue, name, device_type)) = SHARED.get() {
            return Ok(Opened { device: device.clone(), queue: queue.clone(), adapter_name: name.clone(), device_type: *device_type });
        }
        let instance = instance();
        let adapter = block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            ..Default::default()
        }))
        .map_err(|e| TrainError::Gpu(format!("no GPU adapter: {e}")))?;
        let info = adapter.get_info();
        let (device, queue) = block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("texset trainer"),
            // Timestamps where the adapter has them: `GpuTrainer::profile_steps` times each
            // dispatch with them (training itself writes none).
            required_features: adapter.features() & wgpu::Features::TIMESTAMP_QUERY,
            required_limits: adapter.limits(),
            ..Default::default()
        }))
        .map_err(|e| TrainError::Gpu(format!("{} could not create a device: {e}", info.name)))?;
        let sink = Arc::clone(error);
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            if let Ok(mut slot) = sink.lock() {
                slot.get_or_insert_with(|| e.to_string());
            }
        }));
        Ok(Opened { device, queue, adapter_name: format!("{} ({:?})", info.name, info.backend), device_type: info.device_type })
    }
}

impl Opened {
    /// Creates the buffers and compiles `wgsl`'s entry points.
    pub(crate) fn build(
        self,
        wgsl: &str,
        tables: &Tables,
        shapes: &Shapes,
        params: &[f32],
        memory: WeightMemory,
    ) -> Result<Gpu, TrainError> {
        let Self { device, queue, adapter_name, .. } = self;
        let fused = shapes.fused().is_some();
        let limits = device.limits();
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let check = |what: &str, bytes: u64| -> Result<u64, TrainError> {
            if bytes > limits.max_storage_buffer_binding_size || bytes > limits.max_buffer_size {
                return Err(TrainError::Gpu(format!(
                    "the GPU trainer's {what} take {:.1} MiB, more than this adapter binds ({:.1} MiB)",
                    bytes as f64 / 1_048_576.0,
                    limits.max_storage_buffer_binding_size.min(limits.max_buffer_size) as f64 / 1_048_576.0
                )));
            }
            Ok(bytes.max(4))
        };
        let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
        let init = |label: &str, contents: &[u8]| -> Result<wgpu::Buffer, TrainError> {
            check(label, contents.len() as u64)?;
            let buffer = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: (contents.len() as u64).max(4).next_multiple_of(4),
                usage: storage,
                mapped_at_creation: false,
            });
            if !contents.is_empty() {
                queue.write_buffer(&buffer, 0, contents);
            }
            Ok(buffer)
        };
        let zeroed = |label: &str, bytes: u64| -> Result<wgpu::Buffer, TrainError> {
            let size = check(label, bytes)?;
            Ok(device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size, usage: storage, mapped_at_creation: false }))
        };
        let all = u64::from(shapes.all()) * 4;
        let uniform_stride = STEP_BYTES.next_multiple_of(u64::from(limits.min_uniform_buffer_offset_alignment).max(4));
        let buffers = Buffers {
            // A ring of `Step`s, a slot per step of a submission.
            uniform: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("texset train steps"),
                size: uniform_stride * u64::from(STATS_RING),
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            tables: init("tables", &u32_bytes(&tables.words))?,
            texels: init("reference texels", &f32_bytes(&tables.texels))?,
            params: init("parameters", &f32_bytes(params))?,
            // Room for the uniform binding's whole last vec4; a uniform buffer as well.
            fwdw: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("forward weights"),
                size: check("forward weights", u64::from(shapes.packed_vec4s.max(1)) * 16)?,
                usage: storage | wgpu::BufferUsages::UNIFORM,
                mapped_at_creation: false,
            }),
            scratch: zeroed("per-texel activations", shapes.scratch() * 16)?,
            grid_grad: zeroed("latent gradients", u64::from(shapes.grid_total) * 16)?,
            stats_part: zeroed("loss sums", u64::from(shapes.batch / 64) * 12)?,
            wpart: zeroed("weight gradients", u64::from(shapes.chunks()) * u64::from(shapes.layer_total) * 4)?,
            adam_m: zeroed("Adam moments", all)?,
            adam_v: zeroed("Adam moments", all)?,
            stats: zeroed("loss ring", STATS_BYTES)?,
            stats_staging: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("texset loss read-back"),
                size: STATS_BYTES,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
        };
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("texset train.wgsl (specialised)"),
            source: wgpu::ShaderSource::Wgsl(wgsl.into()),
        });
        let b = &buffers;
        let pipeline = |entry: &str, bindings: &[(u32, &wgpu::Buffer)]| stage(&device, &module, uniform_stride, entry, bindings);
        let pipelines = Pipelines {
            prepare: pipeline("prepare", &[(0, &b.uniform), (1, &b.tables), (3, &b.params), (4, &b.fwdw)]),
            fwd_bwd: pipeline(
                "fwd_bwd",
                &[
                    (0, &b.uniform),
                    (1, &b.tables),
                    (2, &b.texels),
                    (3, &b.params),
                    // `fwdw` as the generated `mlp` reads it: bound again as a uniform buffer
                    // (12) or a read-only storage buffer (14), or copied to workgroup memory (4).
                    (mlp_binding(memory), &b.fwdw),
                    // The per-texel rows, or where the weight gradients are fused, their sums.
                    if fused { (8, &b.wpart) } else { (5, &b.scratch) },
                    (6, &b.grid_grad),
                    (7, &b.stats_part),
                ],
            ),
            wgrad: (!fused).then(|| pipeline("wgrad", &[(1, &b.tables), (5, &b.scratch), (8, &b.wpart)])),
            adam: pipeline(
                "adam",
                &[
                    (0, &b.uniform),
                    (3, &b.params),
                    // `grid_acc` (binding 13): `grid_grad` read without atomics.
                    (13, &b.grid_grad),
                    (7, &b.stats_part),
                    (8, &b.wpart),
                    (9, &b.adam_m),
                    (10, &b.adam_v),
                    (11, &b.stats),
                ],
            ),
        };
        if let Some(e) = block_on(oom.pop()) {
            return Err(TrainError::Gpu(format!("out of GPU memory for the trainer: {e}")));
        }
        if let Some(e) = block_on(scope.pop()) {
            return Err(TrainError::Gpu(format!("the GPU trainer's shader or buffers were refused: {e}")));
        }
        Ok(Gpu {
            device,
            queue,
            adapter_name,
            buffers,
            pipelines,
            samples_off: tables.samples_off,
            uniform_stride,
            pending: Mutex::new(None),
        })
    }
}

/// Entry point `entry` of `module` and its bind groups over `bindings`; binding 0 is the uniform
/// ring: then a bind group per slot, each with its slot's `Step` (`uniform_stride` apart).
fn stage(device: &wgpu::Device, module: &wgpu::ShaderModule, uniform_stride: u64, entry: &str, bindings: &[(u32, &wgpu::Buffer)]) -> Stage {
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(entry),
        layout: None,
        module,
        entry_point: Some(entry),
        compilation_options: wgpu::PipelineCompilationOptions::default(),
        cache: None,
    });
    let reads_uniform = bindings.iter().any(|&(binding, _)| binding == 0);
    let slots = if reads_uniform { STATS_RING } else { 1 };
    let layout = pipeline.get_bind_group_layout(0);
    let groups = (0..slots)
        .map(|slot| {
            let entries: Vec<wgpu::BindGroupEntry<'_>> = bindings
                .iter()
                .map(|&(binding, buffer)| {
                    let resource = if binding == 0 {
                        wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                            buffer,
                            offset: u64::from(slot) * uniform_stride,
                            size: wgpu::BufferSize::new(STEP_BYTES),
                        })
                    } else {
                        buffer.as_entire_binding()
                    };
                    wgpu::BindGroupEntry { binding, resource }
                })
                .collect();
            device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some(entry), layout: &layout, entries: &entries })
        })
        .collect();
    Stage { pipeline, groups }
}

impl Gpu {
    /// Records one step's commands (`record`) after those recorded since the last submission,
    /// into the same command encoder: they go to the device in one submission, at
    /// [`Gpu::flush`]. The steps recorded so far, this one included.
    pub(crate) fn record(&self, record: impl FnOnce(&mut wgpu::CommandEncoder)) -> u32 {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let pending = pending.get_or_insert_with(|| Pending {
            encoder: self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("texset train steps") }),
            steps: 0,
        });
        record(&mut pending.encoder);
        pending.steps += 1;
        pending.steps
    }

    /// Submits the steps recorded since the last submission, if any. Every read-back and every
    /// write other than a step's uniform comes after one, so it sees (or changes) the buffers as
    /// those steps leave them.
    pub(crate) fn flush(&self) {
        let pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(pending) = pending {
            self.queue.submit([pending.encoder.finish()]);
        }
    }

    /// Writes `data` to `buffer` at `offset` after the steps recorded so far.
    pub(crate) fn write(&self, buffer: &wgpu::Buffer, offset: u64, data: &[u8]) {
        self.flush();
        self.queue.write_buffer(buffer, offset, data);
    }

    /// `bytes` bytes of `source`, after the work recorded so far.
    pub(crate) fn read_bytes(&self, source: &wgpu::Buffer, bytes: u64) -> Result<Vec<u8>, TrainError> {
        self.flush();
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("texset trainer read-back"),
            size: bytes.max(4),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("texset trainer read-back") });
        encoder.copy_buffer_to_buffer(source, 0, &staging, 0, bytes);
        let submission = self.queue.submit([encoder.finish()]);
        let (sender, receiver) = mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |result| {
            let _ = sender.send(result);
        });
        self.device
            .poll(wgpu::PollType::Wait { submission_index: Some(submission), timeout: None })
            .map_err(|e| TrainError::Gpu(format!("waiting for the GPU failed: {e}")))?;
        receiver
            .recv()
            .map_err(|_| TrainError::Gpu("a read-back never finished".into()))?
            .map_err(|e| TrainError::Gpu(format!("a read-back failed: {e}")))?;
        let data = staging.get_mapped_range(..).map_err(|e| TrainError::Gpu(format!("{e:?}")))?.to_vec();
        staging.unmap();
        Ok(data)
    }

    /// `count` f32 values of `source`, after the work recorded so far.
    pub(crate) fn read_f32(&self, source: &wgpu::Buffer, count: u64) -> Result<Vec<f32>, TrainError> {
        let bytes = self.read_bytes(source, count * 4)?;
        Ok(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
    }

    /// `count` u32 values of `source`, after the work recorded so far.
    pub(crate) fn read_u32(&self, source: &wgpu::Buffer, count: u64) -> Result<Vec<u32>, TrainError> {
        let bytes = self.read_bytes(source, count * 4)?;
        Ok(bytes.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
    }

    /// Copies the loss ring to the staging buffer, after the steps recorded so far, and maps it;
    /// the receiver hears when it is readable, and the submission index says what to wait for.
    /// Slots not written yet hold zeros, which count nothing.
    pub(crate) fn start_stats_read(&self) -> (mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>, wgpu::SubmissionIndex) {
        self.flush();
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("texset loss read-back") });
        encoder.copy_buffer_to_buffer(&self.buffers.stats, 0, &self.buffers.stats_staging, 0, STATS_BYTES);
        let submission = self.queue.submit([encoder.finish()]);
        let (sender, receiver) = mpsc::channel();
        self.buffers.stats_staging.map_async(wgpu::MapMode::Read, .., move |result| {
            let _ = sender.send(result);
        });
        (receiver, submission)
    }

    /// The mapped loss ring's per-channel MSE (over its filled slots, every lane's sums); unmaps it.
    pub(crate) fn take_stats_mse(&self) -> Result<f32, TrainError> {
        let data = self.buffers.stats_staging.get_mapped_range(..).map_err(|e| TrainError::Gpu(format!("{e:?}")))?.to_vec();
        self.buffers.stats_staging.unmap();
        let values: Vec<f32> = data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        let (sq, count) = values.chunks_exact(3).fold((0.0f64, 0.0f64), |(s, c), v| (s + f64::from(v[1]), c + f64::from(v[2])));
        Ok((sq / count.max(1.0)) as f32)
    }
}
