//! The engine options' flags reach the engine, the bundle and the report, and bad values are
//! refused naming the flag.

use super::{samples, texset};

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
    // The defaults given as flags train the same model (the grids' default rate is in
    // quantisation steps, the classic recipe's in units); other rates another.
    assert_eq!(compress("same.texset", &["--mlp-lr", "0.005"]), default);
    let classic = compress("classic.texset", &["--recipe", "classic"]);
    assert_ne!(classic, default);
    assert_eq!(compress("same-classic.texset", &["--recipe", "classic", "--grid-lr", "0.02", "--mlp-lr", "0.004"]), classic);
    assert_ne!(compress("grid.texset", &["--grid-lr", "0.1"]), default);
    assert_ne!(compress("mlp.texset", &["--mlp-lr", "0.004"]), default);
    // From 5 bits per texel the row trains its decoder at 2.4 times the preset's rate; a rate
    // given is kept there, so the preset's own rate given trains another model than the row's.
    assert_ne!(compress("row.texset", &["--bpp", "6"]), compress("row-given.texset", &["--bpp", "6", "--mlp-lr", "0.005"]));
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
/// model, validated by naga) accepts too: one limit, `texset_core::model::MAX_MLP_WIDTH`.
#[test]
fn the_widest_decoder_the_cli_accepts_exports_as_a_shader() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("small");
    std::fs::create_dir_all(&dir).unwrap();
    image::RgbImage::from_fn(16, 16, |x, y| image::Rgb([(x * 16) as u8, (y * 16) as u8, 77])).save(dir.join("s_basecolor.png")).unwrap();
    let widest = texset_core::model::MAX_MLP_WIDTH;
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

    refused(
        bricks.to_str().unwrap(),
        &[
            (&["--budget-lasso", "1e-5"], "--learn-budgets"),
            (&["--learn-budgets", "--budget-cut-at", "0.95"], "before the latents freeze"),
            (&["--learn-budgets", "--budget-drop-below", "1.5"], "0 to 1 of the largest importance"),
            (&["--learn-budgets", "--prune-to", "4,4"], "--prune-to"),
            (&["--learn-budgets", "--backend", "wgpu"], "cannot train learned budgets"),
            (&["--learn-budgets", "--backend", "gpu"], "--backend gpu cannot train learned budgets"),
            (&["--prune-to", "4,4", "--backend", "gpu"], "--backend gpu cannot train channel pruning"),
        ],
    );
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

    refused(
        bricks_arg,
        &[
            (&["--sampling", "error", "--backend", "gpu"], "--backend gpu cannot train error-driven sampling"),
            (&["--sampling", "error", "--sampling-mix", "1"], "the mix must be 0 to 0.95"),
            (&["--sampling", "rms-error", "--sampling-uniform-after", "1.5"], "a fraction 0 to 1 of the steps"),
        ],
    );
}

/// Each `(flags, says)`: `compress` of `material` with the flags fails, its error says `says`,
/// and no bundle is written.
fn refused(material: &str, cases: &[(&[&str], &str)]) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("bad.texset");
    for (args, says) in cases {
        let out = texset(&[&["compress", material, "-o", path.to_str().unwrap(), "--steps", "10"][..], args].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(says), "{args:?}: {stderr}");
    }
    assert!(!path.exists());
}

