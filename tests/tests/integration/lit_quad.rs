//! The runtime example (`shaders/examples/lit_quad.rs`): a bundle trained from the bricks sample
//! rendered as one lit quad with the decoder in the fragment shader, on whatever adapter there is
//! (lavapipe in CI), compared with the same picture from the CPU reference decoder. The renders
//! are kept in `target/ci-artifacts/lit_quad/` (CI's artifact folder).
#![allow(clippy::unwrap_used)]

use texset_core::{
    Cancel, NoProgress, compress,
    options::{CompressOptions, ScheduleConfig},
    set::load_library,
};

#[path = "../../../shaders/examples/lit_quad.rs"]
#[allow(dead_code)] // Its `main` and argument parsing are the example's, not the test's.
mod example;

fn luminance(p: &[f32]) -> f32 {
    0.2126 * p[0] + 0.7152 * p[1] + 0.0722 * p[2]
}

#[test]
fn lit_quad_example_renders_the_bundle_as_the_cpu_reference_does() {
    let (set, _) = load_library(&[texset_testkit::repo_root().join("sample_textures/bricks")]).unwrap();
    let options = CompressOptions { schedule: ScheduleConfig { steps: 150, seed: 3, ..Default::default() }, ..CompressOptions::default() };
    let bundle = compress(&set, &options, &NoProgress, &Cancel::new()).unwrap().bundle;
    // Through the file format, as an engine gets it.
    let bundle = texset_core::bundle::Bundle::from_bytes(&bundle.to_bytes().unwrap().0).unwrap();

    let size = 128u32;
    let cpu = example::render_cpu(&bundle, 0, size).unwrap();
    let Some(gpu) = example::render_gpu(&bundle, 0, size).unwrap() else {
        // Without the GPU half nothing is compared: the whole test is skipped.
        texset_testkit::skip_gpu(
            "lit_quad_example_renders_the_bundle_as_the_cpu_reference_does",
            "no wgpu adapter that renders to Rgba32Float (apt-get install mesa-vulkan-drivers for lavapipe)",
        );
        return;
    };
    let artifacts = texset_testkit::repo_root().join("target/ci-artifacts/lit_quad");
    std::fs::create_dir_all(&artifacts).unwrap();
    std::fs::write(artifacts.join("gpu.png"), example::to_png(&gpu, size).unwrap()).unwrap();
    std::fs::write(artifacts.join("cpu.png"), example::to_png(&cpu, size).unwrap()).unwrap();

    // The quad is there, in perspective (wider at the bottom, near the camera), and lit: not flat.
    let background = |p: &[f32]| p[..3] == [0.1, 0.1, 0.12];
    let row_coverage = |y: u32| (0..size).filter(|&x| !background(&gpu[((y * size + x) * 4) as usize..][..4])).count();
    let covered = (0..size).map(row_coverage).sum::<usize>() as f32 / (size * size) as f32;
    println!("the quad covers {:.1}% of the frame", covered * 100.0);
    assert!((0.2..0.95).contains(&covered), "coverage {covered}");
    let (top, bottom) = ((0..size).find(|&y| row_coverage(y) > 0).unwrap(), (0..size).rev().find(|&y| row_coverage(y) > 0).unwrap());
    assert!(row_coverage(bottom - 1) > row_coverage(top + 1), "no perspective: {} vs {}", row_coverage(bottom - 1), row_coverage(top + 1));
    let lum: Vec<f32> = gpu.chunks_exact(4).filter(|p| !background(p)).map(luminance).collect();
    let mean = lum.iter().sum::<f32>() / lum.len() as f32;
    let std = (lum.iter().map(|l| (l - mean).powi(2)).sum::<f32>() / lum.len() as f32).sqrt();
    println!("quad luminance (encoded): mean {mean:.3}, std {std:.3}");
    assert!(mean > 0.05 && std > 0.02, "a flat or black quad: mean {mean}, std {std}");

    // GPU and CPU agree pixel for pixel, but for rasterisation at the quad's edges.
    let mut far = 0usize;
    let mut sum_abs = 0.0f64;
    for (g, c) in gpu.chunks_exact(4).zip(cpu.chunks_exact(4)) {
        let diff = g.iter().zip(c).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        sum_abs += f64::from(diff);
        if diff > 2.0 / 255.0 {
            far += 1;
        }
    }
    let pixels = (size * size) as usize;
    println!("GPU vs CPU: {far} of {pixels} pixels differ by more than 2/255; mean max-channel difference {:.5}", sum_abs / pixels as f64);
    assert!(far * 100 <= pixels, "{far} of {pixels} pixels differ by more than 2/255");
    assert!(sum_abs / (pixels as f64) < 1.0 / 255.0);
}
