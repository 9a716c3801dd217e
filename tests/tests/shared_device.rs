//! Training and rendering on one wgpu device: a device made outside burn (as the studio's egui
//! makes it: the adapter's features and limits) is registered with `share_wgpu_device`, and wgpu
//! training then runs on it. Its own test binary: the registration is once per process.
#![allow(clippy::unwrap_used, missing_docs)]

use texset_core::decode::Decoder;
use texset_core::eval::evaluate;
use texset_core::train::burn::{share_wgpu_device, wgpu_device_is_shared};
use texset_core::{Backend, Cancel, CompressOptions, NoProgress, compress};
use texset_core::{RunOptions, ScheduleConfig};

#[test]
fn wgpu_training_runs_on_a_shared_device() {
    let found = texset_shaders::request_device_for_training().unwrap();
    let Some((instance, adapter, device, queue)) = texset_testkit::gpu_or_skip("wgpu_training_runs_on_a_shared_device", found) else {
        return;
    };
    println!("adapter: {}", adapter.get_info().name);
    share_wgpu_device(instance, adapter, device, queue).unwrap();
    assert!(wgpu_device_is_shared());
    // Small: lavapipe runs burn's kernels on the CPU.
    let set = texset_testkit::small_set(16);
    let options = CompressOptions {
        schedule: ScheduleConfig { steps: 40, batch_texels: 1024, ..Default::default() },
        run: RunOptions { backend: Backend::Wgpu, ..Default::default() },
        ..CompressOptions::default()
    };
    let out = compress(&set, &options, &NoProgress, &Cancel::new()).unwrap();
    assert!(out.report.train.backend.contains("wgpu"), "{}", out.report.train.backend);
    let eval = evaluate(&set, &Decoder::new(&out.bundle), false).unwrap();
    println!("40 steps on the shared device: {:.2} dB", eval.pooled_psnr_db);
    assert!(eval.pooled_psnr_db > 15.0, "{:.2} dB", eval.pooled_psnr_db);
    // Once per process.
    let (instance, adapter, device, queue) = texset_shaders::request_device_for_training().unwrap().unwrap();
    assert!(share_wgpu_device(instance, adapter, device, queue).is_err());
}
