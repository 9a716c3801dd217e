//! GPU trouble falls back to the CPU with a warning: no adapter (real, with Vulkan pointed at no
//! driver, and simulated), an adapter that fails to create a device, a device lost mid-run — for
//! training (`compress --backend gpu` and `burn-wgpu`) and for decoding (`decode --gpu`, `transcode --gpu`: one
//! decoder, `texset::decode::MaterialDecoder`). Faults are simulated
//! through `TEXSET_FAULT` (texset-core's `io::fault`), which the binary honours only because these tests
//! build it with texset-core's `fault-injection` feature (app/Cargo.toml's dev-dependencies).
//! The device-lost cases need an adapter; without one they are skipped ([`texset_testkit::skip`]).
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use texset_core::train::adapters;

fn texset(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_texset")).args(args).envs(env.iter().copied()).output().unwrap()
}

fn material(root: &Path) -> PathBuf {
    let dir = root.join("gpumat");
    std::fs::create_dir_all(&dir).unwrap();
    image::RgbImage::from_fn(16, 16, |x, y| image::Rgb([(x * 16) as u8, (y * 16) as u8, 77])).save(dir.join("g_basecolor.png")).unwrap();
    image::GrayImage::from_fn(16, 16, |x, y| image::Luma([((x + y) * 8) as u8])).save(dir.join("g_roughness.png")).unwrap();
    dir
}

/// (what, environment, the reason the warning must give)
type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a str);

/// Whether wgpu finds an adapter; otherwise `test` is recorded as skipped (a device can only be
/// lost where there is one).
fn adapter_or_skip(test: &str) -> bool {
    texset_testkit::gpu_or_skip(test, adapters().first()).is_some()
}

/// Every file under `dir` and its bytes, but the record of what texset wrote there
/// (`.texset-written.json`, whose modification times differ from run to run).
fn folder_bytes(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().is_some_and(|n| n == texset_core::io::RECORD_FILE) {
            continue;
        }
        if path.is_dir() {
            out.extend(folder_bytes(&path));
        } else {
            out.push((path.strip_prefix(dir).unwrap().to_path_buf(), std::fs::read(&path).unwrap()));
        }
    }
    out.sort();
    out
}

#[test]
fn gpu_training_failures_fall_back_to_the_cpu_trainer() {
    // The fused GPU trainer and burn's.
    for backend in ["gpu", "burn-wgpu"] {
        training_falls_back(
            backend,
            vec![
                ("simulated: no adapter", vec![("TEXSET_FAULT", "gpu-no-adapter")], "no GPU adapter (simulated"),
                ("simulated: no device", vec![("TEXSET_FAULT", "gpu-device")], "failed to create a device (simulated"),
                // A real absence: Vulkan pointed at no driver, the other APIs off.
                (
                    "real: no adapter",
                    vec![("WGPU_BACKEND", "vulkan"), ("VK_ICD_FILENAMES", "/nonexistent.json"), ("VK_DRIVER_FILES", "/nonexistent.json")],
                    "no GPU adapter",
                ),
            ],
        );
    }
}

#[test]
fn gpu_training_device_lost_mid_run_falls_back_to_the_cpu_trainer() {
    if !adapter_or_skip("gpu_training_device_lost_mid_run_falls_back_to_the_cpu_trainer") {
        return;
    }
    for backend in ["gpu", "burn-wgpu"] {
        training_falls_back(
            backend,
            vec![("simulated: device lost at step 2", vec![("TEXSET_FAULT", "gpu-lost-at-step=2")], "device lost at step 2")],
        );
    }
}

