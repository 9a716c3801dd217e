//! [`GpuDecoder`]: a bundle uploaded once, decoded as whole maps (compute or fragment) or as
//! random-access samples.

use crate::device::{
    block_on, buffer_init, check_device_limit, compute_pass, compute_pipeline, fullscreen_pipeline, output_buffer, read_back,
    render_rgba32f, storage_buffer, submit, uniform_buffer,
};
use crate::model::DecodeParams;
use crate::model::GpuModelOptions;
use crate::{DecodeMode, EntryPoint, GpuError, GpuModel, SAMPLE_WORKGROUP, WORKGROUP_SIDE, model, to_u32};
use texset_core::{
    bundle::{Bundle, MapEntry},
    decode::{DecodeError, DecodedMap, Decoder},
    model::{
        level_size,
        wgsl::{MlpPrecision, WeightMemory},
    },
};

/// A model's two buffers on the GPU: `latents` (group 0, binding 0 of the decoder WGSL, storage)
/// and `mlp` (binding 1, the dequantised weights: uniform or storage, as the model's
/// [`GpuModel::weight_memory`] says; the buffer allows both). An engine that appends its own shader to [`GpuModel::wgsl`] binds these
/// (`shaders/examples/lit_quad.rs`); [`GpuDecoder`] and the preview use them too.
pub struct ModelBuffers {
    /// The bit-packed latent levels.
    pub latents: wgpu::Buffer,
    /// The dequantised weights and biases (`vec4<f32>`s).
    pub mlp: wgpu::Buffer,
}

