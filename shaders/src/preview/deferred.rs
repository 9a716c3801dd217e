//! The preview in two passes, for lights that move without decoding anything:
//!
//! - the **material pass** ([`MaterialRenderer`], `fs_material` of `preview.wgsl` appended to the
//!   specialised decoder) decodes the material under every pixel into a [`GBuffer`]; from the
//!   original maps it runs `fs_material_originals`, a pipeline that reaches no decoder, so the
//!   originals light at once even where the decoder's compile takes minutes;
//! - the **shading pass** ([`ShadePass`], `preview_shade.wgsl`, one pipeline for every bundle)
//!   lights a G-buffer pixel for pixel.
//!
//! The G-buffer holds `f32` values, so the two passes give what the one-pass `fs_preview` gives
//! (tested against it).

use super::{Originals, PreviewUniforms, empty_originals, model_bind_group, originals_view, side_by_side, side_groups, uniform};
use crate::model::GpuModel;
use crate::{GpuError, block_on};
use texset_core::bundle::Bundle;

/// The G-buffer's texel format (three targets of it: see `GBufferOut` in `preview_scene.wgsl`).
const GBUFFER_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba32Float;
const GBUFFER_FORMATS: [wgpu::TextureFormat; 3] = [GBUFFER_FORMAT; 3];

/// The material under every pixel of an image (its size): what the shading pass lights.
pub struct GBuffer {
    size: [u32; 2],
    views: [wgpu::TextureView; 3],
}

impl GBuffer {
    /// A G-buffer for images of `size` = width × height pixels.
    #[must_use]
    pub fn new(device: &wgpu::Device, size: [u32; 2]) -> Self {
        let view = |i: usize| {
            device
                .create_texture(&wgpu::TextureDescriptor {
                    label: Some(["texset preview g-buffer a", "texset preview g-buffer b", "texset preview g-buffer c"][i]),
                    size: wgpu::Extent3d { width: size[0].max(1), height: size[1].max(1), depth_or_array_layers: 1 },
                    mip_level_count: 1,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format: GBUFFER_FORMAT,
                    usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING,
                    view_formats: &[],
                })
                .create_view(&wgpu::TextureViewDescriptor::default())
        };
        Self { size, views: [view(0), view(1), view(2)] }
    }

    /// Its width × height in pixels.
    #[must_use]
    pub fn size(&self) -> [u32; 2] {
        self.size
    }
}

/// A bundle's material pass on one device: the pipelines of `fs_material` and
/// `fs_material_originals` (the decoder specialised to the bundle's shapes) and the bundle's data
/// bound to them. Cheap to clone; made on a thread of its own by the studio, as
/// [`super::PreparedModel`].
#[derive(Clone)]
pub struct PreparedMaterial {
    wgsl: String,
    decoded: wgpu::RenderPipeline,
    originals: wgpu::RenderPipeline,
    model_group: wgpu::BindGroup,
    /// Group 0 of the originals pipeline, which reads no model data.
    no_model_group: wgpu::BindGroup,
}

impl PreparedMaterial {
    /// Prepares `bundle`, taking the pipelines from `reuse` when it has the same specialised
    /// source (snapshots of one training run).
    pub fn new(device: &wgpu::Device, bundle: &Bundle, reuse: Option<&Self>) -> Result<Self, GpuError> {
        let model = GpuModel::with_options(bundle, crate::model::GpuModelOptions::for_device(device))?;
        let wgsl = super::preview_wgsl(&model);
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let (decoded, originals) = match reuse {
            Some(r) if r.wgsl == wgsl => (r.decoded.clone(), r.originals.clone()),
            _ => {
                let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some("texset preview.wgsl"),
                    source: wgpu::ShaderSource::Wgsl(wgsl.as_str().into()),
                });
                let pipeline =
                    |label: &str, entry: &str| crate::triangle_pipeline(device, &module, label, ["vs_fullscreen", entry], &GBUFFER_FORMATS);
                (
                    pipeline("texset preview material pass", "fs_material"),
                    pipeline("texset preview material pass (originals)", "fs_material_originals"),
                )
            }
        };
        let model_group = model_bind_group(device, &decoded, &model)?;
        let no_model_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("texset preview (no model)"),
            layout: &originals.get_bind_group_layout(0),
            entries: &[],
        });
        if let Some(error) = block_on(scope.pop()) {
            return Err(GpuError::Wgpu(error.to_string()));
        }
        Ok(Self { wgsl, decoded, originals, model_group, no_model_group })
    }
}

