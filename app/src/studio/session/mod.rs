//! The studio's runtime: the loaded library, the training run, the trained bundle and its decoded
//! maps. Commands change it; `poll` takes in what the worker threads finished. Nothing here
//! touches egui (the panels draw it) or the GPU (the preview owns its resources).

mod baselines;
mod export;
mod history;
mod hot_reload;

use super::state::{Command, RateGoal, Settings};
use super::worker::{Background, DecodeWorker, Decoded, TrainEvent, TrainJob};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};
use texset_core::{
    AnalyseReport, CompressOptions, CompressReport, TextureSet, analyse,
    bundle::Bundle,
    io::write_atomic,
    progress::{Pass, TrainStatus},
    set::load_material,
};

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

/// The loaded library.
#[derive(Clone, Default)]
pub struct Library {
    /// Materials that loaded.
    pub set: Arc<TextureSet>,
    /// Folders that did not load, and files left out of folders that did.
    pub problems: Vec<Problem>,
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

type Repaint = Arc<dyn Fn() + Send + Sync>;

/// What the ingest thread sends back: the library and its analysis (none when empty).
type Loaded = (Library, Option<Result<Analysis, String>>);

/// The studio's runtime state.
pub struct Session {
    /// Persisted settings.
    pub settings: Settings,
    /// Loaded materials.
    pub library: Library,
    /// Budgets the analyse pass chose for the current settings (before training).
    pub analysis: Option<Result<Analysis, String>>,
    /// The current run.
    pub run: RunLog,
    /// What is on screen.
    pub trained: Option<Trained>,
    /// Its decoded maps and scores.
    pub decoded: Option<Decoded>,
    /// Status bar messages (newest last).
    pub messages: Vec<Message>,
    /// Which device renders (and decodes on the GPU), in words.
    pub device: String,
    /// Where the trained bundle is kept between sessions.
    pub data_dir: Option<PathBuf>,
    /// Maps block-compressed for comparison, by (material, map) of the current library.
    pub bcn: std::collections::BTreeMap<(usize, usize), Arc<texset_core::eval::bcn::BcRoundTrip>>,
    bcn_pending: Option<((usize, usize), Receiver<texset_core::eval::bcn::BcRoundTrip>)>,
    /// The library block-compressed with the high (BC7/BC5/BC4) and low (BC1/BC5/BC4) profiles:
    /// the reference points of the runs' rate–distortion chart.
    pub bc_baselines: Option<[texset_core::eval::bcn::Baseline; 2]>,
    bc_baselines_pending: Option<Receiver<[texset_core::eval::bcn::Baseline; 2]>>,
    /// Runs of the experiment log loaded and decoded for the A/B views, by id.
    pub loaded_runs: std::collections::BTreeMap<u64, Arc<LoadedRun>>,
    run_loading: Option<(u64, Receiver<Result<LoadedRun, String>>)>,
    /// The finished run whose scores the decode worker is computing: (generation, run id).
    scoring_run: Option<(u64, u64)>,
    job: Option<TrainJob>,
    /// Watches the library's folders (hot reload); events arrive on `fs_events`.
    watcher: Option<notify::RecommendedWatcher>,
    fs_events: Option<Receiver<notify::Result<notify::Event>>>,
    /// Source files that changed, and when the last change came (re-import after a quiet spell).
    changed: Option<(Instant, Vec<PathBuf>)>,
    /// After this load, fine-tune the bundle on screen (a source map changed).
    fine_tune_after_load: Option<Vec<PathBuf>>,
    loading: Option<Receiver<Loaded>>,
    analysing: Option<Receiver<Result<Analysis, String>>>,
    decoder: DecodeWorker,
    /// Where background CPU work runs.
    pub background: Background,
    generation: u64,
    repaint: Repaint,
}

impl Session {
    /// A session with `settings` (its folders start loading at once).
    pub fn new(
        settings: Settings,
        device: String,
        data_dir: Option<PathBuf>,
        repaint: Repaint,
        background: Background,
    ) -> std::io::Result<Self> {
        let decoder = DecodeWorker::start(Arc::clone(&repaint), &background)?;
        let mut session = Self {
            settings,
            library: Library::default(),
            analysis: None,
            run: RunLog::default(),
            trained: None,
            decoded: None,
            messages: Vec::new(),
            device,
            data_dir,
            bcn: std::collections::BTreeMap::new(),
            bcn_pending: None,
            bc_baselines: None,
            bc_baselines_pending: None,
            loaded_runs: std::collections::BTreeMap::new(),
            run_loading: None,
            scoring_run: None,
            job: None,
            watcher: None,
            fs_events: None,
            changed: None,
            fine_tune_after_load: None,
            loading: None,
            analysing: None,
            decoder,
            background,
            generation: 0,
            repaint,
        };
        session.reload();
        Ok(session)
    }

