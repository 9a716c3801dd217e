//! `texset bench ui`: the studio's frame time while training runs.
//!
//! - [`run`], headless: each frame is the whole UI (`StudioApp::frame_ui`) plus tessellation, i.e.
//!   all the UI thread's work except handing the triangles to the GPU (Compare view).
//! - [`run_gpu`], on a wgpu adapter (lavapipe in CI): each frame rendered by egui's own wgpu
//!   renderer into a window-sized texture and waited for, as a presented frame is; the Compare
//!   view as the baseline, then the PBR preview open with the lights orbiting, or the camera
//!   turning (the turntable: every image a new G-buffer). Then the motion stops and it measures
//!   how long the preview takes to converge to full resolution.

use super::StudioApp;
use super::session::RunState;
use super::state::{CentralView, Command, Settings};
use eframe::egui;
use eframe::egui_wgpu::RenderState;
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
    /// Seconds those steps took (training's speed while the frames were drawn).
    pub train_secs: f64,
    /// Snapshots of the model shown meanwhile (each re-uploads the decoded map).
    pub snapshots_shown: u64,
}

/// What [`run_gpu`] measured.
#[derive(Debug, serde::Serialize)]
pub struct PreviewBench {
    /// The adapter that rendered.
    pub adapter: String,
    /// Frame times with the preview open while training ran.
    pub frames: UiBench,
    /// Preview images completed meanwhile (each at the scale the measured GPU time allowed).
    pub preview_images: u64,
    /// Bands of rows drawn meanwhile.
    pub preview_bands: u64,
    /// Seconds from the preview tab's first frame (the studio just opened, the library still
    /// loading) to its first image, and whether that image lit the original maps.
    pub first_image_secs: Option<f64>,
    /// Whether the first image was the original maps lit (before any training).
    pub first_image_originals: bool,
    /// Seconds from the tab's first frame until the library had loaded, and until it was
    /// analysed: what the first image waited for before the preview's own work.
    pub library_loaded_secs: Option<f64>,
    /// See [`Self::library_loaded_secs`].
    pub library_analysed_secs: Option<f64>,
    /// Seconds from the tab's first frame until the session held training's first snapshot.
    pub first_snapshot_secs: Option<f64>,
    /// Seconds from the tab's first frame to its first image of a decoded model (training's
    /// first snapshot decoded, into textures or per pixel), while training or after it.
    pub first_decoded_secs: Option<f64>,
    /// Seconds from the tab's first frame to its first image decoded per pixel (the decoder
    /// compiled).
    pub first_per_pixel_secs: Option<f64>,
    /// Median scale (fraction of the full resolution's side) of the images drawn while the lights
    /// orbited and training ran.
    pub moving_median_scale: Option<f32>,
    /// Preview pixels drawn per second meanwhile (images shown, over the phase's wall time).
    pub moving_pixels_per_sec: f64,
    /// Preview images shown per second meanwhile, from the first image to the last (before the
    /// first there is nothing to move).
    pub moving_images_per_sec: f64,
    /// Of the images shown meanwhile, how many decoded a side per pixel (the rest read textures).
    pub moving_per_pixel_images: usize,
    /// What moved: the lights, or the camera.
    pub motion: Motion,
    /// After the lights stopped: seconds until the preview showed the view at full resolution
    /// (`None`: it did not within the time limit).
    pub converge_secs: Option<f64>,
    /// Slowest frame while converging, milliseconds.
    pub converge_max_frame_ms: f64,
}

/// What moves while [`run_gpu`] measures the preview.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Motion {
    /// The two point lights orbit: the G-buffer is lit again, not decoded.
    Lights,
    /// The camera turns (the turntable at 20°/s): every image decodes a new G-buffer.
    Camera,
}

/// Window size of the benches, in points (= pixels).
const WINDOW: [u32; 2] = [1440, 900];

