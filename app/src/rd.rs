//! `texset bench --rd`: rate–distortion of texset's presets against the set block-compressed as
//! engines ship it (BC7/BC5/BC4 "high" and BC1/BC5/BC4 "low", the real encoder in
//! `texset_core::bcn`), per material folder: bits per texel, pooled PSNR of every map and the
//! rendered PSNR of the lit material (`texset::rendered`, 8 lights at 256²). Prints a table (or
//! JSON) and draws both curves into one PNG.

use anyhow::{Context as _, Result};
use std::path::{Path, PathBuf};
use texset::plot::{LegendEntry, Marker, Panel, Series};
use texset::rendered::{RenderedScore, rendered_scores};
use texset_core::bcn::{Profile, baseline_with_values};
use texset_core::bundle::Manifest;
use texset_core::decode::{DecodedMap, Decoder};
use texset_core::eval::{decode_set, score};
use texset_core::metrics::psnr_from_mse;
use texset_core::set::TextureSet;
use texset_core::{Cancel, CompressOptions, NoProgress, Preset, compress};

/// Lights and render size of the rendered PSNR (as `texset eval`).
const LIGHTS: usize = 8;
const RENDER_PX: u32 = 256;

/// One point of the curves.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RdPoint {
    /// Folder name.
    pub set: String,
    /// `texset <preset>`, `BC high` or `BC low`.
    pub method: String,
    /// The rate texset was asked for (`--rd-bpp`), bits per texel; none: the preset's own.
    pub asked_bits_per_texel: Option<f64>,
    /// Bits per texel of the whole set.
    pub bits_per_texel: f64,
    /// PSNR pooled over every channel value of every map, dB.
    pub pooled_psnr_db: f64,
    /// PSNR of the lit renders, pooled over materials and lights, dB.
    pub rendered_psnr_db: f64,
    /// Training time (texset only), seconds.
    pub train_secs: Option<f64>,
}

/// Runs every preset at every rate of `rates_bpp` (none: at the preset's own) and both
/// block-compression profiles on each folder of `dirs` (each its own set); `steps` overrides the
/// presets' step counts (for quick checks); the chart goes to `plot`.
pub fn run(dirs: &[PathBuf], presets: &[Preset], rates_bpp: &[f64], steps: Option<u32>, plot: &Path, json: bool) -> Result<()> {
    anyhow::ensure!(!presets.is_empty(), "--rd needs at least one preset");
    let mut points = Vec::new();
    if !json {
        println!("| set | method | bits/texel | PSNR | rendered PSNR | train s |");
        println!("|---|---|---|---|---|---|");
    }
    let emit = |p: RdPoint, points: &mut Vec<RdPoint>| {
        if json {
            eprintln!(
                "{} {}: {:.3} bits/texel, {:.2} dB, rendered {:.2} dB",
                p.set, p.method, p.bits_per_texel, p.pooled_psnr_db, p.rendered_psnr_db
            );
        } else {
            let secs = p.train_secs.map_or_else(|| "–".to_owned(), |s| format!("{s:.0}"));
            println!(
                "| {} | {} | {:.3} | {:.2} dB | {:.2} dB | {secs} |",
                p.set, p.method, p.bits_per_texel, p.pooled_psnr_db, p.rendered_psnr_db
            );
        }
        points.push(p);
    };
    for dir in dirs {
        let (name, set) = crate::bench::load_named(dir)?;
        let mut manifest: Option<Manifest> = None;
        let rates: Vec<Option<f64>> = if rates_bpp.is_empty() { vec![None] } else { rates_bpp.iter().copied().map(Some).collect() };
        for (&preset, &rate) in presets.iter().flat_map(|p| rates.iter().map(move |r| (p, r))) {
            let mut options = CompressOptions::preset(preset);
            if let Some(steps) = steps {
                options.steps = steps;
            }
            if let Some(bpp) = rate {
                options.fit_bits_per_texel_for(bpp, &set).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
            }
            let out = compress(&set, &options, &NoProgress, &Cancel::new()).with_context(|| format!("{}: {preset:?}", dir.display()))?;
            let decoded = decode_set(&set, &Decoder::new(&out.bundle))?;
            let rendered = rendered_scores(&set, &out.bundle.manifest, &decoded, LIGHTS, RENDER_PX);
            let point = RdPoint {
                set: name.clone(),
                method: format!("texset {}", format!("{preset:?}").to_lowercase()),
                asked_bits_per_texel: rate,
                bits_per_texel: out.report.pack.bits_per_texel,
                pooled_psnr_db: score(&set, &decoded, false).pooled_psnr_db,
                rendered_psnr_db: pooled_rendered(&rendered),
                train_secs: Some(out.report.train.train_secs),
            };
            emit(point, &mut points);
            manifest.get_or_insert(out.bundle.manifest);
        }
        // The renders need the maps' meaning (kinds, colour spaces, ranges): the bundle's manifest
        // describes the same maps.
        let Some(manifest) = manifest else { continue };
        for (profile, method) in [(Profile::High, "BC high"), (Profile::Low, "BC low")] {
            let (baseline, values) = baseline_with_values(&set, profile);
            let decoded = as_decoded(&set, values);
            let rendered = rendered_scores(&set, &manifest, &decoded, LIGHTS, RENDER_PX);
            let point = RdPoint {
                set: name.clone(),
                method: method.to_owned(),
                asked_bits_per_texel: None,
                bits_per_texel: baseline.bits_per_texel,
                pooled_psnr_db: baseline.pooled_psnr_db,
                rendered_psnr_db: pooled_rendered(&rendered),
                train_secs: None,
            };
            emit(point, &mut points);
        }
    }
    let image = chart(&points)?;
    let mut png = Vec::new();
    image.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)?;
    texset_core::fsutil::write_atomic(plot, &png).with_context(|| format!("writing {}", plot.display()))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&points)?);
    }
    eprintln!("wrote {}", plot.display());
    Ok(())
}

