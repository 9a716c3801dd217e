//! `texset`: the studio (no arguments, or `texset studio DIR...`) and the command line of the
//! texset engine. Thin: the work is in texset-core, texset-shaders and the studio module.

mod bench;
mod load;
mod quant_bench;
mod rd;
mod search;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::time::Duration;
use texset_core::RunOptions;
use texset_core::bundle::Bundle;
use texset_core::decode::Decoder;
use texset_core::model::params::MAX_MLP_WIDTH;
use texset_core::options::{CheckpointOptions, GridOptions};
use texset_core::progress::{Pass, TrainStatus};
use texset_core::{Backend, Cancel, CompressOptions, Preset, Progress};

#[derive(Parser)]
#[command(name = "texset", version, about = "Neural compression of material texture sets")]
struct Cli {
    /// No subcommand: open the studio with `sample_textures` (or the last session's library).
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Clone, Copy, ValueEnum)]
enum BackendArg {
    /// burn-wgpu when a hardware GPU adapter exists, else the fused CPU trainer.
    Auto,
    /// Fused CPU trainer.
    Cpu,
    /// burn on wgpu (any GPU; lavapipe works but is slow).
    Wgpu,
    /// burn on its flex CPU backend (reference).
    Flex,
}

#[derive(Clone, Copy, ValueEnum)]
enum SharingArg {
    All,
    Related,
}

#[derive(Clone, Copy, ValueEnum)]
enum PruneMethodArg {
    /// Keep the channels with the largest first-layer column L1 norms.
    L1,
    /// Keep a random subset (baseline).
    Random,
}

/// `--latent-quant` and `--weight-quant` values.
#[derive(Clone, Copy, ValueEnum)]
enum QuantArg {
    /// The mode measured better for the bits or format (docs/benchmarks.md).
    Auto,
    /// Quantisation-aware training.
    Qat,
    /// Post-training quantisation.
    Ptq,
}