/// Percentiles of frame times.
fn summarise(mut times: Vec<f64>, train_steps: u32, train_secs: f64, snapshots_shown: u64) -> UiBench {
    times.sort_by(f64::total_cmp);
    let pick = |q: f64| times.get(((times.len().max(1) - 1) as f64 * q).round() as usize).copied().unwrap_or(f64::NAN);
    UiBench {
        frames: times.len(),
        median_frame_ms: pick(0.5),
        p95_frame_ms: pick(0.95),
        max_frame_ms: pick(1.0),
        train_steps,
        train_secs,
        snapshots_shown,
    }
}

/// Waits for `app`'s library and its analysis, starts training and times `frame` at 60 Hz pacing
/// until training ends or `limit` passes (a progress line every 10 s); then cancels it.
fn time_training(
    app: &mut StudioApp,
    limit: Duration,
    mut frame: impl FnMut(&mut StudioApp) -> anyhow::Result<f64>,
) -> anyhow::Result<UiBench> {
    let start = Instant::now();
    while app.session.library.set.materials.is_empty() || app.session.library.analysis.is_none() {
        if app.session.library.set.materials.is_empty()
            && let Some(problem) = app.session.library.problems.first()
        {
            anyhow::bail!("the library did not load: {}: {}", problem.path.display(), problem.message);
        }
        anyhow::ensure!(start.elapsed() < limit, "the library did not load");
        frame(app)?;
        std::thread::sleep(Duration::from_millis(16));
    }
    app.session.apply(Command::StartTraining);
    let mut times = Vec::new();
    let mut generations = 0;
    let mut last_generation = 0;
    let training_start = Instant::now();
    let mut said = Instant::now();
    while app.session.is_training() && training_start.elapsed() < limit {
        times.push(frame(app)?);
        if said.elapsed() > Duration::from_secs(10) {
            said = Instant::now();
            let slowest = times.iter().rev().take(600).copied().fold(0.0, f64::max);
            let step = app.session.training.run.status.as_ref().map_or(0, |s| s.step);
            let preview = app
                .preview
                .as_ref()
                .map_or_else(String::new, |p| format!(", preview {} images in {} bands", p.images_completed, p.bands_drawn()));
            eprintln!("ui bench: {} frames, step {step}{preview}, slowest recent frame {slowest:.1} ms", times.len());
        }
        if let Some(t) = &app.session.shown.trained
            && t.generation != last_generation
        {
            last_generation = t.generation;
            generations += 1;
        }
        std::thread::sleep(Duration::from_millis(16));
    }
    let train_steps = app.session.training.run.status.as_ref().map_or(0, |s| s.step);
    let train_secs = training_start.elapsed().as_secs_f64();
    let finished = app.session.training.run.state == RunState::Finished;
    app.session.apply(Command::CancelTraining);
    anyhow::ensure!(!times.is_empty(), "training ended before any frame was measured");
    eprintln!("ui bench: training {} after {train_steps} steps", if finished { "finished" } else { "stopped at the time limit" });
    Ok(summarise(times, train_steps, train_secs, generations))
}

/// egui's renderer on a device of its own, drawing whole frames into a window-sized texture.
struct Headless {
    render_state: RenderState,
    target: wgpu::TextureView,
}

impl Headless {
    fn new() -> anyhow::Result<Self> {
        // The studio's device: the adapter's features and limits (what training may share).
        let (instance, adapter, device, queue) = texset_shaders::request_device_for_training()?
            .ok_or_else(|| anyhow::anyhow!("no wgpu adapter: the preview bench needs one (lavapipe will do)"))?;
        let format = wgpu::TextureFormat::Rgba8Unorm;
        let renderer = eframe::egui_wgpu::Renderer::new(&device, format, eframe::egui_wgpu::RendererOptions::default());
        let target = device
            .create_texture(&wgpu::TextureDescriptor {
                label: Some("texset ui bench frame"),
                size: wgpu::Extent3d { width: WINDOW[0], height: WINDOW[1], depth_or_array_layers: 1 },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format,
                usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
                view_formats: &[],
            })
            .create_view(&wgpu::TextureViewDescriptor::default());
        let render_state = RenderState {
            adapter: adapter.clone(),
            available_adapters: vec![adapter],
            instance,
            device,
            queue,
            target_format: format,
            renderer: Arc::new(egui::mutex::RwLock::new(renderer)),
        };
        Ok(Self { render_state, target })
    }

