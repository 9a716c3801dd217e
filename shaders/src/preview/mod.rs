//! The studio's PBR preview: `preview.wgsl` appended to the decoder specialised to a bundle, so the
//! material is decoded per pixel in the fragment shader; [`shade`] is its CPU reference.
//!
//! [`PreviewRenderer`] owns the one-pass pipeline (`fs_preview`) and buffers and draws into any
//! render pass whose colour target has its format ([`PreviewRenderer::render`] offscreen, for
//! `bench decode`, the tests and the CPU twin's parity). The studio draws the same image in three
//! passes through a G-buffer: the surface under each pixel (`surface.rs`: [`SurfacePass`], a
//! shape ray-cast or a glTF mesh rasterised), the material on it (`deferred.rs`:
//! [`MaterialRenderer`]) and its lighting ([`ShadePass`]). Two uniform slots let one frame show
//! the decoded material beside the original maps.

use crate::model::GpuModel;
use crate::{GpuError, block_on, check_device_limit, to_u32};
use texset_core::{
    bundle::{Bundle, Manifest},
    decode::unorm8,
    set::MapKind,
};

mod camera;
mod cpu;
mod deferred;
mod layout;
mod lighting;
mod surface;
mod timing;

pub use camera::{Camera, DEFAULT_DISTANCE, DEFAULT_FOV_Y_DEG, OrbitCamera, TURNTABLE_DEG_PER_S};
pub use cpu::{StoredMap, map_lod, pixel_footprint, render_cpu, shade, shade_environment, shade_probe};
pub use deferred::{
    GBuffer, MaterialRenderer, PreparedMaterial, ShadePass, encode_material, render_deferred, render_sides, render_sides_timed,
};
pub use layout::Layout;
use layout::side_by_side;
pub use lighting::{Background, DEFAULT_ERROR_FULL_SCALE, EnvironmentTextures, HEAT_RAMP, Lighting, ViewMode, heat};
pub use surface::{GpuMesh, MeshBounds, SurfacePass, mesh_bounds};
pub use timing::{PASSES, PassTimer, PassTimes};

/// The preview's material pass (appended to the specialised decoder, after [`PREVIEW_SCENE_WGSL`]).
pub const PREVIEW_WGSL: &str = include_str!("../preview.wgsl");

/// The preview's scene (shapes, camera, lights, shading), shared by its two programs.
pub const PREVIEW_SCENE_WGSL: &str = include_str!("../preview_scene.wgsl");

/// The preview's surface pass (after [`PREVIEW_SCENE_WGSL`]; no decoder).
pub const PREVIEW_SURFACE_WGSL: &str = include_str!("../preview_surface.wgsl");

/// The preview's shading pass (after [`PREVIEW_SCENE_WGSL`]; no decoder).
pub const PREVIEW_SHADE_WGSL: &str = include_str!("../preview_shade.wgsl");

/// Marks a map the material lacks.
pub const NONE: u32 = u32::MAX;

/// Bytes of [`PreviewUniforms`] as the WGSL `Preview` struct lays them out.
const UNIFORM_BYTES: u64 = 224;

/// The mesh pass's near plane where [`PreviewUniforms::with_surface`] sets none, world units.
pub const DEFAULT_NEAR_PLANE: f32 = 0.01;

/// The `Preview` uniform of `preview.wgsl` (same layout).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PreviewUniforms {
    /// Library map indices: basecolor, normal, roughness, metallic, ao, orm, emissive, height
    /// (which only a [`Probe`] reads).
    pub maps: [u32; 8],
    /// The same maps' layers in the originals texture.
    pub layers: [u32; 8],
    /// Direction towards light 0 (unit) and its intensity.
    pub light0: [f32; 4],
    /// Light 1.
    pub light1: [f32; 4],
    /// Shape (0 sphere, 1 plane, 2 cube), aspect, source (1 = originals), encode sRGB (1).
    pub view: [f32; 4],
    /// Viewport height in pixels, filter decoded maps by level of detail (1), the material's
    /// largest map side in texels (the mip view's level of detail), unused.
    pub lod_filter: [f32; 4],
    /// The camera (laid out as [`Camera::words`]: eye and tan(fov/2), right, up, forward).
    pub camera: Camera,
    /// The surface pass: the mesh pass's near plane (world units), the surface's height in pixels
    /// (0: the viewport's), unused, unused.
    pub surface: [f32; 4],
    /// What the material pass writes ([`Probe::words`]).
    pub probe: [u32; 4],
}