impl From<QuantArg> for texset_core::options::Quantisation {
    fn from(q: QuantArg) -> Self {
        match q {
            QuantArg::Auto => Self::Auto,
            QuantArg::Qat => Self::Qat,
            QuantArg::Ptq => Self::Ptq,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum PresetArg {
    Fast,
    Default,
    High,
}

impl From<PresetArg> for Preset {
    fn from(p: PresetArg) -> Self {
        match p {
            PresetArg::Fast => Self::Fast,
            PresetArg::Default => Self::Default,
            PresetArg::High => Self::High,
        }
    }
}

#[derive(Subcommand)]
// Parsed once per run: the size of the `compress` variant costs nothing.
#[allow(clippy::large_enum_variant)]
enum Command {
    /// Open the studio window with these material folders (none: the last session's library).
    Studio {
        /// Material folders.
        dirs: Vec<PathBuf>,
        /// Training steps (default: the preset's).
        #[arg(long)]
        steps: Option<u32>,
        /// Train, screenshot the window (compare view, PBR preview at two light angles) into this
        /// folder as PNGs, and close. A fresh session: nothing is restored or saved.
        #[arg(long)]
        capture: Option<PathBuf>,
    },
    /// Compress material folders (one library) into a bundle; with `--batch`, every material
    /// folder of a library directory into its own bundle.
    Compress {
        /// Material folders (each a folder of maps).
        #[arg(required_unless_present = "batch")]
        dirs: Vec<PathBuf>,
        /// Output bundle (.texset); with `--batch`, the output folder.
        #[arg(short, long)]
        output: PathBuf,
        /// Batch mode: one bundle per material folder of this directory, `<material>.texset` in
        /// the output folder, with a `summary.json`. Unchanged materials are skipped; one failing
        /// does not stop the others (the exit code tells).
        #[arg(long, conflicts_with_all = ["dirs", "checkpoint", "resume", "init_from", "report"])]
        batch: Option<PathBuf>,
        /// With `--batch`: run shard `i` of `n` (`i/n`); shards together give the unsharded
        /// run's bundles byte for byte.
        #[arg(long, requires = "batch")]
        shard: Option<String>,
        /// With `--batch`: materials compressed at once.
        #[arg(long, default_value_t = 1, requires = "batch")]
        jobs: usize,
        /// Target bits per texel of the whole bundle (sizes the latent channels to fit).
        #[arg(long, conflicts_with = "rate")]
        bpp: Option<f64>,
        /// Rate control: the smallest bundle whose pooled PSNR reaches this many dB (within
        /// `--tolerance-db`), searched between `--min-bpp` and `--max-bpp` in `--rate-trials` runs.
        #[arg(long, group = "rate", conflicts_with = "batch")]
        target_psnr: Option<f64>,
        /// Rate control against what engines ship: block-compress every map with a real encoder
        /// (`high`: BC7 colour, BC5 normals, BC4 one channel; `low`: BC1 for colour and normals),
        /// measure its pooled PSNR, and find the smallest bundle at or above it, at rates up to
        /// the blocks' own (or `--max-bpp`).
        #[arg(long, group = "rate", conflicts_with = "batch", value_enum, num_args = 0..=1, default_missing_value = "high")]
        match_bc: Option<BcProfileArg>,
        /// With `--target-psnr` or `--match-bc`: the highest rate tried, bits per texel (default 8
        /// with `--target-psnr`; the block-compressed rate with `--match-bc`).
        #[arg(long, requires = "rate")]
        max_bpp: Option<f64>,
        /// With `--target-psnr` or `--match-bc`: the lowest rate tried, bits per texel.
        #[arg(long, default_value_t = 0.5, requires = "rate")]
        min_bpp: f64,
        /// With `--target-psnr` or `--match-bc`: whole compressions at most.
        #[arg(long, default_value_t = 6, requires = "rate")]
        rate_trials: usize,
        /// With `--target-psnr`: how far below the target still counts, dB (`--match-bc` has
        /// none: at or above the blocks' PSNR).
        #[arg(long, default_value_t = 0.5, requires = "target_psnr", conflicts_with = "match_bc")]
        tolerance_db: f64,
        /// Precision search at `--bpp`: try latent bits, grid scales, channel splits and decoder
        /// sizes on short runs (`random` or `tpe` for `--search-trials` of them; `grid` for all 81),
        /// run the best and the preset's own shape in full, keep the best.
        #[arg(long, value_enum, requires = "bpp", conflicts_with_all = ["rate", "batch", "prune_to", "latent_bits"])]
        search: Option<SearchArg>,
        /// With `--search`: short runs at most.
        #[arg(long, default_value_t = 12, requires = "search")]
        search_trials: usize,
        /// With `--search`: earlier searches' results, read to start warm on a similar set and
        /// updated (default: `$XDG_CACHE_HOME/texset/search.json` or `~/.cache/texset/search.json`).
        #[arg(long, requires = "search")]
        search_cache: Option<PathBuf>,
        /// With `--search`: the decoder weight formats searched, comma-separated.
        #[arg(long, value_enum, value_delimiter = ',', default_value = "int8", requires = "search")]
        search_weight_formats: Vec<WeightFormatArg>,
        /// With `--search`: skip points whose decoder takes more multiply-adds per texel than this
        /// (a cap on the shader's decode cost; the preset's own shape always runs).
        #[arg(long, requires = "search")]
        search_max_macs: Option<usize>,
        /// With `--search`: start cold and remember nothing.
        #[arg(long, requires = "search", conflicts_with = "search_cache")]
        no_search_cache: bool,
        /// Training steps (overrides the preset).
        #[arg(long)]
        steps: Option<u32>,
        /// Bits per latent value, every grid.
        #[arg(long, value_parser = parse_latent_bits)]
        latent_bits: Option<u32>,
        /// How latents meet their bits: `qat` trains them with ±½-step noise, then rounds and
        /// freezes them and fine-tunes the decoder; `ptq` trains them in float and rounds at pack;
        /// `auto`, the measured winner: `qat` for 2-bit latents, `ptq` for 4 and 8 bits.
        #[arg(long, value_enum, default_value_t = QuantArg::Auto)]
        latent_quant: QuantArg,
        /// How the decoder's weights meet their format: `qat` fine-tunes through it
        /// (fake-quantisation); `ptq` quantises the float weights at pack; `auto`, the measured
        /// winner: `qat` for `e4m3`, `ptq` for the others.
        #[arg(long, value_enum, default_value_t = QuantArg::Auto)]
        weight_quant: QuantArg,
        /// How the decoder's weights are stored: `int8` with a scale per row, `fp16`, `e4m3`
        /// (8-bit minifloat, a scale per row) or `mxint8` (int8, a power-of-two scale per 32).
        #[arg(long, value_enum, default_value_t = WeightFormatArg::Int8)]
        weight_format: WeightFormatArg,
        /// Hidden layer widths of the decoder MLP, input side first, e.g. `96-64-32` (default
        /// `64-48-32`). A wider decoder reaches higher PSNR at high rates and costs more
        /// multiply-adds per decoded texel; `--bpp` leaves fewer bits to the latents for it.
        #[arg(long)]
        decoder: Option<String>,
        /// Training backend.
        #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
        backend: BackendArg,
        /// Speed/quality preset.
        #[arg(long, value_enum, default_value_t = PresetArg::Default)]
        preset: PresetArg,
        /// Random seed (equal seeds give identical bundles).
        #[arg(long)]
        seed: Option<u64>,
        /// Channel budgets: `kind=N` or `material/kind=N`, comma separated.
        #[arg(long)]
        budget: Option<String>,
        /// Train with more channels, then keep this many per grid (comma separated) part-way
        /// through training; the prune pass drops the others.
        #[arg(long)]
        prune_to: Option<String>,
        /// How `--prune-to` chooses the channels it keeps.
        #[arg(long, value_enum, default_value_t = PruneMethodArg::L1)]
        prune_method: PruneMethodArg,
        /// Fraction of the steps at which `--prune-to` removes channels.
        #[arg(long, default_value_t = 0.5)]
        prune_at: f32,
        /// Group-lasso strength on each channel's first-layer column before `--prune-to`.
        #[arg(long, default_value_t = 0.0)]
        group_lasso: f32,
        /// How a library's materials share latent channels: `all` read every channel; `related`
        /// gives each group of related materials (a duplicate or colour-variant map between them)
        /// its own channels.
        #[arg(long, value_enum, default_value_t = SharingArg::Related)]
        sharing: SharingArg,
        /// Apply the graded budgets the content analysis proposes (otherwise they are only
        /// reported; flat maps get no channels either way).
        #[arg(long)]
        auto_budgets: bool,
        /// Learn each texture's budget in training: a gate per (texture, channel) under a group
        /// lasso, cut part-way (`--budget-cut-at`); a channel whose importance is under
        /// `--budget-drop-below` of the largest leaves that texture's budget (CPU trainer).
        #[arg(long, conflicts_with = "prune_to")]
        learn_budgets: bool,
        /// Group-lasso strength per (texture, channel) of `--learn-budgets`.
        #[arg(long, default_value_t = texset_core::options::LearnedBudgets::default().strength, requires = "learn_budgets")]
        budget_lasso: f32,
        /// Fraction of the steps at which `--learn-budgets` cuts the budgets.
        #[arg(long, default_value_t = texset_core::options::LearnedBudgets::default().at, requires = "learn_budgets")]
        budget_cut_at: f32,
        /// Importance (relative to the library's largest) under which `--learn-budgets` drops a
        /// channel from a texture's budget.
        #[arg(long, default_value_t = texset_core::options::LearnedBudgets::default().drop_below, requires = "learn_budgets")]
        budget_drop_below: f32,
        /// Store a full mip chain: a latent pyramid (about a third more latent bits) trained on
        /// every level of box-filtered references, decoded at any level of detail.
        #[arg(long)]
        mips: bool,
        /// With `--mips`: how much denser in cells per texel each pyramid level is than the one
        /// above (1: the grids halve with the texture, a third more latent bits; 2: they halve
        /// every other level, about twice the latent bits, every level as good as level 0).
        #[arg(long, default_value_t = 2.0, requires = "mips")]
        mip_growth: f32,
        /// With `--mips`: how much more often training draws a texel of each coarser level than
        /// one of the level above (1: every texel of the chain alike).
        #[arg(long, default_value_t = 2.0, requires = "mips")]
        mip_boost: f32,
        /// Write a JSON report here.
        #[arg(long)]
        report: Option<PathBuf>,
        /// Checkpoint file (written every `--checkpoint-secs`); with `--resume`, continue from it.
        #[arg(long)]
        checkpoint: Option<PathBuf>,
        /// Seconds between checkpoints.
        #[arg(long, default_value_t = 60.0)]
        checkpoint_secs: f64,
        /// Continue from `--checkpoint` if it exists.
        #[arg(long, requires = "checkpoint")]
        resume: bool,
        /// Fine-tune: start from this bundle's model (a bundle of the same library's shape) at
        /// lower learning rates, e.g. after a source map changed.
        #[arg(long)]
        init_from: Option<PathBuf>,
        /// Skip SSIM in the report (faster on large sets).
        #[arg(long)]
        no_ssim: bool,
    },
    /// Add materials to a trained library: only their own latents and a small adapter (new
    /// first-layer columns and output rows) train; the library's materials decode exactly as before.
    Add {
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
        /// Write a JSON report here.
        #[arg(long)]
        report: Option<PathBuf>,
        /// Skip SSIM in the report.
        #[arg(long)]
        no_ssim: bool,
    },
    /// Decode every map of a bundle to PNGs: `<material>/<material>_<map>.png`.
    Decode {
        /// The bundle.
        bundle: PathBuf,
        /// Output folder.
        #[arg(short, long)]
        output: PathBuf,
        /// Decode with the WGSL decoder on a GPU adapter (lavapipe counts); falls back to the CPU
        /// reference with a warning when there is none.
        #[arg(long)]
        gpu: bool,
    },
    /// Decode every map and re-encode it with a full mip chain to what engines load today:
    /// `ktx2`/`bc7` (BC7 colour, BC5 normals, BC4 single channel) or `bc1` (BC1 colour and
    /// normals) in KTX2 files, `dds` (as `ktx2`, in DDS files), or `png`.
    Transcode {
        /// The bundle.
        bundle: PathBuf,
        /// Output folder: `<material>/<material>_<map>.<ktx2|dds|png>`.
        #[arg(short, long)]
        output: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = TranscodeArg::Ktx2)]
        format: TranscodeArg,
        /// Decode with the WGSL decoder on a GPU adapter (falls back to the CPU with a warning).
        #[arg(long)]
        gpu: bool,
        /// The original material folders: also report each map's PSNR against them.
        #[arg(long, num_args = 1..)]
        originals: Vec<PathBuf>,
    },
    /// Write the GPU decoder specialised to a bundle as WGSL, GLSL, HLSL or MSL (validated).
    ExportShader {
        /// The bundle.
        bundle: PathBuf,
        /// Shading language.
        #[arg(long, value_enum)]
        lang: LangArg,
        /// Entry point of a GLSL file (GLSL holds one; the other languages hold all).
        #[arg(long, value_enum, default_value_t = EntryArg::CsDecodeMap)]
        entry: EntryArg,
        /// Output file.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Show what a bundle holds.
    Inspect {
        /// The bundle.
        bundle: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Score a bundle against the original folders (PSNR, SSIM per map).
    Eval {
        /// Reference material folders, then the bundle last.
        #[arg(required = true, num_args = 2..)]
        paths: Vec<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Measure training and decode throughput.
    Bench {
        /// Material folders to train on (default: `sample_textures`/*).
        dirs: Vec<PathBuf>,
        /// Timed runs per measurement (median reported).
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Also time burn backends (flex; wgpu when `--wgpu`).
        #[arg(long)]
        burn: bool,
        /// Include burn-wgpu (needs a GPU adapter; lavapipe is slow).
        #[arg(long)]
        wgpu: bool,
        /// Include GPU decode through the WGSL decoder (any adapter, lavapipe included).
        #[arg(long)]
        gpu_decode: bool,
        /// Instead: the studio's frame time while it trains: headless UI + tessellation in the
        /// Compare view, then rendered on a wgpu adapter with the PBR preview open.
        #[arg(long)]
        ui: bool,
        /// Instead: memory under load. Compress `--load-materials` generated materials one after
        /// another, then decode random texels through the runtime API at `--load-texels-per-sec`
        /// for `--load-decode-secs`; report RSS at the start and end of each.
        #[arg(long)]
        load: bool,
        /// Instead: quantisation-aware training against post-training quantisation, latents and
        /// weights, at 2, 4 and 8 latent bits, one whole compression per cell (docs/benchmarks.md).
        #[arg(long)]
        quantisation: bool,
        /// Training steps per compression of `--quantisation`.
        #[arg(long, default_value_t = 6000)]
        quant_steps: u32,
        /// Latent bit depths of `--quantisation`'s QAT/PTQ table, comma-separated.
        #[arg(long, value_delimiter = ',', default_values_t = [2, 4, 8], value_parser = parse_latent_bits)]
        quant_bits: Vec<u32>,
        /// `--quantisation` without its second table (the decoder's weight formats).
        #[arg(long)]
        quant_skip_formats: bool,
        /// Instead: rate–distortion of texset's presets against BC7/BC5/BC4 and BC1/BC5/BC4 (the
        /// real encoder), PSNR and rendered PSNR against bits per texel, per folder; a table and
        /// a chart (`--plot`).
        #[arg(long)]
        rd: bool,
        /// Presets `--rd` runs, comma-separated.
        #[arg(long, value_enum, value_delimiter = ',', default_value = "fast,default,high")]
        rd_presets: Vec<PresetArg>,
        /// Rates `--rd` runs each preset at, bits per texel, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "1,2,4,8")]
        rd_bpp: Vec<f64>,
        /// Training steps of every `--rd` compression instead of the presets' (quick checks).
        #[arg(long)]
        rd_steps: Option<u32>,
        /// Where `--rd` writes its chart (PNG).
        #[arg(long, default_value = "rd.png")]
        plot: PathBuf,
        /// `--rd` writes every point measured so far to this file (JSON) after each one, so a long
        /// run stopped part-way keeps what it measured.
        #[arg(long)]
        rd_save: Option<PathBuf>,
        /// `--rd` measures nothing: it merges these files (from `--rd-save` or `--rd --json`,
        /// comma-separated; a later file's point for the same set, method and rate wins) into one
        /// table and chart.
        #[arg(long, value_delimiter = ',', requires = "rd", conflicts_with = "dirs")]
        rd_from: Vec<PathBuf>,
        /// Instead: the precision search (`compress --search`) with each strategy of
        /// `--search-strategies` on each folder at `--search-bpp`: the preset's shape against
        /// the best point found, in how many trials.
        #[arg(long)]
        search: bool,
        /// Strategies `--search` compares, comma-separated.
        #[arg(long, value_enum, value_delimiter = ',', default_value = "random,tpe")]
        search_strategies: Vec<SearchArg>,
        /// The rate `--search` searches at, bits per texel.
        #[arg(long, default_value_t = 4.0)]
        search_bpp: f64,
        /// Short runs per `--search` search.
        #[arg(long, default_value_t = 12)]
        search_trials: usize,
        /// The preset whose shape and steps `--search` starts from.
        #[arg(long, value_enum, default_value_t = PresetArg::Fast)]
        search_preset: PresetArg,
        /// Training steps of a full `--search` run instead of the preset's.
        #[arg(long)]
        search_steps: Option<u32>,
        /// A cache file the `--search` searches share in order (default: none, every search cold).
        #[arg(long)]
        search_cache: Option<PathBuf>,
        /// `--search` skips points whose decoder takes more multiply-adds per texel than this.
        #[arg(long)]
        search_max_macs: Option<usize>,
        /// Materials the load test compresses.
        #[arg(long, default_value_t = 50)]
        load_materials: usize,
        /// Training steps per material in the load test.
        #[arg(long, default_value_t = 300)]
        load_steps: u32,
        /// Seconds of decoding in the load test.
        #[arg(long, default_value_t = 600.0)]
        load_decode_secs: f64,
        /// Random texels decoded per second in the load test.
        #[arg(long, default_value_t = 10_000)]
        load_texels_per_sec: u32,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write the procedural sample materials (bricks, wood, metal plates, two fabric colourways).
    GenSamples {
        /// Output folder.
        #[arg(short, long, default_value = "sample_textures")]
        output: PathBuf,
        /// Map size in texels (16..=2048).
        #[arg(long, default_value_t = 256)]
        size: u32,
        /// Seed.
        #[arg(long, default_value_t = 7)]
        seed: u64,
    },
}

/// Progress on a terminal: pass lines and a training bar.
struct TerminalProgress {
    bar: ProgressBar,
}

impl TerminalProgress {
    fn new() -> Self {
        let bar = ProgressBar::hidden();
        Self { bar }
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
}

/// `--latent-bits` and `--quant-bits`: the latent bit depths the presets and benches use.
fn parse_latent_bits(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(bits @ (2 | 4 | 8)) => Ok(bits),
        _ => Err(format!("{text} is not a latent bit depth (2, 4 or 8)")),
    }
}

/// `--decoder`: hidden layer widths separated by `-` or `,` (`96-64-32`), 1 to `MAX_MLP_WIDTH` each (the
/// layer count is checked with the other options).
fn parse_decoder_widths(text: &str) -> Result<Vec<usize>> {
    text.split(['-', ','])
        .map(|w| match w.trim().parse::<usize>() {
            Ok(n) if (1..=MAX_MLP_WIDTH).contains(&n) => Ok(n),
            _ => Err(anyhow::anyhow!("--decoder: '{w}' is not a layer width (1 to {MAX_MLP_WIDTH}) in '{text}'")),
        })
        .collect()
}

fn parse_budgets(text: &str) -> Result<std::collections::BTreeMap<String, u32>> {
    let mut out = std::collections::BTreeMap::new();
    for item in text.split(',').filter(|s| !s.trim().is_empty()) {
        let (key, value) = item.split_once('=').with_context(|| format!("budget '{item}' is not kind=N"))?;
        let n: u32 = value.trim().parse().with_context(|| format!("budget '{item}': '{value}' is not a channel count"))?;
        out.insert(key.trim().to_owned(), n);
    }
    Ok(out)
}

/// The material folders of `./sample_textures` (empty when there is none).
fn sample_folders() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("sample_textures")
        .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect())
        .unwrap_or_default();
    dirs.sort();
    dirs
}

/// `texset compress --batch`: one bundle per material folder of `library` (docs/scale.md).
fn run_batch(library: &Path, out_dir: &Path, options: &CompressOptions, bpp: Option<f64>, shard: Option<&str>, jobs: usize) -> Result<()> {
    use texset_core::drivers::batch::{self, Shard, UnitStatus};
    let shard = shard.map(Shard::parse).transpose()?.unwrap_or(Shard::ALL);
    let options_for = |set: &texset_core::TextureSet| -> std::result::Result<CompressOptions, String> {
        let mut o = options.clone();
        if let Some(bpp) = bpp {
            o.fit_bits_per_texel_for(bpp, set).map_err(|e| e.to_string())?;
        }
        Ok(o)
    };
    let done = std::sync::atomic::AtomicUsize::new(0);
    let report = |u: &batch::UnitRecord| {
        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        match u.status {
            UnitStatus::Compressed => eprintln!(
                "[{n}] {}: {:.2} dB, {:.3} bits/texel, {} bytes, trained in {:.1} s",
                u.material, u.pooled_psnr_db, u.bits_per_texel, u.bundle_bytes, u.train_secs
            ),
            UnitStatus::UpToDate => eprintln!("[{n}] {}: up to date ({:.2} dB)", u.material, u.pooled_psnr_db),
            UnitStatus::Failed => eprintln!("[{n}] {}: FAILED: {}", u.material, u.error.as_deref().unwrap_or("")),
        }
    };
    eprintln!("batch {} shard {}/{} with {jobs} job(s) into {}", library.display(), shard.index, shard.count, out_dir.display());
    let summary = batch::run(library, out_dir, &options_for, shard, jobs, &report)?;
    let path = batch::BatchSummary::path(out_dir, shard);
    let count = |s: UnitStatus| summary.units.iter().filter(|u| u.status == s).count();
    eprintln!(
        "{} of the library's {} materials in this shard: {} compressed, {} up to date, {} failed in {:.1} s; summary {}",
        summary.units.len(),
        summary.library_materials,
        count(UnitStatus::Compressed),
        count(UnitStatus::UpToDate),
        summary.failed(),
        summary.wall_secs,
        path.display()
    );
    if summary.failed() > 0 {
        bail!("{} of {} materials failed (see {})", summary.failed(), summary.units.len(), path.display());
    }
    Ok(())
}

/// `texset transcode`: decode, build mips, block-compress, write KTX2/DDS (atomic), read every
/// KTX2 file back with the `ktx2` crate, and report PSNR per map.
fn transcode(bundle: &Path, output: &Path, format: TranscodeArg, gpu: bool, originals: &[PathBuf]) -> Result<()> {
    use texset_core::io::transcode::{Container, Profile, dds_bytes, ktx2_bytes, transcode_chain, vk_format};
    let b = read_bundle(bundle)?;
    let mut decoder = texset::decode::MaterialDecoder::new(&b, gpu);
    if format == TranscodeArg::Png {
        let written = texset_core::io::export::write_folder(&b.manifest, output, |m| Ok(decoder.decode_material(m)?))?;
        eprintln!("wrote {} maps under {}", written.len(), output.display());
        return Ok(());
    }
    let (profile, container) = match format {
        TranscodeArg::Bc1 => (Profile::Low, Container::Ktx2),
        TranscodeArg::Dds => (Profile::High, Container::Dds),
        _ => (Profile::High, Container::Ktx2),
    };
    let originals = if originals.is_empty() { None } else { Some(texset_core::set::ingest::load_library(originals)?.0) };
    let (mut total_bytes, mut texels) = (0u64, 0u64);
    for (m, material) in b.manifest.materials.iter().enumerate() {
        let folder = output.join(&material.name);
        std::fs::create_dir_all(&folder).with_context(|| format!("cannot create {}", folder.display()))?;
        let chains = decoder.decode_material_chains(m)?;
        for (entry, chain) in material.maps.iter().zip(&chains) {
            let Some(map) = chain.first() else { bail!("no level 0 decoded for {}/{} (a texset bug)", material.name, entry.kind) };
            let t = transcode_chain(chain, entry, profile);
            let bytes = match container {
                Container::Ktx2 => ktx2_bytes(t.format, t.srgb, &t.levels),
                Container::Dds => dds_bytes(t.format, t.srgb, &t.levels),
            };
            let path = folder.join(format!("{}_{}.{}", material.name, entry.kind, container.extension()));
            texset_core::io::fsutil::write_atomic(&path, &bytes).with_context(|| format!("cannot write {}", path.display()))?;
            if container == Container::Ktx2 {
                // Read it back with an independent reader: header, descriptor and every level.
                let reader = ktx2::Reader::new(&bytes[..]).map_err(|e| anyhow::anyhow!("{} does not validate: {e:?}", path.display()))?;
                let header = reader.header();
                let levels_match = reader.levels().zip(&t.levels).all(|(read, ours)| read.data == ours.blocks.as_slice());
                let format_matches = header.format.map(|f| f.value()) == Some(vk_format(t.format, t.srgb));
                if !(format_matches
                    && header.pixel_width == map.width
                    && header.pixel_height == map.height
                    && header.level_count as usize == t.levels.len()
                    && levels_match
                    && reader.basic_dfd().is_some())
                {
                    bail!("{} does not read back as written (a texset bug)", path.display());
                }
            }
            let against_original = originals.as_ref().and_then(|set| {
                let source = set.materials.iter().find(|s| s.name == material.name)?.textures.iter().find(|t| t.kind == entry.kind)?;
                let back = texset_core::eval::bcn::decode(&t.levels[0].blocks, map.width, map.height, map.channels, entry.kind, t.format);
                (source.texels.len() == back.len()).then(|| texset_core::eval::metrics::psnr(&source.texels, &back))
            });
            eprintln!(
                "  {}: {:?}{} {}x{}, {} mips ({}), {} bytes; level 0 {:.2} dB against the bundle's decode{}",
                path.display(),
                t.format,
                if t.srgb { " sRGB" } else { "" },
                map.width,
                map.height,
                t.levels.len(),
                if b.manifest.mip_levels > 1 { "decoded from the bundle's mip chain" } else { "box-filtered from level 0" },
                bytes.len(),
                t.level0_psnr_db,
                against_original.map_or_else(String::new, |p| format!(", {p:.2} dB against the original"))
            );
            total_bytes += bytes.len() as u64;
            texels += u64::from(map.width) * u64::from(map.height);
        }
    }
    eprintln!(
        "wrote {} bytes of {} files under {} ({:.2} bits per level-0 texel, mips included){}",
        total_bytes,
        container.extension(),
        output.display(),
        total_bytes as f64 * 8.0 / texels.max(1) as f64,
        if container == Container::Ktx2 { "; every file read back and checked with the ktx2 crate" } else { "" }
    );
    Ok(())
}

fn read_bundle(path: &Path) -> Result<Bundle> {
    Bundle::read(path).with_context(|| format!("cannot read bundle {}", path.display()))
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("texset: error: {e:#}");
        std::process::exit(1);
    }
}

#[allow(clippy::too_many_lines)] // One match arm per subcommand, each short.
fn run(cli: Cli) -> Result<()> {
    let Some(command) = cli.command else {
        return texset::studio::run(sample_folders(), None, None);
    };
    match command {
        Command::Studio { dirs, steps, capture } => texset::studio::run(dirs, capture, steps)?,
        Command::Compress {
            dirs,
            output,
            batch,
            shard,
            jobs,
            bpp,
            target_psnr,
            match_bc,
            max_bpp,
            min_bpp,
            rate_trials,
            tolerance_db,
            search,
            search_trials,
            search_cache,
            search_weight_formats,
            search_max_macs,
            no_search_cache,
            steps,
            latent_bits,
            latent_quant,
            weight_quant,
            weight_format,
            decoder,
            backend,
            preset,
            seed,
            budget,
            prune_to,
            prune_method,
            prune_at,
            group_lasso,
            sharing,
            auto_budgets,
            learn_budgets,
            budget_lasso,
            budget_cut_at,
            budget_drop_below,
            mips,
            mip_growth,
            mip_boost,
            report,
            checkpoint,
            checkpoint_secs,
            resume,
            init_from,
            no_ssim,
        } => {
            let mut options = CompressOptions::preset(preset.into());
            if let Some(bits) = latent_bits {
                for g in &mut options.model.grids {
                    g.bits = bits;
                }
            }
            options.schedule.latent_quantisation = latent_quant.into();
            options.schedule.weight_quantisation = weight_quant.into();
            options.model.weight_format = weight_format.into();
            if let Some(text) = decoder {
                options.model.hidden_widths = parse_decoder_widths(&text)?;
            }
            if let Some(steps) = steps {
                options.schedule.steps = steps;
            }
            if let Some(seed) = seed {
                options.schedule.seed = seed;
            }
            if let Some(b) = budget {
                options.budgets.overrides = parse_budgets(&b)?;
            }
            options.budgets.auto = auto_budgets;
            if learn_budgets {
                options.budgets.learned =
                    Some(texset_core::options::LearnedBudgets { strength: budget_lasso, at: budget_cut_at, drop_below: budget_drop_below });
            }
            options.model.mips = mips;
            options.model.mip_cell_growth = mip_growth;
            options.schedule.mip_sample_boost = mip_boost;
            options.budgets.sharing = match sharing {
                SharingArg::All => texset_core::options::LibrarySharing::All,
                SharingArg::Related => texset_core::options::LibrarySharing::Related,
            };
            if let Some(text) = prune_to {
                let keep_per_grid = text
                    .split(',')
                    .map(|c| c.trim().parse::<u32>().with_context(|| format!("--prune-to: '{c}' is not a channel count")))
                    .collect::<Result<Vec<u32>>>()?;
                options.budgets.prune = Some(texset_core::options::ChannelPruning {
                    keep_per_grid,
                    method: match prune_method {
                        PruneMethodArg::L1 => texset_core::options::PruneMethod::L1,
                        PruneMethodArg::Random => texset_core::options::PruneMethod::Random,
                    },
                    at: prune_at,
                    group_lasso,
                });
            }
            options.run.backend = match backend {
                BackendArg::Auto => Backend::Auto,
                BackendArg::Cpu => Backend::Cpu,
                BackendArg::Wgpu => Backend::Wgpu,
                BackendArg::Flex => Backend::Flex,
            };
            if !(checkpoint_secs.is_finite() && checkpoint_secs >= 0.0) {
                bail!("--checkpoint-secs must be a non-negative number of seconds, got {checkpoint_secs}");
            }
            if let Some(path) = checkpoint {
                if resume {
                    options.run.resume_from = Some(path.clone());
                }
                options.run.checkpoint = Some(CheckpointOptions { path, every_secs: checkpoint_secs });
            }
            options.run.init_from = init_from;
            if let Some(library) = batch {
                return run_batch(&library, &output, &options, bpp, shard.as_deref(), jobs);
            }
            let (set, ingest_report) = texset_core::set::ingest::load_library(&dirs)?;
            for s in &ingest_report.skipped {
                eprintln!("skipped {}: {}", s.path.display(), s.reason);
            }
            print_constants(&ingest_report);
            if let (Some(bpp), None) = (bpp, search) {
                options.fit_bits_per_texel_for(bpp, &set).map_err(anyhow::Error::msg)?;
            }
            eprintln!(
                "compressing {} material(s), {} maps, {} texels; grids {}",
                set.materials.len(),
                set.textures().count(),
                set.texel_count(),
                options
                    .model
                    .grids
                    .iter()
                    .map(|g: &GridOptions| format!("1/{} x {}ch @ {}b", g.texels_per_cell, g.channels, g.bits))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let progress = TerminalProgress::new();
            let cancel = Cancel::new();
            let rate_target = match (target_psnr, match_bc) {
                (Some(psnr_db), _) => Some(texset_core::drivers::rate::RateTarget {
                    psnr_db,
                    tolerance_db,
                    min_bpp,
                    max_bpp: max_bpp.unwrap_or(8.0),
                    trials: rate_trials,
                    bc_baseline: None,
                }),
                (None, Some(profile)) => {
                    let target = texset_core::drivers::rate::RateTarget::matching_bc(&set, profile.into(), min_bpp, max_bpp, rate_trials);
                    if let Some(b) = &target.bc_baseline {
                        eprint!("{}", bc_baseline_summary(b));
                    }
                    Some(target)
                }
                (None, None) => None,
            };
            let mut search_report = None;
            let (compressed, rate) = match (rate_target, search, bpp) {
                (None, Some(strategy), Some(bpp)) => {
                    let mut search_options = texset_core::drivers::search::SearchOptions::new(strategy.into(), bpp, search_trials);
                    search_options.max_decoder_macs_per_texel = search_max_macs;
                    search_options.space.weight_formats = search_weight_formats.into_iter().map(Into::into).collect();
                    search_options.cache = if no_search_cache { None } else { search_cache.or_else(search::default_cache_path) };
                    let (compressed, report) = search::run(&set, &options, &search_options, &cancel)?;
                    // The report's options are the shape the search chose.
                    options = report.finals[report.chosen].point.options(&options, bpp, &set).map_err(anyhow::Error::msg)?;
                    search_report = Some(report);
                    (compressed, None)
                }
                (Some(target), ..) => {
                    use texset_core::drivers::rate::compress_to_psnr;
                    let on_trial = |t: &texset_core::drivers::rate::RateTrial| {
                        eprintln!(
                            "rate trial: asked {:.3} bits/texel, got {:.3} ({} bytes): {:.2} dB, trained in {:.1} s",
                            t.target_bits_per_texel, t.bits_per_texel, t.bundle_bytes, t.pooled_psnr_db, t.train_secs
                        );
                    };
                    let (compressed, report) = compress_to_psnr(&set, &options, &target, &progress, &cancel, &on_trial)?;
                    let chosen = &report.trials[report.chosen];
                    if report.lowest_bpp > target.min_bpp {
                        eprintln!(
                            "rate control: searched from {:.3} bits/texel, not {}: one latent channel per grid and the decoder take that much",
                            report.lowest_bpp, target.min_bpp
                        );
                    }
                    if report.reached {
                        eprintln!(
                            "rate control: trial {} of {} is the smallest bundle at or above {:.2} dB (tolerance {:.2} dB): {:.3} bits/texel, {:.2} dB",
                            report.chosen + 1,
                            report.trials.len(),
                            target.psnr_db,
                            target.tolerance_db,
                            chosen.bits_per_texel,
                            chosen.pooled_psnr_db
                        );
                    } else {
                        eprintln!(
                            "warning: no trial up to {:.3} bits/texel reaches {:.2} dB; keeping the best one ({:.2} dB at {:.3} bits/texel)",
                            target.max_bpp, target.psnr_db, chosen.pooled_psnr_db, chosen.bits_per_texel
                        );
                    }
                    (compressed, Some(report))
                }
                // clap requires --bpp with --search, and allows neither beside a rate target.
                (None, ..) => (texset_core::compress(&set, &options, &progress, &cancel)?, None),
            };
            texset_core::io::fsutil::write_atomic(&output, &compressed.bundle_bytes)
                .with_context(|| format!("cannot write bundle {}", output.display()))?;
            let decoder = Decoder::new(&compressed.bundle);
            let eval = texset_core::eval::evaluate(&set, &decoder, !no_ssim)?;
            let r = &compressed.report;
            eprintln!(
                "wrote {} ({} bytes, {:.3} bits per texel); pooled PSNR {:.2} dB; trained {} steps in {:.1} s",
                output.display(),
                r.pack.bundle_bytes,
                r.pack.bits_per_texel,
                eval.pooled_psnr_db,
                r.train.steps_run,
                r.train.train_secs
            );
            for m in &eval.maps {
                let ssim = if m.ssim.is_nan() { "not measured (--no-ssim)".to_owned() } else { format!("{:.4}", m.ssim) };
                eprintln!("  {}/{}: {:.2} dB, SSIM {ssim}", m.material, m.map, m.psnr_db);
            }
            let mips = texset_core::eval::evaluate_mips(&set, &decoder)?;
            if let Some(m) = &mips {
                eprint!("{}", mip_summary(m));
            }
            eprintln!("channel budgets (before training, then in the bundle):");
            for (b, change) in r.analyse.budgets.iter().zip(&r.prune.budgets) {
                eprintln!("  {}: {}/{} channels ({})", b.texture, b.channels, b.total_channels, b.reason);
                // A learned budget says what the cut made of it, kept or not.
                if change.after != change.before || r.train.learned_budgets.is_some() {
                    eprintln!("    -> {} channels in the bundle: {}", change.after, change.reason);
                }
            }
            if let Some(path) = report {
                let json = serde_json::json!({
                    "bundle": output,
                    "bundle_bytes": r.pack.bundle_bytes,
                    "bits_per_texel": r.pack.bits_per_texel,
                    "texel_count": r.pack.texel_count,
                    "pooled_psnr_db": eval.pooled_psnr_db,
                    "maps": eval.maps,
                    "train_secs": r.train.train_secs,
                    "steps": r.train.steps_run,
                    "texels_per_sec": r.train.texels_per_sec,
                    "backend": r.train.backend,
                    "options": options,
                    "rate": rate,
                    "search": search_report,
                    "mips": mips,
                    "passes": r,
                    "ingest": ingest_report,
                });
                texset_core::io::fsutil::write_atomic(&path, serde_json::to_string_pretty(&json)?.as_bytes())
                    .with_context(|| format!("cannot write report {}", path.display()))?;
            }
        }
        Command::Add { library, dirs, output, steps, adapter_channels, read_shared, seed, report, no_ssim } => {
            let lib = read_bundle(&library)?;
            let (set, ingest_report) = texset_core::set::ingest::load_library(&dirs)?;
            for s in &ingest_report.skipped {
                eprintln!("skipped {}: {}", s.path.display(), s.reason);
            }
            print_constants(&ingest_report);
            let mut train = CompressOptions::default();
            train.schedule.steps = steps.unwrap_or(train.schedule.steps / 5);
            if let Some(seed) = seed {
                train.schedule.seed = seed;
            }
            let adapter_channels = adapter_channels
                .map(|text| {
                    text.split(',')
                        .map(|c| c.trim().parse::<u32>().with_context(|| format!("--adapter-channels: '{c}' is not a channel count")))
                        .collect::<Result<Vec<u32>>>()
                })
                .transpose()?;
            eprintln!("adding {} material(s) to {} ({} materials)", set.materials.len(), library.display(), lib.manifest.materials.len());
            let options = texset_core::drivers::extend::AddOptions { train, adapter_channels, read_shared };
            let grown = texset_core::drivers::extend::add_materials(&lib, &set, &options, &TerminalProgress::new(), &Cancel::new())?;
            texset_core::io::fsutil::write_atomic(&output, &grown.bundle_bytes)
                .with_context(|| format!("cannot write bundle {}", output.display()))?;
            let eval = texset_core::eval::evaluate(&set, &Decoder::new(&grown.bundle), !no_ssim)?;
            let r = &grown.report;
            eprintln!(
                "wrote {} ({} bytes, {:.3} bits per texel); new material(s) pooled PSNR {:.2} dB; trained {} of {} parameters in {:.1} s",
                output.display(),
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
            if let Some(path) = report {
                let json = serde_json::json!({ "bundle": output, "pooled_psnr_db": eval.pooled_psnr_db, "maps": eval.maps, "add": r });
                texset_core::io::fsutil::write_atomic(&path, serde_json::to_string_pretty(&json)?.as_bytes())
                    .with_context(|| format!("cannot write report {}", path.display()))?;
            }
        }
        Command::Decode { bundle, output, gpu } => {
            let b = read_bundle(&bundle)?;
            let mut decoder = texset::decode::MaterialDecoder::new(&b, gpu);
            let written = texset_core::io::export::write_folder(&b.manifest, &output, |m| Ok(decoder.decode_material(m)?))?;
            eprintln!("wrote {} maps under {}", written.len(), output.display());
        }
        Command::Transcode { bundle, output, format, gpu, originals } => transcode(&bundle, &output, format, gpu, &originals)?,
        Command::ExportShader { bundle, lang, entry, output } => {
            let b = read_bundle(&bundle)?;
            let (lang, entry) = (lang.into(), entry.into());
            let source = texset_shaders::export_shader(&b, lang, entry)
                .with_context(|| format!("cannot export a shader for {}", bundle.display()))?;
            texset_core::io::fsutil::write_atomic(&output, source.as_bytes())
                .with_context(|| format!("cannot write {}", output.display()))?;
            let check = match texset_shaders::export::external_check(&output, lang, entry) {
                texset_shaders::export::ExternalCheck::Passed(tool) => format!("naga and {tool} validated it"),
                texset_shaders::export::ExternalCheck::Unavailable(why) => format!("naga validated it ({why})"),
                texset_shaders::export::ExternalCheck::Failed(why) => {
                    anyhow::bail!("{} was written but glslangValidator rejects it (a texset bug):\n{why}", output.display())
                }
            };
            eprintln!("wrote {} ({:?}, {} bytes); {check}", output.display(), lang, source.len());
        }
        Command::Inspect { bundle, json } => {
            let bytes = std::fs::metadata(&bundle).with_context(|| format!("cannot read {}", bundle.display()))?.len();
            let b = read_bundle(&bundle)?;
            let m = &b.manifest;
            if json {
                let out = serde_json::json!({
                    "bundle_bytes": bytes,
                    "bits_per_texel": bytes as f64 * 8.0 / b.texel_count().max(1) as f64,
                    "manifest": m,
                });
                println!("{}", serde_json::to_string_pretty(&out)?);
            } else {
                println!(
                    "{}: {} bytes, {:.3} bits per texel ({})",
                    bundle.display(),
                    bytes,
                    bytes as f64 * 8.0 / b.texel_count().max(1) as f64,
                    m.producer
                );
                for (i, g) in m.grids.iter().enumerate() {
                    println!("grid {i}: {}x{} cells x {} channels @ {} bits", g.width, g.height, g.channels, g.bits);
                }
                let widths: Vec<String> = std::iter::once(m.layers.first().map_or(0, |l| l.inputs))
                    .chain(m.layers.iter().map(|l| l.outputs))
                    .map(|w| w.to_string())
                    .collect();
                let format = match m.layers.first().map(|l| l.format).unwrap_or_default() {
                    texset_core::model::quant::WeightFormat::Int8 => "int8 weights, per-row scales",
                    texset_core::model::quant::WeightFormat::Fp16 => "fp16 weights",
                    texset_core::model::quant::WeightFormat::Fp8E4m3 => "E4M3 weights, per-row scales",
                    texset_core::model::quant::WeightFormat::MxInt8 => "MXINT8 weights, a power-of-two scale per 32 inputs",
                };
                println!("mlp: {} ({format}), {} positional frequencies", widths.join("-"), m.pe_frequencies);
                let total = m.latent_channels();
                // The first map writing each output slice; later maps on the same slice are
                // duplicates stored once.
                let mut owners: std::collections::BTreeMap<u32, String> = std::collections::BTreeMap::new();
                for mat in &m.materials {
                    println!("material {}", mat.name);
                    for map in &mat.maps {
                        let name = format!("{}/{}", mat.name, map.kind);
                        let shared = if let Some(owner) = owners.get(&map.output_offset) {
                            if map.color_transform.is_some() {
                                format!(", colour variant of {owner}: its outputs through an affine colour transform")
                            } else {
                                format!(", identical to {owner}: shares its outputs")
                            }
                        } else {
                            owners.insert(map.output_offset, name);
                            String::new()
                        };
                        println!(
                            "  {:<10} {}x{} {}ch {:?} {:?}{} budget {}/{} channels{shared}",
                            map.kind.token(),
                            map.width,
                            map.height,
                            map.channels,
                            map.sample_format,
                            map.color_space,
                            if map.kind == texset_core::MapKind::Normal { format!(" {:?}", map.normal_convention) } else { String::new() },
                            map.latent_channels.len(),
                            total
                        );
                    }
                }
            }
        }
        Command::Eval { mut paths, json } => {
            let Some(bundle) = paths.pop() else { bail!("eval needs reference folders and a bundle") };
            let b = read_bundle(&bundle)?;
            let (set, _) = texset_core::set::ingest::load_library(&paths)?;
            let decoded = texset_core::eval::decode_set(&set, &Decoder::new(&b))?;
            let eval = texset_core::eval::score(&set, &decoded, true);
            let mips = texset_core::eval::evaluate_mips(&set, &Decoder::new(&b))?;
            let (lights, size_px) = (8, 256);
            let rendered = texset::rendered::rendered_scores(&set, &b.manifest, &decoded, lights, size_px);
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "pooled_psnr_db": eval.pooled_psnr_db,
                        "maps": eval.maps,
                        "rendered": rendered,
                        "mips": mips,
                    }))?
                );
            } else {
                println!("pooled PSNR {:.2} dB", eval.pooled_psnr_db);
                for m in &eval.maps {
                    let ch: Vec<String> = m.channel_psnr_db.iter().map(|p| format!("{p:.2}")).collect();
                    let flip = m.flip.map_or_else(String::new, |f| format!(", FLIP {f:.4}"));
                    let angle = m.normal_angular_error_deg.map_or_else(String::new, |a| format!(", mean angular error {a:.2} deg"));
                    println!(
                        "  {}/{}: PSNR {:.2} dB (channels {}), SSIM {:.4}{flip}{angle}",
                        m.material,
                        m.map,
                        m.psnr_db,
                        ch.join(" "),
                        m.ssim
                    );
                }
                println!(
                    "rendered error (the preview's plane under {lights} light positions, {size_px}x{size_px}, original vs decoded maps):"
                );
                for r in &rendered {
                    println!("  {}: PSNR {:.2} dB, FLIP {:.4}", r.material, r.rendered_psnr_db, r.rendered_flip);
                }
                if let Some(m) = &mips {
                    print!("{}", mip_summary(m));
                }
            }
        }
        Command::Bench { load: true, load_materials, load_steps, load_decode_secs, load_texels_per_sec, json, .. } => {
            let options = load::LoadOptions {
                materials: load_materials,
                steps: load_steps,
                size_px: 64,
                decode_secs: load_decode_secs,
                texels_per_sec: load_texels_per_sec,
            };
            load::run(&options, json)?;
        }
        Command::Bench { dirs, ui: true, json, .. } => {
            let dirs = if dirs.is_empty() { sample_folders() } else { dirs };
            let report = texset::studio::bench_ui::run(dirs.clone(), 1500, Duration::from_mins(10))?;
            // Rendered on a GPU (lavapipe will do): Compare as the baseline, then the PBR preview
            // open (fewer steps: a software GPU renders every frame on the same cores).
            let (compare, preview) = (texset::studio::state::CentralView::Compare, texset::studio::state::CentralView::Preview);
            let compare_gpu = texset::studio::bench_ui::run_gpu(dirs.clone(), 600, Duration::from_mins(10), compare);
            let preview = texset::studio::bench_ui::run_gpu(dirs, 600, Duration::from_mins(10), preview);
            if json {
                let preview = preview.as_ref().map_err(ToString::to_string);
                let compare_gpu = compare_gpu.as_ref().map_err(ToString::to_string);
                println!(
                    "{}",
                    serde_json::to_string_pretty(
                        &serde_json::json!({ "compare": report, "compare_gpu": compare_gpu, "preview": preview })
                    )?
                );
            } else {
                let line = |r: &texset::studio::bench_ui::UiBench| {
                    format!(
                        "median {:.2} ms, p95 {:.2} ms, max {:.2} ms over {} frames ({} training steps, {} snapshots shown)",
                        r.median_frame_ms, r.p95_frame_ms, r.max_frame_ms, r.frames, r.train_steps, r.snapshots_shown
                    )
                };
                println!("studio frame time while training, Compare view (headless, UI thread only): {}", line(&report));
                match &compare_gpu {
                    Ok(p) => println!("studio frame time while training, Compare view rendered on {}: {}", p.adapter, line(&p.frames)),
                    Err(e) => println!("Compare frame time on a GPU: not measured: {e}"),
                }
                match &preview {
                    Ok(p) => {
                        println!(
                            "studio frame time while training, PBR preview with orbiting lights on {}: {}",
                            p.adapter,
                            line(&p.frames)
                        );
                        println!("  preview: {} images in {} bands while training", p.preview_images, p.preview_bands);
                        match p.converge_secs {
                            Some(s) => println!(
                                "  lights stopped: full resolution after {s:.2} s, slowest frame meanwhile {:.2} ms",
                                p.converge_max_frame_ms
                            ),
                            None => println!("  lights stopped: the preview did not reach full resolution within the limit"),
                        }
                    }
                    Err(e) => println!("PBR preview frame time: not measured: {e}"),
                }
            }
        }
        Command::Bench { rd: true, rd_from, plot, json, .. } if !rd_from.is_empty() => {
            rd::merge(&rd_from, &plot, json)?;
        }
        Command::Bench { dirs, rd: true, rd_presets, rd_bpp, rd_steps, plot, rd_save, json, .. } => {
            let dirs = bench::dirs_or_samples(dirs)?;
            let presets: Vec<Preset> = rd_presets.into_iter().map(Preset::from).collect();
            rd::run(&dirs, &presets, &rd_bpp, rd_steps, &plot, json, rd_save.as_deref())?;
        }
        Command::Bench { dirs, quantisation: true, quant_steps, quant_bits, quant_skip_formats, json, .. } => {
            let dirs = bench::dirs_or_samples(dirs)?;
            quant_bench::run(&dirs, quant_steps, &quant_bits, !quant_skip_formats, json)?;
        }
        Command::Bench {
            dirs,
            search: true,
            search_strategies,
            search_bpp,
            search_trials,
            search_preset,
            search_steps,
            search_cache,
            search_max_macs,
            json,
            ..
        } => {
            let dirs = bench::dirs_or_samples(dirs)?;
            let strategies: Vec<texset_core::drivers::search::Strategy> = search_strategies.into_iter().map(Into::into).collect();
            let mut base = CompressOptions {
                run: RunOptions { backend: Backend::Cpu, ..CompressOptions::preset(search_preset.into()).run },
                ..CompressOptions::preset(search_preset.into())
            };
            if let Some(steps) = search_steps {
                base.schedule.steps = steps;
            }
            let mut template =
                texset_core::drivers::search::SearchOptions::new(texset_core::drivers::search::Strategy::Tpe, search_bpp, search_trials);
            template.cache = search_cache;
            template.max_decoder_macs_per_texel = search_max_macs;
            search::bench(&dirs, &strategies, &base, &template, json)?;
        }
        Command::Bench {
            dirs,
            runs,
            burn,
            wgpu,
            gpu_decode,
            json,
            ui: false,
            load: false,
            quantisation: false,
            rd: false,
            search: false,
            ..
        } => {
            let extras: Vec<bench::Extra> =
                [(burn, bench::Extra::BurnFlex), (wgpu, bench::Extra::BurnWgpu), (gpu_decode, bench::Extra::GpuDecode)]
                    .into_iter()
                    .filter_map(|(on, extra)| on.then_some(extra))
                    .collect();
            bench::run(dirs, runs, &extras, json)?;
        }
        Command::GenSamples { output, size, seed } => {
            let files = texset::synth::write_sample_textures(&output, size, seed)?;
            eprintln!("wrote {} files under {}", files.len(), output.display());
        }
    }
    Ok(())
}

