//! The studio's runtime: the loaded library, the training run, the trained bundle and its decoded
//! maps, grouped by concern in [`Session`]. Commands change it; `poll` takes in what background
//! tasks ([`Task`]) finished. Nothing here touches egui (the panels draw it) or the GPU (the
//! preview owns its resources).

mod baselines;
mod environment;
mod export;
mod history;
mod hot_reload;
mod library;
mod training;

pub use environment::{EnvironmentSource, EnvironmentState};
pub use library::{LoadedLibrary, load_folders};

use super::state::{Command, Settings};
use super::store::ExperimentLog;
use super::task::{Repaint, Task};
use super::worker::{Background, DecodeQueue, Decoded, TrainJob};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};
use texset_core::{AnalyseReport, CompressReport, Pass, TrainStatus, bundle::Bundle, set::TextureSet};

/// A changed source is re-imported once no further change came for this long (a painting tool
/// may write a file in several steps).
pub const HOT_RELOAD_QUIET: Duration = Duration::from_millis(500);

/// A fine-tune after a source changed runs this fraction of the steps of a full training.
pub const FINE_TUNE_STEP_FRACTION: u32 = 2;

/// How often a running training sends its current model for the previews.
pub const SNAPSHOT_EVERY: Duration = Duration::from_secs(3);

/// A material folder that could not be loaded, in plain words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The file or folder.
    pub path: PathBuf,
    /// What is wrong.
    pub message: String,
}

/// Where training stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunState {
    /// No run yet, or the last one ended.
    Idle,
    /// Running.
    Running,
    /// Held.
    Paused,
    /// Finished with a bundle.
    Finished,
    /// Cancelled by the artist.
    Cancelled,
    /// Failed (the message is in the log).
    Failed,
}

/// The training run's record: passes, curves, status.
pub struct RunLog {
    /// State.
    pub state: RunState,
    /// One line per finished pass (and errors).
    pub lines: Vec<String>,
    /// Pass running now.
    pub pass: Option<Pass>,
    /// Loss per step (`[step, mse]`).
    pub loss: Vec<[f64; 2]>,
    /// PSNR estimate per step (`[step, dB]`).
    pub psnr: Vec<[f64; 2]>,
    /// Last status.
    pub status: Option<TrainStatus>,
}

impl Default for RunLog {
    fn default() -> Self {
        Self { state: RunState::Idle, lines: Vec::new(), pass: None, loss: Vec::new(), psnr: Vec::new(), status: None }
    }
}

/// A bundle on screen: the finished result or a snapshot of the model in training.
pub struct Trained {
    /// The bundle.
    pub bundle: Arc<Bundle>,
    /// Its bytes (finished runs and restored bundles; not snapshots).
    pub bytes: Option<Arc<Vec<u8>>>,
    /// The pass reports (runs that finished in this session).
    pub report: Option<Box<CompressReport>>,
    /// Counter that tells newer bundles from older ones.
    pub generation: u64,
}

/// The analyse pass's decisions for the current settings.
pub struct Analysis {
    /// Which channels each texture reads.
    pub layout: texset_core::model::ModelLayout,
    /// Budgets with their reasons.
    pub report: AnalyseReport,
}

/// A run of the experiment log, loaded for the A/B views: its bundle and decoded maps.
pub struct LoadedRun {
    /// The bundle.
    pub bundle: Arc<Bundle>,
    /// Per material, per map (in the set's order).
    pub maps: Vec<Vec<texset_core::decode::DecodedMap>>,
}

/// A message for the status bar.
#[derive(Clone, Debug)]
pub struct Message {
    /// Whether it reports a failure.
    pub is_error: bool,
    /// Text.
    pub text: String,
}

/// What the ingest task hands back: the library (analysed after, on a task of its own).
type Loaded = library::LoadedLibrary;

/// The studio's runtime state, grouped by concern. Commands change it ([`Session::apply`]);
/// [`Session::poll`] takes in what background tasks finished.
pub struct Session {
    /// Persisted settings (eframe's `app.ron`).
    pub settings: Settings,
    /// The experiment log (its own file in the data folder, [`ExperimentLog`]).
    pub log: ExperimentLog,
    /// The loaded library and its analysis.
    pub library: Library,
    /// The training run.
    pub training: Training,
    /// The bundle on screen and its decoded maps.
    pub shown: Shown,
    /// What the views compare against: block-compressed maps, runs of the log.
    pub compare: Comparisons,
    /// The status bar: messages and the device.
    pub status: Status,
    /// The environment the viewport is lit by.
    pub environment: EnvironmentState,
    hot_reload: HotReload,
    env: Env,
}

