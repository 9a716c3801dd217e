//! The studio's PBR preview: `preview.wgsl` appended to the decoder specialised to a bundle, so the
//! material is decoded per pixel in the fragment shader; [`shade`] is its CPU reference.
//!
//! [`PreviewRenderer`] owns the pipeline and buffers and draws into any render pass whose colour
//! target has its format (the studio's egui paint callback, or [`PreviewRenderer::render`]
//! offscreen for tests). Two uniform slots let one frame show the decoded material beside the
//! original maps.

use crate::model::GpuModel;
use crate::{GpuError, block_on, check_device_limit, to_u32};
use texset_core::bundle::{Bundle, Manifest};
use texset_core::set::MapKind;

/// The preview's WGSL (appended to the specialised decoder).
pub const PREVIEW_WGSL: &str = include_str!("preview.wgsl");

/// Marks a map the material lacks.
pub const NONE: u32 = u32::MAX;

/// Bytes of [`PreviewUniforms`] as the WGSL `Preview` struct lays them out.
const UNIFORM_BYTES: u64 = 128;

/// The `Preview` uniform of `preview.wgsl` (same layout).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PreviewUniforms {
    /// Library map indices: basecolor, normal, roughness, metallic, ao, orm, emissive, unused.
    pub maps: [u32; 8],
    /// The same maps' layers in the originals texture.
    pub layers: [u32; 8],
    /// Direction towards light 0 (unit) and its intensity.
    pub light0: [f32; 4],
    /// Light 1.
    pub light1: [f32; 4],
    /// Shape (0 sphere, 1 plane, 2 cube), aspect, source (1 = originals), encode sRGB (1).
    pub view: [f32; 4],
    /// Viewport height in pixels, filter decoded maps by level of detail (1), unused, unused.
    pub lod_filter: [f32; 4],
}

/// Shapes (the `view.x` values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Unit sphere.
    Sphere = 0,
    /// Plane facing the camera.
    Plane = 1,
    /// Rotated cube.
    Cube = 2,
}

/// The kinds in `maps` order.
const SLOTS: [MapKind; 7] =
    [MapKind::Basecolor, MapKind::Normal, MapKind::Roughness, MapKind::Metallic, MapKind::Ao, MapKind::Orm, MapKind::Emissive];

impl PreviewUniforms {
    /// Uniforms for material `material` of `manifest`: lights at orbit angle `angle` (radians)
    /// with `intensity`, a `shape` in a viewport of `aspect` = width / height.
    #[must_use]
    pub fn new(manifest: &Manifest, material: usize, angle: f32, intensity: f32, shape: Shape, aspect: f32) -> Self {
        let first: usize = manifest.materials.iter().take(material).map(|m| m.maps.len()).sum();
        let mut maps = [NONE; 8];
        let mut layers = [NONE; 8];
        if let Some(m) = manifest.materials.get(material) {
            for (slot, kind) in SLOTS.iter().enumerate() {
                if let Some(i) = m.maps.iter().position(|e| e.kind == *kind) {
                    maps[slot] = (first + i) as u32;
                    layers[slot] = i as u32;
                }
            }
        }
        let dir = |a: f32, y: f32| {
            let v = [a.sin(), y, a.cos()];
            let len = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
            [v[0] / len, v[1] / len, v[2] / len]
        };
        let l0 = dir(angle, 0.6);
        let l1 = dir(angle + std::f32::consts::PI * 0.8, 0.2);
        Self {
            maps,
            layers,
            light0: [l0[0], l0[1], l0[2], intensity],
            light1: [l1[0], l1[1], l1[2], intensity * 0.4],
            view: [shape as u32 as f32, aspect, 0.0, 0.0],
            lod_filter: [0.0; 4],
        }
    }

    /// Filters the decoded maps by level of detail for a viewport `height_px` pixels high: each
    /// pixel decodes at the LOD its footprint asks for ([`pixel_footprint`], [`map_lod`]),
    /// blending two mip levels, so a distant or zoomed-out surface does not shimmer. Only a
    /// bundle with a mip chain has levels to blend; without one every LOD decodes level 0.
    #[must_use]
    pub fn with_lod_filter(mut self, height_px: f32) -> Self {
        self.lod_filter = [height_px, 1.0, 0.0, 0.0];
        self
    }

