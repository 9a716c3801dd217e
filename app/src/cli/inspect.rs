//! `texset inspect`: what a bundle holds (grids, decoder, per-map budgets, duplicates and
//! colour variants).

use anyhow::{Context as _, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use texset_core::{
    bundle::{Bundle, Manifest},
    model::WeightFormat,
    set::MapKind,
};

use super::common::{JsonArg, read_bundle};

// `texset inspect`.
#[derive(clap::Args)]
pub(super) struct InspectArgs {
    /// The bundle.
    bundle: PathBuf,
    /// Also show how each grid's latents fill their levels (with `--json`: the count at every
    /// level, `latent_level_counts`).
    #[arg(long)]
    levels: bool,
    #[command(flatten)]
    json: JsonArg,
}

/// `inspect --json`.
#[derive(Serialize)]
struct InspectJson<'a> {
    bundle_bytes: u64,
    bits_per_texel: f64,
    manifest: &'a Manifest,
    /// With `--levels`: per stored grid, the number of values at each level, lowest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    latent_level_counts: Option<Vec<Vec<u64>>>,
}

impl InspectArgs {
    pub(super) fn run(self) -> Result<()> {
        let bytes = std::fs::metadata(&self.bundle).with_context(|| format!("cannot read {}", self.bundle.display()))?.len();
        let b = read_bundle(&self.bundle)?;
        if self.json.json {
            let bits_per_texel = bytes as f64 * 8.0 / b.texel_count().max(1) as f64;
            let latent_level_counts = self.levels.then(|| b.latent_level_counts());
            JsonArg::print(&InspectJson { bundle_bytes: bytes, bits_per_texel, manifest: &b.manifest, latent_level_counts })
        } else {
            print_text(&self.bundle, bytes, &b);
            if self.levels {
                print_levels(&b);
            }
            Ok(())
        }
    }
}

/// The text form: a line per grid, the decoder, a line per map.
fn print_text(path: &Path, bytes: u64, b: &Bundle) {
    let m = &b.manifest;
    println!(
        "{}: {} bytes, {:.3} bits per texel ({})",
        path.display(),
        bytes,
        bytes as f64 * 8.0 / b.texel_count().max(1) as f64,
        // The file says what made it: escaped, so a bundle cannot send a terminal escape.
        m.producer.escape_debug()
    );
    for (i, g) in m.grids.iter().enumerate() {
        let reads = if g.corners { ", its four corners read as inputs of their own" } else { "" };
        println!("grid {i}: {}x{} cells x {} channels @ {} bits{reads}", g.width, g.height, g.channels, g.bits);
    }
    if m.mip_levels > 1 {
        let sides: Vec<String> =
            m.mip_grids.chunks(m.grids.len().max(1)).map(|level| format!("{}x{}", level[0].width, level[0].height)).collect();
        println!(
            "mip chain: {} levels, {} pyramid levels of {} mip levels each (grid 0 above level 0: {})",
            m.mip_levels,
            m.pyramid_levels(),
            m.mip_group(),
            sides.join(", ")
        );
    }
    let widths: Vec<String> = std::iter::once(m.layers.first().map_or(0, |l| l.inputs))
        .chain(m.layers.iter().map(|l| l.outputs))
        .map(|w| w.to_string())
        .collect();
    let format = match m.layers.first().map(|l| l.format).unwrap_or_default() {
        WeightFormat::Int8 => "int8 weights, per-row scales",
        WeightFormat::Fp16 => "fp16 weights",
        WeightFormat::Fp8E4m3 => "E4M3 weights, per-row scales",
        WeightFormat::MxInt8 => "MXINT8 weights, a power-of-two scale per 32 inputs",
    };
    println!("mlp: {} ({format}, {}), {} positional frequencies", widths.join("-"), m.activation().name(), m.pe_frequencies);
    let total = m.latent_channels();
    // The first map writing each output slice; later maps on the same slice are
    // duplicates stored once.
    let mut owners: BTreeMap<u32, String> = BTreeMap::new();
    for mat in &m.materials {
        println!("material {}", mat.name);
        for map in &mat.maps {
            let name = format!("{}/{}", mat.name, map.info.kind);
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
                map.info.kind.token(),
                map.info.width,
                map.info.height,
                map.info.channels,
                map.info.sample_format,
                map.info.color_space,
                if map.info.kind == MapKind::Normal { format!(" {:?}", map.info.normal_convention) } else { String::new() },
                map.latent_channels.len(),
                total
            );
        }
    }
}

/// Bins a grid's level shares are shown in: every level up to 4 bits, groups of levels above.
const LEVEL_BINS: usize = 16;

/// `--levels`: per grid, the share of its values in each of up to 16 equal bins of its levels,
/// lowest first, and the shares at the two ends of the range (where training clamps).
fn print_levels(b: &Bundle) {
    let counts = b.latent_level_counts();
    let grids_per_level = b.manifest.grids.len().max(1);
    for (i, counts) in counts.iter().enumerate() {
        let total = counts.iter().sum::<u64>().max(1) as f64;
        let per_bin = counts.len().div_ceil(LEVEL_BINS).max(1);
        let shares: Vec<String> =
            counts.chunks(per_bin).map(|bin| format!("{:.1}", 100.0 * bin.iter().sum::<u64>() as f64 / total)).collect();
        let end = |c: Option<&u64>| 100.0 * c.copied().unwrap_or(0) as f64 / total;
        let name = if i < grids_per_level {
            format!("grid {i}")
        } else {
            format!("pyramid level {} grid {}", i / grids_per_level, i % grids_per_level)
        };
        println!(
            "{name} levels ({} in {} bins, % of its values, lowest first): {}; at the ends {:.1} % and {:.1} %",
            counts.len(),
            shares.len(),
            shares.join(" "),
            end(counts.first()),
            end(counts.last())
        );
    }
}
