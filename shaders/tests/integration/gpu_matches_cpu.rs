//! The WGSL decoder matches the CPU reference decoder on a small hand-built library: every map,
//! through every path (compute whole map, fragment shader, random-access samples), in both modes
//! (stored values and shading values).
#![allow(clippy::unwrap_used)]

use texset_core::model::wgsl::MlpShape;
use texset_core::{
    decode::{Decoder, unmap},
    model::{Activation, full_mip_count, level_size},
};
use texset_shaders::{DecodeMode, GpuDecoder, GpuModelOptions, model::DEFAULT_BLOCK, renders_fragment_format, request_device};
use texset_testkit::{
    gpu_or_skip, tiny_bundle, tiny_bundle_with_activation, tiny_bundle_with_corner_reads, tiny_bundle_with_four_grids,
    tiny_bundle_with_grouped_mips, tiny_bundle_with_mips,
};

/// Largest |a - b| per channel over two interleaved maps.
fn max_diff_per_channel(got: &[f32], want: &[f32], channels: usize) -> Vec<f32> {
    assert_eq!(got.len(), want.len());
    (0..channels)
        .map(|c| {
            got.iter().skip(c).step_by(channels).zip(want.iter().skip(c).step_by(channels)).fold(0.0f32, |m, (g, w)| m.max((g - w).abs()))
        })
        .collect()
}

// Tolerance: the GPU runs the same f32 math in the same order as the CPU reference; they differ
// only by FMA contraction, GPU division and sin/cos/pow precision: ~1e-6 measured, far below one
// 8-bit step (1/255 ≈ 3.9e-3), so 1e-4 still catches any real divergence (a wrong bit, weight or
// offset moves values by ≥ 1e-2).
const TOLERANCE: f32 = 1e-4;

#[test]
fn gpu_matches_cpu_reference() {
    let bundle = tiny_bundle();
    let Some((adapter, device, queue)) = gpu_or_skip("gpu_matches_cpu_reference", request_device().unwrap()) else {
        return;
    };
    let info = adapter.get_info();
    println!("adapter: {} ({:?}, {:?})", info.name, info.backend, info.device_type);
    let fragment = renders_fragment_format(&adapter);
    if !fragment {
        // The compute and sample paths still run, and the fragment path must refuse clearly.
        println!("PARTLY SKIPPED: {} cannot render to Rgba32Float: the fragment path of gpu_matches_cpu_reference did not run", info.name);
    }
    // Both code shapes of the hidden layers: the adapter runs its own, and the other is what a
    // GPU of the other kind is given.
    for shape in [MlpShape::Vec4Rows, MlpShape::Scalar] {
        println!("hidden layers in {}", shape.name());
        let gpu = GpuDecoder::with_options(&device, &bundle, GpuModelOptions { shape, ..GpuModelOptions::for_device(&device) }).unwrap();
        assert_eq!(gpu.model().shape, shape);
        check_reference(&device, &queue, &bundle, &gpu, fragment);
    }
    // The adapter's own block ran above (`DEFAULT_BLOCK`, four); two, and one texel alone, whose
    // block functions share no name with the one-texel ones (they once did: WGSL naga refused).
    assert_eq!(GpuModelOptions::for_device(&device).block, DEFAULT_BLOCK);
    for block in [1, 2] {
        println!("{block} texels a compute invocation");
        let gpu = GpuDecoder::with_options(&device, &bundle, GpuModelOptions { block, ..GpuModelOptions::for_device(&device) }).unwrap();
        assert_eq!(gpu.model().block, block);
        check_reference(&device, &queue, &bundle, &gpu, fragment);
    }
}

