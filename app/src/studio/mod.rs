//! The studio: an eframe/egui window over the engine. `texset` with no arguments opens it.
//!
//! - [`state`]: what is persisted (folders, settings, budgets, views) and the commands panels emit.
//! - [`session`]: the runtime (library, training run, bundle on screen), changed only by commands.
//! - [`store`]: what the data folder keeps apart from `app.ron`: the experiment log, run bundles,
//!   the lock one studio holds.
//! - [`task`]: the one shape of background work; [`worker`]: training (`compress`) and decoding on
//!   it. The UI never blocks on them.
//! - [`panels`], [`preview`]: the `*_ui` functions; the preview draws with wgpu in a paint callback.

pub mod bench_ui;
pub mod blit;
pub mod budgets;
pub mod compare;
pub mod panels;
pub mod preview;
pub mod runs;
pub mod session;
pub mod shortcuts;
pub mod state;
pub mod store;
pub mod task;
pub mod textures;
pub mod worker;

use eframe::egui;
use eframe::egui_wgpu::RenderState;
use panels::Dialog;
use session::Session;
use state::{CameraSettings, CentralView, Command, STORAGE_KEY, Settings};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Instant;
use texset_core::{
    io::write_atomic,
    train::{resolve_auto, share_device, share_wgpu_device},
};

/// The eframe app: the session plus what only the window has (textures, dialogs, frame timing).
pub struct StudioApp {
    /// The session (public for tests that drive the app).
    pub session: Session,
    textures: textures::Textures,
    /// The PBR preview's GPU side (none without a wgpu renderer).
    pub preview: Option<preview::PreviewGpu>,
    dialog_results: (Sender<Command>, Receiver<Command>),
    /// Frame times of the last frames, milliseconds (for `texset bench ui`).
    pub frame_ms: Vec<f64>,
    last_frame: Option<Instant>,
    confirm_close: bool,
    allow_close: bool,
    capture: Option<Capture>,
    /// The keyboard shortcut overlay is open.
    show_help: bool,
    /// The library's meshes last seen (their `Arc`'s address: [`Self::open_on_asset`]).
    meshes_seen: usize,
    /// The data folder's lock ([`store::lock`]), held while the studio runs; `None`: no data
    /// folder, or another studio holds it (then this one writes nothing there).
    data_lock: Option<std::fs::File>,
}

/// `texset studio --capture DIR`: train, screenshot the real window (compare view, the PBR preview
/// at two light angles), train a second run at another rate, screenshot the experiment log with
/// its rate–distortion chart and the two runs A/B, and close. What the screenshot test and
/// docs/studio.md use.
struct Capture {
    dir: PathBuf,
    /// Index into [`CAPTURE_SHOTS`] of the next screenshot.
    next: usize,
    /// Frames to let pass before the next screenshot (the view settles, the GPU catches up).
    wait_frames: u32,
    /// A screenshot was asked for and has not arrived.
    pending: bool,
    /// Screenshots written (or failed), in words.
    arrived: (Sender<String>, Receiver<String>),
    /// Scroll the right panel down to the experiment log (the shots of it).
    scroll_to_runs: bool,
}

/// One screenshot `--capture` takes.
#[derive(Clone, Copy)]
struct Shot {
    /// File name in the capture folder.
    name: &'static str,
    /// Which finished run it shows: 1 (the first) or 2 (after the second run).
    after_run: usize,
    central: CentralView,
    /// Light angle, radians.
    light_angle: f32,
    /// Compare shows the block-compressed map (with the difference at gain 8) on the right.
    bcn: bool,
    /// Runs #1 and #2 side by side (A/B) instead of original and decoded.
    ab: bool,
    /// The right panel scrolled down to the experiment log and its rate–distortion chart.
    runs: bool,
}

impl Shot {
    const fn new(name: &'static str, after_run: usize, central: CentralView, light_angle: f32) -> Self {
        Self { name, after_run, central, light_angle, bcn: false, ab: false, runs: false }
    }
}

