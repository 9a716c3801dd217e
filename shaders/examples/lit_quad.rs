//! Loads a `.texset` bundle and renders one lit quad with wgpu, decoding the material per pixel in
//! the fragment shader: what an engine does with texset's runtime side (no burn, no egui, no
//! training code; `texset-core` without default features plus `texset-shaders`).
//!
//! ```text
//! cargo run --release -p texset-shaders --example lit_quad -- BUNDLE OUT.png [--material N] [--size PX] [--cpu]
//! ```
//!
//! The engine's part is small:
//! 1. `Bundle::read`, then `GpuModel::new` lays the bundle out for the GPU and `ModelBuffers::upload`
//!    puts its latents and weights in two storage buffers.
//! 2. The engine's own shader (`lit_quad.wgsl`) is appended to `GpuModel::wgsl()`, the decoder
//!    specialised to the bundle, and calls `decode_texel_linear(map, uv)` where it would sample a
//!    texture. Group 0 is the decoder's buffers, the rest is the engine's.
//! 3. It draws. Here: offscreen into a float target, read back and written as a PNG.
//!
//! `--cpu` renders the same picture with the CPU reference decoder (`Decoder::decode_texel_linear`)
//! and the same shading in Rust ([`shade`]); the screenshot test
//! (`shaders/tests/integration/lit_quad.rs`) compares the two.

use std::error::Error;
use std::path::PathBuf;
use texset_core::{bundle::Bundle, decode::Decoder, set::MapKind};
use texset_shaders::{GpuError, GpuModel, ModelBuffers};

/// The engine's shader, appended to the decoder.
const LIT_QUAD_WGSL: &str = include_str!("lit_quad.wgsl");
/// `NO_MAP` in the WGSL.
const NO_MAP: u32 = u32::MAX;
/// What the clear (and the CPU twin) writes where the quad is not.
const BACKGROUND: [f32; 4] = [0.1, 0.1, 0.12, 1.0];

/// The camera, the light and which maps of the material feed the shading.
#[derive(Clone, Debug)]
pub(crate) struct Scene {
    eye: [f32; 3],
    /// Camera basis: right, up and forward (unit vectors).
    basis: [[f32; 3]; 3],
    tan_half_fov: f32,
    aspect: f32,
    /// Position and intensity.
    light: [f32; 4],
    /// Map indices *within the material* of basecolor, normal, roughness (or ORM), metallic.
    maps: [Option<usize>; 4],
    orm: bool,
    material: usize,
}

impl Scene {
    /// A camera above and in front of the quad, looking at its centre; a point light to the right.
    pub(crate) fn new(bundle: &Bundle, material: usize, aspect: f32) -> Result<Self, Box<dyn Error>> {
        let mat =
            bundle.manifest.materials.get(material).ok_or_else(|| {
                format!("the bundle has {} material(s); there is no material {material}", bundle.manifest.materials.len())
            })?;
        let find = |kind: MapKind| mat.maps.iter().position(|m| m.info.kind == kind);
        let roughness = find(MapKind::Roughness);
        let orm = if roughness.is_none() { find(MapKind::Orm) } else { None };
        let maps = [
            find(MapKind::Basecolor),
            find(MapKind::Normal),
            roughness.or(orm),
            if orm.is_some() { None } else { find(MapKind::Metallic) },
        ];
        let eye = [0.0, -2.3, 1.9];
        let forward = normalize(scale(eye, -1.0));
        let right = normalize(cross(forward, [0.0, 0.0, 1.0]));
        let up = cross(right, forward);
        Ok(Self {
            eye,
            basis: [right, up, forward],
            tan_half_fov: (40f32.to_radians() * 0.5).tan(),
            aspect,
            light: [1.1, -0.7, 1.3, 5.0],
            maps,
            orm: orm.is_some(),
            material,
        })
    }

