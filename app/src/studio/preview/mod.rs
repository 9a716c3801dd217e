//! The PBR preview panel: `texset_shaders::preview` (every pixel's material decoded by the
//! bundle's MLP in the fragment shader) drawn on a thread of its own and shown by a blit of its
//! own (`studio/blit.rs`, decision 052: an egui image is lavapipe's slow path).
//! It shows one side (the decoded material; before any training the original maps), or compares
//! two through one camera, as a wipe with a draggable divider or beside each other: any two of
//! the original maps, the decoded bundle, the maps block-compressed as engines ship them, and runs
//! of the experiment log (`X` swaps them). What is decoded is decoded per pixel from the bundle's
//! bytes by the generated decoder `export-shader` writes; no side decodes into textures first.
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

mod controls;
mod maps;
mod overlay;
mod render;

pub use overlay::frame_view;

use super::session::Session;
use super::state::{CameraSettings, Command, PreviewShape, SideSource, ViewSettings};
use eframe::egui;
use eframe::egui_wgpu::RenderState;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use texset_core::decode::DecodedMap;
use texset_core::eval::bcn::BcRoundTrip;
use texset_core::set::{GltfMesh, UvTransform};
use texset_core::{bundle::Bundle, model::ModelLayout, set::TextureSet};
use texset_shaders::environment::PreparedEnvironment;
use texset_shaders::preview::{Camera, Layout, Lighting, MeshBounds, Probe, Shape};

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

/// The maps a side's texture holds: the original maps of a material of a library (its `Arc`
/// address); or them block-compressed, or (a decoded side) the session's decoded maps once there
/// are some, with the originals after them (the error view's reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MapsKey {
    library: usize,
    material: usize,
    bcn: bool,
    decoded: bool,
}

impl MapsKey {
    /// The maps side `side` reads of `material` of `library`.
    fn new(library: usize, material: usize, side: SideSource) -> Self {
        Self { library, material, bcn: side == SideSource::Bcn, decoded: side == SideSource::Decoded }
    }

    /// The maps side `side` of `view` reads.
    fn of(view: &View, side: SideSource) -> Self {
        Self::new(view.library, view.material, side)
    }
}

/// What the view asks of an image (the render thread turns it into uniforms with its models'
/// manifests).
#[derive(Clone, Copy, Debug, PartialEq)]
struct View {
    material: usize,
    light_angle: f32,
    light_intensity: f32,
    shape: Shape,
    /// What each side shows (side 1 `None`: one side). Side `i` is drawn by renderer `i`.
    sides: [Option<SideSource>; 2],
    /// How the sides share the image.
    layout: Layout,
    /// The library shown (its `Arc` address): the maps the sides read are its.
    library: usize,
    /// Full-resolution size in pixels (of every side together).
    size: [u32; 2],
    /// Where the camera looks from (every side the same).
    camera: Camera,
    /// The surface is the library's meshes (`shape` otherwise).
    asset: bool,
    /// The mesh pass's near plane, world units.
    near_plane: f32,
    /// What the material pass writes (the error or height views' probe; the reference offset is
    /// each side's own).
    probe: Probe,
    /// How the shading pass lights.
    lighting: Lighting,
    /// Which environment it lights by (`EnvironmentState::generation` sent; 0: none yet), so an
    /// image lit before the environment arrived is not taken for the view's.
    environment: u64,
}

/// Messages to `texset-preview`.
enum Request {
    Model(usize, Source, ModelInput),
    /// The maps renderer `i`'s texture holds: the library's, and for a block-compressed side its
    /// maps' round trips (in the material's order).
    Maps(usize, MapsKey, Arc<TextureSet>, Option<Vec<Arc<BcRoundTrip>>>),
    /// The session's decoded maps of its bundle (their generation), per material, per map: a
    /// decoded side reads them as textures while the view moves.
    Decoded(u64, Arc<Vec<Vec<DecodedMap>>>),
    /// The library's meshes (their materials' UV transforms applied), and the materials each
    /// can wear.
    Meshes(Arc<Vec<GltfMesh>>, Vec<UvTransform>, Arc<Vec<Vec<usize>>>),
    /// The environment the shading pass lights by.
    Environment(Arc<PreparedEnvironment>),
    View(View),
}

