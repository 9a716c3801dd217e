//! The preview in three passes, for lights that move without decoding anything:
//!
//! - the **surface pass** ([`super::SurfacePass`], `preview_surface.wgsl`) finds the surface
//!   under every pixel (a shape ray-cast, or a glTF mesh rasterised) and its texture footprint;
//! - the **material pass** ([`MaterialRenderer`], `fs_material` of `preview.wgsl` appended to the
//!   specialised decoder) decodes the material on that surface into a [`GBuffer`]; from the
//!   original maps it runs `fs_material_originals`, a pipeline that reaches no decoder, so the
//!   originals light at once even where the decoder's compile takes minutes;
//! - the **shading pass** ([`ShadePass`], `preview_shade.wgsl`, one pipeline for every bundle)
//!   lights a G-buffer pixel for pixel.
//!
//! The G-buffer holds `f32` values, so on a shape the three passes give what the one-pass
//! `fs_preview` gives (tested against it).

use super::lighting::{EnvironmentTextures, LIGHTING_BYTES, Lighting};
use super::surface::{DEPTH_FORMAT, SURFACE_FORMAT};
use super::timing::{PassTimer, PassTimes};
use super::{
    GpuMesh, Layout, Originals, PreviewUniforms, SurfacePass, empty_originals, originals_view, side_by_side, side_groups, slot_groups,
    uniform,
};
use crate::environment::PreparedEnvironment;
use crate::model::GpuModel;
use crate::{GpuError, ModelBuffers, block_on};
use std::sync::{Arc, OnceLock};
use texset_core::bundle::Bundle;

/// The G-buffer's texel format (three targets of it: see `GBufferOut` in `preview_scene.wgsl`):
/// the fragment decoder's, so [`crate::renders_fragment_format`] says whether an adapter can.
const GBUFFER_FORMAT: wgpu::TextureFormat = crate::FRAGMENT_FORMAT;
const GBUFFER_FORMATS: [wgpu::TextureFormat; 3] = [GBUFFER_FORMAT; 3];

/// The surface and the material under every pixel of an image (its size): what the surface pass
/// writes, the material pass decodes and the shading pass lights.
pub struct GBuffer {
    size: [u32; 2],
    views: [wgpu::TextureView; 3],
    /// The surface targets (`SurfaceOut` in `preview_scene.wgsl`).
    pub(super) surface: [wgpu::TextureView; 3],
    /// The mesh pass's depth.
    pub(super) depth: wgpu::TextureView,
}

impl GBuffer {
    /// A G-buffer for images of `size` = width × height pixels.
    #[must_use]
    pub fn new(device: &wgpu::Device, size: [u32; 2]) -> Self {
        let view = |label: &str, format: wgpu::TextureFormat| {
            device
                .create_texture(&wgpu::TextureDescriptor {
                    label: Some(label),
                    size: wgpu::Extent3d { width: size[0].max(1), height: size[1].max(1), depth_or_array_layers: 1 },
                    mip_level_count: 1,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format,
                    usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING,
                    view_formats: &[],
                })
                .create_view(&wgpu::TextureViewDescriptor::default())
        };
        let material = |label| view(label, GBUFFER_FORMAT);
        let surface = |label| view(label, SURFACE_FORMAT);
        Self {
            size,
            views: [material("texset preview g-buffer a"), material("texset preview g-buffer b"), material("texset preview g-buffer c")],
            surface: [surface("texset preview surface a"), surface("texset preview surface b"), surface("texset preview surface c")],
            depth: view("texset preview depth", DEPTH_FORMAT),
        }
    }

    /// Its width × height in pixels.
    #[must_use]
    pub fn size(&self) -> [u32; 2] {
        self.size
    }
}

/// A pipeline that reaches the decoder, made when first drawn (on a software GPU its compile is
/// the slow part of a first image), shared by every bundle of the same program, and the bundle's
/// data bound to it.
#[derive(Clone)]
struct LazyPipeline {
    entry: &'static str,
    pipeline: Arc<OnceLock<wgpu::RenderPipeline>>,
    model_group: Arc<OnceLock<wgpu::BindGroup>>,
}

