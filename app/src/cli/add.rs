//! `texset add`: materials added to a trained library; only their own latents and a small
//! adapter train, so the library's materials decode exactly as before.

use anyhow::Result;
use serde::Serialize;
use std::path::{Path, PathBuf};
use texset_core::{
    Cancel,
    decode::Decoder,
    drivers::{AddOptions, AddReport, add_materials},
    eval::{MapScore, evaluate},
    options::{Backend, CompressOptions},
};

use super::common::{ReportArgs, TerminalProgress, load_library, parse_channel_counts, read_bundle, write_bundle};

// `texset add`.
#[derive(clap::Args)]
pub(super) struct AddArgs {
    /// The trained library bundle.
    library: PathBuf,
    /// Material folders to add.
    #[arg(required = true)]
    dirs: Vec<PathBuf>,
    /// Output bundle (.texset).
    #[arg(short, long)]
    output: PathBuf,
    /// Training steps (default: a fifth of the default preset's).
    #[arg(long)]
    steps: Option<u32>,
    /// New latent channels per grid, comma separated (default: each grid's channels over the
    /// library's material count).
    #[arg(long)]
    adapter_channels: Option<String>,
    /// The new maps also read the library's channels (frozen), not only their own: for a
    /// material close to the library's (a colourway of one of them).
    #[arg(long)]
    read_shared: bool,
    /// Random seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Training backend: adding trains on the CPU (`auto` and `cpu`); the GPU trainers cannot
    /// hold the library's parameters frozen yet, and are refused.
    #[arg(long, value_enum, default_value_t = Backend::Auto)]
    backend: Backend,
    #[command(flatten)]
    report: ReportArgs,
}

/// `add --report`.
#[derive(Serialize)]
struct AddJson<'a> {
    bundle: &'a Path,
    pooled_psnr_db: f64,
    maps: &'a [MapScore],
    add: &'a AddReport,
}

impl AddArgs {
    /// The options these flags ask for (the default preset's, a fifth of its steps).
    fn options(&self) -> Result<AddOptions> {
        let mut train = CompressOptions::default();
        match self.steps {
            Some(steps) => train.schedule.give_steps(steps),
            None => train.schedule.steps /= 5,
        }
        if let Some(seed) = self.seed {
            train.schedule.seed = seed;
        }
        train.run.backend = self.backend;
        let adapter_channels = self.adapter_channels.as_deref().map(|text| parse_channel_counts(text, "--adapter-channels")).transpose()?;
        Ok(AddOptions { train, adapter_channels, read_shared: self.read_shared })
    }

    pub(super) fn run(self) -> Result<()> {
        let lib = read_bundle(&self.library)?;
        let (set, _) = load_library(&self.dirs)?;
        let options = self.options()?;
        eprintln!("adding {} material(s) to {} ({} materials)", set.materials.len(), self.library.display(), lib.manifest.materials.len());
        let grown = add_materials(&lib, &set, &options, &TerminalProgress::new(), &Cancel::new())?;
        write_bundle(&self.output, &grown.bundle_bytes)?;
        let eval = evaluate(&set, &Decoder::new(&grown.bundle), !self.report.no_ssim)?;
        let r = &grown.report;
        eprintln!(
            "wrote {} ({} bytes, {:.3} bits per texel); new material(s) pooled PSNR {:.2} dB; trained {} of {} parameters in {:.1} s",
            self.output.display(),
            r.pack.bundle_bytes,
            r.pack.bits_per_texel,
            eval.pooled_psnr_db,
            r.trained_parameters,
            r.total_parameters,
            r.train.train_secs
        );
        for m in &eval.maps {
            eprintln!("  {}/{}: {:.2} dB", m.material, m.map, m.psnr_db);
        }
        eprintln!("channel budgets:");
        for b in &r.budgets {
            eprintln!("  {}: {}/{} channels ({})", b.texture, b.channels, b.total_channels, b.reason);
        }
        self.report.write(&AddJson { bundle: &self.output, pooled_psnr_db: eval.pooled_psnr_db, maps: &eval.maps, add: r })
    }
}
