//! The studio's PBR preview shader (preview.wgsl, decoding the material per pixel) matches its
//! CPU reference `texset_shaders::preview::shade`, for every shape, from the default camera and an
//! orbited, panned and zoomed one, and both materials of the tiny library; the image is not
//! blank and changes as the lights move.
#![allow(clippy::unwrap_used)]

use texset_core::decode::{Decoder, unmap};
use texset_shaders::preview::{OrbitCamera, PreviewRenderer, PreviewUniforms, Shape, map_lod, shade};
use texset_testkit::{tiny_bundle, tiny_bundle_with_mips};

const SLOT_KINDS: [&str; 7] = ["basecolor", "normal", "roughness", "metallic", "ao", "orm", "emissive"];

#[test]
fn preview_matches_cpu_reference_and_moves_with_the_lights() {
    check(&tiny_bundle(), 48, 40, false, "preview_matches_cpu_reference_and_moves_with_the_lights");
}

/// With a mip chain and the LOD filter on, a small viewport decodes most pixels from coarser
/// levels, blending two (trilinear), and the shader still matches the CPU reference.
#[test]
fn lod_filtered_preview_matches_cpu_reference() {
    check(&tiny_bundle_with_mips(4), 16, 12, true, "lod_filtered_preview_matches_cpu_reference");
}

fn check(bundle: &texset_core::bundle::Bundle, width: u32, height: u32, lod_filter: bool, name: &str) {
    let cpu = Decoder::new(bundle);
    let Some((adapter, device, queue)) = super::rendering_gpu_or_skip(name) else {
        return;
    };
    println!("adapter: {}", adapter.get_info().name);
    let mut renderer = PreviewRenderer::new(&device, bundle, wgpu::TextureFormat::Rgba32Float).unwrap();
    renderer.set_bundle(&device, bundle).unwrap();
    let aspect = width as f32 / height as f32;
    for material in 0..bundle.manifest.materials.len() {
        // The largest mean change the LOD filter makes over the shapes (a small sphere covers
        // few pixels and changes little).
        let mut filter_change = 0.0f32;
        let maps = &bundle.manifest.materials[material].maps;
        let fetch = |slot: usize, uv: [f32; 2], footprint: f32| {
            let i = maps.iter().position(|e| e.info.kind.token() == SLOT_KINDS[slot])?;
            let lod = map_lod(footprint, &maps[i]);
            let mut t = [0.0; 4];
            cpu.decode_texel_lod(material, i, uv[0], uv[1], lod, &mut t).unwrap();
            Some(unmap(&maps[i], t))
        };
        let mut orbited = OrbitCamera::default();
        orbited.orbit(0.9, 0.5);
        orbited.pan(0.1, -0.05);
        orbited.zoom(0.8, 1.0);
        let shapes = [Shape::Sphere, Shape::Plane, Shape::Cube];
        for (shape, camera) in shapes.iter().flat_map(|&s| [(s, OrbitCamera::default()), (s, orbited)]) {
            let camera = camera.camera(aspect);
            let mut uniforms =
                PreviewUniforms::new(&bundle.manifest, material, 0.7, 3.0, shape, aspect).with_camera(&camera).with_srgb_encoding(true);
            if lod_filter {
                uniforms = uniforms.with_lod_filter(height as f32);
            }
            renderer.write_uniforms(&queue, 0, &uniforms);
            let gpu = renderer.render(&device, &queue, width, height).unwrap();
            let mut diffs = Vec::new();
            for y in 0..height {
                for x in 0..width {
                    let uv = [(x as f32 + 0.5) / width as f32, (y as f32 + 0.5) / height as f32];
                    let want = shade(&uniforms, uv, &fetch);
                    let i = ((y * width + x) * 4) as usize;
                    diffs.push((0..3).map(|c| (gpu[i + c] - want[c]).abs()).fold(0.0f32, f32::max));
                }
            }
            let off = diffs.iter().filter(|&&d| d > 2e-3).count();
            diffs.sort_by(f32::total_cmp);
            let median = diffs[diffs.len() / 2];
            println!(
                "material {material} {shape:?} from {:?}: median |gpu - cpu| {median:.2e}, {off} of {} pixels above 2e-3",
                camera.eye,
                diffs.len()
            );
            assert!(median < 1e-4, "median difference {median}");
            assert!(off * 50 <= diffs.len(), "{off} pixels differ");

            let lum: Vec<f32> = gpu.chunks_exact(4).map(|p| p[0] + p[1] + p[2]).collect();
            let mean = lum.iter().sum::<f32>() / lum.len() as f32;
            let var = lum.iter().map(|l| (l - mean).powi(2)).sum::<f32>() / lum.len() as f32;
            assert!(var > 1e-4, "the render is flat (variance {var})");
            let mut moved =
                PreviewUniforms::new(&bundle.manifest, material, 2.2, 3.0, shape, aspect).with_camera(&camera).with_srgb_encoding(true);
            moved.lod_filter = uniforms.lod_filter;
            renderer.write_uniforms(&queue, 0, &moved);
            let after = renderer.render(&device, &queue, width, height).unwrap();
            let change = gpu.iter().zip(&after).map(|(a, b)| (a - b).abs()).sum::<f32>() / gpu.len() as f32;
            assert!(change > 1e-3, "moving the lights changed nothing ({change})");
            if lod_filter {
                // The same frame unfiltered (every pixel at level 0) is a different picture.
                let mut sharp = uniforms;
                sharp.lod_filter = [0.0; 4];
                renderer.write_uniforms(&queue, 0, &sharp);
                let unfiltered = renderer.render(&device, &queue, width, height).unwrap();
                let change = gpu.iter().zip(&unfiltered).map(|(a, b)| (a - b).abs()).sum::<f32>() / gpu.len() as f32;
                println!("material {material} {shape:?}: mean |filtered - level 0| {change:.2e}");
                filter_change = filter_change.max(change);
            }
        }
        if lod_filter {
            assert!(filter_change > 5e-3, "material {material}: the LOD filter changed nothing ({filter_change})");
        }
    }
}