impl LazyPipeline {
    fn new(entry: &'static str) -> Self {
        Self { entry, pipeline: Arc::new(OnceLock::new()), model_group: Arc::new(OnceLock::new()) }
    }

    /// The same program's pipeline for another bundle (its data bound anew).
    fn for_bundle(&self) -> Self {
        Self { entry: self.entry, pipeline: Arc::clone(&self.pipeline), model_group: Arc::new(OnceLock::new()) }
    }
}

/// A bundle's material pass on one device: the pipelines of `fs_material` (the decoder
/// specialised to the bundle's shapes), `fs_material_originals` (no decoder: the side's own maps)
/// and `fs_material_probe` (the error and height views of the decoded maps), and the bundle's data
/// bound to them. The probe's is made when first drawn: its second decoder compile is paid only
/// when its view is asked for. Cheap to clone; made on a thread of its own by the studio, as
/// [`super::PreparedModel`].
#[derive(Clone)]
pub struct PreparedMaterial {
    wgsl: String,
    module: wgpu::ShaderModule,
    originals: wgpu::RenderPipeline,
    /// Group 0 of the originals pipeline, which reads no model data.
    no_model_group: wgpu::BindGroup,
    decoded: LazyPipeline,
    probe: LazyPipeline,
    /// The bundle's data, bound to the decoding pipelines' group 0 when they are made.
    buffers: Arc<ModelBuffers>,
}

impl PreparedMaterial {
    /// Prepares `bundle`, taking the pipelines from `reuse` when it has the same specialised
    /// source (snapshots of one training run). The pipelines that reach the decoder are made when
    /// first drawn: a side that reads maps (the originals, their block-compressed copies) never
    /// asks for them, and a driver that compiles at pipeline creation (lavapipe: tens of seconds
    /// for a decoder) would otherwise keep the lit originals waiting for a program they do not
    /// run (decision 045).
    pub fn new(device: &wgpu::Device, bundle: &Bundle, reuse: Option<&Self>) -> Result<Self, GpuError> {
        let model = GpuModel::with_options(bundle, crate::model::GpuModelOptions::for_device(device))?;
        let wgsl = super::preview_wgsl(&model);
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let (module, originals, decoded, probe) = match reuse {
            Some(r) if r.wgsl == wgsl => (r.module.clone(), r.originals.clone(), r.decoded.for_bundle(), r.probe.for_bundle()),
            _ => {
                let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some("texset preview.wgsl"),
                    source: wgpu::ShaderSource::Wgsl(wgsl.as_str().into()),
                });
                let originals = material_pipeline(device, &module, "fs_material_originals");
                (module, originals, LazyPipeline::new("fs_material"), LazyPipeline::new("fs_material_probe"))
            }
        };
        let buffers = Arc::new(ModelBuffers::upload(device, &model)?);
        let no_model_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("texset preview (no model)"),
            layout: &originals.get_bind_group_layout(0),
            entries: &[],
        });
        if let Some(error) = block_on(scope.pop()) {
            return Err(GpuError::Wgpu(error.to_string()));
        }
        Ok(Self { wgsl, module, originals, no_model_group, decoded, probe, buffers })
    }

    /// Whether the decoded material's pipeline (the decoder's compile) has been made.
    #[must_use]
    pub fn decoder_made(&self) -> bool {
        self.decoded.pipeline.get().is_some()
    }

    /// Makes the decoded material's pipeline now (the driver's compile), unless it is made: a
    /// caller with time to spare pays for it before the first draw that needs it.
    pub fn make_decoder(&self, device: &wgpu::Device) {
        self.made(device, &self.decoded);
    }

    /// How many of the pipelines that reach the decoder (the decoded material's, the probe's)
    /// have been made: a draw that raises it paid a driver's compile.
    #[must_use]
    pub fn decoder_pipelines_made(&self) -> usize {
        [&self.decoded, &self.probe].iter().filter(|l| l.pipeline.get().is_some()).count()
    }

    /// `lazy`'s pipeline and the bundle's data bound to it, made on first use.
    fn made<'a>(&'a self, device: &wgpu::Device, lazy: &'a LazyPipeline) -> (&'a wgpu::RenderPipeline, &'a wgpu::BindGroup) {
        let pipeline = lazy.pipeline.get_or_init(|| material_pipeline(device, &self.module, lazy.entry));
        let group = lazy.model_group.get_or_init(|| self.buffers.bind_group(device, &pipeline.get_bind_group_layout(0), &[]));
        (pipeline, group)
    }
}