    /// Shades the original maps instead of the decoded ones.
    #[must_use]
    pub fn with_originals(mut self, originals: bool) -> Self {
        self.view[2] = if originals { 1.0 } else { 0.0 };
        self
    }

    /// Encodes sRGB on output (for targets that are not sRGB formats).
    #[must_use]
    pub fn with_srgb_encoding(mut self, encode: bool) -> Self {
        self.view[3] = if encode { 1.0 } else { 0.0 };
        self
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(UNIFORM_BYTES as usize);
        for v in self.maps.iter().chain(&self.layers) {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in self.light0.iter().chain(&self.light1).chain(&self.view).chain(&self.lod_filter) {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out
    }
}

/// The original maps of one material for the comparison side, as stored values in `[0, 1]`
/// (what `Texture::texels` holds), resampled (nearest) to one size.
pub struct Originals {
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
    /// Per map of the material (in manifest order): RGBA8 texels.
    pub layers: Vec<Vec<[u8; 4]>>,
}

impl Originals {
    /// From maps given as (width, height, channels, values in `[0, 1]`), at the largest size.
    #[must_use]
    pub fn from_maps(maps: &[(u32, u32, u32, &[f32])]) -> Self {
        let width = maps.iter().map(|m| m.0).max().unwrap_or(1).max(1);
        let height = maps.iter().map(|m| m.1).max().unwrap_or(1).max(1);
        let layers = maps
            .iter()
            .map(|&(w, h, c, values)| {
                let mut texels = Vec::with_capacity(width as usize * height as usize);
                for y in 0..height {
                    for x in 0..width {
                        let sx = (x as u64 * u64::from(w) / u64::from(width)) as usize;
                        let sy = (y as u64 * u64::from(h) / u64::from(height)) as usize;
                        let i = (sy * w as usize + sx) * c as usize;
                        let mut t = [0u8; 4];
                        for (k, value) in t.iter_mut().enumerate().take(c.min(4) as usize) {
                            *value = (values.get(i + k).copied().unwrap_or(0.0).clamp(0.0, 1.0) * 255.0).round() as u8;
                        }
                        texels.push(t);
                    }
                }
                texels
            })
            .collect();
        Self { width, height, layers }
    }
}

/// A bundle's preview program on one device: the pipeline (the decoder specialised to the
/// bundle's shapes, with `preview.wgsl` appended) and the bundle's data bound to it.
///
/// Making one compiles the pipeline unless `reuse` was made for the same shapes (snapshots of one
/// training run share them). On a software GPU that compile takes seconds, so the studio makes
/// these on a thread of its own and hands them to [`PreviewRenderer::set_prepared`].
#[derive(Clone)]
pub struct PreparedModel {
    format: wgpu::TextureFormat,
    wgsl: String,
    pipeline: wgpu::RenderPipeline,
    model_group: wgpu::BindGroup,
}

impl PreparedModel {
    /// Prepares `bundle` for targets of `format`, taking the pipeline from `reuse` when it has
    /// the same specialised source and format.
    pub fn new(device: &wgpu::Device, bundle: &Bundle, format: wgpu::TextureFormat, reuse: Option<&Self>) -> Result<Self, GpuError> {
        let model = GpuModel::new(bundle)?;
        let wgsl = preview_wgsl(&model);
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let pipeline = match reuse {
            Some(r) if r.wgsl == wgsl && r.format == format => r.pipeline.clone(),
            _ => create_pipeline(device, &wgsl, format),
        };
        let model_group = model_bind_group(device, &pipeline, &model)?;
        if let Some(error) = block_on(scope.pop()) {
            return Err(GpuError::Wgpu(error.to_string()));
        }
        Ok(Self { format, wgsl, pipeline, model_group })
    }

    /// The target format it draws into.
    #[must_use]
    pub fn format(&self) -> wgpu::TextureFormat {
        self.format
    }
}

/// The preview pipeline and its resources on one device.
pub struct PreviewRenderer {
    model: PreparedModel,
    uniforms: [wgpu::Buffer; 2],
    originals: wgpu::TextureView,
    side_groups: [wgpu::BindGroup; 2],
}

impl PreviewRenderer {
    /// Compiles the preview for `bundle`, drawing into targets of `format`.
    pub fn new(device: &wgpu::Device, bundle: &Bundle, format: wgpu::TextureFormat) -> Result<Self, GpuError> {
        Ok(Self::from_prepared(device, PreparedModel::new(device, bundle, format, None)?))
    }

    /// A renderer around a prepared model (cheap: buffers and bind groups only).
    #[must_use]
    pub fn from_prepared(device: &wgpu::Device, model: PreparedModel) -> Self {
        let uniforms = [uniform(device), uniform(device)];
        let originals = originals_texture(device, None);
        let side_groups = side_groups(device, &model.pipeline, &uniforms, &originals);
        Self { model, uniforms, originals, side_groups }
    }

    /// Switches to another bundle: new buffers; the pipeline is rebuilt only when the bundle's
    /// shapes differ (snapshots of one training run share them).
    pub fn set_bundle(&mut self, device: &wgpu::Device, bundle: &Bundle) -> Result<(), GpuError> {
        let model = PreparedModel::new(device, bundle, self.model.format, Some(&self.model))?;
        self.set_prepared(device, model);
        Ok(())
    }

    /// Switches to a model prepared elsewhere (see [`PreparedModel`]).
    pub fn set_prepared(&mut self, device: &wgpu::Device, model: PreparedModel) {
        let new_pipeline = model.wgsl != self.model.wgsl || model.format != self.model.format;
        self.model = model;
        if new_pipeline {
            // Bind groups follow the pipeline's own (derived) layouts.
            self.side_groups = side_groups(device, &self.model.pipeline, &self.uniforms, &self.originals);
        }
    }

    /// The model it draws (to hand to [`PreparedModel::new`] as `reuse`).
    #[must_use]
    pub fn prepared(&self) -> &PreparedModel {
        &self.model
    }

    /// Uploads the original maps of the material shown (for the comparison side).
    pub fn set_originals(&mut self, device: &wgpu::Device, queue: &wgpu::Queue, originals: &Originals) -> Result<(), GpuError> {
        let side = u64::from(originals.width.max(originals.height));
        check_device_limit("the originals' side", side, u64::from(device.limits().max_texture_dimension_2d))?;
        let texture = device.create_texture(&wgpu::TextureDescriptor {
            label: Some("texset preview originals"),
            size: wgpu::Extent3d {
                width: originals.width,
                height: originals.height,
                depth_or_array_layers: to_u32("layers", originals.layers.len().max(1))?,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: wgpu::TextureFormat::Rgba8Unorm,
            usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
            view_formats: &[],
        });
        for (layer, texels) in originals.layers.iter().enumerate() {
            let bytes: Vec<u8> = texels.iter().flatten().copied().collect();
            queue.write_texture(
                wgpu::TexelCopyTextureInfo {
                    texture: &texture,
                    mip_level: 0,
                    origin: wgpu::Origin3d { x: 0, y: 0, z: to_u32("layer", layer)? },
                    aspect: wgpu::TextureAspect::All,
                },
                &bytes,
                wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(originals.width * 4), rows_per_image: Some(originals.height) },
                wgpu::Extent3d { width: originals.width, height: originals.height, depth_or_array_layers: 1 },
            );
        }
        self.originals = texture
            .create_view(&wgpu::TextureViewDescriptor { dimension: Some(wgpu::TextureViewDimension::D2Array), ..Default::default() });
        self.side_groups = side_groups(device, &self.model.pipeline, &self.uniforms, &self.originals);
        Ok(())
    }

    /// Sets the uniforms of slot `side` (0 or 1).
    pub fn write_uniforms(&self, queue: &wgpu::Queue, side: usize, uniforms: &PreviewUniforms) {
        queue.write_buffer(&self.uniforms[side.min(1)], 0, &uniforms.bytes());
    }

    /// Draws slot `side` into the pass (set its viewport first).
    pub fn draw(&self, pass: &mut wgpu::RenderPass<'_>, side: usize) {
        pass.set_pipeline(&self.model.pipeline);
        pass.set_bind_group(0, &self.model.model_group, &[]);
        pass.set_bind_group(1, &self.side_groups[side.min(1)], &[]);
        pass.draw(0..3, 0..1);
    }

    /// Records a pass that clears `target` (a view of a `width × height` texture of the renderer's
    /// format) and draws `sides` slots (1 or 2) side by side into it.
    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder, target: &wgpu::TextureView, width: u32, height: u32, sides: usize) {
        self.encode_rows(encoder, target, [width, height], sides, 0..height, true);
    }

    /// Records a pass that draws only the pixel rows `rows` of the `sides` slots (side by side,
    /// over the whole `size` = width × height of `target`), keeping the other rows as they are
    /// unless `clear`. Drawing an image in bands of rows over several frames keeps each frame's
    /// GPU work bounded: every pixel runs the decoder's MLP.
    pub fn encode_rows(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        target: &wgpu::TextureView,
        size: [u32; 2],
        sides: usize,
        rows: std::ops::Range<u32>,
        clear: bool,
    ) {
        let slots = [(self, 0), (self, 1)];
        encode_sides(encoder, target, size, &slots[..sides.clamp(1, 2)], rows, clear);
    }

    /// Renders slot 0 offscreen into a `width × height` target of the renderer's format (which
    /// must be `Rgba32Float`) and reads it back as RGBA f32, rows top to bottom.
    pub fn render(&self, device: &wgpu::Device, queue: &wgpu::Queue, width: u32, height: u32) -> Result<Vec<f32>, GpuError> {
        if self.model.format != wgpu::TextureFormat::Rgba32Float {
            return Err(GpuError::Wgpu("offscreen preview renders need an Rgba32Float renderer".into()));
        }
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        crate::render_rgba32f(device, queue, "texset preview", width, height, scope, |encoder, view| {
            self.encode(encoder, view, width, height, 1);
        })
    }
}

/// Records a pass that draws, side by side over the `size` = width × height of `target`, one
/// image per entry of `sides`: that renderer's uniform slot (so two bundles can be shown beside
/// each other, each by its own renderer). Only the pixel rows `rows` are drawn; the others keep
/// their contents unless `clear`.
pub fn encode_sides(
    encoder: &mut wgpu::CommandEncoder,
    target: &wgpu::TextureView,
    size: [u32; 2],
    sides: &[(&PreviewRenderer, usize)],
    rows: std::ops::Range<u32>,
    clear: bool,
) {
    let [width, height] = size;
    let load = if clear { wgpu::LoadOp::Clear(wgpu::Color::BLACK) } else { wgpu::LoadOp::Load };
    let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
        label: Some("texset preview pass"),
        color_attachments: &[Some(wgpu::RenderPassColorAttachment {
            view: target,
            depth_slice: None,
            resolve_target: None,
            ops: wgpu::Operations { load, store: wgpu::StoreOp::Store },
        })],
        depth_stencil_attachment: None,
        timestamp_writes: None,
        occlusion_query_set: None,
        multiview_mask: None,
    });
    let first = rows.start.min(height);
    let last = rows.end.clamp(first, height);
    if last == first || width == 0 || sides.is_empty() {
        return;
    }
    pass.set_scissor_rect(0, first, width, last - first);
    let side_width = width as f32 / sides.len() as f32;
    for (side, (renderer, slot)) in sides.iter().enumerate() {
        pass.set_viewport(side_width * side as f32, 0.0, side_width, height as f32, 0.0, 1.0);
        renderer.draw(&mut pass, *slot);
    }
}

