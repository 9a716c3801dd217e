//! texset GPU side: the WGSL decoder (`decode.wgsl`, the twin of `texset_core::model::reference`) and the
//! wgpu code that runs it.
//!
//! [`GpuModel`] lays a bundle out as the shader reads it: the latent levels bit-packed as the
//! bundle stores them, int8 weights four to a word with per-row scales, and a block of WGSL
//! constants (shapes, offsets, budgets as bit masks) that specialises `decode.wgsl` to the bundle.
//! [`GpuDecoder`] uploads that once and decodes whole maps (compute, or a fragment shader into a
//! render target) or lists of random-access samples. [`export`] writes the same specialised
//! decoder as WGSL, GLSL, HLSL or MSL for engines.
//!
//! The library never creates a GPU device: callers pass theirs. [`request_device`] is a blocking
//! helper for tests and the CLI.

use std::future::Future;
use std::sync::Arc;
use std::sync::mpsc;
use std::task::{Context, Poll, Wake, Waker};
use texset_core::bundle::Bundle;
use texset_core::bundle::MapEntry;
use texset_core::decode::DecodeError;
use texset_core::{DecodedMap, Decoder};

pub mod export;
pub mod model;
pub mod preview;

pub use export::{EntryPoint, ExportError, ShaderLang, export_shader};
pub use model::GpuModel;

/// The WGSL template of the decoder ([`model::GpuModel::wgsl`] specialises it to a bundle).
pub const DECODE_WGSL: &str = include_str!("decode.wgsl");

/// Side of the square compute workgroup of `cs_decode_map` (`WORKGROUP_SIDE` in the WGSL).
pub const WORKGROUP_SIDE: u32 = 8;
/// Workgroup size of `cs_decode_samples` (`SAMPLE_WORKGROUP` in the WGSL).
pub const SAMPLE_WORKGROUP: u32 = 64;
/// Bytes of the `Params` uniform.
const PARAMS_BYTES: usize = 32;

/// What the decoder writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeMode {
    /// The stored values in `[0, 1]` (`decode_texel`; [`Decoder::decode_texel`] on the CPU).
    Stored,
    /// Un-mapped for shading (`decode_texel_linear`; [`texset_core::decode::unmap`] on the CPU).
    Shading,
}

/// Why the GPU decoder could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
    /// The material or map does not exist in the bundle.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The bundle's model is larger than the shader's fixed maximum sizes.
    #[error("the GPU decoder supports at most {limit} {what}, the bundle has {got}")]
    ModelTooLarge {
        /// What is too large.
        what: &'static str,
        /// The bundle's value.
        got: usize,
        /// The shader's maximum.
        limit: usize,
    },
    /// A buffer or dispatch is larger than the device allows.
    #[error("{what} needs {got}, the device allows {limit}")]
    DeviceLimit {
        /// What exceeds the limit.
        what: &'static str,
        /// Needed.
        got: u64,
        /// The device limit.
        limit: u64,
    },
    /// The device refused to create a device from the adapter.
    #[error("could not create a wgpu device: {0}")]
    RequestDevice(#[from] wgpu::RequestDeviceError),
    /// A wgpu validation, out-of-memory or internal error.
    #[error("wgpu error: {0}")]
    Wgpu(String),
    /// Waiting for the GPU failed.
    #[error("waiting for the GPU failed: {0}")]
    Poll(#[from] wgpu::PollError),
    /// Mapping the read-back buffer failed.
    #[error("reading the decoded map back failed: {0}")]
    Map(#[from] wgpu::BufferAsyncError),
}

/// Runs a future to completion on this thread (wgpu's device requests and error scopes): a
/// minimal executor, so no async runtime is needed.
pub fn block_on<F: Future>(future: F) -> F::Output {
    struct ThreadWaker(std::thread::Thread);
    impl Wake for ThreadWaker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut context = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        match future.as_mut().poll(&mut context) {
            Poll::Ready(value) => return value,
            Poll::Pending => std::thread::park(),
        }
    }
}

/// Opens the default adapter (respecting the `WGPU_BACKEND`, `WGPU_ADAPTER_NAME`... environment
/// variables) and a device with the adapter's own limits, blocking. `Ok(None)` when there is no adapter.
pub fn request_device() -> Result<Option<(wgpu::Adapter, wgpu::Device, wgpu::Queue)>, GpuError> {
    Ok(open_device(false)?.map(|(_, adapter, device, queue)| (adapter, device, queue)))
}

/// As [`request_device`], with every feature the adapter has enabled too (what burn's training
/// kernels need on a device shared with them, as the studio's is), and the instance.
pub fn request_device_for_training() -> Result<Option<(wgpu::Instance, wgpu::Adapter, wgpu::Device, wgpu::Queue)>, GpuError> {
    open_device(true)
}

fn open_device(all_features: bool) -> Result<Option<(wgpu::Instance, wgpu::Adapter, wgpu::Device, wgpu::Queue)>, GpuError> {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let Ok(adapter) = block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default())) else {
        return Ok(None);
    };
    let (device, queue) = block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("texset device"),
        required_features: if all_features { adapter.features() } else { wgpu::Features::empty() },
        required_limits: adapter.limits(),
        ..Default::default()
    }))?;
    Ok(Some((instance, adapter, device, queue)))
}