/// The material pass's pipeline of fragment entry `entry` of `module`.
fn material_pipeline(device: &wgpu::Device, module: &wgpu::ShaderModule, entry: &str) -> wgpu::RenderPipeline {
    let label = format!("texset preview material pass ({entry})");
    crate::triangle_pipeline(device, module, &label, ["vs_fullscreen", entry], &GBUFFER_FORMATS)
}

/// Which pipeline a uniform slot draws with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotPipeline {
    /// The decoded material.
    Decoded,
    /// The maps of the renderer's texture (and their probe).
    Originals,
    /// The probe of the decoded maps.
    Probe,
}

/// The material pass and its resources on one device: two uniform slots (so one image shows the
/// decoded material beside the originals) and the original maps.
pub struct MaterialRenderer {
    model: PreparedMaterial,
    uniforms: [wgpu::Buffer; 2],
    /// What slot `i` draws (its uniforms say so).
    slots: [SlotPipeline; 2],
    originals: wgpu::TextureView,
    /// Group 1 of the originals pipeline, per slot.
    originals_groups: [wgpu::BindGroup; 2],
    /// Group 1 of the decoding pipelines (decoded, probe), per slot, once they are made.
    lazy_groups: [OnceLock<[wgpu::BindGroup; 2]>; 2],
}

impl MaterialRenderer {
    /// A renderer around a prepared model (cheap: buffers and bind groups only).
    #[must_use]
    pub fn from_prepared(device: &wgpu::Device, model: PreparedMaterial) -> Self {
        let uniforms = [uniform(device), uniform(device)];
        let originals = empty_originals(device);
        let originals_groups = side_groups(device, &model.originals, &uniforms, &originals);
        Self {
            model,
            uniforms,
            slots: [SlotPipeline::Decoded; 2],
            originals,
            originals_groups,
            lazy_groups: [OnceLock::new(), OnceLock::new()],
        }
    }

    /// Switches to a model prepared elsewhere.
    pub fn set_prepared(&mut self, device: &wgpu::Device, model: PreparedMaterial) {
        let new_pipeline = model.wgsl != self.model.wgsl;
        self.model = model;
        if new_pipeline {
            // Bind groups follow the pipelines' own (derived) layouts.
            self.originals_groups = side_groups(device, &self.model.originals, &self.uniforms, &self.originals);
            self.lazy_groups = [OnceLock::new(), OnceLock::new()];
        }
    }

    /// The model it decodes (to hand to [`PreparedMaterial::new`] as `reuse`).
    #[must_use]
    pub fn prepared(&self) -> &PreparedMaterial {
        &self.model
    }

    /// Uploads the original maps of the material shown.
    pub fn set_originals(&mut self, device: &wgpu::Device, queue: &wgpu::Queue, originals: &Originals) -> Result<(), GpuError> {
        self.originals = originals_view(device, queue, originals)?;
        self.originals_groups = side_groups(device, &self.model.originals, &self.uniforms, &self.originals);
        self.lazy_groups = [OnceLock::new(), OnceLock::new()];
        Ok(())
    }