/// Reads an `Rgba8Unorm` texture of `size` (made with `COPY_SRC`) back as tightly packed RGBA8
/// rows, blocking until the GPU is done with it (for a preview drawn on a device of its own).
pub fn read_rgba8(device: &wgpu::Device, queue: &wgpu::Queue, texture: &wgpu::Texture, size: [u32; 2]) -> Result<Vec<u8>, GpuError> {
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("texset preview read-back") });
    crate::read_texture(device, queue, encoder, texture, size, 4, scope)
}

/// The specialised decoder with the preview appended.
#[must_use]
pub fn preview_wgsl(model: &GpuModel) -> String {
    format!("{}\n{}", model.wgsl(), PREVIEW_WGSL)
}

fn create_pipeline(device: &wgpu::Device, wgsl: &str, format: wgpu::TextureFormat) -> wgpu::RenderPipeline {
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("texset preview.wgsl"),
        source: wgpu::ShaderSource::Wgsl(wgsl.into()),
    });
    crate::fullscreen_pipeline(device, &module, "texset preview pipeline", "fs_preview", format)
}

fn model_bind_group(device: &wgpu::Device, pipeline: &wgpu::RenderPipeline, model: &GpuModel) -> Result<wgpu::BindGroup, GpuError> {
    Ok(crate::ModelBuffers::upload(device, model)?.bind_group(device, &pipeline.get_bind_group_layout(0), &[]))
}

