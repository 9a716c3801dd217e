//! Devices, buffers, submission and read-back: the wgpu plumbing every decode and render shares.

use crate::{EntryPoint, FRAGMENT_FORMAT, GpuError, to_u32};
use std::sync::mpsc;

/// Runs a future to completion on this thread (wgpu's device requests and error scopes): the
/// engine's minimal executor, so no async runtime is needed.
pub use texset_core::block_on;

/// Opens the default adapter (respecting the `WGPU_BACKEND`, `WGPU_ADAPTER_NAME`... environment
/// variables) and a device with the adapter's own limits and, where it has them, `SHADER_F16` and
/// `TIMESTAMP_QUERY`, blocking. `Ok(None)` when there is no adapter.
pub fn request_device() -> Result<Option<(wgpu::Adapter, wgpu::Device, wgpu::Queue)>, GpuError> {
    Ok(open_device(false)?.map(|(_, adapter, device, queue)| (adapter, device, queue)))
}

/// As [`request_device`], with every stable feature the adapter has ([`stable_features`]) enabled
/// too (what burn's training kernels need on a device shared with them, as the studio's is), and
/// the instance.
pub fn request_device_for_training() -> Result<Option<(wgpu::Instance, wgpu::Adapter, wgpu::Device, wgpu::Queue)>, GpuError> {
    open_device(true)
}

/// Every feature `adapter` has but the experimental ones (mesh shaders, ray tracing, cooperative
/// matrices), which wgpu refuses unless a device opts into them unsafely: what burn's training
/// kernels are given on a device shared with them. Lavapipe from Mesa 25 has such features, as
/// recent hardware drivers do; asking for all of `adapter.features()` failed there.
#[must_use]
pub fn stable_features(adapter: &wgpu::Adapter) -> wgpu::Features {
    adapter.features().difference(wgpu::Features::all_experimental_mask())
}

pub(crate) fn open_device(all_features: bool) -> Result<Option<(wgpu::Instance, wgpu::Adapter, wgpu::Device, wgpu::Queue)>, GpuError> {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let Ok(adapter) = block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default())) else {
        return Ok(None);
    };
    let (device, queue) = block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("texset device"),
        // `SHADER_F16` where the adapter has it: the decoder's f16 path (`MlpPrecision::F16`);
        // `TIMESTAMP_QUERY`: the viewport's passes in GPU time (`preview::PassTimer`).
        required_features: if all_features {
            stable_features(&adapter)
        } else {
            adapter.features() & (wgpu::Features::SHADER_F16 | wgpu::Features::TIMESTAMP_QUERY)
        },
        required_limits: adapter.limits(),
        ..Default::default()
    }))?;
    Ok(Some((instance, adapter, device, queue)))
}

/// The compute pipeline of `module`'s `entry` (its layout derived from the code), labelled.
pub(crate) fn compute_pipeline(
    device: &wgpu::Device,
    module: &wgpu::ShaderModule,
    label: &str,
    entry: crate::EntryPoint,
) -> wgpu::ComputePipeline {
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(label),
        layout: None,
        module,
        entry_point: Some(entry.name()),
        compilation_options: wgpu::PipelineCompilationOptions::default(),
        cache: None,
    })
}

/// An encoder holding one compute pass: `pipeline` with `bind_group` at group 0, `groups`
/// workgroups in x and y. `label` names the encoder and the pass.
pub(crate) fn compute_pass(
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
pub(crate) fn submit(
    queue: &wgpu::Queue,
    encoder: wgpu::CommandEncoder,
    scope: wgpu::ErrorScopeGuard,
) -> Result<wgpu::SubmissionIndex, GpuError> {
    let submission = queue.submit([encoder.finish()]);
    if let Some(error) = block_on(scope.pop()) {
        return Err(GpuError::Wgpu(error.to_string()));
    }
    Ok(submission)
}

/// Copies `bytes` of `source` to a mappable buffer after the encoded work, submits, waits and
/// returns the f32 values.
pub(crate) fn read_back(
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
pub(crate) fn map_read(
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
pub(crate) fn map_read_bytes(
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
pub(crate) fn fullscreen_pipeline(
    device: &wgpu::Device,
    module: &wgpu::ShaderModule,
    label: &str,
    fragment_entry: &str,
    format: wgpu::TextureFormat,
) -> wgpu::RenderPipeline {
    triangle_pipeline(device, module, label, [EntryPoint::Fullscreen.name(), fragment_entry], &[format])
}

/// A pipeline drawing one triangle with the `[vertex, fragment]` entry points of `module` into
/// colour targets of `formats` (no blending), its layout derived from the shaders.
pub(crate) fn triangle_pipeline(
    device: &wgpu::Device,
    module: &wgpu::ShaderModule,
    label: &str,
    [vertex_entry, fragment_entry]: [&str; 2],
    formats: &[wgpu::TextureFormat],
) -> wgpu::RenderPipeline {
    let targets: Vec<Option<wgpu::ColorTargetState>> =
        formats.iter().map(|&format| Some(wgpu::ColorTargetState { format, blend: None, write_mask: wgpu::ColorWrites::ALL })).collect();
    device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some(label),
        layout: None,
        vertex: wgpu::VertexState {
            module,
            entry_point: Some(vertex_entry),
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
            targets: &targets,
        }),
        multiview_mask: None,
        cache: None,
    })
}

pub(crate) fn check_device_limit(what: &'static str, got: u64, limit: u64) -> Result<(), GpuError> {
    if got > limit { Err(GpuError::DeviceLimit { what, got, limit }) } else { Ok(()) }
}

pub(crate) fn storage_buffer(device: &wgpu::Device, label: &str, contents: &[u8]) -> wgpu::Buffer {
    buffer_init(device, label, contents, wgpu::BufferUsages::STORAGE)
}

pub(crate) fn buffer_init(device: &wgpu::Device, label: &str, contents: &[u8], usage: wgpu::BufferUsages) -> wgpu::Buffer {
    wgpu::util::DeviceExt::create_buffer_init(device, &wgpu::util::BufferInitDescriptor { label: Some(label), contents, usage })
}

pub(crate) fn uniform_buffer(device: &wgpu::Device, contents: &[u8]) -> wgpu::Buffer {
    wgpu::util::DeviceExt::create_buffer_init(
        device,
        &wgpu::util::BufferInitDescriptor { label: Some("texset decode params"), contents, usage: wgpu::BufferUsages::UNIFORM },
    )
}

pub(crate) fn output_buffer(device: &wgpu::Device, label: &str, bytes: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: bytes.max(4),
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })
}