fn params_bytes(map_index: u32, width: u32, height: u32, channels: u32, sample_count: u32, mode: DecodeMode, lod: f32) -> Vec<u8> {
    let mode = match mode {
        DecodeMode::Stored => 0u32,
        DecodeMode::Shading => 1,
    };
    let bytes: Vec<u8> =
        [map_index, width, height, channels, sample_count, mode, lod.to_bits(), 0].iter().flat_map(|w| w.to_le_bytes()).collect();
    debug_assert_eq!(bytes.len(), PARAMS_BYTES);
    bytes
}

/// `value` as a u32, or [`GpuError::ModelTooLarge`] naming `what`.
pub(crate) fn to_u32(what: &'static str, value: usize) -> Result<u32, GpuError> {
    u32::try_from(value).map_err(|_| GpuError::ModelTooLarge { what, got: value, limit: u32::MAX as usize })
}

/// A model's two storage buffers on the GPU: `latents` (group 0, binding 0 of the decoder WGSL)
/// and `mlp` (binding 1). An engine that appends its own shader to [`GpuModel::wgsl`] binds these
/// (`shaders/examples/lit_quad.rs`); [`GpuDecoder`] and the preview use them too.
pub struct ModelBuffers {
    /// The bit-packed latent levels.
    pub latents: wgpu::Buffer,
    /// The int8 weights with their scales and biases.
    pub mlp: wgpu::Buffer,
}

impl ModelBuffers {
    /// Uploads `model`'s words, after checking them against the device's storage buffer limit.
    pub fn upload(device: &wgpu::Device, model: &GpuModel) -> Result<Self, GpuError> {
        let latent_bytes = model::words_to_bytes(&model.latent_words);
        let mlp_bytes = model::words_to_bytes(&model.mlp_words);
        let limit = device.limits().max_storage_buffer_binding_size;
        for (what, bytes) in [("the latent buffer", &latent_bytes), ("the MLP buffer", &mlp_bytes)] {
            check_device_limit(what, bytes.len() as u64, limit)?;
        }
        Ok(Self {
            latents: storage_buffer(device, "texset latents", &latent_bytes),
            mlp: storage_buffer(device, "texset MLP weights", &mlp_bytes),
        })
    }

    /// Group 0 of a pipeline built on the decoder WGSL: bindings 0 and 1, then `extra` (the
    /// decoder's own entry points add their parameters and outputs).
    #[must_use]
    pub fn bind_group(&self, device: &wgpu::Device, layout: &wgpu::BindGroupLayout, extra: &[(u32, &wgpu::Buffer)]) -> wgpu::BindGroup {
        let mut entries = vec![
            wgpu::BindGroupEntry { binding: 0, resource: self.latents.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 1, resource: self.mlp.as_entire_binding() },
        ];
        entries
            .extend(extra.iter().map(|(binding, buffer)| wgpu::BindGroupEntry { binding: *binding, resource: buffer.as_entire_binding() }));
        device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some("texset model bind group"), layout, entries: &entries })
    }
}

