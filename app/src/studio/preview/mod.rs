//! The PBR preview panel: `texset_shaders::preview` (every pixel's material decoded by the
//! bundle's MLP in the fragment shader) drawn on a thread of its own and shown as an egui image.
//! The decoded material is on the left; with "original beside" the same scene shaded from the
//! original maps is on the right; with two runs of the experiment log in A/B, run A left and run B
//! right. Before any training the original maps are shown lit on their own.
//!
//! No frame ever waits for the preview's GPU work. On a software GPU (lavapipe) a full image
//! costs about a second, and the driver compiles the specialised decoder (minutes of LLVM) on
//! the queue of whichever device first draws with it, where it would hold up egui's frames. So:
//! - the thread `texset-preview` renders on a device of its own (from egui's adapter): compiling
//!   the pipeline, drawing and reading the image back block that thread only; the panel says
//!   "preparing preview" and keeps the last image meanwhile;
//! - an image takes two passes (docs/decisions/035-preview-g-buffer.md):
//!   the material pass decodes every pixel's material into a G-buffer, in bands of rows, timing
//!   each, taking in the newest view between bands; the shading pass lights it. Lights that move
//!   only shade again, so while they orbit the image keeps the G-buffer's scale;
//! - a new material, shape or size is decoded first at the largest scale whose material pass
//!   fits [`MOVING_IMAGE_MS`]; a new snapshot of the model at the scale on screen (the last one
//!   shown meanwhile); then the G-buffer climbs a scale at a time, to half the side while the
//!   lights move and to full resolution once they rest;
//! - the originals' material pass reaches no decoder, so they light while the decoder compiles;
//! - it rests as long as it draws (half the time at most), so the UI and training keep their
//!   share of a machine with few cores.

mod render;

use super::session::Session;
use super::state::{CameraSettings, PreviewShape, ViewSettings};
use eframe::egui;
use eframe::egui_wgpu::RenderState;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use texset_core::set::{GltfMesh, UvTransform};
use texset_core::{TextureSet, bundle::Bundle, model::ModelLayout};
use texset_shaders::environment::PreparedEnvironment;
use texset_shaders::preview::{Camera, Lighting, MeshBounds, Shape};

/// GPU time one band of rows may take, milliseconds: how long a newer view waits at most.
pub const BAND_BUDGET_MS: f64 = 25.0;

/// GPU time a whole image may take while the view changes, milliseconds: its scale is the largest
/// that fits, so moving lights update the preview several times a second on any GPU.
pub const MOVING_IMAGE_MS: f64 = 150.0;

/// The view counts as changing until it has stayed the same this long.
const SETTLE: Duration = Duration::from_millis(300);

/// Scales an image may be drawn at (fractions of the full resolution), largest first.
const SCALES: [f32; 6] = [1.0, 0.7, 0.5, 0.35, 0.25, 0.125];

/// The preview's render target format (read back as RGBA8 for egui).
const TARGET_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;

/// What a preview model shows: a bundle on screen, a run of the experiment log (A/B), or (before
/// training) a placeholder made from the analyse pass's layout so the pipeline can shade the
/// original maps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    /// `Trained::generation` of the session's bundle.
    Decoded(u64),
    /// A run of the experiment log, by id.
    Run(u64),
    /// The library (its `Arc` address), before any training.
    Originals(usize),
}

/// A model for one of the two renderers.
enum ModelInput {
    Bundle(Arc<Bundle>),
    /// A placeholder bundle (zero weights) made from a layout: the pipeline shades originals.
    Placeholder(Arc<TextureSet>, Box<ModelLayout>),
}

