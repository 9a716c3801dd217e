//! texset-bevy headless, on whatever Vulkan adapter Bevy finds (lavapipe in CI): the loader's
//! images against texset's CPU decoder, renders of the decode-on-load and the per-pixel material
//! against each other, and a bad bundle's load error (garbage, truncated, over the decode budget).
//!
//! Each test runs a whole Bevy app (no window, a render-target image read back with
//! `Screenshot`); run them one at a time: `cargo test -- --test-threads=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

use bevy::asset::LoadState;
use bevy::camera::{RenderTarget, ScalingMode};
use bevy::core_pipeline::tonemapping::Tonemapping;
use bevy::prelude::*;
use bevy::render::render_resource::{TextureFormat, TextureUsages};
use bevy::render::view::Msaa;
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured};
use bevy::window::ExitCondition;
use bevy::winit::WinitPlugin;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use texset_bevy::{
    TexsetBundle, TexsetGltf, TexsetGltfMaterial, TexsetGltfSwapped, TexsetImageFormat, TexsetLoaderSettings, TexsetMaterial, TexsetMips,
    TexsetPlugin,
};
use texset_core::bundle::Bundle;
use texset_core::decode::Decoder;

/// The sample library the example shows (made by `texset compress`, assets/README.md).
const BUNDLE: &str = "sample_library.texset";
/// How long a test waits for assets and pipelines (lavapipe compiles the per-pixel shader).
const PATIENCE: Duration = Duration::from_secs(400);

fn assets_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("assets")
}

/// Whether a Vulkan driver is installed; without one the tests say so and return, unless
/// `TEXSET_REQUIRE_GPU` is set (CI, where lavapipe is), where they fail.
fn gpu_or_skip(test: &str) -> bool {
    let icds = ["/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d"];
    let found = icds.iter().any(|d| std::fs::read_dir(d).is_ok_and(|mut e| e.next().is_some()));
    if found || std::env::var_os("TEXSET_REQUIRE_GPU").is_some() {
        return true;
    }
    let line = format!("SKIPPED: {test}: no Vulkan driver is installed (apt-get install mesa-vulkan-drivers for lavapipe)");
    println!("{line}");
    // Counted as skipped by the CI summary, as texset_testkit::skip does in the root workspace.
    if let Some(log) = std::env::var_os("TEXSET_SKIP_LOG") {
        use std::io::Write as _;
        if let Ok(mut file) = std::fs::OpenOptions::new().append(true).create(true).open(log) {
            let _ = writeln!(file, "{line}");
        }
    }
    false
}

/// A Bevy app with the renderer and no window, reading assets from `dir`.
fn headless_app(dir: &Path) -> App {
    let mut app = App::new();
    app.add_plugins(
        DefaultPlugins
            .set(WindowPlugin { primary_window: None, exit_condition: ExitCondition::DontExit, ..default() })
            .set(AssetPlugin { file_path: dir.to_string_lossy().into_owned(), ..default() })
            .disable::<WinitPlugin>(),
    )
    .add_plugins(TexsetPlugin);
    app.finish();
    app.cleanup();
    app
}

