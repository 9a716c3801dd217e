//! The studio driven without a screen (`egui_kittest`): load the sample folders, train, change a
//! budget and retrain, export, restore the session — asserting on state and on the exported file,
//! and that the source folders' bytes and modification times are unchanged.
#![allow(clippy::unwrap_used)]

use texset_testkit::sample_dirs;

use eframe::egui;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use texset::studio::StudioApp;
use texset::studio::session::RunState;
use texset::studio::state::{CentralView, Command, Settings};
use texset_core::{bundle::Bundle, eval::evaluate, options::Preset};

/// Every file's bytes and modification time under the folders.
fn snapshot(folders: &[PathBuf]) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime)> {
    let mut out = BTreeMap::new();
    for folder in folders {
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::metadata(&path).unwrap();
            out.insert(path.clone(), (std::fs::read(&path).unwrap(), meta.modified().unwrap()));
        }
    }
    out
}

fn new_harness(app: StudioApp) -> Harness<'static, StudioApp> {
    Harness::builder().with_size([1400.0, 900.0]).build_ui_state(|ui, app: &mut StudioApp| app.frame_ui(ui), app)
}

/// Steps the UI until `done` holds (panics after `limit`).
fn step_until(harness: &mut Harness<'_, StudioApp>, what: &str, limit: Duration, done: impl Fn(&StudioApp) -> bool) {
    let start = Instant::now();
    while !done(harness.state()) {
        assert!(start.elapsed() < limit, "timed out waiting for {what}; messages: {:?}", harness.state().session.status.messages);
        harness.step();
        std::thread::sleep(Duration::from_millis(20));
    }
    harness.step();
}