/// A bundle's model resident on the GPU (bit-packed latents and int8 weights, as the bundle stores
/// them), with the pipelines of the decoder specialised to it.
pub struct GpuDecoder {
    decoder: Decoder,
    model: GpuModel,
    buffers: ModelBuffers,
    map_pipeline: wgpu::ComputePipeline,
    samples_pipeline: wgpu::ComputePipeline,
    /// The specialised decoder, kept for the fragment pipeline.
    module: wgpu::ShaderModule,
    /// Made on the first [`GpuDecoder::decode_map_fragment`]: an adapter that cannot render to
    /// [`FRAGMENT_FORMAT`] (GL ones such as llvmpipe) still decodes through compute.
    render_pipeline: std::sync::OnceLock<wgpu::RenderPipeline>,
}

/// A list of (u, v) samples uploaded once, for repeated [`GpuDecoder::run_samples`] calls.
pub struct SampleBatch {
    count: u32,
    groups: (u32, u32),
    samples: wgpu::Buffer,
    output: wgpu::Buffer,
}

impl SampleBatch {
    /// Number of samples.
    #[must_use]
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// True when the batch holds no samples.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// Whether `adapter` can render to [`FRAGMENT_FORMAT`]: what [`GpuDecoder::decode_map_fragment`]
/// and offscreen previews need. Vulkan, Metal and DX12 adapters can; GL ones (llvmpipe, the
/// fallback where there is no Vulkan driver) usually cannot, and decode through compute only.
#[must_use]
pub fn renders_fragment_format(adapter: &wgpu::Adapter) -> bool {
    adapter.get_texture_format_features(FRAGMENT_FORMAT).allowed_usages.contains(wgpu::TextureUsages::RENDER_ATTACHMENT)
}

/// Colour format of the render targets of [`render_rgba32f`] (`decode_map_fragment`, the preview's
/// tests, the lit-quad example).
pub const FRAGMENT_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba32Float;

impl GpuDecoder {
    /// Lays the bundle out for the GPU ([`GpuModel`]), uploads it and compiles the decoder
    /// specialised to its shapes.
    pub fn new(device: &wgpu::Device, bundle: &Bundle) -> Result<Self, GpuError> {
        let decoder = Decoder::new(bundle);
        let model = GpuModel::new(bundle)?;
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let buffers = ModelBuffers::upload(device, &model)?;
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("texset decode.wgsl (specialised)"),
            source: wgpu::ShaderSource::Wgsl(model.wgsl().into()),
        });
        let compute = |label: &'static str, entry: EntryPoint| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(label),
                layout: None,
                module: &module,
                entry_point: Some(entry.name()),
                compilation_options: wgpu::PipelineCompilationOptions::default(),
                cache: None,
            })
        };
        let map_pipeline = compute("texset decode map pipeline", EntryPoint::DecodeMap);
        let samples_pipeline = compute("texset decode samples pipeline", EntryPoint::DecodeSamples);
        if let Some(error) = block_on(scope.pop()) {
            return Err(GpuError::Wgpu(error.to_string()));
        }
        Ok(Self { decoder, model, buffers, map_pipeline, samples_pipeline, module, render_pipeline: std::sync::OnceLock::new() })
    }

    /// The fragment decode pipeline, made on first use.
    fn render_pipeline(&self, device: &wgpu::Device) -> Result<&wgpu::RenderPipeline, GpuError> {
        if let Some(pipeline) = self.render_pipeline.get() {
            return Ok(pipeline);
        }
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let pipeline = fullscreen_pipeline(
            device,
            &self.module,
            "texset fragment decode pipeline",
            EntryPoint::FragmentDecode.name(),
            FRAGMENT_FORMAT,
        );
        if let Some(error) = block_on(scope.pop()) {
            return Err(GpuError::Wgpu(format!("the fragment decode path cannot run on this device: {error}")));
        }
        Ok(self.render_pipeline.get_or_init(|| pipeline))
    }

    /// The CPU decoder of the same bundle (manifest and dequantised parameters).
    #[must_use]
    pub fn cpu(&self) -> &Decoder {
        &self.decoder
    }

    /// The GPU layout of the bundle (buffers and the specialised shader's constants).
    #[must_use]
    pub fn model(&self) -> &GpuModel {
        &self.model
    }

    /// The library-wide map index of a material's map, and its manifest entry.
    fn map_index(&self, material: usize, map: usize) -> Result<(u32, &MapEntry), GpuError> {
        let manifest = self.decoder.manifest();
        let mat = manifest.materials.get(material).ok_or(DecodeError::NoMaterial(material))?;
        let entry = mat.maps.get(map).ok_or_else(|| DecodeError::NoMap { material: mat.name.clone(), map })?;
        let first = self.model.first_map.get(material).copied().unwrap_or(0);
        Ok((first + to_u32("maps", map)?, entry))
    }

    fn bind_group(&self, device: &wgpu::Device, layout: &wgpu::BindGroupLayout, extra: &[(u32, &wgpu::Buffer)]) -> wgpu::BindGroup {
        self.buffers.bind_group(device, layout, extra)
    }

    /// Decodes one whole map of a material at its own resolution on the GPU (compute) and reads
    /// it back: `[y][x][c]` with the map's channels, like [`Decoder::decode_map`] (`Stored`).
    pub fn decode_map(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        material: usize,
        map: usize,
        mode: DecodeMode,
    ) -> Result<DecodedMap, GpuError> {
        self.decode_map_level(device, queue, material, map, 0, mode)
    }

    /// Decodes mip level `level` of one map on the GPU (compute), like
    /// [`Decoder::decode_map_level`]: the map's size halved `level` times (at least 1×1).
    pub fn decode_map_level(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        material: usize,
        map: usize,
        level: u32,
        mode: DecodeMode,
    ) -> Result<DecodedMap, GpuError> {
        let (map_index, entry) = self.map_index(material, map)?;
        let (width, height) = texset_core::model::mips::level_size(entry.width, entry.height, level);
        let bytes = u64::from(width) * u64::from(height) * u64::from(entry.channels) * 4;
        let limits = device.limits();
        check_device_limit("the decoded map", bytes, limits.max_storage_buffer_binding_size)?;
        check_device_limit("the decoded map", bytes, limits.max_buffer_size)?;
        let groups_x = width.div_ceil(WORKGROUP_SIDE);
        let groups_y = height.div_ceil(WORKGROUP_SIDE);
        check_device_limit("the dispatch", u64::from(groups_x.max(groups_y)), u64::from(limits.max_compute_workgroups_per_dimension))?;

        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let params = uniform_buffer(device, &params_bytes(map_index, width, height, entry.channels, 0, mode, level as f32));
        let output = output_buffer(device, "texset decoded map", bytes);
        let bind_group = self.bind_group(device, &self.map_pipeline.get_bind_group_layout(0), &[(2, &params), (3, &output)]);
        let encoder = compute_pass(device, "texset decode map", &self.map_pipeline, &bind_group, (groups_x, groups_y));
        let values = read_back(device, queue, encoder, &output, bytes, scope)?;
        Ok(DecodedMap { width, height, channels: entry.channels, values })
    }

    /// Decodes one whole map in a *fragment* shader (`fs_decode_map` over a full-screen triangle
    /// into an `Rgba32Float` target of the map's size) and reads it back like [`Self::decode_map`].
    /// This is the path a material shader takes.
    pub fn decode_map_fragment(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        material: usize,
        map: usize,
        mode: DecodeMode,
    ) -> Result<DecodedMap, GpuError> {
        let (map_index, entry) = self.map_index(material, map)?;
        let max_side = device.limits().max_texture_dimension_2d;
        check_device_limit("the render target side", u64::from(entry.width.max(entry.height)), u64::from(max_side))?;
        let render_pipeline = self.render_pipeline(device)?;
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let params = uniform_buffer(device, &params_bytes(map_index, entry.width, entry.height, entry.channels, 0, mode, 0.0));
        let bind_group = self.bind_group(device, &render_pipeline.get_bind_group_layout(0), &[(2, &params)]);
        let rgba = render_rgba32f(device, queue, "texset fragment decode", entry.width, entry.height, scope, |encoder, view| {
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("texset fragment decode pass"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view,
                    depth_slice: None,
                    resolve_target: None,
                    ops: wgpu::Operations { load: wgpu::LoadOp::Clear(wgpu::Color::TRANSPARENT), store: wgpu::StoreOp::Store },
                })],
                depth_stencil_attachment: None,
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            pass.set_pipeline(render_pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.draw(0..3, 0..1);
        })?;
        let channels = entry.channels as usize;
        let values = rgba.chunks_exact(4).flat_map(|texel| &texel[..channels]).copied().collect();
        Ok(DecodedMap { width: entry.width, height: entry.height, channels: entry.channels, values })
    }

    /// Uploads a list of (u, v) samples for [`Self::run_samples`].
    pub fn upload_samples(&self, device: &wgpu::Device, uvs: &[[f32; 2]]) -> Result<SampleBatch, GpuError> {
        let count = to_u32("samples", uvs.len())?;
        let limits = device.limits();
        let bytes = u64::from(count).max(1) * 16;
        check_device_limit("the sample output", bytes, limits.max_storage_buffer_binding_size)?;
        let groups = count.div_ceil(SAMPLE_WORKGROUP).max(1);
        let max_groups = limits.max_compute_workgroups_per_dimension.max(1);
        let groups = (groups.min(max_groups), groups.div_ceil(max_groups));
        let mut input: Vec<u8> = uvs.iter().flat_map(|[u, v]| u.to_le_bytes().into_iter().chain(v.to_le_bytes())).collect();
        input.resize(input.len().max(8), 0);
        let samples = storage_buffer(device, "texset samples", &input);
        let output = output_buffer(device, "texset decoded samples", bytes);
        Ok(SampleBatch { count, groups, samples, output })
    }

    /// Decodes an uploaded batch of samples of one map (4 values per sample; the map's channels,
    /// then 0) and waits for the GPU; with `read` the values are read back, else an empty vector
    /// is returned (for timing the decode alone).
    #[allow(clippy::too_many_arguments, reason = "device, queue, batch, what to decode, how: all needed")]
    pub fn run_samples(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        batch: &SampleBatch,
        material: usize,
        map: usize,
        mode: DecodeMode,
        lod: f32,
        read: bool,
    ) -> Result<Vec<[f32; 4]>, GpuError> {
        let (map_index, entry) = self.map_index(material, map)?;
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let params = uniform_buffer(device, &params_bytes(map_index, entry.width, entry.height, entry.channels, batch.count, mode, lod));
        let bind_group = self.bind_group(
            device,
            &self.samples_pipeline.get_bind_group_layout(0),
            &[(2, &params), (3, &batch.output), (4, &batch.samples)],
        );
        let encoder = compute_pass(device, "texset decode samples", &self.samples_pipeline, &bind_group, batch.groups);
        if !read {
            let submission = submit(queue, encoder, scope)?;
            device.poll(wgpu::PollType::Wait { submission_index: Some(submission), timeout: None })?;
            return Ok(Vec::new());
        }
        let values = read_back(device, queue, encoder, &batch.output, u64::from(batch.count) * 16, scope)?;
        Ok(values.chunks_exact(4).map(|c| [c[0], c[1], c[2], c[3]]).collect())
    }

    /// Decodes `uvs` of one map (4 values per sample): upload, decode, read back.
    pub fn decode_samples(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        material: usize,
        map: usize,
        uvs: &[[f32; 2]],
        mode: DecodeMode,
    ) -> Result<Vec<[f32; 4]>, GpuError> {
        self.decode_samples_lod(device, queue, material, map, uvs, 0.0, mode)
    }

    /// Decodes `uvs` of one map at level of detail `lod` (the WGSL `decode_texel_lod`: a
    /// fractional `lod` blends two mip levels), like [`Decoder::decode_texel_lod`].
    #[allow(clippy::too_many_arguments, reason = "device, queue, what to decode, where, how: all needed")]
    pub fn decode_samples_lod(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        material: usize,
        map: usize,
        uvs: &[[f32; 2]],
        lod: f32,
        mode: DecodeMode,
    ) -> Result<Vec<[f32; 4]>, GpuError> {
        let batch = self.upload_samples(device, uvs)?;
        self.run_samples(device, queue, &batch, material, map, mode, lod, true)
    }
}