/// What the material pass writes for each pixel: the material (to light, or to show a channel
/// of), or one number about it that the shading pass shows in false colour
/// ([`ViewMode::Error`], [`ViewMode::Height`]). A probe reads each map at level 0, at the centre
/// of the texel under the pixel: the number is the texel's own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Probe {
    /// The material.
    #[default]
    Material,
    /// The mean over a map's channels of |shown − reference| in stored values, of the map of
    /// kind `map` (`None`: pooled over the material's maps). The reference is the original maps;
    /// a side that shows maps from its texture (the originals, or them block-compressed) finds
    /// them `reference_offset` layers on in it (0: the texture holds the originals alone).
    Error {
        /// The map (`None`: every map the material has, pooled).
        map: Option<MapKind>,
        /// Where the reference layers start in the side's texture.
        reference_offset: u32,
    },
    /// The height map's stored value.
    Height,
}

impl Probe {
    /// The `probe` words of `preview_scene.wgsl` for a material whose `maps` slots are these.
    fn words(self, maps: &[u32; 8]) -> [u32; 4] {
        // A map the material lacks: an index no map has (NONE would mean every map).
        let missing = NONE - 1;
        let slot = |kind: MapKind| SLOTS.iter().position(|&k| k == kind).map(|i| maps[i]).filter(|&m| m != NONE).unwrap_or(missing);
        match self {
            Self::Material => [0, NONE, 0, 0],
            Self::Error { map, reference_offset } => [1, map.map_or(NONE, slot), reference_offset, 0],
            Self::Height => [2, slot(MapKind::Height), 0, 0],
        }
    }
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

impl Shape {
    /// The radius of the sphere about the origin that holds the shape (what a camera frames).
    #[must_use]
    pub fn bounding_radius(self) -> f32 {
        match self {
            Self::Sphere => 1.0,
            // The plane's corners are at (±1, ±1, 0).
            Self::Plane => std::f32::consts::SQRT_2,
            // The cube's half-size is 0.75.
            Self::Cube => 0.75 * 3f32.sqrt(),
        }
    }
}

/// The kinds in `maps` order.
const SLOTS: [MapKind; 8] = [
    MapKind::Basecolor,
    MapKind::Normal,
    MapKind::Roughness,
    MapKind::Metallic,
    MapKind::Ao,
    MapKind::Orm,
    MapKind::Emissive,
    MapKind::Height,
];

impl PreviewUniforms {
    /// Uniforms for material `material` of `manifest`: lights at orbit angle `angle` (radians)
    /// with `intensity`, a `shape` in a viewport of `aspect` = width / height.
    #[must_use]
    pub fn new(manifest: &Manifest, material: usize, angle: f32, intensity: f32, shape: Shape, aspect: f32) -> Self {
        let first: usize = manifest.materials.iter().take(material).map(|m| m.maps.len()).sum();
        let mut maps = [NONE; 8];
        let mut layers = [NONE; 8];
        let mut largest_side = 1u32;
        if let Some(m) = manifest.materials.get(material) {
            largest_side = m.maps.iter().map(|e| e.info.width.max(e.info.height)).max().unwrap_or(1).max(1);
            for (slot, kind) in SLOTS.iter().enumerate() {
                if let Some(i) = m.maps.iter().position(|e| e.info.kind == *kind) {
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
            lod_filter: [0.0, 0.0, largest_side as f32, 0.0],
            camera: Camera::default(),
            surface: [DEFAULT_NEAR_PLANE, 0.0, 0.0, 0.0],
            probe: Probe::Material.words(&maps),
        }
    }

    /// Sets the mesh pass's `near_plane` (world units: a small fraction of what the camera frames)
    /// and the `height_px` of the surface it draws, so a mesh's texture footprint is that of a
    /// pixel [`Self::with_lod_filter`]'s height high, as the shapes' is, whatever scale the surface
    /// is drawn at.
    #[must_use]
    pub fn with_surface(mut self, near_plane: f32, height_px: u32) -> Self {
        let near = if near_plane.is_finite() && near_plane > 0.0 { near_plane } else { DEFAULT_NEAR_PLANE };
        self.surface = [near, height_px as f32, 0.0, 0.0];
        self
    }

    /// Looks through `camera` (the default: [`Camera::default`]).
    #[must_use]
    pub fn with_camera(mut self, camera: &Camera) -> Self {
        self.camera = *camera;
        self
    }

    /// Filters the decoded maps by level of detail for a viewport `height_px` pixels high: each
    /// pixel decodes at the LOD its footprint asks for ([`pixel_footprint`], [`map_lod`]),
    /// blending two mip levels, so a distant or zoomed-out surface does not shimmer. Only a
    /// bundle with a mip chain has levels to blend; without one every LOD decodes level 0.
    #[must_use]
    pub fn with_lod_filter(mut self, height_px: f32) -> Self {
        self.lod_filter = [height_px, 1.0, self.lod_filter[2], 0.0];
        self
    }

    /// Makes the material pass write `probe` instead of the material.
    #[must_use]
    pub fn with_probe(mut self, probe: Probe) -> Self {
        self.probe = probe.words(&self.maps);
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
        for v in self
            .light0
            .iter()
            .chain(&self.light1)
            .chain(&self.view)
            .chain(&self.lod_filter)
            .chain(self.camera.words().iter().flatten())
            .chain(&self.surface)
        {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in &self.probe {
            out.extend_from_slice(&v.to_le_bytes());
        }
        debug_assert_eq!(out.len() as u64, UNIFORM_BYTES);
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
                // Source column and row of each texel, worked out once (the studio uploads a
                // material's maps whenever a decode of a snapshot arrives).
                let columns: Vec<usize> = (0..u64::from(width)).map(|x| (x * u64::from(w) / u64::from(width)) as usize).collect();
                let (stride, c, w) = ((c as usize).max(1), c.min(4) as usize, w as usize);
                let mut texels = vec![[0u8; 4]; width as usize * height as usize];
                for (y, row) in texels.chunks_exact_mut(width as usize).enumerate() {
                    let sy = (y as u64 * u64::from(h) / u64::from(height)) as usize;
                    for (t, &sx) in row.iter_mut().zip(&columns) {
                        let at = (sy * w + sx) * stride;
                        if let Some(source) = values.get(at..at + c) {
                            for (value, &v) in t.iter_mut().zip(source) {
                                *value = unorm8(v);
                            }
                        }
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
/// training run share them); [`PreviewRenderer::set_prepared`] takes one made elsewhere. The
/// studio's two-pass preview has its own, [`PreparedMaterial`].
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
        let model = GpuModel::with_options(bundle, crate::model::GpuModelOptions::for_device(device))?;
        let wgsl = preview_wgsl(&model);
        Self::from_program(device, &model, wgsl, format, reuse)
    }

    /// Prepares `bundle` with `wgsl` as the preview program instead of the generated one (which
    /// [`preview_wgsl`] gives): for measuring what a driver's compile costs with parts of the
    /// shader changed (`examples/preview_compile.rs`). `wgsl` must keep the generated program's
    /// bindings and `fs_preview`.
    #[doc(hidden)]
    pub fn with_wgsl(device: &wgpu::Device, bundle: &Bundle, format: wgpu::TextureFormat, wgsl: String) -> Result<Self, GpuError> {
        let model = GpuModel::with_options(bundle, crate::model::GpuModelOptions::for_device(device))?;
        Self::from_program(device, &model, wgsl, format, None)
    }

    /// `model`'s data bound to the pipeline of `wgsl` (taken from `reuse` when it has the same
    /// source and format).
    fn from_program(
        device: &wgpu::Device,
        model: &GpuModel,
        wgsl: String,
        format: wgpu::TextureFormat,
        reuse: Option<&Self>,
    ) -> Result<Self, GpuError> {
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let pipeline = match reuse {
            Some(r) if r.wgsl == wgsl && r.format == format => r.pipeline.clone(),
            _ => create_pipeline(device, &wgsl, format),
        };
        let model_group = model_bind_group(device, &pipeline, model)?;
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
        let originals = empty_originals(device);
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
        self.originals = originals_view(device, queue, originals)?;
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
    side_by_side(encoder, "texset preview pass", &[target], size, Layout::beside(sides.len()), rows, (clear, None), |pass, side| {
        let (renderer, slot) = sides[side];
        renderer.draw(pass, slot);
    });
}

/// One stored colour attachment per view of `targets`, each loaded with `load`.
pub(super) fn color_attachments<'a>(
    targets: &[&'a wgpu::TextureView],
    load: wgpu::LoadOp<wgpu::Color>,
) -> Vec<Option<wgpu::RenderPassColorAttachment<'a>>> {
    targets
        .iter()
        .map(|&view| {
            Some(wgpu::RenderPassColorAttachment {
                view,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations { load, store: wgpu::StoreOp::Store },
            })
        })
        .collect()
}

/// A bind group per uniform slot, each binding its buffer at binding 0 of `layout` (a pass's
/// group of per-side uniforms).
pub(super) fn slot_groups(
    device: &wgpu::Device,
    label: &str,
    layout: &wgpu::BindGroupLayout,
    uniforms: &[wgpu::Buffer; 2],
) -> Vec<wgpu::BindGroup> {
    uniforms
        .iter()
        .map(|buffer| {
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(label),
                layout,
                entries: &[wgpu::BindGroupEntry { binding: 0, resource: buffer.as_entire_binding() }],
            })
        })
        .collect()
}

/// Reads an `Rgba8Unorm` texture of `size` (made with `COPY_SRC`) back as tightly packed RGBA8
/// rows, blocking until the GPU is done with it (for a preview drawn on a device of its own).
pub fn read_rgba8(device: &wgpu::Device, queue: &wgpu::Queue, texture: &wgpu::Texture, size: [u32; 2]) -> Result<Vec<u8>, GpuError> {
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("texset preview read-back") });
    crate::read_texture(device, queue, encoder, texture, size, 4, scope)
}

/// The specialised decoder with the preview's scene and material pass appended.
#[must_use]
pub fn preview_wgsl(model: &GpuModel) -> String {
    format!("{}\n{PREVIEW_SCENE_WGSL}\n{PREVIEW_WGSL}", model.wgsl())
}

/// `originals` uploaded as a texture array, a layer per map.
pub(super) fn originals_view(device: &wgpu::Device, queue: &wgpu::Queue, originals: &Originals) -> Result<wgpu::TextureView, GpuError> {
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
        queue.write_texture(
            wgpu::TexelCopyTextureInfo {
                texture: &texture,
                mip_level: 0,
                origin: wgpu::Origin3d { x: 0, y: 0, z: to_u32("layer", layer)? },
                aspect: wgpu::TextureAspect::All,
            },
            texels.as_flattened(),
            wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(originals.width * 4), rows_per_image: Some(originals.height) },
            wgpu::Extent3d { width: originals.width, height: originals.height, depth_or_array_layers: 1 },
        );
    }
    Ok(texture.create_view(&wgpu::TextureViewDescriptor { dimension: Some(wgpu::TextureViewDimension::D2Array), ..Default::default() }))
}