    /// The compress options the settings describe.
    #[must_use]
    pub fn options(&self) -> CompressOptions {
        let mut options = CompressOptions::preset(self.settings.preset);
        if let Some(steps) = self.settings.steps {
            options.schedule.steps = steps;
        }
        options.model.mips = self.settings.mips;
        options.budgets.overrides.clone_from(&self.settings.budgets);
        options.budgets.learned = self.settings.learn_budgets.then(texset_core::options::LearnedBudgets::default);
        options.schedule.latent_quantisation = self.settings.latent_quant;
        options.schedule.weight_quantisation = self.settings.weight_quant;
        options.model.weight_format = self.settings.weight_format;
        options.run.time_budget_secs = self.settings.time_budget_secs;
        options
    }

    /// The rate-control target `goal` asks for on `set` (block-compressing it for the BC goals:
    /// [`TrainJob::start`] calls this on the training thread).
    fn rate_target(goal: RateGoal, set: &TextureSet) -> Option<texset_core::drivers::RateTarget> {
        use texset_core::{drivers::RateTarget, eval::bcn::Profile};
        // The CLI's defaults (`texset compress --target-psnr/--match-bc`).
        let (min_bpp, max_bpp, trials, tolerance_db) = (0.5, 8.0, 6, 0.5);
        match goal {
            RateGoal::None => None,
            RateGoal::Psnr(db) => Some(RateTarget { psnr_db: db, tolerance_db, min_bpp, max_bpp, trials, bc_baseline: None }),
            RateGoal::MatchBcHigh => Some(RateTarget::matching_bc(set, Profile::High, min_bpp, None, trials)),
            RateGoal::MatchBcLow => Some(RateTarget::matching_bc(set, Profile::Low, min_bpp, None, trials)),
        }
    }

    /// Options with the bits-per-texel target applied for this library.
    fn fitted_options(&self) -> Result<CompressOptions, String> {
        fit(&self.library.set, (self.options(), self.settings.bits_per_texel))
    }

    /// Whether anything runs in the background.
    #[must_use]
    pub fn is_busy(&self) -> bool {
        self.job.is_some()
            || self.loading.is_some()
            || self.analysing.is_some()
            || self.bcn_pending.is_some()
            || self.run_loading.is_some()
            || self.bc_baselines_pending.is_some()
            || self.decoder.is_busy()
    }

    /// The decoded maps and scores of the bundle on screen: `None` while that bundle decodes
    /// (then [`Self::decoded`] still holds the previous one's, a snapshot's during training).
    #[must_use]
    pub fn current_decoded(&self) -> Option<&Decoded> {
        let trained = self.trained.as_ref()?;
        self.decoded.as_ref().filter(|d| d.generation == trained.generation)
    }

    /// Whether training runs (or is paused).
    #[must_use]
    pub fn is_training(&self) -> bool {
        self.job.is_some()
    }

    fn say(&mut self, is_error: bool, text: impl Into<String>) {
        self.messages.push(Message { is_error, text: text.into() });
        if self.messages.len() > 50 {
            self.messages.remove(0);
        }
    }

