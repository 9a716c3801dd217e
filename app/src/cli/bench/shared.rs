//! `texset bench shared`: what sharing latents buys (after RTXNTC's `combined_vs_separate.py`).
//! Each folder (or, with `--library`, all of them as one library) is compressed together at a
//! rate; then every texture is compressed alone to the PSNR it has in the combined bundle (rate
//! control, `compress --target-psnr`), and the bench reports Σ separate bits ÷ combined bits.
//! Byte-identical textures (the shoes' shared normal and packed maps) are compressed alone once,
//! and the sum is given both ways: each counted once, and once per material that holds it.

use anyhow::{Context as _, Result};
use texset_core::{
    Cancel, NoProgress, compress,
    decode::Decoder,
    drivers::{RateTarget, batch::sha256_hex, compress_to_psnr},
    eval::evaluate,
    options::{CompressOptions, Preset},
    set::{Material, TextureSet, load_library},
};

use super::{DirsArg, load_named};
use crate::cli::common::JsonArg;

// `texset bench shared`.
#[derive(clap::Args)]
pub(crate) struct SharedArgs {
    #[command(flatten)]
    dirs: DirsArg,
    /// The folders are one library (each its own set otherwise).
    #[arg(long)]
    library: bool,
    /// Rates of the combined bundle, bits per texel, comma-separated (RTXNTC's script: 4 and 15).
    #[arg(long, value_delimiter = ',', default_value = "4,15")]
    bpp: Vec<f64>,
    /// The preset every compression uses.
    #[arg(long, value_enum, default_value_t = Preset::Default)]
    preset: Preset,
    /// Training steps of every compression instead of the preset's (quick checks).
    #[arg(long)]
    steps: Option<u32>,
    /// How far a texture alone may fall short of its combined PSNR, dB.
    #[arg(long, default_value_t = 0.05)]
    tolerance_db: f64,
    /// Rate-control trials per texture alone (each a whole compression).
    #[arg(long, default_value_t = 10)]
    trials: usize,
    #[command(flatten)]
    json: JsonArg,
}

/// One texture compressed alone to its combined PSNR.
#[derive(Debug, serde::Serialize)]
struct TextureAlone {
    /// `material/kind`.
    texture: String,
    /// Materials holding a byte-identical copy (itself included).
    copies: usize,
    /// Its PSNR in the combined bundle, dB: the target.
    combined_psnr_db: f64,
    /// The smallest bundle of its own reaching the target, bits (the whole file).
    alone_bits: u64,
    /// That bundle's PSNR, dB.
    alone_psnr_db: f64,
    /// Whether it reached the target within the tolerance.
    reached: bool,
}

/// One combined bundle against its textures alone.
#[derive(Debug, serde::Serialize)]
struct SharedRow {
    set: String,
    asked_bits_per_texel: f64,
    combined_bits_per_texel: f64,
    /// The combined bundle, bits (the whole file).
    combined_bits: u64,
    combined_psnr_db: f64,
    textures: Vec<TextureAlone>,
    /// Σ bits alone ÷ combined bits, each identical texture counted once.
    ratio_once: f64,
    /// The same, an identical texture counted once per material holding it.
    ratio_per_material: f64,
}

impl SharedArgs {
    pub(crate) fn run(self) -> Result<()> {
        let dirs = self.dirs.clone().or_samples()?;
        let sets: Vec<(String, TextureSet)> = if self.library {
            let (set, _) = load_library(&dirs)?;
            let name = set.materials.iter().map(|m| m.name.as_str()).collect::<Vec<_>>().join(" + ");
            vec![(name, set)]
        } else {
            dirs.iter().map(|d| load_named(d)).collect::<Result<_>>()?
        };
        let mut rows = Vec::new();
        for (name, set) in &sets {
            for &bpp in &self.bpp {
                let row = self.measure(name, set, bpp)?;
                if !self.json.json {
                    print_row(&row);
                }
                rows.push(row);
            }
        }
        if self.json.json {
            return JsonArg::print(&rows);
        }
        Ok(())
    }

    /// The preset's options, with `--steps`.
    fn options(&self) -> CompressOptions {
        let mut options = CompressOptions::preset(self.preset);
        if let Some(steps) = self.steps {
            options.schedule.give_steps(steps);
        }
        options
    }

