//! Crash safety: `kill -9` in the middle of an export leaves the earlier file whole, and
//! `texset compress --resume` after `kill -9` mid-training ends where an uninterrupted run ends.
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn texset() -> Command {
    Command::new(env!("CARGO_BIN_EXE_texset"))
}

/// A small material (three 32x32 maps) that trains a few hundred steps in seconds.
fn material(root: &Path) -> PathBuf {
    let dir = root.join("crashmat");
    std::fs::create_dir_all(&dir).unwrap();
    let colour = image::RgbImage::from_fn(32, 32, |x, y| image::Rgb([(x * 8) as u8, (y * 8) as u8, ((x * y) % 256) as u8]));
    colour.save(dir.join("c_basecolor.png")).unwrap();
    let rough =
        image::GrayImage::from_fn(32, 32, |x, y| image::Luma([(((x as f32 * 0.4).sin() + (y as f32 * 0.3).cos()) * 60.0 + 128.0) as u8]));
    rough.save(dir.join("c_roughness.png")).unwrap();
    let normal = image::RgbImage::from_fn(32, 32, |x, _| image::Rgb([128 + ((x % 8) * 8) as u8, 128, 255]));
    normal.save(dir.join("c_normal.png")).unwrap();
    dir
}

fn pooled_psnr(report: &Path) -> f64 {
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(report).unwrap()).unwrap();
    json["pooled_psnr_db"].as_f64().unwrap()
}

#[test]
fn kill_during_an_export_leaves_the_earlier_bundle_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = material(tmp.path());
    let out = tmp.path().join("out.texset");
    let first =
        texset().args(["compress", dir.to_str().unwrap(), "-o", out.to_str().unwrap(), "--steps", "20", "--seed", "1"]).output().unwrap();
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let earlier = std::fs::read(&out).unwrap();

    let mut caught_mid_write = 0;
    for attempt in 0..5 {
        // A different seed: the new bundle differs from the earlier one.
        let mut child = texset()
            .args(["compress", dir.to_str().unwrap(), "-o", out.to_str().unwrap(), "--steps", "20", "--seed", &format!("{}", 2 + attempt)])
            .env("TEXSET_FAULT", "slow-write")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // `.out.texset.tmp-HOST-PIDNS-PID-RANDOM`: this child's.
        let pid = format!("-{}-", child.id());
        let temp_file = || {
            std::fs::read_dir(tmp.path()).unwrap().filter_map(Result::ok).map(|e| e.path()).find(|p| {
                p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(".out.texset.tmp-") && n.to_string_lossy().contains(&pid))
            })
        };
        let start = Instant::now();
        let mut temp = PathBuf::new();
        // Kill as soon as the temporary file holds some bytes but not all of them.
        let killed_mid_write = loop {
            if let Some(t) = temp_file().filter(|t| std::fs::metadata(t).is_ok_and(|m| m.len() > 0)) {
                temp = t;
                child.kill().unwrap();
                break true;
            }
            if child.try_wait().unwrap().is_some() || start.elapsed() > Duration::from_mins(1) {
                break false;
            }
            std::thread::sleep(Duration::from_micros(200));
        };
        let _ = child.wait();
        if killed_mid_write {
            caught_mid_write += 1;
            let partial = std::fs::metadata(&temp).map_or(0, |m| m.len());
            assert!(partial < earlier.len() as u64 + 4096, "temporary file of {partial} bytes");
            // The target is the earlier bundle, byte for byte, and it still reads.
            assert_eq!(std::fs::read(&out).unwrap(), earlier, "attempt {attempt}: the bundle was damaged by a kill mid-write");
            texset_core::bundle::Bundle::read(&out).unwrap();
        }
    }
    assert!(caught_mid_write >= 3, "only {caught_mid_write} of 5 kills landed during the write");

    // A later run replaces it whole.
    let again =
        texset().args(["compress", dir.to_str().unwrap(), "-o", out.to_str().unwrap(), "--steps", "20", "--seed", "9"]).output().unwrap();
    assert!(again.status.success());
    assert_ne!(std::fs::read(&out).unwrap(), earlier);
    texset_core::bundle::Bundle::read(&out).unwrap();
    // And removes the killed runs' temporary files (their processes are gone).
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".out.texset.tmp-"))
        .collect();
    assert!(left.is_empty(), "stale temporary files left: {left:?}");
}

#[test]
fn compress_resumed_after_kill_9_ends_at_the_uninterrupted_quality() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = material(tmp.path());
    let steps = "400";
    let straight = tmp.path().join("straight.texset");
    let straight_report = tmp.path().join("straight.json");
    let run = texset()
        .args(["compress", dir.to_str().unwrap(), "-o", straight.to_str().unwrap(), "--steps", steps, "--seed", "3", "--report"])
        .arg(&straight_report)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));

    let out = tmp.path().join("resumed.texset");
    let report = tmp.path().join("resumed.json");
    let checkpoint = tmp.path().join("train.ckpt");
    let args = |resume: bool| {
        let mut cmd = texset();
        cmd.args(["compress", dir.to_str().unwrap(), "-o", out.to_str().unwrap(), "--steps", steps, "--seed", "3", "--report"])
            .arg(&report)
            .arg("--checkpoint")
            .arg(&checkpoint)
            .args(["--checkpoint-secs", "0.2"]);
        if resume {
            cmd.arg("--resume");
        }
        cmd
    };
    let mut child = args(false).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    // Let several checkpoints land, then kill -9 (SIGKILL: no cleanup runs).
    let start = Instant::now();
    let mut writes = 0;
    let mut last = None;
    while writes < 6 && start.elapsed() < Duration::from_mins(2) {
        if let Ok(m) = std::fs::metadata(&checkpoint) {
            let t = m.modified().unwrap();
            if last != Some(t) {
                last = Some(t);
                writes += 1;
            }
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(status.code().is_none(), "training finished before the kill: make the run longer");
    assert!(!out.exists(), "a killed run left a bundle");

    let resumed = args(true).output().unwrap();
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let from = json["passes"]["train"]["resumed_from_step"].as_u64().expect("the run did not resume from the checkpoint");
    assert!(from > 0 && from < 400, "resumed from step {from}");
    let (a, b) = (pooled_psnr(&straight_report), pooled_psnr(&report));
    eprintln!("uninterrupted {a:.3} dB, killed at step ~{from} and resumed {b:.3} dB");
    assert!((a - b).abs() <= 0.2, "resumed {b:.3} dB vs uninterrupted {a:.3} dB");
    // The checkpoint holds the optimiser state and the step, so the resumed run is the same run.
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&straight).unwrap(), "resumed bundle differs from the uninterrupted one");
}
