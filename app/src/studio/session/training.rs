//! Training: a run started, its events taken in, its bundle shown, kept and scored.

use super::{RunLog, RunState, SNAPSHOT_EVERY, Session, Trained};
use crate::studio::state::RateGoal;
use crate::studio::worker::{Decoded, TrainEvent, TrainFailure, TrainJob};
use std::sync::Arc;
use texset_core::{CompressReport, Compressed, bundle::Bundle, io::write_atomic, set::TextureSet};

impl Session {
    /// The rate-control target `goal` asks for on `set` (block-compressing it for the BC goals:
    /// [`TrainJob::start`] calls this on the training thread).
    fn rate_target(goal: RateGoal, set: &TextureSet) -> Option<texset_core::drivers::RateTarget> {
        use texset_core::{drivers::RateTarget, export::bcn::Profile};
        // The CLI's defaults (`texset compress --target-psnr/--match-bc`).
        let (min_bpp, max_bpp, trials, tolerance_db) = (0.5, 8.0, 6, 0.5);
        match goal {
            RateGoal::None => None,
            RateGoal::Psnr(db) => {
                Some(RateTarget { psnr_db: db, tolerance_db, min_bpp, max_bpp, trials, start_bpp: None, bc_baseline: None })
            }
            RateGoal::MatchBcHigh => Some(RateTarget::matching_bc(set, Profile::High, min_bpp, None, trials)),
            RateGoal::MatchBcLow => Some(RateTarget::matching_bc(set, Profile::Low, min_bpp, None, trials)),
        }
    }

    pub(super) fn start_training(&mut self) {
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
        self.training.job = None;
        self.training.run = RunLog { state: RunState::Running, ..RunLog::default() };
        let goal = self.settings.goal;
        let target = move |set: &TextureSet| Self::rate_target(goal, set);
        let repaint = Arc::clone(&self.env.repaint);
        match TrainJob::start(Arc::clone(&self.library.set), options, target, SNAPSHOT_EVERY, repaint, &self.env.background) {
            Ok(job) => self.training.job = Some(job),
            Err(e) => {
                self.training.run.state = RunState::Failed;
                self.say(true, format!("could not start training: {e}"));
            }
        }
    }

    /// Takes in the training run's events and the decode queue's result.
    pub(super) fn poll_training(&mut self) {
        let events = self.training.job.as_ref().map(TrainJob::drain).unwrap_or_default();
        for event in events {
            self.take_event(event);
        }
        if let Some(result) = self.shown.decoder.poll() {
            match result {
                // A snapshot's decode that finished after newer snapshots came is still the
                // newest decode there is: kept (on a slow machine no decode keeps up with
                // training's snapshots, and none would show until it ended).
                Ok(decoded) if self.fresher_decode(decoded.generation) => {
                    self.score_run(&decoded);
                    self.shown.decoded = Some(decoded);
                }
                Ok(_) => {}
                Err(e) => self.say(true, format!("decoding the bundle: {e}")),
            }
        }
    }

    /// Whether a decode of bundle generation `generation` is newer than the one shown and of a
    /// bundle of the library loaded.
    fn fresher_decode(&self, generation: u64) -> bool {
        let current = self.shown.trained.as_ref().is_some_and(|t| (self.shown.first_generation..=t.generation).contains(&generation));
        current && self.shown.decoded.as_ref().is_none_or(|d| d.generation < generation)
    }

    /// Fills in the scores of the run being scored when its decode arrives.
    fn score_run(&mut self, decoded: &Decoded) {
        let Some((generation, id)) = self.training.scoring_run else { return };
        if generation != decoded.generation {
            return;
        }
        self.training.scoring_run = None;
        let rendered: Vec<f64> = decoded.rendered.iter().map(|r| r.rendered_psnr_db).collect();
        if let Some(run) = self.log.runs.iter_mut().find(|r| r.id == id) {
            run.psnr_db = decoded.scores.as_ref().map(|s| s.pooled_psnr_db);
            run.rendered_psnr_db = (!rendered.is_empty()).then(|| rendered.iter().sum::<f64>() / rendered.len() as f64);
        }
        if let Err(e) = self.log.save() {
            self.say(true, format!("the experiment log was not saved: {e}"));
        }
    }

