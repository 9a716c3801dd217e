//! The block-compressed baselines the studio compares against, computed on named threads.

use super::Session;
use std::sync::Arc;
use std::sync::mpsc::channel;
use texset_core::eval::bcn::round_trip;

impl Session {
    /// Block-compresses the library with both profiles on the thread `texset-bc-baseline` (for the
    /// runs' rate–distortion chart), once per library.
    pub(super) fn compute_bc_baselines(&mut self) {
        if self.bc_baselines.is_some() || self.bc_baselines_pending.is_some() || self.library.set.materials.is_empty() {
            return;
        }
        let set = Arc::clone(&self.library.set);
        let (sender, receiver) = channel();
        let repaint = Arc::clone(&self.repaint);
        let background = self.background.clone();
        let spawned = crate::studio::worker::spawn_background("texset-bc-baseline", move || {
            use texset_core::eval::bcn::{Profile, baseline};
            let _ = sender.send(background.run(|| [baseline(&set, Profile::High), baseline(&set, Profile::Low)]));
            repaint();
        });
        if spawned.is_ok() {
            self.bc_baselines_pending = Some(receiver);
        }
    }

    /// Starts block-compressing a map on the thread `texset-bcn` (one at a time).
    pub(super) fn compute_bcn(&mut self, material: usize, map: usize) {
        if self.bcn.contains_key(&(material, map)) || self.bcn_pending.is_some() {
            return;
        }
        let Some(texture) = self.library.set.materials.get(material).and_then(|m| m.textures.get(map)) else { return };
        let set = Arc::clone(&self.library.set);
        let (sender, receiver) = channel();
        let repaint = Arc::clone(&self.repaint);
        let format = texset_core::eval::bcn::BcFormat::for_map(texture.kind, texture.channels);
        let spawned = crate::studio::worker::spawn_background("texset-bcn", move || {
            let texture = &set.materials[material].textures[map];
            let _ = sender.send(round_trip(texture, format));
            repaint();
        });
        if spawned.is_ok() {
            self.bcn_pending = Some(((material, map), receiver));
        }
    }
}