impl ModelBuffers {
    /// Uploads `model`'s words, after checking them against the device's limits for the memory
    /// each is read from.
    pub fn upload(device: &wgpu::Device, model: &GpuModel) -> Result<Self, GpuError> {
        let latent_bytes = model::words_to_bytes(&model.latent_words);
        let mlp_bytes = model::words_to_bytes(&model.mlp_words);
        let limits = device.limits();
        check_device_limit("the latent buffer", latent_bytes.len() as u64, limits.max_storage_buffer_binding_size)?;
        let mlp_limit = match model.weight_memory {
            WeightMemory::Uniform => limits.max_uniform_buffer_binding_size,
            // Never the decoder's (`WeightMemory::for_limit`): a fragment shader has none.
            WeightMemory::Workgroup => u64::from(limits.max_compute_workgroup_storage_size),
            WeightMemory::Storage => limits.max_storage_buffer_binding_size,
        };
        check_device_limit("the MLP buffer", mlp_bytes.len() as u64, mlp_limit)?;
        Ok(Self {
            latents: storage_buffer(device, "texset latents", &latent_bytes),
            mlp: buffer_init(device, "texset MLP weights", &mlp_bytes, wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::STORAGE),
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

/// The pipeline in `cell`, made by `make` on first use inside a validation scope; a validation
/// error becomes `refused`'s error, and the cell stays empty.
fn made_once<'a, T>(
    cell: &'a std::sync::OnceLock<T>,
    device: &wgpu::Device,
    make: impl FnOnce() -> T,
    refused: impl FnOnce(String) -> GpuError,
) -> Result<&'a T, GpuError> {
    if let Some(made) = cell.get() {
        return Ok(made);
    }
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let made = make();
    if let Some(error) = block_on(scope.pop()) {
        return Err(refused(error.to_string()));
    }
    Ok(cell.get_or_init(|| made))
}

/// Runs `make` (which fills `cell`) and returns the seconds it took, or 0 where `cell` was
/// already full.
fn secs_to_make<T>(cell: &std::sync::OnceLock<T>, make: impl FnOnce() -> Result<(), GpuError>) -> Result<f64, GpuError> {
    let start = std::time::Instant::now();
    let made_before = cell.get().is_some();
    make()?;
    Ok(if made_before { 0.0 } else { start.elapsed().as_secs_f64() })
}

/// A bundle's model resident on the GPU (bit-packed latents as the bundle stores them, weights
/// dequantised once), with the pipelines of the decoder specialised to it.
pub struct GpuDecoder {
    decoder: Decoder,
    model: GpuModel,
    buffers: ModelBuffers,
    map_pipeline: wgpu::ComputePipeline,
    /// Made on the first samples decode ([`GpuDecoder::prepare_samples`]): most users decode
    /// whole maps only, and a driver compiles each entry point in full (on lavapipe the widest
    /// decoder's took minutes).
    samples_pipeline: std::sync::OnceLock<wgpu::ComputePipeline>,
    /// The specialised decoder, kept for the fragment pipeline.
    module: wgpu::ShaderModule,
    /// Made on the first [`GpuDecoder::decode_map_fragment`]: an adapter that cannot render to
    /// [`FRAGMENT_FORMAT`] (GL ones such as llvmpipe) still decodes through compute.
    render_pipeline: std::sync::OnceLock<wgpu::RenderPipeline>,
    /// Seconds the map pipeline took to create (the driver's compile).
    map_compile_secs: f64,
}

/// Seconds the driver took to compile each compute entry point of a [`GpuDecoder`] (pipeline
/// creation, timed on the host: Vulkan, Metal and DX12 drivers compile there).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CompileSecs {
    /// `cs_decode_map`, made by [`GpuDecoder::new`].
    pub decode_map: f64,
    /// `cs_decode_samples`, made by [`GpuDecoder::prepare_samples`] or the first samples decode;
    /// 0 when it was made before.
    pub decode_samples: f64,
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
    /// specialised to its shapes, with the options for `device` ([`GpuModelOptions::for_device`]).
    pub fn new(device: &wgpu::Device, bundle: &Bundle) -> Result<Self, GpuError> {
        Self::with_options(device, bundle, GpuModelOptions::for_device(device))
    }

    /// [`GpuDecoder::new`] with the given options (a benchmark's code shape, say). `f16`
    /// ([`GpuModelOptions::precision`]) on a device without `SHADER_F16` is
    /// [`GpuError::NoShaderF16`].
    pub fn with_options(device: &wgpu::Device, bundle: &Bundle, options: GpuModelOptions) -> Result<Self, GpuError> {
        if options.precision == MlpPrecision::F16 && !device.features().contains(wgpu::Features::SHADER_F16) {
            return Err(GpuError::NoShaderF16);
        }
        let decoder = Decoder::new(bundle);
        let model = GpuModel::with_options(bundle, options)?;
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let buffers = ModelBuffers::upload(device, &model)?;
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("texset decode.wgsl (specialised)"),
            source: wgpu::ShaderSource::Wgsl(model.wgsl().into()),
        });
        let start = std::time::Instant::now();
        let map_pipeline = compute_pipeline(device, &module, "texset decode map pipeline", EntryPoint::DecodeMap);
        let map_compile_secs = start.elapsed().as_secs_f64();
        if let Some(error) = block_on(scope.pop()) {
            return Err(GpuError::Wgpu(error.to_string()));
        }
        Ok(Self {
            decoder,
            model,
            buffers,
            map_pipeline,
            samples_pipeline: std::sync::OnceLock::new(),
            module,
            render_pipeline: std::sync::OnceLock::new(),
            map_compile_secs,
        })
    }

    /// Seconds the map pipeline took to compile, and the samples pipeline with it (made now
    /// where no samples decode made it before; its 0 then means made earlier).
    pub fn compile_secs(&self, device: &wgpu::Device) -> Result<CompileSecs, GpuError> {
        Ok(CompileSecs { decode_map: self.map_compile_secs, decode_samples: self.prepare_samples(device)? })
    }

    /// Compiles the samples entry point now (else the first samples decode does) and returns the
    /// seconds it took (0 when it was already compiled).
    pub fn prepare_samples(&self, device: &wgpu::Device) -> Result<f64, GpuError> {
        secs_to_make(&self.samples_pipeline, || self.samples_pipeline(device).map(drop))
    }

    /// The samples decode pipeline, made on first use.
    fn samples_pipeline(&self, device: &wgpu::Device) -> Result<&wgpu::ComputePipeline, GpuError> {
        made_once(
            &self.samples_pipeline,
            device,
            || compute_pipeline(device, &self.module, "texset decode samples pipeline", EntryPoint::DecodeSamples),
            GpuError::Wgpu,
        )
    }

    /// Compiles the fragment entry point now (else the first [`Self::decode_map_fragment`] does)
    /// and returns the seconds it took (0 when it was already compiled).
    pub fn prepare_fragment(&self, device: &wgpu::Device) -> Result<f64, GpuError> {
        secs_to_make(&self.render_pipeline, || self.render_pipeline(device).map(drop))
    }

    /// The fragment decode pipeline, made on first use.
    fn render_pipeline(&self, device: &wgpu::Device) -> Result<&wgpu::RenderPipeline, GpuError> {
        made_once(
            &self.render_pipeline,
            device,
            || {
                fullscreen_pipeline(
                    device,
                    &self.module,
                    "texset fragment decode pipeline",
                    EntryPoint::FragmentDecode.name(),
                    FRAGMENT_FORMAT,
                )
            },
            |error| GpuError::Wgpu(format!("the fragment decode path cannot run on this device: {error}")),
        )
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
        let (width, height) = level_size(entry.info.width, entry.info.height, level);
        let bytes = u64::from(width) * u64::from(height) * u64::from(entry.info.channels) * 4;
        let limits = device.limits();
        check_device_limit("the decoded map", bytes, limits.max_storage_buffer_binding_size)?;
        check_device_limit("the decoded map", bytes, limits.max_buffer_size)?;
        let groups_x = width.div_ceil(WORKGROUP_SIDE * self.model.block);
        let groups_y = height.div_ceil(WORKGROUP_SIDE);
        check_device_limit("the dispatch", u64::from(groups_x.max(groups_y)), u64::from(limits.max_compute_workgroups_per_dimension))?;

        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let params =
            uniform_buffer(device, &DecodeParams::new(map_index, (width, height, entry.info.channels), 0, mode, level as f32).bytes());
        let output = output_buffer(device, "texset decoded map", bytes);
        let bind_group = self.bind_group(device, &self.map_pipeline.get_bind_group_layout(0), &[(2, &params), (3, &output)]);
        let encoder = compute_pass(device, "texset decode map", &self.map_pipeline, &bind_group, (groups_x, groups_y));
        let values = read_back(device, queue, encoder, &output, bytes, scope)?;
        Ok(DecodedMap { width, height, channels: entry.info.channels, values })
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
        check_device_limit("the render target side", u64::from(entry.info.width.max(entry.info.height)), u64::from(max_side))?;
        let render_pipeline = self.render_pipeline(device)?;
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let params = uniform_buffer(
            device,
            &DecodeParams::new(map_index, (entry.info.width, entry.info.height, entry.info.channels), 0, mode, 0.0).bytes(),
        );
        let bind_group = self.bind_group(device, &render_pipeline.get_bind_group_layout(0), &[(2, &params)]);
        let rgba = render_rgba32f(device, queue, "texset fragment decode", entry.info.width, entry.info.height, scope, |encoder, view| {
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
        let channels = entry.info.channels as usize;
        let values = rgba.chunks_exact(4).flat_map(|texel| &texel[..channels]).copied().collect();
        Ok(DecodedMap { width: entry.info.width, height: entry.info.height, channels: entry.info.channels, values })
    }

    /// Uploads a list of (u, v) samples for [`Self::run_samples`].
    pub fn upload_samples(&self, device: &wgpu::Device, uvs: &[[f32; 2]]) -> Result<SampleBatch, GpuError> {
        let count = to_u32("samples", uvs.len())?;
        let limits = device.limits();
        let bytes = u64::from(count).max(1) * 16;
        check_device_limit("the sample output", bytes, limits.max_storage_buffer_binding_size)?;
        let groups = count.div_ceil(SAMPLE_WORKGROUP * self.model.block).max(1);
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
        let pipeline = self.samples_pipeline(device)?;
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let params = uniform_buffer(
            device,
            &DecodeParams::new(map_index, (entry.info.width, entry.info.height, entry.info.channels), batch.count, mode, lod).bytes(),
        );
        let bind_group =
            self.bind_group(device, &pipeline.get_bind_group_layout(0), &[(2, &params), (3, &batch.output), (4, &batch.samples)]);
        let encoder = compute_pass(device, "texset decode samples", pipeline, &bind_group, batch.groups);
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