    /// Sets the uniforms of slot `side` (0 or 1); with [`PreviewUniforms::with_originals`] the
    /// slot reads the original maps (the pipeline without the decoder), with
    /// [`PreviewUniforms::with_probe`] it writes the probe.
    pub fn write_uniforms(&mut self, queue: &wgpu::Queue, side: usize, uniforms: &PreviewUniforms) {
        let side = side.min(1);
        self.slots[side] = match (uniforms.view[2] > 0.5, uniforms.probe[0] != 0) {
            (true, _) => SlotPipeline::Originals,
            (false, false) => SlotPipeline::Decoded,
            (false, true) => SlotPipeline::Probe,
        };
        queue.write_buffer(&self.uniforms[side], 0, &uniforms.bytes());
    }

    /// Slot `side`'s pipeline and its groups 0 and 1 (a decoding pipeline made here when first
    /// needed).
    fn bound(&self, device: &wgpu::Device, side: usize) -> (&wgpu::RenderPipeline, &wgpu::BindGroup, &wgpu::BindGroup) {
        let side = side.min(1);
        let (lazy, which) = match self.slots[side] {
            SlotPipeline::Originals => return (&self.model.originals, &self.model.no_model_group, &self.originals_groups[side]),
            SlotPipeline::Decoded => (&self.model.decoded, 0),
            SlotPipeline::Probe => (&self.model.probe, 1),
        };
        let (pipeline, model_group) = self.model.made(device, lazy);
        let groups = self.lazy_groups[which].get_or_init(|| side_groups(device, pipeline, &self.uniforms, &self.originals));
        (pipeline, model_group, &groups[side])
    }

    /// The pipeline slot `side` draws with.
    fn pipeline(&self, device: &wgpu::Device, side: usize) -> &wgpu::RenderPipeline {
        self.bound(device, side).0
    }

    /// Draws slot `side`, reading the surface through `surface` (group 2 of its pipeline).
    fn draw(&self, device: &wgpu::Device, pass: &mut wgpu::RenderPass<'_>, side: usize, surface: &wgpu::BindGroup) {
        let (pipeline, model_group, side_group) = self.bound(device, side);
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, model_group, &[]);
        pass.set_bind_group(1, side_group, &[]);
        pass.set_bind_group(2, surface, &[]);
        pass.draw(0..3, 0..1);
    }
}

/// Records the material pass into `gbuffer`, on the surface its surface pass wrote: a side of
/// `layout` per entry of `sides` (that renderer's uniform slot), only the pixel rows `rows` (so an
/// image's decode can be spread over bands); the other rows keep what they hold. With the pass's
/// `timestamps` where given.
pub fn encode_material(
    device: &wgpu::Device,
    encoder: &mut wgpu::CommandEncoder,
    gbuffer: &GBuffer,
    (sides, layout): (&[(&MaterialRenderer, usize)], Layout),
    rows: std::ops::Range<u32>,
    timestamps: Option<wgpu::RenderPassTimestampWrites<'_>>,
) {
    let surfaces: Vec<wgpu::BindGroup> = sides
        .iter()
        .map(|&(renderer, slot)| {
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("texset preview material pass surface"),
                layout: &renderer.pipeline(device, slot).get_bind_group_layout(2),
                entries: &[wgpu::BindGroupEntry { binding: 0, resource: wgpu::BindingResource::TextureView(&gbuffer.surface[0]) }],
            })
        })
        .collect();
    let targets: Vec<&wgpu::TextureView> = gbuffer.views.iter().collect();
    side_by_side(encoder, "texset preview material pass", &targets, gbuffer.size, layout, rows, (false, timestamps), |pass, side| {
        if let (Some(&(renderer, slot)), Some(surface)) = (sides.get(side), surfaces.get(side)) {
            renderer.draw(device, pass, slot, surface);
        }
    });
}

/// The shading pass for targets of one format: its pipeline (the same for every bundle), two
/// uniform slots (the lights of the moment; the G-buffer's material, shape and view), and how it
/// lights ([`Lighting`], the environment set on it).
pub struct ShadePass {
    pipeline: wgpu::RenderPipeline,
    uniforms: [wgpu::Buffer; 2],
    lighting: Lighting,
    lighting_uniform: wgpu::Buffer,
    environment: EnvironmentTextures,
}

