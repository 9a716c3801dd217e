//! `texset bench shared`: what sharing latents buys (after RTXNTC's `combined_vs_separate.py`).
//! Each folder (or, with `--library`, all of them as one library) is compressed together at a
//! rate; then every texture is compressed alone to the PSNR it has in the combined bundle (rate
//! control, `compress --target-psnr`), and the bench reports Σ separate bits ÷ combined bits.
//! Byte-identical textures (the shoes' shared normal and packed maps) are compressed alone once,
//! and the sum is given both ways: each counted once, and once per material that holds it.
//! `--save` keeps every combined bundle's scores and every texture's result as it finishes; a
//! run given the same file measures again only what is not there with the same options (a whole
//! table takes hours on two cores).

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use texset_core::{
    Cancel, NoProgress, compress,
    decode::Decoder,
    drivers::{RateTarget, RateTrial, batch::sha256_hex, compress_to_psnr},
    eval::evaluate,
    io::{read_regular, write_atomic},
    options::{CompressOptions, Preset, RATE_SHAPES, RateShape},
    set::{Material, Texture, TextureSet, load_library},
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
    /// Keep what is measured here (JSON, written atomically after each bundle) and resume from
    /// it: a combined bundle or a texture alone saved with the same options is not measured again.
    #[arg(long, value_name = "FILE")]
    save: Option<PathBuf>,
    #[command(flatten)]
    json: JsonArg,
}

/// What `--save` keeps.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Saved {
    combined: Vec<SavedCombined>,
    alone: Vec<SavedAlone>,
}

/// A combined bundle's size and scores.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct SavedCombined {
    set: String,
    asked_bits_per_texel: f64,
    /// SHA-256 of the fitted options' fingerprint.
    options_sha256: String,
    bits: u64,
    bits_per_texel: f64,
    pooled_psnr_db: f64,
    /// Each map's PSNR: material, map token, dB.
    maps: Vec<(String, String, f64)>,
}

/// A texture compressed alone to a target.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct SavedAlone {
    /// What its search depends on: the texture's content, the rate it starts from, the target,
    /// the tolerance, the trials and the options ([`SharedArgs::alone_key`]).
    key: String,
    alone_bits: u64,
    alone_psnr_db: f64,
    reached: bool,
    /// The largest bundle of the search that fell short of the target, bits, and its PSNR: with
    /// `alone_bits`, how closely the search bracketed the texture's size at the target (PSNR
    /// grows with the rate up to training's noise). `None`: no trial fell short, or a file saved
    /// before this was kept.
    #[serde(default)]
    below: Option<(u64, f64)>,
}

/// Largest file `--save` resumes from (a whole table's is a few kilobytes).
const MAX_SAVED_BYTES: u64 = 16 << 20;

/// The `--save` file and what it holds.
struct Store<'a> {
    path: Option<&'a Path>,
    saved: Saved,
}

impl<'a> Store<'a> {
    fn open(path: Option<&'a Path>) -> Result<Self> {
        let saved = match path {
            Some(path) if path.exists() => {
                let bytes = read_regular(path, MAX_SAVED_BYTES).with_context(|| format!("reading {}", path.display()))?;
                let saved: Saved = serde_json::from_slice(&bytes)
                    .with_context(|| format!("{}: not a file `bench shared --save` wrote", path.display()))?;
                eprintln!(
                    "resuming: {} combined bundle(s) and {} texture(s) alone in {}; those with this run's options are kept",
                    saved.combined.len(),
                    saved.alone.len(),
                    path.display()
                );
                saved
            }
            _ => Saved::default(),
        };
        Ok(Self { path, saved })
    }

    fn write(&self) -> Result<()> {
        let Some(path) = self.path else { return Ok(()) };
        let text = serde_json::to_string_pretty(&self.saved)?;
        write_atomic(path, text.as_bytes()).with_context(|| format!("writing {}", path.display()))
    }

    fn combined(&self, set: &str, bpp: f64, options_sha256: &str) -> Option<SavedCombined> {
        self.saved
            .combined
            .iter()
            .find(|c| c.set == set && (c.asked_bits_per_texel - bpp).abs() < 1e-9 && c.options_sha256 == options_sha256)
            .cloned()
    }