fn uniform(device: &wgpu::Device) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("texset preview uniforms"),
        size: UNIFORM_BYTES,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

fn originals_texture(device: &wgpu::Device, _: Option<()>) -> wgpu::TextureView {
    let texture = device.create_texture(&wgpu::TextureDescriptor {
        label: Some("texset preview originals (none)"),
        size: wgpu::Extent3d { width: 1, height: 1, depth_or_array_layers: 1 },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Rgba8Unorm,
        usage: wgpu::TextureUsages::TEXTURE_BINDING,
        view_formats: &[],
    });
    texture.create_view(&wgpu::TextureViewDescriptor { dimension: Some(wgpu::TextureViewDimension::D2Array), ..Default::default() })
}

fn side_groups(
    device: &wgpu::Device,
    pipeline: &wgpu::RenderPipeline,
    uniforms: &[wgpu::Buffer; 2],
    originals: &wgpu::TextureView,
) -> [wgpu::BindGroup; 2] {
    let layout = pipeline.get_bind_group_layout(1);
    let group = |buffer: &wgpu::Buffer| {
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("texset preview side"),
            layout: &layout,
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: buffer.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: wgpu::BindingResource::TextureView(originals) },
            ],
        })
    };
    [group(&uniforms[0]), group(&uniforms[1])]
}

