//! The studio's viewport, headless: a material of a library (a glTF asset's meshes, or a preview
//! shape) drawn through the same three passes (`texset_shaders::preview`: surface, material,
//! shading), lit by an environment, into an image: one side, or two compared through one camera
//! as a wipe (the original maps, the bundle decoded in the shader, the maps block-compressed as
//! engines ship them). `texset render` writes it as a PNG, for review sheets, bug reports and
//! golden-image tests.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use texset_core::eval::{bcn::round_trip, flip_map};
use texset_core::export::bcn::BcFormat;
use texset_core::{analyse, bundle::Bundle, decode::unorm8, options::CompressOptions, set::MapKind, snapshot_bundle};
use texset_shaders::environment::{Environment, PrepareOptions, prepare};
use texset_shaders::preview::{
    GpuMesh, Layout, Lighting, MaterialRenderer, OrbitCamera, Originals, PassTimer, PassTimes, PreparedMaterial, PreviewUniforms, Probe,
    ShadePass, Shape, SurfacePass, render_sides, render_sides_timed,
};

/// The largest side `texset render` draws, pixels.
pub const MAX_SIDE_PX: u32 = 8192;

/// The most frames a turntable draws.
pub const MAX_FRAMES: u32 = 720;

/// The most times `--gpu-time` draws a frame again to time it.
pub const MAX_TIMED_REPEATS: u32 = 1000;

/// What a side of the image shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RenderSide {
    /// The original maps.
    Original,
    /// The bundle, decoded per pixel in the shader.
    Decoded,
    /// The original maps block-compressed as engines ship them (BC7, BC5, BC4).
    Bcn,
}

impl RenderSide {
    fn name(self) -> &'static str {
        match self {
            Self::Original => "the original maps",
            Self::Decoded => "decoded from the bundle",
            Self::Bcn => "block-compressed (BC7/BC5/BC4)",
        }
    }
}

/// What to draw and how.
#[derive(Clone, Debug)]
pub struct RenderRequest {
    /// A glTF asset (`.gltf`, `.glb`) or a material folder.
    pub asset: PathBuf,
    /// A bundle of the same library to decode (`None`: the original maps).
    pub bundle: Option<PathBuf>,
    /// The material shown, by name (`None`: the first).
    pub material: Option<String>,
    /// The shape where the library has no mesh, or to draw instead of it.
    pub shape: Option<Shape>,
    /// An equirectangular `.hdr` or `.exr` (`None`: the procedural studio).
    pub environment: Option<PathBuf>,
    /// How the shading pass lights, and what it shows.
    pub lighting: Lighting,
    /// The error view's map (`None`: pooled over the material's maps).
    pub error_map: Option<MapKind>,
    /// Two sides (left, right) as a wipe divided at a fraction of the width from the left
    /// (`None`: one side, decoded with a bundle, else the original maps).
    pub ab: Option<([RenderSide; 2], f32)>,
    /// The camera's yaw and pitch about what it frames, degrees, and its distance as a multiple
    /// of the framing distance.
    pub camera: [f32; 3],
    /// Frames of a turntable: the camera turns a full circle in this many steps (1: one image).
    pub frames: u32,
    /// Width × height, pixels.
    pub size: [u32; 2],
    /// Instead of the wipe, FLIP of its right side against its left, each drawn whole: NVIDIA's
    /// perceptual difference of the two images as shown, in the magma colour map.
    pub flip: bool,
    /// Draw each frame this many times again, each timed on the GPU pass by pass (timestamp
    /// queries), after the drawing that is kept (which compiles the pipelines and warms the
    /// caches). `None`: no timing.
    pub gpu_time: Option<u32>,
}

/// The images drawn: RGBA8 rows, sRGB-encoded, and what they show.
pub struct Rendered {
    /// Width × height.
    pub size: [u32; 2],
    /// Each frame's RGBA8 rows, top to bottom.
    pub frames: Vec<Vec<u8>>,
    /// The material drawn, the surface, and where its maps came from, in words.
    pub description: String,
    /// With [`RenderRequest::flip`], each frame's mean FLIP.
    pub flip_means: Vec<f64>,
    /// With [`RenderRequest::gpu_time`], every timed drawing's GPU time.
    pub gpu_times: Vec<PassTimes>,
    /// The GPU adapter it drew on, by name, and its driver.
    pub adapter: String,
}

/// One side's renderer, ready to draw.
struct Side {
    source: RenderSide,
    renderer: MaterialRenderer,
    /// Where the originals start in its texture (the error view's reference).
    reference_offset: u32,
}

