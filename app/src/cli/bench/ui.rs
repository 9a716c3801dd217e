//! `texset bench ui`: the studio's frame time while it trains, headless (UI thread only) in the
//! Compare view, then rendered on a wgpu adapter (lavapipe will do) with Compare and with the PBR
//! preview open.

use anyhow::Result;
use serde::Serialize;
use std::time::Duration;
use texset::studio::bench_ui::{self, Motion, PreviewBench, RenderFloor, UiBench};
use texset::studio::state::CentralView;

use super::DirsArg;
use crate::cli::common::JsonArg;

/// Training steps while the headless UI is measured.
const HEADLESS_STEPS: u32 = 1500;
/// Training steps while a GPU renders (fewer: a software GPU renders every frame on the same
/// cores as training).
const RENDERED_STEPS: u32 = 600;
/// The longest each measurement may take.
const LIMIT: Duration = Duration::from_mins(10);

// `texset bench ui`.
#[derive(clap::Args)]
pub(crate) struct UiBenchArgs {
    #[command(flatten)]
    dirs: DirsArg,
    #[command(flatten)]
    json: JsonArg,
    /// Turn the camera (the turntable) while the preview is measured, instead of orbiting the
    /// lights: every image then decodes a new G-buffer.
    #[arg(long)]
    camera: bool,
    /// Measure the PBR preview alone (not the headless UI, the renderer's floor and Compare).
    #[arg(long)]
    preview_only: bool,
    /// Measure the renderer's floor alone (no studio, no training): seconds, not minutes.
    #[arg(long, conflicts_with = "preview_only")]
    floor_only: bool,
}

/// `bench ui --json`: the rendered measurements, or why each could not run (`None`: not asked
/// for, with `--preview-only`).
#[derive(Serialize)]
struct UiJson<'a> {
    compare: Option<&'a UiBench>,
    floor: Option<Result<&'a RenderFloor, String>>,
    compare_gpu: Option<Result<&'a PreviewBench, String>>,
    preview: Result<&'a PreviewBench, String>,
}

impl UiBenchArgs {
    pub(crate) fn run(self) -> Result<()> {
        // The floor draws no library: it needs no folders.
        if self.floor_only {
            let floor = bench_ui::render_floor()?;
            if self.json.json {
                return JsonArg::print(&floor);
            }
            print_floor(&floor);
            return Ok(());
        }
        // The bench trains while it measures: with no library it would wait for one until its limit.
        let dirs = self.dirs.or_samples()?;
        let motion = if self.camera { Motion::Camera } else { Motion::Lights };
        let (report, floor, compare_gpu) = if self.preview_only {
            (None, None, None)
        } else {
            // The renderer's own cost with nothing of texset's running (first: no studio's
            // background work is left over): the floor under the rendered lines.
            let floor = bench_ui::render_floor();
            let report = bench_ui::run(dirs.clone(), HEADLESS_STEPS, LIMIT)?;
            // Compare as the baseline, then the PBR preview open.
            let compare_gpu = bench_ui::run_gpu(dirs.clone(), RENDERED_STEPS, LIMIT, CentralView::Compare, motion);
            (Some(report), Some(floor), Some(compare_gpu))
        };
        let preview = bench_ui::run_gpu(dirs, RENDERED_STEPS, LIMIT, CentralView::Preview, motion);
        if self.json.json {
            return JsonArg::print(&UiJson {
                compare: report.as_ref(),
                floor: floor.as_ref().map(|f| f.as_ref().map_err(ToString::to_string)),
                compare_gpu: compare_gpu.as_ref().map(|c| c.as_ref().map_err(ToString::to_string)),
                preview: preview.as_ref().map_err(ToString::to_string),
            });
        }
        let line = |r: &UiBench| {
            format!(
                "median {:.2} ms, p95 {:.2} ms, max {:.2} ms over {} frames ({} training steps in {:.1} s, {} snapshots shown)",
                r.median_frame_ms, r.p95_frame_ms, r.max_frame_ms, r.frames, r.train_steps, r.train_secs, r.snapshots_shown
            )
        };
        if let Some(report) = &report {
            println!("studio frame time while training, Compare view (headless, UI thread only): {}", line(report));
        }
        match &floor {
            Some(Ok(f)) => print_floor(f),
            Some(Err(e)) => println!("renderer floor: not measured: {e}"),
            None => {}
        }
        match &compare_gpu {
            Some(Ok(p)) => println!("studio frame time while training, Compare view rendered on {}: {}", p.adapter, line(&p.frames)),
            Some(Err(e)) => println!("Compare frame time on a GPU: not measured: {e}"),
            None => {}
        }
        match &preview {
            Ok(p) => {
                let moving = if p.motion == Motion::Camera { "the camera turning" } else { "orbiting lights" };
                println!("studio frame time while training, PBR preview with {moving} on {}: {}", p.adapter, line(&p.frames));
                println!("  preview: {} images in {} bands while training", p.preview_images, p.preview_bands);
                match p.first_image_secs {
                    Some(s) => println!(
                        "  first image {s:.2} s after the tab opened (the library loaded at {}, analysed at {}), showing {}",
                        p.library_loaded_secs.map_or_else(|| "-".to_owned(), |t| format!("{t:.2} s")),
                        p.library_analysed_secs.map_or_else(|| "-".to_owned(), |t| format!("{t:.2} s")),
                        if p.first_image_originals { "the original maps lit" } else { "a decoded model" }
                    ),
                    None => println!("  no image while training"),
                }
                match (p.first_decoded_secs, p.first_snapshot_secs) {
                    (Some(s), Some(snapshot)) => println!(
                        "  first image of a decoded model {s:.2} s after the tab opened, {:.2} s after the first snapshot ({snapshot:.2} s)",
                        s - snapshot
                    ),
                    (Some(s), None) => println!("  first image of a decoded model {s:.2} s after the tab opened"),
                    (None, Some(snapshot)) => println!("  no image of a decoded model (the first snapshot at {snapshot:.2} s)"),
                    (None, None) => {}
                }
                if let Some(s) = p.first_per_pixel_secs {
                    println!("  first image decoded per pixel (the decoder compiled) {s:.2} s after the tab opened");
                }
                if let Some(scale) = p.moving_median_scale {
                    println!(
                        "  while moving: median scale {:.0}% of the full side, {:.1} images/s from the first image to the last, {:.0} preview pixels/s; {} images decoded per pixel, {} from textures",
                        scale * 100.0,
                        p.moving_images_per_sec,
                        p.moving_pixels_per_sec,
                        p.moving_per_pixel_images,
                        p.preview_images as usize - p.moving_per_pixel_images.min(p.preview_images as usize)
                    );
                }
                match p.converge_secs {
                    Some(s) => println!(
                        "  motion stopped: full resolution after {s:.2} s, slowest frame meanwhile {:.2} ms",
                        p.converge_max_frame_ms
                    ),
                    None => println!("  motion stopped: the preview did not reach full resolution within the limit"),
                }
            }
            Err(e) => println!("PBR preview frame time: not measured: {e}"),
        }
        Ok(())
    }
}

/// The renderer's floor, one line.
fn print_floor(f: &RenderFloor) {
    println!(
        "renderer floor on {}, nothing else running: clear only {:.2} ms; one window-sized rectangle {:.2} ms, image {:.2} ms, image through the viewport's blit {:.2} ms (median of {} frames)",
        f.adapter,
        f.clear_ms,
        f.full_window_rect_ms,
        f.full_window_image_ms,
        f.full_window_blit_ms,
        bench_ui::FLOOR_FRAMES
    );
}