#[test]
fn studio_loads_trains_changes_a_budget_exports_and_restores() {
    let folders = sample_dirs();
    assert!(folders.len() >= 2, "sample_textures is missing");
    let before = snapshot(&folders);
    let data_dir = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let settings = Settings { preset: Preset::Fast, steps: Some(150), ..Settings::default() };
    let app = StudioApp::with_repaint(settings, folders.clone(), None, Some(data_dir.path().to_path_buf()), Arc::new(|| {})).unwrap();
    let mut harness = new_harness(app);

    // Load: every sample material appears in the library panel with its maps.
    step_until(&mut harness, "the library to load", Duration::from_mins(1), |a| !a.session.library.set.materials.is_empty());
    let set = Arc::clone(&harness.state().session.library.set);
    assert_eq!(set.materials.len(), folders.len());
    assert!(harness.state().session.library.problems.is_empty(), "{:?}", harness.state().session.library.problems);
    harness.get_by_label("bricks");
    assert!(harness.query_all_by_label_contains("basecolor").count() >= folders.len());
    // Budgets are shown before training (from the analyse pass).
    step_until(&mut harness, "the analysis", Duration::from_mins(1), |a| matches!(a.session.library.analysis, Some(Ok(_))));
    // The training panel's "Learn budgets" reaches the options (and is persisted); off again
    // for the runs below.
    harness.get_by_label("Learn budgets").click();
    harness.step();
    assert!(harness.state().session.settings.learn_budgets);
    assert_eq!(harness.state().session.options().budgets.learned, Some(texset_core::options::LearnedBudgets::default()));
    harness.get_by_label("Learn budgets").click();
    harness.step();
    assert!(harness.state().session.options().budgets.learned.is_none());

    // Train by clicking the button; it runs on its thread while frames keep coming.
    harness.get_by_label("Start training").click();
    harness.step();
    assert!(harness.state().session.is_training());
    step_until(&mut harness, "training to finish", Duration::from_mins(10), |a| a.session.training.run.state == RunState::Finished);
    // The final bundle's decode, not a snapshot's that may still be on screen when training ends.
    step_until(&mut harness, "the decoded maps", Duration::from_mins(2), |a| {
        a.session.current_decoded().is_some_and(|d| d.scores.is_some())
    });
    let first_psnr = harness.state().session.current_decoded().unwrap().scores.as_ref().unwrap().pooled_psnr_db;
    assert!(first_psnr > 20.0, "pooled PSNR {first_psnr:.2} dB after the short run");
    assert!(!harness.state().session.training.run.psnr.is_empty(), "the PSNR curve has points");
    // The final bundle's slow metrics: FLIP per map and the rendered error per material.
    step_until(&mut harness, "the rendered error", Duration::from_mins(2), |a| {
        a.session.current_decoded().is_some_and(|d| !d.rendered.is_empty())
    });
    {
        let decoded = harness.state().session.current_decoded().unwrap();
        assert_eq!(decoded.rendered.len(), set.materials.len());
        assert!(decoded.rendered.iter().all(|r| r.rendered_psnr_db > 15.0 && r.rendered_flip > 0.0), "{:?}", decoded.rendered);
        assert!(decoded.scores.as_ref().unwrap().maps.iter().all(|m| m.flip.is_some()));
    }
    harness.step();
    harness.get_by_label_contains("Rendered (preview plane");
    let first_bytes = harness.state().session.shown.trained.as_ref().unwrap().bytes.clone().unwrap();

    // The BCn side: tick the checkbox; the selected map (the first material's first map) is
    // block-compressed on its thread and shown with its format, cost and PSNR.
    harness.get_by_label("BCn").click();
    step_until(&mut harness, "the BCn round trip", Duration::from_mins(1), |a| a.session.compare.bcn.contains_key(&(0, 0)));
    let bcn = Arc::clone(&harness.state().session.compare.bcn[&(0, 0)]);
    let first = &set.materials[0].textures[0];
    assert_eq!(bcn.format, texset_core::export::bcn::BcFormat::for_map(first.info.kind, first.info.channels));
    assert!(bcn.psnr_db > 25.0, "{:?} at {:.2} dB", bcn.format, bcn.psnr_db);
    assert!(harness.state().session.settings.view.bcn);
    harness.get_by_label_contains(&format!("{:?}: {:.0} bits/texel", bcn.format, bcn.bits_per_texel));

    // Change a budget (what the budget panel's drag value emits) and retrain.
    let texture = "bricks/roughness".to_owned();
    harness.state_mut().session.apply(Command::SetBudget(texture.clone(), Some(4)));
    harness.get_by_label("Start training").click();
    harness.step();
    step_until(&mut harness, "the retrain", Duration::from_mins(10), |a| {
        a.session.training.run.state == RunState::Finished && !a.session.is_training()
    });
    let trained = harness.state().session.shown.trained.as_ref().unwrap();
    let bricks = trained.bundle.manifest.materials.iter().find(|m| m.name == "bricks").unwrap();
    let roughness = bricks.maps.iter().find(|e| e.info.kind.token() == "roughness").unwrap();
    assert_eq!(roughness.latent_channels.len(), 4, "the artist's budget reached the bundle");
    let bytes = trained.bytes.clone().unwrap();
    assert_ne!(*bytes, *first_bytes);

    // Export: the bundle file is exactly the trained bytes; images and shaders are written.
    let bundle_path = out_dir.path().join("library.texset");
    harness.state_mut().session.apply(Command::ExportBundle(bundle_path.clone()));
    assert_eq!(std::fs::read(&bundle_path).unwrap(), *bytes);
    let exported = Bundle::read(&bundle_path).unwrap();
    assert_eq!(exported.manifest.materials.len(), folders.len());
    harness.state_mut().session.apply(Command::ExportImages(out_dir.path().join("decoded")));
    assert!(out_dir.path().join("decoded/bricks/bricks_roughness.png").is_file(), "{:?}", harness.state().session.status.messages);
    harness.state_mut().session.apply(Command::ExportShaders(out_dir.path().join("shaders")));
    for name in ["decoder.wgsl", "decoder.hlsl", "decoder.metal", "decoder_fs_decode_map.glsl"] {
        assert!(out_dir.path().join("shaders").join(name).is_file(), "{name}: {:?}", harness.state().session.status.messages);
    }

    // Restore: a new studio from the saved settings shows the same trained bundle.
    let saved = harness.state().session.settings.clone();
    assert_eq!(saved.budgets.get(&texture), Some(&4));
    drop(harness);
    let app = StudioApp::with_repaint(saved, Vec::new(), None, Some(data_dir.path().to_path_buf()), Arc::new(|| {})).unwrap();
    let mut harness = new_harness(app);
    step_until(&mut harness, "the restored bundle", Duration::from_mins(1), |a| a.session.shown.trained.is_some());
    assert_eq!(*harness.state().session.shown.trained.as_ref().unwrap().bytes.clone().unwrap(), *bytes);
    assert_eq!(harness.state().session.training.run.state, RunState::Finished);

    // The sources were only read.
    assert_eq!(snapshot(&folders), before, "source folders changed");
}