/// `texset compress --weight-format` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum WeightFormatArg {
    /// int8, one f32 scale per output row.
    Int8,
    /// IEEE half precision.
    Fp16,
    /// 8-bit minifloat (4 exponent, 3 mantissa bits), one f32 scale per output row.
    E4m3,
    /// int8 with a shared power-of-two scale per block of 32 inputs.
    Mxint8,
}

impl From<WeightFormatArg> for texset_core::model::quant::WeightFormat {
    fn from(f: WeightFormatArg) -> Self {
        match f {
            WeightFormatArg::Int8 => Self::Int8,
            WeightFormatArg::Fp16 => Self::Fp16,
            WeightFormatArg::E4m3 => Self::Fp8E4m3,
            WeightFormatArg::Mxint8 => Self::MxInt8,
        }
    }
}

/// `texset compress --search` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum SearchArg {
    /// Every point of the space (81 short runs).
    Grid,
    /// Uniform draws.
    Random,
    /// A tree-structured Parzen estimator.
    Tpe,
}

impl From<SearchArg> for texset_core::drivers::search::Strategy {
    fn from(s: SearchArg) -> Self {
        match s {
            SearchArg::Grid => Self::Grid,
            SearchArg::Random => Self::Random,
            SearchArg::Tpe => Self::Tpe,
        }
    }
}

