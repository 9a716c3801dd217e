//! The burn-wgpu training path on whatever adapter wgpu finds (lavapipe in CI), checked against
//! the CPU reference. Skipped, and counted as skipped by CI, when the machine has no adapter at all.
#![allow(clippy::unwrap_used, missing_docs)]

use texset_core::{
    Cancel, NoProgress, compress,
    decode::Decoder,
    internal_tests::NtcModel,
    options::{Backend, CompressOptions, RunOptions, ScheduleConfig},
    train::{adapters, device_for},
};
use texset_testkit::gpu_or_skip;

#[test]
fn burn_wgpu_trains_and_its_forward_matches_the_cpu_reference() {
    let found = adapters();
    if gpu_or_skip("burn_wgpu_trains_and_its_forward_matches_the_cpu_reference", found.first()).is_none() {
        return;
    }
    eprintln!("wgpu adapters: {found:?}");
    let set = texset_testkit::small_set(16);
    let options = CompressOptions {
        schedule: ScheduleConfig { steps: 12, batch_texels: 512, ..Default::default() },
        run: RunOptions { backend: Backend::BurnWgpu, ..Default::default() },
        ..CompressOptions::default()
    };
    let out = compress(&set, &options, &NoProgress, &Cancel::new()).unwrap();
    assert!(out.report.train.backend.contains("wgpu"), "{}", out.report.train.backend);
    assert!(out.report.train.final_mse.is_finite() && out.report.train.final_mse > 0.0);

    // The quantised model, evaluated by burn on the GPU, equals the CPU reference decoder.
    let decoder = Decoder::new(&out.bundle);
    let device = device_for(Backend::BurnWgpu);
    let model = NtcModel::from_params(decoder.params(), &device);
    let manifest = decoder.manifest();
    let (lc, oc) = (manifest.latent_channels(), manifest.output_channels());
    let map = &manifest.materials[0].maps[0];
    let n = 64;
    let uv: Vec<f32> = (0..n).flat_map(|i| [(i as f32 + 0.5) / n as f32, ((i * 7) % n) as f32 / (n - 1) as f32]).collect();
    let y = texset_testkit::burn_decode(&model, &device, &uv, &map.latent_channels, lc);
    let mut texel = [0.0f32; 4];
    let mut worst = 0.0f32;
    for i in 0..n {
        decoder.decode_texel(0, 0, uv[2 * i], uv[2 * i + 1], &mut texel).unwrap();
        for c in 0..map.info.channels as usize {
            worst = worst.max((texel[c] - y[i * oc + map.output_offset as usize + c]).abs());
        }
    }
    // GPU f32 arithmetic (FMA contraction, other summation order, sin/cos precision) against the
    // scalar CPU loop: well under one 8-bit step (3.9e-3).
    assert!(worst <= 1e-3, "max |gpu − cpu| = {worst}");
}