#[test]
fn a_bad_folder_is_a_problem_listed_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("broken");
    std::fs::create_dir(&bad).unwrap();
    std::fs::write(bad.join("broken_basecolor.png"), b"not a png").unwrap();
    let good = sample_dirs().into_iter().next().unwrap();
    let settings = Settings::default();
    let app = StudioApp::with_repaint(settings, vec![bad.clone(), good], None, None, Arc::new(|| {})).unwrap();
    let mut harness = new_harness(app);
    step_until(&mut harness, "loading", Duration::from_mins(1), |a| !a.session.library.set.materials.is_empty());
    let problems = &harness.state().session.library.problems;
    assert_eq!(harness.state().session.library.set.materials.len(), 1);
    assert!(problems.iter().any(|p| p.message.contains("broken_basecolor.png")), "{problems:?}");
    harness.get_by_label_contains("broken_basecolor.png");
}

#[test]
fn a_map_saved_on_disk_is_reimported_and_fine_tuned() {
    // A copy of one sample material the test may change (the samples themselves are never written).
    let source = sample_dirs().into_iter().find(|p| p.ends_with("bricks")).unwrap();
    let work = tempfile::tempdir().unwrap();
    let folder = work.path().join("bricks");
    std::fs::create_dir(&folder).unwrap();
    for entry in std::fs::read_dir(&source).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, folder.join(path.file_name().unwrap())).unwrap();
    }
    let data_dir = tempfile::tempdir().unwrap();
    let settings = Settings { preset: Preset::Fast, steps: Some(200), ..Settings::default() };
    let app = StudioApp::with_repaint(settings, vec![folder.clone()], None, Some(data_dir.path().to_path_buf()), Arc::new(|| {})).unwrap();
    let mut harness = new_harness(app);
    step_until(&mut harness, "loading", Duration::from_mins(1), |a| !a.session.library.set.materials.is_empty());
    harness.get_by_label("Start training").click();
    harness.step();
    step_until(&mut harness, "training", Duration::from_mins(10), |a| {
        a.session.training.run.state == RunState::Finished && a.session.settings.trained_bundle.is_some()
    });
    let before = harness.state().session.shown.trained.as_ref().unwrap().bytes.clone().unwrap();
    let old_set = Arc::clone(&harness.state().session.library.set);

    // The artist darkens the roughness map in their painting tool and saves it.
    let roughness = folder.join("bricks_roughness.png");
    let mut image = image::open(&roughness).unwrap().to_luma8();
    for p in image.pixels_mut() {
        p.0[0] /= 2;
    }
    image.save(&roughness).unwrap();

    step_until(&mut harness, "the fine-tune to start", Duration::from_mins(1), |a| a.session.is_training());
    assert!(
        harness.state().session.training.run.lines.iter().any(|l| l.contains("fine-tuning") && l.contains("bricks_roughness.png")),
        "{:?}",
        harness.state().session.training.run.lines
    );
    let new_set = Arc::clone(&harness.state().session.library.set);
    assert!(!Arc::ptr_eq(&old_set, &new_set), "the library was re-imported");
    let index = new_set.materials[0].textures.iter().position(|t| t.info.kind.token() == "roughness").unwrap();
    let (old_mean, new_mean) = [&old_set, &new_set]
        .map(|s| {
            let t = &s.materials[0].textures[index];
            t.texels.iter().sum::<f32>() / t.texels.len() as f32
        })
        .into();
    assert!(new_mean < old_mean * 0.6, "the re-imported roughness is the edited one ({new_mean} vs {old_mean})");
    step_until(&mut harness, "the fine-tune to finish", Duration::from_mins(10), |a| a.session.training.run.state == RunState::Finished);
    step_until(&mut harness, "the scores", Duration::from_mins(2), |a| a.session.current_decoded().is_some_and(|d| d.scores.is_some()));
    let after = harness.state().session.shown.trained.as_ref().unwrap().bytes.clone().unwrap();
    assert_ne!(*after, *before);
    let score = harness.state().session.current_decoded().unwrap().scores.as_ref().unwrap();
    let map = score.maps.iter().find(|m| m.map == "roughness").unwrap();
    // Scored against the edited map: the fine-tune learned the change.
    println!("roughness after the fine-tune: {:.2} dB (pooled {:.2} dB)", map.psnr_db, score.pooled_psnr_db);
    assert!(map.psnr_db > 25.0, "roughness after the fine-tune: {:.2} dB", map.psnr_db);
}