fn create_pipeline(device: &wgpu::Device, wgsl: &str, format: wgpu::TextureFormat) -> wgpu::RenderPipeline {
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("texset preview.wgsl"),
        source: wgpu::ShaderSource::Wgsl(wgsl.into()),
    });
    crate::fullscreen_pipeline(device, &module, "texset preview pipeline", "fs_preview", format)
}

pub(super) fn model_bind_group(
    device: &wgpu::Device,
    pipeline: &wgpu::RenderPipeline,
    model: &GpuModel,
) -> Result<wgpu::BindGroup, GpuError> {
    Ok(crate::ModelBuffers::upload(device, model)?.bind_group(device, &pipeline.get_bind_group_layout(0), &[]))
}

pub(super) fn uniform(device: &wgpu::Device) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("texset preview uniforms"),
        size: UNIFORM_BYTES,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

/// The originals array a preview binds before any original maps are uploaded: one 1×1 layer.
#[doc(hidden)]
#[must_use]
pub fn empty_originals(device: &wgpu::Device) -> wgpu::TextureView {
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

pub(super) fn side_groups(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn originals_resample_each_map_to_the_largest_nearest_and_keep_four_channels() {
        // A 2×1 map of two channels and a 1×1 map of five (the fifth is not stored).
        let two = [0.0, 1.0, 0.5, 0.25];
        let five = [0.2, 0.4, 0.6, 0.8, 1.0];
        let o = Originals::from_maps(&[(2, 1, 2, &two), (1, 1, 5, &five)]);
        assert_eq!((o.width, o.height), (2, 1));
        assert_eq!(o.layers[0], vec![[0, 255, 0, 0], [128, 64, 0, 0]]);
        assert_eq!(o.layers[1], vec![[51, 102, 153, 204]; 2]);
        // Too few values for the size it claims: the texels it lacks stay zero, no panic.
        let short = Originals::from_maps(&[(2, 2, 1, &[1.0])]);
        assert_eq!(short.layers[0], vec![[255, 0, 0, 0], [0; 4], [0; 4], [0; 4]]);
    }
}
