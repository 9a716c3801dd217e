//! `texset decode`: every map of a bundle to PNGs, `<material>/<material>_<map>.png`.

use anyhow::{Context as _, Result};
use std::path::PathBuf;
use texset::decode::MaterialDecoder;

use super::common::{DecodeLimitArgs, read_bundle};
use texset_core::{
    decode::Decoder,
    export::{decode_to_folder, write_folder},
    io::Overwrite,
};

// `texset decode`.
#[derive(clap::Args)]
pub(super) struct DecodeArgs {
    /// The bundle.
    bundle: PathBuf,
    /// Output folder.
    #[arg(short, long)]
    output: PathBuf,
    /// Decode with the WGSL decoder on a GPU adapter (lavapipe counts); falls back to the CPU
    /// reference with a warning when there is none. The GPU decodes each map whole; the CPU
    /// decoder writes PNG maps in bands of rows, in memory that does not grow with their size.
    #[arg(long)]
    gpu: bool,
    /// Replace files in the output folder that texset did not write (by default a decode refuses
    /// to: sources are named as decoded maps are).
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    limits: DecodeLimitArgs,
}

impl DecodeArgs {
    pub(super) fn run(self) -> Result<()> {
        let b = read_bundle(&self.bundle)?;
        let overwrite = if self.force { Overwrite::Any } else { Overwrite::OnlyOurs };
        if !self.gpu {
            // The CPU decoder streams: PNG maps are decoded and written in bands of rows.
            let decoder =
                Decoder::with_limits(&b, self.limits.limits()).with_context(|| format!("cannot decode {}", self.bundle.display()))?;
            let written = decode_to_folder(&decoder, &self.output, overwrite)?;
            eprintln!("wrote {} maps under {}", written.len(), self.output.display());
            return Ok(());
        }
        let mut decoder =
            MaterialDecoder::new(&b, self.gpu, self.limits.limits()).with_context(|| format!("cannot decode {}", self.bundle.display()))?;
        let written = write_folder(&b.manifest, &self.output, overwrite, |m| Ok(decoder.decode_material(m)?))?;
        eprintln!("wrote {} maps under {}", written.len(), self.output.display());
        Ok(())
    }
}