/// The screenshots `--capture` takes, in order.
const CAPTURE_SHOTS: [Shot; 7] = [
    Shot::new("compare.png", 1, CentralView::Compare, 0.0),
    Shot { bcn: true, ..Shot::new("compare_bcn.png", 1, CentralView::Compare, 0.0) },
    Shot::new("preview_a.png", 1, CentralView::Preview, 0.4),
    Shot::new("preview_b.png", 1, CentralView::Preview, 2.4),
    Shot { runs: true, ..Shot::new("runs.png", 2, CentralView::Compare, 0.0) },
    Shot { ab: true, runs: true, ..Shot::new("ab_compare.png", 2, CentralView::Compare, 0.0) },
    Shot { ab: true, ..Shot::new("ab_preview.png", 2, CentralView::Preview, 0.4) },
];

/// The second run's target rate, bits per texel: another point on the runs' chart.
const CAPTURE_SECOND_RUN_BITS_PER_TEXEL: f64 = 2.0;

impl StudioApp {
    /// A studio with `settings`; `folders` (if any) replace the remembered library.
    pub fn new(
        settings: Settings,
        folders: Vec<PathBuf>,
        render_state: Option<&RenderState>,
        data_dir: Option<PathBuf>,
        ctx: &egui::Context,
    ) -> std::io::Result<Self> {
        tune_for_renderer(ctx, render_state);
        let repaint_ctx = ctx.clone();
        Self::with_repaint(settings, folders, render_state, data_dir, Arc::new(move || repaint_ctx.request_repaint()))
    }

    /// As [`Self::new`], with `repaint` called when background work has something to show.
    pub fn with_repaint(
        mut settings: Settings,
        folders: Vec<PathBuf>,
        render_state: Option<&RenderState>,
        data_dir: Option<PathBuf>,
        repaint: Arc<dyn Fn() + Send + Sync>,
    ) -> std::io::Result<Self> {
        if !folders.is_empty() {
            if settings.folders != folders {
                settings.trained_bundle = None;
            }
            settings.folders = folders;
        }
        // On a software GPU the window's frames are rasterised on the same cores that train.
        let software = renders_in_software(render_state);
        let device = match render_state {
            Some(rs) => {
                let info = rs.adapter.get_info();
                let kind = if software { "software GPU" } else { "GPU" };
                // On a hardware GPU, training (the fused GPU trainer, what Auto picks there, and
                // burn-wgpu) runs on this same device; a software one trains faster on the CPU.
                let training = if software {
                    training_device()
                } else {
                    let fused = share_device(&rs.adapter, rs.device.clone(), rs.queue.clone());
                    match fused
                        .and_then(|()| share_wgpu_device(rs.instance.clone(), rs.adapter.clone(), rs.device.clone(), rs.queue.clone()))
                    {
                        Ok(()) => "on this GPU, shared with the renderer".to_owned(),
                        Err(e) => format!("{} ({e})", training_device()),
                    }
                };
                format!("{} ({kind}, {:?}); training: {training}", info.name, info.backend)
            }
            None => format!("no GPU renderer; training: {}", training_device()),
        };
        // The large images (viewport, Compare) are drawn by blits of their own in egui's renderer.
        if let Some(rs) = render_state {
            blit::install(rs);
        }
        // The window's GPU: the preview draws with its adapter (on a device of its own).
        let preview = render_state.map(|rs| preview::PreviewGpu::new(rs, Arc::clone(&repaint))).transpose()?;
        // On a software GPU background work leaves a core to the frames.
        let background = if software { worker::Background::below_frames() } else { worker::Background::all_cores() };
        let device = if software {
            format!("{device}; background work on {} of the cores, one left to the renderer", background.threads())
        } else {
            device
        };
        // One studio writes a data folder at a time: a second one shows its log and keeps nothing.
        let (data_lock, lock_problem) = match data_dir.as_deref().map(store::lock) {
            None => (None, None),
            Some(Ok(lock)) => (Some(lock), None),
            Some(Err(e)) => (None, Some(e)),
        };
        let read_only = lock_problem.is_some();
        let mut session = Session::new(settings, device, data_dir, repaint, background, read_only);
        if let Some(problem) = lock_problem {
            session.say(true, problem.to_string());
        }
        Ok(Self {
            session,
            textures: textures::Textures::default(),
            preview,
            dialog_results: channel(),
            frame_ms: Vec::new(),
            last_frame: None,
            confirm_close: false,
            allow_close: false,
            capture: None,
            meshes_seen: 0,
            show_help: false,
            data_lock,
        })
    }