/// An `HGELUClamp` decoder (format version 6) through every path and both code shapes, against
/// the CPU reference: the activation's functions in the generated code.
#[test]
fn gpu_matches_cpu_reference_with_hgelu() {
    let bundle = tiny_bundle_with_activation(Activation::Hgelu);
    assert_eq!(bundle.manifest.activation(), Activation::Hgelu);
    let Some((adapter, device, queue)) = gpu_or_skip("gpu_matches_cpu_reference_with_hgelu", request_device().unwrap()) else {
        return;
    };
    let fragment = renders_fragment_format(&adapter);
    // The CPU reference of this bundle is not the ReLU one's: the test compares something new.
    let (relu, hgelu) = (Decoder::new(&tiny_bundle()), Decoder::new(&bundle));
    assert_ne!(relu.decode_map(0, 0).unwrap().values, hgelu.decode_map(0, 0).unwrap().values);
    for shape in [MlpShape::Vec4Rows, MlpShape::Scalar] {
        let gpu = GpuDecoder::with_options(&device, &bundle, GpuModelOptions { shape, ..GpuModelOptions::for_device(&device) }).unwrap();
        assert!(gpu.model().constants.contains("mlp_hgelu4_f32("), "the generated MLP applies HGELU");
        check_reference(&device, &queue, &bundle, &gpu, fragment);
    }
}

/// Four latent grids (the shape rates from 10 bits per texel get, decision 050), one of them
/// 2-bit, through every path and both code shapes, and every mip level of a chain, against the
/// CPU reference: the generated fetch reads each grid.
#[test]
fn gpu_matches_cpu_reference_with_four_grids() {
    let test = "gpu_matches_cpu_reference_with_four_grids";
    let Some((adapter, device, queue)) = gpu_or_skip(test, request_device().unwrap()) else {
        return;
    };
    let fragment = renders_fragment_format(&adapter);
    let bundle = tiny_bundle_with_four_grids(1);
    assert_eq!(bundle.manifest.grids.len(), 4);
    assert_eq!(bundle.manifest.mlp_inputs(), 3 + 2 + 1 + 2 + 8);
    for shape in [MlpShape::Vec4Rows, MlpShape::Scalar] {
        let gpu = GpuDecoder::with_options(&device, &bundle, GpuModelOptions { shape, ..GpuModelOptions::for_device(&device) }).unwrap();
        check_reference(&device, &queue, &bundle, &gpu, fragment);
    }
    check_mip_chain(&device, &queue, &tiny_bundle_with_four_grids(4));
}

/// A decoder that reads grid 0's four weighted corners (format version 7), with and without a
/// mip chain, through every path and both code shapes, against the CPU reference: the generated
/// fetch gives each corner its own input, masked by its channel's budget bit.
#[test]
fn gpu_matches_cpu_reference_with_corner_reads() {
    let test = "gpu_matches_cpu_reference_with_corner_reads";
    let Some((adapter, device, queue)) = gpu_or_skip(test, request_device().unwrap()) else {
        return;
    };
    let fragment = renders_fragment_format(&adapter);
    for mip_levels in [1, 4] {
        let bundle = tiny_bundle_with_corner_reads(mip_levels);
        assert!(bundle.manifest.grids[0].corners && !bundle.manifest.grids[1].corners);
        assert_eq!(bundle.manifest.mlp_inputs(), 4 * 3 + 2 + 8 + usize::from(mip_levels > 1));
        for shape in [MlpShape::Vec4Rows, MlpShape::Scalar] {
            let gpu =
                GpuDecoder::with_options(&device, &bundle, GpuModelOptions { shape, ..GpuModelOptions::for_device(&device) }).unwrap();
            assert!(gpu.model().constants.contains("let v0_3 = corners0.weights.w *"), "grid 0's corners are inputs of their own");
            check_reference(&device, &queue, &bundle, &gpu, fragment);
        }
    }
}

