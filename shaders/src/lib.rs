//! texset GPU side: the WGSL decoder (`decode.wgsl`, the twin of `texset_core::reference`) and the
//! wgpu code that runs it.
//!
//! [`GpuDecoder`] uploads a bundle's *dequantised* model (f32 latents, f32 weights and biases, one
//! 0/1 budget mask per map) to storage buffers once, then [`GpuDecoder::decode_map`] decodes a
//! whole map with one compute invocation per texel and reads it back. Uploading f32 keeps this
//! first slice simple; reading the bit-packed latent levels and int8 per-row weights in the
//! shader (4–8× less GPU memory) is a later optimisation.
//!
//! The library never creates a GPU device: callers pass theirs. [`request_device`] is a blocking
//! helper for tests and the CLI.

use std::future::Future;
use std::sync::Arc;
use std::sync::mpsc;
use std::task::{Context, Poll, Wake, Waker};
use texset_core::bundle::Bundle;
use texset_core::decode::DecodeError;
use texset_core::{DecodedMap, Decoder};

/// The WGSL source of the decoder (entry point [`DECODE_ENTRY_POINT`]).
pub const DECODE_WGSL: &str = include_str!("decode.wgsl");

/// Compute entry point of [`DECODE_WGSL`] that decodes one whole map.
pub const DECODE_ENTRY_POINT: &str = "cs_main";

/// Most latent grids the shader reads (`MAX_GRIDS` in the WGSL).
pub const MAX_GRIDS: usize = 8;
/// Most MLP layers the shader runs (`MAX_LAYERS` in the WGSL).
pub const MAX_LAYERS: usize = 16;
/// Most latent channels over all grids (`MAX_LATENT` in the WGSL).
pub const MAX_LATENT: usize = 256;
/// Most values of any MLP layer's input and of any hidden layer's output (`MAX_WIDTH` in the
/// WGSL). The last layer's output width is not bounded (only the decoded map's slice is computed).
pub const MAX_WIDTH: usize = 256;
/// Side of the square compute workgroup (`WORKGROUP_SIDE` in the WGSL).
pub const WORKGROUP_SIDE: u32 = 8;

/// Bytes before `values` in the `Latents` and `Mlp` storage structs (a 16-byte header, then the
/// fixed table of 16-byte entries).
const LATENT_HEADER_BYTES: usize = 16 + 16 * MAX_GRIDS;
const MLP_HEADER_BYTES: usize = 16 + 16 * MAX_LAYERS;
/// Bytes of one `MapInfo` (16-byte header, then the `MAX_LATENT` f32 mask).
const MAP_INFO_BYTES: usize = 16 + 4 * MAX_LATENT;
/// Bytes of the `Dispatch` uniform.
const DISPATCH_BYTES: usize = 32;

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

/// Runs a future to completion on this thread (wgpu's native futures are ready at once or soon).
fn block_on<F: Future>(future: F) -> F::Output {
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
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let Ok(adapter) = block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default())) else {
        return Ok(None);
    };
    let (device, queue) = block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("texset device"),
        required_limits: adapter.limits(),
        ..Default::default()
    }))?;
    Ok(Some((adapter, device, queue)))
}

fn push_u32(bytes: &mut Vec<u8>, value: u32) {
    bytes.extend_from_slice(&value.to_le_bytes());
}

