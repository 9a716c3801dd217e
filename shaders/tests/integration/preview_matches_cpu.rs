//! The studio's PBR preview shader (preview.wgsl, decoding the material per pixel) matches its
//! CPU reference `texset_shaders::preview::shade`, for every shape and both materials of the
//! tiny library; the image is not blank and changes as the lights move.
#![allow(clippy::unwrap_used)]

use crate::common::tiny_bundle;
use texset_core::Decoder;
use texset_shaders::preview::{PreviewRenderer, PreviewUniforms, Shape, shade};
use texset_shaders::request_device;

const SLOT_KINDS: [&str; 7] = ["basecolor", "normal", "roughness", "metallic", "ao", "orm", "emissive"];

#[test]
fn preview_matches_cpu_reference_and_moves_with_the_lights() {
    let bundle = tiny_bundle();
    let cpu = Decoder::new(&bundle);
    let Some((adapter, device, queue)) = request_device().unwrap() else {
        println!("SKIPPED: no wgpu adapter (no GPU or software Vulkan driver): preview_matches_cpu_reference did not run");
        return;
    };
    println!("adapter: {}", adapter.get_info().name);
    let mut renderer = PreviewRenderer::new(&device, &bundle, wgpu::TextureFormat::Rgba32Float).unwrap();
    // Switching to the same bundle keeps working (the studio does this for every snapshot).
    renderer.set_bundle(&device, &bundle).unwrap();
    let (width, height) = (48u32, 40u32);
    let aspect = width as f32 / height as f32;
    for material in 0..bundle.manifest.materials.len() {
        let maps = &bundle.manifest.materials[material].maps;
        let fetch = |slot: usize, uv: [f32; 2]| {
            let i = maps.iter().position(|e| e.kind.token() == SLOT_KINDS[slot])?;
            Some(cpu.decode_texel_linear(material, i, uv[0], uv[1]).unwrap())
        };
        for shape in [Shape::Sphere, Shape::Plane, Shape::Cube] {
            let uniforms = PreviewUniforms::new(&bundle.manifest, material, 0.7, 3.0, shape, aspect).with_srgb_encoding(true);
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
            println!("material {material} {shape:?}: median |gpu - cpu| {median:.2e}, {off} of {} pixels above 2e-3", diffs.len());
            // Pixels on a silhouette may hit on one side and miss on the other (f32 rounding of
            // the ray); everything else agrees to float precision.
            assert!(median < 1e-4, "median difference {median}");
            assert!(off * 50 <= diffs.len(), "{off} pixels differ");

            // Not blank: lit pixels vary; and the lights moving changes the picture.
            let lum: Vec<f32> = gpu.chunks_exact(4).map(|p| p[0] + p[1] + p[2]).collect();
            let mean = lum.iter().sum::<f32>() / lum.len() as f32;
            let var = lum.iter().map(|l| (l - mean).powi(2)).sum::<f32>() / lum.len() as f32;
            assert!(var > 1e-4, "the render is flat (variance {var})");
            let moved = PreviewUniforms::new(&bundle.manifest, material, 2.2, 3.0, shape, aspect).with_srgb_encoding(true);
            renderer.write_uniforms(&queue, 0, &moved);
            let after = renderer.render(&device, &queue, width, height).unwrap();
            let change = gpu.iter().zip(&after).map(|(a, b)| (a - b).abs()).sum::<f32>() / gpu.len() as f32;
            assert!(change > 1e-3, "moving the lights changed nothing ({change})");
        }
    }
}