    /// Column-major view-projection (right-handed view, wgpu's 0..1 depth).
    fn view_proj(&self) -> [f32; 16] {
        let [right, up, forward] = self.basis;
        let (near, far) = (0.1f32, 10.0f32);
        let f = 1.0 / self.tan_half_fov;
        // Rows of the view matrix (world -> camera, camera looks down -z).
        let view = [
            [right[0], right[1], right[2], -dot(right, self.eye)],
            [up[0], up[1], up[2], -dot(up, self.eye)],
            [-forward[0], -forward[1], -forward[2], dot(forward, self.eye)],
            [0.0, 0.0, 0.0, 1.0],
        ];
        let proj = [
            [f / self.aspect, 0.0, 0.0, 0.0],
            [0.0, f, 0.0, 0.0],
            [0.0, 0.0, far / (near - far), near * far / (near - far)],
            [0.0, 0.0, -1.0, 0.0],
        ];
        let mut out = [0.0; 16];
        for col in 0..4 {
            for row in 0..4 {
                out[col * 4 + row] = (0..4).map(|k| proj[row][k] * view[k][col]).sum();
            }
        }
        out
    }

    /// The `Scene` uniform of the WGSL (128 bytes), with library-wide map indices.
    fn uniform_bytes(&self, first_map: u32) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(128);
        let floats = self.view_proj().into_iter().chain([self.eye[0], self.eye[1], self.eye[2], 1.0]).chain(self.light);
        for v in floats {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        let maps = self.maps.map(|m| m.map_or(NO_MAP, |k| first_map + k as u32));
        for v in maps.into_iter().chain([u32::from(self.orm), 0, 0, 0]) {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        bytes
    }
}

/// Renders `size` x `size` on the GPU; `None` when there is no adapter, or only one that cannot
/// render to the float target (a GL adapter such as llvmpipe).
pub(crate) fn render_gpu(bundle: &Bundle, material: usize, size: u32) -> Result<Option<Vec<f32>>, Box<dyn Error>> {
    let Some((adapter, device, queue)) = texset_shaders::request_device()? else {
        return Ok(None);
    };
    if !texset_shaders::renders_fragment_format(&adapter) {
        eprintln!("{} cannot render to {:?}", adapter.get_info().name, texset_shaders::FRAGMENT_FORMAT);
        return Ok(None);
    }
    eprintln!("rendering on {} ({:?})", adapter.get_info().name, adapter.get_info().backend);
    let scene = Scene::new(bundle, material, 1.0)?;
    let model = GpuModel::new(bundle)?;
    let first_map = model.first_map.get(material).copied().unwrap_or(0);

    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let buffers = ModelBuffers::upload(&device, &model)?;
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("lit_quad.wgsl + the bundle's decoder"),
        source: wgpu::ShaderSource::Wgsl(format!("{}\n{LIT_QUAD_WGSL}", model.wgsl()).into()),
    });
    let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some("lit quad"),
        layout: None,
        vertex: wgpu::VertexState {
            module: &module,
            entry_point: Some("vs_quad"),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            buffers: &[],
        },
        primitive: wgpu::PrimitiveState { topology: wgpu::PrimitiveTopology::TriangleStrip, ..wgpu::PrimitiveState::default() },
        depth_stencil: None,
        multisample: wgpu::MultisampleState::default(),
        fragment: Some(wgpu::FragmentState {
            module: &module,
            entry_point: Some("fs_lit"),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            targets: &[Some(wgpu::ColorTargetState {
                format: texset_shaders::FRAGMENT_FORMAT,
                blend: None,
                write_mask: wgpu::ColorWrites::ALL,
            })],
        }),
        multiview_mask: None,
        cache: None,
    });
    let scene_buffer = wgpu::util::DeviceExt::create_buffer_init(
        &device,
        &wgpu::util::BufferInitDescriptor {
            label: Some("lit quad scene"),
            contents: &scene.uniform_bytes(first_map),
            usage: wgpu::BufferUsages::UNIFORM,
        },
    );
    let model_group = buffers.bind_group(&device, &pipeline.get_bind_group_layout(0), &[]);
    let scene_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("lit quad scene"),
        layout: &pipeline.get_bind_group_layout(1),
        entries: &[wgpu::BindGroupEntry { binding: 0, resource: scene_buffer.as_entire_binding() }],
    });
    let [r, g, b, a] = BACKGROUND.map(f64::from);
    let pixels = texset_shaders::render_rgba32f(&device, &queue, "lit quad", size, size, scope, |encoder, view| {
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("lit quad"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations { load: wgpu::LoadOp::Clear(wgpu::Color { r, g, b, a }), store: wgpu::StoreOp::Store },
            })],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &model_group, &[]);
        pass.set_bind_group(1, &scene_group, &[]);
        pass.draw(0..4, 0..1);
    })?;
    Ok(Some(pixels))
}