fn push_f32s(bytes: &mut Vec<u8>, values: &[f32]) {
    for v in values {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
}

fn to_u32(what: &'static str, value: usize) -> Result<u32, GpuError> {
    u32::try_from(value).map_err(|_| GpuError::ModelTooLarge { what, got: value, limit: u32::MAX as usize })
}

fn check_max(what: &'static str, got: usize, limit: usize) -> Result<(), GpuError> {
    if got > limit { Err(GpuError::ModelTooLarge { what, got, limit }) } else { Ok(()) }
}

/// A bundle's model resident on the GPU, with the compute pipeline that decodes its maps.
pub struct GpuDecoder {
    decoder: Decoder,
    /// Per material, the index of its first map in the library-wide map table.
    first_map: Vec<usize>,
    latents: wgpu::Buffer,
    mlp: wgpu::Buffer,
    maps: wgpu::Buffer,
    layout: wgpu::BindGroupLayout,
    pipeline: wgpu::ComputePipeline,
}

impl GpuDecoder {
    /// Validates the bundle's model against the shader's fixed sizes and the device's limits,
    /// uploads it and compiles the decode pipeline.
    pub fn new(device: &wgpu::Device, bundle: &Bundle) -> Result<Self, GpuError> {
        let decoder = Decoder::new(bundle);
        let params = decoder.params();
        check_max("latent grids", params.grids.len(), MAX_GRIDS)?;
        check_max("MLP layers", params.layers.len(), MAX_LAYERS)?;
        check_max("latent channels", params.latent_channels(), MAX_LATENT)?;
        check_max("MLP inputs", params.mlp_inputs(), MAX_WIDTH)?;
        for layer in &params.layers {
            check_max("MLP layer inputs", layer.inputs, MAX_WIDTH)?;
        }
        if let Some((_, hidden)) = params.layers.split_last() {
            for layer in hidden {
                check_max("hidden MLP layer outputs", layer.outputs, MAX_WIDTH)?;
            }
        }

        // (a) Latents: header, grid table, then every grid's values.
        let mut latents = Vec::with_capacity(LATENT_HEADER_BYTES + 4 * params.grids.iter().map(|g| g.values.len()).sum::<usize>());
        push_u32(&mut latents, to_u32("latent grids", params.grids.len())?);
        push_u32(&mut latents, to_u32("latent channels", params.latent_channels())?);
        push_u32(&mut latents, 0);
        push_u32(&mut latents, 0);
        let mut offset = 0usize;
        for i in 0..MAX_GRIDS {
            let (w, h, c, o) = params.grids.get(i).map_or((0, 0, 0, 0), |g| (g.width, g.height, g.channels, offset));
            for word in [w, h, c, to_u32("latent values", o)?] {
                push_u32(&mut latents, word);
            }
            offset += params.grids.get(i).map_or(0, |g| g.values.len());
        }
        for grid in &params.grids {
            push_f32s(&mut latents, &grid.values);
        }

        // (b) MLP: header, layer table, then per layer its weights then its biases.
        let mut mlp = Vec::new();
        push_u32(&mut mlp, to_u32("MLP layers", params.layers.len())?);
        push_u32(&mut mlp, params.pe_frequencies);
        push_u32(&mut mlp, 0);
        push_u32(&mut mlp, 0);
        let mut offset = 0usize;
        for i in 0..MAX_LAYERS {
            let (inputs, outputs, w, b) =
                params.layers.get(i).map_or((0, 0, 0, 0), |l| (l.inputs, l.outputs, offset, offset + l.weights.len()));
            for (what, word) in [("MLP width", inputs), ("MLP width", outputs), ("MLP values", w), ("MLP values", b)] {
                push_u32(&mut mlp, to_u32(what, word)?);
            }
            offset += params.layers.get(i).map_or(0, |l| l.weights.len() + l.biases.len());
        }
        for layer in &params.layers {
            push_f32s(&mut mlp, &layer.weights);
            push_f32s(&mut mlp, &layer.biases);
        }

        // (c) Maps of every material in library order: output slice and budget mask.
        let manifest = decoder.manifest();
        let mut maps = Vec::new();
        let mut first_map = Vec::with_capacity(manifest.materials.len());
        let mut count = 0usize;
        for material in &manifest.materials {
            first_map.push(count);
            for map in &material.maps {
                push_u32(&mut maps, map.output_offset);
                push_u32(&mut maps, map.channels);
                push_u32(&mut maps, 0);
                push_u32(&mut maps, 0);
                let mut mask = [0.0f32; MAX_LATENT];
                for &c in &map.latent_channels {
                    if let Some(m) = mask.get_mut(c as usize) {
                        *m = 1.0;
                    }
                }
                push_f32s(&mut maps, &mask);
                count += 1;
            }
        }
        debug_assert_eq!(maps.len(), count * MAP_INFO_BYTES);
        debug_assert_eq!(mlp.len(), MLP_HEADER_BYTES + 4 * offset);

        let limit = device.limits().max_storage_buffer_binding_size;
        for (what, bytes) in [("the latent buffer", &latents), ("the MLP buffer", &mlp), ("the map table", &maps)] {
            check_device_limit(what, bytes.len() as u64, limit)?;
        }

        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let latents = storage_buffer(device, "texset latents", &latents);
        let mlp = storage_buffer(device, "texset MLP weights", &mlp);
        let maps = storage_buffer(device, "texset map table", &maps);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("texset decode.wgsl"),
            source: wgpu::ShaderSource::Wgsl(DECODE_WGSL.into()),
        });
        let storage = |binding, read_only| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("texset decode bind group layout"),
            entries: &[
                storage(0, true),
                storage(1, true),
                storage(2, true),
                wgpu::BindGroupLayoutEntry {
                    binding: 3,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                },
                storage(4, false),
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("texset decode pipeline layout"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("texset decode pipeline"),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some(DECODE_ENTRY_POINT),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            cache: None,
        });
        if let Some(error) = block_on(scope.pop()) {
            return Err(GpuError::Wgpu(error.to_string()));
        }
        Ok(Self { decoder, first_map, latents, mlp, maps, layout, pipeline })
    }

    /// The CPU decoder of the same bundle (manifest and dequantised parameters).
    #[must_use]
    pub fn cpu(&self) -> &Decoder {
        &self.decoder
    }

    /// Decodes one whole map of a material at its own resolution on the GPU and reads it back:
    /// normalised values in `[0, 1]`, `[y][x][c]`, like [`Decoder::decode_map`].
    pub fn decode_map(&self, device: &wgpu::Device, queue: &wgpu::Queue, material: usize, map: usize) -> Result<DecodedMap, GpuError> {
        let manifest = self.decoder.manifest();
        let mat = manifest.materials.get(material).ok_or(DecodeError::NoMaterial(material))?;
        let entry = mat.maps.get(map).ok_or_else(|| DecodeError::NoMap { material: mat.name.clone(), map })?;
        let map_index = self.first_map.get(material).copied().unwrap_or(0) + map;
        let values = u64::from(entry.width) * u64::from(entry.height) * u64::from(entry.channels);
        let bytes = values * 4;
        let limits = device.limits();
        check_device_limit("the decoded map", bytes, limits.max_storage_buffer_binding_size)?;
        check_device_limit("the decoded map", bytes, limits.max_buffer_size)?;
        let groups_x = entry.width.div_ceil(WORKGROUP_SIDE);
        let groups_y = entry.height.div_ceil(WORKGROUP_SIDE);
        check_device_limit("the dispatch", u64::from(groups_x.max(groups_y)), u64::from(limits.max_compute_workgroups_per_dimension))?;

        let mut uniform = Vec::with_capacity(DISPATCH_BYTES);
        for word in [to_u32("maps", map_index)?, entry.width, entry.height, entry.channels, 0, 0, 0, 0] {
            push_u32(&mut uniform, word);
        }

        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let dispatch = wgpu::util::DeviceExt::create_buffer_init(
            device,
            &wgpu::util::BufferInitDescriptor {
                label: Some("texset decode dispatch"),
                contents: &uniform,
                usage: wgpu::BufferUsages::UNIFORM,
            },
        );
        let output = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("texset decoded map"),
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("texset decoded map read-back"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("texset decode bind group"),
            layout: &self.layout,
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: self.latents.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: self.mlp.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 2, resource: self.maps.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 3, resource: dispatch.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 4, resource: output.as_entire_binding() },
            ],
        });
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("texset decode encoder") });
        {
            let mut pass =
                encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("texset decode pass"), timestamp_writes: None });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(groups_x, groups_y, 1);
        }
        encoder.copy_buffer_to_buffer(&output, 0, &staging, 0, bytes);
        let submission = queue.submit([encoder.finish()]);
        if let Some(error) = block_on(scope.pop()) {
            return Err(GpuError::Wgpu(error.to_string()));
        }

        let (sender, receiver) = mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |result| {
            // The receiver outlives the poll below; a failed send only means it is gone.
            let _ = sender.send(result);
        });
        device.poll(wgpu::PollType::Wait { submission_index: Some(submission), timeout: None })?;
        receiver.recv().map_err(|_| GpuError::Wgpu("the read-back callback never ran".into()))??;
        let values = {
            let view = staging.get_mapped_range(..).map_err(|e| GpuError::Wgpu(format!("{e:?}")))?;
            view.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
        };
        staging.unmap();
        Ok(DecodedMap { width: entry.width, height: entry.height, channels: entry.channels, values })
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The Rust mirrors of the WGSL size constants must match the shader.
    #[test]
    fn wgsl_constants_match_rust() {
        for (name, value) in [("MAX_GRIDS", MAX_GRIDS), ("MAX_LAYERS", MAX_LAYERS), ("MAX_LATENT", MAX_LATENT), ("MAX_WIDTH", MAX_WIDTH)] {
            let line = format!("const {name}: u32 = {value}u;");
            assert!(DECODE_WGSL.contains(&line), "decode.wgsl lacks `{line}`");
        }
        assert!(DECODE_WGSL.contains(&format!("const WORKGROUP_SIDE: u32 = {WORKGROUP_SIDE}u;")));
        assert!(DECODE_WGSL.contains(&format!("var act: array<f32, {}>;", 2 * MAX_WIDTH)));
        assert!(DECODE_WGSL.contains(&format!("fn {DECODE_ENTRY_POINT}(")));
    }
}