/// An encoder holding one compute pass: `pipeline` with `bind_group` at group 0, `groups`
/// workgroups in x and y. `label` names the encoder and the pass.
fn compute_pass(
    device: &wgpu::Device,
    label: &str,
    pipeline: &wgpu::ComputePipeline,
    bind_group: &wgpu::BindGroup,
    groups: (u32, u32),
) -> wgpu::CommandEncoder {
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
    {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(label), timestamp_writes: None });
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, bind_group, &[]);
        pass.dispatch_workgroups(groups.0, groups.1, 1);
    }
    encoder
}

/// Submits `encoder`, then reports the validation errors the scope caught.
fn submit(queue: &wgpu::Queue, encoder: wgpu::CommandEncoder, scope: wgpu::ErrorScopeGuard) -> Result<wgpu::SubmissionIndex, GpuError> {
    let submission = queue.submit([encoder.finish()]);
    if let Some(error) = block_on(scope.pop()) {
        return Err(GpuError::Wgpu(error.to_string()));
    }
    Ok(submission)
}

/// Copies `bytes` of `source` to a mappable buffer after the encoded work, submits, waits and
/// returns the f32 values.
fn read_back(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    mut encoder: wgpu::CommandEncoder,
    source: &wgpu::Buffer,
    bytes: u64,
    scope: wgpu::ErrorScopeGuard,
) -> Result<Vec<f32>, GpuError> {
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("texset read-back"),
        size: bytes.max(4),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    encoder.copy_buffer_to_buffer(source, 0, &staging, 0, bytes);
    map_read(device, queue, encoder, &staging, scope)
}