/// The material pass and its resources on one device: two uniform slots (so one image shows the
/// decoded material beside the originals) and the original maps.
pub struct MaterialRenderer {
    model: PreparedMaterial,
    uniforms: [wgpu::Buffer; 2],
    /// Whether slot `i` reads the original maps (its uniforms say so).
    from_originals: [bool; 2],
    originals: wgpu::TextureView,
    /// Group 1 of each pipeline, per slot: `[decoded, originals]`.
    side_groups: [[wgpu::BindGroup; 2]; 2],
}

impl MaterialRenderer {
    /// A renderer around a prepared model (cheap: buffers and bind groups only).
    #[must_use]
    pub fn from_prepared(device: &wgpu::Device, model: PreparedMaterial) -> Self {
        let uniforms = [uniform(device), uniform(device)];
        let originals = empty_originals(device);
        let side_groups = Self::groups(device, &model, &uniforms, &originals);
        Self { model, uniforms, from_originals: [false; 2], originals, side_groups }
    }

    fn groups(
        device: &wgpu::Device,
        model: &PreparedMaterial,
        uniforms: &[wgpu::Buffer; 2],
        originals: &wgpu::TextureView,
    ) -> [[wgpu::BindGroup; 2]; 2] {
        [side_groups(device, &model.decoded, uniforms, originals), side_groups(device, &model.originals, uniforms, originals)]
    }

