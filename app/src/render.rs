//! The studio's viewport, headless: a material of a library (a glTF asset's meshes, or a preview
//! shape) drawn through the same three passes (`texset_shaders::preview`: surface, material,
//! shading), lit by an environment, into an image. `texset render` writes it as a PNG, for review
//! sheets, bug reports and golden-image tests.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use texset_core::{CompressOptions, analyse, bundle::Bundle, decode::unorm8, snapshot_bundle};
use texset_shaders::environment::{Environment, PrepareOptions, prepare};
use texset_shaders::preview::{
    GpuMesh, Lighting, MaterialRenderer, OrbitCamera, Originals, PreparedMaterial, PreviewUniforms, ShadePass, Shape, SurfacePass,
    render_deferred,
};

/// The largest side `texset render` draws, pixels.
pub const MAX_SIDE_PX: u32 = 8192;

/// Width of the procedural studio environment, texels (as the studio's).
const STUDIO_WIDTH_PX: u32 = 1024;

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
    /// How the shading pass lights.
    pub lighting: Lighting,
    /// The camera's yaw and pitch about what it frames, degrees, and its distance as a multiple
    /// of the framing distance.
    pub camera: [f32; 3],
    /// Width × height, pixels.
    pub size: [u32; 2],
}

/// The image drawn: RGBA8 rows, sRGB-encoded, and what it shows.
pub struct Rendered {
    /// Width × height.
    pub size: [u32; 2],
    /// RGBA8 rows, top to bottom.
    pub rgba: Vec<u8>,
    /// The material drawn, the surface, and where its maps came from, in words.
    pub description: String,
}

/// Draws `request` on the first GPU adapter.
pub fn render(request: &RenderRequest) -> Result<Rendered> {
    let [width, height] = request.size;
    if !(1..=MAX_SIDE_PX).contains(&width) || !(1..=MAX_SIDE_PX).contains(&height) {
        bail!("--size {width}x{height}: each side must be 1 to {MAX_SIDE_PX} pixels");
    }
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
    let (bundle, decoded) = if let Some(path) = &request.bundle {
        (Arc::new(Bundle::read(path)?), true)
    } else {
        // The original maps, through a placeholder model of the library's layout (its weights
        // unused: the originals' material pass reaches no decoder).
        let (layout, _) = analyse(&library.set, &CompressOptions::default())?;
        (Arc::new(snapshot_bundle(&library.set, &layout, &layout.zero_params())?), false)
    };
    let name = &library.set.materials[material].name;
    let in_bundle = bundle.manifest.materials.iter().position(|m| &m.name == name).with_context(|| {
        format!("{}: the bundle has no material {name:?}", request.bundle.as_deref().unwrap_or(Path::new("")).display())
    })?;
    let Some((adapter, device, queue)) = texset_shaders::request_device()? else {
        bail!("no GPU adapter found (texset render draws on the GPU; lavapipe will do)");
    };
    if !texset_shaders::renders_fragment_format(&adapter) {
        bail!("{} cannot render to Rgba32Float (a GL adapter?)", adapter.get_info().name);
    }
    let mut renderer = MaterialRenderer::from_prepared(&device, PreparedMaterial::new(&device, &bundle, None)?);
    if !decoded {
        let m = &library.set.materials[material];
        let maps: Vec<(u32, u32, u32, &[f32])> = m.textures.iter().map(|t| (t.width, t.height, t.channels, t.texels.as_slice())).collect();
        renderer.set_originals(&device, &queue, &Originals::from_maps(&maps))?;
    }
    let environment = match &request.environment {
        Some(path) => Environment::load(path)?,
        None => Environment::studio(STUDIO_WIDTH_PX),
    };
    let mut shade = ShadePass::new(&device, texset_shaders::FRAGMENT_FORMAT);
    shade.set_environment(&device, &queue, &prepare(&environment, &PrepareOptions::default())?)?;
    shade.set_lighting(&queue, request.lighting);
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
    let mut orbit = OrbitCamera::default();
    orbit.frame(center, radius);
    orbit.orbit(request.camera[0].to_radians(), request.camera[1].to_radians());
    orbit.distance *= if request.camera[2].is_finite() && request.camera[2] > 0.0 { request.camera[2] } else { 1.0 };
    let aspect = width as f32 / height as f32;
    let mut uniforms = PreviewUniforms::new(&bundle.manifest, in_bundle, 0.7, 3.0, shape, aspect)
        .with_camera(&orbit.camera(aspect))
        .with_srgb_encoding(true)
        .with_originals(!decoded)
        .with_surface(radius * 1e-3, height);
    if bundle.manifest.mip_levels > 1 {
        uniforms = uniforms.with_lod_filter(height as f32);
    }
    renderer.write_uniforms(&queue, 0, &uniforms);
    surface.write_uniforms(&queue, 0, &uniforms);
    shade.write_uniforms(&queue, 0, &uniforms);
    let linear = render_deferred(&device, &queue, &renderer, (&surface, &shade), mesh.as_ref(), request.size)?;
    let rgba = linear.iter().map(|&v| unorm8(v)).collect();
    let surface_name = if on_mesh { "the asset's meshes".to_owned() } else { format!("a {shape:?}").to_lowercase() };
    let source = if decoded { "decoded from the bundle" } else { "the original maps" };
    let view = request.lighting.view.name();
    Ok(Rendered { size: request.size, rgba, description: format!("{name} on {surface_name}, {source}, {view}") })
}