    /// Screenshots into `dir` once training has finished (see [`Capture`]); starts training.
    pub fn capture_to(&mut self, dir: PathBuf) {
        self.capture = Some(Capture { dir, next: 0, wait_frames: 0, pending: false, arrived: channel(), scroll_to_runs: false });
    }

    /// Drives `--capture`: start training when loaded, take the first run's shots, train the
    /// second run, take its shots, then close.
    fn drive_capture(&mut self, ui: &egui::Ui) {
        let preview_converged = self.preview.as_ref().is_none_or(preview::PreviewGpu::converged);
        let Some(capture) = &mut self.capture else { return };
        let session = &mut self.session;
        if session.training.run.state == session::RunState::Idle && !session.library.set.materials.is_empty() && !session.is_training() {
            session.apply(Command::StartTraining);
            return;
        }
        let ready =
            session.training.run.state == session::RunState::Finished && session.current_decoded().is_some_and(|d| d.scores.is_some());
        if session.training.run.state == session::RunState::Failed {
            eprintln!("texset: capture: training failed: {:?}", session.training.run.lines.last());
            ui.ctx().send_viewport_cmd(egui::ViewportCommand::Close);
            return;
        }
        if !ready || session.is_training() {
            // The studio repaints every 250 ms while it is busy, as without `--capture`: a frame
            // on every vsync here would take a software GPU's cores from the training it waits
            // for (the trainer runs below the UI's priority: decision 020).
            return;
        }
        // From here on each frame moves a shot on (the view settles, the preview draws
        // progressively), so frames follow one another.
        ui.ctx().request_repaint();
        while let Ok(message) = capture.arrived.1.try_recv() {
            eprintln!("texset: capture: {message}");
            capture.pending = false;
            capture.next += 1;
            capture.wait_frames = 0;
        }
        if capture.pending {
            return;
        }
        let Some(&shot) = CAPTURE_SHOTS.get(capture.next) else {
            ui.ctx().send_viewport_cmd(egui::ViewportCommand::Close);
            return;
        };
        let runs = session.log.runs.len();
        if runs < shot.after_run {
            // The next run: another rate, so the experiment log and its chart have two points.
            session.apply(Command::SetBitsPerTexel(Some(CAPTURE_SECOND_RUN_BITS_PER_TEXEL)));
            // It trains under the view of the next shot: the preview of the last one would
            // redraw every snapshot in full, on the cores the run needs.
            session.settings.view.central = shot.central;
            session.apply(Command::StartTraining);
            return;
        }
        let view = &mut session.settings.view;
        view.central = shot.central;
        view.lights_orbit = false;
        view.light_angle = shot.light_angle;
        // The environment lights the preview, the point lights added so that moving them shows.
        view.lighting.point_lights = true;
        view.bcn = shot.bcn;
        view.difference = shot.bcn;
        let first_and_last = session.log.runs.first().zip(session.log.runs.last()).map(|(a, b)| [a.id, b.id]);
        view.ab = if shot.ab { first_and_last } else { None };
        capture.scroll_to_runs = shot.runs;
        capture.wait_frames += 1;
        // Each wait is bounded: a shot is taken anyway after it (the log says what it shows).
        let waiting_for_bcn = shot.bcn && !session.compare.bcn.contains_key(&(view.material, view.map)) && capture.wait_frames < 600;
        // The preview draws progressively: wait until it shows this view at full resolution.
        let waiting_for_preview = shot.central == CentralView::Preview
            && (!preview_converged || (view.lighting.environment && session.environment.prepared.is_none()))
            && capture.wait_frames < 6000;
        let waiting_for_runs = shot.runs
            && (session.compare.bc_baselines.is_none() || session.log.runs.iter().any(|r| r.psnr_db.is_none()))
            && capture.wait_frames < 6000;
        let waiting_for_ab = shot.ab
            && view.ab.is_some_and(|ab| ab.iter().any(|id| !session.compare.loaded_runs.contains_key(id)))
            && capture.wait_frames < 6000;
        if capture.wait_frames >= 2 && !waiting_for_bcn && !waiting_for_preview && !waiting_for_runs && !waiting_for_ab {
            capture.pending = true;
            let path = capture.dir.join(shot.name);
            let sender = capture.arrived.0.clone();
            let repaint = ui.ctx().clone();
            ui.ctx().request_screenshot(move |image| {
                let rgba: Vec<u8> = image.pixels.iter().flat_map(egui::Color32::to_array).collect();
                let saved = std::fs::create_dir_all(path.parent().unwrap_or(&path)).map_err(|e| e.to_string()).and_then(|()| {
                    let mut png = Vec::new();
                    image::ImageEncoder::write_image(
                        image::codecs::png::PngEncoder::new(&mut png),
                        &rgba,
                        image.size[0] as u32,
                        image.size[1] as u32,
                        image::ExtendedColorType::Rgba8,
                    )
                    .map_err(|e| e.to_string())?;
                    write_atomic(&path, &png).map_err(|e| e.to_string())
                });
                let _ = sender.send(match saved {
                    Ok(()) => format!("wrote {}", path.display()),
                    Err(e) => format!("{}: {e}", path.display()),
                });
                repaint.request_repaint();
            });
        }
    }

