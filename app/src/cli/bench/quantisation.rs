//! `texset bench quantisation`: quantisation-aware training against post-training
//! quantisation, for the latents and for the decoder's weights, at 2, 4 and 8 latent bits; then
//! the decoder's weight formats (int8, fp16, E4M3, MXINT8), each fine-tuned through itself (QAT)
//! and quantised once at the end (PTQ). Each cell is a whole compression of one material folder on
//! the fused CPU trainer (seeded, so a rerun gives the same figures), scored by pooled PSNR of the
//! bundle.

use anyhow::{Context as _, Result};
use std::path::PathBuf;
use texset_core::{
    Cancel, NoProgress, compress,
    decode::Decoder,
    eval::evaluate,
    model::WeightFormat,
    options::{Backend, CompressOptions, ModelConfig, Quantisation, RunOptions, ScheduleConfig},
};

use super::{DirsArg, load_named};
use crate::cli::common::{JsonArg, parse_latent_bits};

// `texset bench quantisation`.
#[derive(clap::Args)]
pub(crate) struct QuantisationArgs {
    #[command(flatten)]
    dirs: DirsArg,
    /// Training steps per compression.
    #[arg(long, default_value_t = 6000)]
    steps: u32,
    /// Latent bit depths of the QAT/PTQ table, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [2, 4, 8], value_parser = parse_latent_bits)]
    bits: Vec<u32>,
    /// Skip the second table (the decoder's weight formats).
    #[arg(long)]
    skip_formats: bool,
    #[command(flatten)]
    json: JsonArg,
}

impl QuantisationArgs {
    pub(crate) fn run(self) -> Result<()> {
        let dirs = self.dirs.or_samples()?;
        run(&dirs, self.steps, &self.bits, !self.skip_formats, self.json.json)
    }
}

/// One compression of the comparison.
#[derive(serde::Serialize)]
struct Cell {
    set: String,
    latent_bits: u32,
    latents: Quantisation,
    weights: Quantisation,
    weight_format: WeightFormat,
    weight_bytes: u64,
    bits_per_texel: f64,
    pooled_psnr_db: f64,
    train_secs: f64,
}

/// The four mode pairs, QAT for both first (the default).
const MODES: [(Quantisation, Quantisation); 4] = [
    (Quantisation::Qat, Quantisation::Qat),
    (Quantisation::Ptq, Quantisation::Qat),
    (Quantisation::Qat, Quantisation::Ptq),
    (Quantisation::Ptq, Quantisation::Ptq),
];

/// Runs the comparison on every folder of `dirs` (each its own set) with `steps` training steps:
/// the four QAT/PTQ pairs at each of `latent_bits`, then (with `formats`) every weight format.
fn run(dirs: &[PathBuf], steps: u32, latent_bits: &[u32], formats: bool, json: bool) -> Result<()> {
    let mut cells = Vec::new();
    if !json {
        println!(
            "| set | latent bits | bits/texel | QAT both | PTQ latents | PTQ weights | PTQ both | QAT − PTQ, latents | QAT − PTQ, weights |"
        );
        println!("|---|---|---|---|---|---|---|---|---|");
    }
    let mut sets = Vec::new();
    for dir in dirs {
        let (name, set) = load_named(dir)?;
        sets.push((dir, name, set));
    }
    let run =
        |(dir, name, set): &(&PathBuf, String, texset_core::set::TextureSet), bits: u32, latents, weights, weight_format| -> Result<Cell> {
            let mut options = CompressOptions {
                model: ModelConfig { weight_format, ..Default::default() },
                schedule: ScheduleConfig { steps, ..Default::default() },
                run: RunOptions { backend: Backend::Cpu, ..Default::default() },
                ..CompressOptions::default()
            };
            for g in &mut options.model.grids {
                g.bits = bits;
            }
            options.schedule.quantisation.latents = latents;
            options.schedule.quantisation.weights = weights;
            let out = compress(set, &options, &NoProgress, &Cancel::new())
                .with_context(|| format!("{}: {bits} bits, {weight_format:?} weights", dir.display()))?;
            let psnr = evaluate(set, &Decoder::new(&out.bundle), false)?.pooled_psnr_db;
            if json {
                eprintln!("{name} {bits} bits, latents {latents:?}, weights {weights:?} in {weight_format:?}: {psnr:.2} dB");
            }
            Ok(Cell {
                set: name.clone(),
                latent_bits: bits,
                latents,
                weights,
                weight_format,
                weight_bytes: out.report.pack.sections.weight_bytes,
                bits_per_texel: out.report.pack.bits_per_texel,
                pooled_psnr_db: psnr,
                train_secs: out.report.train.train_secs,
            })
        };
    for entry in &sets {
        let name = &entry.1;
        for &bits in latent_bits {
            let mut row = Vec::new();
            for (latents, weights) in MODES {
                let cell = run(entry, bits, latents, weights, WeightFormat::Int8)?;
                row.push(cell.pooled_psnr_db);
                cells.push(cell);
            }
            if !json {
                let bpt = cells.last().map_or(0.0, |c| c.bits_per_texel);
                println!(
                    "| {name} | {bits} | {bpt:.2} | {:.2} dB | {:.2} dB | {:.2} dB | {:.2} dB | {:+.2} dB | {:+.2} dB |",
                    row[0],
                    row[1],
                    row[2],
                    row[3],
                    row[0] - row[1],
                    row[0] - row[2]
                );
            }
        }
    }
    if !formats {
        return finish(&cells, json);
    }
    if !json {
        println!();
        println!("| set | weight format | weight bytes | bits/texel | QAT weights | PTQ weights | QAT − PTQ |");
        println!("|---|---|---|---|---|---|---|");
    }
    for entry in &sets {
        for format in WeightFormat::ALL {
            let qat = run(entry, 4, Quantisation::Qat, Quantisation::Qat, format)?;
            let ptq = run(entry, 4, Quantisation::Qat, Quantisation::Ptq, format)?;
            if !json {
                println!(
                    "| {} | {format:?} | {} | {:.3} | {:.2} dB | {:.2} dB | {:+.2} dB |",
                    entry.1,
                    qat.weight_bytes,
                    qat.bits_per_texel,
                    qat.pooled_psnr_db,
                    ptq.pooled_psnr_db,
                    qat.pooled_psnr_db - ptq.pooled_psnr_db
                );
            }
            cells.push(qat);
            cells.push(ptq);
        }
    }
    finish(&cells, json)
}

/// With `--json`, every cell as one array on stdout (the tables went out as they were measured).
fn finish(cells: &[Cell], json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(cells)?);
    }
    Ok(())
}
