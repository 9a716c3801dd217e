//! The experiment log: finished runs kept as bundles, shown, loaded and decoded for comparison.

use super::{LoadedRun, Session};
use crate::studio::task::Task;
use std::sync::Arc;
use texset_core::{
    CompressReport,
    bundle::{Bundle, BundleError},
    decode::DecodeLimits,
    eval::decode_set,
    io::write_atomic,
};

/// Reads a bundle file the studio opens (a kept run, the last session's bundle) with its bytes
/// ([`Bundle::read_with_bytes`]), refused if its maps would not decode within
/// [`DecodeLimits::INTERACTIVE`] (the studio decodes every map it shows). The error names the file.
pub(super) fn read_bundle_file(path: &std::path::Path) -> Result<(Bundle, Vec<u8>), String> {
    let fault = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    // An I/O error names the file itself; the reader's others do not.
    let (bundle, bytes) = Bundle::read_with_bytes(path).map_err(|e| match e {
        BundleError::Io { .. } => e.to_string(),
        other => fault(&other),
    })?;
    DecodeLimits::INTERACTIVE.check(&bundle.manifest).map_err(|e| fault(&e))?;
    Ok((bundle, bytes))
}

impl Session {
    /// The run with this id.
    #[must_use]
    pub fn run_record(&self, id: u64) -> Option<&crate::studio::runs::RunRecord> {
        self.log.get(id)
    }

    /// Whether a run was made from the library loaded now (the others are listed, not compared).
    #[must_use]
    pub fn run_matches_library(&self, run: &crate::studio::runs::RunRecord) -> bool {
        run.folders == self.settings.folders
    }

    /// Reads a run's kept bundle.
    pub(super) fn read_run(&self, id: u64) -> Result<(Bundle, Vec<u8>), String> {
        let run = self.run_record(id).ok_or_else(|| format!("no run #{id} in the log"))?;
        read_bundle_file(&run.bundle)
    }

    /// Shows a run's bundle (scored again, with its maps decoded).
    pub(super) fn show_run(&mut self, id: u64) {
        match self.read_run(id) {
            Ok((bundle, bytes)) => {
                self.say(false, format!("showing run #{id}"));
                self.show_bundle(Arc::new(bundle), Some(Arc::new(bytes)), None);
            }
            Err(e) => self.say(true, e),
        }
    }

    /// Loads and decodes a run's bundle on the task `texset-run-load` (one at a time).
    pub(super) fn load_run(&mut self, id: u64) {
        if self.compare.loaded_runs.contains_key(&id) || self.compare.run_task.is_some() {
            return;
        }
        let Some(run) = self.run_record(id) else { return };
        let path = run.bundle.clone();
        let set = Arc::clone(&self.library.set);
        let task = Task::spawn("texset-run-load", Arc::clone(&self.env.repaint), move || {
            let (bundle, _) = read_bundle_file(&path)?;
            let maps = decode_set(&set, &texset_core::decode::Decoder::new(&bundle)).map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(LoadedRun { bundle: Arc::new(bundle), maps })
        });
        self.compare.run_task = Some((id, task));
    }

    /// Adds a finished run to the experiment log: its id and bundle file taken exclusively, the
    /// bundle written atomically, then the log.
    pub(super) fn record_run(&mut self, bytes: &[u8], report: &CompressReport) -> Option<u64> {
        if !self.log.keeps_runs() {
            if self.env.read_only {
                self.say(true, "this run is not kept in the experiment log: another studio is using the data folder");
            }
            return None;
        }
        let (id, path) = match self.log.allocate() {
            Ok(taken) => taken,
            Err(e) => {
                self.say(true, format!("the run was not kept in the log: {e}"));
                return None;
            }
        };
        if let Err(e) = write_atomic(&path, bytes) {
            let _ = std::fs::remove_file(&path);
            self.say(true, format!("{}: the run was not kept in the log: {e}", path.display()));
            return None;
        }
        self.log.runs.push(crate::studio::runs::RunRecord {
            id,
            folders: self.settings.folders.clone(),
            settings: crate::studio::runs::RunSettings::of(&self.settings),
            bundle_bytes: report.pack.bundle_bytes,
            bits_per_texel: report.pack.bits_per_texel,
            psnr_db: None,
            rendered_psnr_db: None,
            train_secs: report.train.train_secs,
            bundle: path,
        });
        if let Err(e) = self.log.save() {
            self.say(true, format!("the experiment log was not saved: {e}"));
        }
        Some(id)
    }

    /// Removes a run from the log, and its kept bundle.
    pub(super) fn delete_run(&mut self, id: u64) {
        let Some(i) = self.log.runs.iter().position(|r| r.id == id) else { return };
        let run = self.log.runs.remove(i);
        if let Err(e) = self.log.save() {
            self.say(true, format!("the experiment log was not saved: {e}"));
        }
        // The shown bundle's own file (last_trained) is separate: only the run's copy goes. The id
        // stays taken: the next run gets a higher one even after its file is gone.
        if self.log.keeps_runs() {
            let _ = std::fs::remove_file(&run.bundle);
        }
        self.compare.loaded_runs.remove(&id);
        if self.settings.view.ab.is_some_and(|ab| ab.contains(&id)) {
            self.settings.view.ab = None;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    /// The studio opens a bundle of a few KB that asks for over 8 GiB of decoded maps (a kept
    /// run, the last session's bundle) and refuses it at once, naming the file and the limit,
    /// within a second and 200 MB (issue 67).
    #[test]
    fn a_bundle_over_the_budget_is_refused_by_the_studio_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("forged.texset");
        texset_testkit::over_budget_bundle().write(&path).unwrap();
        let start = std::time::Instant::now();
        let error = super::read_bundle_file(&path).unwrap_err();
        let elapsed = start.elapsed();
        assert!(error.contains("forged.texset") && error.contains("over this decoder's limit"), "{error}");
        assert!(elapsed < std::time::Duration::from_secs(1), "refused in {elapsed:?}");
        if let Some(peak) = texset_testkit::peak_rss_bytes() {
            assert!(peak < 200 << 20, "peaked at {} MB", peak >> 20);
        }
    }
}