    fn measure(&self, name: &str, set: &TextureSet, bpp: f64) -> Result<SharedRow> {
        let mut options = self.options();
        options.fit_bits_per_texel_for(bpp, set).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
        let combined = compress(set, &options, &NoProgress, &Cancel::new()).with_context(|| format!("{name}: combined at {bpp} bpt"))?;
        let eval = evaluate(set, &Decoder::new(&combined.bundle), false)?;
        let combined_bits = combined.report.pack.bundle_bytes * 8;
        eprintln!(
            "{name}: combined at {bpp} bits per texel: {combined_bits} bits, {:.3} bits per texel, {:.2} dB",
            combined.report.pack.bits_per_texel, eval.pooled_psnr_db
        );
        // Textures by content: the first of each identical group is compressed alone.
        let mut groups: Vec<(String, usize, usize, usize)> = Vec::new(); // (hash, material, texture, copies)
        for (m, material) in set.materials.iter().enumerate() {
            for (t, texture) in material.textures.iter().enumerate() {
                let bytes: Vec<u8> = texture.texels.iter().flat_map(|v| v.to_le_bytes()).collect();
                let key = format!(
                    "{}:{}x{}x{}:{}",
                    texture.info.kind,
                    texture.info.width,
                    texture.info.height,
                    texture.info.channels,
                    sha256_hex(&bytes)
                );
                match groups.iter_mut().find(|g| g.0 == key) {
                    Some(g) => g.3 += 1,
                    None => groups.push((key, m, t, 1)),
                }
            }
        }
        let mut textures = Vec::new();
        for &(_, m, t, copies) in &groups {
            let material = &set.materials[m];
            let texture = &material.textures[t];
            let label = format!("{}/{}", material.name, texture.info.kind);
            let target_db = eval
                .maps
                .iter()
                .find(|s| s.material == material.name && s.map == texture.info.kind.token())
                .map(|s| s.psnr_db)
                .with_context(|| format!("{label}: no score in the combined bundle"))?;
            let alone = TextureSet {
                materials: vec![Material {
                    name: material.name.clone(),
                    source_dir: material.source_dir.clone(),
                    textures: vec![texture.clone()],
                    constants: material.constants,
                }],
            };
            let target = RateTarget {
                psnr_db: target_db,
                tolerance_db: self.tolerance_db,
                min_bpp: 0.05,
                max_bpp: (4.0 * bpp).min(64.0),
                trials: self.trials,
                // The combined rate is where a texture alone usually lands: doubling or
                // halving from it brackets the target in two or three trials, where the top of
                // the range (four times the rate) would cost the longest training first.
                start_bpp: Some(bpp),
                bc_baseline: None,
            };
            let (_, report) = compress_to_psnr(&alone, &self.options(), &target, &NoProgress, &Cancel::new(), &|_| {})
                .with_context(|| format!("{label}: alone to {target_db:.2} dB"))?;
            let chosen = &report.trials[report.chosen];
            eprintln!(
                "  {label}{}: {target_db:.2} dB combined; alone {} bits at {:.2} dB{}",
                if copies > 1 { format!(" (x{copies})") } else { String::new() },
                chosen.bundle_bytes * 8,
                chosen.pooled_psnr_db,
                if report.reached { "" } else { " (target not reached)" }
            );
            textures.push(TextureAlone {
                texture: label,
                copies,
                combined_psnr_db: target_db,
                alone_bits: chosen.bundle_bytes * 8,
                alone_psnr_db: chosen.pooled_psnr_db,
                reached: report.reached,
            });
        }
        let once: u64 = textures.iter().map(|a| a.alone_bits).sum();
        let per_material: u64 = textures.iter().map(|a| a.alone_bits * a.copies as u64).sum();
        Ok(SharedRow {
            set: name.to_owned(),
            asked_bits_per_texel: bpp,
            combined_bits_per_texel: combined.report.pack.bits_per_texel,
            combined_bits,
            combined_psnr_db: eval.pooled_psnr_db,
            textures,
            ratio_once: once as f64 / combined_bits as f64,
            ratio_per_material: per_material as f64 / combined_bits as f64,
        })
    }
}

/// One row per texture, then the ratios.
fn print_row(row: &SharedRow) {
    println!(
        "| {} | {} bpt asked, {:.3} | combined {} bits, {:.2} dB | Σ alone ÷ combined: {:.3} (identical counted once), {:.3} (per material) |",
        row.set,
        row.asked_bits_per_texel,
        row.combined_bits_per_texel,
        row.combined_bits,
        row.combined_psnr_db,
        row.ratio_once,
        row.ratio_per_material
    );
    for a in &row.textures {
        println!(
            "|   {} (x{}) | target {:.2} dB | alone {} bits, {:.2} dB{} |",
            a.texture,
            a.copies,
            a.combined_psnr_db,
            a.alone_bits,
            a.alone_psnr_db,
            if a.reached { "" } else { ", target not reached" }
        );
    }
}