/// What one image shows: the view, the models its sides decoded, and which decoded side read
/// the decoded maps as textures (the decode-on-load path) instead of decoding per pixel.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Shows {
    view: View,
    sources: [Option<Source>; 2],
    textures: [bool; 2],
}

/// Messages from `texset-preview`.
enum Reply {
    /// A model is ready (or failed).
    Model(usize, Source, Result<(), String>),
    /// A finished image: what it shows, its scale and size, RGBA8 rows.
    Image(Box<Shows>, f32, [u32; 2], Vec<u8>),
    /// Something failed (shown in the panel).
    Error(String),
}

/// The preview's side of the UI: what it asked the render thread for and the last image.
pub struct PreviewGpu {
    requests: Sender<Request>,
    replies: Receiver<Reply>,
    /// Models asked for, per renderer, and whether each is ready.
    asked: [Option<(Source, bool)>; 2],
    /// The maps asked for, per renderer.
    maps_asked: [Option<MapsKey>; 2],
    /// The meshes sent to the render thread (their `Arc`'s address).
    meshes_sent: Option<usize>,
    /// The environment sent to the render thread (`EnvironmentState::generation`).
    environment_sent: u64,
    /// The generation of the decoded maps sent to the render thread.
    decoded_sent: Option<u64>,
    last_view: Option<View>,
    /// The last image: what it shows, its scale, and its pixels (drawn by [`crate::studio::blit`]).
    shown: Option<(Shows, f32, Arc<crate::studio::blit::ShownImage>)>,
    /// What the viewport shows before its first image: one dark pixel, stretched.
    placeholder: Arc<crate::studio::blit::ShownImage>,
    error: Option<String>,
    /// Bands drawn so far (the render thread counts them).
    bands: Arc<AtomicU64>,
    /// Images completed.
    pub images_completed: u64,
    /// What the images shown so far measured (`bench ui` reports it).
    pub stats: PreviewStats,
    /// Whether the window renders on a software GPU (see [`orbit_pause`]).
    software: bool,
    /// Since when the panel has waited for a model of a new kind (see
    /// [`Self::waiting_for_new_model`]): the note says for how long, so a slow compile is seen
    /// to go on.
    waiting_since: Option<Instant>,
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
            if !texset_shaders::renders_fragment_format(&adapter) {
                let info = adapter.get_info();
                let why = format!(
                    "{} ({:?}) cannot render to Rgba32Float, which the preview's passes draw into; the preview is off \
                     (on Linux without a GPU, Mesa's lavapipe works: `apt-get install mesa-vulkan-drivers`)",
                    info.name, info.backend
                );
                let _ = replies_tx.send(Reply::Error(why));
                repaint();
                return;
            }
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
            maps_asked: [None, None],
            meshes_sent: None,
            environment_sent: 0,
            decoded_sent: None,
            last_view: None,
            shown: None,
            placeholder: Arc::new(crate::studio::blit::ShownImage::placeholder()),
            error: None,
            waiting_since: None,
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
    fn take_replies(&mut self) {
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
                    let shows = *shows;
                    // At full resolution the image maps 1:1 onto the screen's pixels: nearest
                    // sampling shows the same and costs a software GPU less per pixel.
                    match crate::studio::blit::ShownImage::new(size, rgba, scale < 1.0) {
                        Ok(image) => self.shown = Some((shows, scale, Arc::new(image))),
                        Err(e) => {
                            self.error = Some(e);
                            continue;
                        }
                    }
                    self.images_completed += 1;
                    self.stats.image_shown(&shows, scale, size);
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
    /// Seconds from then to the first image of a decoded model, from textures or per pixel.
    pub first_decoded: Option<f64>,
    /// Seconds from then to the first image decoded per pixel (the decoder compiled).
    pub first_per_pixel: Option<f64>,
    /// Seconds from then until the library had loaded, and until it was analysed (the lit
    /// originals wait for both: their placeholder model is made from the analysis).
    pub library_loaded: Option<f64>,
    /// See [`Self::library_loaded`].
    pub library_analysed: Option<f64>,
    /// Every image shown.
    pub images: Vec<ImageShown>,
}

/// One image the preview showed.
#[derive(Clone, Copy, Debug)]
pub struct ImageShown {
    /// Seconds since the tab first opened.
    pub secs: f64,
    /// Its scale (fraction of the full resolution's side).
    pub scale: f32,
    /// Pixels drawn.
    pub pixels: u64,
    /// Whether its first side was decoded per pixel (the shipped path), not read from textures
    /// (the original maps, or the decoded maps while the view moved).
    pub per_pixel: bool,
}

impl PreviewStats {
    /// Seconds since the tab first opened (`None` before it has).
    #[must_use]
    pub fn secs_since_opened(&self) -> Option<f64> {
        self.opened.map(|opened| opened.elapsed().as_secs_f64())
    }