    /// Renders one egui frame's output and waits until the GPU has finished it.
    fn render(&self, ctx: &egui::Context, output: egui::FullOutput) -> anyhow::Result<()> {
        let rs = &self.render_state;
        let jobs = ctx.tessellate(output.shapes, output.pixels_per_point);
        let mut textures_delta = output.textures_delta;
        let screen = eframe::egui_wgpu::ScreenDescriptor { size_in_pixels: WINDOW, pixels_per_point: output.pixels_per_point };
        let mut renderer = rs.renderer.write();
        for (id, deltas) in &textures_delta.set {
            for delta in deltas {
                renderer.update_texture(&rs.device, &rs.queue, *id, delta);
            }
        }
        // Cleared as eframe clears the window: with the studio's colour (the panels' background).
        let [r, g, b, a] = super::clear_color(&ctx.global_style().visuals).map(f64::from);
        let clear = wgpu::Color { r, g, b, a };
        let mut encoder = rs.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("texset ui bench frame") });
        let mut buffers = renderer.update_buffers(&rs.device, &rs.queue, &mut encoder, &jobs, &screen);
        {
            let mut pass = encoder
                .begin_render_pass(&wgpu::RenderPassDescriptor {
                    label: Some("texset ui bench egui"),
                    color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                        view: &self.target,
                        depth_slice: None,
                        resolve_target: None,
                        ops: wgpu::Operations { load: wgpu::LoadOp::Clear(clear), store: wgpu::StoreOp::Store },
                    })],
                    depth_stencil_attachment: None,
                    timestamp_writes: None,
                    occlusion_query_set: None,
                    multiview_mask: None,
                })
                .forget_lifetime();
            renderer.render(&mut pass, &jobs, &screen);
        }
        buffers.push(encoder.finish());
        let index = rs.queue.submit(buffers);
        for id in &textures_delta.free {
            renderer.free_texture(id);
        }
        // Applied above (the delta insists on being cleared, not dropped).
        textures_delta.clear();
        drop(renderer);
        // A presented frame waits for the GPU the same way (one frame in flight).
        rs.device.poll(wgpu::PollType::Wait { submission_index: Some(index), timeout: Some(Duration::from_mins(1)) })?;
        Ok(())
    }
}

/// What a frame costs the renderer with nothing else running (no studio, no training).
#[derive(Debug, serde::Serialize)]
pub struct RenderFloor {
    /// The adapter that rendered.
    pub adapter: String,
    /// Median frame time of a frame that only clears the window, milliseconds.
    pub clear_ms: f64,
    /// Median frame time of a frame with one window-sized rectangle, milliseconds: what each
    /// full-window layer of paint costs.
    pub full_window_rect_ms: f64,
    /// The same with a window-sized image drawn by egui (nearest, as the viewport's was).
    pub full_window_image_ms: f64,
    /// The same image drawn by the viewport's blit (`studio::blit`).
    pub full_window_blit_ms: f64,
}

/// Frames timed for each line of [`render_floor`].
pub const FLOOR_FRAMES: usize = 30;

/// What [`render_floor`] paints over the window.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FloorFill {
    Nothing,
    Rect,
    Image,
    Blit,
}