/// What the view asks of an image (the render thread turns it into uniforms with its models'
/// manifests).
#[derive(Clone, Copy, Debug, PartialEq)]
struct View {
    material: usize,
    light_angle: f32,
    light_intensity: f32,
    shape: Shape,
    /// Side 1 shows the originals (false: one side only, unless `ab`).
    show_original: bool,
    /// Side 0 is renderer 0's model, side 1 renderer 1's.
    ab: bool,
    /// Full-resolution size in pixels (of every side together, side by side).
    size: [u32; 2],
    /// Where the camera looks from (every side the same).
    camera: Camera,
    /// The surface is the library's meshes (`shape` otherwise).
    asset: bool,
    /// The mesh pass's near plane, world units.
    near_plane: f32,
    /// How the shading pass lights.
    lighting: Lighting,
    /// Which environment it lights by (`EnvironmentState::generation` sent; 0: none yet), so an
    /// image lit before the environment arrived is not taken for the view's.
    environment: u64,
}

/// Messages to `texset-preview`.
enum Request {
    Model(usize, Source, ModelInput),
    Originals((usize, usize), Arc<TextureSet>),
    /// The library's meshes (their materials' UV transforms applied), and the materials each
    /// can wear.
    Meshes(Arc<Vec<GltfMesh>>, Vec<UvTransform>, Arc<Vec<Vec<usize>>>),
    /// The environment the shading pass lights by.
    Environment(Arc<PreparedEnvironment>),
    View(View),
}

/// What one image shows.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Shows {
    view: View,
    sources: [Option<Source>; 2],
    sides: usize,
    originals_of: Option<(usize, usize)>,
}

/// Messages from `texset-preview`.
enum Reply {
    /// A model is ready (or failed).
    Model(usize, Source, Result<(), String>),
    /// A finished image: what it shows, its scale and size, RGBA8 rows.
    Image(Shows, f32, [u32; 2], Vec<u8>),
    /// Something failed (shown in the panel).
    Error(String),
}

/// The preview's side of the UI: what it asked the render thread for and the last image.
pub struct PreviewGpu {
    requests: Sender<Request>,
    replies: Receiver<Reply>,
    /// Models asked for, per renderer, and whether each is ready.
    asked: [Option<(Source, bool)>; 2],
    originals_asked: Option<(usize, usize)>,
    /// The meshes sent to the render thread (their `Arc`'s address).
    meshes_sent: Option<usize>,
    /// The environment sent to the render thread (`EnvironmentState::generation`).
    environment_sent: u64,
    last_view: Option<View>,
    /// The last image: what it shows, its scale, and its egui texture.
    shown: Option<(Shows, f32, egui::TextureHandle)>,
    error: Option<String>,
    /// Bands drawn so far (the render thread counts them).
    bands: Arc<AtomicU64>,
    /// Images completed.
    pub images_completed: u64,
    /// What the images shown so far measured (`bench ui` reports it).
    pub stats: PreviewStats,
    /// Whether the window renders on a software GPU (see [`orbit_pause`]).
    software: bool,
    /// `texset-preview`, joined on drop.
    thread: Option<JoinHandle<()>>,
}

/// How long dropping the preview waits for `texset-preview` to end: it finishes the band or the
/// pipeline it is on, then drops its device. Joined, the device is gone before the process ends;
/// a driver torn down by the exit while its own thread still renders can crash it.
const JOIN_WAIT: Duration = Duration::from_secs(5);

impl Drop for PreviewGpu {
    fn drop(&mut self) {
        // Hang up: the thread sees its requests disconnected and returns.
        drop(std::mem::replace(&mut self.requests, channel().0));
        let Some(thread) = self.thread.take() else { return };
        let start = Instant::now();
        while !thread.is_finished() && start.elapsed() < JOIN_WAIT {
            std::thread::sleep(Duration::from_millis(5));
        }
        if thread.is_finished() {
            let _ = thread.join();
        }
    }
}

