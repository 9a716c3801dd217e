//! The preview's surface pass (`preview_surface.wgsl`): what surface lies under each pixel, in
//! the [`GBuffer`]'s surface targets, for the material pass to decode and the shading pass to
//! light. A preview shape is ray-cast there (the hit the one-pass `fs_preview` computes); a glTF
//! asset's meshes ([`GpuMesh`]) are rasterised with depth, each primitive of the material shown
//! decoded and the others drawn in clay. No decoder is reached: one pipeline pair per device.

use super::{GBuffer, Layout, PreviewUniforms, color_attachments, side_by_side, slot_groups, uniform};
use crate::{GpuError, buffer_init, check_device_limit, to_u32};
use texset_core::set::{GltfMesh, UvTransform};

/// The surface targets' texel format (three of them: `SurfaceOut` in `preview_scene.wgsl`): the
/// fragment decoder's, so [`crate::renders_fragment_format`] says whether an adapter can.
pub(super) const SURFACE_FORMAT: wgpu::TextureFormat = crate::FRAGMENT_FORMAT;
const SURFACE_FORMATS: [wgpu::TextureFormat; 3] = [SURFACE_FORMAT; 3];

/// The mesh pass's depth format (reversed: 1 at the near plane, cleared to 0, nearer is greater).
pub(super) const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

/// `f32`s of one vertex: position (3), normal (3), tangent with the bitangent sign (4), uv (2),
/// as `MeshIn` in `preview_surface.wgsl` reads them.
const VERTEX_FLOATS: usize = 12;

/// The vertex buffers' layouts: the interleaved vertex, then the `shown` flag on a buffer of
/// its own (rewritten when the material shown changes).
const VERTEX_ATTRIBUTES: [wgpu::VertexAttribute; 4] =
    wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3, 2 => Float32x4, 3 => Float32x2];
const SHOWN_ATTRIBUTES: [wgpu::VertexAttribute; 1] = wgpu::vertex_attr_array![4 => Float32];

/// A sphere that holds every vertex of some meshes: what the camera frames.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeshBounds {
    /// The centre of their axis-aligned box.
    pub center: [f32; 3],
    /// The largest distance of a vertex from it.
    pub radius: f32,
}

/// The bounds of `meshes`' vertices (`None`: no finite vertex).
#[must_use]
pub fn mesh_bounds(meshes: &[GltfMesh]) -> Option<MeshBounds> {
    let finite = || meshes.iter().flat_map(|m| m.positions.iter()).filter(|p| p.iter().all(|c| c.is_finite()));
    let (mut low, mut high) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
    for p in finite() {
        for k in 0..3 {
            low[k] = low[k].min(p[k]);
            high[k] = high[k].max(p[k]);
        }
    }
    if low[0] > high[0] {
        return None;
    }
    let center: [f32; 3] = std::array::from_fn(|k| 0.5 * (low[k] + high[k]));
    let radius = finite().map(|p| (0..3).map(|k| (p[k] - center[k]).powi(2)).sum::<f32>().sqrt()).fold(0.0, f32::max);
    Some(MeshBounds { center, radius })
}

/// A library's glTF meshes on one device: their vertices (UVs transformed as their material's
/// `KHR_texture_transform` says), indices, and per vertex whether its mesh shows the material
/// on screen ([`GpuMesh::show`]).
pub struct GpuMesh {
    vertices: wgpu::Buffer,
    shown: wgpu::Buffer,
    indices: wgpu::Buffer,
    index_count: u32,
    /// Each mesh's vertices in the buffers.
    ranges: Vec<std::ops::Range<u32>>,
    bounds: Option<MeshBounds>,
}