/// Draws `request` on the first GPU adapter.
pub fn render(request: &RenderRequest) -> Result<Rendered> {
    let [_, height] = request.size;
    let (sources, layout) = sides_of(request)?;
    let library = crate::studio::session::load_folders(std::slice::from_ref(&request.asset));
    if library.set.materials.is_empty() {
        let problems: Vec<String> = library.problems.iter().map(|p| format!("{}: {}", p.path.display(), p.message)).collect();
        bail!("{}: no material loaded ({})", request.asset.display(), problems.join("; "));
    }
    let material = match &request.material {
        None => 0,
        Some(name) => library.set.materials.iter().position(|m| &m.name == name).with_context(|| {
            let names: Vec<&str> = library.set.materials.iter().map(|m| m.name.as_str()).collect();
            format!("{}: no material named {name:?} (it has {names:?})", request.asset.display())
        })?,
    };
    let bundle = if let Some(path) = &request.bundle {
        Arc::new(Bundle::read(path)?)
    } else {
        if sources.contains(&RenderSide::Decoded) {
            bail!("--ab decoded needs --bundle: a bundle of the asset's library to decode");
        }
        // The original maps, through a placeholder model of the library's layout (its weights
        // unused: the originals' material pass reaches no decoder).
        let (layout, _) = analyse(&library.set, &CompressOptions::default())?;
        Arc::new(snapshot_bundle(&library.set, &layout, &layout.zero_params())?)
    };
    let name = &library.set.materials[material].name;
    let in_bundle = bundle.manifest.materials.iter().position(|m| &m.name == name).with_context(|| {
        format!("{}: the bundle has no material {name:?}", request.bundle.as_deref().unwrap_or(Path::new("")).display())
    })?;
    let Some((adapter, device, queue)) = texset_shaders::request_device()? else {
        bail!("no GPU adapter found (texset render draws on the GPU; lavapipe will do)");
    };
    let info = adapter.get_info();
    if !texset_shaders::renders_fragment_format(&adapter) {
        bail!("{} cannot render to Rgba32Float (a GL adapter?)", info.name);
    }
    let no_timer = || format!("--gpu-time: {} has no timestamp queries (wgpu's TIMESTAMP_QUERY)", info.name);
    let timer = request.gpu_time.map(|n| PassTimer::new(&device, &queue).map(|t| (t, n)).with_context(no_timer)).transpose()?;
    // The decoder compiles only when a side draws it.
    let prepared = PreparedMaterial::new(&device, &bundle, None)?;
    let mut sides = Vec::with_capacity(sources.len());
    for &source in &sources {
        sides.push(prepare_side(&device, &queue, &prepared, &library.set.materials[material].textures, source)?);
    }
    let shade = shade_pass(&device, &queue, request)?;
    let surface = SurfacePass::new(&device);
    let on_mesh = request.shape.is_none() && !library.meshes.is_empty();
    let mesh = if on_mesh {
        let transforms: Vec<_> = library.set.materials.iter().map(|m| m.constants.uv_transform).collect();
        let mesh = GpuMesh::new(&device, &library.meshes, &transforms)?;
        let shown: Vec<bool> = library.mesh_materials.iter().map(|w| w.contains(&material)).collect();
        mesh.show(&queue, &shown);
        Some(mesh)
    } else {
        None
    };
    let shape = request.shape.unwrap_or(Shape::Sphere);
    let (center, radius) = match library.mesh_bounds.filter(|_| on_mesh) {
        Some(b) => (b.center, b.radius.max(1e-6)),
        None => ([0.0; 3], shape.bounding_radius()),
    };
    let aspect = layout.aspect(request.size);
    let probe = request.lighting.view.probe(request.error_map, 0);
    let mut frames = Vec::with_capacity(request.frames as usize);
    let mut flip_means = Vec::new();
    let mut gpu_times = Vec::new();
    for frame in 0..request.frames {
        let mut orbit = OrbitCamera::default();
        orbit.frame(center, radius);
        let yaw = request.camera[0] + 360.0 * frame as f32 / request.frames as f32;
        orbit.orbit(yaw.to_radians(), request.camera[1].to_radians());
        orbit.distance *= if request.camera[2].is_finite() && request.camera[2] > 0.0 { request.camera[2] } else { 1.0 };
        let uniforms: Vec<PreviewUniforms> = sides
            .iter()
            .map(|side| {
                let probe = match probe {
                    Probe::Error { map, .. } => Probe::Error { map, reference_offset: side.reference_offset },
                    other => other,
                };
                PreviewUniforms::new(&bundle.manifest, in_bundle, 0.7, 3.0, shape, aspect)
                    .with_camera(&orbit.camera(aspect))
                    .with_srgb_encoding(true)
                    .with_originals(side.source != RenderSide::Decoded)
                    .with_surface(radius * 1e-3, height)
                    .with_lod_filter(height as f32)
                    .with_probe(probe)
            })
            .collect();
        let timing = timer.as_ref().map(|(timer, repeats)| (timer, *repeats));
        let drawn = draw_frame(
            (&device, &queue),
            &mut sides,
            &uniforms,
            (&surface, &shade),
            mesh.as_ref(),
            (request.size, layout),
            (request.flip, timing),
        )?;
        frames.push(drawn.rgba);
        flip_means.extend(drawn.flip_mean);
        gpu_times.extend(drawn.gpu_times);
    }
    let surface_name = if on_mesh { "the asset's meshes".to_owned() } else { format!("a {shape:?}").to_lowercase() };
    let shows = match sources.as_slice() {
        [left, right] if request.flip => format!("FLIP of {} against {}", right.name(), left.name()),
        [left, right] => format!("{} left, {} right", left.name(), right.name()),
        _ => sources.first().map_or("", |s| s.name()).to_owned(),
    };
    let view = request.lighting.view.name();
    let flip = flip_means.iter().copied().reduce(f64::max).map(|worst| {
        let which = if flip_means.len() > 1 { ", the worst frame" } else { "" };
        format!(" (mean FLIP {worst:.4}{which})")
    });
    let description = format!("{name} on {surface_name}, {shows}, {view}{}", flip.unwrap_or_default());
    let adapter = format!("{} ({:?}, {})", info.name, info.backend, info.driver_info.trim());
    Ok(Rendered { size: request.size, frames, description, flip_means, gpu_times, adapter })
}