    /// One frame of the whole UI (also what UI tests drive).
    pub fn frame_ui(&mut self, ui: &mut egui::Ui) {
        let now = Instant::now();
        if let Some(last) = self.last_frame {
            self.frame_ms.push(now.duration_since(last).as_secs_f64() * 1e3);
            if self.frame_ms.len() > 4096 {
                self.frame_ms.drain(..2048);
            }
        }
        self.last_frame = Some(now);

        self.session.poll();
        while let Ok(command) = self.dialog_results.1.try_recv() {
            self.session.apply(command);
        }
        let dropped: Vec<PathBuf> =
            ui.input(|i| i.raw.dropped_files.iter().map(|f| f.path().to_path_buf()).filter(|p| !p.as_os_str().is_empty()).collect());
        if !dropped.is_empty() {
            self.session.apply(Command::AddPaths(dropped));
        }
        self.textures.reset_if_library_changed(Arc::as_ptr(&self.session.library.set) as usize);

        let mut commands = Vec::new();
        let mut dialogs = Vec::new();
        let mut view = self.session.settings.view.clone();
        for action in shortcuts::pressed(ui.ctx()) {
            self.shortcut(action, &mut view, &mut commands, &mut dialogs);
        }
        // The panels leave their background to the frame's clear ([`clear_color`]): on a software
        // GPU a full-window fill costs as much as the rest of the frame (docs/decisions/021-software-gpu-painting.md).
        let side = egui::Frame::side_top_panel(ui.style()).fill(egui::Color32::TRANSPARENT);
        let central = egui::Frame::central_panel(ui.style()).fill(egui::Color32::TRANSPARENT);
        egui::Panel::top("menu").frame(side).show(ui, |ui| panels::menu_ui(ui, &self.session, &mut dialogs));
        egui::Panel::bottom("status").frame(side).show(ui, |ui| panels::status_ui(ui, &self.session));
        self.open_on_asset(&mut view);
        if view.side_panels {
            self.side_panels_ui(ui, side, &mut view, &mut commands, &mut dialogs);
        }
        egui::CentralPanel::default().frame(central).show(ui, |ui| {
            panels::central_tabs_ui(ui, &mut view);
            match view.central {
                CentralView::Compare => compare::compare_ui(ui, &self.session, &mut self.textures, &mut view, &mut commands),
                CentralView::Preview => {
                    if view.lighting.environment {
                        self.session.want_environment();
                    }
                    preview::preview_ui(ui, &self.session, &mut view, self.preview.as_mut(), &mut commands);
                }
            }
        });
        shortcuts::help_ui(ui.ctx(), &mut self.show_help);
        if self.confirm_close {
            egui::Modal::new(egui::Id::unique("confirm_close")).show(ui.ctx(), |ui| {
                ui.label("Training is running. Close anyway? The run is cancelled; the settings are saved.");
                ui.horizontal(|ui| {
                    if ui.button("Close").clicked() {
                        self.allow_close = true;
                        self.confirm_close = false;
                        ui.ctx().send_viewport_cmd(egui::ViewportCommand::Close);
                    }
                    if ui.button("Keep training").clicked() {
                        self.confirm_close = false;
                    }
                });
            });
        }
        self.session.settings.view = view;
        for command in commands {
            self.session.apply(command);
        }
        for dialog in dialogs {
            self.open_dialog(dialog);
        }
        if self.session.is_busy() {
            ui.ctx().request_repaint_after(std::time::Duration::from_millis(250));
        }
    }