/// Times egui frames with nothing in them but the clear, then with one window-sized rectangle,
/// image, and image through the viewport's blit, rendered and waited for as [`run_gpu`]'s are:
/// the floor under the studio's frame time.
pub fn render_floor() -> anyhow::Result<RenderFloor> {
    let headless = Headless::new()?;
    super::blit::install(&headless.render_state);
    let info = headless.render_state.adapter.get_info();
    let adapter = format!("{} ({:?})", info.name, info.backend);
    let ctx = egui::Context::default();
    let window = egui::Rect::from_min_size(egui::Pos2::ZERO, egui::vec2(WINDOW[0] as f32, WINDOW[1] as f32));
    let [width, height] = WINDOW;
    let rgba: Vec<u8> = (0..width * height * 4).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let image = egui::ColorImage::from_rgba_unmultiplied([width as usize, height as usize], &rgba);
    let texture = ctx.load_texture("floor image", image, egui::TextureOptions::NEAREST);
    let shown = Arc::new(super::blit::ShownImage::new(WINDOW, rgba, false).map_err(anyhow::Error::msg)?);
    let median_ms = |fill: FloorFill| -> anyhow::Result<f64> {
        let mut times = Vec::with_capacity(FLOOR_FRAMES + 1);
        // One frame more, not timed: the image's upload.
        for _ in 0..=FLOOR_FRAMES {
            let start = Instant::now();
            let input = egui::RawInput { screen_rect: Some(window), ..Default::default() };
            let output = ctx.run_ui(input, |ui| {
                let uv = egui::Rect::from_min_max(egui::pos2(0.0, 0.0), egui::pos2(1.0, 1.0));
                match fill {
                    FloorFill::Nothing => {}
                    FloorFill::Rect => {
                        ui.painter().rect_filled(window, 0.0, egui::Color32::from_gray(40));
                    }
                    FloorFill::Image => {
                        ui.painter().image(texture.id(), window, uv, egui::Color32::WHITE);
                    }
                    FloorFill::Blit => super::blit::paint(ui.painter(), window, &shown, super::blit::BlitSlot::Viewport),
                }
            });
            headless.render(&ctx, output)?;
            times.push(start.elapsed().as_secs_f64() * 1e3);
        }
        Ok(summarise(times.split_off(1), 0, 0.0, 0).median_frame_ms)
    };
    Ok(RenderFloor {
        clear_ms: median_ms(FloorFill::Nothing)?,
        full_window_rect_ms: median_ms(FloorFill::Rect)?,
        full_window_image_ms: median_ms(FloorFill::Image)?,
        full_window_blit_ms: median_ms(FloorFill::Blit)?,
        adapter,
    })
}

