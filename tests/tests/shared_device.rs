//! Training and rendering on one wgpu device: a device made outside the trainers (as the studio's
//! egui makes it: the adapter's features and limits) is registered with `share_wgpu_device` (burn)
//! and `train::gpu::share_device` (the fused GPU trainer), and both train on it. Its own test
//! binary: each registration is once per process.
#![allow(clippy::unwrap_used, missing_docs)]

use texset_core::{
    Cancel, NoProgress, compress,
    decode::Decoder,
    eval::evaluate,
    internal_tests::wgpu_device_is_shared,
    options::{Backend, CompressOptions, RunOptions, ScheduleConfig},
    train::{share_device, share_wgpu_device},
};

#[test]
fn training_runs_on_a_shared_device() {
    let found = texset_shaders::request_device_for_training().unwrap();
    let Some((instance, adapter, device, queue)) = texset_testkit::gpu_or_skip("training_runs_on_a_shared_device", found) else {
        return;
    };
    println!("adapter: {}", adapter.get_info().name);
    let (fused_device, fused_queue) = (device.clone(), queue.clone());
    share_device(&adapter, fused_device, fused_queue).unwrap();
    share_wgpu_device(instance, adapter, device, queue).unwrap();
    assert!(wgpu_device_is_shared());
    // Small: lavapipe runs burn's kernels on the CPU.
    let set = texset_testkit::small_set(16);
    let options = CompressOptions {
        schedule: ScheduleConfig { steps: 40, batch_texels: 1024, ..Default::default() },
        run: RunOptions { backend: Backend::BurnWgpu, ..Default::default() },
        ..CompressOptions::default()
    };
    let out = compress(&set, &options, &NoProgress, &Cancel::new()).unwrap();
    assert!(out.report.train.backend.contains("wgpu"), "{}", out.report.train.backend);
    let eval = evaluate(&set, &Decoder::new(&out.bundle), false).unwrap();
    println!("40 steps of burn-wgpu on the shared device: {:.2} dB", eval.pooled_psnr_db);
    assert!(eval.pooled_psnr_db > 15.0, "{:.2} dB", eval.pooled_psnr_db);
    // The fused GPU trainer on the same device (what the studio does on a hardware GPU).
    let options = CompressOptions { run: RunOptions { backend: Backend::Gpu, ..Default::default() }, ..options };
    let out = compress(&set, &options, &NoProgress, &Cancel::new()).unwrap();
    assert!(out.report.train.backend.contains("shared with the application"), "{}", out.report.train.backend);
    let eval = evaluate(&set, &Decoder::new(&out.bundle), false).unwrap();
    println!("40 steps of the fused GPU trainer on the shared device: {:.2} dB", eval.pooled_psnr_db);
    assert!(eval.pooled_psnr_db > 15.0, "{:.2} dB", eval.pooled_psnr_db);
    let (_, adapter, device, queue) = texset_shaders::request_device_for_training().unwrap().unwrap();
    assert!(share_device(&adapter, device, queue).is_err());
    // Once per process.
    let (instance, adapter, device, queue) = texset_shaders::request_device_for_training().unwrap().unwrap();
    assert!(share_wgpu_device(instance, adapter, device, queue).is_err());
}