/// An image drawn in bands of rows (`encode_rows`, keeping the rows drawn before) and, for A/B,
/// each side by its own renderer (`encode_sides`) is exactly the image one pass gives. The
/// studio's material pass (`encode_material`) draws its bands and sides through the same
/// `side_by_side`.
#[test]
fn preview_drawn_in_bands_and_sides_equals_one_pass() {
    let name = "preview_drawn_in_bands_and_sides_equals_one_pass";
    let Some((_, device, queue)) = super::rendering_gpu_or_skip(name) else {
        return;
    };
    let (width, height) = (64, 30);
    let bundle = tiny_bundle();
    let format = wgpu::TextureFormat::Rgba32Float;
    let a = PreviewRenderer::new(&device, &bundle, format).unwrap();
    let b = PreviewRenderer::new(&device, &tiny_bundle_with_mips(3), format).unwrap();
    let uniforms = PreviewUniforms::new(&bundle.manifest, 0, 1.1, 3.0, Shape::Sphere, 1.0).with_srgb_encoding(true);
    for r in [&a, &b] {
        r.write_uniforms(&queue, 0, &uniforms);
        r.write_uniforms(&queue, 1, &uniforms.with_originals(true));
    }
    let render = |draw: &dyn Fn(&mut wgpu::CommandEncoder, &wgpu::TextureView)| {
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        texset_shaders::render_rgba32f(&device, &queue, name, width, height, scope, |e, v| draw(e, v)).unwrap()
    };
    let whole = render(&|e, v| a.encode(e, v, width, height, 2));
    let banded = render(&|e, v| {
        for (rows, clear) in [(0..7, true), (7..8, false), (8..23, false), (23..height, false)] {
            a.encode_rows(e, v, [width, height], 2, rows, clear);
        }
    });
    assert!(whole.iter().any(|&x| x > 0.05), "the preview is blank");
    assert_eq!(whole, banded, "bands drawn one after another differ from one pass");
    // A/B: renderer A on the left, B on the right; each half equals that renderer's own pass.
    let ab = render(&|e, v| {
        texset_shaders::preview::encode_sides(e, v, [width, height], &[(&a, 0), (&b, 0)], 0..12, true);
        texset_shaders::preview::encode_sides(e, v, [width, height], &[(&a, 0), (&b, 0)], 12..height, false);
    });
    let b_whole = render(&|e, v| texset_shaders::preview::encode_sides(e, v, [width, height], &[(&b, 0), (&b, 0)], 0..height, true));
    let half = (width / 2) as usize;
    for y in 0..height as usize {
        let row = |image: &[f32], x0: usize| image[(y * width as usize + x0) * 4..(y * width as usize + x0 + half) * 4].to_vec();
        assert_eq!(row(&ab, 0), row(&whole, 0), "A/B: row {y} of side A differs from A's own pass");
        assert_eq!(row(&ab, half), row(&b_whole, half), "A/B: row {y} of side B differs from B's own pass");
    }
}