/// Round-tripped values (in the set's texture order) as decoded maps, per material.
fn as_decoded(set: &TextureSet, values: Vec<Vec<f32>>) -> Vec<Vec<DecodedMap>> {
    let mut values = values.into_iter();
    set.materials
        .iter()
        .map(|m| {
            m.textures
                .iter()
                .map(|t| DecodedMap { width: t.width, height: t.height, channels: t.channels, values: values.next().unwrap_or_default() })
                .collect()
        })
        .collect()
}

/// Materials' rendered PSNR pooled: every material renders the same lights at the same size, so
/// the pooled error is the mean of their mean squared errors.
fn pooled_rendered(scores: &[RenderedScore]) -> f64 {
    if scores.is_empty() {
        return f64::NAN;
    }
    let mse = scores.iter().map(|s| 10f64.powf(-s.rendered_psnr_db / 10.0)).sum::<f64>() / scores.len() as f64;
    psnr_from_mse(mse)
}

/// Set colours, in order of first appearance.
const PALETTE: [[u8; 3]; 8] =
    [[31, 119, 180], [255, 127, 14], [44, 160, 44], [214, 39, 40], [148, 103, 189], [140, 86, 75], [227, 119, 194], [127, 127, 127]];

/// Two panels (PSNR and rendered PSNR against bits per texel); a colour per set, a marker per
/// method: each texset preset's rates joined by a line (circles), BC high (squares), BC low
/// (triangles).
fn chart(points: &[RdPoint]) -> Result<image::RgbImage> {
    let mut sets: Vec<&str> = Vec::new();
    for p in points {
        if !sets.contains(&p.set.as_str()) {
            sets.push(&p.set);
        }
    }
    let panel = |title: &str, y: fn(&RdPoint) -> f64| {
        let mut series = Vec::new();
        for (i, set) in sets.iter().enumerate() {
            let colour = PALETTE[i % PALETTE.len()];
            let of = |pred: &dyn Fn(&str) -> bool| -> Vec<(f64, f64)> {
                let mut v: Vec<(f64, f64)> =
                    points.iter().filter(|p| p.set == *set && pred(&p.method)).map(|p| (p.bits_per_texel, y(p))).collect();
                v.sort_by(|a, b| a.0.total_cmp(&b.0));
                v
            };
            let mut methods: Vec<&str> =
                points.iter().filter(|p| p.set == *set && p.method.starts_with("texset")).map(|p| p.method.as_str()).collect();
            methods.dedup();
            for method in methods {
                series.push(Series { colour, marker: Marker::Circle, joined: true, points: of(&|m| m == method) });
            }
            series.push(Series { colour, marker: Marker::Square, joined: false, points: of(&|m| m == "BC high") });
            series.push(Series { colour, marker: Marker::Triangle, joined: false, points: of(&|m| m == "BC low") });
        }
        Panel { title: title.to_owned(), x_label: "bits per texel".to_owned(), y_label: "dB".to_owned(), series }
    };
    let panels = [panel("PSNR, every map pooled", |p| p.pooled_psnr_db), panel("Rendered PSNR, 8 lights", |p| p.rendered_psnr_db)];
    let grey = [90, 90, 90];
    let mut legend: Vec<LegendEntry> = sets
        .iter()
        .enumerate()
        .map(|(i, s)| LegendEntry { label: (*s).to_owned(), colour: PALETTE[i % PALETTE.len()], marker: None, line: true })
        .collect();
    legend.push(LegendEntry { label: "texset (a curve per preset)".into(), colour: grey, marker: Some(Marker::Circle), line: true });
    legend.push(LegendEntry { label: "BC7/BC5/BC4 (high)".into(), colour: grey, marker: Some(Marker::Square), line: false });
    legend.push(LegendEntry { label: "BC1/BC5/BC4 (low)".into(), colour: grey, marker: Some(Marker::Triangle), line: false });
    texset::plot::render(&panels, &legend, 560, 420)
}