/// The loaded library, its analysis, and the tasks that make them.
#[derive(Default)]
pub struct Library {
    /// Materials that loaded.
    pub set: Arc<TextureSet>,
    /// Folders that did not load, and files left out of folders that did.
    pub problems: Vec<Problem>,
    /// Budgets the analyse pass chose for the current settings (before training).
    pub analysis: Option<Result<Analysis, String>>,
    /// The glTF assets' meshes, the materials each can wear, and what frames them (see
    /// [`library::LoadedLibrary`]).
    pub meshes: Arc<Vec<texset_core::set::GltfMesh>>,
    /// Per mesh, the materials it can wear.
    pub mesh_materials: Arc<Vec<Vec<usize>>>,
    /// What the viewport frames (`None`: no mesh).
    pub mesh_bounds: Option<texset_shaders::preview::MeshBounds>,
    loading: Option<Task<Loaded>>,
    analysing: Option<Task<Result<Analysis, String>>>,
}

/// The training run: its record, the job, and the run of the log being scored.
#[derive(Default)]
pub struct Training {
    /// The current run.
    pub run: RunLog,
    job: Option<TrainJob>,
    /// The finished run whose scores the decode task is computing: (generation, run id).
    scoring_run: Option<(u64, u64)>,
}

/// The bundle on screen, and its decoded maps and scores.
pub struct Shown {
    /// What is on screen.
    pub trained: Option<Trained>,
    /// Its decoded maps and scores: the newest decode finished (while training, a snapshot's a
    /// little older than the one on screen, when the decode does not keep up with them).
    pub decoded: Option<Decoded>,
    decoder: DecodeQueue,
    generation: u64,
    /// The first generation of the library loaded: decodes of older ones are stale.
    first_generation: u64,
}

/// What the views compare the bundle against, computed on demand.
#[derive(Default)]
pub struct Comparisons {
    /// Maps block-compressed for comparison, by (material, map) of the current library.
    pub bcn: BTreeMap<(usize, usize), Arc<texset_core::eval::bcn::BcRoundTrip>>,
    bcn_task: Option<((usize, usize), Task<texset_core::eval::bcn::BcRoundTrip>)>,
    /// The library block-compressed with the high (BC7/BC5/BC4) and low (BC1/BC5/BC4) profiles:
    /// the reference points of the runs' rate–distortion chart.
    pub bc_baselines: Option<[texset_core::eval::bcn::Baseline; 2]>,
    bc_baselines_task: Option<Task<[texset_core::eval::bcn::Baseline; 2]>>,
    /// Runs of the experiment log loaded and decoded for the A/B views, by id.
    pub loaded_runs: BTreeMap<u64, Arc<LoadedRun>>,
    run_task: Option<(u64, Task<Result<LoadedRun, String>>)>,
}

/// The status bar's content.
#[derive(Default)]
pub struct Status {
    /// Messages (newest last).
    pub messages: Vec<Message>,
    /// Which device renders (and decodes on the GPU), in words.
    pub device: String,
}

/// Hot reload: the watcher and the changes waiting for a quiet spell.
#[derive(Default)]
struct HotReload {
    /// Watches the library's folders; events arrive on `events`.
    watcher: Option<notify::RecommendedWatcher>,
    events: Option<Receiver<notify::Result<notify::Event>>>,
    /// Source files that changed, and when the last change came (re-import after a quiet spell).
    changed: Option<(Instant, Vec<PathBuf>)>,
    /// After this load, fine-tune the bundle on screen (a source map changed).
    fine_tune_after_load: Option<Vec<PathBuf>>,
}

/// Where the session keeps things and runs work.
struct Env {
    /// Where the trained bundle and the runs are kept between sessions (none: nothing is kept).
    data_dir: Option<PathBuf>,
    /// Another studio holds the data folder: nothing is written there.
    read_only: bool,
    background: Background,
    repaint: Repaint,
}

