//! `texset bench rd`: rate–distortion of texset's presets against the set block-compressed as
//! engines ship it (BC7/BC5/BC4 "high" and BC1/BC5/BC4 "low", the real encoder in
//! texset-core's `eval::bcn`), per material folder: bits per texel, pooled PSNR of every map and the
//! rendered PSNR of the lit material (`texset::rendered`, 8 lights at 256²). Prints a table (or
//! JSON) and draws both curves of every set into one PNG; beneath, per rate, the median and
//! quartiles over the sets beside NTC's (`ntc.rs`). The default rates are NTC's nine. `--save`
//! keeps the points measured so far in a file after each one, and a run given a file that exists
//! resumes: a point saved there with the same options is not measured again. `--from` merges such
//! files (runs of different presets, or one stopped part-way) into one table and chart without
//! training again.

use anyhow::{Context as _, Result};
use std::path::{Path, PathBuf};
use texset::rendered::{RenderedScore, rendered_scores};
use texset_core::{
    Cancel, NoProgress,
    bundle::Manifest,
    compress,
    decode::{DecodedMap, Decoder},
    drivers::batch::sha256_hex,
    eval::{bcn::baseline_with_values, decode_set, psnr_from_mse, score},
    export::bcn::Profile,
    io::{read_regular, write_atomic},
    options::{CompressOptions, Preset},
    set::TextureSet,
};

use super::ntc::{NTC_MATERIALS, NTC_RATES_ARG, NTC_TEST_DATA, ntc_at, quantile};
use super::plot::{DbPoint, LegendEntry, Marker, distinct, psnr_panels};
use super::{DirsArg, load_named};
use crate::cli::common::JsonArg;

// `texset bench rd`.
#[derive(clap::Args)]
pub(crate) struct RdArgs {
    #[command(flatten)]
    dirs: DirsArg,
    /// Presets run, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "fast,default,high")]
    presets: Vec<Preset>,
    /// Rates each preset runs at, bits per texel, comma-separated (default: NTC's nine presets').
    #[arg(long, value_delimiter = ',', default_value = NTC_RATES_ARG)]
    bpp: Vec<f64>,
    /// Training steps of every compression instead of the presets' (quick checks).
    #[arg(long)]
    steps: Option<u32>,
    /// Where the chart goes (PNG).
    #[arg(long, default_value = "rd.png")]
    plot: PathBuf,
    /// Write every point measured so far to this file (JSON) after each one, so a long run
    /// stopped part-way keeps what it measured. If the file exists the run resumes: its points
    /// whose options are this run's are kept, not measured again.
    #[arg(long)]
    save: Option<PathBuf>,
    /// Measure nothing: merge these files (from `--save` or `--json`, comma-separated; a later
    /// file's point for the same set, method and rate wins) into one table and chart.
    #[arg(long, value_delimiter = ',', conflicts_with = "dirs")]
    from: Vec<PathBuf>,
    #[command(flatten)]
    json: JsonArg,
}

impl RdArgs {
    pub(crate) fn run(self) -> Result<()> {
        let json = self.json.json;
        if !self.from.is_empty() {
            return merge(&self.from, &self.plot, json);
        }
        let dirs = self.dirs.or_samples()?;
        run(&dirs, &self.presets, &self.bpp, self.steps, &self.plot, json, self.save.as_deref())
    }
}

/// Lights and render size of the rendered PSNR (as `texset eval`).
pub(super) const LIGHTS: usize = 8;
pub(super) const RENDER_PX: u32 = 256;

/// One point of the curves.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) struct RdPoint {
    /// Folder name.
    pub set: String,
    /// `texset <preset>`, `BC high` or `BC low`.
    pub method: String,
    /// The rate texset was asked for (`--bpp`), bits per texel; none: the preset's own.
    pub asked_bits_per_texel: Option<f64>,
    /// Bits per texel of the whole set.
    pub bits_per_texel: f64,
    /// PSNR pooled over every channel value of every map, dB.
    pub pooled_psnr_db: f64,
    /// PSNR of the lit renders, pooled over materials and lights, dB.
    pub rendered_psnr_db: f64,
    /// Training time (texset only), seconds.
    pub train_secs: Option<f64>,
    /// SHA-256 of the options the point was compressed with (texset only): a resumed run
    /// measures a point again when its options changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options_sha256: Option<String>,
}