#[test]
fn pause_holds_training_and_resume_continues_it() {
    let folders = sample_dirs();
    let data_dir = tempfile::tempdir().unwrap();
    // Long enough that it cannot finish during the test; it is cancelled at the end.
    let settings = Settings { preset: Preset::Fast, steps: Some(100_000), ..Settings::default() };
    let app = StudioApp::with_repaint(settings, folders, None, Some(data_dir.path().to_path_buf()), Arc::new(|| {})).unwrap();
    let mut harness = new_harness(app);
    step_until(&mut harness, "the library to load", Duration::from_mins(1), |a| !a.session.library.set.materials.is_empty());
    harness.get_by_label("Start training").click();
    step_until(&mut harness, "the first training status", Duration::from_mins(2), |a| {
        a.session.training.run.status.as_ref().is_some_and(|s| s.step > 0)
    });

    harness.get_by_label("Pause").click();
    harness.step();
    assert_eq!(harness.state().session.training.run.state, RunState::Paused);
    // The trainer stops at its next status report (at most half a second away); after that the
    // step count holds.
    let settle = Instant::now();
    while settle.elapsed() < Duration::from_millis(1500) {
        harness.step();
        std::thread::sleep(Duration::from_millis(20));
    }
    let held = harness.state().session.training.run.status.as_ref().unwrap().step;
    let hold = Instant::now();
    while hold.elapsed() < Duration::from_millis(1500) {
        harness.step();
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(harness.state().session.training.run.status.as_ref().unwrap().step, held, "training went on while paused");
    harness.get_by_label("Resume").click();
    harness.step();
    assert_eq!(harness.state().session.training.run.state, RunState::Running);
    step_until(&mut harness, "training to go on after Resume", Duration::from_mins(1), |a| {
        a.session.training.run.status.as_ref().is_some_and(|s| s.step > held)
    });

    harness.get_by_label("Cancel").click();
    step_until(&mut harness, "the run to be cancelled", Duration::from_mins(1), |a| a.session.training.run.state == RunState::Cancelled);
    assert!(!harness.state().session.is_training());
}

#[test]
fn shortcuts_drive_the_studio_and_every_run_is_kept_in_the_log() {
    let folders = sample_dirs();
    let data_dir = tempfile::tempdir().unwrap();
    let settings = Settings { preset: Preset::Fast, steps: Some(40), ..Settings::default() };
    let app = StudioApp::with_repaint(settings, folders, None, Some(data_dir.path().to_path_buf()), Arc::new(|| {})).unwrap();
    let mut harness = new_harness(app);
    step_until(&mut harness, "the analysis", Duration::from_mins(1), |a| matches!(a.session.library.analysis, Some(Ok(_))));

    // The help overlay lists every shortcut; `?` and F1 open and close it.
    harness.key_press(egui::Key::F1);
    harness.step();
    harness.get_by_label("Keyboard shortcuts");
    for s in &texset::studio::shortcuts::SHORTCUTS {
        assert!(harness.query_all_by_label(s.description).count() >= 1, "the overlay lacks '{}'", s.description);
    }
    harness.key_press(egui::Key::F1);
    harness.step();
    assert!(harness.query_by_label("Keyboard shortcuts").is_none(), "F1 did not close the overlay");

    // 2 / 1 switch the central view; D, B and L toggle their views.
    harness.key_press(egui::Key::Num2);
    harness.step();
    assert_eq!(harness.state().session.settings.view.central, CentralView::Preview);
    harness.key_press(egui::Key::Num1);
    harness.step();
    assert_eq!(harness.state().session.settings.view.central, CentralView::Compare);
    let view = harness.state().session.settings.view.clone();
    for key in [egui::Key::D, egui::Key::B, egui::Key::L] {
        harness.key_press(key);
        harness.step();
    }
    let toggled = &harness.state().session.settings.view;
    assert_eq!((toggled.difference, toggled.bcn, toggled.lights_orbit), (!view.difference, !view.bcn, !view.lights_orbit));

    // X swaps the viewport's compared sides.
    let sides = harness.state().session.settings.view.compare_sides;
    harness.key_press(egui::Key::X);
    harness.step();
    assert_eq!(harness.state().session.settings.view.compare_sides, [sides[1], sides[0]], "X did not swap the sides");

    // Space starts training, pauses and resumes it.
    harness.key_press(egui::Key::Space);
    harness.step();
    assert!(harness.state().session.is_training(), "Space did not start training");
    harness.key_press(egui::Key::Space);
    harness.step();
    assert_eq!(harness.state().session.training.run.state, RunState::Paused);
    harness.key_press(egui::Key::Space);
    harness.step();
    assert_eq!(harness.state().session.training.run.state, RunState::Running);
    let scored = |a: &StudioApp| a.session.log.runs.last().is_some_and(|r| r.psnr_db.is_some() && r.rendered_psnr_db.is_some());
    step_until(&mut harness, "the first run and its scores", Duration::from_mins(3), scored);

    // A second run with other settings; both are in the log with their bundles kept.
    harness.state_mut().session.apply(Command::SetSteps(Some(80)));
    harness.state_mut().session.apply(Command::StartTraining);
    step_until(&mut harness, "the second run", Duration::from_mins(3), |a| a.session.log.runs.len() == 2 && scored(a));
    let runs = harness.state().session.log.runs.clone();
    assert_eq!(runs.iter().map(|r| r.id).collect::<Vec<_>>(), [1, 2]);
    assert_eq!((runs[0].settings.steps, runs[1].settings.steps), (Some(40), Some(80)));
    for run in &runs {
        let bytes = std::fs::read(&run.bundle).unwrap();
        assert_eq!(bytes.len() as u64, run.bundle_bytes);
        Bundle::from_bytes(&bytes).unwrap();
        assert!(run.bits_per_texel > 0.0 && run.train_secs > 0.0);
        // The log's PSNR is the bundle's, as `texset eval` measures it.
        let set = &harness.state().session.library.set;
        let bundle = Bundle::from_bytes(&bytes).unwrap();
        let eval = evaluate(set, &texset_core::decode::Decoder::new(&bundle), false).unwrap();
        assert!((eval.pooled_psnr_db - run.psnr_db.unwrap()).abs() < 1e-9, "{} vs {:?}", eval.pooled_psnr_db, run.psnr_db);
    }
    harness.get_by_label("#1");
    harness.get_by_label("#2");

    // A/B: both runs load and decode; Compare shows A left and B right.
    harness.state_mut().session.settings.view.ab = Some([1, 2]);
    step_until(&mut harness, "both A/B runs to load", Duration::from_mins(1), |a| a.session.compare.loaded_runs.len() == 2);
    harness.get_by_label_contains("A/B: #1 left, #2 right");

    // Restore puts run 1's settings back; export writes its bundle atomically.
    harness.state_mut().session.apply(Command::RestoreRun(1));
    assert_eq!(harness.state().session.settings.steps, Some(40));
    let out = data_dir.path().join("exported.texset");
    harness.state_mut().session.apply(Command::ExportRun(1, out.clone()));
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&runs[0].bundle).unwrap());

    // The log is a file of its own in the data folder, not part of the persisted settings.
    let saved = serde_json::to_string(&harness.state().session.settings).unwrap();
    assert!(!saved.contains("run-1.texset"), "{saved}");
    let (kept, problems) = texset::studio::store::ExperimentLog::open(Some(data_dir.path()), Vec::new());
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(kept.runs, runs);
}