    fn take_event(&mut self, event: TrainEvent) {
        let run = &mut self.training.run;
        match event {
            TrainEvent::PassStarted(pass) => run.pass = Some(pass),
            TrainEvent::PassFinished(pass, summary) => run.lines.push(format!("{pass:?}: {summary}")),
            TrainEvent::Warning(message) => run.lines.push(format!("warning: {message}")),
            TrainEvent::Note(line) => run.lines.push(line),
            TrainEvent::Status(status) => {
                let step = f64::from(status.step);
                run.loss.push([step, f64::from(status.loss)]);
                run.psnr.push([step, f64::from(status.psnr_estimate_db)]);
                run.status = Some(status);
            }
            TrainEvent::Snapshot(bundle) => self.show_bundle(bundle, None, None),
            TrainEvent::Finished(result) => {
                self.training.job = None;
                self.training.run.pass = None;
                match *result {
                    Ok(compressed) => self.take_finished(compressed),
                    Err(failure) => self.take_failure(&failure),
                }
            }
        }
    }

    fn take_finished(&mut self, compressed: Compressed) {
        self.training.run.state = RunState::Finished;
        let bytes = Arc::new(compressed.bundle_bytes);
        let pack = &compressed.report.pack;
        self.say(false, format!("trained: {} bytes, {:.3} bits per texel", pack.bundle_bytes, pack.bits_per_texel));
        self.keep_trained(&bytes);
        let run = self.record_run(&bytes, &compressed.report);
        self.show_bundle(Arc::new(compressed.bundle), Some(bytes), Some(Box::new(compressed.report)));
        self.training.scoring_run = run.map(|id| (self.shown.generation, id));
    }

    fn take_failure(&mut self, failure: &TrainFailure) {
        let cancelled = matches!(failure, TrainFailure::Cancelled);
        self.training.run.state = if cancelled { RunState::Cancelled } else { RunState::Failed };
        self.training.run.lines.push(failure.to_string());
        self.say(!cancelled, if cancelled { "training cancelled".to_owned() } else { format!("training failed: {failure}") });
    }

    pub(super) fn show_bundle(&mut self, bundle: Arc<Bundle>, bytes: Option<Arc<Vec<u8>>>, report: Option<Box<CompressReport>>) {
        self.shown.generation += 1;
        let generation = self.shown.generation;
        // Snapshots are scored by PSNR only (SSIM costs more than a preview refresh is worth).
        let with_ssim = bytes.is_some();
        self.shown.decoder.request(generation, Arc::clone(&bundle), Arc::clone(&self.library.set), with_ssim);
        self.shown.trained = Some(Trained { bundle, bytes, report, generation });
    }

    /// Saves the finished bundle in the data folder so the next session shows it again.
    fn keep_trained(&mut self, bytes: &[u8]) {
        let Some(dir) = &self.env.data_dir else { return };
        let path = dir.join("last_trained.texset");
        let written = std::fs::create_dir_all(dir).and_then(|()| write_atomic(&path, bytes));
        match written {
            Ok(()) => self.settings.trained_bundle = Some(path),
            Err(e) => self.say(true, format!("{}: could not keep the trained bundle: {e}", path.display())),
        }
    }

    /// Shows the bundle kept from the last session if it matches the library.
    pub(super) fn restore_trained(&mut self) {
        let Some(path) = self.settings.trained_bundle.clone() else { return };
        if self.shown.trained.is_some() {
            return;
        }
        let bundle = match super::history::read_bundle_file(&path) {
            Ok(b) => b,
            Err(e) => {
                self.settings.trained_bundle = None;
                self.say(true, format!("the last session's bundle did not load: {e}"));
                return;
            }
        };
        let names: Vec<&str> = bundle.0.manifest.materials.iter().map(|m| m.name.as_str()).collect();
        let library: Vec<&str> = self.library.set.materials.iter().map(|m| m.name.as_str()).collect();
        if names != library {
            self.settings.trained_bundle = None;
            return;
        }
        self.training.run.state = RunState::Finished;
        self.say(false, format!("restored the last trained bundle ({})", path.display()));
        self.show_bundle(Arc::new(bundle.0), Some(Arc::new(bundle.1)), None);
    }
}
