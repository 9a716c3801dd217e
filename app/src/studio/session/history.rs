//! The experiment log: finished runs kept as bundles, shown, loaded and decoded for comparison.

use super::{LoadedRun, Session};
use std::sync::Arc;
use std::sync::mpsc::channel;
use texset_core::{CompressReport, bundle::Bundle, eval::decode_set, io::write_atomic};

impl Session {
    /// The run with this id.
    #[must_use]
    pub fn run_record(&self, id: u64) -> Option<&crate::studio::runs::RunRecord> {
        self.settings.runs.iter().find(|r| r.id == id)
    }

    /// Whether a run was made from the library loaded now (the others are listed, not compared).
    #[must_use]
    pub fn run_matches_library(&self, run: &crate::studio::runs::RunRecord) -> bool {
        run.folders == self.settings.folders
    }

    /// Reads a run's kept bundle.
    pub(super) fn read_run(&self, id: u64) -> Result<(Bundle, Vec<u8>), String> {
        let run = self.run_record(id).ok_or_else(|| format!("no run #{id} in the log"))?;
        let bytes = std::fs::read(&run.bundle).map_err(|e| format!("{}: {e}", run.bundle.display()))?;
        let bundle = Bundle::from_bytes(&bytes).map_err(|e| format!("{}: {e}", run.bundle.display()))?;
        Ok((bundle, bytes))
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

    /// Loads and decodes a run's bundle on the thread `texset-run-load` (one at a time).
    pub(super) fn load_run(&mut self, id: u64) {
        if self.loaded_runs.contains_key(&id) || self.run_loading.is_some() {
            return;
        }
        let Some(run) = self.run_record(id) else { return };
        let path = run.bundle.clone();
        let set = Arc::clone(&self.library.set);
        let (sender, receiver) = channel();
        let repaint = Arc::clone(&self.repaint);
        let spawned = crate::studio::worker::spawn_background("texset-run-load", move || {
            let loaded = std::fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|b| Bundle::from_bytes(&b).map_err(|e| e.to_string()))
                .and_then(|bundle| {
                    let maps = decode_set(&set, &texset_core::Decoder::new(&bundle)).map_err(|e| e.to_string())?;
                    Ok(LoadedRun { bundle: Arc::new(bundle), maps })
                })
                .map_err(|e| format!("{}: {e}", path.display()));
            let _ = sender.send(loaded);
            repaint();
        });
        if spawned.is_ok() {
            self.run_loading = Some((id, receiver));
        }
    }

    /// Adds a finished run to the experiment log, keeping its bundle in the data folder.
    pub(super) fn record_run(&mut self, bytes: &[u8], report: &CompressReport) -> Option<u64> {
        let dir = crate::studio::runs::runs_dir(self.data_dir.as_ref()?);
        let id = self.settings.runs.iter().map(|r| r.id).max().unwrap_or(0) + 1;
        let path = dir.join(format!("run-{id}.texset"));
        let written = std::fs::create_dir_all(&dir).and_then(|()| write_atomic(&path, bytes));
        if let Err(e) = written {
            self.say(true, format!("{}: the run was not kept in the log: {e}", path.display()));
            return None;
        }
        self.settings.runs.push(crate::studio::runs::RunRecord {
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
        Some(id)
    }
}
