//! What several subcommands share: argument groups (`--json`, material folders, the report
//! flags), reading bundles, the terminal progress bar and the summaries they print alike.

use anyhow::{Context as _, Result};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::time::Duration;
use texset_core::{Pass, Progress, TrainStatus, bundle::Bundle, io, set::load_library as ingest_library};

// `--json`: print JSON on stdout instead of text.
#[derive(clap::Args, Clone, Copy)]
pub(super) struct JsonArg {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

impl JsonArg {
    /// Prints `value` as pretty JSON on stdout.
    pub(super) fn print(value: &impl serde::Serialize) -> Result<()> {
        println!("{}", serde_json::to_string_pretty(value)?);
        Ok(())
    }
}

// `--report` and `--no-ssim` of the commands that train (`compress`, `add`).
#[derive(clap::Args)]
pub(super) struct ReportArgs {
    /// Write a JSON report here.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Skip SSIM in the report (faster on large sets).
    #[arg(long)]
    pub no_ssim: bool,
}

impl ReportArgs {
    /// Writes `report` as pretty JSON to `--report`, when given (atomically).
    pub(super) fn write(&self, report: &impl serde::Serialize) -> Result<()> {
        let Some(path) = &self.report else { return Ok(()) };
        io::write_atomic(path, serde_json::to_string_pretty(report)?.as_bytes())
            .with_context(|| format!("cannot write report {}", path.display()))
    }
}

/// Reads a bundle, naming the file on failure.
pub(super) fn read_bundle(path: &Path) -> Result<Bundle> {
    Bundle::read(path).with_context(|| format!("cannot read bundle {}", path.display()))
}

/// Writes a bundle's bytes atomically, naming the file on failure.
pub(super) fn write_bundle(path: &Path, bytes: &[u8]) -> Result<()> {
    io::write_atomic(path, bytes).with_context(|| format!("cannot write bundle {}", path.display()))
}

/// The material folders of `./sample_textures` (empty when there is none).
pub(super) fn sample_folders() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("sample_textures")
        .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect())
        .unwrap_or_default();
    dirs.sort();
    dirs
}

/// Loads material folders as one library, reporting skipped files and constant maps on stderr.
pub(super) fn load_library(dirs: &[PathBuf]) -> Result<(texset_core::set::TextureSet, texset_core::set::IngestReport)> {
    let (set, report) = ingest_library(dirs)?;
    for s in &report.skipped {
        eprintln!("skipped {}: {}", s.path.display(), s.reason);
    }
    // One line per constant map that took its material's resolution.
    for c in &report.constants {
        eprintln!(
            "constant map {} ({}x{}): one value, stored flat and decoded at the material's {}x{}",
            c.path.display(),
            c.file_size[0],
            c.file_size[1],
            c.size[0],
            c.size[1]
        );
    }
    Ok((set, report))
}

/// `--latent-bits` and `bench quantisation --bits`: the latent bit depths the presets and benches use.
pub(super) fn parse_latent_bits(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(bits @ (2 | 4 | 8)) => Ok(bits),
        _ => Err(format!("{text} is not a latent bit depth (2, 4 or 8)")),
    }
}

/// A learning rate: a finite number above 0 and at most 1.
pub(super) fn parse_learning_rate(text: &str) -> Result<f32, String> {
    match text.trim().parse::<f32>() {
        Ok(lr) if lr.is_finite() && lr > 0.0 && lr <= 1.0 => Ok(lr),
        _ => Err(format!("{text} is not a learning rate (a number above 0, at most 1)")),
    }
}

/// A comma-separated list of channel counts (`--prune-to`, `--adapter-channels`); `flag` names
/// the option in the error.
pub(super) fn parse_channel_counts(text: &str, flag: &str) -> Result<Vec<u32>> {
    text.split(',').map(|c| c.trim().parse::<u32>().with_context(|| format!("{flag}: '{c}' is not a channel count"))).collect()
}

/// Per-level PSNR of a bundle's mip chain, as the CLI prints it.
pub(super) fn mip_summary(report: &texset_core::eval::MipReport) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let levels: Vec<String> = report.pooled_level_psnr_db.iter().map(|p| format!("{p:.2}")).collect();
    let _ = writeln!(out, "mip chain (PSNR against box-filtered references, level 0 first): pooled {} dB", levels.join(" "));
    for m in &report.maps {
        let levels: Vec<String> = m.level_psnr_db.iter().map(|p| format!("{p:.2}")).collect();
        let _ = writeln!(out, "  {}/{}: {}", m.material, m.map, levels.join(" "));
    }
    match report.worst_drop_db() {
        (drop, Some((map, level))) => {
            let _ = writeln!(out, "  worst level below level 0: {map} level {level}, {drop:.2} dB below");
        }
        _ => {
            let _ = writeln!(out, "  no level is below its map's level 0");
        }
    }
    out
}

/// Progress on a terminal: pass lines and a training bar.
pub(super) struct TerminalProgress {
    bar: ProgressBar,
}

impl TerminalProgress {
    pub(super) fn new() -> Self {
        Self { bar: ProgressBar::hidden() }
    }
}

impl Progress for TerminalProgress {
    fn pass_started(&self, pass: Pass) {
        if pass == Pass::Train {
            self.bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            self.bar.set_style(
                ProgressStyle::with_template("train [{bar:30}] {pos}/{len} {msg} eta {eta}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            self.bar.enable_steady_tick(Duration::from_millis(250));
        }
    }

    fn train_status(&self, s: &TrainStatus) {
        self.bar.set_length(u64::from(s.total_steps));
        self.bar.set_position(u64::from(s.step));
        self.bar.set_message(format!(
            "{} loss {:.2e} ≈{:.2} dB {:.2} Mtexel/s",
            s.phase_label,
            s.loss,
            s.psnr_estimate_db,
            s.texels_per_sec / 1e6
        ));
    }

    fn pass_finished(&self, pass: Pass, summary: &str) {
        if pass == Pass::Train {
            self.bar.finish_and_clear();
        }
        eprintln!("{pass:?}: {summary}");
    }

    fn warning(&self, message: &str) {
        self.bar.suspend(|| eprintln!("warning: {message}"));
    }

    fn note(&self, message: &str) {
        self.bar.suspend(|| eprintln!("note: {message}"));
    }
}

/// `--max-decode-gib`: how much a bundle may ask to decode (`decode`, `transcode`).
#[derive(clap::Args)]
pub(super) struct DecodeLimitArgs {
    /// Refuse a bundle whose maps (mip chains included) decode to more than this many GiB of f32
    /// values, before decoding anything (default 8; the multiply-add limit scales with it).
    #[arg(long, value_name = "GIB")]
    max_decode_gib: Option<u64>,
}

impl DecodeLimitArgs {
    /// The limits these flags ask for.
    pub(super) fn limits(&self) -> texset_core::decode::DecodeLimits {
        let default = texset_core::decode::DecodeLimits::COMMAND_LINE;
        self.max_decode_gib.map_or(default, |gib| default.with_decoded_gib(gib))
    }
}
