//! What the views compare against, computed on background tasks: the block-compressed maps and
//! baselines, and runs of the experiment log loaded for A/B.

use super::Session;
use crate::studio::task::{Task, take_finished};
use std::sync::Arc;
use texset_core::{eval::bcn::round_trip, export::bcn::BcFormat};

impl Session {
    /// Block-compresses the library with both profiles on the task `texset-bc-baseline` (for the
    /// runs' rate–distortion chart), once per library.
    pub(super) fn compute_bc_baselines(&mut self) {
        let compare = &self.compare;
        if compare.bc_baselines.is_some() || compare.bc_baselines_task.is_some() || self.library.set.materials.is_empty() {
            return;
        }
        let set = Arc::clone(&self.library.set);
        let background = self.env.background.clone();
        self.compare.bc_baselines_task = Some(Task::spawn("texset-bc-baseline", Arc::clone(&self.env.repaint), move || {
            use texset_core::{eval::bcn::baseline, export::bcn::Profile};
            background.run(|| [baseline(&set, Profile::High), baseline(&set, Profile::Low)])
        }));
    }

    /// Starts block-compressing a map on the task `texset-bcn` (one at a time).
    pub(super) fn compute_bcn(&mut self, material: usize, map: usize) {
        if self.compare.bcn.contains_key(&(material, map)) || self.compare.bcn_task.is_some() {
            return;
        }
        let Some(texture) = self.library.set.materials.get(material).and_then(|m| m.textures.get(map)) else { return };
        let set = Arc::clone(&self.library.set);
        let format = BcFormat::for_map(texture.info.kind, texture.info.channels);
        let task =
            Task::spawn("texset-bcn", Arc::clone(&self.env.repaint), move || round_trip(&set.materials[material].textures[map], format));
        self.compare.bcn_task = Some(((material, map), task));
    }

    /// Takes in finished comparisons: a block-compressed map, the baselines, a loaded run.
    pub(super) fn poll_comparisons(&mut self) {
        if let Some((key, task)) = &mut self.compare.bcn_task
            && let Some(result) = task.poll()
        {
            let key = *key;
            self.compare.bcn_task = None;
            match result {
                Ok(blocks) => {
                    self.compare.bcn.insert(key, Arc::new(blocks));
                }
                Err(died) => self.report_death(&died),
            }
        }
        match take_finished(&mut self.compare.bc_baselines_task) {
            Some(Ok(baselines)) => self.compare.bc_baselines = Some(baselines),
            Some(Err(died)) => self.report_death(&died),
            None => {}
        }
        if let Some((id, task)) = &mut self.compare.run_task
            && let Some(result) = task.poll()
        {
            let id = *id;
            self.compare.run_task = None;
            match result.map_err(|died| died.to_string()).and_then(|loaded| loaded) {
                Ok(run) => {
                    self.compare.loaded_runs.insert(id, Arc::new(run));
                }
                Err(e) => {
                    self.say(true, format!("run #{id}: {e}"));
                    if self.settings.view.ab.is_some_and(|ab| ab.contains(&id)) {
                        self.settings.view.ab = None;
                    }
                }
            }
        }
    }
}