/// The sides `request` draws and how they share the image, once its size, frames, sides, FLIP
/// and timing are checked (each refusal names the flag).
fn sides_of(request: &RenderRequest) -> Result<(Vec<RenderSide>, Layout)> {
    let [width, height] = request.size;
    if !(1..=MAX_SIDE_PX).contains(&width) || !(1..=MAX_SIDE_PX).contains(&height) {
        bail!("--size {width}x{height}: each side must be 1 to {MAX_SIDE_PX} pixels");
    }
    if !(1..=MAX_FRAMES).contains(&request.frames) {
        bail!("--turntable {}: 1 to {MAX_FRAMES} frames", request.frames);
    }
    let decoded = if request.bundle.is_some() { RenderSide::Decoded } else { RenderSide::Original };
    let (sources, layout) = match request.ab {
        Some((sides, split)) => (sides.to_vec(), Layout::Wipe(split.clamp(0.0, 1.0))),
        None => (vec![decoded], Layout::One),
    };
    if request.flip && sources.len() != 2 {
        bail!("--flip compares two sides: give them with --ab LEFT,RIGHT");
    }
    match request.gpu_time {
        Some(_) if request.flip => bail!("--gpu-time times the frame the viewport draws, not --flip's two images"),
        Some(n) if !(1..=MAX_TIMED_REPEATS).contains(&n) => bail!("--gpu-time {n}: 1 to {MAX_TIMED_REPEATS} timed drawings"),
        _ => Ok((sources, layout)),
    }
}

/// The shading pass lit as `request` asks, by its environment (else the procedural studio).
fn shade_pass(device: &wgpu::Device, queue: &wgpu::Queue, request: &RenderRequest) -> Result<ShadePass> {
    let environment = Environment::load_or_studio(request.environment.as_deref())?;
    let mut shade = ShadePass::new(device, texset_shaders::FRAGMENT_FORMAT);
    shade.set_environment(device, queue, &prepare(&environment, &PrepareOptions::default())?)?;
    shade.set_lighting(queue, request.lighting);
    Ok(shade)
}

/// One frame drawn.
struct Drawn {
    /// RGBA8 rows.
    rgba: Vec<u8>,
    /// With `flip`, its mean.
    flip_mean: Option<f64>,
    /// Each timed drawing's GPU time.
    gpu_times: Vec<PassTimes>,
}