impl RdPoint {
    /// Whether this is the point of a sweep for `set`, `method` and the asked rate.
    fn is(&self, set: &str, method: &str, asked_bits_per_texel: Option<f64>) -> bool {
        self.set == set && self.method == method && self.asked_bits_per_texel.map(f64::to_bits) == asked_bits_per_texel.map(f64::to_bits)
    }
}

/// Runs every preset at every rate of `rates_bpp` (none: at the preset's own) and both
/// block-compression profiles on each folder of `dirs` (each its own set); `steps` overrides the
/// presets' step counts (for quick checks); the chart goes to `plot`; with `save`, every point so
/// far is written there (a JSON array, atomically) after each one, beside the points already
/// there, and those (with the same options, for texset's) are kept instead of measured again.
fn run(
    dirs: &[PathBuf],
    presets: &[Preset],
    rates_bpp: &[f64],
    steps: Option<u32>,
    plot: &Path,
    json: bool,
    save: Option<&Path>,
) -> Result<()> {
    anyhow::ensure!(!presets.is_empty(), "bench rd needs at least one preset");
    let saved = match save {
        Some(path) if path.exists() => read_points(path)?,
        _ => Vec::new(),
    };
    if !saved.is_empty() {
        eprintln!(
            "resuming: {} point(s) in {}; those with this run's options are kept",
            saved.len(),
            save.map_or(Path::new(""), |p| p).display()
        );
    }
    // A saved point of the same set, method and rate, made with `options_sha256` (none: a
    // block-compression point, which has no options).
    let kept = |set: &str, method: &str, asked: Option<f64>, options_sha256: Option<&str>| {
        saved.iter().find(|p| p.is(set, method, asked) && p.options_sha256.as_deref() == options_sha256).cloned()
    };
    let mut points = Vec::new();
    print_header(json);
    let emit = |p: RdPoint, points: &mut Vec<RdPoint>| -> Result<()> {
        print_point(&p, json);
        points.push(p);
        if let Some(save) = save {
            // This run's points, then the saved ones it has not reached (other sets or rates, or
            // a sweep stopped part-way): a run over part of a file never narrows it.
            let others = saved.iter().filter(|s| !points.iter().any(|q| q.is(&s.set, &s.method, s.asked_bits_per_texel)));
            let all: Vec<&RdPoint> = points.iter().chain(others).collect();
            let text = serde_json::to_string_pretty(&all)?;
            write_atomic(save, text.as_bytes()).with_context(|| format!("writing {}", save.display()))?;
        }
        Ok(())
    };
    for dir in dirs {
        let (name, set) = load_named(dir)?;
        let mut manifest: Option<Manifest> = None;
        let rates: Vec<Option<f64>> = if rates_bpp.is_empty() { vec![None] } else { rates_bpp.iter().copied().map(Some).collect() };
        for (&preset, &rate) in presets.iter().flat_map(|p| rates.iter().map(move |r| (p, r))) {
            let mut options = CompressOptions::preset(preset);
            if let Some(steps) = steps {
                options.schedule.give_steps(steps);
            }
            if let Some(bpp) = rate {
                options.fit_bits_per_texel_for(bpp, &set).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
            }
            let method = texset_method(preset, steps);
            let options_sha256 = sha256_hex(options.fingerprint().as_bytes());
            if let Some(point) = kept(&name, &method, rate, Some(&options_sha256)) {
                emit(point, &mut points)?;
                continue;
            }
            let out = compress(&set, &options, &NoProgress, &Cancel::new()).with_context(|| format!("{}: {preset:?}", dir.display()))?;
            let decoded = decode_set(&set, &Decoder::new(&out.bundle))?;
            let rendered = rendered_scores(&set, &out.bundle.manifest, &decoded, LIGHTS, RENDER_PX);
            let point = RdPoint {
                set: name.clone(),
                method,
                asked_bits_per_texel: rate,
                bits_per_texel: out.report.pack.bits_per_texel,
                pooled_psnr_db: score(&set, &decoded, false).pooled_psnr_db,
                rendered_psnr_db: pooled_rendered(&rendered),
                train_secs: Some(out.report.train.train_secs),
                options_sha256: Some(options_sha256),
            };
            emit(point, &mut points)?;
            manifest.get_or_insert(out.bundle.manifest);
        }
        // The renders need the maps' meaning (kinds, colour spaces, ranges): the bundle's manifest
        // describes the same maps.
        for (profile, method) in [(Profile::High, "BC high"), (Profile::Low, "BC low")] {
            if let Some(point) = kept(&name, method, None, None) {
                emit(point, &mut points)?;
                continue;
            }
            let described = if let Some(described) = manifest.take() {
                described
            } else {
                // Every texset point was kept: only the manifest is needed, two steps make it.
                let mut two = CompressOptions::preset(Preset::Fast);
                two.schedule.give_steps(2);
                compress(&set, &two, &NoProgress, &Cancel::new())
                    .with_context(|| format!("{}: the maps' manifest", dir.display()))?
                    .bundle
                    .manifest
            };
            let (baseline, values) = baseline_with_values(&set, profile);
            let decoded = as_decoded(&set, values);
            let rendered = rendered_scores(&set, &described, &decoded, LIGHTS, RENDER_PX);
            let point = RdPoint {
                set: name.clone(),
                method: method.to_owned(),
                asked_bits_per_texel: None,
                bits_per_texel: baseline.bits_per_texel,
                pooled_psnr_db: baseline.pooled_psnr_db,
                rendered_psnr_db: pooled_rendered(&rendered),
                train_secs: None,
                options_sha256: None,
            };
            emit(point, &mut points)?;
            manifest = Some(described);
        }
    }
    finish(&points, plot, json)
}

