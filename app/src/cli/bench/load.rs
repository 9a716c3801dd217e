//! `texset bench load`: memory under sustained work, the way a build farm and a game run
//! texset. Compresses many materials one after another in this one process, then decodes random
//! texels through the runtime API (`Bundle` + `Decoder`) at a fixed rate for a while, and
//! reports the resident set size (RSS) at the start and the end of each part. A leak shows as RSS
//! that grows with the work done.

use anyhow::{Context, Result};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use texset_core::{
    Cancel, NoProgress, compress,
    decode::Decoder,
    options::{CompressOptions, ScheduleConfig},
    rng::Rng,
    set::load_library,
};

use crate::cli::common::JsonArg;

// `texset bench load`.
#[derive(clap::Args)]
pub(crate) struct LoadArgs {
    /// Materials compressed (generated samples).
    #[arg(long, default_value_t = 50)]
    materials: usize,
    /// Training steps per material.
    #[arg(long, default_value_t = 300)]
    steps: u32,
    /// Seconds of decoding.
    #[arg(long, default_value_t = 600.0)]
    decode_secs: f64,
    /// Random texels decoded per second.
    #[arg(long, default_value_t = 10_000)]
    texels_per_sec: u32,
    #[command(flatten)]
    json: JsonArg,
}

impl LoadArgs {
    pub(crate) fn run(self) -> Result<()> {
        let options = LoadOptions {
            materials: self.materials,
            steps: self.steps,
            size_px: 64,
            decode_secs: self.decode_secs,
            texels_per_sec: self.texels_per_sec,
        };
        run(&options, self.json.json)
    }
}

/// What to run.
pub(super) struct LoadOptions {
    /// Materials to compress (made by the sample generator, five per seed).
    pub materials: usize,
    /// Training steps per material.
    pub steps: u32,
    /// Map size of the generated materials, texels a side.
    pub size_px: u32,
    /// How long to decode, seconds.
    pub decode_secs: f64,
    /// Random texels decoded per second.
    pub texels_per_sec: u32,
}

/// This process's resident set, MiB (Linux `/proc/self/status`; `None` elsewhere).
fn rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: f64 = status.lines().find(|l| l.starts_with("VmRSS:"))?.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn max_mib(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn mib(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.1} MiB"))
}

#[derive(serde::Serialize)]
struct LoadReport {
    materials: usize,
    steps_per_material: u32,
    compress_secs: f64,
    rss_before_compress_mib: Option<f64>,
    rss_after_first_material_mib: Option<f64>,
    rss_after_last_material_mib: Option<f64>,
    rss_max_during_compress_mib: Option<f64>,
    decode_secs: f64,
    texels_decoded: u64,
    decode_texels_per_sec_target: u32,
    rss_decode_start_mib: Option<f64>,
    rss_decode_end_mib: Option<f64>,
    rss_decode_max_mib: Option<f64>,
}

/// Runs the load test and prints what it measured.
fn run(options: &LoadOptions, json: bool) -> Result<()> {
    let work = std::env::temp_dir().join(format!("texset-load-{}", std::process::id()));
    let result = run_in(options, &work, json);
    let _ = std::fs::remove_dir_all(&work);
    result
}

fn run_in(options: &LoadOptions, work: &std::path::Path, json: bool) -> Result<()> {
    let mut folders: Vec<PathBuf> = Vec::new();
    for seed in 0.. {
        if folders.len() >= options.materials {
            break;
        }
        let dir = work.join(format!("seed{seed}"));
        texset::synth::write_sample_textures(&dir, options.size_px, seed)?;
        let mut made: Vec<PathBuf> = std::fs::read_dir(&dir)?.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect();
        made.sort();
        folders.extend(made);
    }
    folders.truncate(options.materials);

    let compress_options =
        CompressOptions { schedule: ScheduleConfig { steps: options.steps, ..Default::default() }, ..CompressOptions::default() };
    let rss_before = rss_mib();
    let mut rss_first = None;
    let mut rss_max = rss_before;
    let start = Instant::now();
    let mut last_bundle = None;
    for (i, folder) in folders.iter().enumerate() {
        let (set, _) = load_library(std::slice::from_ref(folder))?;
        let compressed =
            compress(&set, &compress_options, &NoProgress, &Cancel::new()).with_context(|| format!("compressing {}", folder.display()))?;
        let path = work.join("bundle.texset");
        compressed.bundle.write(&path)?;
        last_bundle = Some(path);
        let rss = rss_mib();
        rss_max = max_mib(rss_max, rss);
        if i == 0 {
            rss_first = rss;
        }
        if !json && (i + 1).is_multiple_of(10) {
            eprintln!("  {} materials compressed, RSS {}", i + 1, mib(rss));
        }
    }
    let compress_secs = start.elapsed().as_secs_f64();
    let rss_last = rss_mib();

    let path = last_bundle.context("no material to compress (--materials 0)")?;
    let bundle = texset_core::bundle::Bundle::read(&path)?;
    let decoder = Decoder::new(&bundle);
    let maps: Vec<(usize, usize)> =
        bundle.manifest.materials.iter().enumerate().flat_map(|(m, mat)| (0..mat.maps.len()).map(move |k| (m, k))).collect();
    let rss_decode_start = rss_mib();
    let mut rss_decode_max = rss_decode_start;
    let mut rng = Rng::new(7, 0, 0);
    let mut texel = [0.0_f32; 4];
    let mut decoded = 0u64;
    let mut checksum = 0.0_f64;
    let start = Instant::now();
    let mut second = 0u64;
    while start.elapsed().as_secs_f64() < options.decode_secs {
        for _ in 0..options.texels_per_sec {
            let (m, k) = maps[rng.below(maps.len() as u64) as usize];
            decoder.decode_texel(m, k, rng.next_f32(), rng.next_f32(), &mut texel)?;
            checksum += f64::from(texel[0]);
            decoded += 1;
        }
        second += 1;
        rss_decode_max = max_mib(rss_decode_max, rss_mib());
        if !json && second.is_multiple_of(60) {
            eprintln!("  {second} s: {decoded} texels decoded, RSS {}", mib(rss_mib()));
        }
        // Hold the rate: sleep to the next whole second.
        let next = Duration::from_secs(second);
        if let Some(wait) = next.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    let decode_secs = start.elapsed().as_secs_f64();
    let rss_decode_end = rss_mib();
    let report = LoadReport {
        materials: folders.len(),
        steps_per_material: options.steps,
        compress_secs,
        rss_before_compress_mib: rss_before,
        rss_after_first_material_mib: rss_first,
        rss_after_last_material_mib: rss_last,
        rss_max_during_compress_mib: rss_max,
        decode_secs,
        texels_decoded: decoded,
        decode_texels_per_sec_target: options.texels_per_sec,
        rss_decode_start_mib: rss_decode_start,
        rss_decode_end_mib: rss_decode_end,
        rss_decode_max_mib: rss_decode_max,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "compress: {} materials ({}x{} maps, {} steps each) in {:.1} s; RSS {} before, {} after the first, {} after the last (max {})",
            report.materials,
            options.size_px,
            options.size_px,
            options.steps,
            compress_secs,
            mib(rss_before),
            mib(rss_first),
            mib(rss_last),
            mib(rss_max)
        );
        println!(
            "decode: {decoded} random texels in {decode_secs:.0} s ({} a second) through Decoder::decode_texel; RSS {} at the start, {} at the end (max {}); checksum {checksum:.3}",
            options.texels_per_sec,
            mib(rss_decode_start),
            mib(rss_decode_end),
            mib(rss_decode_max)
        );
    }
    Ok(())
}