/// The same picture on the CPU: a ray per pixel centre, its hit on the quad's plane, the CPU
/// reference decoder and [`shade`].
pub(crate) fn render_cpu(bundle: &Bundle, material: usize, size: u32) -> Result<Vec<f32>, Box<dyn Error>> {
    let scene = Scene::new(bundle, material, 1.0)?;
    let decoder = Decoder::new(bundle);
    let [right, up, forward] = scene.basis;
    let mut out = Vec::with_capacity(size as usize * size as usize * 4);
    for py in 0..size {
        for px in 0..size {
            let ndc_x = 2.0 * (px as f32 + 0.5) / size as f32 - 1.0;
            let ndc_y = 1.0 - 2.0 * (py as f32 + 0.5) / size as f32;
            let (x, y) = (ndc_x * scene.tan_half_fov * scene.aspect, ndc_y * scene.tan_half_fov);
            let dir = add(add(scale(right, x), scale(up, y)), forward);
            let t = -scene.eye[2] / dir[2];
            let hit = add(scene.eye, scale(dir, t));
            if t > 0.0 && hit[0].abs() <= 1.0 && hit[1].abs() <= 1.0 {
                let uv = [(hit[0] + 1.0) * 0.5, (1.0 - hit[1]) * 0.5];
                let fetch = |slot: usize, fallback: [f32; 4]| -> Result<[f32; 4], texset_core::decode::DecodeError> {
                    match scene.maps[slot] {
                        Some(k) => decoder.decode_texel_linear(scene.material, k, uv[0], uv[1]),
                        None => Ok(fallback),
                    }
                };
                let (base, normal) = (fetch(0, [0.5, 0.5, 0.5, 1.0])?, fetch(1, [0.0, 0.0, 1.0, 0.0])?);
                let (rough, metal) = if scene.orm {
                    let orm = fetch(2, [1.0, 0.5, 0.0, 0.0])?;
                    (orm[1], orm[2])
                } else {
                    (fetch(2, [0.5; 4])?[0], fetch(3, [0.0; 4])?[0])
                };
                let c = shade(&scene, hit, [base[0], base[1], base[2]], [normal[0], normal[1], normal[2]], rough, metal);
                out.extend_from_slice(&[c[0], c[1], c[2], 1.0]);
            } else {
                out.extend_from_slice(&BACKGROUND);
            }
        }
    }
    Ok(out)
}

/// `fs_lit` of `lit_quad.wgsl`: GGX specular with Schlick's Fresnel and Smith-Schlick visibility,
/// Lambert diffuse, a point light and a little ambient; Reinhard, then sRGB encoding.
#[must_use]
pub(crate) fn shade(scene: &Scene, world: [f32; 3], base: [f32; 3], normal: [f32; 3], rough: f32, metal: f32) -> [f32; 3] {
    let n = normalize(normal);
    let to_light = sub([scene.light[0], scene.light[1], scene.light[2]], world);
    let l = normalize(to_light);
    let v = normalize(sub(scene.eye, world));
    let h = normalize(add(l, v));
    let ndl = dot(n, l).max(0.0);
    let ndv = dot(n, v).max(1e-4);
    let ndh = dot(n, h).max(0.0);
    let a = (rough * rough).max(0.002);
    let a2 = a * a;
    let denom = ndh * ndh * (a2 - 1.0) + 1.0;
    let d = a2 / (std::f32::consts::PI * denom * denom);
    let fresnel = (1.0 - dot(h, v).max(0.0)).powf(5.0);
    let k = a * 0.5;
    let vis = 1.0 / ((ndl * (1.0 - k) + k) * (ndv * (1.0 - k) + k) * 4.0);
    let radiance = scene.light[3] / dot(to_light, to_light);
    std::array::from_fn(|c| {
        let f0 = 0.04 + (base[c] - 0.04) * metal;
        let f = f0 + (1.0 - f0) * fresnel;
        let diffuse = base[c] * (1.0 - metal) / std::f32::consts::PI;
        encode((diffuse + d * vis * f) * radiance * ndl + 0.03 * base[c])
    })
}