/// Merges the points of `files` (each saved by `--save` or printed by `--json`) into one
/// table and chart: sets in order of first appearance, then texset's presets (fast, default,
/// high) by rate, then BC high and BC low. A point measured again (same set, method and asked
/// rate) in a later file replaces the earlier one.
fn merge(files: &[PathBuf], plot: &Path, json: bool) -> Result<()> {
    anyhow::ensure!(!files.is_empty(), "--from needs at least one file");
    let lists = files.iter().map(|f| read_points(f)).collect::<Result<Vec<_>>>()?;
    let points = merged(lists);
    print_header(json);
    for p in &points {
        print_point(p, json);
    }
    finish(&points, plot, json)
}

/// Largest points file `--from` and a resumed `--save` read (a sweep's is tens of kilobytes).
const MAX_POINTS_FILE_BYTES: u64 = 64 << 20;

/// The points a `--save` or `--json` file holds.
fn read_points(file: &Path) -> Result<Vec<RdPoint>> {
    let bytes = read_regular(file, MAX_POINTS_FILE_BYTES).with_context(|| format!("reading {}", file.display()))?;
    serde_json::from_slice(&bytes)
        .with_context(|| format!("{}: not a list of rate–distortion points (`bench rd --save` writes them)", file.display()))
}

/// The points of `lists` in one list, a later list's point replacing an earlier one of the same
/// set, method and asked rate; sets in order of first appearance, then methods in
/// [`method_rank`] order, then bits per texel.
fn merged(lists: Vec<Vec<RdPoint>>) -> Vec<RdPoint> {
    let mut points: Vec<RdPoint> = Vec::new();
    for p in lists.into_iter().flatten() {
        match points.iter_mut().find(|q| q.is(&p.set, &p.method, p.asked_bits_per_texel)) {
            Some(q) => *q = p,
            None => points.push(p),
        }
    }
    let mut sets: Vec<String> = Vec::new();
    for p in &points {
        if !sets.contains(&p.set) {
            sets.push(p.set.clone());
        }
    }
    let set = |p: &RdPoint| sets.iter().position(|s| *s == p.set);
    points.sort_by(|a, b| {
        (set(a), method_rank(&a.method), &a.method)
            .cmp(&(set(b), method_rank(&b.method), &b.method))
            .then(a.bits_per_texel.total_cmp(&b.bits_per_texel))
    });
    points
}