/// Two studios on one data folder: the second says so and keeps nothing, so that it cannot
/// overwrite the first's runs (at e9a7c80 both wrote the log and `runs/run-N.texset`).
#[test]
fn a_second_studio_on_the_same_data_folder_keeps_nothing_and_says_so() {
    let data_dir = tempfile::tempdir().unwrap();
    let open =
        || StudioApp::with_repaint(Settings::default(), Vec::new(), None, Some(data_dir.path().to_path_buf()), Arc::new(|| {})).unwrap();
    let first = open();
    let second = open();
    assert!(first.session.log.keeps_runs());
    assert!(!second.session.log.keeps_runs());
    let said = &second.session.status.messages;
    assert!(said.iter().any(|m| m.is_error && m.text.contains("another texset studio")), "{said:?}");
    drop((first, second));
    assert!(open().session.log.keeps_runs(), "the lock goes with the studio that held it");
}

#[test]
fn a_one_by_one_constant_map_loads_at_the_material_size() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("plastic");
    std::fs::create_dir(&folder).unwrap();
    image::RgbImage::from_fn(32, 16, |x, y| image::Rgb([(x * 7) as u8, (y * 5) as u8, 40]))
        .save(folder.join("plastic_basecolor.png"))
        .unwrap();
    image::GrayImage::from_pixel(1, 1, image::Luma([77])).save(folder.join("plastic_roughness.png")).unwrap();
    let library = texset::studio::session::load_folders(std::slice::from_ref(&folder));
    assert!(library.problems.is_empty(), "{:?}", library.problems);
    let material = &library.set.materials[0];
    let roughness = material.textures.iter().find(|t| t.info.kind == texset_core::set::MapKind::Roughness).unwrap();
    assert_eq!((roughness.info.width, roughness.info.height), (32, 16));
    assert!(roughness.texels.iter().all(|v| v.to_bits() == (77.0f32 / 255.0).to_bits()));
}