    fn image_shown(&mut self, shows: &Shows, scale: f32, size: [u32; 2]) {
        let decoded = shows.view.sides[0].is_some_and(SideSource::decodes);
        let per_pixel = decoded && !shows.textures[0];
        let secs = self.opened.map_or(0.0, |opened| opened.elapsed().as_secs_f64());
        if self.opened.is_some() {
            self.first_image.get_or_insert((secs, !decoded));
            if decoded {
                self.first_decoded.get_or_insert(secs);
            }
            if per_pixel {
                self.first_per_pixel.get_or_insert(secs);
            }
        }
        self.images.push(ImageShown { secs, scale, pixels: u64::from(size[0]) * u64::from(size[1]), per_pixel });
    }
}

/// The preview panel.
pub fn preview_ui(
    ui: &mut egui::Ui,
    session: &Session,
    view: &mut ViewSettings,
    preview: Option<&mut PreviewGpu>,
    commands: &mut Vec<Command>,
) {
    let asset = session.library.mesh_bounds.filter(|_| !session.library.meshes.is_empty());
    controls::preview_controls_ui(ui, session, view, asset, commands);
    let Some(gpu) = preview else {
        ui.label("The PBR preview needs the wgpu renderer; this window has none.");
        return;
    };
    let opened = *gpu.stats.opened.get_or_insert_with(Instant::now);
    if !session.library.set.materials.is_empty() {
        gpu.stats.library_loaded.get_or_insert_with(|| opened.elapsed().as_secs_f64());
    }
    if session.library.analysis.is_some() {
        gpu.stats.library_analysed.get_or_insert_with(|| opened.elapsed().as_secs_f64());
    }
    gpu.take_replies();
    // The decoded maps first: a decoded side's texture asked for below leads with them at once.
    if let Some(decoded) = &session.shown.decoded
        && gpu.decoded_sent != Some(decoded.generation)
    {
        gpu.decoded_sent = Some(decoded.generation);
        let _ = gpu.requests.send(Request::Decoded(decoded.generation, Arc::clone(&decoded.maps)));
    }
    let Some(sides) = gpu.want_sides(session, view, commands) else {
        ui.label("Load a material folder to see it lit.");
        return;
    };
    gpu.want_meshes(session, view, asset);
    gpu.waiting_since = gpu.waiting_for_new_model().then(|| gpu.waiting_since.unwrap_or_else(Instant::now));
    if let Some((_, prepared)) = &session.environment.prepared
        && gpu.environment_sent != session.environment.generation
    {
        gpu.environment_sent = session.environment.generation;
        let _ = gpu.requests.send(Request::Environment(Arc::clone(prepared)));
    }
    let dt = ui.input(|i| i.stable_dt).min(0.1);
    let lighting = Lighting { view: view.channel, ..view.lighting.lighting() };
    // The point lights show without the environment, or added to it.
    let lights_shown = !lighting.environment || lighting.point_lights;
    if view.lights_orbit && lights_shown {
        view.light_angle = (view.light_angle + dt * view.light_speed).rem_euclid(std::f32::consts::TAU);
    }
    let layout = match sides {
        [_, None] => Layout::One,
        _ if view.wipe => Layout::Wipe(view.wipe_split.clamp(0.0, 1.0)),
        _ => Layout::Beside,
    };
    // The viewport fills what the panel has left.
    let available = ui.available_size().min(ui.clip_rect().size()).max(egui::Vec2::splat(64.0));
    let (rect, response) = ui.allocate_exact_size(available, egui::Sense::click_and_drag());
    // The wipe's divider takes drags near it; the rest of the view drives the camera.
    if !overlay::divider_input(ui, rect, layout, view) {
        overlay::camera_input(ui, &response, rect, layout, view, asset);
    }
    if view.turntable {
        let mut orbit = view.camera.orbit();
        orbit.turn(dt);
        view.camera = CameraSettings::from_orbit(&orbit);
    }
    // Orbiting lights and the turntable animate: the next frame comes after the pause a software
    // GPU needs. Before the first image there is nothing to move: the frames would only take the
    // cores from the decoder's compile.
    if ((view.lights_orbit && lights_shown) || view.turntable) && gpu.shown.is_some() {
        match orbit_pause(gpu.software) {
            Some(pause) => ui.ctx().request_repaint_after(pause),
            None => ui.ctx().request_repaint(),
        }
    }
    let pixels = ui.ctx().pixels_per_point();
    let size = [((rect.width() * pixels).round() as u32).max(2), ((rect.height() * pixels).round() as u32).max(1)];
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
        sides,
        layout,
        library: Arc::as_ptr(&session.library.set) as usize,
        size,
        camera: view.camera.orbit().camera(layout.aspect(size)),
        asset: on_asset,
        near_plane: overlay::NEAR_PLANE_OF_RADIUS * overlay::framed_radius(view.shape, asset),
        probe: view.channel.probe(view.error_map, 0),
        lighting,
        environment: if lighting.environment { gpu.environment_sent } else { 0 },
    };
    if gpu.last_view != Some(wanted) {
        gpu.last_view = Some(wanted);
        let _ = gpu.requests.send(Request::View(wanted));
    }
    overlay::paint_image(ui, gpu, rect, view);
    if gpu.waiting_since.is_some() {
        // A compile: the note counts its seconds.
        ui.ctx().request_repaint_after(Duration::from_secs(1));
    } else if !gpu.converged() && !gpu.software {
        // Images arrive from the render thread (which asks for a repaint); look again soon too,
        // but not on a software GPU, where each frame is CPU time the images need.
        ui.ctx().request_repaint_after(Duration::from_millis(50));
    }
}

