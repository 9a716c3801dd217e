//! `texset studio` (and `texset` alone): the studio window.

use anyhow::Result;
use std::path::PathBuf;

// `texset studio`.
#[derive(clap::Args)]
pub(super) struct StudioArgs {
    /// Material folders and glTF 2.0 assets (`.gltf`, `.glb`: each textured material).
    dirs: Vec<PathBuf>,
    /// Training steps (default: the preset's).
    #[arg(long)]
    steps: Option<u32>,
    /// Train, screenshot the window (compare view, PBR preview at two light angles), train a
    /// second run at 2 bits per texel, screenshot the experiment log and the two runs A/B into
    /// this folder as PNGs, and close. A fresh session: nothing is restored or saved.
    #[arg(long)]
    capture: Option<PathBuf>,
}

impl StudioArgs {
    pub(super) fn run(self) -> Result<()> {
        texset::studio::run(self.dirs, self.capture, self.steps)
    }
}