/// `texset compress --match-bc` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum BcProfileArg {
    /// BC7 for colour and packed maps, BC5 for normals, BC4 for one channel.
    High,
    /// BC1 for colour, packed and normal maps, BC4 for one channel.
    Low,
}

impl From<BcProfileArg> for texset_core::eval::bcn::Profile {
    fn from(p: BcProfileArg) -> Self {
        match p {
            BcProfileArg::High => Self::High,
            BcProfileArg::Low => Self::Low,
        }
    }
}

/// `texset transcode --format` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum TranscodeArg {
    Ktx2,
    Bc7,
    Bc1,
    Dds,
    Png,
}

/// `--lang` values.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum LangArg {
    Wgsl,
    Glsl,
    Hlsl,
    Msl,
}

impl From<LangArg> for texset_shaders::ShaderLang {
    fn from(lang: LangArg) -> Self {
        match lang {
            LangArg::Wgsl => Self::Wgsl,
            LangArg::Glsl => Self::Glsl,
            LangArg::Hlsl => Self::Hlsl,
            LangArg::Msl => Self::Msl,
        }
    }
}

/// `--entry` values (the WGSL entry point names).
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
#[clap(rename_all = "snake_case")]
enum EntryArg {
    CsDecodeMap,
    CsDecodeSamples,
    VsFullscreen,
    FsDecodeMap,
}