/// Runs frames until `done` says so, or fails after [`PATIENCE`] naming `what`.
fn run_until(app: &mut App, what: &str, mut done: impl FnMut(&mut App) -> bool) {
    let start = Instant::now();
    while !done(app) {
        assert!(start.elapsed() < PATIENCE, "gave up waiting for {what} after {PATIENCE:?}");
        app.update();
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Loads the sample library with `settings` and waits until it and its images are in.
fn load_bundle(app: &mut App, settings: TexsetLoaderSettings) -> Handle<TexsetBundle> {
    let handle: Handle<TexsetBundle> =
        app.world().resource::<AssetServer>().load_builder().with_settings(move |s: &mut TexsetLoaderSettings| *s = settings).load(BUNDLE);
    let id = handle.id();
    run_until(app, "the bundle to load", |app| {
        let server = app.world().resource::<AssetServer>();
        match server.load_state(id) {
            LoadState::Failed(e) => panic!("the sample library failed to load: {e}"),
            _ => server.is_loaded_with_dependencies(id),
        }
    });
    handle
}

/// `texset decode`'s bytes of a decoded map: values rounded to 8 bits, RGB maps with alpha 255.
fn expected_bytes(values: &[f32], channels: u32) -> Vec<u8> {
    let out = if channels >= 3 { 4 } else { channels as usize };
    let mut bytes = Vec::new();
    for texel in values.chunks(channels as usize) {
        for c in 0..out {
            bytes.push(texel.get(c).map_or(255, |v| (v.clamp(0.0, 1.0) * 255.0).round() as u8));
        }
    }
    bytes
}

#[test]
fn loader_images_are_the_cpu_decoders_texels() {
    if !gpu_or_skip("loader_images_are_the_cpu_decoders_texels") {
        return;
    }
    let bytes = std::fs::read(assets_dir().join(BUNDLE)).unwrap();
    let bundle = Bundle::from_bytes(&bytes).unwrap();
    let decoder = Decoder::new(&bundle);
    let mut app = headless_app(&assets_dir());
    let settings =
        TexsetLoaderSettings { format: TexsetImageFormat::Uncompressed, mips: TexsetMips::Bundle, per_pixel: false, ..Default::default() };
    let handle = load_bundle(&mut app, settings);
    let world = app.world();
    let loaded = world.resource::<Assets<TexsetBundle>>().get(&handle).unwrap();
    let images = world.resource::<Assets<Image>>();
    assert_eq!(loaded.materials.len(), bundle.manifest.materials.len());
    let mut checked = 0;
    for (k, material) in bundle.manifest.materials.iter().enumerate() {
        let loaded_material = loaded.material(&material.name).unwrap();
        assert_eq!(loaded_material.maps.len(), material.maps.len());
        for (m, entry) in material.maps.iter().enumerate() {
            let image = images.get(&loaded_material.maps[m].1).unwrap();
            let data = image.data.as_ref().unwrap();
            // Level 0, then (the bundle has a mip chain) every level the bundle decodes.
            let mut offset = 0;
            let levels = decoder.map_mip_levels(k, m).unwrap();
            assert_eq!(image.texture_descriptor.mip_level_count, levels, "{}/{}", material.name, entry.info.kind.token());
            for level in 0..levels {
                let decoded = decoder.decode_map_level(k, m, level).unwrap();
                let want = expected_bytes(&decoded.values, decoded.channels);
                assert!(
                    data[offset..offset + want.len()] == want[..],
                    "{}/{} level {level}: the image's texels differ from Decoder::decode_map_level",
                    material.name,
                    entry.info.kind.token()
                );
                offset += want.len();
                checked += 1;
            }
            assert_eq!(offset, data.len());
        }
        // The decode-on-load material has the images wired in.
        let standard = world.resource::<Assets<StandardMaterial>>().get(&loaded_material.standard).unwrap();
        assert_eq!(standard.base_color_texture.as_ref(), loaded_material.map("basecolor"));
        assert_eq!(standard.normal_map_texture.as_ref(), loaded_material.map("normal"));
        assert_eq!(standard.occlusion_texture.as_ref(), loaded_material.map("ao").or(loaded_material.map("orm")));
    }
    println!(
        "{checked} mip levels of {} maps byte-identical to Decoder::decode_map_level",
        bundle.manifest.materials.iter().map(|m| m.maps.len()).sum::<usize>()
    );
}

/// The side of the render target: the sample maps' size, so a full-view quad has one pixel per
/// texel, at the texel's centre.
const SIDE: u32 = 256;

/// One render of the scene `spawn` builds, read back once `ready` accepts it.
struct Render {
    rgba: Vec<u8>,
}

/// Renders `scene` into a `SIDE`² image until `ready` accepts a frame (pipelines compile in the
/// background, so the first frames may lack the mesh).
fn render(app: &mut App, what: &str, target: &Handle<Image>, ready: impl Fn(&[u8]) -> bool) -> Render {
    let captured: Arc<Mutex<Option<Vec<u8>>>> = Arc::default();
    let mut frames = 0u32;
    let mut result = None;
    run_until(app, what, |app| {
        frames += 1;
        if let Some(rgba) = captured.lock().unwrap().take()
            && ready(&rgba)
        {
            result = Some(rgba);
            return true;
        }
        // A screenshot every other frame (a per-pixel frame takes seconds on lavapipe).
        if frames.is_multiple_of(2) {
            let sink = captured.clone();
            app.world_mut().spawn(Screenshot::image(target.clone())).observe(move |shot: On<ScreenshotCaptured>| {
                let data = shot.image.clone().try_into_dynamic().unwrap().to_rgba8().into_raw();
                *sink.lock().unwrap() = Some(data);
            });
        }
        false
    });
    Render { rgba: result.unwrap() }
}

/// The fraction of pixels whose channels all agree within `tolerance`, and the largest
/// difference.
fn agreement(a: &[u8], b: &[u8], tolerance: u8) -> (f64, u8) {
    agreement_where(a, b, tolerance, |_| true)
}

/// [`agreement`] over the pixels of `a` that `counts` accepts.
fn agreement_where(a: &[u8], b: &[u8], tolerance: u8, counts: impl Fn(&[u8]) -> bool) -> (f64, u8) {
    let (mut within, mut total) = (0usize, 0usize);
    let mut worst = 0u8;
    for (pa, pb) in a.chunks(4).zip(b.chunks(4)).filter(|(pa, _)| counts(pa)) {
        let d = pa.iter().zip(pb).take(3).map(|(x, y)| x.abs_diff(*y)).max().unwrap_or(0);
        worst = worst.max(d);
        within += usize::from(d <= tolerance);
        total += 1;
    }
    (within as f64 / total.max(1) as f64, worst)
}

const BACKGROUND: [u8; 4] = [255, 0, 255, 255];

fn background_pixels(rgba: &[u8]) -> usize {
    rgba.chunks(4).filter(|p| *p == BACKGROUND).count()
}

/// The render target and a camera looking at it.
fn target_and_camera(app: &mut App, camera: Transform, projection: Projection) -> (Handle<Image>, Entity) {
    let mut image = Image::new_target_texture(SIDE, SIDE, TextureFormat::Rgba8UnormSrgb, None);
    image.texture_descriptor.usage |= TextureUsages::COPY_SRC;
    let target = app.world_mut().resource_mut::<Assets<Image>>().add(image);
    let camera = app
        .world_mut()
        .spawn((
            Camera3d::default(),
            Camera { clear_color: ClearColorConfig::Custom(Color::srgb_u8(BACKGROUND[0], BACKGROUND[1], BACKGROUND[2])), ..default() },
            RenderTarget::Image(target.clone().into()),
            camera,
            projection,
            Tonemapping::None,
            Msaa::Off,
        ))
        .id();
    (target, camera)
}

/// The decode-on-load and per-pixel materials of `name`, as loaded, changed by `change`.
fn both_materials(
    app: &mut App,
    bundle: &Handle<TexsetBundle>,
    name: &str,
    change: impl Fn(&mut StandardMaterial),
) -> (Handle<StandardMaterial>, Handle<TexsetMaterial>) {
    let world = app.world_mut();
    let material = world.resource::<Assets<TexsetBundle>>().get(bundle).unwrap().material(name).unwrap().clone();
    let mut standard = world.resource::<Assets<StandardMaterial>>().get(&material.standard).unwrap().clone();
    let mut per_pixel = world.resource::<Assets<TexsetMaterial>>().get(material.per_pixel.as_ref().unwrap()).unwrap().clone();
    change(&mut standard);
    change(&mut per_pixel.base);
    let standard = world.resource_mut::<Assets<StandardMaterial>>().add(standard);
    let per_pixel = world.resource_mut::<Assets<TexsetMaterial>>().add(per_pixel);
    (standard, per_pixel)
}

/// Renders `mesh` with the decode-on-load material, then with the per-pixel one: both images and
/// the mesh's entity.
fn render_both_ways(
    app: &mut App,
    target: &Handle<Image>,
    mesh: Handle<Mesh>,
    standard: Handle<StandardMaterial>,
    per_pixel: Handle<TexsetMaterial>,
) -> (Render, Render, Entity) {
    let entity = app.world_mut().spawn((Mesh3d(mesh), MeshMaterial3d(standard), Transform::IDENTITY)).id();
    // The mesh is in when the background shrinks and stays: two equal reads in a row.
    let last: Mutex<Option<Vec<u8>>> = Mutex::default();
    let settled = |rgba: &[u8]| {
        let mut last = last.lock().unwrap();
        let same = last.as_deref() == Some(rgba) && background_pixels(rgba) < (SIDE * SIDE) as usize;
        *last = Some(rgba.to_vec());
        same
    };
    let on_load = render(app, "the decode-on-load render", target, settled);
    let coverage = background_pixels(&on_load.rgba);
    let mut entity_mut = app.world_mut().entity_mut(entity);
    entity_mut.remove::<MeshMaterial3d<StandardMaterial>>();
    entity_mut.insert(MeshMaterial3d(per_pixel));
    let compile = Instant::now();
    let per_pixel = render(app, "the per-pixel render", target, |rgba| background_pixels(rgba) <= coverage);
    println!("per-pixel render ready after {:.1} s (pipeline compiled, frames rendered)", compile.elapsed().as_secs_f64());
    (on_load, per_pixel, entity)
}

fn save(name: &str, rgba: &[u8]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-renders");
    std::fs::create_dir_all(&dir).unwrap();
    let image = bevy::image::Image::new(
        bevy::render::render_resource::Extent3d { width: SIDE, height: SIDE, depth_or_array_layers: 1 },
        bevy::render::render_resource::TextureDimension::D2,
        rgba.to_vec(),
        TextureFormat::Rgba8UnormSrgb,
        bevy::asset::RenderAssetUsages::default(),
    );
    image.try_into_dynamic().unwrap().save(dir.join(name)).unwrap();
}

/// The per-pixel material against the decode-on-load one, in one app (one shader compile):
/// an unlit quad with one pixel per texel, then a lit sphere.
#[test]
fn per_pixel_material_matches_decode_on_load() {
    if !gpu_or_skip("per_pixel_material_matches_decode_on_load") {
        return;
    }
    let mut app = headless_app(&assets_dir());
    let bundle = load_bundle(&mut app, TexsetLoaderSettings::default());

    // An unlit quad filling an orthographic view, one pixel per texel.
    let projection = Projection::Orthographic(OrthographicProjection {
        scaling_mode: ScalingMode::Fixed { width: 2.0, height: 2.0 },
        ..OrthographicProjection::default_3d()
    });
    let (target, camera) = target_and_camera(&mut app, Transform::from_xyz(0.0, 0.0, 5.0).looking_at(Vec3::ZERO, Vec3::Y), projection);
    let (standard, per_pixel) = both_materials(&mut app, &bundle, "wood", |m| m.unlit = true);
    let quad = Mesh::from(Rectangle::new(2.0, 2.0)).with_generated_tangents().unwrap();
    let quad = app.world_mut().resource_mut::<Assets<Mesh>>().add(quad);
    let (on_load, per_pixel_render, entity) = render_both_ways(&mut app, &target, quad, standard, per_pixel);
    save("unlit_quad_on_load.png", &on_load.rgba);
    save("unlit_quad_per_pixel.png", &per_pixel_render.rgba);
    assert_eq!(background_pixels(&on_load.rgba), 0, "the quad does not fill the view");
    let (fraction, worst) = agreement(&on_load.rgba, &per_pixel_render.rgba, 2);
    println!("unlit quad: {:.3} % of pixels within 2/255, largest difference {worst}/255", 100.0 * fraction);
    assert!(fraction >= 0.99, "unlit quad: only {:.3} % of pixels agree within 2/255 (largest difference {worst})", 100.0 * fraction);

    // A lit sphere in perspective: minified and magnified, every level of detail.
    app.world_mut().despawn(entity);
    app.world_mut().entity_mut(camera).insert((
        Transform::from_xyz(0.0, 0.6, 3.2).looking_at(Vec3::ZERO, Vec3::Y),
        Projection::Perspective(PerspectiveProjection { fov: 0.8, ..default() }),
    ));
    app.world_mut().spawn((
        DirectionalLight { illuminance: 8_000.0, ..default() },
        Transform::from_xyz(2.0, 3.0, 2.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    let (standard, per_pixel) = both_materials(&mut app, &bundle, "wood", |_| {});
    let sphere = Sphere::new(1.0).mesh().uv(64, 32).with_generated_tangents().unwrap();
    let sphere = app.world_mut().resource_mut::<Assets<Mesh>>().add(sphere);
    let (on_load, per_pixel_render, _) = render_both_ways(&mut app, &target, sphere, standard, per_pixel);
    save("lit_sphere_on_load.png", &on_load.rgba);
    save("lit_sphere_per_pixel.png", &per_pixel_render.rgba);
    let covered = (SIDE * SIDE) as usize - background_pixels(&on_load.rgba);
    assert!(covered > (SIDE * SIDE / 4) as usize, "the sphere covers only {covered} pixels");
    // Over the sphere's pixels (the background agrees trivially).
    let (fraction, worst) = agreement_where(&on_load.rgba, &per_pixel_render.rgba, 2, |p| p != BACKGROUND);
    println!("lit sphere: {:.3} % of its {covered} pixels within 2/255, largest difference {worst}/255", 100.0 * fraction);
    // On lavapipe this needs the float filtering `.cargo/config.toml` asks for: on llvmpipe's
    // 8-bit path (each lerp rounded to 8 bits) 98.9 % agreed, in float 99.6 %
    // (docs/decisions/027-bevy-plugin.md).
    let gallivm = std::env::var("GALLIVM_PERF").unwrap_or_default();
    assert!(
        fraction >= 0.99,
        "lit sphere: only {:.3} % of pixels agree within 2/255 (largest difference {worst}; GALLIVM_PERF={gallivm:?}, \
         run from integrations/bevy so that cargo sets it)",
        100.0 * fraction
    );
}

/// How many distinct colours an image has.
fn colours(rgba: &[u8]) -> usize {
    rgba.chunks(4).collect::<std::collections::HashSet<_>>().len()
}

/// A unit quad (`-1..1` in x and y, facing +z) as glTF buffer bytes: positions, normals,
/// tangents, UVs (v down), u16 indices.
fn quad_buffer() -> Vec<u8> {
    let corners = [[-1.0f32, -1.0], [1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]];
    let mut values: Vec<f32> = Vec::new();
    values.extend(corners.iter().flat_map(|[x, y]| [*x, *y, 0.0]));
    values.extend(corners.iter().flat_map(|_| [0.0, 0.0, 1.0]));
    values.extend(corners.iter().flat_map(|_| [1.0, 0.0, 0.0, 1.0]));
    values.extend(corners.iter().flat_map(|[x, y]| [(x + 1.0) / 2.0, 1.0 - (y + 1.0) / 2.0]));
    let mut bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    bytes.extend([0u16, 1, 2, 0, 2, 3].iter().flat_map(|i| i.to_le_bytes()));
    bytes
}

/// Writes into `dir` a glTF as `texset compress ASSET.gltf -o DIR/` writes one
/// (docs/gltf-extension.md): a quad wearing the sample library's `wood`, its bindings' PNG
/// fallbacks decoded from the bundle (base colour, normal, G roughness of a metallic-roughness
/// image, occlusion), each texture naming the bundle beside it and the material in
/// `TEXSET_neural_texture`. Returns the glTF's name.
fn texset_gltf(dir: &Path) -> &'static str {
    let bytes = std::fs::read(assets_dir().join(BUNDLE)).unwrap();
    std::fs::write(dir.join(BUNDLE), &bytes).unwrap();
    let bundle = Bundle::from_bytes(&bytes).unwrap();
    let decoder = Decoder::new(&bundle);
    let material = bundle.manifest.materials.iter().position(|m| m.name == "wood").unwrap();
    let map = |kind: &str| {
        let index = bundle.manifest.materials[material].maps.iter().position(|m| m.info.kind.token() == kind).unwrap();
        decoder.decode_map(material, index).unwrap()
    };
    let unorm = |v: f32| (v.clamp(0.0, 1.0) * 255.0).round() as u8;
    let (base, normal, roughness, ao) = (map("basecolor"), map("normal"), map("roughness"), map("ao"));
    std::fs::create_dir_all(dir.join("textures")).unwrap();
    let rgb = |name: &str, texels: Vec<u8>| {
        image::RgbImage::from_raw(base.width, base.height, texels).unwrap().save(dir.join(format!("textures/{name}.png"))).unwrap();
    };
    rgb("wood_baseColor", base.values.iter().map(|&v| unorm(v)).collect());
    rgb("wood_normal", normal.values.iter().map(|&v| unorm(v)).collect());
    rgb("wood_metallicRoughness", roughness.values.iter().flat_map(|&v| [0, unorm(v), 0]).collect());
    image::GrayImage::from_raw(ao.width, ao.height, ao.values.iter().map(|&v| unorm(v)).collect())
        .unwrap()
        .save(dir.join("textures/wood_occlusion.png"))
        .unwrap();
    let buffer = quad_buffer();
    std::fs::write(dir.join("quad.bin"), &buffer).unwrap();
    let texture = |image: usize, channels: serde_json::Value| serde_json::json!({"source": image, "sampler": 0, "extensions": {"TEXSET_neural_texture": {"bundle": BUNDLE, "material": "wood", "channels": channels}}});
    let one = |map: &str, c: usize| serde_json::json!({"map": map, "channel": c});
    let document = serde_json::json!({
        "asset": {"version": "2.0"},
        "extensionsUsed": ["TEXSET_neural_texture"],
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0, "NORMAL": 1, "TANGENT": 2, "TEXCOORD_0": 3}, "indices": 4, "material": 0}]}],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": 4, "type": "VEC3", "min": [-1, -1, 0], "max": [1, 1, 0]},
            {"bufferView": 1, "componentType": 5126, "count": 4, "type": "VEC3"},
            {"bufferView": 2, "componentType": 5126, "count": 4, "type": "VEC4"},
            {"bufferView": 3, "componentType": 5126, "count": 4, "type": "VEC2"},
            {"bufferView": 4, "componentType": 5123, "count": 6, "type": "SCALAR"}
        ],
        "bufferViews": [
            {"buffer": 0, "byteOffset": 0, "byteLength": 48},
            {"buffer": 0, "byteOffset": 48, "byteLength": 48},
            {"buffer": 0, "byteOffset": 96, "byteLength": 64},
            {"buffer": 0, "byteOffset": 160, "byteLength": 32},
            {"buffer": 0, "byteOffset": 192, "byteLength": 12}
        ],
        "buffers": [{"uri": "quad.bin", "byteLength": buffer.len()}],
        "materials": [{
            "name": "wood",
            "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}, "metallicRoughnessTexture": {"index": 2}, "metallicFactor": 0.0, "roughnessFactor": 0.9},
            "normalTexture": {"index": 1},
            "occlusionTexture": {"index": 3}
        }],
        // Clamped at the edges, as the per-pixel material samples (docs/integration.md).
        "samplers": [{"magFilter": 9729, "minFilter": 9729, "wrapS": 33071, "wrapT": 33071}],
        "textures": [
            texture(0, serde_json::json!([one("basecolor", 0), one("basecolor", 1), one("basecolor", 2)])),
            texture(1, serde_json::json!([one("normal", 0), one("normal", 1), one("normal", 2)])),
            texture(2, serde_json::json!([null, one("roughness", 0), null])),
            texture(3, serde_json::json!([one("ao", 0)]))
        ],
        "images": [
            {"uri": "textures/wood_baseColor.png"},
            {"uri": "textures/wood_normal.png"},
            {"uri": "textures/wood_metallicRoughness.png"},
            {"uri": "textures/wood_occlusion.png"}
        ]
    });
    std::fs::write(dir.join("quad.gltf"), serde_json::to_vec_pretty(&document).unwrap()).unwrap();
    "quad.gltf"
}