impl ShadePass {
    /// Compiles the shading pass (no decoder: quick on any driver) for targets of `format`.
    #[must_use]
    pub fn new(device: &wgpu::Device, format: wgpu::TextureFormat) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("texset preview_shade.wgsl"),
            source: wgpu::ShaderSource::Wgsl(
                format!("{}\n{}\n{}", super::PREVIEW_SCENE_WGSL, crate::environment::TONEMAP_WGSL, super::PREVIEW_SHADE_WGSL).into(),
            ),
        });
        let pipeline = crate::triangle_pipeline(device, &module, "texset preview shading pass", ["vs_shade", "fs_shade"], &[format]);
        let lighting = Lighting::point_lights_only();
        let environment = EnvironmentTextures::none(device);
        let bytes = lighting.bytes(&environment);
        debug_assert_eq!(bytes.len() as u64, LIGHTING_BYTES);
        let usage = wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST;
        let lighting_uniform = crate::buffer_init(device, "texset preview lighting", &bytes, usage);
        Self { pipeline, uniforms: [uniform(device), uniform(device)], lighting, lighting_uniform, environment }
    }

    /// Lights by `environment` from now on (uploaded here), as [`Self::set_lighting`] says.
    pub fn set_environment(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        environment: &PreparedEnvironment,
    ) -> Result<(), GpuError> {
        self.environment = EnvironmentTextures::new(device, queue, environment)?;
        queue.write_buffer(&self.lighting_uniform, 0, &self.lighting.bytes(&self.environment));
        Ok(())
    }

    /// How to light from now on (the default: the point lights alone, as the one-pass preview).
    pub fn set_lighting(&mut self, queue: &wgpu::Queue, lighting: Lighting) {
        self.lighting = lighting;
        queue.write_buffer(&self.lighting_uniform, 0, &self.lighting.bytes(&self.environment));
    }

    /// How it lights.
    #[must_use]
    pub fn lighting(&self) -> Lighting {
        self.lighting
    }

    /// Sets the uniforms of slot `side` (0 or 1): those the G-buffer was decoded with, and the
    /// lights to shade it under.
    pub fn write_uniforms(&self, queue: &wgpu::Queue, side: usize, uniforms: &PreviewUniforms) {
        queue.write_buffer(&self.uniforms[side.min(1)], 0, &uniforms.bytes());
    }

    /// Records a pass that clears `target` (a view of a texture of `gbuffer`'s size and the
    /// pass's format) and lights the sides of `layout` in `gbuffer`, each with its uniform slot.
    pub fn encode(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        target: &wgpu::TextureView,
        gbuffer: &GBuffer,
        layout: Layout,
    ) {
        self.encode_rows(device, encoder, target, gbuffer, layout, 0..gbuffer.size[1], (true, None));
    }

    /// [`Self::encode`] of the pixel rows `rows` only; the other rows keep what they hold, unless
    /// `clear` (the whole target is cleared first). With the pass's `timestamps` where given.
    #[allow(clippy::too_many_arguments, reason = "encode's arguments, and which rows")]
    pub fn encode_rows(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        target: &wgpu::TextureView,
        gbuffer: &GBuffer,
        layout: Layout,
        rows: std::ops::Range<u32>,
        (clear, timestamps): (bool, Option<wgpu::RenderPassTimestampWrites<'_>>),
    ) {
        let lighting = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("texset preview lighting"),
            layout: &self.pipeline.get_bind_group_layout(2),
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: self.lighting_uniform.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: wgpu::BindingResource::TextureView(&self.environment.specular) },
                wgpu::BindGroupEntry { binding: 2, resource: wgpu::BindingResource::TextureView(&self.environment.brdf) },
                wgpu::BindGroupEntry { binding: 3, resource: wgpu::BindingResource::Sampler(&self.environment.sampler) },
            ],
        });
        let textures = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("texset preview g-buffer"),
            layout: &self.pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: wgpu::BindingResource::TextureView(&gbuffer.views[0]) },
                wgpu::BindGroupEntry { binding: 1, resource: wgpu::BindingResource::TextureView(&gbuffer.views[1]) },
                wgpu::BindGroupEntry { binding: 2, resource: wgpu::BindingResource::TextureView(&gbuffer.views[2]) },
                wgpu::BindGroupEntry { binding: 3, resource: wgpu::BindingResource::TextureView(&gbuffer.surface[0]) },
                wgpu::BindGroupEntry { binding: 4, resource: wgpu::BindingResource::TextureView(&gbuffer.surface[1]) },
                wgpu::BindGroupEntry { binding: 5, resource: wgpu::BindingResource::TextureView(&gbuffer.surface[2]) },
            ],
        });
        let slots = slot_groups(device, "texset preview shading side", &self.pipeline.get_bind_group_layout(1), &self.uniforms);
        side_by_side(encoder, "texset preview shading pass", &[target], gbuffer.size, layout, rows, (clear, timestamps), |pass, side| {
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &textures, &[]);
            pass.set_bind_group(1, &slots[side], &[]);
            pass.set_bind_group(2, &lighting, &[]);
            pass.draw(0..3, 0..1);
        });
    }
}