impl PreviewGpu {
    /// What each side shows, its model and its maps asked for (`None`: nothing to show yet).
    /// Two runs in the runs panel's A/B are the sides; else, with "compare", the two chosen
    /// (a decoded side before any training shows the originals, and two sides the same are one);
    /// else the decoded material, or the original maps before training.
    fn want_sides(&mut self, session: &Session, view: &ViewSettings, commands: &mut Vec<Command>) -> Option<[Option<SideSource>; 2]> {
        let library = Arc::as_ptr(&session.library.set) as usize;
        let trained = session.shown.trained.as_ref().filter(|t| view.material < t.bundle.manifest.materials.len());
        let runs = &session.compare.loaded_runs;
        let ab = view.ab.filter(|[a, b]| runs.contains_key(a) && runs.contains_key(b));
        let default = if trained.is_some() { SideSource::Decoded } else { SideSource::Original };
        let resolve = |side: SideSource| match side {
            SideSource::Decoded if trained.is_none() => SideSource::Original,
            SideSource::Run(id) if !runs.contains_key(&id) => default,
            other => other,
        };
        let sides = match ab {
            Some([a, b]) => [Some(SideSource::Run(a)), Some(SideSource::Run(b))],
            None if view.compare => {
                let [left, right] = view.compare_sides.map(resolve);
                [Some(left), Some(right).filter(|&r| r != left)]
            }
            None => [Some(default), None],
        };
        if view.material >= session.library.set.materials.len() {
            return None;
        }
        // The library's own model: the bundle on screen, or before training a placeholder made
        // from the analysis (its weights unused: the sides that read maps reach no decoder). The
        // maps and meshes go to the render thread while the analysis runs.
        let analysis = session.library.analysis.as_ref().and_then(|a| a.as_ref().ok());
        for (slot, side) in sides.iter().enumerate() {
            let Some(side) = *side else {
                // Renderer 1 serves a second side only: asked again when one comes back.
                (self.asked[slot], self.maps_asked[slot]) = (None, None);
                continue;
            };
            match (side, trained) {
                (SideSource::Run(id), _) => {
                    let bundle = runs.get(&id).map(|r| Arc::clone(&r.bundle));
                    self.want_model(slot, Source::Run(id), || bundle.map(ModelInput::Bundle));
                }
                (_, Some(t)) => self.want_model(slot, Source::Decoded(t.generation), || Some(ModelInput::Bundle(Arc::clone(&t.bundle)))),
                (_, None) => {
                    let set = Arc::clone(&session.library.set);
                    let layout = analysis.map(|a| Box::new(a.layout.clone()));
                    self.want_model(slot, Source::Originals(library), || Some(ModelInput::Placeholder(set, layout?)));
                }
            }
            let key = MapsKey::new(library, view.material, side);
            self.want_maps(slot, key, session, commands);
        }
        Some(sides)
    }