/// Records a full-screen pass (`draw`, given the encoder and the target's view) into a new
/// `width` x `height` [`FRAGMENT_FORMAT`] (`Rgba32Float`) target, copies the target out and
/// returns its texels as tightly packed RGBA rows. Errors raised inside `scope` are returned.
/// Offscreen rendering for tests and tools; an engine draws into its own targets.
pub fn render_rgba32f(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    label: &str,
    width: u32,
    height: u32,
    scope: wgpu::ErrorScopeGuard,
    draw: impl FnOnce(&mut wgpu::CommandEncoder, &wgpu::TextureView),
) -> Result<Vec<f32>, GpuError> {
    let size = wgpu::Extent3d { width, height, depth_or_array_layers: 1 };
    let target = device.create_texture(&wgpu::TextureDescriptor {
        label: Some(label),
        size,
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: FRAGMENT_FORMAT,
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
        view_formats: &[],
    });
    let view = target.create_view(&wgpu::TextureViewDescriptor::default());
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
    draw(&mut encoder, &view);
    let bytes = read_texture(device, queue, encoder, &target, [width, height], 16, scope)?;
    Ok(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

/// Copies `texture` (`size`, `texel_bytes` per texel, made with `COPY_SRC`) out after the work
/// in `encoder`, submits, waits and returns its rows tightly packed (the copy's row padding
/// dropped). Errors raised inside `scope` are returned.
pub(crate) fn read_texture(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    mut encoder: wgpu::CommandEncoder,
    texture: &wgpu::Texture,
    size: [u32; 2],
    texel_bytes: u32,
    scope: wgpu::ErrorScopeGuard,
) -> Result<Vec<u8>, GpuError> {
    let [width, height] = size;
    let row = u64::from(width) * u64::from(texel_bytes);
    let padded_row = row.next_multiple_of(u64::from(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT));
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("texset texture read-back"),
        size: padded_row * u64::from(height),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    encoder.copy_texture_to_buffer(
        texture.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &staging,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(to_u32("texture row", padded_row as usize)?),
                rows_per_image: None,
            },
        },
        wgpu::Extent3d { width, height, depth_or_array_layers: 1 },
    );
    let padded = map_read_bytes(device, queue, encoder, &staging, scope)?;
    let mut out = Vec::with_capacity((row * u64::from(height)) as usize);
    for line in padded.chunks_exact(padded_row as usize) {
        out.extend_from_slice(&line[..row as usize]);
    }
    Ok(out)
}

