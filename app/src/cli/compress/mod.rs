//! `texset compress`: material folders (one library) into a bundle, at a rate, a quality
//! (`rate`), the best precision found (`--search`), or one bundle per material (`batch`).

mod batch;
mod rate;

use anyhow::{Context as _, Result, bail};
use serde::Serialize;
use std::path::{Path, PathBuf};
use texset_core::{
    Cancel, compress,
    decode::Decoder,
    drivers::{RateReport, SearchReport},
    eval::{MapScore, MipReport, evaluate, evaluate_mips},
    export::{Container, write_gltf},
    io::Overwrite,
    options::{CompressOptions, GridOptions, Preset},
    set::{IngestReport, is_gltf_path},
};

use super::common::{ReportArgs, TerminalProgress, load_library, mip_summary, write_bundle};
use super::options::{BudgetArgs, ModelArgs, RunArgs, ScheduleArgs};
use super::search::SearchArgs;

/// The block-compressed copies `--gltf-copies` asks for.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum GltfCopies {
    /// KTX2 (BC7, BC5, BC4).
    Ktx2,
    /// DDS with the DX10 header.
    Dds,
}

// `texset compress`.
#[derive(clap::Args)]
pub(super) struct CompressArgs {
    /// Material folders (each a folder of maps) and glTF 2.0 assets (`.gltf`, `.glb`: each
    /// textured material, its `KHR_materials_variants` variants as materials of one library).
    #[arg(required_unless_present = "batch")]
    dirs: Vec<PathBuf>,
    /// Output bundle (.texset); with `--batch`, the output folder. With one glTF asset as input,
    /// a folder (a path without `.texset`): the asset as glTF with PNG fallbacks decoded from the
    /// bundle and the bundle beside it (docs/gltf-extension.md).
    #[arg(short, long)]
    output: PathBuf,
    /// With glTF output: also a block-compressed copy of every texture with its mip chain (KTX2
    /// or DDS, as `texset transcode` writes them), named from the texset extension only.
    #[arg(long, value_enum)]
    gltf_copies: Option<GltfCopies>,
    /// Target bits per texel of the whole bundle (sizes the latent channels to fit); with
    /// `--mips`, of its level 0 (the pyramid comes on top, as block-compression rates are quoted).
    #[arg(long, conflicts_with = "rate")]
    bpp: Option<f64>,
    /// Speed/quality preset.
    #[arg(long, value_enum, default_value_t = Preset::Default)]
    preset: Preset,
    #[command(flatten)]
    report: ReportArgs,
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    schedule: ScheduleArgs,
    #[command(flatten)]
    budgets: BudgetArgs,
    #[command(flatten)]
    run: RunArgs,
    #[command(flatten)]
    rate: rate::RateArgs,
    #[command(flatten)]
    search: SearchArgs,
    #[command(flatten)]
    batch: batch::BatchArgs,
}

/// `compress --report`: what was written, how well it decodes, and every pass's report.
#[derive(Serialize)]
struct CompressReport<'a> {
    bundle: &'a Path,
    bundle_bytes: u64,
    bits_per_texel: f64,
    texel_count: u64,
    pooled_psnr_db: f64,
    maps: &'a [MapScore],
    train_secs: f64,
    steps: u32,
    texels_per_sec: f64,
    backend: &'a str,
    /// The options the bundle was made with (the search's choice, with `--search`).
    options: &'a CompressOptions,
    rate: Option<&'a RateReport>,
    search: Option<&'a SearchReport>,
    mips: Option<&'a MipReport>,
    passes: &'a texset_core::CompressReport,
    ingest: &'a IngestReport,
}

impl CompressArgs {
    /// The engine options these flags ask for: the preset's, each group's flags written over.
    fn options(&self) -> Result<CompressOptions> {
        let mut options = CompressOptions::preset(self.preset);
        self.model.apply(&mut options.model)?;
        self.schedule.apply(&mut options.schedule, &mut options.model.explicit)?;
        self.budgets.apply(&mut options.budgets)?;
        self.run.apply(&mut options.run)?;
        Ok(options)
    }

    /// The glTF asset to write back as glTF into the output folder: when the input is one glTF
    /// asset and `-o` does not end in `.texset`. Several inputs with a glTF among them and such an
    /// `-o` are refused (which one would the folder hold?).
    fn gltf_output(&self) -> Result<Option<&Path>> {
        if self.output.extension().is_some_and(|e| e.eq_ignore_ascii_case("texset")) {
            return Ok(None);
        }
        match self.dirs.as_slice() {
            [asset] if is_gltf_path(asset) => Ok(Some(asset.as_path())),
            dirs if dirs.iter().any(|p| is_gltf_path(p)) => {
                bail!(
                    "{}: glTF output (a folder) takes one glTF asset as its only input; name a .texset to get a bundle",
                    self.output.display()
                )
            }
            _ => Ok(None),
        }
    }