impl PreviewGpu {
    /// The preview for egui's adapter; starts `texset-preview` with a device of its own.
    pub fn new(render_state: &RenderState, repaint: Arc<dyn Fn() + Send + Sync>) -> std::io::Result<Self> {
        let (requests, requests_rx) = channel();
        let (replies_tx, replies) = channel();
        let adapter = render_state.adapter.clone();
        let bands = Arc::new(AtomicU64::new(0));
        let thread_bands = Arc::clone(&bands);
        let thread = crate::studio::worker::spawn_background("texset-preview", move || {
            let device = texset_shaders::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
                label: Some("texset preview device"),
                required_limits: adapter.limits(),
                ..Default::default()
            }));
            match device {
                Ok((device, queue)) => render::RenderThread::new(device, queue, replies_tx, repaint, thread_bands).run(&requests_rx),
                Err(e) => {
                    let _ = replies_tx.send(Reply::Error(format!("no device for the preview: {e}")));
                    repaint();
                }
            }
        })?;
        Ok(Self {
            requests,
            replies,
            asked: [None, None],
            originals_asked: None,
            meshes_sent: None,
            environment_sent: 0,
            last_view: None,
            shown: None,
            error: None,
            bands,
            images_completed: 0,
            stats: PreviewStats::default(),
            software: super::renders_in_software(Some(render_state)),
            thread: Some(thread),
        })
    }

    /// Bands of rows drawn so far.
    #[must_use]
    pub fn bands_drawn(&self) -> u64 {
        self.bands.load(Ordering::Relaxed)
    }

    /// Whether a model asked for has not shown in an image yet.
    fn preparing(&self) -> bool {
        self.asked
            .iter()
            .flatten()
            .any(|(source, ready)| !ready || self.shown.as_ref().is_none_or(|(s, _, _)| !s.sources.contains(&Some(*source))))
    }

    /// Whether the panel waits for a model of another kind than the image on screen shows (the
    /// first image, the decoded model after the originals, an A/B pair): the slow first draw
    /// with a new pipeline. A newer snapshot of the same run replaces the image without a note.
    fn waiting_for_new_model(&self) -> bool {
        let kind = |s: &Source| std::mem::discriminant(s);
        self.asked.iter().flatten().any(|(asked, _)| {
            self.shown.as_ref().is_none_or(|(shows, _, _)| !shows.sources.iter().flatten().any(|s| kind(s) == kind(asked)))
        })
    }

    /// Whether the image on screen is the last view asked for, at full resolution.
    #[must_use]
    pub fn converged(&self) -> bool {
        !self.preparing() && self.shown.as_ref().is_some_and(|(s, scale, _)| *scale >= 1.0 && Some(s.view) == self.last_view)
    }

    /// Asks for `source`'s model for renderer `slot` unless it was asked for already.
    fn want_model(&mut self, slot: usize, source: Source, input: impl FnOnce() -> Option<ModelInput>) {
        if self.asked[slot].is_some_and(|(s, _)| s == source) {
            return;
        }
        if let Some(input) = input()
            && self.requests.send(Request::Model(slot, source, input)).is_ok()
        {
            self.asked[slot] = Some((source, false));
        }
    }

    /// Sends the library's meshes to the render thread when they changed. A library that brings an
    /// asset (framed by `asset`) shows it, framed; one without shows a shape.
    fn want_meshes(&mut self, session: &Session, view: &mut ViewSettings, asset: Option<MeshBounds>) {
        let meshes = Arc::as_ptr(&session.library.meshes) as usize;
        if self.meshes_sent == Some(meshes) {
            return;
        }
        self.meshes_sent = Some(meshes);
        let transforms = session.library.set.materials.iter().map(|m| m.constants.uv_transform).collect();
        let request = Request::Meshes(Arc::clone(&session.library.meshes), transforms, Arc::clone(&session.library.mesh_materials));
        let _ = self.requests.send(request);
        if asset.is_some() && view.shape != PreviewShape::Asset {
            view.shape = PreviewShape::Asset;
            frame_view(view, asset);
        } else if asset.is_none() && view.shape == PreviewShape::Asset {
            view.shape = PreviewShape::Sphere;
            frame_view(view, None);
        }
    }

    /// Takes in what the render thread finished.
    fn take_replies(&mut self, ctx: &egui::Context) {
        while let Ok(reply) = self.replies.try_recv() {
            match reply {
                Reply::Model(slot, source, result) => {
                    if let Some((asked, ready)) = &mut self.asked[slot]
                        && *asked == source
                    {
                        *ready = true;
                    }
                    if let Err(e) = result {
                        self.error = Some(e);
                    }
                }
                Reply::Image(shows, scale, size, rgba) => {
                    let image = egui::ColorImage::from_rgba_unmultiplied([size[0] as usize, size[1] as usize], &rgba);
                    // At full resolution the image maps 1:1 onto the screen's pixels: nearest
                    // sampling shows the same and costs a software GPU less per pixel.
                    let options = if scale >= 1.0 { egui::TextureOptions::NEAREST } else { egui::TextureOptions::LINEAR };
                    match &mut self.shown {
                        Some((s, sc, handle)) => {
                            handle.set(image, options);
                            (*s, *sc) = (shows, scale);
                        }
                        None => self.shown = Some((shows, scale, ctx.load_texture("texset preview", image, options))),
                    }
                    self.images_completed += 1;
                    self.stats.image_shown(shows.sources[0], scale, size);
                    self.error = None;
                }
                Reply::Error(e) => self.error = Some(e),
            }
        }
    }
}

