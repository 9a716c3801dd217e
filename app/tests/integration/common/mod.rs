//! Helpers shared by the app's integration tests.
#![allow(clippy::unwrap_used)] // Test helpers: a missing sample folder should fail the test loudly.

use std::path::{Path, PathBuf};

/// The material folders of the bundled `sample_textures`, sorted.
pub fn sample_folders() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sample_textures");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    dirs
}
