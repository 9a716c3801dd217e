//! The `texset` command line end to end: compress → inspect → decode → eval, and exit codes;
//! the engine options' flags in `options`, the help texts and the process's manners in `help`.
#![allow(clippy::unwrap_used, missing_docs)]

mod help;
mod options;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn texset(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_texset")).args(args).output().unwrap()
}

fn samples() -> PathBuf {
    texset_testkit::repo_root().join("sample_textures")
}

fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let meta = std::fs::metadata(&p).unwrap();
            (p.clone(), std::fs::read(&p).unwrap(), meta.modified().unwrap())
        })
        .collect();
    v.sort();
    v
}

#[test]
fn compress_inspect_decode_eval_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let wood = samples().join("wood");
    let before = snapshot(&wood);
    let bundle = tmp.path().join("wood.texset");
    let report = tmp.path().join("report.json");
    let out = texset(&[
        "compress",
        wood.to_str().unwrap(),
        "-o",
        bundle.to_str().unwrap(),
        "--steps",
        "150",
        "--bpp",
        "6",
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "compress failed: {}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let bpt = json["bits_per_texel"].as_f64().unwrap();
    assert!(bpt <= 6.0 && bpt > 2.0, "bits per texel {bpt}");
    let bytes = std::fs::metadata(&bundle).unwrap().len();
    assert_eq!(json["bundle_bytes"].as_u64().unwrap(), bytes);
    assert!((bytes as f64 * 8.0 / 65536.0 - bpt).abs() < 1e-9);
    assert!(json["pooled_psnr_db"].as_f64().unwrap() > 20.0);
    assert_eq!(json["maps"].as_array().unwrap().len(), 5);
    assert!(json["maps"][0]["channel_psnr_db"].as_array().is_some());
    assert!(json["train_secs"].as_f64().unwrap() > 0.0 && json["texels_per_sec"].as_f64().unwrap() > 0.0);

    let out = texset(&["inspect", bundle.to_str().unwrap(), "--json"]);
    assert!(out.status.success());
    let inspect: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(inspect["manifest"]["materials"][0]["name"], "wood");

    let decoded = tmp.path().join("decoded");
    let out = texset(&["decode", bundle.to_str().unwrap(), "-o", decoded.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Same names, channel layout and bit depth as the inputs.
    for (path, _, _) in &before {
        let name = path.file_name().unwrap();
        let decoded_path = decoded.join("wood").join(name);
        let a = image::open(path).unwrap();
        let b = image::open(&decoded_path).unwrap_or_else(|e| panic!("{}: {e}", decoded_path.display()));
        assert_eq!(a.color(), b.color(), "{name:?}");
        assert_eq!((a.width(), a.height()), (b.width(), b.height()));
    }

    // The written files carry the decoded values: PSNR computed from the PNGs themselves equals the
    // report's (which is computed from the decoder's output rounded to the file's bit depth).
    for m in json["maps"].as_array().unwrap() {
        let name = format!("wood_{}.png", m["map"].as_str().unwrap());
        let a = image::open(wood.join(&name)).unwrap().to_rgba32f();
        let b = image::open(decoded.join("wood").join(&name)).unwrap().to_rgba32f();
        let channels = image::open(wood.join(&name)).unwrap().color().channel_count() as usize;
        let (mut sum, mut count) = (0.0f64, 0.0f64);
        for (p, q) in a.pixels().zip(b.pixels()) {
            for c in 0..channels.clamp(1, 3) {
                sum += f64::from(p.0[c] - q.0[c]).powi(2);
                count += 1.0;
            }
        }
        let file_psnr = -10.0 * (sum / count).log10();
        let report_psnr = m["psnr_db"].as_f64().unwrap();
        assert!((file_psnr - report_psnr).abs() < 0.05, "{name}: PSNR from files {file_psnr:.3} vs report {report_psnr:.3}");
    }

    let out = texset(&["eval", wood.to_str().unwrap(), bundle.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let eval: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pooled = eval["pooled_psnr_db"].as_f64().unwrap();
    assert!((pooled - json["pooled_psnr_db"].as_f64().unwrap()).abs() < 1e-9, "eval and compress disagree");
    // FLIP per map, the normal map's angular error, and the rendered error.
    for m in eval["maps"].as_array().unwrap() {
        let flip = m["flip"].as_f64().unwrap();
        assert!((0.0..0.5).contains(&flip), "{m}");
        if m["map"] == "normal" {
            let degrees = m["normal_angular_error_deg"].as_f64().unwrap();
            assert!(degrees > 0.0 && degrees < 30.0, "{m}");
        } else {
            assert!(m.get("normal_angular_error_deg").is_none(), "{m}");
        }
    }
    let rendered = &eval["rendered"][0];
    assert_eq!(rendered["material"], "wood");
    let (psnr, flip) = (rendered["rendered_psnr_db"].as_f64().unwrap(), rendered["rendered_flip"].as_f64().unwrap());
    assert!(psnr > 15.0 && psnr < 80.0 && flip > 0.0 && flip < 0.5, "{rendered}");

    // The source folder was not written.
    assert_eq!(snapshot(&wood), before);
}

#[test]
fn bad_input_exits_non_zero_with_one_line_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let not_bundle = tmp.path().join("junk.texset");
    std::fs::write(&not_bundle, b"definitely not a bundle").unwrap();
    for args in [
        vec!["inspect", not_bundle.to_str().unwrap()],
        vec!["decode", not_bundle.to_str().unwrap(), "-o", tmp.path().to_str().unwrap()],
        vec!["compress", tmp.path().join("nowhere").to_str().unwrap(), "-o", tmp.path().join("x.texset").to_str().unwrap()],
        vec!["compress", samples().join("wood").to_str().unwrap(), "-o", tmp.path().join("y.texset").to_str().unwrap(), "--bpp", "0.001"],
    ] {
        let out = texset(&args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("texset: error:"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    let stderr = String::from_utf8_lossy(&texset(&["inspect", not_bundle.to_str().unwrap()]).stderr).into_owned();
    assert!(stderr.contains("junk.texset"), "{stderr}");
    // The OS error is said once, though the library's message quotes its source (before:
    // `cannot read "…/nowhere": No such file or directory (os error 2): No such file …`).
    let nowhere = tmp.path().join("nowhere");
    let out = texset(&["compress", nowhere.to_str().unwrap(), "-o", tmp.path().join("z.texset").to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("nowhere") && stderr.matches("(os error 2)").count() == 1, "{stderr}");
}

/// The metal sample trained briefly (40 steps), as a bundle in `dir`.
fn metal_bundle(dir: &Path) -> PathBuf {
    let metal = samples().join("metal_plates");
    let bundle = dir.join("metal.texset");
    let out = texset(&["compress", metal.to_str().unwrap(), "-o", bundle.to_str().unwrap(), "--steps", "40", "--no-ssim"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    bundle
}

#[test]
fn gpu_decode_matches_cpu_decode_within_one_step() {
    // Without an adapter `decode --gpu` falls back to the CPU, and comparing that with the CPU
    // decode would compare the CPU with itself: a skip, not a pass.
    let found = texset_shaders::request_device().unwrap();
    let Some((adapter, _, _)) = texset_testkit::gpu_or_skip("gpu_decode_matches_cpu_decode_within_one_step", found) else {
        return;
    };
    println!("adapter: {}", adapter.get_info().name);
    let tmp = tempfile::tempdir().unwrap();
    let bundle = metal_bundle(tmp.path());
    let (cpu, gpu) = (tmp.path().join("cpu"), tmp.path().join("gpu"));
    assert!(texset(&["decode", bundle.to_str().unwrap(), "-o", cpu.to_str().unwrap()]).status.success());
    let out = texset(&["decode", bundle.to_str().unwrap(), "-o", gpu.to_str().unwrap(), "--gpu"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The GPU decoded every map: no fallback to the CPU part-way.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("decoding on the GPU") && !stderr.contains("GPU decode failed"), "{stderr}");
    let mut compared = 0;
    for entry in std::fs::read_dir(cpu.join("metal_plates")).unwrap() {
        let path = entry.unwrap().path();
        let a = image::open(&path).unwrap();
        let b = image::open(gpu.join("metal_plates").join(path.file_name().unwrap())).unwrap();
        assert_eq!(a.color(), b.color());
        // 16-bit maps compared at 16 bits, 8-bit at 8: GPU and CPU f32 results differ by ~1e-7,
        // which can flip a rounding at most one step.
        let (x, y) = (a.to_rgba16(), b.to_rgba16());
        let step = if a.color().bytes_per_pixel() / a.color().channel_count() == 2 { 1 } else { 257 };
        let worst = x.as_raw().iter().zip(y.as_raw()).map(|(p, q)| p.abs_diff(*q)).max().unwrap();
        assert!(worst <= step, "{}: max difference {worst} (> one step {step})", path.display());
        compared += 1;
    }
    assert_eq!(compared, 4);
}

#[test]
fn trained_bundle_exports_a_shader_in_every_language() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = metal_bundle(tmp.path());
    // The trained bundle exports as a shader in every language, each validated by the CLI (naga,
    // and glslangValidator for GLSL/HLSL where installed; a rejection fails the command).
    for (lang, entry, needle) in [
        ("wgsl", "cs_decode_map", "fn decode_texel("),
        ("glsl", "cs_decode_map", "#version 450"),
        ("glsl", "fs_decode_map", "#version 450"),
        ("hlsl", "cs_decode_map", "[numthreads(8, 8, 1)]"),
        ("msl", "cs_decode_map", "#include <metal_stdlib>"),
    ] {
        let file = tmp.path().join(format!("decoder_{entry}.{lang}"));
        let out = texset(&["export-shader", bundle.to_str().unwrap(), "--lang", lang, "--entry", entry, "-o", file.to_str().unwrap()]);
        assert!(out.status.success(), "{lang}: {}", String::from_utf8_lossy(&out.stderr));
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains(needle), "{lang} export lacks {needle:?}");
        eprintln!("{}", String::from_utf8_lossy(&out.stderr).trim());
    }
}

/// Colourways in one library (the ochre fabric is a colour variant of the indigo one), then a
/// third material added with `texset add`: the fabrics decode to the same PNG bytes as before.
#[test]
fn colour_variant_library_and_add_keep_earlier_materials_byte_identical() {
    let tmp = tempfile::tempdir().unwrap();
    let path = |name: &str| tmp.path().join(name).to_str().unwrap().to_owned();
    let (indigo, ochre, wood) = (samples().join("fabric_indigo"), samples().join("fabric_ochre"), samples().join("wood"));
    let out = texset(&[
        "compress",
        indigo.to_str().unwrap(),
        ochre.to_str().unwrap(),
        "-o",
        &path("fabrics.texset"),
        "--steps",
        "100",
        "--no-ssim",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("colour variant of fabric_indigo/basecolor"));
    let out = texset(&["inspect", &path("fabrics.texset")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("colour variant of fabric_indigo/basecolor"), "{text}");

    let out = texset(&["add", &path("fabrics.texset"), wood.to_str().unwrap(), "-o", &path("grown.texset"), "--steps", "60", "--no-ssim"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("wood/basecolor"));
    for (bundle, dir) in [("fabrics.texset", "before"), ("grown.texset", "after")] {
        let out = texset(&["decode", &path(bundle), "-o", &path(dir)]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    for material in ["fabric_indigo", "fabric_ochre"] {
        let before = snapshot(&tmp.path().join("before").join(material));
        let after = snapshot(&tmp.path().join("after").join(material));
        assert_eq!(before.len(), 5);
        for ((_, a, _), (_, b, _)) in before.iter().zip(&after) {
            assert!(a == b, "{material} changed after add");
        }
    }
    assert!(tmp.path().join("after").join("wood").join("wood_basecolor.png").exists());
    // A name already in the library is refused with one line.
    let out = texset(&["add", &path("grown.texset"), wood.to_str().unwrap(), "-o", &path("again.texset")]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("already has a material named 'wood'"));
    // Adding keeps the library's parameters frozen, which only the CPU trainer does: a GPU
    // backend is refused by name, not trained on the CPU behind the user's back.
    for backend in ["gpu", "burn-wgpu", "burn-flex"] {
        let out = texset(&["add", &path("fabrics.texset"), wood.to_str().unwrap(), "-o", &path("gpu.texset"), "--backend", backend]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(&format!("--backend {backend} cannot add materials")), "{backend}: {stderr}");
        assert!(!tmp.path().join("gpu.texset").exists());
    }
}

#[test]
fn match_bc_measures_the_blocks_and_searches_below_their_rate() {
    let tmp = tempfile::tempdir().unwrap();
    let wood = samples().join("wood");
    let bundle = tmp.path().join("wood.texset");
    let report = tmp.path().join("report.json");
    let (wood, bundle_arg, report_arg) = (wood.to_str().unwrap(), bundle.to_str().unwrap(), report.to_str().unwrap());

    // One rate control at a time, no fixed rate beside it, and no tolerance to loosen "at or above".
    for extra in [&["--bpp", "4"][..], &["--target-psnr", "30"], &["--tolerance-db", "1"]] {
        let mut args = vec!["compress", wood, "-o", bundle_arg, "--match-bc", "low"];
        args.extend_from_slice(extra);
        let out = texset(&args);
        assert_eq!(out.status.code(), Some(2), "{extra:?} should be refused: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert!(!bundle.exists());

    let out =
        texset(&["compress", wood, "-o", bundle_arg, "--match-bc", "low", "--steps", "400", "--rate-trials", "2", "--report", report_arg]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "compress failed: {stderr}");
    assert!(stderr.contains("block-compressed baseline (Low profile)"), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let target = &json["rate"]["target"];
    let baseline = &target["bc_baseline"];
    assert_eq!(baseline["profile"], "Low");
    assert_eq!(baseline["maps"].as_array().unwrap().len(), json["maps"].as_array().unwrap().len());
    assert_eq!(target["psnr_db"], baseline["pooled_psnr_db"]);
    assert_eq!(target["tolerance_db"].as_f64(), Some(0.0));
    // The cap is the blocks' own rate: every map of wood is 4 or 8 bits per texel in BC1/BC4/BC5.
    let bc_bpt = baseline["bits_per_texel"].as_f64().unwrap();
    assert_eq!(target["max_bpp"].as_f64(), Some(bc_bpt));
    // The top of the bracket first; the bottom (when the top reaches) is not the default 0.5 bits
    // per texel, which cannot hold one latent channel per grid of wood's five maps, but the
    // smallest rate that can.
    let trials = json["rate"]["trials"].as_array().unwrap();
    let asked: Vec<f64> = trials.iter().map(|t| t["target_bits_per_texel"].as_f64().unwrap()).collect();
    let lowest = json["rate"]["lowest_bpp"].as_f64().unwrap();
    assert!(lowest > 0.5 && lowest < bc_bpt, "{lowest}");
    assert_eq!(asked[0].to_bits(), bc_bpt.to_bits());
    assert!(asked.len() == 1 || asked == [bc_bpt, lowest], "{asked:?}");
    assert!(stderr.contains("rate control: searched from"), "{stderr}");
    // Reached means the bundle written is at or above the blocks' PSNR (no tolerance).
    let reached = json["rate"]["reached"].as_bool().unwrap();
    assert_eq!(reached, json["pooled_psnr_db"].as_f64().unwrap() >= target["psnr_db"].as_f64().unwrap());
}

#[test]
fn bench_rd_measures_texset_and_both_bc_profiles_and_draws_the_chart() {
    let tmp = tempfile::tempdir().unwrap();
    let plot = tmp.path().join("rd.png");
    let saved = tmp.path().join("rd.json");
    let bricks = samples().join("bricks");
    let sweep = [
        "bench",
        "rd",
        bricks.to_str().unwrap(),
        "--save",
        saved.to_str().unwrap(),
        "--presets",
        "fast",
        "--bpp",
        "3,6",
        "--steps",
        "60",
        "--plot",
        plot.to_str().unwrap(),
        "--json",
    ];
    let out = texset(&sweep);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Beneath the points, per rate, the sets' median and quartiles beside NTC's (one set here).
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("| texset fast, 60 steps | 3 | 1 |") && stderr.contains("| texset fast, 60 steps | 6 | 1 |"), "{stderr}");
    let points: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let points = points.as_array().unwrap();
    let methods: Vec<&str> = points.iter().map(|p| p["method"].as_str().unwrap()).collect();
    // `--steps` names the series by its steps: 60 steps are not the fast preset.
    assert_eq!(methods, ["texset fast, 60 steps", "texset fast, 60 steps", "BC high", "BC low"]);
    let f = |i: usize, key: &str| points[i][key].as_f64().unwrap();
    // texset lands at (or just under) the rates asked; more bits, more PSNR.
    // (bricks is 256² texels: at 2 bits per texel the 64-64-64 decoder leaves no room for latents.)
    assert!(f(0, "bits_per_texel") <= 3.0 && f(1, "bits_per_texel") <= 6.0 && f(1, "bits_per_texel") > 4.0);
    assert!(f(1, "pooled_psnr_db") > f(0, "pooled_psnr_db"));
    // bricks: basecolor, normal, roughness, ao, height: BC7 8 + BC5 8 + 3 × BC4 4 = 28 bits per
    // texel; BC1 for colour and normal: 4 + 4 + 12 = 20. BC7 is the better of the two, lit too.
    assert!((f(2, "bits_per_texel") - 28.0).abs() < 1e-9 && (f(3, "bits_per_texel") - 20.0).abs() < 1e-9);
    assert!(f(2, "pooled_psnr_db") > f(3, "pooled_psnr_db") && f(2, "rendered_psnr_db") > f(3, "rendered_psnr_db"));
    assert!(points.iter().all(|p| p["rendered_psnr_db"].as_f64().unwrap() > 15.0));
    let chart = image::open(&plot).unwrap().to_rgb8();
    assert_eq!(chart.width(), 1120);
    // The colour of texset at other steps (brown) is drawn, its markers and curve, and so is NTC's
    // median (black) beside it.
    assert!(chart.pixels().filter(|p| p.0 == [140, 86, 75]).count() > 100);
    assert!(chart.pixels().filter(|p| p.0 == [20, 20, 20]).count() > 100);
    // The saved file holds the same points; merging it again measures nothing and gives them back.
    let saved_points: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert_eq!(saved_points.as_array().unwrap(), points);
    let replot = tmp.path().join("again.png");
    let out = texset(&["bench", "rd", "--from", saved.to_str().unwrap(), "--plot", replot.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let merged: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(merged.as_array().unwrap(), points);
    assert_eq!(image::open(&replot).unwrap().to_rgb8(), chart);
    // A file that is not a list of points is refused, by name.
    let out = texset(&["bench", "rd", "--from", plot.to_str().unwrap(), "--plot", replot.to_str().unwrap()]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("rd.png"), "{stderr}");

    // The same sweep again resumes from its file: every point is kept, none measured again. A point
    // saved with other options (here: a stale hash, a made-up PSNR) is measured again.
    let mut stale = points.clone();
    stale[1]["options_sha256"] = "stale".into();
    stale[1]["pooled_psnr_db"] = 0.0.into();
    std::fs::write(&saved, serde_json::to_string(&stale).unwrap()).unwrap();
    let out = texset(&sweep);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.contains("resuming: 4 point(s)"), "{stderr}");
    let resumed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let resumed = resumed.as_array().unwrap();
    assert_eq!(resumed.len(), 4);
    // Kept as saved, to the training seconds; the stale point trained again (seeded: the same dB).
    for i in [0, 2, 3] {
        assert_eq!(resumed[i], points[i], "point {i}");
    }
    assert_eq!(resumed[1]["options_sha256"], points[1]["options_sha256"]);
    assert!((resumed[1]["pooled_psnr_db"].as_f64().unwrap() - points[1]["pooled_psnr_db"].as_f64().unwrap()).abs() < 0.1);
    // A sweep stopped before its block-compression points: every texset point is kept, and the
    // BC points are measured (their renders take the maps' manifest from a two-step bundle).
    std::fs::write(&saved, serde_json::to_string(&resumed[..2]).unwrap()).unwrap();
    let out = texset(&sweep);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let again: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again.as_array().unwrap(), resumed);
    // A run over part of the sweep (one of its two rates) keeps the rest of the file: the point at
    // 6 it did not reach stays saved, after this run's three.
    let part: Vec<&str> = sweep.iter().map(|&a| if a == "3,6" { "3" } else { a }).collect();
    let out = texset(&part);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ran: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(ran.as_array().unwrap().len(), 3);
    let kept: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    let kept = kept.as_array().unwrap();
    assert_eq!(kept.len(), 4);
    assert!(resumed.iter().all(|p| kept.contains(p)), "{kept:?}");
}

#[test]
fn search_needs_a_rate_and_writes_the_chosen_shape_and_its_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let bricks = samples().join("bricks");
    let bundle = tmp.path().join("bricks.texset");
    let report = tmp.path().join("report.json");
    let (bricks, bundle_arg, report_arg) = (bricks.to_str().unwrap(), bundle.to_str().unwrap(), report.to_str().unwrap());

    // The search compares shapes at one rate: it needs --bpp and takes no rate control beside it.
    for extra in [&[][..], &["--bpp", "3", "--target-psnr", "30"], &["--bpp", "3", "--latent-bits", "2"]] {
        let mut args = vec!["compress", bricks, "-o", bundle_arg, "--search", "random"];
        args.extend_from_slice(extra);
        let out = texset(&args);
        assert_eq!(out.status.code(), Some(2), "{extra:?} should be refused: {}", String::from_utf8_lossy(&out.stderr));
    }

    // No --search-cache: the cache goes under $XDG_CACHE_HOME.
    let out = Command::new(env!("CARGO_BIN_EXE_texset"))
        .args(["compress", bricks, "-o", bundle_arg, "--bpp", "3", "--search", "random", "--search-trials", "2", "--steps", "80"])
        .args(["--no-ssim", "--report", report_arg])
        .env("XDG_CACHE_HOME", tmp.path().join("cache"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "compress failed: {stderr}");
    assert!(stderr.contains("precision search (Random): 2 short runs of 20 steps"), "{stderr}");
    assert_eq!(stderr.matches("search trial (").count(), 2, "{stderr}");
    let cache = tmp.path().join("cache/texset/search.json");
    let cached: serde_json::Value = serde_json::from_slice(&std::fs::read(&cache).unwrap()).unwrap();
    assert_eq!(cached["searches"].as_array().unwrap().len(), 1);

    // The report holds the search, and its options are the chosen point's, at the rate asked.
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let search = &json["search"];
    assert_eq!(search["trials"].as_array().unwrap().len(), 2);
    let chosen = &search["finals"][search["chosen"].as_u64().unwrap() as usize];
    assert_eq!(json["options"]["model"]["grids"][0]["bits"], chosen["point"]["latent_bits"]);
    assert_eq!(json["options"]["model"]["hidden_widths"], chosen["point"]["hidden_widths"]);
    assert_eq!(json["pooled_psnr_db"].as_f64().unwrap().to_bits(), chosen["pooled_psnr_db"].as_f64().unwrap().to_bits());
    assert!(json["bits_per_texel"].as_f64().unwrap() <= 3.0);
    assert_eq!(cached["searches"][0]["chosen"], chosen["point"]);
}

#[test]
fn a_one_by_one_constant_map_is_stored_flat_and_decodes_at_the_material_size() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("plastic");
    std::fs::create_dir(&src).unwrap();
    let base = image::RgbImage::from_fn(32, 32, |x, y| image::Rgb([(x * 7) as u8, (y * 5) as u8, ((x ^ y) * 3) as u8]));
    base.save(src.join("plastic_basecolor.png")).unwrap();
    // glTF-style constants: a 1×1 8-bit roughness and a 1×1 16-bit metallic.
    image::GrayImage::from_pixel(1, 1, image::Luma([77])).save(src.join("plastic_roughness.png")).unwrap();
    image::ImageBuffer::<image::Luma<u16>, _>::from_pixel(1, 1, image::Luma([40_000u16])).save(src.join("plastic_metallic.png")).unwrap();
    let before = snapshot(&src);
    let bundle = tmp.path().join("plastic.texset");
    let report = tmp.path().join("report.json");
    let (src_arg, bundle_arg, report_arg) = (src.to_str().unwrap(), bundle.to_str().unwrap(), report.to_str().unwrap());
    // 600 short steps: training alone left the 16-bit metallic below within 112 of 65,535 (4
    // under the classic recipe); the prune pass then sets a flat map's row to its mean.
    let out = texset(&["compress", src_arg, "-o", bundle_arg, "--steps", "600", "--no-ssim", "--report", report_arg]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "compress failed: {stderr}");
    assert!(stderr.contains("plastic_roughness.png (1x1): one value, stored flat and decoded at the material's 32x32"), "{stderr}");
    assert!(stderr.contains("plastic/roughness: 0/") && stderr.contains("plastic/metallic: 0/"), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(json["ingest"]["constants"].as_array().unwrap().len(), 2, "{}", json["ingest"]);

    // inspect: both constants 32×32 with no channels.
    let out = texset(&["inspect", bundle_arg]);
    let text = String::from_utf8_lossy(&out.stdout);
    for kind in ["roughness", "metallic"] {
        let line = text.lines().find(|l| l.trim_start().starts_with(kind)).unwrap_or_else(|| panic!("no {kind} line: {text}"));
        assert!(line.contains("32x32 1ch") && line.contains("budget 0/"), "{line}");
    }
    let out = texset(&["inspect", bundle_arg, "--json"]);
    let inspect: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for map in inspect["manifest"]["materials"][0]["maps"].as_array().unwrap() {
        assert_eq!((map["width"].as_u64(), map["height"].as_u64()), (Some(32), Some(32)), "{map}");
        if map["kind"] != "basecolor" {
            assert_eq!(map["latent_channels"].as_array().unwrap().len(), 0, "{map}");
        }
    }

    // decode: the constants at 32×32, in the sources' bit depths, holding their values.
    let decoded = tmp.path().join("decoded");
    let out = texset(&["decode", bundle_arg, "-o", decoded.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let roughness = image::open(decoded.join("plastic/plastic_roughness.png")).unwrap();
    assert_eq!((roughness.color(), roughness.width(), roughness.height()), (image::ColorType::L8, 32, 32));
    assert!(roughness.to_luma8().pixels().all(|p| p.0[0] == 77));
    let metallic = image::open(decoded.join("plastic/plastic_metallic.png")).unwrap();
    assert_eq!((metallic.color(), metallic.width(), metallic.height()), (image::ColorType::L16, 32, 32));
    // Within a quarter of an 8-bit step (64 of 16 bits).
    assert!(metallic.to_luma16().pixels().all(|p| p.0[0].abs_diff(40_000) <= 64), "{:?}", metallic.to_luma16().pixels().next());
    assert_eq!(snapshot(&src), before, "the source folder was written");
}

/// `inspect --levels` shows how each grid's latents fill their levels: a line per grid, and with
/// `--json` a count per level that adds up to the grid's values.
#[test]
fn inspect_levels_counts_every_latent_value_of_every_grid() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tmp.path().join("bricks.texset");
    let out =
        texset(&["compress", samples().join("bricks").to_str().unwrap(), "-o", bundle.to_str().unwrap(), "--steps", "20", "--no-ssim"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = texset(&["inspect", bundle.to_str().unwrap(), "--json", "--levels"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let grids = json["manifest"]["grids"].as_array().unwrap();
    let counts = json["latent_level_counts"].as_array().unwrap();
    assert_eq!(counts.len(), grids.len());
    for (grid, counts) in grids.iter().zip(counts) {
        let counts: Vec<u64> = counts.as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).collect();
        assert_eq!(counts.len(), 1 << grid["bits"].as_u64().unwrap());
        let values = grid["width"].as_u64().unwrap() * grid["height"].as_u64().unwrap() * grid["channels"].as_u64().unwrap();
        assert_eq!(counts.iter().sum::<u64>(), values, "{grid}");
        assert!(counts.iter().filter(|&&c| c > 0).count() > 1, "a trained grid uses more than one level: {counts:?}");
    }
    let text = String::from_utf8(texset(&["inspect", bundle.to_str().unwrap(), "--levels"]).stdout).unwrap();
    assert_eq!(text.lines().filter(|l| l.starts_with("grid ") && l.contains(" levels (")).count(), grids.len(), "{text}");
    // Without the flag neither form shows them.
    let plain = texset(&["inspect", bundle.to_str().unwrap(), "--json"]);
    assert!(!String::from_utf8_lossy(&plain.stdout).contains("latent_level_counts"));
}

/// `bench shared` (issue 66): two fabrics whose normal, height, AO and roughness files are
/// byte-identical, compressed as one library, against each texture alone at its combined PSNR.
#[test]
fn bench_shared_compresses_each_texture_alone_to_its_combined_psnr() {
    let (indigo, ochre) = (samples().join("fabric_indigo"), samples().join("fabric_ochre"));
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("shared.json");
    let args = ["bench", "shared", indigo.to_str().unwrap(), ochre.to_str().unwrap(), "--library", "--bpp", "4"];
    let args = [&args[..], &["--steps", "40", "--trials", "2", "--json", "--save", save.to_str().unwrap()]].concat();
    let out = texset(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let [row] = rows.as_array().unwrap().as_slice() else { panic!("one library, one rate: {rows}") };
    let textures = row["textures"].as_array().unwrap();
    // Ten maps, six distinct: the four identical pairs are compressed alone once each.
    let copies: Vec<u64> = textures.iter().map(|t| t["copies"].as_u64().unwrap()).collect();
    assert_eq!((textures.len(), copies.iter().sum::<u64>()), (6, 10), "{copies:?}");
    assert_eq!(copies.iter().filter(|&&c| c == 2).count(), 4);
    // The ratios are the sums of the bundles alone over the combined bundle's bits.
    let combined = row["combined_bits"].as_u64().unwrap() as f64;
    let alone = |per_material: bool| {
        textures
            .iter()
            .map(|t| t["alone_bits"].as_u64().unwrap() * if per_material { t["copies"].as_u64().unwrap() } else { 1 })
            .sum::<u64>() as f64
    };
    assert!((row["ratio_once"].as_f64().unwrap() - alone(false) / combined).abs() < 1e-9);
    assert!((row["ratio_per_material"].as_f64().unwrap() - alone(true) / combined).abs() < 1e-9);
    assert!(row["ratio_per_material"].as_f64().unwrap() > row["ratio_once"].as_f64().unwrap());
    // A texture that reached its target is within the tolerance of it, or above; the search's
    // largest bundle short of it is under it.
    for t in textures {
        let goal = t["combined_psnr_db"].as_f64().unwrap() - 0.05;
        if t["reached"].as_bool().unwrap() {
            assert!(t["alone_psnr_db"].as_f64().unwrap() >= goal, "{t}");
        }
        if let Some([bits, db]) = t["below"].as_array().map(Vec::as_slice) {
            assert!(db.as_f64().unwrap() < goal && bits.as_u64().unwrap() > 0, "{t}");
        }
    }
    assert!(stderr.contains("combined at 4 bits per texel"), "{stderr}");
    // Run again on the saved file: nothing is measured again, and the row is the same.
    let again = texset(&args);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{stderr}");
    assert_eq!(stderr.matches("kept from the saved run").count(), 7, "the combined bundle and six textures: {stderr}");
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&again.stdout).unwrap(), rows);
    // A search alone depends on the tolerance: with another, the combined bundle is kept and
    // every texture is searched again.
    let wider = texset(&[&args[..], &["--tolerance-db", "0.5"]].concat());
    let stderr = String::from_utf8_lossy(&wider.stderr);
    assert!(wider.status.success(), "{stderr}");
    assert_eq!(stderr.matches("kept from the saved run").count(), 1, "{stderr}");
    let saved: serde_json::Value = serde_json::from_slice(&std::fs::read(&save).unwrap()).unwrap();
    assert_eq!((saved["combined"].as_array().unwrap().len(), saved["alone"].as_array().unwrap().len()), (1, 12));
}
