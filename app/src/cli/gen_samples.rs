//! `texset gen-samples`: the procedural sample materials.

use anyhow::Result;
use std::path::PathBuf;

// `texset gen-samples`.
#[derive(clap::Args)]
pub(super) struct GenSamplesArgs {
    /// Output folder.
    #[arg(short, long, default_value = "sample_textures")]
    output: PathBuf,
    /// Map size in texels (16..=2048).
    #[arg(long, default_value_t = 256)]
    size: u32,
    /// Seed.
    #[arg(long, default_value_t = 7)]
    seed: u64,
}

impl GenSamplesArgs {
    pub(super) fn run(self) -> Result<()> {
        let files = texset::synth::write_sample_textures(&self.output, self.size, self.seed)?;
        eprintln!("wrote {} files under {}", files.len(), self.output.display());
        Ok(())
    }
}