    /// Switches to a model prepared elsewhere.
    pub fn set_prepared(&mut self, device: &wgpu::Device, model: PreparedMaterial) {
        let new_pipeline = model.wgsl != self.model.wgsl;
        self.model = model;
        if new_pipeline {
            // Bind groups follow the pipelines' own (derived) layouts.
            self.side_groups = Self::groups(device, &self.model, &self.uniforms, &self.originals);
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
        self.side_groups = Self::groups(device, &self.model, &self.uniforms, &self.originals);
        Ok(())
    }

    /// Sets the uniforms of slot `side` (0 or 1); with [`PreviewUniforms::with_originals`] the
    /// slot reads the original maps (the pipeline without the decoder).
    pub fn write_uniforms(&mut self, queue: &wgpu::Queue, side: usize, uniforms: &PreviewUniforms) {
        let side = side.min(1);
        self.from_originals[side] = uniforms.view[2] > 0.5;
        queue.write_buffer(&self.uniforms[side], 0, &uniforms.bytes());
    }

    fn draw(&self, pass: &mut wgpu::RenderPass<'_>, side: usize) {
        let side = side.min(1);
        if self.from_originals[side] {
            pass.set_pipeline(&self.model.originals);
            pass.set_bind_group(0, &self.model.no_model_group, &[]);
            pass.set_bind_group(1, &self.side_groups[1][side], &[]);
        } else {
            pass.set_pipeline(&self.model.decoded);
            pass.set_bind_group(0, &self.model.model_group, &[]);
            pass.set_bind_group(1, &self.side_groups[0][side], &[]);
        }
        pass.draw(0..3, 0..1);
    }
}

/// Records the material pass into `gbuffer`: one viewport per entry of `sides` (that renderer's
/// uniform slot), side by side, only the pixel rows `rows` (so an image's decode can be spread
/// over bands); the other rows keep what they hold.
pub fn encode_material(
    encoder: &mut wgpu::CommandEncoder,
    gbuffer: &GBuffer,
    sides: &[(&MaterialRenderer, usize)],
    rows: std::ops::Range<u32>,
) {
    let targets: Vec<&wgpu::TextureView> = gbuffer.views.iter().collect();
    side_by_side(encoder, "texset preview material pass", &targets, gbuffer.size, sides.len(), rows, false, |pass, side| {
        let (renderer, slot) = sides[side];
        renderer.draw(pass, slot);
    });
}

/// The shading pass for targets of one format: its pipeline (the same for every bundle) and
/// two uniform slots (the lights of the moment; the G-buffer's material, shape and view).
pub struct ShadePass {
    pipeline: wgpu::RenderPipeline,
    uniforms: [wgpu::Buffer; 2],
}

impl ShadePass {
    /// Compiles the shading pass (no decoder: quick on any driver) for targets of `format`.
    #[must_use]
    pub fn new(device: &wgpu::Device, format: wgpu::TextureFormat) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("texset preview_shade.wgsl"),
            source: wgpu::ShaderSource::Wgsl(format!("{}\n{}", super::PREVIEW_SCENE_WGSL, super::PREVIEW_SHADE_WGSL).into()),
        });
        let pipeline = crate::triangle_pipeline(device, &module, "texset preview shading pass", ["vs_shade", "fs_shade"], &[format]);
        Self { pipeline, uniforms: [uniform(device), uniform(device)] }
    }

    /// Sets the uniforms of slot `side` (0 or 1): those the G-buffer was decoded with, and the
    /// lights to shade it under.
    pub fn write_uniforms(&self, queue: &wgpu::Queue, side: usize, uniforms: &PreviewUniforms) {
        queue.write_buffer(&self.uniforms[side.min(1)], 0, &uniforms.bytes());
    }

    /// Records a pass that clears `target` (a view of a texture of `gbuffer`'s size and the
    /// pass's format) and lights `sides` (1 or 2) viewports of `gbuffer`, side by side, each
    /// with its uniform slot.
    pub fn encode(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        target: &wgpu::TextureView,
        gbuffer: &GBuffer,
        sides: usize,
    ) {
        let textures = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("texset preview g-buffer"),
            layout: &self.pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: wgpu::BindingResource::TextureView(&gbuffer.views[0]) },
                wgpu::BindGroupEntry { binding: 1, resource: wgpu::BindingResource::TextureView(&gbuffer.views[1]) },
                wgpu::BindGroupEntry { binding: 2, resource: wgpu::BindingResource::TextureView(&gbuffer.views[2]) },
            ],
        });
        let layout = self.pipeline.get_bind_group_layout(1);
        let slots: Vec<wgpu::BindGroup> = self
            .uniforms
            .iter()
            .map(|buffer| {
                device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("texset preview shading side"),
                    layout: &layout,
                    entries: &[wgpu::BindGroupEntry { binding: 0, resource: buffer.as_entire_binding() }],
                })
            })
            .collect();
        let sides = sides.clamp(1, 2);
        side_by_side(encoder, "texset preview shading pass", &[target], gbuffer.size, sides, 0..gbuffer.size[1], true, |pass, side| {
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &textures, &[]);
            pass.set_bind_group(1, &slots[side], &[]);
            pass.draw(0..3, 0..1);
        });
    }
}

/// Renders slot 0 of `material` offscreen through both passes (`width × height`, `Rgba32Float`)
/// and reads it back as RGBA f32, rows top to bottom: the two-pass twin of
/// [`super::PreviewRenderer::render`] (`shade` must be made for `Rgba32Float`, with slot 0's
/// uniforms written to both).
pub fn render_deferred(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    material: &MaterialRenderer,
    shade: &ShadePass,
    width: u32,
    height: u32,
) -> Result<Vec<f32>, GpuError> {
    let gbuffer = GBuffer::new(device, [width, height]);
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    crate::render_rgba32f(device, queue, "texset preview (two passes)", width, height, scope, |encoder, view| {
        encode_material(encoder, &gbuffer, &[(material, 0)], 0..height);
        shade.encode(device, encoder, view, &gbuffer, 1);
    })
}