    /// The library (left) and training (right) panels.
    fn side_panels_ui(
        &self,
        ui: &mut egui::Ui,
        side: egui::Frame,
        view: &mut state::ViewSettings,
        commands: &mut Vec<Command>,
        dialogs: &mut Vec<Dialog>,
    ) {
        egui::Panel::left("library").frame(side).default_size(300.0).show(ui, |ui| panels::library_ui(ui, &self.session, view, commands));
        egui::Panel::right("training").frame(side).default_size(380.0).show(ui, |ui| {
            egui::ScrollArea::vertical().id_salt("right").show(ui, |ui| {
                panels::training_ui(ui, &self.session, commands);
                ui.separator();
                panels::budgets_ui(ui, &self.session, commands);
                ui.separator();
                panels::scores_ui(ui, &self.session);
                ui.separator();
                runs::runs_ui(ui, &self.session, view, commands, dialogs);
                if self.capture.as_ref().is_some_and(|c| c.scroll_to_runs) {
                    ui.scroll_to_cursor(Some(egui::Align::BOTTOM));
                }
            });
        });
    }

    /// A library that brings a glTF asset opens on it: the lit viewport, the side panels hidden
    /// (`P` brings them back), once per library loaded. The capture keeps its own layout.
    fn open_on_asset(&mut self, view: &mut state::ViewSettings) {
        let meshes = Arc::as_ptr(&self.session.library.meshes) as usize;
        if self.meshes_seen == meshes {
            return;
        }
        self.meshes_seen = meshes;
        if !self.session.library.meshes.is_empty() && self.capture.is_none() {
            view.central = CentralView::Preview;
            view.side_panels = false;
        }
    }

    /// Carries out a keyboard shortcut ([`shortcuts::SHORTCUTS`]).
    fn shortcut(
        &mut self,
        action: shortcuts::Action,
        view: &mut state::ViewSettings,
        commands: &mut Vec<Command>,
        dialogs: &mut Vec<Dialog>,
    ) {
        use shortcuts::Action;
        match action {
            Action::ToggleTraining => commands.push(match (self.session.is_training(), self.session.training.run.state) {
                (false, _) => Command::StartTraining,
                (true, session::RunState::Paused) => Command::ResumeTraining,
                (true, _) => Command::PauseTraining,
            }),
            Action::ShowCompare => view.central = CentralView::Compare,
            Action::ShowPreview => view.central = CentralView::Preview,
            Action::ToggleDifference => view.difference = !view.difference,
            Action::ToggleBcn => view.bcn = !view.bcn,
            Action::ToggleOrbit => view.lights_orbit = !view.lights_orbit,
            Action::FrameView => preview::frame_view(view, self.session.library.mesh_bounds),
            Action::ResetView => view.camera = CameraSettings::default(),
            Action::ToggleTurntable => view.turntable = !view.turntable,
            Action::CycleChannel => view.channel = view.channel.next(),
            Action::ShowLit => view.channel = texset_shaders::preview::ViewMode::Lit,
            Action::FlipSides => {
                view.compare_sides.swap(0, 1);
                if let Some(ab) = &mut view.ab {
                    ab.swap(0, 1);
                }
            }
            Action::ToggleSidePanels => view.side_panels = !view.side_panels,
            Action::OpenFolder => dialogs.push(Dialog::OpenFolders),
            Action::Export => dialogs.push(Dialog::SaveBundle),
            Action::ToggleHelp => self.show_help = !self.show_help,
        }
    }