/// What the preview's images measured since the tab first opened.
#[derive(Clone, Debug, Default)]
pub struct PreviewStats {
    /// When the tab was first shown.
    opened: Option<Instant>,
    /// Seconds from then to the first image on screen, and whether it showed the original maps
    /// (before any training) or a decoded model.
    pub first_image: Option<(f64, bool)>,
    /// Seconds from then to the first image of a decoded model (a snapshot's pipeline compiled).
    pub first_decoded: Option<f64>,
    /// Every image shown: its scale (fraction of the full resolution) and pixels drawn.
    pub images: Vec<(f32, u64)>,
}

impl PreviewStats {
    fn image_shown(&mut self, first_source: Option<Source>, scale: f32, size: [u32; 2]) {
        let originals = matches!(first_source, Some(Source::Originals(_)));
        if let Some(opened) = self.opened {
            let secs = opened.elapsed().as_secs_f64();
            self.first_image.get_or_insert((secs, originals));
            if !originals {
                self.first_decoded.get_or_insert(secs);
            }
        }
        self.images.push((scale, u64::from(size[0]) * u64::from(size[1])));
    }
}

/// The preview panel.
pub fn preview_ui(
    ui: &mut egui::Ui,
    session: &Session,
    view: &mut ViewSettings,
    preview: Option<&mut PreviewGpu>,
    commands: &mut Vec<super::state::Command>,
) {
    let asset = session.library.mesh_bounds.filter(|_| !session.library.meshes.is_empty());
    super::panels::preview_controls_ui(ui, session, view, asset, commands);
    let Some(gpu) = preview else {
        ui.label("The PBR preview needs the wgpu renderer; this window has none.");
        return;
    };
    gpu.stats.opened.get_or_insert_with(Instant::now);
    gpu.take_replies(ui.ctx());
    let library = Arc::as_ptr(&session.library.set) as usize;
    // A/B: two runs of the experiment log, each by its own renderer.
    let ab = view.ab.and_then(|[a, b]| Some(((a, session.compare.loaded_runs.get(&a)?), (b, session.compare.loaded_runs.get(&b)?))));
    if let Some(((a, run_a), (b, run_b))) = ab {
        gpu.want_model(0, Source::Run(a), || Some(ModelInput::Bundle(Arc::clone(&run_a.bundle))));
        gpu.want_model(1, Source::Run(b), || Some(ModelInput::Bundle(Arc::clone(&run_b.bundle))));
    } else {
        // Renderer 1 serves A/B only: asked again when A/B comes back.
        gpu.asked[1] = None;
        if let Some(t) = session.shown.trained.as_ref().filter(|t| view.material < t.bundle.manifest.materials.len()) {
            // The decoded bundle when there is one.
            gpu.want_model(0, Source::Decoded(t.generation), || Some(ModelInput::Bundle(Arc::clone(&t.bundle))));
        } else {
            // Before that, the original maps lit.
            let analysis = session.library.analysis.as_ref().and_then(|a| a.as_ref().ok());
            let Some(analysis) = analysis.filter(|_| view.material < session.library.set.materials.len()) else {
                ui.label("Load a material folder to see it lit.");
                return;
            };
            let set = Arc::clone(&session.library.set);
            gpu.want_model(0, Source::Originals(library), || Some(ModelInput::Placeholder(set, Box::new(analysis.layout.clone()))));
        }
    }
    gpu.want_meshes(session, view, asset);
    if let Some((_, prepared)) = &session.environment.prepared
        && gpu.environment_sent != session.environment.generation
    {
        gpu.environment_sent = session.environment.generation;
        let _ = gpu.requests.send(Request::Environment(Arc::clone(prepared)));
    }
    if gpu.originals_asked != Some((library, view.material)) {
        gpu.originals_asked = Some((library, view.material));
        let _ = gpu.requests.send(Request::Originals((library, view.material), Arc::clone(&session.library.set)));
    }
    let dt = ui.input(|i| i.stable_dt).min(0.1);
    let lighting = Lighting { view: view.channel, ..view.lighting.lighting() };
    // The point lights show without the environment, or added to it.
    let lights_shown = !lighting.environment || lighting.point_lights;
    if view.lights_orbit && lights_shown {
        view.light_angle = (view.light_angle + dt * view.light_speed).rem_euclid(std::f32::consts::TAU);
    }
    let two_sides = ab.is_some() || (view.show_original && (session.shown.trained.is_some()));
    let sides = if two_sides { 2 } else { 1 };
    // The viewport fills what the panel has left.
    let available = ui.available_size().min(ui.clip_rect().size()).max(egui::Vec2::splat(64.0));
    let (rect, response) = ui.allocate_exact_size(available, egui::Sense::click_and_drag());
    camera_input(ui, &response, rect, sides, view, asset);
    if view.turntable {
        let mut orbit = view.camera.orbit();
        orbit.turn(dt);
        view.camera = CameraSettings::from_orbit(&orbit);
    }
    // Orbiting lights and the turntable animate: the next frame comes after the pause a software
    // GPU needs.
    if (view.lights_orbit && lights_shown) || view.turntable {
        match orbit_pause(gpu.software, ui.input(|i| i.unstable_dt)) {
            Some(pause) => ui.ctx().request_repaint_after(pause),
            None => ui.ctx().request_repaint(),
        }
    }
    let pixels = ui.ctx().pixels_per_point();
    let size = [((rect.width() * pixels).round() as u32).max(sides as u32), ((rect.height() * pixels).round() as u32).max(1)];
    let shape = match view.shape {
        PreviewShape::Sphere | PreviewShape::Asset => Shape::Sphere,
        PreviewShape::Plane => Shape::Plane,
        PreviewShape::Cube => Shape::Cube,
    };
    let on_asset = view.shape == PreviewShape::Asset && asset.is_some();
    let wanted = View {
        material: view.material,
        light_angle: view.light_angle,
        light_intensity: view.light_intensity,
        shape,
        show_original: view.show_original,
        ab: ab.is_some(),
        size,
        camera: view.camera.orbit().camera(size[0] as f32 / sides as f32 / size[1] as f32),
        asset: on_asset,
        near_plane: NEAR_PLANE_OF_RADIUS * framed_radius(view.shape, asset),
        lighting,
        environment: if lighting.environment { gpu.environment_sent } else { 0 },
    };
    if gpu.last_view != Some(wanted) {
        gpu.last_view = Some(wanted);
        let _ = gpu.requests.send(Request::View(wanted));
    }
    paint_image(ui, gpu, rect);
    if !gpu.converged() {
        // Images arrive from the render thread (which asks for a repaint); look again soon too.
        ui.ctx().request_repaint_after(Duration::from_millis(50));
    }
}