/// A texset point's method: `texset <preset>`, and the steps where `--steps` overrode the
/// preset's (`texset default, 48000 steps`).
fn texset_method(preset: Preset, steps: Option<u32>) -> String {
    let name = format!("texset {}", format!("{preset:?}").to_lowercase());
    match steps {
        Some(s) => format!("{name}, {s} steps"),
        None => name,
    }
}

/// The table's head (nothing under `--json`).
fn print_header(json: bool) {
    if !json {
        println!("| set | method | bits/texel | PSNR | rendered PSNR | train s | NTC median there |");
        println!("|---|---|---|---|---|---|---|");
    }
}

/// One point: a table row, or under `--json` a progress line on stderr.
fn print_point(p: &RdPoint, json: bool) {
    if json {
        eprintln!(
            "{} {}: {:.3} bits/texel, {:.2} dB, rendered {:.2} dB",
            p.set, p.method, p.bits_per_texel, p.pooled_psnr_db, p.rendered_psnr_db
        );
    } else {
        let secs = p.train_secs.map_or_else(|| "–".to_owned(), |s| format!("{s:.0}"));
        let ntc = match ntc_at(p.bits_per_texel) {
            Some([db, ..]) if p.method.starts_with("texset") => format!("{db:.2} dB ({:+.2})", p.pooled_psnr_db - db),
            _ => "–".to_owned(),
        };
        println!(
            "| {} | {} | {:.3} | {:.2} dB | {:.2} dB | {secs} | {ntc} |",
            p.set, p.method, p.bits_per_texel, p.pooled_psnr_db, p.rendered_psnr_db
        );
    }
}

/// Prints the summary per rate (on stderr under `--json`), draws the chart to `plot` and, under
/// `--json`, prints the points.
fn finish(points: &[RdPoint], plot: &Path, json: bool) -> Result<()> {
    let summary = summary_table(points);
    if json {
        eprint!("{summary}");
    } else {
        print!("{summary}");
    }
    let image = chart(points)?;
    let mut png = Vec::new();
    image.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)?;
    write_atomic(plot, &png).with_context(|| format!("writing {}", plot.display()))?;
    if json {
        println!("{}", serde_json::to_string_pretty(points)?);
    }
    eprintln!("wrote {}", plot.display());
    Ok(())
}

/// Per texset method and asked rate, over the sets that have a point there, in the form of NTC's
/// `TestData`: the median, quartiles and count at or above 40 dB of the pooled PSNR, then how many
/// sets are at or above NTC's median at their own rate, and NTC's figures at the sets' mean rate
/// (of 32 materials).
fn summary_table(points: &[RdPoint]) -> String {
    use std::fmt::Write as _;
    let mut groups: Vec<(&str, f64, Vec<&RdPoint>)> = Vec::new();
    for p in points.iter().filter(|p| p.method.starts_with("texset")) {
        let Some(asked) = p.asked_bits_per_texel else { continue };
        match groups.iter_mut().find(|(m, a, _)| *m == p.method && a.to_bits() == asked.to_bits()) {
            Some((_, _, group)) => group.push(p),
            None => groups.push((&p.method, asked, vec![p])),
        }
    }
    if groups.is_empty() {
        return String::new();
    }
    groups.sort_by(|a, b| (method_rank(a.0), a.0).cmp(&(method_rank(b.0), b.0)).then(a.1.total_cmp(&b.1)));
    let mut out = String::from(
        "\n| method | asked bits/texel | sets | mean bits/texel | median | p25 / p75 | ≥ 40 dB | at or above NTC's median | NTC median | NTC p25 / p75 | NTC ≥ 40 dB |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (method, asked, group) in &groups {
        let psnr: Vec<f64> = group.iter().map(|p| p.pooled_psnr_db).collect();
        let mean_rate = group.iter().map(|p| p.bits_per_texel).sum::<f64>() / group.len() as f64;
        let above = group.iter().filter(|p| ntc_at(p.bits_per_texel).is_some_and(|[median, ..]| p.pooled_psnr_db >= median)).count();
        let ntc = match ntc_at(mean_rate) {
            Some([median, p25, p75]) => {
                // NTC's count at the nearest of its rates (a count does not interpolate).
                let nearest = NTC_TEST_DATA.iter().min_by(|a, b| {
                    (a.bits_per_texel.ln() - mean_rate.ln()).abs().total_cmp(&(b.bits_per_texel.ln() - mean_rate.ln()).abs())
                });
                let count = nearest.map_or_else(String::new, |n| format!("{} of {NTC_MATERIALS} at {}", n.at_least_40db, n.bits_per_texel));
                format!("{median:.2} dB | {p25:.2} / {p75:.2} dB | {count}")
            }
            None => "– | – | –".to_owned(),
        };
        let _ = writeln!(
            out,
            "| {method} | {asked} | {} | {mean_rate:.3} | {:.2} dB | {:.2} / {:.2} dB | {} of {} | {above} of {} | {ntc} |",
            group.len(),
            quantile(&psnr, 0.5),
            quantile(&psnr, 0.25),
            quantile(&psnr, 0.75),
            psnr.iter().filter(|&&db| db >= 40.0).count(),
            group.len(),
            group.len(),
        );
    }
    out
}