    /// Runs a native file dialog on the thread `texset-dialog`; its answer arrives as a command.
    fn open_dialog(&self, dialog: Dialog) {
        let sender = self.dialog_results.0.clone();
        let start_dir = self.session.settings.export_dir.clone().or_else(|| self.session.settings.folders.first().cloned());
        let _ = std::thread::Builder::new().name("texset-dialog".into()).spawn(move || {
            let mut picker = rfd::FileDialog::new();
            if let Some(dir) = &start_dir {
                picker = picker.set_directory(dir);
            }
            let command = match dialog {
                Dialog::OpenFolders => picker.pick_folders().map(Command::AddPaths),
                Dialog::OpenAssets => picker.add_filter("glTF 2.0 asset", &["gltf", "glb"]).pick_files().map(Command::AddPaths),
                Dialog::OpenEnvironment => {
                    picker.add_filter("HDR environment", &["hdr", "exr"]).pick_file().map(|p| Command::SetEnvironment(Some(p)))
                }
                Dialog::SaveBundle => {
                    picker.add_filter("texset bundle", &["texset"]).set_file_name("library.texset").save_file().map(Command::ExportBundle)
                }
                Dialog::ExportImages => picker.pick_folder().map(Command::ExportImages),
                Dialog::ExportShaders => picker.pick_folder().map(Command::ExportShaders),
                Dialog::ExportGltf => picker.pick_folder().map(Command::ExportGltf),
                Dialog::ExportRun(id) => picker
                    .add_filter("texset bundle", &["texset"])
                    .set_file_name(format!("run-{id}.texset"))
                    .save_file()
                    .map(|path| Command::ExportRun(id, path)),
            };
            if let Some(command) = command {
                let _ = sender.send(command);
            }
        });
    }
}

/// On a software GPU (lavapipe, llvmpipe) a frame costs what it rasterises, triangle by triangle:
/// egui's anti-aliasing feathers every shape's edge with a ring of extra triangles, so it is left
/// out there, and panels paint sparingly ([`paint_sparingly`]; docs/decisions/021-software-gpu-painting.md, `texset bench
/// ui`). A hardware GPU keeps both.
pub fn tune_for_renderer(ctx: &egui::Context, render_state: Option<&RenderState>) {
    if renders_in_software(render_state) {
        ctx.tessellation_options_mut(|options| options.feathering = false);
        ctx.data_mut(|d| d.insert_temp(egui::Id::unique(SPARING_PAINT), true));
    }
}

/// Where [`tune_for_renderer`] records that frames paint sparingly.
const SPARING_PAINT: &str = "texset paint sparingly";

/// Whether panels should paint as few pixels as they can: on a software GPU every painted pixel
/// is CPU time (a window's worth costs about 30 ms on lavapipe, whatever is drawn,
/// docs/decisions/021-software-gpu-painting.md), so there tables lose their row stripes and plots their background fill.
#[must_use]
pub fn paint_sparingly(ctx: &egui::Context) -> bool {
    ctx.data(|d| d.get_temp::<bool>(egui::Id::unique(SPARING_PAINT))).unwrap_or(false)
}

/// Whether the window renders on a software GPU (lavapipe, llvmpipe): frames are CPU work there,
/// on the cores that train.
#[must_use]
pub fn renders_in_software(render_state: Option<&RenderState>) -> bool {
    render_state.is_some_and(|rs| rs.adapter.get_info().device_type == wgpu::DeviceType::Cpu)
}