#[test]
fn a_gltf_asset_loads_beside_folders_and_a_clashing_material_is_left_out_with_its_mesh() {
    use serde_json::json;
    use texset_testkit::gltf::{quad_bytes, quad_document, write_json, write_png};
    let dir = tempfile::tempdir().unwrap();
    // A material folder named `painted`.
    let folder = dir.path().join("painted");
    std::fs::create_dir(&folder).unwrap();
    image::RgbImage::from_fn(8, 8, |x, y| image::Rgb([(x * 30) as u8, (y * 30) as u8, 9]))
        .save(folder.join("painted_basecolor.png"))
        .unwrap();
    // An asset whose quad is drawn twice: once with `painted` (taken by the folder), once with `oak`.
    let asset_dir = dir.path().join("asset");
    std::fs::create_dir(&asset_dir).unwrap();
    std::fs::write(asset_dir.join("quad.bin"), quad_bytes()).unwrap();
    write_png(&asset_dir.join("base.png"), 0, 3);
    write_png(&asset_dir.join("oak.png"), 40, 3);
    let mut document = quad_document(
        &json!({"uri": "quad.bin", "byteLength": 140}),
        &json!([
            {"name": "painted", "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}},
            {"name": "oak", "pbrMetallicRoughness": {"baseColorTexture": {"index": 1}, "metallicFactor": 0.0}}
        ]),
        &json!([{"source": 0}, {"source": 1}]),
        &json!([{"uri": "base.png"}, {"uri": "oak.png"}]),
    );
    let mut second = document["meshes"][0].clone();
    second["primitives"][0]["material"] = json!(1);
    document["meshes"] = json!([document["meshes"][0].clone(), second]);
    document["nodes"] = json!([{"mesh": 0, "name": "a"}, {"mesh": 1, "name": "b"}]);
    document["scenes"] = json!([{"nodes": [0, 1]}]);
    let asset = write_json(&asset_dir, "asset.gltf", &document);

    let library = texset::studio::session::load_folders(&[folder, asset.clone()]);
    let names: Vec<&str> = library.set.materials.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["painted", "oak"]);
    assert_eq!(library.set.materials[1].source_dir, asset);
    assert_eq!(library.set.materials[1].constants.metallic_factor.to_bits(), 0.0f32.to_bits());
    // The clash is a problem naming the asset; the mesh drawn with it is left out, and the other
    // mesh points at `oak`'s index in the library.
    assert_eq!(library.problems.len(), 1, "{:?}", library.problems.iter().map(|p| &p.message).collect::<Vec<_>>());
    assert_eq!(library.problems[0].path, asset);
    assert!(library.problems[0].message.contains("'painted' is already loaded"), "{}", library.problems[0].message);
    assert_eq!(library.meshes.len(), 1);
    assert_eq!((library.meshes[0].name.as_str(), library.meshes[0].material), ("b", 1));
    // It wears `oak` alone (no variants), and the viewport frames the unit quad about its centre.
    assert_eq!(*library.mesh_materials, [vec![1]]);
    let bounds = library.mesh_bounds.unwrap();
    assert!(bounds.center.iter().zip([0.5, 0.5, 0.0]).all(|(a, b)| (a - b).abs() < 1e-6), "{bounds:?}");
    assert!((bounds.radius - 0.5f32.sqrt()).abs() < 1e-6, "{bounds:?}");

    // A broken asset is a problem naming its fault; the folder still loads.
    std::fs::remove_file(asset_dir.join("quad.bin")).unwrap();
    let library = texset::studio::session::load_folders(&[dir.path().join("painted"), asset.clone()]);
    assert_eq!(library.set.materials.len(), 1);
    assert!(library.problems.iter().any(|p| p.path == asset && p.message.contains("quad.bin")), "{:?}", library.problems.len());
}