// ---- CPU reference (the twin of preview.wgsl) ----

type V3 = [f32; 3];

fn add(a: V3, b: V3) -> V3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}
fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
fn mul(a: V3, s: f32) -> V3 {
    [a[0] * s, a[1] * s, a[2] * s]
}
fn dot(a: V3, b: V3) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
fn cross(a: V3, b: V3) -> V3 {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}
fn normalize(a: V3) -> V3 {
    mul(a, 1.0 / dot(a, a).sqrt())
}

struct Hit {
    normal: V3,
    tangent: V3,
    uv: [f32; 2],
}

/// Column-major 3×3 (as WGSL's `mat3x3`): `m[c]` is column `c`.
type M3 = [V3; 3];
fn mat_vec(m: &M3, v: V3) -> V3 {
    add(add(mul(m[0], v[0]), mul(m[1], v[1])), mul(m[2], v[2]))
}
fn transpose_vec(m: &M3, v: V3) -> V3 {
    [dot(m[0], v), dot(m[1], v), dot(m[2], v)]
}
fn mat_mul(a: &M3, b: &M3) -> M3 {
    [mat_vec(a, b[0]), mat_vec(a, b[1]), mat_vec(a, b[2])]
}
fn cube_rotation() -> M3 {
    let (yaw, pitch) = (0.6f32, 0.45f32);
    let ry = [[yaw.cos(), 0.0, -yaw.sin()], [0.0, 1.0, 0.0], [yaw.sin(), 0.0, yaw.cos()]];
    let rx = [[1.0, 0.0, 0.0], [0.0, pitch.cos(), pitch.sin()], [0.0, -pitch.sin(), pitch.cos()]];
    mat_mul(&rx, &ry)
}