/// Where training runs, in words (the engine's automatic choice).
fn training_device() -> String {
    resolve_auto().1
}

/// The colour every frame is cleared with: the panels' fill, which the panels themselves leave
/// unpainted (gamma-space RGBA in `[0, 1]`, as [`eframe::App::clear_color`] wants).
#[must_use]
pub fn clear_color(visuals: &egui::Visuals) -> [f32; 4] {
    visuals.panel_fill.to_normalized_gamma_f32()
}

impl eframe::App for StudioApp {
    fn clear_color(&self, visuals: &egui::Visuals) -> [f32; 4] {
        clear_color(visuals)
    }

    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        if ui.input(|i| i.viewport().close_requested()) && self.session.is_training() && !self.allow_close {
            ui.ctx().send_viewport_cmd(egui::ViewportCommand::CancelClose);
            self.confirm_close = true;
        }
        self.drive_capture(ui);
        self.frame_ui(ui);
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        // A studio without the data folder's lock leaves the settings to the one that has it.
        if self.data_lock.is_some() {
            eframe::set_value(storage, STORAGE_KEY, &self.session.settings);
        }
    }
}

/// Opens the studio window with `folders` (or the last session's library when empty). With
/// `capture`, trains with `steps` steps (a fresh session, nothing persisted), screenshots into the
/// folder and closes.
pub fn run(folders: Vec<PathBuf>, capture: Option<PathBuf>, steps: Option<u32>) -> anyhow::Result<()> {
    let wgpu_setup = eframe::egui_wgpu::WgpuSetup::CreateNew(eframe::egui_wgpu::WgpuSetupCreateNew {
        // Burn's kernels (training on this device) need the adapter's own features and limits,
        // not egui's defaults (../shared/DEPENDENCIES.md); its experimental ones wgpu refuses.
        device_descriptor: Arc::new(|adapter: &wgpu::Adapter| wgpu::DeviceDescriptor {
            label: Some("texset studio device"),
            required_features: texset_shaders::stable_features(adapter),
            required_limits: adapter.limits(),
            ..Default::default()
        }),
        ..eframe::egui_wgpu::WgpuSetupCreateNew::without_display_handle()
    });
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default().with_inner_size([1440.0, 900.0]).with_title("texset studio").with_drag_and_drop(true),
        renderer: eframe::Renderer::Wgpu,
        wgpu_options: eframe::egui_wgpu::WgpuConfiguration { wgpu_setup, ..Default::default() },
        persist_window: capture.is_none(),
        persistence_path: capture.as_ref().map(|dir| dir.join("studio_state.ron")),
        ..Default::default()
    };
    let data_dir = match &capture {
        Some(dir) => Some(dir.join("data")),
        None => eframe::storage_dir("texset"),
    };
    // eframe starts from defaults when its app.ron does not parse, and later overwrites it: an
    // unreadable one is set aside first and said in the window.
    let state_problem = match (&capture, &data_dir) {
        (None, Some(dir)) => store::check_app_state(dir, STORAGE_KEY),
        _ => None,
    };
    eframe::run_native(
        "texset",
        options,
        Box::new(move |cc| {
            let mut settings: Settings = cc.storage.and_then(|s| eframe::get_value(s, STORAGE_KEY)).unwrap_or_default();
            if capture.is_some() {
                settings = Settings { steps, ..Settings::default() };
            } else if steps.is_some() {
                settings.steps = steps;
            }
            let mut app = StudioApp::new(settings, folders, cc.wgpu_render_state.as_ref(), data_dir, &cc.egui_ctx)?;
            if let Some(problem) = state_problem {
                app.session.say(true, format!("{problem}; the studio starts from its defaults"));
            }
            if let Some(dir) = capture {
                app.capture_to(dir);
            }
            Ok(Box::new(app))
        }),
    )
    .map_err(|e| anyhow::anyhow!("the studio window could not open: {e}"))
}