/// Loads `folders` into a studio on a wgpu adapter, shows `central` (the PBR preview with the
/// lights orbiting or the camera turning, as `motion` says, or Compare for the baseline), trains
/// `steps` steps while timing every rendered frame (60 Hz pacing), then stops the motion and
/// times the preview's convergence to full resolution (Compare: nothing to converge). `limit`
/// bounds each phase.
pub fn run_gpu(folders: Vec<PathBuf>, steps: u32, limit: Duration, central: CentralView, motion: Motion) -> anyhow::Result<PreviewBench> {
    let headless = Headless::new()?;
    let adapter = format!("{} ({:?})", headless.render_state.adapter.get_info().name, headless.render_state.adapter.get_info().backend);
    let ctx = egui::Context::default();
    super::tune_for_renderer(&ctx, Some(&headless.render_state));
    let settings = Settings { steps: Some(steps), ..Settings::default() };
    let mut app = StudioApp::with_repaint(settings, folders, Some(&headless.render_state), None, Arc::new(|| {}))?;
    app.session.settings.view.central = central;
    app.session.settings.view.lights_orbit = motion == Motion::Lights;
    app.session.settings.view.turntable = motion == Motion::Camera;
    let input = || egui::RawInput {
        screen_rect: Some(egui::Rect::from_min_size(egui::Pos2::ZERO, egui::vec2(WINDOW[0] as f32, WINDOW[1] as f32))),
        ..Default::default()
    };
    // When the first snapshot of the model reached the session, seconds after the tab opened.
    let first_snapshot = std::cell::Cell::new(None);
    let frame = |app: &mut StudioApp| -> anyhow::Result<f64> {
        let start = Instant::now();
        let output = ctx.run_ui(input(), |ui| app.frame_ui(ui));
        headless.render(&ctx, output)?;
        if first_snapshot.get().is_none() && app.session.shown.trained.is_some() {
            first_snapshot.set(app.preview.as_ref().and_then(|p| p.stats.secs_since_opened()));
        }
        Ok(start.elapsed().as_secs_f64() * 1e3)
    };
    let phase = Instant::now();
    let frames = time_training(&mut app, limit, frame)?;
    let phase_secs = phase.elapsed().as_secs_f64();
    let (preview_images, preview_bands) = app.preview.as_ref().map_or((0, 0), |p| (p.images_completed, p.bands_drawn()));
    let stats = app.preview.as_ref().map(|p| p.stats.clone()).unwrap_or_default();
    let mut scales: Vec<f32> = stats.images.iter().map(|i| i.scale).collect();
    scales.sort_by(f32::total_cmp);
    let moving_median_scale = scales.get(scales.len() / 2).copied();
    let moving_pixels_per_sec = stats.images.iter().map(|i| i.pixels as f64).sum::<f64>() / phase_secs.max(1e-9);
    let moving_images_per_sec = match (stats.images.first(), stats.images.last()) {
        (Some(first), Some(last)) if last.secs > first.secs => (stats.images.len() - 1) as f64 / (last.secs - first.secs),
        _ => 0.0,
    };
    let moving_per_pixel_images = stats.images.iter().filter(|i| i.per_pixel).count();
    // The motion stops: the preview should converge to full resolution, frames staying bounded
    // (Compare has nothing to converge).
    app.session.settings.view.lights_orbit = false;
    app.session.settings.view.turntable = false;
    let converge_start = Instant::now();
    let mut converge_max_frame_ms: f64 = 0.0;
    let mut converge_secs = None;
    let mut said = Instant::now();
    while central == CentralView::Preview && converge_start.elapsed() < limit {
        converge_max_frame_ms = converge_max_frame_ms.max(frame(&mut app)?);
        if said.elapsed() > Duration::from_secs(10) {
            said = Instant::now();
            let (images, bands) = app.preview.as_ref().map_or((0, 0), |p| (p.images_completed, p.bands_drawn()));
            eprintln!(
                "ui bench: motion stopped {:.0} s ago, preview {images} images in {bands} bands",
                converge_start.elapsed().as_secs_f64()
            );
        }
        if app.preview.as_ref().is_some_and(super::preview::PreviewGpu::converged) {
            converge_secs = Some(converge_start.elapsed().as_secs_f64());
            break;
        }
        std::thread::sleep(Duration::from_millis(16));
    }
    // The first decoded images may come after training ends (the convergence's images count).
    let after = app.preview.as_ref().map(|p| p.stats.clone()).unwrap_or_default();
    Ok(PreviewBench {
        adapter,
        frames,
        preview_images,
        preview_bands,
        first_image_secs: stats.first_image.map(|(secs, _)| secs),
        first_image_originals: stats.first_image.is_some_and(|(_, originals)| originals),
        library_loaded_secs: stats.library_loaded,
        library_analysed_secs: stats.library_analysed,
        first_snapshot_secs: first_snapshot.get(),
        first_decoded_secs: after.first_decoded,
        first_per_pixel_secs: after.first_per_pixel,
        moving_median_scale,
        moving_pixels_per_sec,
        moving_images_per_sec,
        moving_per_pixel_images,
        motion,
        converge_secs,
        converge_max_frame_ms,
    })
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
    let frame = |app: &mut StudioApp| -> anyhow::Result<f64> {
        let start = Instant::now();
        let mut output = ctx.run_ui(input(), |ui| app.frame_ui(ui));
        let _ = ctx.tessellate(output.shapes, output.pixels_per_point);
        // No renderer here: the texture uploads (snapshots' decoded maps) are built and dropped.
        output.textures_delta.clear();
        Ok(start.elapsed().as_secs_f64() * 1e3)
    };
    time_training(&mut app, limit, frame)
}