/// A decoder that reads its corners switches corner set where a texel's centre crosses a grid
/// cell's centre (its fraction wraps from 1 to 0 and each cell moves to another corner's columns),
/// so it is continuous there only where the four columns agree. A rasterised `uv` can fall an ulp
/// to either side of a centre the compute path's `(x + 0.5) / w` lands on exactly. Such a texel of
/// the fragment path (beyond the tolerance, on a centre line of `grid`) must be the CPU
/// reference's value an ulp-sized nudge to one side, and is then set to the reference's; the
/// texels off the centre lines stay held to the tolerance.
fn settle_corner_switches(
    cpu: &Decoder,
    (k, m): (usize, usize),
    got: &mut texset_core::decode::DecodedMap,
    want: &texset_core::decode::DecodedMap,
    grid: &texset_core::bundle::GridEntry,
) {
    const NUDGE: f32 = 1e-5;
    let channels = want.channels as usize;
    let on_centre = |t: f32, cells: u32| {
        let g = t * cells as f32 - 0.5;
        (g - g.round()).abs() < 1e-4
    };
    let (mut settled, mut on_lines) = (0, 0);
    for y in 0..want.height {
        for x in 0..want.width {
            let (u, v) = ((x as f32 + 0.5) / want.width as f32, (y as f32 + 0.5) / want.height as f32);
            let at = (y * want.width + x) as usize * channels;
            let off = (0..channels).any(|c| (got.values[at + c] - want.values[at + c]).abs() > TOLERANCE);
            let (on_u, on_v) = (on_centre(u, grid.width), on_centre(v, grid.height));
            on_lines += usize::from(on_u || on_v);
            if !off {
                continue;
            }
            assert!(on_u || on_v, "texel ({x}, {y}) differs off every grid-cell centre line");
            let nudged = [-NUDGE, 0.0, NUDGE].iter().flat_map(|&du| [-NUDGE, 0.0, NUDGE].map(move |dv| (du, dv))).any(|(du, dv)| {
                let mut t = [0.0; 4];
                cpu.decode_texel(k, m, u + du, v + dv, &mut t).unwrap();
                (0..channels).all(|c| (got.values[at + c] - t[c]).abs() <= 10.0 * TOLERANCE)
            });
            assert!(nudged, "texel ({x}, {y}) on a grid-cell centre line is neither side's decode");
            got.values[at..at + channels].copy_from_slice(&want.values[at..at + channels]);
            settled += 1;
        }
    }
    println!("fragment path: {settled} texels on a corner switch settled ({on_lines} on the centre lines)");
}

/// Every map of `bundle` through every path of `gpu` against the CPU reference.
fn check_reference(device: &wgpu::Device, queue: &wgpu::Queue, bundle: &texset_core::bundle::Bundle, gpu: &GpuDecoder, fragment: bool) {
    let cpu = Decoder::new(bundle);
    let mut worst = 0.0f32;
    for (k, material) in bundle.manifest.materials.iter().enumerate() {
        for (m, entry) in material.maps.iter().enumerate() {
            let name = format!("{}/{}", material.name, entry.info.kind);
            let want = cpu.decode_map(k, m).unwrap();
            let channels = want.channels as usize;
            // Stored values: compute and fragment paths.
            let mut paths = vec![("compute", gpu.decode_map(device, queue, k, m, DecodeMode::Stored).unwrap())];
            if fragment {
                paths.push(("fragment", gpu.decode_map_fragment(device, queue, k, m, DecodeMode::Stored).unwrap()));
            } else {
                // Not a panic or a wrong picture: an error that says why.
                let error = gpu.decode_map_fragment(device, queue, k, m, DecodeMode::Stored).unwrap_err().to_string();
                assert!(error.contains("fragment decode path"), "{error}");
            }
            for (path, mut got) in paths {
                assert_eq!((got.width, got.height, got.channels), (want.width, want.height, want.channels));
                if path == "fragment" && bundle.manifest.grids[0].corners {
                    settle_corner_switches(&cpu, (k, m), &mut got, &want, &bundle.manifest.grids[0]);
                }
                let diffs = max_diff_per_channel(&got.values, &want.values, channels);
                println!("{name} {path}: max |gpu - cpu| per channel = {diffs:?}");
                for d in diffs {
                    worst = worst.max(d);
                    assert!(d <= TOLERANCE, "{name} {path}: GPU differs from the CPU reference by {d}");
                }
            }
            // Shading values: whole map (compute) against `unmap` of the CPU decode.
            let shaded = gpu.decode_map(device, queue, k, m, DecodeMode::Shading).unwrap();
            let mut want_shaded = Vec::with_capacity(want.values.len());
            for texel in want.values.chunks_exact(channels) {
                let mut t = [0.0; 4];
                t[..channels].copy_from_slice(texel);
                want_shaded.extend_from_slice(&unmap(entry, t)[..channels]);
            }
            let diffs = max_diff_per_channel(&shaded.values, &want_shaded, channels);
            println!("{name} shading: max |gpu - cpu| per channel = {diffs:?}");
            for d in diffs {
                // Float ranges scale the error by (high - low) = 3 at most here.
                assert!(d <= 3.0 * TOLERANCE, "{name} shading: GPU differs from the CPU reference by {d}");
            }
            // Random access: off-centre samples, including the edges and outside [0, 1].
            let uvs: Vec<[f32; 2]> = (0..257)
                .map(|i| {
                    let t = i as f32 / 256.0;
                    [t * 1.1 - 0.05, (t * 7.3).fract()]
                })
                .collect();
            for mode in [DecodeMode::Stored, DecodeMode::Shading] {
                let got = gpu.decode_samples(device, queue, k, m, &uvs, mode).unwrap();
                assert_eq!(got.len(), uvs.len());
                for (g, [u, v]) in got.iter().zip(&uvs) {
                    let want = match mode {
                        DecodeMode::Stored => {
                            let mut t = [0.0; 4];
                            cpu.decode_texel(k, m, *u, *v, &mut t).unwrap();
                            t
                        }
                        DecodeMode::Shading => cpu.decode_texel_linear(k, m, *u, *v).unwrap(),
                    };
                    for c in 0..4 {
                        let d = (g[c] - want[c]).abs();
                        assert!(d <= 3.0 * TOLERANCE, "{name} sample ({u}, {v}) {mode:?} channel {c}: gpu {} cpu {}", g[c], want[c]);
                    }
                }
            }
        }
    }
    println!("worst stored-value difference: {worst:e}");
    // Out-of-range requests are errors, not panics.
    assert!(gpu.decode_map(device, queue, 2, 0, DecodeMode::Stored).is_err());
    assert!(gpu.decode_map(device, queue, 0, 2, DecodeMode::Stored).is_err());
}