impl Session {
    /// A session with `settings` (its folders start loading at once). `data_dir` holds the kept
    /// bundles and the experiment log; runs that `settings` still carries from an older studio
    /// move into the log. With `read_only`, another studio holds the data folder: its log is
    /// shown, and nothing is written there.
    pub fn new(
        mut settings: Settings,
        device: String,
        data_dir: Option<PathBuf>,
        repaint: Repaint,
        background: Background,
        read_only: bool,
    ) -> Self {
        let old_runs = std::mem::take(&mut settings.runs);
        let (log, problems) = match (&data_dir, read_only) {
            (Some(dir), true) => ExperimentLog::read_only(dir),
            (dir, _) => ExperimentLog::open(dir.as_deref(), old_runs),
        };
        let data_dir = if read_only { None } else { data_dir };
        let decoder = DecodeQueue::new(Arc::clone(&repaint), background.for_decodes());
        let mut session = Self {
            settings,
            log,
            library: Library::default(),
            training: Training::default(),
            shown: Shown { trained: None, decoded: None, decoder, generation: 0, first_generation: 0 },
            compare: Comparisons::default(),
            status: Status { messages: Vec::new(), device },
            environment: EnvironmentState::default(),
            hot_reload: HotReload::default(),
            env: Env { data_dir, read_only, background, repaint },
        };
        for problem in problems {
            session.say(true, problem.to_string());
        }
        session.reload();
        session
    }

    /// The compress options the settings describe.
    #[must_use]
    pub fn options(&self) -> texset_core::options::CompressOptions {
        let mut options = texset_core::options::CompressOptions::preset(self.settings.preset);
        if let Some(steps) = self.settings.steps {
            options.schedule.give_steps(steps);
        }
        options.model.mips = self.settings.mips;
        options.budgets.overrides.clone_from(&self.settings.budgets);
        options.budgets.learned = self.settings.learn_budgets.then(texset_core::options::LearnedBudgets::default);
        options.schedule.quantisation.latents = self.settings.latent_quant;
        options.schedule.quantisation.weights = self.settings.weight_quant;
        options.model.weight_format = self.settings.weight_format;
        options.run.time_budget_secs = self.settings.time_budget_secs;
        options
    }

    /// Whether anything runs in the background.
    #[must_use]
    pub fn is_busy(&self) -> bool {
        self.training.job.is_some()
            || self.library.loading.is_some()
            || self.library.analysing.is_some()
            || self.compare.bcn_task.is_some()
            || self.compare.run_task.is_some()
            || self.compare.bc_baselines_task.is_some()
            || self.shown.decoder.is_busy()
            || self.preparing_environment()
    }

    /// The decoded maps and scores of the bundle on screen: `None` while that bundle decodes
    /// (then [`Shown::decoded`] still holds the previous one's, a snapshot's during training).
    #[must_use]
    pub fn current_decoded(&self) -> Option<&Decoded> {
        let trained = self.shown.trained.as_ref()?;
        self.shown.decoded.as_ref().filter(|d| d.generation == trained.generation)
    }

    /// Whether training runs (or is paused).
    #[must_use]
    pub fn is_training(&self) -> bool {
        self.training.job.is_some()
    }

    /// Adds a message to the status bar.
    pub fn say(&mut self, is_error: bool, text: impl Into<String>) {
        let messages = &mut self.status.messages;
        messages.push(Message { is_error, text: text.into() });
        if messages.len() > 50 {
            messages.remove(0);
        }
    }