/// A texset glTF in Bevy (written as `texset compress ASSET.gltf -o DIR/` writes one: see
/// [`texset_gltf`]): Bevy shows its PNG fallbacks (the bundle decoded); the plugin marks the mesh,
/// loads the bundle beside the glTF, and swaps the fallbacks for the per-pixel material with the
/// glTF's own factors. Both renders agree.
#[test]
fn a_texset_gltf_gets_the_per_pixel_material_and_matches_its_fallbacks() {
    if !gpu_or_skip("a_texset_gltf_gets_the_per_pixel_material_and_matches_its_fallbacks") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let gltf = texset_gltf(dir.path());
    let mut app = headless_app(dir.path());
    app.insert_resource(TexsetGltf { per_pixel: false });
    let projection = Projection::Orthographic(OrthographicProjection {
        scaling_mode: ScalingMode::Fixed { width: 2.0, height: 2.0 },
        ..OrthographicProjection::default_3d()
    });
    let (target, _) = target_and_camera(&mut app, Transform::from_xyz(0.0, 0.0, 5.0).looking_at(Vec3::ZERO, Vec3::Y), projection);
    app.world_mut().spawn((
        DirectionalLight { illuminance: 8_000.0, ..default() },
        Transform::from_xyz(1.0, 2.0, 3.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    let scene = app.world().resource::<AssetServer>().load(GltfAssetLabel::Scene(0).from_asset(gltf));
    let id = scene.id();
    // The glTF, its images and the bundle its extension names, all in.
    run_until(&mut app, "the glTF and its dependencies", |app| {
        let server = app.world().resource::<AssetServer>();
        match server.load_state(id) {
            LoadState::Failed(e) => panic!("the glTF failed to load: {e}"),
            _ => server.is_loaded_with_dependencies(id),
        }
    });
    app.world_mut().spawn(WorldAssetRoot(scene));

    // The fallbacks: the textured mesh in (wood has hundreds of colours; a mesh drawn before its
    // images are on the GPU is one) and settled (two equal reads in a row).
    let last: Mutex<Option<Vec<u8>>> = Mutex::default();
    let fallbacks = render(&mut app, "the fallbacks' render", &target, |rgba| {
        let mut last = last.lock().unwrap();
        let same = last.as_deref() == Some(rgba) && background_pixels(rgba) == 0 && colours(rgba) > 100;
        *last = Some(rgba.to_vec());
        same
    });
    let mut marked = app.world_mut().query::<(&TexsetGltfMaterial, &MeshMaterial3d<StandardMaterial>)>();
    let (material, fallback) = marked.single(app.world()).expect("one marked mesh wearing its fallback material");
    assert_eq!(material.material, "wood");
    let fallback = app.world().resource::<Assets<StandardMaterial>>().get(&fallback.0).unwrap().clone();
    assert!(fallback.base_color_texture.is_some(), "the fallback material has no texture");

    // Per pixel: the swap, then frames (none requested before it) until the mesh is drawn again.
    app.insert_resource(TexsetGltf { per_pixel: true });
    run_until(&mut app, "the swap", |app| app.world_mut().query::<&TexsetGltfSwapped>().iter(app.world()).count() == 1);
    for _ in 0..4 {
        app.update();
    }
    let compile = Instant::now();
    let per_pixel = render(&mut app, "the per-pixel render", &target, |rgba| background_pixels(rgba) == 0 && colours(rgba) > 100);
    println!("per-pixel render of the glTF ready after {:.1} s", compile.elapsed().as_secs_f64());
    let mut swapped = app.world_mut().query_filtered::<&MeshMaterial3d<TexsetMaterial>, With<TexsetGltfSwapped>>();
    let handle = swapped.single(app.world()).expect("the swapped mesh wears a TexsetMaterial").0.clone();
    let worn = app.world().resource::<Assets<TexsetMaterial>>().get(&handle).unwrap();
    // The glTF's factors (metallicFactor 0, roughnessFactor 0.9), none of its textures.
    assert!(worn.base.metallic.abs() < 1e-6 && (worn.base.perceptual_roughness - 0.9).abs() < 1e-6, "{:?}", worn.base);
    assert!(worn.base.base_color_texture.is_none() && worn.base.normal_map_texture.is_none());
    save("gltf_quad_fallbacks.png", &fallbacks.rgba);
    save("gltf_quad_per_pixel.png", &per_pixel.rgba);
    let (fraction, worst) = agreement(&fallbacks.rgba, &per_pixel.rgba, 2);
    println!("texset glTF quad: {:.3} % of pixels within 2/255, largest difference {worst}/255", 100.0 * fraction);
    assert!(fraction >= 0.99, "only {:.3} % of pixels agree within 2/255 (largest difference {worst})", 100.0 * fraction);
}

#[test]
fn a_bad_bundle_is_a_load_error_naming_the_file() {
    if !gpu_or_skip("a_bad_bundle_is_a_load_error_naming_the_file") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("garbage.texset"), b"this is not a bundle").unwrap();
    let bytes = std::fs::read(assets_dir().join(BUNDLE)).unwrap();
    std::fs::write(dir.path().join("truncated.texset"), &bytes[..bytes.len() / 2]).unwrap();
    // A few KB that ask for over the loader's default 1 GiB of decoded maps: the sample's first
    // material at 4096², copied (issue 67). Refused before anything is decoded.
    let mut forged = texset_core::bundle::Bundle::from_bytes(&bytes).unwrap();
    for map in &mut forged.manifest.materials[0].maps {
        (map.info.width, map.info.height) = (4096, 4096);
    }
    let first = forged.manifest.materials[0].clone();
    for i in 0..4 {
        forged.manifest.materials.push(texset_core::bundle::MaterialEntry { name: format!("copy{i}"), ..first.clone() });
    }
    std::fs::write(dir.path().join("over_budget.texset"), forged.to_bytes().unwrap().0).unwrap();
    let mut app = headless_app(dir.path());
    for (file, fault) in [
        ("garbage.texset", "is not a valid texset bundle"),
        ("truncated.texset", "is not a valid texset bundle"),
        ("over_budget.texset", "over this decoder's limit"),
    ] {
        let start = Instant::now();
        let handle: Handle<TexsetBundle> = app.world().resource::<AssetServer>().load(file);
        let mut error = None;
        run_until(&mut app, &format!("{file} to fail"), |app| match app.world().resource::<AssetServer>().load_state(&handle) {
            LoadState::Failed(e) => {
                error = Some(e.to_string());
                true
            }
            LoadState::Loaded => panic!("{file} loaded"),
            _ => false,
        });
        let error = error.unwrap();
        println!("{file}: refused in {:?}: {error}", start.elapsed());
        assert!(error.contains(file) && error.contains(fault), "{error}");
    }
}
