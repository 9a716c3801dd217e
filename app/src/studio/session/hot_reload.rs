//! Hot reload: the library's folders watched, a changed source re-imported once quiet, and the
//! trained model fine-tuned on it.

use super::super::worker::TrainJob;
use super::{FINE_TUNE_STEP_FRACTION, HOT_RELOAD_QUIET, RunLog, RunState, SNAPSHOT_EVERY, Session};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::channel;
use std::time::Instant;
use texset_core::set::TextureSet;

impl Session {
    /// Watches the library's folders for changed maps (hot reload). A folder that cannot be
    /// watched is said once; the studio works on without hot reload for it.
    pub(super) fn watch_folders(&mut self) {
        use notify::Watcher;
        let (sender, receiver) = channel();
        let repaint = Arc::clone(&self.env.repaint);
        let handler = move |event: notify::Result<notify::Event>| {
            let _ = sender.send(event);
            repaint();
        };
        match notify::recommended_watcher(handler) {
            Ok(mut watcher) => {
                let mut failed = Vec::new();
                for folder in &self.settings.folders {
                    // A glTF asset's images may sit in folders below its own.
                    let (folder, mode) = if texset_core::set::is_gltf_path(folder) {
                        (folder.parent().unwrap_or(folder), notify::RecursiveMode::Recursive)
                    } else {
                        (folder.as_path(), notify::RecursiveMode::NonRecursive)
                    };
                    if let Err(e) = watcher.watch(folder, mode) {
                        failed.push(format!("{}: {e}", folder.display()));
                    }
                }
                for f in failed {
                    self.say(true, format!("not watching for changes: {f}"));
                }
                self.hot_reload.watcher = Some(watcher);
                self.hot_reload.events = Some(receiver);
            }
            Err(e) => self.say(true, format!("hot reload is off: {e}")),
        }
    }

    /// Takes in file-system events: changed source images start a re-import (and, with a
    /// trained bundle kept, a fine-tune from it) once the folder is quiet.
    pub(super) fn poll_hot_reload(&mut self) {
        if let Some(events) = &self.hot_reload.events {
            while let Ok(event) = events.try_recv() {
                let Ok(event) = event else { continue };
                if !(event.kind.is_modify() || event.kind.is_create() || event.kind.is_remove()) {
                    continue;
                }
                let images: Vec<PathBuf> = event.paths.into_iter().filter(|p| is_source_image(p)).collect();
                if images.is_empty() {
                    continue;
                }
                let (_, paths) = self.hot_reload.changed.get_or_insert_with(|| (Instant::now(), Vec::new()));
                for p in images {
                    if !paths.contains(&p) {
                        paths.push(p);
                    }
                }
                if let Some((when, _)) = &mut self.hot_reload.changed {
                    *when = Instant::now();
                }
            }
        }
        let quiet = self.hot_reload.changed.as_ref().is_some_and(|(when, _)| when.elapsed() >= HOT_RELOAD_QUIET);
        if !quiet || self.library.loading.is_some() || self.training.job.is_some() {
            return;
        }
        let Some((_, paths)) = self.hot_reload.changed.take() else { return };
        let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        self.say(false, format!("changed on disk: {}; re-importing", names.join(", ")));
        let kept = self.shown.trained.as_ref().is_some_and(|t| t.bytes.is_some())
            && self.settings.trained_bundle.as_ref().is_some_and(|p| p.is_file());
        self.hot_reload.fine_tune_after_load = kept.then_some(paths);
        self.reload();
    }

    /// Fine-tunes the bundle on screen (kept in the data folder) on the re-imported library.
    pub(super) fn start_fine_tune(&mut self, changed: &[PathBuf]) {
        let Some(path) = self.settings.trained_bundle.clone() else { return };
        let mut options = match self.fitted_options() {
            Ok(o) => o,
            Err(e) => {
                self.say(true, e);
                return;
            }
        };
        let steps = (options.schedule.steps / FINE_TUNE_STEP_FRACTION).max(50);
        options.schedule.give_steps(steps);
        options.run.init_from = Some(path);
        self.training.job = None;
        let names: Vec<String> = changed.iter().filter_map(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()).collect();
        self.training.run = RunLog { state: RunState::Running, ..RunLog::default() };
        self.training.run.lines.push(format!(
            "fine-tuning from the current model ({} steps) after {} changed",
            options.schedule.steps,
            names.join(", ")
        ));
        match TrainJob::start(
            Arc::clone(&self.library.set),
            options,
            |_: &TextureSet| None,
            SNAPSHOT_EVERY,
            Arc::clone(&self.env.repaint),
            &self.env.background,
        ) {
            Ok(job) => {
                self.say(false, format!("fine-tuning after {} changed", names.join(", ")));
                self.training.job = Some(job);
            }
            Err(e) => {
                self.training.run.state = RunState::Failed;
                self.say(true, format!("could not start the fine-tune: {e}"));
            }
        }
    }
}

/// Whether a path is an image ingest reads (by extension).
fn is_source_image(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| texset_core::set::IMAGE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}