/// Round-tripped values (in the set's texture order) as decoded maps, per material.
fn as_decoded(set: &TextureSet, values: Vec<Vec<f32>>) -> Vec<Vec<DecodedMap>> {
    let mut values = values.into_iter();
    set.materials
        .iter()
        .map(|m| {
            m.textures
                .iter()
                .map(|t| DecodedMap {
                    width: t.info.width,
                    height: t.info.height,
                    channels: t.info.channels,
                    values: values.next().unwrap_or_default(),
                })
                .collect()
        })
        .collect()
}

/// Materials' rendered PSNR pooled: every material renders the same lights at the same size, so
/// the pooled error is the mean of their mean squared errors.
pub(super) fn pooled_rendered(scores: &[RenderedScore]) -> f64 {
    if scores.is_empty() {
        return f64::NAN;
    }
    let mse = scores.iter().map(|s| 10f64.powf(-s.rendered_psnr_db / 10.0)).sum::<f64>() / scores.len() as f64;
    psnr_from_mse(mse)
}

/// NTC's median's series in the chart (NTC publishes no lit PSNR).
const NTC_METHOD: &str = "NTC median (32 materials)";

/// The order of methods in tables, charts and legends: texset's presets from the fewest steps,
/// then texset at other step counts (`--steps`), NTC's median, the block-compression profiles,
/// then anything else (a renamed series, e.g. the classic default).
fn method_rank(method: &str) -> usize {
    let known = ["texset fast", "texset default", "texset high"];
    if let Some(rank) = known.iter().position(|m| *m == method) {
        return rank;
    }
    if method.starts_with("texset") && method.ends_with(" steps") {
        return 3;
    }
    [NTC_METHOD, "BC high", "BC low"].iter().position(|m| *m == method).map_or(7, |rank| 4 + rank)
}

/// Method colours, in [`method_rank`] order (texset's presets blue, orange, green, other step
/// counts brown; NTC's median black; BC high red; BC low purple; anything else grey).
const PALETTE: [[u8; 3]; 8] =
    [[31, 119, 180], [255, 127, 14], [44, 160, 44], [140, 86, 75], [20, 20, 20], [214, 39, 40], [148, 103, 189], [127, 127, 127]];

/// Colours of the second and later series that share a rank (several step counts, several
/// renamed series), in the chart's method order: pink, olive, cyan, then a darker brown and grey.
const MORE_COLOURS: [[u8; 3]; 5] = [[227, 119, 194], [188, 189, 34], [23, 190, 207], [90, 55, 48], [70, 70, 70]];

/// Each method's colour: its rank's, or for a second method of the same rank one of
/// [`MORE_COLOURS`], so that no two series of a chart share a colour. `methods` in chart order.
fn method_colours<'a>(methods: &[&'a str]) -> std::collections::HashMap<&'a str, [u8; 3]> {
    let mut taken = std::collections::HashSet::new();
    let mut more = MORE_COLOURS.iter().cycle();
    methods
        .iter()
        .map(|&m| {
            let rank = method_rank(m);
            let colour = if taken.insert(rank) { PALETTE[rank] } else { more.next().copied().unwrap_or(PALETTE[rank]) };
            (m, colour)
        })
        .collect()
}