#[test]
fn gpu_matches_cpu_at_every_mip_level_and_lod() {
    // 13x11 is the largest map: 4 levels (13x11, 6x5, 3x2, 1x1). The grouped chain: 2 pyramid
    // levels of 2 mip levels each (mips 0-1 read level 0's grids, 2-3 pyramid level 1's).
    let Some((_, device, queue)) = gpu_or_skip("gpu_matches_cpu_at_every_mip_level_and_lod", request_device().unwrap()) else {
        return;
    };
    for bundle in [tiny_bundle_with_mips(4), tiny_bundle_with_grouped_mips(4, 2)] {
        check_mip_chain(&device, &queue, &bundle);
    }
}

fn check_mip_chain(device: &wgpu::Device, queue: &wgpu::Queue, bundle: &texset_core::bundle::Bundle) {
    let group = bundle.manifest.mip_group;
    let cpu = Decoder::new(bundle);
    let gpu = GpuDecoder::new(device, bundle).unwrap();
    for (k, material) in bundle.manifest.materials.iter().enumerate() {
        for (m, entry) in material.maps.iter().enumerate() {
            let name = format!("{}/{} (mip group {group})", material.name, entry.info.kind);
            let levels = cpu.map_mip_levels(k, m).unwrap();
            assert_eq!(levels, full_mip_count(entry.info.width, entry.info.height));
            for level in 0..levels {
                let want = cpu.decode_map_level(k, m, level).unwrap();
                let got = gpu.decode_map_level(device, queue, k, m, level, DecodeMode::Stored).unwrap();
                assert_eq!((got.width, got.height), level_size(entry.info.width, entry.info.height, level));
                assert_eq!((got.width, got.height, got.channels), (want.width, want.height, want.channels));
                let diffs = max_diff_per_channel(&got.values, &want.values, want.channels as usize);
                println!("{name} level {level} ({}x{}): max |gpu - cpu| per channel = {diffs:?}", got.width, got.height);
                for d in diffs {
                    assert!(d <= TOLERANCE, "{name} level {level}: GPU differs from the CPU reference by {d}");
                }
                // Each level reads its own latents: level 1 at level 0's size is not level 0.
                if level == 1 {
                    let level1_full: Vec<f32> = {
                        let mut t = [0.0; 4];
                        cpu.decode_texel_lod(k, m, 0.3, 0.6, 1.0, &mut t).unwrap();
                        t.to_vec()
                    };
                    let mut t0 = [0.0; 4];
                    cpu.decode_texel_lod(k, m, 0.3, 0.6, 0.0, &mut t0).unwrap();
                    assert_ne!(level1_full, t0.to_vec(), "{name}: level 1 decodes like level 0");
                }
            }
            // Fractional and out-of-range LODs through `decode_texel_lod`, both modes.
            let uvs: Vec<[f32; 2]> = (0..129).map(|i| [i as f32 / 128.0, (i as f32 * 0.37).fract()]).collect();
            for lod in [0.0, 0.4, 1.5, 2.75, 9.0, -1.0] {
                for mode in [DecodeMode::Stored, DecodeMode::Shading] {
                    let got = gpu.decode_samples_lod(device, queue, k, m, &uvs, lod, mode).unwrap();
                    for (g, [u, v]) in got.iter().zip(&uvs) {
                        let mut t = [0.0; 4];
                        cpu.decode_texel_lod(k, m, *u, *v, lod, &mut t).unwrap();
                        let want = match mode {
                            DecodeMode::Stored => t,
                            DecodeMode::Shading => unmap(entry, t),
                        };
                        for c in 0..4 {
                            let d = (g[c] - want[c]).abs();
                            assert!(d <= 3.0 * TOLERANCE, "{name} lod {lod} ({u}, {v}) {mode:?} channel {c}: gpu {} cpu {}", g[c], want[c]);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn gpu_matches_cpu_in_every_weight_format() {
    use texset_core::model::WeightFormat;
    let Some((_, device, queue)) = gpu_or_skip("gpu_matches_cpu_in_every_weight_format", request_device().unwrap()) else {
        return;
    };
    let int8 = Decoder::new(&tiny_bundle());
    for format in WeightFormat::ALL {
        let bundle = texset_testkit::tiny_bundle_in(format);
        // Through the bytes: what a bundle file holds decodes the same.
        let bundle = texset_core::bundle::Bundle::from_bytes(&bundle.to_bytes().unwrap().0).unwrap();
        assert!(bundle.layers.iter().all(|l| l.format == format));
        let cpu = Decoder::new(&bundle);
        let gpu = GpuDecoder::new(&device, &bundle).unwrap();
        let (mut worst, mut from_int8) = (0.0f32, 0.0f32);
        for (k, material) in bundle.manifest.materials.iter().enumerate() {
            for m in 0..material.maps.len() {
                let want = cpu.decode_map(k, m).unwrap();
                let got = gpu.decode_map(&device, &queue, k, m, DecodeMode::Stored).unwrap();
                for d in max_diff_per_channel(&got.values, &want.values, want.channels as usize) {
                    worst = worst.max(d);
                }
                let reference = int8.decode_map(k, m).unwrap();
                for d in max_diff_per_channel(&want.values, &reference.values, want.channels as usize) {
                    from_int8 = from_int8.max(d);
                }
            }
        }
        println!("{format:?}: max |gpu - cpu| {worst:e}; max |{format:?} - int8| (CPU) {from_int8:e}");
        assert!(worst <= TOLERANCE, "{format:?}: GPU differs from the CPU reference by {worst}");
        // Each format requantises the int8 weights: its decode stays close to theirs.
        assert!(from_int8 < 0.1, "{format:?} is far from the int8 weights it came from: {from_int8}");
    }
}

/// A decoder as wide as training accepts (`MAX_MLP_WIDTH`: the shader's activation array at its
/// full `2 × 512` f32) runs on the GPU, not only through naga, and matches the CPU reference.
///
/// The second layer is narrow on purpose: lavapipe (llvmpipe's LLVM back end) stops the loops
/// of a shader function after about 65,535 iterations in all (Mesa's
/// `LP_MAX_TGSI_LOOP_ITERATIONS`), and the decode runs one loop iteration per multiply-add.
/// Measured there: 512→64 (54k per texel) and 400→100 (56k) match to 2e-6; 256→256 (73k) and
/// five layers of 128 (71k) come out wrong. Hardware GPUs have no such limit; the 512→512 layout
/// is checked without a device in export.rs.
#[test]
fn gpu_matches_cpu_at_the_widest_decoder() {
    let Some((_, device, queue)) = gpu_or_skip("gpu_matches_cpu_at_the_widest_decoder", request_device().unwrap()) else {
        return;
    };
    let widest = texset_core::model::MAX_MLP_WIDTH as u32;
    let bundle = texset_testkit::tiny_bundle_with_widths(&[widest, 64]);
    let cpu = Decoder::new(&bundle);
    // Two texels an invocation, not four: the width is what this test is about, and lavapipe
    // compiled this decoder in 34 s at two against 75 s at four (Mesa 22.3, `GALLIVM_PERF=nopt`,
    // alone on 2 cores). Every block decodes the same per texel (`gpu_matches_cpu_reference`).
    let gpu = GpuDecoder::with_options(&device, &bundle, GpuModelOptions { block: 2, ..GpuModelOptions::for_device(&device) }).unwrap();
    for (k, material) in bundle.manifest.materials.iter().enumerate() {
        for m in 0..material.maps.len() {
            let want = cpu.decode_map(k, m).unwrap();
            let got = gpu.decode_map(&device, &queue, k, m, DecodeMode::Stored).unwrap();
            for d in max_diff_per_channel(&got.values, &want.values, want.channels as usize) {
                // The same tolerance: 512-term sums in another order add ~1e-6, not 1e-4.
                assert!(d <= TOLERANCE, "{}/{}: GPU differs from the CPU reference by {d}", material.name, material.maps[m].info.kind);
            }
        }
    }
}

/// Large positional-encoding angles: with 10 frequencies over the tiny bundle's 9-wide grid 0
/// the highest reaches about 14,500 rad, where a GPU's own sin/cos are far off without the
/// decoder's angle reduction (`pe_sin_cos`, model.wgsl). Every map, through compute and samples,
/// within 1/255 of the CPU reference (libm); the largest difference is printed.
#[test]
fn gpu_matches_cpu_at_large_pe_angles() {
    let bundle = texset_testkit::tiny_bundle_with_pe_frequencies(10);
    let cpu = Decoder::new(&bundle);
    let Some((_, device, queue)) = gpu_or_skip("gpu_matches_cpu_at_large_pe_angles", request_device().unwrap()) else {
        return;
    };
    let gpu = GpuDecoder::new(&device, &bundle).unwrap();
    let highest_angle = std::f32::consts::PI * 512.0 * bundle.manifest.grids[0].width as f32;
    assert!(highest_angle >= 4096.0, "the test must reach 4,096 rad, reaches {highest_angle}");
    let uvs: Vec<[f32; 2]> = (0..997).map(|i| [(i as f32 * 0.618_034).fract(), (i as f32 * 0.414_213_5).fract()]).collect();
    let mut worst = 0.0f32;
    for (k, material) in bundle.manifest.materials.iter().enumerate() {
        for (m, _) in material.maps.iter().enumerate() {
            let want = cpu.decode_map(k, m).unwrap();
            let got = gpu.decode_map(&device, &queue, k, m, DecodeMode::Stored).unwrap();
            worst = max_diff_per_channel(&got.values, &want.values, want.channels as usize).into_iter().fold(worst, f32::max);
            let samples = gpu.decode_samples(&device, &queue, k, m, &uvs, DecodeMode::Stored).unwrap();
            for (&[u, v], g) in uvs.iter().zip(&samples) {
                let mut want = [0.0f32; 4];
                cpu.decode_texel(k, m, u, v, &mut want).unwrap();
                for c in 0..want.len().min(material.maps[m].info.channels as usize) {
                    worst = worst.max((g[c] - want[c]).abs());
                }
            }
        }
    }
    println!("large PE angles: max |gpu - cpu| = {worst}");
    assert!(worst <= 1.0 / 255.0, "GPU differs from the CPU reference by {worst} at large angles");
}

/// The bundles a precision's test decodes: the two small hand-built ones, the pinned trained
/// `fused_mips_learned.texset` (three materials, a mip chain, learned budgets), and the bundles
/// the environment variable `env` names (colon-separated paths), e.g. fully trained ones of
/// ../shared/textures to measure (docs/integration.md).
fn precision_bundles(env: &str) -> Vec<(String, texset_core::bundle::Bundle)> {
    let read = |path: &std::path::Path| texset_core::bundle::Bundle::from_bytes(&std::fs::read(path).unwrap()).unwrap();
    let pinned = texset_testkit::repo_root().join("tests/data/pinned/fused_mips_learned.texset");
    let mut bundles = vec![
        ("tiny".to_owned(), tiny_bundle()),
        ("tiny with mips".to_owned(), tiny_bundle_with_mips(4)),
        ("tiny, hgelu".to_owned(), tiny_bundle_with_activation(Activation::Hgelu)),
        ("tiny, corner reads".to_owned(), tiny_bundle_with_corner_reads(1)),
        ("tiny, corner reads, mips".to_owned(), tiny_bundle_with_corner_reads(4)),
    ];
    bundles.push(("fused_mips_learned".to_owned(), read(&pinned)));
    for path in std::env::var(env).unwrap_or_default().split(':').filter(|p| !p.is_empty()) {
        bundles.push((path.to_owned(), read(std::path::Path::new(path))));
    }
    bundles
}

/// The `f16` path (`MlpPrecision::F16`, where the adapter has `SHADER_F16`) stays within one 8-bit
/// step (1/255) of the CPU reference on every map and mip level, in both code shapes: on the
/// small hand-built bundles and on a trained one of the sample library (the pinned
/// `fused_mips_learned.texset`: three materials, a mip chain, learned budgets), and on the bundles
/// `TEXSET_F16_BUNDLES` names (colon-separated paths).
#[test]
fn gpu_matches_cpu_in_f16_within_one_step() {
    use texset_core::model::wgsl::MlpPrecision;
    const ONE_STEP: f32 = 1.0 / 255.0;
    // What docs/integration.md says `f16` trades: up to two 8-bit steps (measured: 0.65 of a step
    // on the pinned bundle, 1.05 on a fully trained `painted_wooden_cabinet`).
    const F16_TOLERANCE: f32 = 2.0 * ONE_STEP;
    let test = "gpu_matches_cpu_in_f16_within_one_step";
    let Some((adapter, device, queue)) = gpu_or_skip(test, request_device().unwrap()) else {
        return;
    };
    if !device.features().contains(wgpu::Features::SHADER_F16) {
        texset_testkit::skip(test, &format!("{} has no SHADER_F16", adapter.get_info().name));
        return;
    }
    let mut worst = 0.0f32;
    for (what, bundle) in precision_bundles("TEXSET_F16_BUNDLES") {
        let cpu = Decoder::new(&bundle);
        for shape in [MlpShape::Vec4Rows, MlpShape::Scalar] {
            let options = GpuModelOptions { shape, precision: MlpPrecision::F16, ..GpuModelOptions::for_device(&device) };
            let gpu = GpuDecoder::with_options(&device, &bundle, options).unwrap();
            assert!(gpu.model().wgsl().starts_with("enable f16;"));
            let mut here = 0.0f32;
            for (k, material) in bundle.manifest.materials.iter().enumerate() {
                for m in 0..material.maps.len() {
                    for level in 0..cpu.map_mip_levels(k, m).unwrap() {
                        let want = cpu.decode_map_level(k, m, level).unwrap();
                        let got = gpu.decode_map_level(&device, &queue, k, m, level, DecodeMode::Stored).unwrap();
                        for d in max_diff_per_channel(&got.values, &want.values, want.channels as usize) {
                            here = here.max(d);
                        }
                    }
                }
            }
            println!("{what}, f16, {}: max |gpu - cpu| {here:e} ({:.3} of a step)", shape.name(), here / ONE_STEP);
            assert!(here <= F16_TOLERANCE, "{what} ({}): the f16 decode differs from the CPU reference by {here}", shape.name());
            // f16 is not f32: a path that silently ran in f32 would show no difference at all.
            assert!(here > 0.0, "{what}: no difference from f32 at all");
            worst = worst.max(here);
        }
    }
    println!("worst f16 difference: {worst:e}");
    // A device made without `SHADER_F16` is refused f16 by name, not with a shader error.
    let (plain, _) = texset_shaders::block_on(adapter.request_device(&wgpu::DeviceDescriptor::default())).unwrap();
    let options = GpuModelOptions { precision: MlpPrecision::F16, ..GpuModelOptions::for_device(&plain) };
    let refused = GpuDecoder::with_options(&plain, &tiny_bundle(), options).err().map(|e| e.to_string());
    assert!(refused.as_deref().is_some_and(|e| e.contains("SHADER_F16")), "{refused:?}");
}

/// The packed-int8 path (`MlpPrecision::Int8`: int8 activations, `dot4I8Packed`) computes what its
/// CPU twin (`Decoder::int8_twin`) computes, on every map and mip level, in the adapter's code
/// shape, on the small hand-built bundles, the pinned trained `fused_mips_learned.texset`, and the
/// bundles `TEXSET_INT8_BUNDLES` names (colon-separated paths). It prints how far both are from
/// the `f32` CPU reference: what docs/integration.md says int8 trades.
#[test]
fn gpu_matches_its_cpu_twin_in_int8() {
    use texset_core::model::wgsl::MlpPrecision;
    const ONE_STEP: f32 = 1.0 / 255.0;
    // The GPU and the twin round the same activations; they differ by GPU division (2.5 ulp) and
    // FMA contraction, which now and then moves an activation across a rounding boundary, one
    // code of 255.
    const TWIN_TOLERANCE: f32 = 0.25 * ONE_STEP;
    let test = "gpu_matches_its_cpu_twin_in_int8";
    let Some((_, device, queue)) = gpu_or_skip(test, request_device().unwrap()) else {
        return;
    };
    for (what, bundle) in precision_bundles("TEXSET_INT8_BUNDLES") {
        let (reference, twin) = (Decoder::new(&bundle), Decoder::int8_twin(&bundle));
        let options = GpuModelOptions { precision: MlpPrecision::Int8, ..GpuModelOptions::for_device(&device) };
        let gpu = GpuDecoder::with_options(&device, &bundle, options).unwrap();
        assert!(gpu.model().wgsl().starts_with(MlpPrecision::Int8.enable()));
        let (mut from_twin, mut from_f32, mut squares, mut values) = (0.0f32, 0.0f32, 0.0f64, 0usize);
        for (k, material) in bundle.manifest.materials.iter().enumerate() {
            for m in 0..material.maps.len() {
                for level in 0..reference.map_mip_levels(k, m).unwrap() {
                    let got = gpu.decode_map_level(&device, &queue, k, m, level, DecodeMode::Stored).unwrap();
                    let want = twin.decode_map_level(k, m, level).unwrap();
                    let exact = reference.decode_map_level(k, m, level).unwrap();
                    let channels = want.channels as usize;
                    from_twin = max_diff_per_channel(&got.values, &want.values, channels).into_iter().fold(from_twin, f32::max);
                    from_f32 = max_diff_per_channel(&want.values, &exact.values, channels).into_iter().fold(from_f32, f32::max);
                    squares += want.values.iter().zip(&exact.values).map(|(a, b)| f64::from(a - b).powi(2)).sum::<f64>();
                    values += want.values.len();
                }
            }
        }
        let rms = (squares / values.max(1) as f64).sqrt() as f32;
        println!(
            "{what}, int8: max |gpu - twin| {from_twin:e} ({:.3} of a step); the twin from f32: max {:.3} steps, RMS {:.3} steps",
            from_twin / ONE_STEP,
            from_f32 / ONE_STEP,
            rms / ONE_STEP
        );
        assert!(from_twin <= TWIN_TOLERANCE, "{what}: the int8 GPU decode differs from its CPU twin by {from_twin}");
        // int8 is not f32: a twin that silently ran in f32 would show no difference at all.
        assert!(from_f32 > 0.0, "{what}: the int8 twin equals f32 exactly");
    }
}