/// One frame of `sides` through `uniforms` (one each), as RGBA8 rows of `size`: the sides in
/// `layout` with the wipe's divider drawn, or with `flip`, each side drawn whole (a wipe's aspect
/// is the whole image's) and FLIP of the right against the left, with its mean. With `timing`
/// (not with `flip`), the frame is then drawn that many times again, each timed by the timer.
fn draw_frame(
    (device, queue): (&wgpu::Device, &wgpu::Queue),
    sides: &mut [Side],
    uniforms: &[PreviewUniforms],
    (surface, shade): (&SurfacePass, &ShadePass),
    mesh: Option<&GpuMesh>,
    (size, layout): ([u32; 2], Layout),
    (flip, timing): (bool, Option<(&PassTimer, u32)>),
) -> Result<Drawn> {
    if flip {
        let mut shown = Vec::with_capacity(2);
        for (side, u) in sides.iter_mut().zip(uniforms) {
            side.renderer.write_uniforms(queue, 0, u);
            surface.write_uniforms(queue, 0, u);
            shade.write_uniforms(queue, 0, u);
            let linear = render_sides(device, queue, (&[(&side.renderer, 0)], Layout::One), (surface, shade), mesh, size)?;
            shown.push(linear.chunks_exact(4).flat_map(|p| [unorm8(p[0]), unorm8(p[1]), unorm8(p[2])]).collect::<Vec<u8>>());
        }
        let [left, right] = shown.as_slice() else { bail!("--flip compares two sides, not {}", shown.len()) };
        let map = flip_map(left, right, size[0], size[1]).context("the two sides' images differ in size")?;
        let rgba = map.magma_rgb8.chunks_exact(3).flat_map(|p| [p[0], p[1], p[2], 255]).collect();
        return Ok(Drawn { rgba, flip_mean: Some(map.mean), gpu_times: Vec::new() });
    }
    for (i, (side, u)) in sides.iter_mut().zip(uniforms).enumerate() {
        side.renderer.write_uniforms(queue, 0, u);
        surface.write_uniforms(queue, i, u);
        shade.write_uniforms(queue, i, u);
    }
    let renderers: Vec<(&MaterialRenderer, usize)> = sides.iter().map(|s| (&s.renderer, 0)).collect();
    let linear = render_sides(device, queue, (&renderers, layout), (surface, shade), mesh, size)?;
    let mut rgba: Vec<u8> = linear.iter().map(|&v| unorm8(v)).collect();
    draw_divider(&mut rgba, size, layout);
    let mut gpu_times = Vec::new();
    if let Some((timer, repeats)) = timing {
        for _ in 0..repeats {
            let (_, times) = render_sides_timed(device, queue, (&renderers, layout), (surface, shade), mesh, size, Some(timer))?;
            gpu_times.extend(times);
        }
    }
    Ok(Drawn { rgba, flip_mean: None, gpu_times })
}

/// Side `source`'s renderer: `prepared`'s pipelines, its texture the material's `textures` (a
/// block-compressed side: their round trips, then the originals as the error view's reference).
fn prepare_side(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    prepared: &PreparedMaterial,
    textures: &[texset_core::set::Texture],
    source: RenderSide,
) -> Result<Side> {
    let mut renderer = MaterialRenderer::from_prepared(device, prepared.clone());
    let originals: Vec<(u32, u32, u32, &[f32])> =
        textures.iter().map(|t| (t.info.width, t.info.height, t.info.channels, t.texels.as_slice())).collect();
    let mut reference_offset = 0;
    if source == RenderSide::Bcn {
        let compressed: Vec<Vec<f32>> =
            textures.iter().map(|t| round_trip(t, BcFormat::for_map(t.info.kind, t.info.channels)).values).collect();
        let mut maps: Vec<(u32, u32, u32, &[f32])> =
            textures.iter().zip(&compressed).map(|(t, v)| (t.info.width, t.info.height, t.info.channels, v.as_slice())).collect();
        maps.extend_from_slice(&originals);
        renderer.set_originals(device, queue, &Originals::from_maps(&maps))?;
        reference_offset = textures.len() as u32;
    } else {
        renderer.set_originals(device, queue, &Originals::from_maps(&originals))?;
    }
    Ok(Side { source, renderer, reference_offset })
}

/// A wipe's divider drawn into `rgba` (of `size`): a white line two pixels wide at the split.
fn draw_divider(rgba: &mut [u8], size: [u32; 2], layout: Layout) {
    let Some(split) = layout.split_px(size[0]) else { return };
    let [width, height] = size.map(|v| v as usize);
    for x in [split.saturating_sub(1) as usize, split as usize].into_iter().filter(|&x| x < width) {
        for y in 0..height {
            let at = (y * width + x) * 4;
            if let Some(px) = rgba.get_mut(at..at + 4) {
                px.copy_from_slice(&[255, 255, 255, 255]);
            }
        }
    }
}