/// Paints the last image into `rect`, with what each side shows, and the notes on its scale and
/// on a model being prepared.
fn paint_image(ui: &mut egui::Ui, gpu: &PreviewGpu, rect: egui::Rect) {
    if let Some(e) = &gpu.error {
        ui.colored_label(egui::Color32::from_rgb(230, 120, 90), format!("preview: {e}"));
    }
    let font = egui::FontId::proportional(13.0);
    match &gpu.shown {
        Some((shows, scale, texture)) => {
            let uv = egui::Rect::from_min_max(egui::pos2(0.0, 0.0), egui::pos2(1.0, 1.0));
            ui.painter().image(texture.id(), rect, uv, egui::Color32::WHITE);
            let (left, right) = match shows.sources {
                [Some(Source::Run(a)), Some(Source::Run(b))] => (format!("A: run #{a}"), format!("B: run #{b}")),
                [Some(Source::Run(a)), _] => (format!("run #{a}, decoded in the shader"), "original maps".to_owned()),
                [Some(Source::Decoded(_)), _] => ("decoded in the shader".to_owned(), "original maps".to_owned()),
                _ => ("original maps (the decoded material follows the first snapshot)".to_owned(), String::new()),
            };
            ui.painter().text(rect.left_top() + egui::vec2(6.0, 4.0), egui::Align2::LEFT_TOP, left, font.clone(), egui::Color32::WHITE);
            if shows.sides == 2 {
                let at = rect.center_top() + egui::vec2(6.0, 4.0);
                ui.painter().text(at, egui::Align2::LEFT_TOP, right, font.clone(), egui::Color32::WHITE);
            }
            let channel = shows.view.lighting.view;
            if channel != texset_shaders::preview::ViewMode::Lit {
                let note = format!("{} (unlit; C: next channel, M: lit)", channel.name());
                let at = rect.right_top() + egui::vec2(-6.0, 4.0);
                ui.painter().text(at, egui::Align2::RIGHT_TOP, note, font.clone(), egui::Color32::YELLOW);
            }
            if *scale < 1.0 {
                let note = format!("{:.0}% resolution while moving", scale * 100.0);
                let at = rect.left_bottom() + egui::vec2(6.0, -4.0);
                ui.painter().text(at, egui::Align2::LEFT_BOTTOM, note, font.clone(), egui::Color32::LIGHT_GRAY);
            }
        }
        None => {
            ui.painter().rect_filled(rect, 0.0, egui::Color32::from_gray(20));
        }
    }
    if gpu.waiting_for_new_model() {
        let note = "preparing preview… (compiling the decoder for this GPU)";
        ui.painter().text(rect.center(), egui::Align2::CENTER_CENTER, note, font, egui::Color32::WHITE);
    }
}