    pub(super) fn run(self) -> Result<()> {
        let mut options = self.options()?;
        if let Some(library) = &self.batch.batch {
            return batch::run(&self.batch, library, &self.output, &options, self.bpp);
        }
        let gltf_output = self.gltf_output()?;
        if gltf_output.is_none() && self.gltf_copies.is_some() {
            bail!("--gltf-copies: only with glTF output (one glTF asset as input, -o a folder)");
        }
        let (set, ingest_report) = load_library(&self.dirs)?;
        if let (Some(bpp), None) = (self.bpp, self.search.search) {
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
        let rate_target = self.rate.target(&set);
        let search = self.bpp.and_then(|bpp| Some((bpp, self.search.options(bpp)?)));
        let (compressed, rate, search_report) = match (rate_target, search) {
            (None, Some((bpp, search_options))) => {
                let (compressed, report) = super::search::run(&set, &options, &search_options, &cancel)?;
                // The report's options are the shape the search chose.
                options = report.finals[report.chosen].point.options(&options, bpp, &set).map_err(anyhow::Error::msg)?;
                (compressed, None, Some(report))
            }
            (Some(target), _) => {
                let (compressed, report) = rate::compress_to_target(&set, &options, &target, &progress, &cancel)?;
                (compressed, Some(report), None)
            }
            // clap requires --bpp with --search, and allows neither beside a rate target.
            (None, None) => (compress(&set, &options, &progress, &cancel)?, None, None),
        };
        let bundle_path = if let Some(asset) = gltf_output {
            let copies = self.gltf_copies.map(|c| match c {
                GltfCopies::Ktx2 => Container::Ktx2,
                GltfCopies::Dds => Container::Dds,
            });
            let written = write_gltf(asset, &compressed.bundle_bytes, &self.output, Overwrite::OnlyOurs, copies)
                .with_context(|| format!("writing {} as glTF into {}", asset.display(), self.output.display()))?;
            eprintln!("wrote {} with {} files beside it", written.gltf.display(), written.files.len() - 1);
            written.bundle
        } else {
            write_bundle(&self.output, &compressed.bundle_bytes)?;
            self.output.clone()
        };
        let decoder = Decoder::new(&compressed.bundle);
        let eval = evaluate(&set, &decoder, !self.report.no_ssim)?;
        let r = &compressed.report;
        eprintln!(
            "wrote {} ({} bytes, {:.3} bits per texel); pooled PSNR {:.2} dB; trained {} steps in {:.1} s",
            bundle_path.display(),
            r.pack.bundle_bytes,
            r.pack.bits_per_texel,
            eval.pooled_psnr_db,
            r.train.steps_run,
            r.train.train_secs
        );
        if r.train.sampling_refreshes > 0 {
            eprintln!(
                "error-driven sampling: {} error-map refreshes took {:.2} s of the training",
                r.train.sampling_refreshes, r.train.sampling_refresh_secs
            );
        }
        for m in &eval.maps {
            let ssim = if m.ssim.is_nan() { "not measured (--no-ssim)".to_owned() } else { format!("{:.4}", m.ssim) };
            eprintln!("  {}/{}: {:.2} dB, SSIM {ssim}", m.material, m.map, m.psnr_db);
        }
        let mips = evaluate_mips(&set, &decoder)?;
        if let Some(m) = &mips {
            eprint!("{}", mip_summary(m));
        }
        if let Some(shape) = &r.analyse.shape {
            eprintln!("model shape for {}", shape.describe());
        }
        eprintln!("channel budgets (before training, then in the bundle):");
        for (b, change) in r.analyse.budgets.iter().zip(&r.prune.budgets) {
            eprintln!("  {}: {}/{} channels ({})", b.texture, b.channels, b.total_channels, b.reason);
            // A learned budget says what the cut made of it, kept or not.
            if change.after != change.before || r.train.learned_budgets.is_some() {
                eprintln!("    -> {} channels in the bundle: {}", change.after, change.reason);
            }
        }
        self.report.write(&CompressReport {
            bundle: &bundle_path,
            bundle_bytes: r.pack.bundle_bytes,
            bits_per_texel: r.pack.bits_per_texel,
            texel_count: r.pack.texel_count,
            pooled_psnr_db: eval.pooled_psnr_db,
            maps: &eval.maps,
            train_secs: r.train.train_secs,
            steps: r.train.steps_run,
            texels_per_sec: r.train.texels_per_sec,
            backend: &r.train.backend,
            options: &options,
            rate: rate.as_ref(),
            search: search_report.as_ref(),
            mips: mips.as_ref(),
            passes: r,
            ingest: &ingest_report,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::CompressArgs;
    use clap::Parser as _;
    use texset_core::{
        model::WeightFormat,
        options::{Backend, CompressOptions, LibrarySharing, Preset, PruneMethod, Quantisation},
    };

    #[derive(clap::Parser)]
    struct Compress {
        #[command(flatten)]
        args: CompressArgs,
    }

    fn options(args: &[&str]) -> CompressOptions {
        let parsed = Compress::try_parse_from([&["compress", "dir", "-o", "out.texset"], args].concat()).expect("flags parse");
        parsed.args.options().expect("options build")
    }

    /// Each group's flags land in their part of the options, over the preset's values; the
    /// engine enums take the spellings the CLI always had.
    #[test]
    fn flags_reach_their_options() {
        let o = options(&[
            "--preset",
            "fast",
            "--latent-bits",
            "2",
            "--weight-format",
            "e4m3",
            "--decoder",
            "24-16",
            "--steps",
            "77",
            "--seed",
            "9",
            "--latent-quant",
            "ptq",
            "--budget",
            "normal=3",
            "--sharing",
            "all",
            "--prune-to",
            "4,2",
            "--prune-method",
            "random",
            "--backend",
            "cpu",
            "--checkpoint",
            "ck.bin",
            "--resume",
        ]);
        let fast = CompressOptions::preset(Preset::Fast);
        assert!(o.model.grids.iter().all(|g| g.bits == 2));
        assert_eq!((o.model.weight_format, o.model.hidden_widths.as_slice()), (WeightFormat::Fp8E4m3, &[24, 16][..]));
        assert_eq!((o.schedule.steps, o.schedule.seed), (77, 9));
        assert_eq!((o.schedule.quantisation.latents, o.schedule.quantisation.weights), (Quantisation::Ptq, Quantisation::Auto));
        assert_eq!(o.budgets.overrides.get("normal"), Some(&3));
        assert_eq!(o.budgets.sharing, LibrarySharing::All);
        let prune = o.budgets.prune.expect("--prune-to sets pruning");
        assert_eq!((prune.keep_per_grid.as_slice(), prune.method), (&[4, 2][..], PruneMethod::Random));
        assert_eq!(o.run.backend, Backend::Cpu);
        assert!(o.run.checkpoint.is_some() && o.run.resume_from.is_some());
        // Flags not given keep the preset's values.
        assert_eq!(o.model.grids.len(), fast.model.grids.len());
        assert_eq!(o.schedule.sampling.mip_sample_boost.to_bits(), 1.5f32.to_bits());
        assert_eq!(options(&["--weight-format", "mxint8"]).model.weight_format, WeightFormat::MxInt8);
    }

    #[test]
    fn bad_values_are_errors_naming_the_flag() {
        let parse = |args: &[&str]| Compress::try_parse_from([&["compress", "dir", "-o", "out.texset"], args].concat());
        let err = |args: &[&str]| parse(args).expect("flags parse").args.options().expect_err("refused").to_string();
        assert!(err(&["--decoder", "24-0"]).contains("--decoder"));
        assert!(err(&["--prune-to", "4,x"]).contains("--prune-to"));
        assert!(err(&["--checkpoint-secs=-1"]).contains("--checkpoint-secs"));
        assert!(parse(&["--latent-bits", "3"]).is_err());
        assert!(parse(&["--weight-format", "fp8-e4m3"]).is_err());
        for bad in ["4x12", "4x12@9", "0x12@4", "4x0@4", "4x12@4,", "fourx12@4"] {
            let message = parse(&["--grids", bad]).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(message.contains("--grids"), "{bad}: {message}");
        }
    }

    /// `--grids` sets the grids, finest first, and marks them given, as `--latent-bits` marks
    /// the bits, `--decoder` the decoder and `--corner-reads` its reads: a rate's shape keeps them.
    #[test]
    fn grids_latent_bits_and_decoder_are_kept_as_given() {
        let o = options(&["--grids", "2x8@2, 4x16@4"]);
        let grids: Vec<(u32, u32, u32)> = o.model.grids.iter().map(|g| (g.texels_per_cell, g.channels, g.bits)).collect();
        assert_eq!(grids, [(2, 8, 2), (4, 16, 4)]);
        assert!(o.model.explicit.grids && !o.model.explicit.latent_bits);
        let o = options(&["--latent-bits", "8"]);
        assert!(!o.model.explicit.grids && o.model.explicit.latent_bits);
        let o = options(&["--decoder", "32-32"]);
        assert!(o.model.explicit.decoder && o.model.hidden_widths == [32, 32]);
        // `--corner-reads` alone turns them on, `=false` off; either way the rate keeps it.
        let o = options(&["--corner-reads"]);
        assert!(o.model.corner_reads && o.model.explicit.corner_reads);
        let o = options(&["--corner-reads=false"]);
        assert!(!o.model.corner_reads && o.model.explicit.corner_reads);
        assert_eq!(options(&[]).model.explicit, texset_core::options::ExplicitShape::default());
    }
}