impl From<EntryArg> for texset_shaders::EntryPoint {
    fn from(entry: EntryArg) -> Self {
        match entry {
            EntryArg::CsDecodeMap => Self::DecodeMap,
            EntryArg::CsDecodeSamples => Self::DecodeSamples,
            EntryArg::VsFullscreen => Self::Fullscreen,
            EntryArg::FsDecodeMap => Self::FragmentDecode,
        }
    }
}

/// One line per constant map that took its material's resolution.
fn print_constants(report: &texset_core::set::ingest::IngestReport) {
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
}

/// The `--match-bc` baseline, one line per map and the pooled figure.
fn bc_baseline_summary(b: &texset_core::eval::bcn::Baseline) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    let _ = writeln!(
        text,
        "block-compressed baseline ({:?} profile): {:.2} dB pooled at {:.3} bits/texel",
        b.profile, b.pooled_psnr_db, b.bits_per_texel
    );
    for m in &b.maps {
        let _ = writeln!(text, "  {}/{}: {:?} {:.2} dB, {} bytes", m.material, m.map, m.format, m.psnr_db, m.bytes);
    }
    text
}

/// Per-level PSNR of a bundle's mip chain, as the CLI prints it.
fn mip_summary(report: &texset_core::eval::MipReport) -> String {
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