// Reason: `near` is the largest of `tmin`, so exact equality tells which slab it came from (as
// the WGSL does).
#[allow(clippy::float_cmp)]
fn intersect(origin: V3, dir: V3, shape: u32) -> Option<Hit> {
    use std::f32::consts::PI;
    if shape == 0 {
        let b = dot(origin, dir);
        let c = dot(origin, origin) - 1.0;
        let disc = b * b - c;
        if disc < 0.0 {
            return None;
        }
        let t = -b - disc.sqrt();
        let p = add(origin, mul(dir, t));
        let phi = p[0].atan2(p[2]);
        return Some(Hit {
            normal: normalize(p),
            tangent: [phi.cos(), 0.0, -phi.sin()],
            uv: [phi / (2.0 * PI) + 0.5, p[1].clamp(-1.0, 1.0).acos() / PI],
        });
    }
    if shape == 1 {
        if dir[2].abs() < 1e-6 {
            return None;
        }
        let t = -origin[2] / dir[2];
        let p = add(origin, mul(dir, t));
        if t <= 0.0 || p[0].abs() > 1.0 || p[1].abs() > 1.0 {
            return None;
        }
        return Some(Hit { normal: [0.0, 0.0, 1.0], tangent: [1.0, 0.0, 0.0], uv: [p[0] * 0.5 + 0.5, 0.5 - p[1] * 0.5] });
    }
    let r = cube_rotation();
    let o = transpose_vec(&r, origin);
    let d = transpose_vec(&r, dir);
    let size = 0.75f32;
    let mut tmin = [0.0f32; 3];
    let mut tmax = [0.0f32; 3];
    for k in 0..3 {
        let inv = 1.0 / d[k];
        let t0 = (-size - o[k]) * inv;
        let t1 = (size - o[k]) * inv;
        tmin[k] = t0.min(t1);
        tmax[k] = t0.max(t1);
    }
    let near = tmin[0].max(tmin[1]).max(tmin[2]);
    let far = tmax[0].min(tmax[1]).min(tmax[2]);
    if near > far || far < 0.0 {
        return None;
    }
    let q = mul(add(o, mul(d, near)), 1.0 / size);
    let sign = |x: f32| {
        if x > 0.0 {
            1.0
        } else if x < 0.0 {
            -1.0
        } else {
            0.0
        }
    };
    let (n, tangent, uv) = if near == tmin[0] {
        ([sign(q[0]), 0.0, 0.0], [0.0, 0.0, -sign(q[0])], [-sign(q[0]) * q[2], -q[1]])
    } else if near == tmin[1] {
        ([0.0, sign(q[1]), 0.0], [1.0, 0.0, 0.0], [q[0], sign(q[1]) * q[2]])
    } else {
        ([0.0, 0.0, sign(q[2])], [sign(q[2]), 0.0, 0.0], [sign(q[2]) * q[0], -q[1]])
    };
    Some(Hit {
        normal: mat_vec(&r, n),
        tangent: mat_vec(&r, tangent),
        uv: [(uv[0] * 0.5 + 0.5).clamp(0.0, 1.0), (uv[1] * 0.5 + 0.5).clamp(0.0, 1.0)],
    })
}

fn light(n: V3, v: V3, l: V3, intensity: f32, albedo: V3, roughness: f32, metallic: f32) -> V3 {
    use std::f32::consts::PI;
    let n_dot_l = dot(n, l);
    if n_dot_l <= 0.0 {
        return [0.0; 3];
    }
    let h = normalize(add(v, l));
    let n_dot_v = dot(n, v).max(1e-4);
    let n_dot_h = dot(n, h).max(0.0);
    let v_dot_h = dot(v, h).max(0.0);
    let alpha = (roughness * roughness).max(1e-3);
    let a2 = alpha * alpha;
    let denom = n_dot_h * n_dot_h * (a2 - 1.0) + 1.0;
    let d = a2 / (PI * denom * denom);
    let k = alpha * 0.5;
    let vis = 1.0 / ((n_dot_l * (1.0 - k) + k) * (n_dot_v * (1.0 - k) + k) * 4.0);
    let mut out = [0.0; 3];
    for c in 0..3 {
        let f0 = 0.04 + (albedo[c] - 0.04) * metallic;
        let fresnel = f0 + (1.0 - f0) * (1.0 - v_dot_h).powf(5.0);
        let specular = d * vis * fresnel;
        let diffuse = (1.0 - fresnel) * (1.0 - metallic) * albedo[c] / PI;
        out[c] = (diffuse + specular) * n_dot_l * intensity;
    }
    out
}