/// The fused GPU trainer lost part-way through a run that writes checkpoints: the CPU trainer
/// goes on from the last checkpoint, with a warning, and finishes the run.
#[test]
fn a_gpu_run_lost_mid_way_goes_on_on_the_cpu_from_its_last_checkpoint() {
    if !adapter_or_skip("a_gpu_run_lost_mid_way_goes_on_on_the_cpu_from_its_last_checkpoint") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = material(tmp.path());
    let (out, report, checkpoint) = (tmp.path().join("lost.texset"), tmp.path().join("lost.json"), tmp.path().join("run.ckpt"));
    let path = |p: &Path| p.to_str().unwrap().to_owned();
    let run = texset(
        &[
            "compress",
            dir.to_str().unwrap(),
            "-o",
            &path(&out),
            "--steps",
            "40",
            "--backend",
            "gpu",
            "--checkpoint",
            &path(&checkpoint),
            "--checkpoint-secs",
            "0",
            "--report",
            &path(&report),
        ],
        &[("TEXSET_FAULT", "gpu-lost-at-step=25")],
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(stderr.contains("warning: GPU training failed") && stderr.contains("device lost at step 25"), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(json["backend"], "cpu (fused)");
    assert_eq!(json["passes"]["train"]["resumed_from_step"], 25, "{json}");
    assert_eq!(json["passes"]["train"]["total_steps"], 40, "{json}");
}

/// Each case's `compress --backend BACKEND` warns with its reason and writes the `--backend cpu`
/// bundle.
fn training_falls_back(backend: &str, cases: Vec<Case>) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = material(tmp.path());
    let dir = dir.to_str().unwrap();
    let cpu = tmp.path().join("cpu.texset");
    let run = texset(&["compress", dir, "-o", cpu.to_str().unwrap(), "--steps", "30", "--backend", "cpu"], &[]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let cpu_bytes = std::fs::read(&cpu).unwrap();

    for (what, env, reason) in cases {
        let out = tmp.path().join("gpu.texset");
        let report = tmp.path().join("gpu.json");
        let run = texset(
            &["compress", dir, "-o", out.to_str().unwrap(), "--steps", "30", "--backend", backend, "--report", report.to_str().unwrap()],
            &env,
        );
        let stderr = String::from_utf8_lossy(&run.stderr);
        let what = format!("{backend}, {what}");
        assert!(run.status.success(), "{what}: aborted instead of falling back: {stderr}");
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
        assert!(
            stderr.contains("warning: GPU training failed") && stderr.contains(reason) && stderr.contains("training on the CPU instead"),
            "{what}: no warning naming {reason:?}: {stderr}"
        );
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        assert!(json["passes"]["train"]["gpu_fallback"].as_str().unwrap().contains(reason), "{what}: {json}");
        assert_eq!(json["backend"], "cpu (fused)", "{what}");
        // The fallback is the CPU trainer's run from the start: the same bundle as --backend cpu.
        assert_eq!(std::fs::read(&out).unwrap(), cpu_bytes, "{what}: the fallback bundle differs from the CPU run's");
    }
}

#[test]
fn gpu_decode_failures_fall_back_to_the_cpu_decoder() {
    decode_falls_back(&[
        ("no adapter", "gpu-no-adapter", "no GPU adapter (simulated"),
        ("no device", "gpu-device", "failed to create a device (simulated"),
    ]);
}

#[test]
fn gpu_decode_device_lost_mid_run_falls_back_to_the_cpu_decoder() {
    if !adapter_or_skip("gpu_decode_device_lost_mid_run_falls_back_to_the_cpu_decoder") {
        return;
    }
    decode_falls_back(&[("device lost at the second map", "gpu-lost-at-step=1", "device lost at map 1")]);
}

/// (what, the `TEXSET_FAULT` value, the reason the warning must give)
type DecodeCase<'a> = (&'a str, &'a str, &'a str);

/// Each case's `decode --gpu` and `transcode --gpu` warn with its reason and write the CPU path's
/// files.
fn decode_falls_back(cases: &[DecodeCase]) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = material(tmp.path());
    let bundle = tmp.path().join("b.texset");
    let run = texset(&["compress", dir.to_str().unwrap(), "-o", bundle.to_str().unwrap(), "--steps", "30", "--backend", "cpu"], &[]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let reference = tmp.path().join("cpu");
    assert!(texset(&["decode", bundle.to_str().unwrap(), "-o", reference.to_str().unwrap()], &[]).status.success());
    let expected = folder_bytes(&reference);
    let reference_ktx2 = tmp.path().join("cpu-ktx2");
    assert!(
        texset(&["transcode", bundle.to_str().unwrap(), "-o", reference_ktx2.to_str().unwrap(), "--format", "bc7"], &[]).status.success()
    );
    let expected_ktx2 = folder_bytes(&reference_ktx2);
    assert!(!expected_ktx2.is_empty());

    for &(what, fault, reason) in cases {
        let out = tmp.path().join(fault);
        let run = texset(&["decode", bundle.to_str().unwrap(), "-o", out.to_str().unwrap(), "--gpu"], &[("TEXSET_FAULT", fault)]);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(run.status.success(), "{what}: {stderr}");
        assert!(stderr.contains("warning: GPU decode failed") && stderr.contains(reason), "{what}: {stderr}");
        assert_eq!(folder_bytes(&out), expected, "{what}: the CPU fallback's PNGs differ from a CPU decode");
        // transcode decodes through the same decoder: the same fallback, as PNG and as KTX2.
        for (format, expected) in [("png", &expected), ("bc7", &expected_ktx2)] {
            let out = tmp.path().join(format!("{fault}-transcode-{format}"));
            let run = texset(
                &["transcode", bundle.to_str().unwrap(), "-o", out.to_str().unwrap(), "--format", format, "--gpu"],
                &[("TEXSET_FAULT", fault)],
            );
            let stderr = String::from_utf8_lossy(&run.stderr);
            assert!(run.status.success(), "transcode {format}, {what}: {stderr}");
            assert!(stderr.contains("warning: GPU decode failed") && stderr.contains(reason), "transcode {format}, {what}: {stderr}");
            assert_eq!(&folder_bytes(&out), expected, "transcode {format}, {what}: the fallback's files differ from the CPU path's");
        }
    }
}