/// Two panels per set (PSNR and rendered PSNR against bits per texel), two sets to a row; a
/// colour per method: each texset preset's rates joined by a line (circles), BC high (squares),
/// BC low (triangles).
fn chart(points: &[RdPoint]) -> Result<image::RgbImage> {
    let sets = distinct(points.iter().map(|p| p.set.as_str()));
    // NTC's median beside every set that has a texset point (its lit panel: none).
    let reference: Vec<RdPoint> = sets
        .iter()
        .filter(|&&set| points.iter().any(|p| p.set == set && p.method.starts_with("texset")))
        .flat_map(|&set| {
            NTC_TEST_DATA.iter().map(move |r| RdPoint {
                set: set.to_owned(),
                method: NTC_METHOD.to_owned(),
                asked_bits_per_texel: None,
                bits_per_texel: r.bits_per_texel,
                pooled_psnr_db: r.median_db,
                rendered_psnr_db: f64::NAN,
                train_secs: None,
                options_sha256: None,
            })
        })
        .collect();
    let points: Vec<&RdPoint> = points.iter().chain(&reference).collect();
    let mut methods = distinct(points.iter().map(|p| p.method.as_str()));
    methods.sort_by_key(|m| method_rank(m));
    let colours = method_colours(&methods);
    let style = |method: &str| {
        let marker = match method {
            "BC high" => Marker::Square,
            "BC low" => Marker::Triangle,
            _ => Marker::Circle,
        };
        (colours.get(method).copied().unwrap_or(PALETTE[method_rank(method)]), marker, marker == Marker::Circle)
    };
    let db: Vec<DbPoint<'_>> = points
        .iter()
        .map(|p| DbPoint {
            set: &p.set,
            series: &p.method,
            x: p.bits_per_texel,
            psnr_db: p.pooled_psnr_db,
            rendered_psnr_db: p.rendered_psnr_db,
        })
        .collect();
    let panels = psnr_panels(&db, &methods, "bits per texel", style);
    let legend: Vec<LegendEntry> = methods
        .iter()
        .map(|&method| {
            let (colour, marker, line) = style(method);
            let label = match method {
                "BC high" => "BC7/BC5/BC4 (high)".to_owned(),
                "BC low" => "BC1/BC5/BC4 (low)".to_owned(),
                m => m.to_owned(),
            };
            LegendEntry { label, colour, marker: Some(marker), line }
        })
        .collect();
    let per_row = if sets.len() > 1 { 4 } else { 2 };
    super::plot::render_grid(&panels, per_row, &legend, 560, 420)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn point(set: &str, method: &str, asked: Option<f64>, bits_per_texel: f64, psnr: f64) -> RdPoint {
        RdPoint {
            set: set.into(),
            method: method.into(),
            asked_bits_per_texel: asked,
            bits_per_texel,
            pooled_psnr_db: psnr,
            rendered_psnr_db: psnr,
            train_secs: None,
            options_sha256: None,
        }
    }

    #[test]
    fn merging_orders_sets_methods_and_rates_and_a_later_file_wins() {
        let first = vec![
            point("b", "texset default", Some(4.0), 3.9, 30.0),
            point("b", "texset default", Some(2.0), 1.9, 28.0),
            point("b", "BC high", None, 24.0, 40.0),
            point("a", "texset default", Some(2.0), 1.9, 35.0),
        ];
        let second = vec![
            point("b", "texset fast", Some(2.0), 1.9, 27.0),
            point("b", "BC high", None, 24.0, 40.0),
            point("b", "texset default", Some(4.0), 3.9, 31.0),
        ];
        let got = merged(vec![first, second]);
        let rows: Vec<(&str, &str, f64, f64)> =
            got.iter().map(|p| (p.set.as_str(), p.method.as_str(), p.bits_per_texel, p.pooled_psnr_db)).collect();
        assert_eq!(
            rows,
            [
                ("b", "texset fast", 1.9, 27.0),
                ("b", "texset default", 1.9, 28.0),
                ("b", "texset default", 3.9, 31.0),
                ("b", "BC high", 24.0, 40.0),
                ("a", "texset default", 1.9, 35.0),
            ]
        );
    }

    #[test]
    fn the_chart_has_two_panels_per_set_two_sets_to_a_row_and_a_colour_per_method() {
        let points = vec![
            point("a", "texset fast", Some(2.0), 1.9, 30.0),
            point("a", "texset fast", Some(4.0), 3.9, 32.0),
            point("a", "texset high", Some(4.0), 3.9, 34.0),
            point("b", "BC low", None, 12.0, 33.0),
            point("c", "BC high", None, 24.0, 40.0),
        ];
        let chart = chart(&points).unwrap();
        // Three sets: six panels in rows of four (560 × 420 each), the legend beneath.
        assert_eq!(chart.width(), 4 * 560);
        assert!(chart.height() > 2 * 420);
        let count = |c: [u8; 3]| chart.pixels().filter(|p| p.0 == c).count();
        // fast, high, NTC's median (beside set a, which has texset points), BC high, BC low.
        for rank in [0, 2, 4, 5, 6] {
            assert!(count(PALETTE[rank]) > 50, "method colour {rank}: {}", count(PALETTE[rank]));
        }
        // No default-preset point, none at other steps: their colours are not drawn, not even in
        // the legend.
        assert_eq!((count(PALETTE[1]), count(PALETTE[3])), (0, 0));
    }

    /// Two series of one rank (two step counts, two renamed series) get colours of their own.
    #[test]
    fn series_of_one_rank_get_colours_of_their_own() {
        let methods = ["texset default", "texset default, 48000 steps", "texset default, 96000 steps", "texset a", "texset b"];
        let colours = method_colours(&methods);
        let distinct: std::collections::HashSet<[u8; 3]> = colours.values().copied().collect();
        assert_eq!(distinct.len(), methods.len(), "{colours:?}");
        assert_eq!(colours["texset default, 48000 steps"], PALETTE[3]);
        assert_eq!(colours["texset a"], PALETTE[7]);
    }

    /// Per rate: the sets' median, quartiles and count at or above 40 dB, how many are at or above
    /// NTC's median at their own rate, and NTC's figures beside them.
    #[test]
    fn the_summary_gives_each_rates_quartiles_beside_ntcs() {
        let points = vec![
            point("a", "texset default", Some(3.75), 3.75, 37.0),
            point("b", "texset default", Some(3.75), 3.75, 39.0),
            point("c", "texset default", Some(3.75), 3.75, 41.0),
            point("a", "texset default", Some(10.0), 10.0, 45.0),
            point("a", "BC high", None, 24.0, 40.0),
        ];
        let table = summary_table(&points);
        let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("| texset")).collect();
        assert_eq!(rows.len(), 2, "{table}");
        // NTC at 3.75: median 38.5, quartiles 34.4 / 43.6, 10 of 32 at or above 40 dB.
        assert_eq!(
            rows[0],
            "| texset default | 3.75 | 3 | 3.750 | 39.00 dB | 38.00 / 40.00 dB | 1 of 3 | 2 of 3 | 38.50 dB | 34.40 / 43.60 dB | 10 of 32 at 3.75 |"
        );
        assert!(
            rows[1].starts_with("| texset default | 10 | 1 | 10.000 | 45.00 dB | 45.00 / 45.00 dB | 1 of 1 | 1 of 1 | 44.00 dB"),
            "{}",
            rows[1]
        );
        assert_eq!(summary_table(&points[4..]), "");
    }

    #[test]
    fn steps_name_their_series() {
        assert_eq!(texset_method(Preset::Default, None), "texset default");
        assert_eq!(texset_method(Preset::Default, Some(48_000)), "texset default, 48000 steps");
        assert_eq!(method_rank("texset default, 48000 steps"), 3);
        assert!(method_rank(NTC_METHOD) < method_rank("BC high"));
        assert_eq!(method_rank("texset classic default"), 7);
    }
}