fn encode_srgb(c: f32) -> f32 {
    if c <= 0.003_130_8 { c * 12.92 } else { 1.055 * c.powf(1.0 / 2.4) - 0.055 }
}

fn ray_dir(uniforms: &PreviewUniforms, uv: [f32; 2]) -> V3 {
    let tan_half = 0.45;
    let ndc = [uv[0] * 2.0 - 1.0, 1.0 - uv[1] * 2.0];
    normalize([ndc[0] * tan_half * uniforms.view[1], ndc[1] * tan_half, -1.0])
}

fn uv_distance(a: [f32; 2], b: [f32; 2]) -> f32 {
    let du = (a[0] - b[0]).abs();
    let (du, dv) = (du.min(1.0 - du), a[1] - b[1]);
    (du * du + dv * dv).sqrt()
}

/// How far in texture space one viewport pixel reaches at viewport point `uv` whose ray hits the
/// shape at `hit_uv` (0 with the LOD filter off): the larger of the texture-space distances to the
/// hits one pixel right and one pixel down (u wraps around the sphere's seam). The WGSL
/// `pixel_footprint` is its twin; analytic rather than `dpdx`/`dpdy` so both compute the same.
#[must_use]
pub fn pixel_footprint(uniforms: &PreviewUniforms, uv: [f32; 2], hit_uv: [f32; 2]) -> f32 {
    if uniforms.lod_filter[1] < 0.5 || uniforms.lod_filter[0] <= 0.0 {
        return 0.0;
    }
    let shape = (uniforms.view[0] + 0.5) as u32;
    let step = 1.0 / uniforms.lod_filter[0];
    let origin = [0.0, 0.0, 3.0];
    let hx = intersect(origin, ray_dir(uniforms, [uv[0] + step / uniforms.view[1], uv[1]]), shape);
    let hy = intersect(origin, ray_dir(uniforms, [uv[0], uv[1] + step]), shape);
    let fx = hx.map_or(0.0, |h| uv_distance(hit_uv, h.uv));
    let fy = hy.map_or(0.0, |h| uv_distance(hit_uv, h.uv));
    fx.max(fy)
}

/// The level of detail a pixel of texture-space `footprint` asks of a map: log2 of the texels it
/// spans along the map's larger side (negative: magnified, which decodes level 0).
#[must_use]
pub fn map_lod(footprint: f32, entry: &texset_core::bundle::MapEntry) -> f32 {
    (footprint * entry.width.max(entry.height) as f32).max(1e-30).log2()
}