/// Submits `encoder`, reports validation errors of the scope, waits and maps `staging` as f32s.
fn map_read(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    encoder: wgpu::CommandEncoder,
    staging: &wgpu::Buffer,
    scope: wgpu::ErrorScopeGuard,
) -> Result<Vec<f32>, GpuError> {
    let bytes = map_read_bytes(device, queue, encoder, staging, scope)?;
    Ok(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

/// Submits `encoder`, reports validation errors of the scope, waits and maps `staging`.
fn map_read_bytes(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    encoder: wgpu::CommandEncoder,
    staging: &wgpu::Buffer,
    scope: wgpu::ErrorScopeGuard,
) -> Result<Vec<u8>, GpuError> {
    let submission = submit(queue, encoder, scope)?;
    let (sender, receiver) = mpsc::channel();
    staging.map_async(wgpu::MapMode::Read, .., move |result| {
        // The receiver outlives the poll below; a failed send only means it is gone.
        let _ = sender.send(result);
    });
    device.poll(wgpu::PollType::Wait { submission_index: Some(submission), timeout: None })?;
    receiver.recv().map_err(|_| GpuError::Wgpu("the read-back callback never ran".into()))??;
    let bytes = staging.get_mapped_range(..).map_err(|e| GpuError::Wgpu(format!("{e:?}")))?.to_vec();
    staging.unmap();
    Ok(bytes)
}

/// A pipeline drawing `vs_fullscreen`'s triangle with `fragment_entry` of `module` into one
/// colour target of `format` (the fragment decode and the studio's preview).
fn fullscreen_pipeline(
    device: &wgpu::Device,
    module: &wgpu::ShaderModule,
    label: &str,
    fragment_entry: &str,
    format: wgpu::TextureFormat,
) -> wgpu::RenderPipeline {
    device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some(label),
        layout: None,
        vertex: wgpu::VertexState {
            module,
            entry_point: Some(EntryPoint::Fullscreen.name()),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            buffers: &[],
        },
        primitive: wgpu::PrimitiveState::default(),
        depth_stencil: None,
        multisample: wgpu::MultisampleState::default(),
        fragment: Some(wgpu::FragmentState {
            module,
            entry_point: Some(fragment_entry),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            targets: &[Some(wgpu::ColorTargetState { format, blend: None, write_mask: wgpu::ColorWrites::ALL })],
        }),
        multiview_mask: None,
        cache: None,
    })
}