impl GpuMesh {
    /// Uploads `meshes`, their UVs transformed by `uv_transforms[mesh.material]` (identity where
    /// the slice has none). Fails, naming the mesh, where a mesh's arrays disagree in length or
    /// an index reaches past its vertices, and where the device cannot hold the buffers.
    pub fn new(device: &wgpu::Device, meshes: &[GltfMesh], uv_transforms: &[UvTransform]) -> Result<Self, GpuError> {
        let vertex_count: usize = meshes.iter().map(|m| m.positions.len()).sum();
        let index_count: usize = meshes.iter().map(|m| m.indices.len()).sum();
        let vertex_bytes = (vertex_count * VERTEX_FLOATS * 4) as u64;
        check_device_limit("the preview meshes' vertex bytes", vertex_bytes, device.limits().max_buffer_size)?;
        check_device_limit("the preview meshes' index bytes", index_count as u64 * 4, device.limits().max_buffer_size)?;
        let mut vertices = Vec::with_capacity(vertex_count * VERTEX_FLOATS);
        let mut indices = Vec::with_capacity(index_count);
        let mut ranges = Vec::with_capacity(meshes.len());
        for mesh in meshes {
            let n = mesh.positions.len();
            if mesh.normals.len() != n || mesh.tangents.len() != n || mesh.uvs.len() != n || mesh.indices.len() % 3 != 0 {
                return Err(GpuError::Wgpu(format!("mesh {:?}: its vertex arrays or triangle list disagree in length", mesh.name)));
            }
            if let Some(bad) = mesh.indices.iter().find(|&&i| i as usize >= n) {
                return Err(GpuError::Wgpu(format!("mesh {:?}: index {bad} reaches past its {n} vertices", mesh.name)));
            }
            let first = to_u32("preview mesh vertices", vertices.len() / VERTEX_FLOATS)?;
            let transform = uv_transforms.get(mesh.material).copied().unwrap_or_default();
            for v in 0..n {
                let uv = transform.apply(mesh.uvs[v]);
                vertices.extend_from_slice(&mesh.positions[v]);
                vertices.extend_from_slice(&mesh.normals[v]);
                vertices.extend_from_slice(&mesh.tangents[v]);
                vertices.extend_from_slice(&uv);
            }
            indices.extend(mesh.indices.iter().map(|&i| first + i));
            ranges.push(first..first + to_u32("preview mesh vertices", n)?);
        }
        // No mesh makes empty buffers, which a device may refuse: one zero vertex's bytes then.
        let bytes = |values: &[f32]| {
            let mut out: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            out.resize(out.len().max(VERTEX_FLOATS * 4), 0);
            out
        };
        let mut index_bytes: Vec<u8> = indices.iter().flat_map(|i| i.to_le_bytes()).collect();
        index_bytes.resize(index_bytes.len().max(4), 0);
        Ok(Self {
            vertices: buffer_init(device, "texset preview mesh vertices", &bytes(&vertices), wgpu::BufferUsages::VERTEX),
            shown: buffer_init(
                device,
                "texset preview mesh shown",
                &bytes(&vec![1.0; vertex_count.max(1)]),
                wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::COPY_DST,
            ),
            indices: buffer_init(device, "texset preview mesh indices", &index_bytes, wgpu::BufferUsages::INDEX),
            index_count: to_u32("preview mesh indices", indices.len())?,
            ranges,
            bounds: mesh_bounds(meshes),
        })
    }

    /// Marks which meshes show the material on screen (`shown[i]` for mesh `i`; a mesh past the
    /// slice's end shows it): the others are drawn in clay.
    pub fn show(&self, queue: &wgpu::Queue, shown: &[bool]) {
        let mut flags = Vec::with_capacity(self.ranges.last().map_or(0, |r| r.end as usize) * 4);
        for (i, range) in self.ranges.iter().enumerate() {
            let flag: f32 = if shown.get(i).copied().unwrap_or(true) { 1.0 } else { 0.0 };
            for _ in range.clone() {
                flags.extend_from_slice(&flag.to_le_bytes());
            }
        }
        if !flags.is_empty() {
            queue.write_buffer(&self.shown, 0, &flags);
        }
    }

    /// What the camera frames (`None`: no finite vertex).
    #[must_use]
    pub fn bounds(&self) -> Option<MeshBounds> {
        self.bounds
    }
}

/// The surface pass for one device: the shapes' ray cast and the meshes' raster pipelines (the
/// same for every bundle) and two uniform slots (the camera and shape of each side).
pub struct SurfacePass {
    shape: wgpu::RenderPipeline,
    mesh: wgpu::RenderPipeline,
    uniforms: [wgpu::Buffer; 2],
    /// Group 0 of each pipeline (`[shape, mesh]`), which bind nothing there.
    empty_groups: [wgpu::BindGroup; 2],
}

