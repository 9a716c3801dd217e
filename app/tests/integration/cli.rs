//! The `texset` command line end to end: compress → inspect → decode → eval, and exit codes.
#![allow(clippy::unwrap_used, missing_docs)]

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
    let out = texset(&[
        "bench",
        "rd",
        bricks.to_str().unwrap(),
        "--save",
        saved.to_str().unwrap(),
        "--presets",
        "fast",
        "--bpp",
        "2,6",
        "--steps",
        "60",
        "--plot",
        plot.to_str().unwrap(),
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let points: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let points = points.as_array().unwrap();
    let methods: Vec<&str> = points.iter().map(|p| p["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["texset fast", "texset fast", "BC high", "BC low"]);
    let f = |i: usize, key: &str| points[i][key].as_f64().unwrap();
    // texset lands at (or just under) the rates asked; more bits, more PSNR.
    assert!(f(0, "bits_per_texel") <= 2.0 && f(1, "bits_per_texel") <= 6.0 && f(1, "bits_per_texel") > 4.0);
    assert!(f(1, "pooled_psnr_db") > f(0, "pooled_psnr_db"));
    // bricks: basecolor, normal, roughness, ao, height: BC7 8 + BC5 8 + 3 × BC4 4 = 28 bits per
    // texel; BC1 for colour and normal: 4 + 4 + 12 = 20. BC7 is the better of the two, lit too.
    assert!((f(2, "bits_per_texel") - 28.0).abs() < 1e-9 && (f(3, "bits_per_texel") - 20.0).abs() < 1e-9);
    assert!(f(2, "pooled_psnr_db") > f(3, "pooled_psnr_db") && f(2, "rendered_psnr_db") > f(3, "rendered_psnr_db"));
    assert!(points.iter().all(|p| p["rendered_psnr_db"].as_f64().unwrap() > 15.0));
    let chart = image::open(&plot).unwrap().to_rgb8();
    assert_eq!(chart.width(), 1120);
    // The fast preset's colour (the palette's first) is drawn: its markers and curve.
    assert!(chart.pixels().filter(|p| p.0 == [31, 119, 180]).count() > 100);
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
fn weight_format_reaches_the_bundle_and_inspect_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    let bricks = samples().join("bricks");
    for (arg, shown) in [("e4m3", "E4M3 weights"), ("mxint8", "MXINT8 weights"), ("fp16", "fp16 weights")] {
        let bundle = tmp.path().join(format!("{arg}.texset"));
        let out = texset(&["compress", bricks.to_str().unwrap(), "-o", bundle.to_str().unwrap(), "--steps", "30", "--weight-format", arg]);
        assert!(out.status.success(), "{arg}: {}", String::from_utf8_lossy(&out.stderr));
        let out = texset(&["inspect", bundle.to_str().unwrap()]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && stdout.contains(shown), "{arg}: {stdout}");
        // What is written decodes: the GPU-free path reads it back.
        let decoded = tmp.path().join(format!("{arg}-png"));
        let out = texset(&["decode", bundle.to_str().unwrap(), "-o", decoded.to_str().unwrap()]);
        assert!(out.status.success(), "{arg}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn bench_quantisation_runs_the_four_mode_pairs_at_the_bits_asked() {
    let bricks = samples().join("bricks");
    let out = texset(&["bench", "quantisation", bricks.to_str().unwrap(), "--steps", "40", "--bits", "2,8", "--skip-formats", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let cells: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cells = cells.as_array().unwrap();
    let bits: Vec<u64> = cells.iter().map(|c| c["latent_bits"].as_u64().unwrap()).collect();
    assert_eq!(bits, [2, 2, 2, 2, 8, 8, 8, 8]);
    let modes: Vec<(&str, &str)> = cells.iter().map(|c| (c["latents"].as_str().unwrap(), c["weights"].as_str().unwrap())).collect();
    let pairs = [("qat", "qat"), ("ptq", "qat"), ("qat", "ptq"), ("ptq", "ptq")];
    assert_eq!(modes[..4], pairs);
    assert_eq!(modes[4..], pairs);
    // No weight-format table: every cell is int8, and 8-bit latents cost more bits than 2-bit.
    assert!(cells.iter().all(|c| c["weight_format"] == "int8_per_row"), "{cells:?}");
    assert!(cells[4]["bits_per_texel"].as_f64().unwrap() > cells[0]["bits_per_texel"].as_f64().unwrap());
    assert!(cells.iter().all(|c| c["pooled_psnr_db"].as_f64().unwrap() > 10.0), "{cells:?}");

    let bad = texset(&["bench", "quantisation", bricks.to_str().unwrap(), "--bits", "3"]);
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("--bits") && stderr.contains("3 is not a latent bit depth (2, 4 or 8)"), "{stderr}");
}

#[test]
fn learning_rates_reach_training_and_bad_ones_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let bricks = samples().join("bricks");
    let compress = |name: &str, extra: &[&str]| {
        let out_path = tmp.path().join(name);
        let mut args = vec!["compress", bricks.to_str().unwrap(), "--steps", "20", "-o", out_path.to_str().unwrap()];
        args.extend_from_slice(extra);
        let out = texset(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        std::fs::read(&out_path).unwrap()
    };
    let default = compress("default.texset", &[]);
    // The defaults given as flags train the same model; other rates another.
    assert_eq!(compress("same.texset", &["--grid-lr", "0.02", "--mlp-lr", "0.004"]), default);
    assert_ne!(compress("grid.texset", &["--grid-lr", "0.1"]), default);
    assert_ne!(compress("mlp.texset", &["--mlp-lr", "0.005"]), default);
    for (flag, value) in [("--grid-lr", "0"), ("--mlp-lr", "-1"), ("--grid-lr", "NaN"), ("--mlp-lr", "2")] {
        let out_path = tmp.path().join("bad.texset");
        let arg = format!("{flag}={value}");
        let bad = texset(&["compress", bricks.to_str().unwrap(), "--steps", "20", &arg, "-o", out_path.to_str().unwrap()]);
        assert!(!bad.status.success());
        let stderr = String::from_utf8_lossy(&bad.stderr);
        assert!(stderr.contains(flag) && stderr.contains("is not a learning rate"), "{stderr}");
        assert!(!out_path.exists());
    }
}

#[test]
fn a_time_budget_picks_the_steps_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let bricks = samples().join("bricks");
    for flag in ["--time-budget", "--train-secs"] {
        let out_path = tmp.path().join("budget.texset");
        let out = texset(&["compress", bricks.to_str().unwrap(), flag, "3", "--no-ssim", "-o", out_path.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{flag}: {stderr}");
        assert!(stderr.contains("time budget 3.0 s:") && stderr.contains("ms per step measured, so"), "{flag}: {stderr}");
        assert!(out_path.is_file());
        std::fs::remove_file(&out_path).unwrap();
    }
}

#[test]
fn decoder_widths_reach_the_bundle_and_bad_ones_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let bricks = samples().join("bricks");
    let bundle = tmp.path().join("narrow.texset");
    let out = texset(&["compress", bricks.to_str().unwrap(), "-o", bundle.to_str().unwrap(), "--steps", "30", "--decoder", "24-16"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = texset(&["inspect", bundle.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mlp = stdout.lines().find(|l| l.starts_with("mlp: ")).unwrap();
    // inputs-24-16-outputs: the two hidden layers asked for, nothing else between.
    let widths: Vec<&str> = mlp["mlp: ".len()..].split(' ').next().unwrap().split('-').collect();
    assert_eq!(widths.len(), 4, "{mlp}");
    assert_eq!(widths[1..3], ["24", "16"], "{mlp}");

    for (arg, says) in [("24-0", "--decoder: '0' is not a layer width"), ("wide", "--decoder: 'wide' is not a layer width")] {
        let out = texset(&["compress", bricks.to_str().unwrap(), "-o", tmp.path().join("bad.texset").to_str().unwrap(), "--decoder", arg]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(says), "{arg}: {stderr}");
    }
    let deep = vec!["8"; 16].join("-");
    let out = texset(&["compress", bricks.to_str().unwrap(), "-o", tmp.path().join("deep.texset").to_str().unwrap(), "--decoder", &deep]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("16 hidden layers; at most 15"), "{stderr}");
    assert!(!tmp.path().join("bad.texset").exists() && !tmp.path().join("deep.texset").exists());
}

/// The widest decoder `--decoder` accepts makes a bundle that `export-shader` (the GPU decoder's
/// model, validated by naga) accepts too: one limit, `texset_core::model::params::MAX_MLP_WIDTH`.
#[test]
fn the_widest_decoder_the_cli_accepts_exports_as_a_shader() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("small");
    std::fs::create_dir_all(&dir).unwrap();
    image::RgbImage::from_fn(16, 16, |x, y| image::Rgb([(x * 16) as u8, (y * 16) as u8, 77])).save(dir.join("s_basecolor.png")).unwrap();
    let widest = texset_core::model::params::MAX_MLP_WIDTH;
    let bundle = tmp.path().join("wide.texset");
    let decoder = format!("{widest}-{widest}");
    let out =
        texset(&["compress", dir.to_str().unwrap(), "-o", bundle.to_str().unwrap(), "--steps", "3", "--no-ssim", "--decoder", &decoder]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let shader = tmp.path().join("wide.wgsl");
    let out = texset(&["export-shader", bundle.to_str().unwrap(), "--lang", "wgsl", "-o", shader.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read_to_string(&shader).unwrap().contains(&format!("const MAX_WIDTH: u32 = {widest}u;")));
    // One wider is refused before any training.
    let wider = format!("{}", widest + 1);
    let out = texset(&["compress", dir.to_str().unwrap(), "-o", tmp.path().join("wider.texset").to_str().unwrap(), "--decoder", &wider]);
    assert!(!out.status.success(), "--decoder {wider} was accepted");
    assert!(!tmp.path().join("wider.texset").exists());
}

#[test]
fn learned_budgets_are_reported_per_texture_and_bad_settings_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let bricks = samples().join("bricks");
    let bundle = tmp.path().join("learned.texset");
    let out = texset(&["compress", bricks.to_str().unwrap(), "-o", bundle.to_str().unwrap(), "--steps", "40", "--learn-budgets"]);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    // The prune pass names the cut, and every texture's budget line says what the cut made of it.
    assert!(text.contains("budgets learned: gates per texture and channel") && text.contains("cut at step 12"), "{text}");
    let learned = text.lines().filter(|l| l.contains("-> ") && l.contains("learned: ")).count();
    let textures = text.lines().filter(|l| l.trim_start().starts_with("bricks/") && l.contains("channels (")).count();
    assert!(textures >= 2 && learned == textures, "{learned} learned reasons for {textures} textures:\n{text}");

    let path = tmp.path().join("bad.texset");
    for (args, says) in [
        (vec!["--budget-lasso", "1e-5"], "--learn-budgets"),
        (vec!["--learn-budgets", "--budget-cut-at", "0.95"], "before the latents freeze"),
        (vec!["--learn-budgets", "--budget-drop-below", "1.5"], "0 to 1 of the largest importance"),
        (vec!["--learn-budgets", "--prune-to", "4,4"], "--prune-to"),
        (vec!["--learn-budgets", "--backend", "wgpu"], "cannot train learned budgets"),
        (vec!["--learn-budgets", "--backend", "gpu"], "--backend gpu cannot train learned budgets"),
        (vec!["--prune-to", "4,4", "--backend", "gpu"], "--backend gpu cannot train channel pruning"),
    ] {
        let mut all = vec!["compress", bricks.to_str().unwrap(), "-o", path.to_str().unwrap(), "--steps", "10"];
        all.extend(&args);
        let out = texset(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(says), "{args:?}: {stderr}");
    }
    assert!(!path.exists());
}

#[test]
fn error_driven_sampling_reports_its_refreshes_and_bad_settings_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let bricks = samples().join("bricks");
    let bundle = tmp.path().join("error.texset");
    let report = tmp.path().join("report.json");
    let (bricks_arg, bundle_arg, report_arg) = (bricks.to_str().unwrap(), bundle.to_str().unwrap(), report.to_str().unwrap());
    let out =
        texset(&["compress", bricks_arg, "-o", bundle_arg, "--steps", "40", "--sampling", "error", "--no-ssim", "--report", report_arg]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    // 40 steps: a refresh every 2 steps from step 2 until the uniform tail at step 36.
    assert!(text.contains("error-driven sampling: 17 error-map refreshes took"), "{text}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let train = &json["passes"]["train"];
    assert_eq!(train["sampling"], "error", "{train}");
    assert_eq!(train["sampling_refreshes"], 17, "{train}");

    let path = tmp.path().join("bad.texset");
    for (args, says) in [
        (vec!["--sampling", "error", "--backend", "gpu"], "--backend gpu cannot train error-driven sampling"),
        (vec!["--sampling", "error", "--sampling-mix", "1"], "the mix must be 0 to 0.95"),
        (vec!["--sampling", "rms-error", "--sampling-uniform-after", "1.5"], "a fraction 0 to 1 of the steps"),
    ] {
        let mut all = vec!["compress", bricks_arg, "-o", path.to_str().unwrap(), "--steps", "10"];
        all.extend(&args);
        let out = texset(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(says), "{args:?}: {stderr}");
    }
    assert!(!path.exists());
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
    // 600 short steps: a flat map's output row settles within half an 8-bit step.
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

/// The flags a `--help` text lists, by long name (`--output`), with the short name (`-o`) of those
/// that have one; without `--help` and `--version`.
fn help_flags(help: &str) -> std::collections::BTreeMap<String, Option<String>> {
    help.lines()
        .filter_map(|line| {
            // `  -o, --output <OUTPUT>` or `      --bpp <BPP>`: a short flag first, or none. Deeper
            // lines are descriptions.
            let indent = line.len() - line.trim_start().len();
            let line = line.trim_start();
            if indent > 6 {
                return None;
            }
            let (short, line) = match line.split_once(", ") {
                Some((short, rest)) if short.len() == 2 && short.starts_with('-') => (Some(short.to_owned()), rest),
                _ => (None, line),
            };
            let flag: String = line.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
            (flag.starts_with("--") && !["--help", "--version"].contains(&flag.as_str())).then_some((flag, short))
        })
        .collect()
}

/// The subcommands a `--help` text lists (its `Commands:` section), without `help`.
fn help_commands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // A command's line; deeper ones continue its description.
        .filter(|l| !l[2..].starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

/// The README's CLI synopsis: for each command line (`texset compress …`, `texset bench rd …`, and
/// the lines indented under it), the command and the long flags it shows. Comments (`# …`) are
/// not part of it.
fn readme_synopsis() -> Vec<(String, std::collections::BTreeSet<String>)> {
    let readme = std::fs::read_to_string(texset_testkit::repo_root().join("README.md")).unwrap();
    let block = readme.split_once("## CLI\n```\n").unwrap().1.split_once("```").unwrap().0;
    let mut commands: Vec<(String, std::collections::BTreeSet<String>)> = Vec::new();
    for line in block.lines() {
        let code = line.split_once('#').map_or(line, |(code, _)| code);
        if let Some(rest) = code.strip_prefix("texset") {
            let mut words =
                rest.split_whitespace().take_while(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '-') && !w.starts_with('-'));
            let mut command = words.next().unwrap_or_default().to_owned();
            if command == "bench" {
                command = format!("bench {}", words.next().unwrap());
            }
            commands.push((command, std::collections::BTreeSet::new()));
        }
        // `--name`, or a short `-o` (a single letter; `-` alone is a hyphen).
        let flags = code
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .filter(|w| w.starts_with("--") && w.len() > 2 || w.len() == 2 && w.starts_with('-') && w.as_bytes()[1].is_ascii_alphabetic());
        commands.last_mut().unwrap().1.extend(flags.map(str::to_owned));
    }
    commands
}

#[test]
fn readme_synopsis_matches_every_subcommands_help() {
    let help = |args: &[&str]| {
        let out = texset(&[args, &["--help"]].concat());
        assert!(out.status.success(), "{args:?} --help: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    // Every command of `--help` (bench: each of its subcommands) has a line in the README.
    let mut commands = Vec::new();
    for command in help_commands(&help(&[])) {
        if command == "bench" {
            commands.extend(help_commands(&help(&["bench"])).into_iter().map(|sub| format!("bench {sub}")));
        } else {
            commands.push(command);
        }
    }
    let synopsis = readme_synopsis();
    let shown: Vec<&str> = synopsis.iter().map(|(c, _)| c.as_str()).collect();
    for command in &commands {
        assert!(shown.contains(&command.as_str()), "README's CLI synopsis has no `texset {command}` line");
    }
    // Each command's README lines show exactly the flags its `--help` lists (a command may have
    // several lines: `compress --batch`, `bench rd --from`).
    for command in &commands {
        let args: Vec<&str> = command.split(' ').collect();
        let flags = help_flags(&help(&args));
        // A short flag in the README stands for its long name.
        let long_name =
            |f: &String| flags.iter().find(|(_, short)| short.as_ref() == Some(f)).map_or_else(|| f.clone(), |(long, _)| long.clone());
        let readme: std::collections::BTreeSet<String> =
            synopsis.iter().filter(|(c, _)| c == command).flat_map(|(_, flags)| flags.iter().map(long_name)).collect();
        let actual: std::collections::BTreeSet<String> = flags.into_keys().collect();
        let missing: Vec<_> = actual.difference(&readme).collect();
        let unknown: Vec<_> = readme.difference(&actual).collect();
        assert!(missing.is_empty() && unknown.is_empty(), "texset {command}: README lacks {missing:?}; --help has no {unknown:?}");
    }
    // The bare `texset` line (the studio) is the only one that is not a subcommand.
    for (command, _) in &synopsis {
        assert!(command.is_empty() || commands.contains(command), "README shows `texset {command}`, which --help does not list");
    }
}

/// Without `XDG_RUNTIME_DIR` (unset or empty) a headless run prints no error line from Mesa's
/// Vulkan device-select layer, which connects to Wayland on every instance (before the fix: two
/// `error: XDG_RUNTIME_DIR is invalid …` lines per `compress` on this machine). Where that layer
/// is not installed there is nothing to check.
#[test]
fn a_headless_run_without_xdg_runtime_dir_prints_no_wayland_error() {
    const NAME: &str = "a_headless_run_without_xdg_runtime_dir_prints_no_wayland_error";
    let manifests = ["/usr/share/vulkan/implicit_layer.d", "/etc/vulkan/implicit_layer.d"];
    let layer = manifests.iter().any(|d| Path::new(d).join("VkLayer_MESA_device_select.json").exists());
    if !layer {
        texset_testkit::skip(NAME, "Mesa's device-select Vulkan layer is not installed here");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tmp.path().join("bricks.texset");
    for runtime_dir in [None, Some("")] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_texset"));
        command.args(["compress", samples().join("bricks").to_str().unwrap(), "-o", bundle.to_str().unwrap(), "--steps", "2", "--no-ssim"]);
        command.env_remove("XDG_RUNTIME_DIR").env_remove("NODEVICE_SELECT");
        if let Some(dir) = runtime_dir {
            command.env("XDG_RUNTIME_DIR", dir);
        }
        let out = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(!stderr.contains("XDG_RUNTIME_DIR is invalid"), "XDG_RUNTIME_DIR {runtime_dir:?}: {stderr}");
    }
}

/// Output into a reader that stopped early (`texset inspect b.texset | head -1`) ends the run as
/// it ends `cat`, by `SIGPIPE`, not with a panic about a broken pipe on stderr (which it did
/// before: exit 101 and a backtrace).
#[cfg(unix)]
#[test]
fn output_into_a_closed_pipe_ends_the_run_quietly() {
    use std::os::unix::process::ExitStatusExt as _;
    const SIGPIPE: i32 = 13;
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tmp.path().join("bricks.texset");
    let out =
        texset(&["compress", samples().join("bricks").to_str().unwrap(), "-o", bundle.to_str().unwrap(), "--steps", "2", "--no-ssim"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // A pipe whose only reader is already closed: the first write fails, whatever the timing.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_texset")).args(["inspect", bundle.to_str().unwrap()]).stdout(writer).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.signal(), Some(SIGPIPE), "{:?}: {stderr}", out.status);
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