/// The mouse on the viewport `rect` (of `sides` views side by side) drives the camera: a drag
/// orbits it (across one view's width: half a turn), a right, middle or Shift drag pans, the
/// wheel zooms, a double click frames the view.
fn camera_input(
    ui: &egui::Ui,
    response: &egui::Response,
    rect: egui::Rect,
    sides: usize,
    view: &mut ViewSettings,
    asset: Option<MeshBounds>,
) {
    let mut orbit = view.camera.orbit();
    let before = orbit;
    let height = rect.height().max(1.0);
    let width = (rect.width() / sides as f32).max(1.0);
    let delta = response.drag_delta();
    let shift = ui.input(|i| i.modifiers.shift);
    if response.dragged_by(egui::PointerButton::Secondary)
        || response.dragged_by(egui::PointerButton::Middle)
        || (shift && response.dragged_by(egui::PointerButton::Primary))
    {
        orbit.pan(-delta.x / height, delta.y / height);
    } else if response.dragged_by(egui::PointerButton::Primary) {
        let pi = std::f32::consts::PI;
        orbit.orbit(-delta.x / width * pi, delta.y / height * pi);
    }
    if response.hovered() {
        let scroll = ui.input(|i| i.smooth_scroll_delta.y);
        if scroll != 0.0 {
            orbit.zoom((-scroll * 0.002).exp(), framed_radius(view.shape, asset));
        }
    }
    if orbit != before {
        view.camera = CameraSettings::from_orbit(&orbit);
    }
    if response.double_clicked() {
        frame_view(view, asset);
    }
}