impl SurfacePass {
    /// Compiles the surface pass (no decoder: quick on any driver).
    #[must_use]
    pub fn new(device: &wgpu::Device) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("texset preview_surface.wgsl"),
            source: wgpu::ShaderSource::Wgsl(format!("{}\n{}", super::PREVIEW_SCENE_WGSL, super::PREVIEW_SURFACE_WGSL).into()),
        });
        let shape = crate::triangle_pipeline(
            device,
            &module,
            "texset preview surface pass (shapes)",
            ["vs_surface_shape", "fs_surface_shape"],
            &SURFACE_FORMATS,
        );
        let targets: Vec<Option<wgpu::ColorTargetState>> = SURFACE_FORMATS
            .iter()
            .map(|&format| Some(wgpu::ColorTargetState { format, blend: None, write_mask: wgpu::ColorWrites::ALL }))
            .collect();
        let mesh = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("texset preview surface pass (meshes)"),
            layout: None,
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("vs_mesh"),
                compilation_options: wgpu::PipelineCompilationOptions::default(),
                buffers: &[
                    Some(wgpu::VertexBufferLayout {
                        array_stride: (VERTEX_FLOATS * 4) as u64,
                        step_mode: wgpu::VertexStepMode::Vertex,
                        attributes: &VERTEX_ATTRIBUTES,
                    }),
                    Some(wgpu::VertexBufferLayout {
                        array_stride: 4,
                        step_mode: wgpu::VertexStepMode::Vertex,
                        attributes: &SHOWN_ATTRIBUTES,
                    }),
                ],
            },
            // Both faces: a double-sided surface shows its back, and a closed single-sided one
            // hides its back faces behind its front ones.
            primitive: wgpu::PrimitiveState { cull_mode: None, ..wgpu::PrimitiveState::default() },
            depth_stencil: Some(wgpu::DepthStencilState {
                format: DEPTH_FORMAT,
                depth_write_enabled: Some(true),
                depth_compare: Some(wgpu::CompareFunction::Greater),
                stencil: wgpu::StencilState::default(),
                bias: wgpu::DepthBiasState::default(),
            }),
            multisample: wgpu::MultisampleState::default(),
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some("fs_surface_mesh"),
                compilation_options: wgpu::PipelineCompilationOptions::default(),
                targets: &targets,
            }),
            multiview_mask: None,
            cache: None,
        });
        let empty = |pipeline: &wgpu::RenderPipeline| {
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("texset preview surface (nothing in group 0)"),
                layout: &pipeline.get_bind_group_layout(0),
                entries: &[],
            })
        };
        let empty_groups = [empty(&shape), empty(&mesh)];
        Self { shape, mesh, uniforms: [uniform(device), uniform(device)], empty_groups }
    }

    /// Sets the uniforms of slot `side` (0 or 1): the camera, shape and surface settings.
    pub fn write_uniforms(&self, queue: &wgpu::Queue, side: usize, uniforms: &PreviewUniforms) {
        queue.write_buffer(&self.uniforms[side.min(1)], 0, &uniforms.bytes());
    }

    /// Records the surface pass into `gbuffer`: the sides of `layout` (1 or 2), each with its
    /// uniform slot, of `mesh` where given (rasterised), else of each slot's shape (ray-cast);
    /// with the pass's `timestamps` where given.
    pub fn encode(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        gbuffer: &GBuffer,
        (layout, mesh): (Layout, Option<&GpuMesh>),
        timestamps: Option<wgpu::RenderPassTimestampWrites<'_>>,
    ) {
        let pipeline = if mesh.is_some() { &self.mesh } else { &self.shape };
        let slots = slot_groups(device, "texset preview surface side", &pipeline.get_bind_group_layout(1), &self.uniforms);
        let targets: Vec<&wgpu::TextureView> = gbuffer.surface.iter().collect();
        let Some(mesh) = mesh else {
            side_by_side(
                encoder,
                "texset preview surface pass",
                &targets,
                gbuffer.size(),
                layout,
                0..gbuffer.size()[1],
                (true, timestamps),
                |pass, side| {
                    pass.set_pipeline(&self.shape);
                    pass.set_bind_group(0, &self.empty_groups[0], &[]);
                    pass.set_bind_group(1, &slots[side], &[]);
                    pass.draw(0..3, 0..1);
                },
            );
            return;
        };
        let attachments = color_attachments(&targets, wgpu::LoadOp::Clear(wgpu::Color::TRANSPARENT));
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("texset preview surface pass (meshes)"),
            color_attachments: &attachments,
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: &gbuffer.depth,
                depth_ops: Some(wgpu::Operations { load: wgpu::LoadOp::Clear(0.0), store: wgpu::StoreOp::Discard }),
                stencil_ops: None,
            }),
            timestamp_writes: timestamps,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        let [width, height] = gbuffer.size();
        if mesh.index_count == 0 || width == 0 || height == 0 {
            return;
        }
        pass.set_pipeline(&self.mesh);
        pass.set_bind_group(0, &self.empty_groups[1], &[]);
        pass.set_vertex_buffer(0, mesh.vertices.slice(..));
        pass.set_vertex_buffer(1, mesh.shown.slice(..));
        pass.set_index_buffer(mesh.indices.slice(..), wgpu::IndexFormat::Uint32);
        for (([left, side_width], columns), slot) in layout.columns(width).into_iter().zip(&slots) {
            if columns.is_empty() {
                continue;
            }
            pass.set_scissor_rect(columns.start, 0, columns.end - columns.start, height);
            pass.set_viewport(left, 0.0, side_width, height as f32, 0.0, 1.0);
            pass.set_bind_group(1, slot, &[]);
            pass.draw_indexed(0..mesh.index_count, 0, 0..1);
        }
    }
}