/// CPU reference of `shade` in preview.wgsl: the colour of the pixel at `uv` (0..1, y down).
/// `fetch(slot, uv, footprint)` returns the un-mapped value of the map in
/// `PreviewUniforms::maps` slot `slot` (basecolor 0, normal 1, roughness 2, metallic 3, ao 4,
/// orm 5, emissive 6), or `None` when the material has none; `footprint` is
/// [`pixel_footprint`] (0 unless the LOD filter is on), for [`map_lod`].
pub fn shade(uniforms: &PreviewUniforms, uv: [f32; 2], fetch: &dyn Fn(usize, [f32; 2], f32) -> Option<[f32; 4]>) -> [f32; 4] {
    let dir = ray_dir(uniforms, uv);
    let Some(hit) = intersect([0.0, 0.0, 3.0], dir, (uniforms.view[0] + 0.5) as u32) else {
        let g = 0.08 + 0.06 * (1.0 - uv[1]);
        return [g, g, g * 1.1, 1.0];
    };
    let footprint = pixel_footprint(uniforms, uv, hit.uv);
    let get = |slot: usize, fallback: [f32; 4]| {
        if uniforms.maps[slot] == NONE { fallback } else { fetch(slot, hit.uv, footprint).unwrap_or(fallback) }
    };
    let base = get(0, [0.5, 0.5, 0.5, 1.0]);
    let normal_ts = get(1, [0.0, 0.0, 1.0, 0.0]);
    let orm = get(5, [1.0, 0.5, 0.0, 0.0]);
    let roughness = get(2, [orm[1]; 4])[0];
    let metallic = get(3, [orm[2]; 4])[0];
    let ao = get(4, [orm[0]; 4])[0];
    let emissive = get(6, [0.0; 4]);
    let n_geo = hit.normal;
    let t = normalize(sub(hit.tangent, mul(n_geo, dot(n_geo, hit.tangent))));
    let b = cross(n_geo, t);
    let n = normalize(add(add(mul(t, normal_ts[0]), mul(b, normal_ts[1])), mul(n_geo, normal_ts[2].max(1e-3))));
    let v = mul(dir, -1.0);
    let albedo = [base[0], base[1], base[2]];
    let (roughness, metallic) = (roughness.clamp(0.0, 1.0), metallic.clamp(0.0, 1.0));
    let mut color = add(mul(albedo, 0.03 * ao), [emissive[0], emissive[1], emissive[2]]);
    let l0 = [uniforms.light0[0], uniforms.light0[1], uniforms.light0[2]];
    let l1 = [uniforms.light1[0], uniforms.light1[1], uniforms.light1[2]];
    color = add(color, light(n, v, l0, uniforms.light0[3], albedo, roughness, metallic));
    color = add(color, light(n, v, l1, uniforms.light1[3], albedo, roughness, metallic));
    let mut out = [0.0, 0.0, 0.0, 1.0];
    for c in 0..3 {
        let mapped = color[c] / (1.0 + color[c]);
        out[c] = if uniforms.view[3] > 0.5 { encode_srgb(mapped) } else { mapped };
    }
    out
}

/// One map as stored values in `[0, 1]`: width, height, channels, `[y][x][c]` values.
pub type StoredMap<'a> = (u32, u32, u32, &'a [f32]);

/// The preview's picture of material `material` computed on the CPU by [`shade`] from stored maps
/// given in manifest order (nearest texel, un-mapped for shading as `decode_texel_linear` does):
/// `shape` lit from orbit `angle`, `width` x `height` sRGB-encoded RGBA rows. `texset eval`
/// renders the original maps and the decoded ones this way and compares the pictures (the
/// rendered error).
#[must_use]
pub fn render_cpu(manifest: &Manifest, material: usize, maps: &[StoredMap], shape: Shape, angle: f32, width: u32, height: u32) -> Vec<f32> {
    let uniforms = PreviewUniforms::new(manifest, material, angle, 3.0, shape, width as f32 / height as f32).with_srgb_encoding(true);
    let entries = manifest.materials.get(material).map_or(&[][..], |m| m.maps.as_slice());
    let fetch = |slot: usize, uv: [f32; 2], _footprint: f32| -> Option<[f32; 4]> {
        let layer = *uniforms.layers.get(slot)? as usize;
        let (&(w, h, channels, values), entry) = (maps.get(layer)?, entries.get(layer)?);
        let x = ((uv[0].max(0.0) * w as f32) as u32).min(w.saturating_sub(1));
        let y = ((uv[1].max(0.0) * h as f32) as u32).min(h.saturating_sub(1));
        let base = (y as usize * w as usize + x as usize) * channels as usize;
        let mut t = [0.0; 4];
        for (c, v) in t.iter_mut().enumerate().take(channels as usize) {
            *v = values.get(base + c).copied().unwrap_or(0.0);
        }
        Some(texset_core::decode::unmap(entry, t))
    };
    let mut out = Vec::with_capacity(width as usize * height as usize * 4);
    for y in 0..height {
        for x in 0..width {
            let uv = [(x as f32 + 0.5) / width as f32, (y as f32 + 0.5) / height as f32];
            out.extend_from_slice(&shade(&uniforms, uv, &fetch));
        }
    }
    out
}