fn check_device_limit(what: &'static str, got: u64, limit: u64) -> Result<(), GpuError> {
    if got > limit { Err(GpuError::DeviceLimit { what, got, limit }) } else { Ok(()) }
}

fn storage_buffer(device: &wgpu::Device, label: &str, contents: &[u8]) -> wgpu::Buffer {
    wgpu::util::DeviceExt::create_buffer_init(
        device,
        &wgpu::util::BufferInitDescriptor { label: Some(label), contents, usage: wgpu::BufferUsages::STORAGE },
    )
}

fn uniform_buffer(device: &wgpu::Device, contents: &[u8]) -> wgpu::Buffer {
    wgpu::util::DeviceExt::create_buffer_init(
        device,
        &wgpu::util::BufferInitDescriptor { label: Some("texset decode params"), contents, usage: wgpu::BufferUsages::UNIFORM },
    )
}

fn output_buffer(device: &wgpu::Device, label: &str, bytes: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: bytes.max(4),
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Rust mirrors of the WGSL constants must match the shader.
    #[test]
    fn wgsl_constants_match_rust() {
        assert!(DECODE_WGSL.contains(&format!("const WORKGROUP_SIDE: u32 = {WORKGROUP_SIDE}u;")));
        assert!(DECODE_WGSL.contains(&format!("const SAMPLE_WORKGROUP: u32 = {SAMPLE_WORKGROUP}u;")));
        for entry in EntryPoint::ALL {
            assert!(DECODE_WGSL.contains(&format!("fn {}(", entry.name())), "decode.wgsl lacks {}", entry.name());
        }
        assert!(DECODE_WGSL.contains("var act: array<f32, 2u * MAX_WIDTH>;"));
    }
}
