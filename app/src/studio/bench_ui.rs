//! `texset bench --ui`: the studio's frame time while training runs, measured headless — each
//! frame is the whole UI (`StudioApp::frame_ui`) plus tessellation, i.e. all the UI thread's
//! work except handing the triangles to the GPU.

use super::StudioApp;
use super::session::RunState;
use super::state::{CentralView, Command, Settings};
use eframe::egui;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the run measured.
#[derive(Debug, serde::Serialize)]
pub struct UiBench {
    /// Frames measured while training ran.
    pub frames: usize,
    /// Median frame time, milliseconds.
    pub median_frame_ms: f64,
    /// 95th percentile, milliseconds.
    pub p95_frame_ms: f64,
    /// Slowest frame, milliseconds.
    pub max_frame_ms: f64,
    /// Training steps done meanwhile.
    pub train_steps: u32,
    /// Snapshots of the model shown meanwhile (each re-uploads the decoded map).
    pub snapshots_shown: u64,
}

/// Loads `folders`, starts training (`steps` steps) and runs frames at 60 Hz pacing until it ends
/// or `limit` passes, timing each frame.
pub fn run(folders: Vec<PathBuf>, steps: u32, limit: Duration) -> anyhow::Result<UiBench> {
    let ctx = egui::Context::default();
    let settings = Settings { steps: Some(steps), ..Settings::default() };
    let mut app = StudioApp::with_repaint(settings, folders, None, None, Arc::new(|| {}))?;
    app.session.settings.view.central = CentralView::Compare;
    let input = || egui::RawInput {
        screen_rect: Some(egui::Rect::from_min_size(egui::Pos2::ZERO, egui::vec2(1440.0, 900.0))),
        ..Default::default()
    };
    let frame = |app: &mut StudioApp| -> f64 {
        let start = Instant::now();
        let mut output = ctx.run_ui(input(), |ui| app.frame_ui(ui));
        let _ = ctx.tessellate(output.shapes, output.pixels_per_point);
        // No renderer here: the texture uploads (snapshots' decoded maps) are built and dropped.
        output.textures_delta.clear();
        start.elapsed().as_secs_f64() * 1e3
    };
    let start = Instant::now();
    while app.session.library.set.materials.is_empty() {
        anyhow::ensure!(start.elapsed() < limit, "the library did not load");
        frame(&mut app);
        std::thread::sleep(Duration::from_millis(16));
    }
    app.session.apply(Command::StartTraining);
    let mut times = Vec::new();
    let mut generations = 0;
    let mut last_generation = 0;
    while app.session.is_training() && start.elapsed() < limit {
        times.push(frame(&mut app));
        if let Some(t) = &app.session.trained
            && t.generation != last_generation
        {
            last_generation = t.generation;
            generations += 1;
        }
        std::thread::sleep(Duration::from_millis(16));
    }
    let train_steps = app.session.run.status.as_ref().map_or(0, |s| s.step);
    let finished = app.session.run.state == RunState::Finished;
    app.session.apply(Command::CancelTraining);
    anyhow::ensure!(!times.is_empty(), "training ended before any frame was measured");
    times.sort_by(f64::total_cmp);
    let pick = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    eprintln!("ui bench: training {} after {train_steps} steps", if finished { "finished" } else { "stopped at the time limit" });
    Ok(UiBench {
        frames: times.len(),
        median_frame_ms: pick(0.5),
        p95_frame_ms: pick(0.95),
        max_frame_ms: pick(1.0),
        train_steps,
        snapshots_shown: generations,
    })
}