    /// Carries out a command.
    pub fn apply(&mut self, command: Command) {
        match command {
            Command::AddPaths(paths) => self.add_paths(paths),
            Command::SetEnvironment(path) => self.set_environment(path),
            Command::RemoveMaterial(index) => {
                if index < self.settings.folders.len() {
                    self.settings.folders.remove(index);
                    self.forget_trained();
                    self.reload();
                }
            }
            Command::StartTraining => self.start_training(),
            Command::PauseTraining => {
                if let Some(job) = &self.training.job {
                    job.pause();
                    self.training.run.state = RunState::Paused;
                }
            }
            Command::ResumeTraining => {
                if let Some(job) = &self.training.job {
                    job.resume();
                    self.training.run.state = RunState::Running;
                }
            }
            Command::CancelTraining => {
                if let Some(job) = &self.training.job {
                    job.cancel();
                }
            }
            Command::SetBudget(texture, channels) => {
                match channels {
                    Some(c) => self.settings.budgets.insert(texture, c),
                    None => self.settings.budgets.remove(&texture),
                };
                self.reanalyse();
            }
            Command::SetPreset(preset) => {
                self.settings.preset = preset;
                self.reanalyse();
            }
            Command::SetBitsPerTexel(bpp) => {
                self.settings.bits_per_texel = bpp;
                self.reanalyse();
            }
            Command::SetSteps(steps) => self.settings.steps = steps,
            Command::SetMips(mips) => {
                self.settings.mips = mips;
                self.reanalyse();
            }
            Command::SetLearnBudgets(on) => self.settings.learn_budgets = on,
            Command::SetGoal(goal) => self.settings.goal = goal,
            Command::SetTimeBudget(secs) => self.settings.time_budget_secs = secs,
            Command::SetQuantisation(latents, weights) => {
                self.settings.latent_quant = latents;
                self.settings.weight_quant = weights;
            }
            Command::SetWeightFormat(format) => {
                self.settings.weight_format = format;
                self.reanalyse();
            }
            Command::ComputeBcn(material, map) => self.compute_bcn(material, map),
            Command::ExportBundle(path) => self.export(|s| s.export_bundle(&path)),
            Command::ExportImages(dir) => self.export(|s| s.export_images(&dir)),
            Command::ExportShaders(dir) => self.export(|s| s.export_shaders(&dir)),
            Command::ExportGltf(dir) => self.export(|s| s.export_gltf(&dir)),
            Command::ShowRun(id) => self.show_run(id),
            Command::RestoreRun(id) => {
                if let Some(run) = self.log.get(id) {
                    let (settings, name) = (run.settings.clone(), run.name());
                    settings.restore(&mut self.settings);
                    self.say(false, format!("settings of run {name} restored: {}", settings.summary()));
                    self.reanalyse();
                }
            }
            Command::ExportRun(id, path) => self.export(|s| s.export_run(id, &path)),
            Command::DeleteRun(id) => self.delete_run(id),
            Command::LoadRun(id) => self.load_run(id),
            Command::ComputeBcBaselines => self.compute_bc_baselines(),
        }
    }

    fn add_paths(&mut self, paths: Vec<PathBuf>) {
        let mut added = 0;
        for path in paths {
            // An HDR image lights the viewport.
            if path.extension().and_then(|e| e.to_str()).is_some_and(|e| e.eq_ignore_ascii_case("hdr") || e.eq_ignore_ascii_case("exr")) {
                self.set_environment(Some(path));
                continue;
            }
            // A glTF asset is added as the file; any other file adds the folder it is in (a
            // material is a folder of maps).
            let folder = if path.is_file() && !texset_core::set::is_gltf_path(&path) {
                path.parent().map(Path::to_path_buf).unwrap_or(path)
            } else {
                path
            };
            if !self.settings.folders.contains(&folder) {
                self.settings.folders.push(folder);
                added += 1;
            }
        }
        if added > 0 {
            self.forget_trained();
            self.reload();
        }
    }

    fn forget_trained(&mut self) {
        self.training = Training::default();
        self.shown.trained = None;
        self.shown.decoded = None;
        self.shown.first_generation = self.shown.generation + 1;
        self.settings.trained_bundle = None;
    }

    /// Takes in what the background tasks finished. Call once a frame; never blocks.
    pub fn poll(&mut self) {
        self.poll_hot_reload();
        self.poll_library();
        self.poll_comparisons();
        self.poll_training();
        self.poll_environment();
    }

    /// Starts preparing the environment if none is ready or being prepared: the viewport asks
    /// when it first shows, so a session that never opens it prepares nothing.
    pub fn want_environment(&mut self) {
        if self.environment.prepared.is_none() && !self.preparing_environment() {
            self.prepare_environment();
        }
    }

    /// Says a background task's death once, in the status bar.
    fn report_death(&mut self, error: &super::task::TaskError) {
        self.say(true, error.to_string());
    }
}