/// The mesh pass's near plane as a fraction of the framed radius: the camera comes no closer than
/// 0.05 of it (`OrbitCamera::zoom`), and reversed depth keeps precision far beyond.
const NEAR_PLANE_OF_RADIUS: f32 = 1e-3;

/// The radius of the sphere that holds `shape` (about the origin, or the asset's `bounds`).
fn framed_radius(shape: PreviewShape, asset: Option<MeshBounds>) -> f32 {
    match (shape, asset) {
        (PreviewShape::Asset, Some(bounds)) if bounds.radius > 0.0 => bounds.radius,
        (PreviewShape::Sphere | PreviewShape::Asset, _) => Shape::Sphere.bounding_radius(),
        (PreviewShape::Plane, _) => Shape::Plane.bounding_radius(),
        (PreviewShape::Cube, _) => Shape::Cube.bounding_radius(),
    }
}

/// Frames what the view shows (F, or a double click): the camera keeps its direction and looks
/// at it (the asset where the library has one, given by its `asset` bounds) from where it fills
/// the image's height.
pub fn frame_view(view: &mut ViewSettings, asset: Option<MeshBounds>) {
    let mut orbit = view.camera.orbit();
    let center = match (view.shape, asset) {
        (PreviewShape::Asset, Some(bounds)) => bounds.center,
        _ => [0.0; 3],
    };
    orbit.frame(center, framed_radius(view.shape, asset));
    view.camera = CameraSettings::from_orbit(&orbit);
}

/// How long orbiting lights wait before asking for the next frame, given the last frame's
/// interval: on a hardware GPU not at all (`None`: the next vsync). On a software GPU a frame is
/// CPU work on the cores that train, and back-to-back frames would take them all (no vsync
/// paces them under Xvfb or a remote desktop): the orbit pauses for half the last interval, so
/// it settles at about half of the machine, at most [`MAX_ORBIT_PAUSE`].
#[must_use]
pub fn orbit_pause(software: bool, last_frame_secs: f32) -> Option<Duration> {
    let half = if last_frame_secs.is_finite() { (0.5 * f64::from(last_frame_secs)).clamp(0.0, 1.0) } else { 0.0 };
    software.then(|| Duration::from_secs_f64(half).min(MAX_ORBIT_PAUSE))
}

/// The longest pause [`orbit_pause`] gives (the orbit keeps at least ~8 frames a second).
pub const MAX_ORBIT_PAUSE: Duration = Duration::from_millis(60);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orbit_pauses_only_on_a_software_gpu() {
        assert_eq!(orbit_pause(false, 0.05), None);
        assert_eq!(orbit_pause(true, 0.05), Some(Duration::from_millis(25)));
        // Bounded both ways, and odd intervals do not panic.
        assert_eq!(orbit_pause(true, 1.0), Some(MAX_ORBIT_PAUSE));
        assert_eq!(orbit_pause(true, -1.0), Some(Duration::ZERO));
        assert_eq!(orbit_pause(true, f32::NAN), Some(Duration::ZERO));
    }
}