#[test]
fn the_shoes_meshes_wear_each_colourway_in_the_viewport() {
    let test = "the_shoes_meshes_wear_each_colourway_in_the_viewport";
    let Some(shared) = texset_testkit::repo_root().parent().map(|p| p.join("shared/gltf/MaterialsVariantsShoe/MaterialsVariantsShoe.gltf"))
    else {
        return;
    };
    if !shared.is_file() {
        texset_testkit::skip(test, &format!("{} is absent", shared.display()));
        return;
    }
    let library = texset::studio::session::load_folders(&[shared]);
    assert!(library.problems.is_empty(), "{:?}", library.problems.iter().map(|p| &p.message).collect::<Vec<_>>());
    let names: Vec<&str> = library.set.materials.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(!library.meshes.is_empty());
    // Whichever colourway is selected, the shoe wears it (the viewport decodes it on the mesh).
    for wears in library.mesh_materials.iter() {
        let mut sorted = wears.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [0, 1, 2], "{names:?}");
    }
    assert!(library.mesh_bounds.is_some_and(|b| b.radius > 0.0 && b.radius.is_finite()));
}

#[test]
fn a_gltf_asset_opens_on_its_lit_viewport_with_the_side_panels_hidden() {
    use serde_json::json;
    use texset_testkit::gltf::{quad_bytes, quad_document, write_json, write_png};
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("quad.bin"), quad_bytes()).unwrap();
    write_png(&dir.path().join("base.png"), 0, 3);
    let document = quad_document(
        &json!({"uri": "quad.bin", "byteLength": 140}),
        &json!([{"name": "tile", "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}]),
        &json!([{"source": 0}]),
        &json!([{"uri": "base.png"}]),
    );
    let asset = write_json(dir.path(), "quad.gltf", &document);
    let app = StudioApp::with_repaint(Settings::default(), vec![asset], None, None, Arc::new(|| {})).unwrap();
    let mut harness = new_harness(app);
    step_until(&mut harness, "the asset to load", Duration::from_mins(1), |a| !a.session.library.meshes.is_empty());
    harness.step();
    let view = &harness.state().session.settings.view;
    assert_eq!(view.central, CentralView::Preview, "the studio did not open on the viewport");
    assert!(!view.side_panels, "the side panels still take the window");
    assert!(harness.query_by_label("Library").is_none() && harness.query_by_label("Training").is_none());
    // P brings the panels back.
    harness.key_press(egui::Key::P);
    harness.step();
    assert!(harness.state().session.settings.view.side_panels);
    harness.get_by_label("Library");
}

/// A library opened from one glTF asset exports as glTF once trained: the bundle (the trained
/// bytes) and the document beside it. Into the asset's own folder, the source `.gltf`, which
/// texset did not write, is not replaced.
#[test]
fn a_gltf_library_exports_as_gltf_and_never_over_its_source() {
    use serde_json::json;
    use texset_testkit::gltf::{quad_bytes, quad_document, write_json, write_png};
    let dir = tempfile::tempdir().unwrap();
    let asset_dir = dir.path().join("asset");
    std::fs::create_dir(&asset_dir).unwrap();
    std::fs::write(asset_dir.join("quad.bin"), quad_bytes()).unwrap();
    write_png(&asset_dir.join("base.png"), 0, 3);
    let document = quad_document(
        &json!({"uri": "quad.bin", "byteLength": 140}),
        &json!([{"name": "tile", "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}]),
        &json!([{"source": 0}]),
        &json!([{"uri": "base.png"}]),
    );
    let asset = write_json(&asset_dir, "quad.gltf", &document);
    let source_before = std::fs::read(&asset).unwrap();
    let settings = Settings { preset: Preset::Fast, steps: Some(20), ..Settings::default() };
    let app = StudioApp::with_repaint(settings, vec![asset.clone()], None, None, Arc::new(|| {})).unwrap();
    let mut harness = new_harness(app);
    step_until(&mut harness, "the asset to load", Duration::from_mins(1), |a| !a.session.library.set.materials.is_empty());
    assert_eq!(harness.state().session.gltf_asset(), Some(asset.as_path()));
    harness.state_mut().session.apply(Command::StartTraining);
    step_until(&mut harness, "training to finish", Duration::from_mins(5), |a| {
        a.session.training.run.state == RunState::Finished && a.session.shown.trained.as_ref().is_some_and(|t| t.bytes.is_some())
    });
    let bytes = harness.state().session.shown.trained.as_ref().unwrap().bytes.clone().unwrap();
    let out = dir.path().join("out");
    harness.state_mut().session.apply(Command::ExportGltf(out.clone()));
    assert_eq!(std::fs::read(out.join("quad.texset")).unwrap(), *bytes, "{:?}", harness.state().session.status.messages);
    let written: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("quad.gltf")).unwrap()).unwrap();
    assert_eq!(written["textures"][0]["extensions"]["TEXSET_neural_texture"]["material"], "tile");
    assert!(out.join("quad.bin").is_file());

    harness.state_mut().session.apply(Command::ExportGltf(asset_dir.clone()));
    assert_eq!(std::fs::read(&asset).unwrap(), source_before, "the source asset was replaced");
    assert!(!asset_dir.join("textures").exists() && !asset_dir.join("quad.texset").exists(), "something was written beside the source");
    let said = harness.state().session.status.messages.iter().map(|m| m.text.clone()).collect::<Vec<_>>().join("\n");
    assert!(said.contains("quad.gltf"), "{said}");
}