/// `--recipe ntc` sets NTC's schedule, `--recipe-without` leaves pieces of it out (of the default
/// recipe too, but only pieces it has), and a flag given beside it wins over it; the report keeps
/// what trained. burn's reference trainer refuses NTC's quantisation pieces by name.
#[test]
fn the_ntc_recipe_reaches_the_report_and_flags_override_it() {
    let tmp = tempfile::tempdir().unwrap();
    let bricks = samples().join("bricks");
    let bundle = tmp.path().join("ntc.texset");
    let report = tmp.path().join("report.json");
    let (bricks_arg, bundle_arg, report_arg) = (bricks.to_str().unwrap(), bundle.to_str().unwrap(), report.to_str().unwrap());
    let args = ["--steps", "40", "--recipe", "ntc", "--recipe-without", "init,decay", "--mlp-lr", "0.003", "--no-ssim"];
    let out = texset(&[&["compress", bricks_arg, "-o", bundle_arg, "--report", report_arg][..], &args].concat());
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let schedule = &json["options"]["schedule"];
    let (quantisation, optimiser) = (&schedule["quantisation"], &schedule["optimiser"]);
    assert_eq!(quantisation["latent_noise"], "per_latent", "{schedule}");
    assert_eq!(quantisation["latents"], "qat", "{schedule}");
    assert_eq!(optimiser["sparse_updates"], true, "{schedule}");
    assert_eq!(quantisation["fp8_weights_at"].as_f64().map(|v| (v * 100.0).round()), Some(96.0), "{schedule}");
    assert_eq!(optimiser["grid_learning_rate_steps"].as_f64(), Some(1.5), "{schedule}");
    // Left out: the classic recipe's initialisation and decay floor.
    assert_eq!(schedule["latent_init"], "noise", "{schedule}");
    assert_eq!(optimiser["learning_rate_floor"].as_f64().map(|v| (v * 100.0).round()), Some(5.0), "{schedule}");
    // Given beside the recipe: the flag's rate.
    assert_eq!(optimiser["mlp_learning_rate"].as_f64().map(|v| (v * 1e4).round()), Some(30.0), "{schedule}");
    // The steps given are trained as given, on any backend.
    assert_eq!(schedule["steps_origin"], "given", "{schedule}");

    refused(
        bricks_arg,
        &[
            (&["--recipe", "ntc", "--backend", "burn-flex"], "cannot train NTC's quantisation pieces"),
            (&["--recipe", "ntc", "--recipe-without", "everything"], "invalid value 'everything'"),
            (&["--recipe", "texset", "--recipe-without", "noise"], "--recipe-without noise: the texset recipe has no such piece"),
            (&["--recipe-without", "weights"], "--recipe-without weights: the texset recipe has no such piece"),
            (&["--recipe", "classic", "--recipe-without", "rates"], "the classic recipe has no such piece"),
        ],
    );

    // The default recipe without one of its pieces: the classic choice for it alone.
    let out = texset(&[
        "compress",
        bricks_arg,
        "-o",
        bundle_arg,
        "--report",
        report_arg,
        "--steps",
        "20",
        "--no-ssim",
        "--recipe-without",
        "adam",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let schedule = &json["options"]["schedule"];
    // Left out: classic Adam (β2 0.99, dense updates); the other pieces stay.
    let optimiser = &schedule["optimiser"];
    assert_eq!(optimiser["adam_beta2"].as_f64().map(|v| (v * 100.0).round()), Some(99.0), "{schedule}");
    assert_eq!(optimiser["sparse_updates"], false, "{schedule}");
    assert_eq!(schedule["latent_init"], "normal", "{schedule}");
    assert_eq!(optimiser["grid_learning_rate_steps"].as_f64(), Some(1.5), "{schedule}");
}

/// `bench decode --decoder` decodes the widths asked, so builds compare at equal widths: the
/// classic 64-48-32 against the default 64-64-64 on bricks (40 inputs, 9 outputs), in multiply-adds
/// counted as two FLOPs each, plus the positional encoding's and the latent fetch's.
#[test]
fn bench_decode_takes_the_decoder_widths() {
    let bricks = samples().join("bricks");
    let flops = |extra: &[&str]| {
        let out = texset(&[&["bench", "decode", bricks.to_str().unwrap(), "--runs", "1"][..], extra].concat());
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let at = text.find(" FLOP/texel").unwrap_or_else(|| panic!("{text}"));
        text[..at].rsplit(' ').next().unwrap().parse::<u64>().unwrap()
    };
    let (classic, default) = (flops(&["--decoder", "64-48-32"]), flops(&[]));
    // 2 × (40·64 + 64·64 + 64·64 + 64·9) − 2 × (40·64 + 64·48 + 48·32 + 32·9) = 7,744.
    assert_eq!(default - classic, 7_744, "{classic} against {default} FLOP/texel");
    let bad = texset(&["bench", "decode", bricks.to_str().unwrap(), "--runs", "1", "--decoder", "0-3"]);
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("'0' is not a layer width"));
}