    /// Sends renderer `slot` the maps of `key` unless it has them; a block-compressed side waits
    /// for its maps' round trips (asked of the session one at a time).
    fn want_maps(&mut self, slot: usize, key: MapsKey, session: &Session, commands: &mut Vec<Command>) {
        if self.maps_asked[slot] == Some(key) {
            return;
        }
        let bcn = if key.bcn {
            let maps = session.library.set.materials.get(key.material).map_or(0, |m| m.textures.len());
            let done: Vec<Arc<BcRoundTrip>> =
                (0..maps).filter_map(|map| session.compare.bcn.get(&(key.material, map)).map(Arc::clone)).collect();
            if done.len() < maps {
                if let Some(missing) = (0..maps).find(|&map| !session.compare.bcn.contains_key(&(key.material, map))) {
                    commands.push(Command::ComputeBcn(key.material, missing));
                }
                return;
            }
            Some(done)
        } else {
            None
        };
        if self.requests.send(Request::Maps(slot, key, Arc::clone(&session.library.set), bcn)).is_ok() {
            self.maps_asked[slot] = Some(key);
        }
    }

    /// Whether a side waits for its maps to be block-compressed.
    fn block_compressing(&self) -> bool {
        self.last_view.is_some_and(|v| {
            v.sides.iter().enumerate().any(|(slot, s)| *s == Some(SideSource::Bcn) && self.maps_asked[slot].is_none_or(|k| !k.bcn))
        })
    }
}

/// How long orbiting lights (or the turntable) wait before asking for the next frame: on a
/// hardware GPU not at all (`None`: the next vsync). On a software GPU a frame is CPU work on the
/// cores that train (about 30 ms of a window on lavapipe, decision 021), and no vsync paces frames
/// under Xvfb or a remote desktop: the orbit asks for a frame as often as the render thread sends
/// an image ([`IMAGE_INTERVAL`]), since frames between two images show nothing new. Measured on
/// the sample library, 2-core lavapipe: a pause of half the last frame (at most 60 ms) drew about
/// 19 frames a second and left training 0.2 of a core.
#[must_use]
pub fn orbit_pause(software: bool) -> Option<Duration> {
    software.then_some(IMAGE_INTERVAL)
}

/// The least time between two images the render thread sends: each is a texture upload on the
/// UI's side, which a software GPU pays for in the frame (about 2 MB an image at full resolution).
pub const IMAGE_INTERVAL: Duration = Duration::from_millis(200);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orbit_pauses_only_on_a_software_gpu() {
        assert_eq!(orbit_pause(false), None);
        assert_eq!(orbit_pause(true), Some(IMAGE_INTERVAL));
    }
}
