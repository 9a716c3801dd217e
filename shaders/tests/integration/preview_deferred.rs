//! The preview's three passes (surface, material into a G-buffer, then shading; what the studio
//! draws) give
//! the one-pass `fs_preview`'s image, for every shape, both materials of the tiny library, the
//! LOD filter and the original maps; and lights moved after the material pass (the G-buffer kept)
//! give the one-pass image under the moved lights. The originals' material pass reaches no
//! decoder, so it compiles in a moment where the decoder takes minutes.
#![allow(clippy::unwrap_used)]

use texset_core::bundle::Bundle;
use texset_shaders::model::GpuModel;
use texset_shaders::preview::{
    GBuffer, Layout, MaterialRenderer, Originals, PreparedMaterial, PreviewRenderer, PreviewUniforms, ShadePass, Shape, SurfacePass,
    encode_material, preview_wgsl, render_deferred,
};
use texset_shaders::render_rgba32f;
use texset_testkit::{tiny_bundle, tiny_bundle_with_mips};

/// Original maps for material `m` of `bundle`: a pattern per map at its size.
pub(crate) fn originals_of(bundle: &Bundle, m: usize) -> Originals {
    let data: Vec<(u32, u32, u32, Vec<f32>)> = bundle.manifest.materials[m]
        .maps
        .iter()
        .enumerate()
        .map(|(k, e)| {
            let (w, h, c) = (e.info.width, e.info.height, e.info.channels);
            let values = (0..w * h * c).map(|i| (i as f32 * 0.37 + k as f32 * 0.11).sin() * 0.5 + 0.5).collect();
            (w, h, c, values)
        })
        .collect();
    let maps: Vec<(u32, u32, u32, &[f32])> = data.iter().map(|(w, h, c, v)| (*w, *h, *c, v.as_slice())).collect();
    Originals::from_maps(&maps)
}

#[test]
fn two_pass_preview_equals_one_pass_and_relights_its_g_buffer() {
    let name = "two_pass_preview_equals_one_pass_and_relights_its_g_buffer";
    let Some((_, device, queue)) = super::rendering_gpu_or_skip(name) else {
        return;
    };
    let format = wgpu::TextureFormat::Rgba32Float;
    let shade = ShadePass::new(&device, format);
    let surface = SurfacePass::new(&device);
    let (width, height) = (40, 32);
    let mut checked = 0;
    for (bundle, lod_filter) in [(tiny_bundle(), false), (tiny_bundle_with_mips(3), true)] {
        let mut one = PreviewRenderer::new(&device, &bundle, format).unwrap();
        let mut two = MaterialRenderer::from_prepared(&device, PreparedMaterial::new(&device, &bundle, None).unwrap());
        for material in 0..bundle.manifest.materials.len() {
            let originals = originals_of(&bundle, material);
            one.set_originals(&device, &queue, &originals).unwrap();
            two.set_originals(&device, &queue, &originals).unwrap();
            for shape in [Shape::Sphere, Shape::Plane, Shape::Cube] {
                for from_originals in [false, true] {
                    let at = |angle: f32| {
                        let mut u = PreviewUniforms::new(&bundle.manifest, material, angle, 3.0, shape, width as f32 / height as f32)
                            .with_srgb_encoding(true)
                            .with_originals(from_originals);
                        if lod_filter {
                            u = u.with_lod_filter(height as f32);
                        }
                        u
                    };
                    let (before, after) = (at(0.7), at(2.2));
                    one.write_uniforms(&queue, 0, &after);
                    let want = one.render(&device, &queue, width, height).unwrap();
                    // The G-buffer decoded under the first lights, shaded under the second.
                    two.write_uniforms(&queue, 0, &before);
                    surface.write_uniforms(&queue, 0, &before);
                    shade.write_uniforms(&queue, 0, &after);
                    let got = render_deferred(&device, &queue, &two, (&surface, &shade), None, [width, height]).unwrap();
                    // Shaded in three bands of rows (the studio lights a software GPU's image
                    // so, each band a scene of its own), the image is the same to the bit.
                    let gbuffer = GBuffer::new(&device, [width, height]);
                    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
                    let banded = render_rgba32f(&device, &queue, "banded", width, height, scope, |encoder, view| {
                        surface.encode(&device, encoder, &gbuffer, (Layout::One, None), None);
                        encode_material(&device, encoder, &gbuffer, (&[(&two, 0)], Layout::One), 0..height, None);
                        for (band, rows) in [0..11, 11..23, 23..height].into_iter().enumerate() {
                            shade.encode_rows(&device, encoder, view, &gbuffer, Layout::One, rows, (band == 0, None));
                        }
                    })
                    .unwrap();
                    assert!(banded == got, "material {material} {shape:?}: the banded shading differs from the whole");
                    let worst = want.iter().zip(&got).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
                    println!("material {material} {shape:?} originals {from_originals} lod {lod_filter}: max |two - one| {worst:.2e}");
                    assert!(worst <= 1e-5, "material {material} {shape:?} (originals {from_originals}): the passes differ by {worst}");
                    assert!(want.iter().any(|&x| x > 0.05), "the preview is blank");
                    one.write_uniforms(&queue, 0, &before);
                    let unmoved = one.render(&device, &queue, width, height).unwrap();
                    let moved = unmoved.iter().zip(&want).map(|(a, b)| (a - b).abs()).sum::<f32>() / want.len() as f32;
                    assert!(moved > 1e-3, "moving the lights changed nothing ({moved})");
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 2 * 2 * 3 * 2);
}

/// The functions an entry point of `wgsl` reaches (naga's compaction with only that entry point
/// kept).
fn reached(wgsl: &str, entry: &str) -> Vec<String> {
    let mut module = naga::front::wgsl::parse_str(wgsl).unwrap();
    module.entry_points.retain(|e| e.name == entry);
    assert_eq!(module.entry_points.len(), 1, "{entry} is not an entry point");
    naga::compact::compact(&mut module, naga::compact::KeepUnused::No);
    module.functions.iter().filter_map(|(_, f)| f.name.clone()).collect()
}

#[test]
fn the_originals_material_pass_reaches_no_decoder() {
    let wgsl = preview_wgsl(&GpuModel::new(&tiny_bundle()).unwrap());
    let decoder = ["mlp_hidden", "decode_hidden"];
    let decoded = reached(&wgsl, "fs_material");
    for f in decoder {
        assert!(decoded.iter().any(|g| g == f), "fs_material does not reach {f}: {decoded:?}");
    }
    let originals = reached(&wgsl, "fs_material_originals");
    assert!(originals.iter().any(|g| g == "unmap_texel"), "{originals:?}");
    for f in decoder {
        assert!(!originals.iter().any(|g| g == f), "fs_material_originals reaches the decoder's {f}");
    }
}