fn encode(c: f32) -> f32 {
    let x = c / (1.0 + c);
    if x <= 0.003_130_8 { 12.92 * x } else { 1.055 * x.powf(1.0 / 2.4) - 0.055 }
}

fn add(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}
fn sub(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
fn scale(a: [f32; 3], s: f32) -> [f32; 3] {
    [a[0] * s, a[1] * s, a[2] * s]
}
fn dot(a: [f32; 3], b: [f32; 3]) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
fn cross(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}
fn normalize(a: [f32; 3]) -> [f32; 3] {
    let len = dot(a, a).sqrt();
    if len > 0.0 { scale(a, 1.0 / len) } else { a }
}

/// RGBA float rows (already encoded) as an 8-bit PNG.
pub(crate) fn to_png(pixels: &[f32], size: u32) -> Result<Vec<u8>, Box<dyn Error>> {
    let bytes: Vec<u8> = pixels.iter().map(|v| (v.clamp(0.0, 1.0) * 255.0).round() as u8).collect();
    let image = image::RgbaImage::from_raw(size, size, bytes).ok_or("the render has the wrong number of pixels")?;
    let mut png = std::io::Cursor::new(Vec::new());
    image.write_to(&mut png, image::ImageFormat::Png)?;
    Ok(png.into_inner())
}

struct Args {
    bundle: PathBuf,
    output: PathBuf,
    material: usize,
    size: u32,
    cpu: bool,
}

fn parse_args() -> Result<Args, Box<dyn Error>> {
    const USAGE: &str = "usage: lit_quad BUNDLE OUT.png [--material N] [--size PX] [--cpu]";
    let mut positional = Vec::new();
    let (mut material, mut size, mut cpu) = (0usize, 512u32, false);
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--material") => material = args.next().and_then(|v| v.to_str()?.parse().ok()).ok_or("--material needs a number")?,
            Some("--size") => {
                size = args
                    .next()
                    .and_then(|v| v.to_str()?.parse().ok())
                    .filter(|&s| (1..=8192).contains(&s))
                    .ok_or("--size needs 1..=8192")?;
            }
            Some("--cpu") => cpu = true,
            Some("-h" | "--help") => return Err(USAGE.into()),
            _ => positional.push(PathBuf::from(arg)),
        }
    }
    let [bundle, output] = <[PathBuf; 2]>::try_from(positional).map_err(|_| USAGE)?;
    Ok(Args { bundle, output, material, size, cpu })
}

fn run() -> Result<(), Box<dyn Error>> {
    let args = parse_args()?;
    let bundle = Bundle::read(&args.bundle).map_err(|e| format!("cannot read bundle {}: {e}", args.bundle.display()))?;
    let pixels = if args.cpu {
        render_cpu(&bundle, args.material, args.size)?
    } else {
        render_gpu(&bundle, args.material, args.size)?.ok_or_else(|| {
            GpuError::Wgpu(
                "no GPU adapter that renders to Rgba32Float (install a Vulkan driver, e.g. mesa-vulkan-drivers for lavapipe, or pass --cpu)"
                    .into(),
            )
        })?
    };
    std::fs::write(&args.output, to_png(&pixels, args.size)?).map_err(|e| format!("cannot write {}: {e}", args.output.display()))?;
    eprintln!("wrote {} ({}x{}, {})", args.output.display(), args.size, args.size, if args.cpu { "CPU reference" } else { "GPU" });
    Ok(())
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lit_quad: error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