/// Renders slot 0 of `material` offscreen through the three passes (`size` = width × height,
/// `Rgba32Float`), of `mesh` where given, and reads it back as RGBA f32, rows top to bottom: the
/// three-pass twin of [`super::PreviewRenderer::render`] (`shade` must be made for
/// `Rgba32Float`, and slot 0's uniforms written to all three).
pub fn render_deferred(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    material: &MaterialRenderer,
    passes: (&SurfacePass, &ShadePass),
    mesh: Option<&GpuMesh>,
    size: [u32; 2],
) -> Result<Vec<f32>, GpuError> {
    render_sides(device, queue, (&[(material, 0)], Layout::One), passes, mesh, size)
}

/// [`render_deferred`] of the sides of `layout`, side `i` drawn by the renderer and uniform slot
/// `sides[i]` (each pass's slot `i` written with its uniforms): a wipe or two views beside each
/// other.
pub fn render_sides(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    (sides, layout): (&[(&MaterialRenderer, usize)], Layout),
    (surface, shade): (&SurfacePass, &ShadePass),
    mesh: Option<&GpuMesh>,
    size: [u32; 2],
) -> Result<Vec<f32>, GpuError> {
    Ok(render_sides_timed(device, queue, (sides, layout), (surface, shade), mesh, size, None)?.0)
}

/// [`render_sides`], each pass timed by `timer` where given: the image, and the frame's GPU time
/// (`None` without a timer). The timestamps change nothing drawn.
pub fn render_sides_timed(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    (sides, layout): (&[(&MaterialRenderer, usize)], Layout),
    (surface, shade): (&SurfacePass, &ShadePass),
    mesh: Option<&GpuMesh>,
    size: [u32; 2],
    timer: Option<&PassTimer>,
) -> Result<(Vec<f32>, Option<PassTimes>), GpuError> {
    let [width, height] = size;
    let gbuffer = GBuffer::new(device, size);
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let writes = |pass: usize| timer.map(|t| t.writes(pass));
    let image = crate::render_rgba32f(device, queue, "texset preview (three passes)", width, height, scope, |encoder, view| {
        surface.encode(device, encoder, &gbuffer, (layout, mesh), writes(0));
        encode_material(device, encoder, &gbuffer, (sides, layout), 0..height, writes(1));
        shade.encode_rows(device, encoder, view, &gbuffer, layout, 0..height, (true, writes(2)));
        if let Some(timer) = timer {
            timer.resolve(encoder);
        }
    })?;
    let times = timer.map(|t| t.read(device, queue)).transpose()?;
    Ok((image, times))
}