    fn alone(&self, key: &str) -> Option<SavedAlone> {
        self.saved.alone.iter().find(|a| a.key == key).cloned()
    }
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
    /// The search's largest bundle short of the target, bits, and its PSNR, dB: with
    /// `alone_bits`, how closely the search bracketed the size at the target.
    below: Option<(u64, f64)>,
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
        let mut store = Store::open(self.save.as_deref())?;
        let mut rows = Vec::new();
        for (name, set) in &sets {
            for &bpp in &self.bpp {
                let row = self.measure(name, set, bpp, &mut store)?;
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

    /// The key of a texture's search alone ([`SavedAlone::key`]): with the options before any
    /// rate is fitted, and the shapes of every row of `RATE_SHAPES`, since the rates the search
    /// tries, and so the rows it reads, are not known before it runs.
    fn alone_key(&self, content: &str, bpp: f64, target_db: f64) -> String {
        let options_sha256 = sha256_hex(self.options().fingerprint().as_bytes());
        let rows: Vec<String> = RATE_SHAPES.iter().map(RateShape::fingerprint).collect();
        let rows_sha256 = sha256_hex(rows.join("|").as_bytes());
        format!(
            "{content}|start {bpp}|target {target_db:.6}|tolerance {}|trials {}|options {options_sha256}|rows {rows_sha256}",
            self.tolerance_db, self.trials
        )
    }

    /// The combined bundle at `bpp`: compressed and scored, or as `store` kept it.
    fn combined(&self, name: &str, set: &TextureSet, bpp: f64, store: &mut Store<'_>) -> Result<SavedCombined> {
        let mut options = self.options();
        options.fit_bits_per_texel_for(bpp, set).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
        let options_sha256 = sha256_hex(options.fingerprint().as_bytes());
        if let Some(kept) = store.combined(name, bpp, &options_sha256) {
            eprintln!("{name}: combined at {bpp} bits per texel: kept from the saved run");
            return Ok(kept);
        }
        let combined = compress(set, &options, &NoProgress, &Cancel::new()).with_context(|| format!("{name}: combined at {bpp} bpt"))?;
        let eval = evaluate(set, &Decoder::new(&combined.bundle), false)?;
        let saved = SavedCombined {
            set: name.to_owned(),
            asked_bits_per_texel: bpp,
            options_sha256,
            bits: combined.report.pack.bundle_bytes * 8,
            bits_per_texel: combined.report.pack.bits_per_texel,
            pooled_psnr_db: eval.pooled_psnr_db,
            maps: eval.maps.iter().map(|s| (s.material.clone(), s.map.clone(), s.psnr_db)).collect(),
        };
        eprintln!(
            "{name}: combined at {bpp} bits per texel: {} bits, {:.3} bits per texel, {:.2} dB",
            saved.bits, saved.bits_per_texel, saved.pooled_psnr_db
        );
        store.saved.combined.push(saved.clone());
        store.write()?;
        Ok(saved)
    }

    fn measure(&self, name: &str, set: &TextureSet, bpp: f64, store: &mut Store<'_>) -> Result<SharedRow> {
        let combined = self.combined(name, set, bpp, store)?;
        let combined_bits = combined.bits;
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
        // Channels of the combined bundle's distinct contents: each texture's share of its bits.
        let channels: usize = groups.iter().map(|&(_, m, t, _)| set.materials[m].textures[t].info.channels as usize).sum();
        let mut textures = Vec::new();
        for (content, m, t, copies) in &groups {
            let (m, t, copies) = (*m, *t, *copies);
            let material = &set.materials[m];
            let texture = &material.textures[t];
            let label = format!("{}/{}", material.name, texture.info.kind);
            let target_db = combined
                .maps
                .iter()
                .find(|(m, map, _)| *m == material.name && map == texture.info.kind.token())
                .map(|&(_, _, db)| db)
                .with_context(|| format!("{label}: no score in the combined bundle"))?;
            let start_bpp = alone_start_bpp(bpp, set.texel_count(), texture.texel_count(), texture.info.channels, channels);
            let key = self.alone_key(content, start_bpp, target_db);
            let shown = |a: &SavedAlone, kept: bool| {
                eprintln!(
                    "  {label}{}: {target_db:.2} dB combined; alone {} bits at {:.2} dB{}{}{}",
                    if copies > 1 { format!(" (x{copies})") } else { String::new() },
                    a.alone_bits,
                    a.alone_psnr_db,
                    if a.reached { "" } else { " (target not reached)" },
                    a.below.map_or_else(String::new, |(bits, db)| format!(", {bits} bits at {db:.2} dB below it")),
                    if kept { " (kept from the saved run)" } else { "" }
                );
            };
            let result = if let Some(kept) = store.alone(&key) {
                shown(&kept, true);
                kept
            } else {
                let result = self
                    .alone(material, texture, bpp, start_bpp, target_db, key)
                    .with_context(|| format!("{label}: alone to {target_db:.2} dB"))?;
                shown(&result, false);
                store.saved.alone.push(result.clone());
                store.write()?;
                result
            };
            textures.push(TextureAlone {
                texture: label,
                copies,
                combined_psnr_db: target_db,
                alone_bits: result.alone_bits,
                alone_psnr_db: result.alone_psnr_db,
                reached: result.reached,
                below: result.below,
            });
        }
        let once: u64 = textures.iter().map(|a| a.alone_bits).sum();
        let per_material: u64 = textures.iter().map(|a| a.alone_bits * a.copies as u64).sum();
        Ok(SharedRow {
            set: name.to_owned(),
            asked_bits_per_texel: bpp,
            combined_bits_per_texel: combined.bits_per_texel,
            combined_bits,
            combined_psnr_db: combined.pooled_psnr_db,
            textures,
            ratio_once: once as f64 / combined_bits as f64,
            ratio_per_material: per_material as f64 / combined_bits as f64,
        })
    }

    /// `texture` of `material` alone, compressed to `target_db` by the rate control, starting
    /// at `start_bpp` ([`alone_start_bpp`]) within a range up to four times the combined rate `bpp`.
    fn alone(&self, material: &Material, texture: &Texture, bpp: f64, start_bpp: f64, target_db: f64, key: String) -> Result<SavedAlone> {
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
            // The texture's share of the combined bits is near where it lands alone: doubling
            // or halving from it brackets the target in two or three trials, where the top of
            // the range (four times the rate) would cost the longest training first.
            start_bpp: Some(start_bpp),
            bc_baseline: None,
        };
        // Each trial is a whole compression (minutes): said as it ends, for a bench of hours.
        let said = |t: &RateTrial| {
            eprintln!(
                "    trial: {:.3} bits per texel asked, {:.3} reached, {:.2} dB (target {target_db:.2}), {:.0} s training",
                t.target_bits_per_texel, t.bits_per_texel, t.pooled_psnr_db, t.train_secs
            );
        };
        let (_, report) = compress_to_psnr(&alone, &self.options(), &target, &NoProgress, &Cancel::new(), &said)?;
        let chosen = &report.trials[report.chosen];
        let goal = target_db - self.tolerance_db;
        let below = report.trials.iter().filter(|t| t.pooled_psnr_db < goal).max_by_key(|t| t.bundle_bytes);
        Ok(SavedAlone {
            key,
            alone_bits: chosen.bundle_bytes * 8,
            alone_psnr_db: chosen.pooled_psnr_db,
            reached: report.reached,
            below: below.map(|t| (t.bundle_bytes * 8, t.pooled_psnr_db)),
        })
    }
}

/// Where a texture's search alone starts, bits per its own texel: its channels' share of the
/// combined bundle's bits (`bpp` over the set's `set_texels`), as if each channel of the distinct
/// contents (`channels` in all) cost the same. At 4 bits per texel the maps of the six sets and
/// of the shoes' library landed alone at 0.33–2.4 times this share (docs/benchmarks.md, "bench
/// shared"): two doublings or halvings at most, where a start at the combined rate, 0.09–0.78
/// times theirs, took up to four halvings, each a whole compression.
fn alone_start_bpp(bpp: f64, set_texels: usize, texture_texels: usize, texture_channels: u32, channels: usize) -> f64 {
    let share = f64::from(texture_channels) / channels.max(1) as f64;
    bpp * set_texels as f64 / texture_texels.max(1) as f64 * share
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

#[cfg(test)]
mod tests {
    use super::alone_start_bpp;

    #[test]
    fn a_texture_alone_starts_at_its_channels_share_of_the_combined_bits() {
        let texels = 1024 * 1024;
        // The cabinet at 15: three 3-channel maps of one material, a third each.
        assert!((alone_start_bpp(15.0, texels, texels, 3, 9) - 5.0).abs() < 1e-12);
        // The glass: a 1-channel map of 11 channels in all.
        assert!((alone_start_bpp(4.0, texels, texels, 1, 11) - 4.0 / 11.0).abs() < 1e-12);
        // Three materials as one library, 15 distinct channels: bits per texel of the library's
        // texels, three times one material's, so a map's share is three times as many of its own.
        assert!((alone_start_bpp(4.0, 3 * texels, texels, 3, 15) - 2.4).abs() < 1e-12);
    }
}