    /// Carries out a command.
    pub fn apply(&mut self, command: Command) {
        match command {
            Command::AddPaths(paths) => {
                let mut added = 0;
                for path in paths {
                    // A file adds the folder it is in: a material is a folder of maps.
                    let folder = if path.is_file() { path.parent().map(Path::to_path_buf).unwrap_or(path) } else { path };
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
            Command::RemoveMaterial(index) => {
                if index < self.settings.folders.len() {
                    self.settings.folders.remove(index);
                    self.forget_trained();
                    self.reload();
                }
            }
            Command::StartTraining => self.start_training(),
            Command::PauseTraining => {
                if let Some(job) = &self.job {
                    job.pause();
                    self.run.state = RunState::Paused;
                }
            }
            Command::ResumeTraining => {
                if let Some(job) = &self.job {
                    job.resume();
                    self.run.state = RunState::Running;
                }
            }
            Command::CancelTraining => {
                if let Some(job) = &self.job {
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
            Command::ShowRun(id) => self.show_run(id),
            Command::RestoreRun(id) => {
                if let Some(run) = self.settings.runs.iter().find(|r| r.id == id) {
                    let (settings, name) = (run.settings.clone(), run.name());
                    settings.restore(&mut self.settings);
                    self.say(false, format!("settings of run {name} restored: {}", settings.summary()));
                    self.reanalyse();
                }
            }
            Command::ExportRun(id, path) => self.export(|s| s.export_run(id, &path)),
            Command::DeleteRun(id) => {
                if let Some(i) = self.settings.runs.iter().position(|r| r.id == id) {
                    let run = self.settings.runs.remove(i);
                    // The shown bundle's own file (last_trained) is separate: only the run's copy goes.
                    let _ = std::fs::remove_file(&run.bundle);
                    self.loaded_runs.remove(&id);
                    if self.settings.view.ab.is_some_and(|ab| ab.contains(&id)) {
                        self.settings.view.ab = None;
                    }
                }
            }
            Command::LoadRun(id) => self.load_run(id),
            Command::ComputeBcBaselines => self.compute_bc_baselines(),
        }
    }

    fn forget_trained(&mut self) {
        self.job = None;
        self.trained = None;
        self.decoded = None;
        self.run = RunLog::default();
        self.settings.trained_bundle = None;
    }

    /// Loads the settings' folders again (on the thread `texset-ingest`), then analyses them.
    fn reload(&mut self) {
        self.watch_folders();
        let folders = self.settings.folders.clone();
        let options = self.options_and_target();
        let (sender, receiver) = channel();
        let repaint = Arc::clone(&self.repaint);
        let spawned = crate::studio::worker::spawn_background("texset-ingest", move || {
            let library = load_folders(&folders);
            let analysis = (!library.set.materials.is_empty()).then(|| analyse_library(&library.set, options));
            let _ = sender.send((library, analysis));
            repaint();
        });
        match spawned {
            Ok(_) => self.loading = Some(receiver),
            Err(e) => self.say(true, format!("could not start loading: {e}")),
        }
    }

    /// The options for a library not loaded yet (the bits-per-texel fit happens in `analyse`).
    fn options_and_target(&self) -> (CompressOptions, Option<f64>) {
        (self.options(), self.settings.bits_per_texel)
    }

    /// Re-runs the analyse pass (on `texset-analyse`) after a settings change.
    fn reanalyse(&mut self) {
        if self.library.set.materials.is_empty() {
            return;
        }
        let set = Arc::clone(&self.library.set);
        let options = self.options_and_target();
        let (sender, receiver) = channel();
        let repaint = Arc::clone(&self.repaint);
        let spawned = crate::studio::worker::spawn_background("texset-analyse", move || {
            let _ = sender.send(analyse_library(&set, options));
            repaint();
        });
        if spawned.is_ok() {
            self.analysing = Some(receiver);
        }
    }

    fn start_training(&mut self) {
        if self.library.set.materials.is_empty() {
            self.say(true, "nothing to train: add a material folder first");
            return;
        }
        let options = match self.fitted_options() {
            Ok(o) => o,
            Err(e) => {
                self.say(true, e);
                return;
            }
        };
        self.job = None;
        self.run = RunLog { state: RunState::Running, ..RunLog::default() };
        let goal = self.settings.goal;
        let target = move |set: &TextureSet| Self::rate_target(goal, set);
        match TrainJob::start(Arc::clone(&self.library.set), options, target, SNAPSHOT_EVERY, Arc::clone(&self.repaint), &self.background) {
            Ok(job) => self.job = Some(job),
            Err(e) => {
                self.run.state = RunState::Failed;
                self.say(true, format!("could not start training: {e}"));
            }
        }
    }

    /// Takes in what the background threads finished. Call once a frame; never blocks.
    pub fn poll(&mut self) {
        self.poll_hot_reload();
        if let Some(loading) = &self.loading
            && let Ok((library, analysis)) = loading.try_recv()
        {
            self.loading = None;
            let loaded = library.set.materials.len();
            for p in &library.problems {
                self.messages.push(Message { is_error: true, text: format!("{}: {}", p.path.display(), p.message) });
            }
            self.library = library;
            self.analysis = analysis;
            self.bcn.clear();
            self.loaded_runs.clear();
            self.bc_baselines = None;
            self.bc_baselines_pending = None;
            self.say(false, format!("loaded {loaded} material(s)"));
            self.restore_trained();
            if let Some(changed) = self.fine_tune_after_load.take() {
                self.start_fine_tune(&changed);
            }
        }
        if let Some((key, receiver)) = &self.bcn_pending
            && let Ok(result) = receiver.try_recv()
        {
            self.bcn.insert(*key, Arc::new(result));
            self.bcn_pending = None;
        }
        if let Some(receiver) = &self.bc_baselines_pending
            && let Ok(baselines) = receiver.try_recv()
        {
            self.bc_baselines = Some(baselines);
            self.bc_baselines_pending = None;
        }
        if let Some((id, receiver)) = &self.run_loading
            && let Ok(result) = receiver.try_recv()
        {
            let id = *id;
            self.run_loading = None;
            match result {
                Ok(run) => {
                    self.loaded_runs.insert(id, Arc::new(run));
                }
                Err(e) => {
                    self.say(true, format!("run #{id}: {e}"));
                    if self.settings.view.ab.is_some_and(|ab| ab.contains(&id)) {
                        self.settings.view.ab = None;
                    }
                }
            }
        }
        if let Some(analysing) = &self.analysing
            && let Ok(analysis) = analysing.try_recv()
        {
            self.analysing = None;
            self.analysis = Some(analysis);
        }
        let events = self.job.as_ref().map(TrainJob::drain).unwrap_or_default();
        for event in events {
            self.take_event(event);
        }
        if let Some(result) = self.decoder.poll() {
            match result {
                Ok(decoded) if self.trained.as_ref().is_some_and(|t| t.generation == decoded.generation) => {
                    self.score_run(&decoded);
                    self.decoded = Some(decoded);
                }
                Ok(_) => {}
                Err(e) => self.say(true, format!("decoding the bundle: {e}")),
            }
        }
    }

    /// Fills in the scores of the run being scored when its decode arrives.
    fn score_run(&mut self, decoded: &Decoded) {
        let Some((generation, id)) = self.scoring_run else { return };
        if generation != decoded.generation {
            return;
        }
        self.scoring_run = None;
        let rendered: Vec<f64> = decoded.rendered.iter().map(|r| r.rendered_psnr_db).collect();
        if let Some(run) = self.settings.runs.iter_mut().find(|r| r.id == id) {
            run.psnr_db = decoded.scores.as_ref().map(|s| s.pooled_psnr_db);
            run.rendered_psnr_db = (!rendered.is_empty()).then(|| rendered.iter().sum::<f64>() / rendered.len() as f64);
        }
    }

    fn take_event(&mut self, event: TrainEvent) {
        match event {
            TrainEvent::PassStarted(pass) => self.run.pass = Some(pass),
            TrainEvent::PassFinished(pass, summary) => self.run.lines.push(format!("{pass:?}: {summary}")),
            TrainEvent::Warning(message) => self.run.lines.push(format!("warning: {message}")),
            TrainEvent::Note(line) => self.run.lines.push(line),
            TrainEvent::Status(status) => {
                let step = f64::from(status.step);
                self.run.loss.push([step, f64::from(status.loss)]);
                self.run.psnr.push([step, f64::from(status.psnr_estimate_db)]);
                self.run.status = Some(status);
            }
            TrainEvent::Snapshot(bundle) => self.show_bundle(bundle, None, None),
            TrainEvent::Finished(result) => {
                self.job = None;
                self.run.pass = None;
                match *result {
                    Ok(compressed) => {
                        self.run.state = RunState::Finished;
                        let bytes = Arc::new(compressed.bundle_bytes);
                        self.say(
                            false,
                            format!(
                                "trained: {} bytes, {:.3} bits per texel",
                                compressed.report.pack.bundle_bytes, compressed.report.pack.bits_per_texel
                            ),
                        );
                        self.keep_trained(&bytes);
                        let run = self.record_run(&bytes, &compressed.report);
                        self.show_bundle(Arc::new(compressed.bundle), Some(bytes), Some(Box::new(compressed.report)));
                        self.scoring_run = run.map(|id| (self.generation, id));
                    }
                    Err(e) => {
                        let cancelled = e.contains("cancel");
                        self.run.state = if cancelled { RunState::Cancelled } else { RunState::Failed };
                        self.run.lines.push(e.clone());
                        self.say(!cancelled, if cancelled { "training cancelled".to_owned() } else { format!("training failed: {e}") });
                    }
                }
            }
        }
    }

    fn show_bundle(&mut self, bundle: Arc<Bundle>, bytes: Option<Arc<Vec<u8>>>, report: Option<Box<CompressReport>>) {
        self.generation += 1;
        // Snapshots are scored by PSNR only (SSIM costs more than a preview refresh is worth).
        let with_ssim = bytes.is_some();
        self.decoder.request(self.generation, Arc::clone(&bundle), Arc::clone(&self.library.set), with_ssim);
        self.trained = Some(Trained { bundle, bytes, report, generation: self.generation });
    }

    /// Saves the finished bundle in the data folder so the next session shows it again.
    fn keep_trained(&mut self, bytes: &[u8]) {
        let Some(dir) = &self.data_dir else { return };
        let path = dir.join("last_trained.texset");
        let written = std::fs::create_dir_all(dir).and_then(|()| write_atomic(&path, bytes));
        match written {
            Ok(()) => self.settings.trained_bundle = Some(path),
            Err(e) => self.say(true, format!("{}: could not keep the trained bundle: {e}", path.display())),
        }
    }

    /// Shows the bundle kept from the last session if it matches the library.
    fn restore_trained(&mut self) {
        let Some(path) = self.settings.trained_bundle.clone() else { return };
        if self.trained.is_some() {
            return;
        }
        let bundle = match std::fs::read(&path)
            .map_err(|e| e.to_string())
            .and_then(|b| Bundle::from_bytes(&b).map(|x| (x, b)).map_err(|e| e.to_string()))
        {
            Ok(b) => b,
            Err(e) => {
                self.settings.trained_bundle = None;
                self.say(true, format!("{}: the last session's bundle did not load: {e}", path.display()));
                return;
            }
        };
        let names: Vec<&str> = bundle.0.manifest.materials.iter().map(|m| m.name.as_str()).collect();
        let library: Vec<&str> = self.library.set.materials.iter().map(|m| m.name.as_str()).collect();
        if names != library {
            self.settings.trained_bundle = None;
            return;
        }
        self.run.state = RunState::Finished;
        self.say(false, format!("restored the last trained bundle ({})", path.display()));
        self.show_bundle(Arc::new(bundle.0), Some(Arc::new(bundle.1)), None);
    }
}

/// Loads each folder on its own: one bad folder is a problem listed, not a failed library.
#[must_use]
pub fn load_folders(folders: &[PathBuf]) -> Library {
    let mut set = TextureSet::default();
    let mut problems = Vec::new();
    for folder in folders {
        let mut report = texset_core::set::IngestReport::default();
        match load_material(folder, &mut report) {
            Ok(material) if set.materials.iter().any(|m| m.name == material.name) => problems.push(Problem {
                path: folder.clone(),
                message: format!("a material named '{}' is already loaded; rename one folder (or set name in texset.toml)", material.name),
            }),
            Ok(material) => set.materials.push(material),
            Err(e) => problems.push(Problem { path: folder.clone(), message: e.to_string() }),
        }
        problems.extend(report.skipped.into_iter().map(|s| Problem { path: s.path, message: format!("left out: {}", s.reason) }));
    }
    Library { set: Arc::new(set), problems }
}

/// The analyse pass for the studio's budget panel (bits-per-texel target applied first).
fn analyse_library(set: &TextureSet, options: (CompressOptions, Option<f64>)) -> Result<Analysis, String> {
    let options = fit(set, options)?;
    analyse(set, &options).map(|(layout, report)| Analysis { layout, report }).map_err(|e| e.to_string())
}

/// `options` with the bits-per-texel target (if any) fitted to `set`.
fn fit(set: &TextureSet, (mut options, bpp): (CompressOptions, Option<f64>)) -> Result<CompressOptions, String> {
    if let Some(bpp) = bpp {
        options.fit_bits_per_texel_for(bpp, set).map_err(|e| format!("{bpp} bits per texel: {e}"))?;
    }
    Ok(options)
}
