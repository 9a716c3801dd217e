//! `texset bench`: training texels/s per backend and CPU decode texels/s, each the median of
//! timed runs after a warm-up.

use anyhow::Result;
use std::path::PathBuf;
use std::time::Instant;
use texset_core::CompressOptions;
use texset_core::decode::Decoder;
use texset_core::pipeline::{analyse, pack, quantise};
use texset_core::train::{FusedTrainer, Sampler, Schedule, initial_params};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// One material folder as its own set, named by the folder (what every per-set bench reports).
pub(crate) fn load_named(dir: &std::path::Path) -> Result<(String, texset_core::TextureSet)> {
    let (set, _) = texset_core::set::ingest::load_library(std::slice::from_ref(&dir.to_path_buf()))?;
    let name = dir.file_name().map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned());
    Ok((name, set))
}

/// `dirs`, or when none are given the sample folders (an error when there are none either).
pub(crate) fn dirs_or_samples(dirs: Vec<PathBuf>) -> Result<Vec<PathBuf>> {
    if !dirs.is_empty() {
        return Ok(dirs);
    }
    let dirs = crate::sample_folders();
    if dirs.is_empty() {
        anyhow::bail!("no material folders given and no ./sample_textures to bench");
    }
    Ok(dirs)
}

#[derive(serde::Serialize)]
struct Measurement {
    what: String,
    texels_per_sec: f64,
    runs: usize,
    /// Extra figures (FLOP rate against the ceiling, frame time).
    #[serde(skip_serializing_if = "String::is_empty")]
    note: String,
}

/// This CPU's f32 FLOP ceiling estimate: cores × FLOP per cycle per core × clock. FLOP per cycle
/// is 32 with AVX2 + FMA (two 8-lane FMA ports), else 8 (SSE: one 4-lane add and one mul); the
/// clock is the highest `cpu MHz` in /proc/cpuinfo (3 GHz when it cannot be read).
fn flop_ceiling(cores: usize) -> (f64, String) {
    #[cfg(target_arch = "x86_64")]
    let per_cycle = if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") { 32.0 } else { 8.0 };
    #[cfg(not(target_arch = "x86_64"))]
    let per_cycle = 8.0;
    let mhz = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .filter(|l| l.starts_with("cpu MHz"))
                .filter_map(|l| l.split(':').nth(1)?.trim().parse::<f64>().ok())
                .reduce(f64::max)
        })
        .unwrap_or(3000.0);
    let flops = cores as f64 * per_cycle * mhz * 1e6;
    (flops, format!("{cores} cores x {per_cycle} FLOP/cycle x {:.2} GHz = {:.0} GFLOP/s", mhz / 1000.0, flops / 1e9))
}

/// FLOPs of one MLP evaluation (every output) plus the latent fetch, per texel.
fn decode_flops_per_texel(bundle: &texset_core::bundle::Bundle) -> f64 {
    let mlp: usize = bundle.layers.iter().map(|l| 2 * l.inputs * l.outputs).sum();
    // Bilinear fetch: 4 multiply-adds per latent channel; positional encoding not counted.
    let fetch = 8 * bundle.manifest.latent_channels();
    (mlp + fetch) as f64
}

/// A measurement beyond the fused trainer and the CPU decoder, which always run.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Extra {
    /// Train with burn on flex.
    BurnFlex,
    /// Train with burn on wgpu.
    BurnWgpu,
    /// Decode with the WGSL decoder.
    GpuDecode,
}

pub fn run(dirs: Vec<PathBuf>, runs: usize, extras: &[Extra], json: bool) -> Result<()> {
    let (burn, wgpu, gpu_decode) =
        (extras.contains(&Extra::BurnFlex), extras.contains(&Extra::BurnWgpu), extras.contains(&Extra::GpuDecode));
    let dirs = dirs_or_samples(dirs)?;
    let (set, _) = texset_core::set::ingest::load_library(&dirs)?;
    let options = CompressOptions::default();
    let (layout, _) = analyse(&set, &options)?;
    let runs = runs.max(1);
    let steps_per_run = 5u32;
    let mut results = Vec::new();
    let threads = rayon::current_num_threads();

    // Fused CPU trainer.
    {
        let schedule = Schedule::new(&options, &layout);
        let batch = schedule.batch_texels as f64;
        let mut trainer = FusedTrainer::new(Sampler::new(&set, &layout), schedule, initial_params(&set, &layout, 1));
        trainer.run_step();
        let mut times = Vec::new();
        for _ in 0..runs {
            let t = Instant::now();
            for _ in 0..steps_per_run {
                trainer.run_step();
            }
            times.push(f64::from(steps_per_run) * batch / t.elapsed().as_secs_f64());
        }
        results.push(Measurement {
            what: format!("train cpu-fused ({threads} threads, batch {batch})"),
            texels_per_sec: median(times),
            runs,
            note: String::new(),
        });
    }
    // burn backends.
    let mut burn_backends = Vec::new();
    if burn {
        burn_backends.push(texset_core::Backend::Flex);
    }
    if wgpu {
        burn_backends.push(texset_core::Backend::Wgpu);
    }
    for backend in burn_backends {
        let schedule = Schedule::new(&options, &layout);
        let sampler = Sampler::new(&set, &layout);
        let device = texset_core::train::burn::device_for(backend);
        let params = initial_params(&set, &layout, 1);
        let mut trainer = texset_core::train::burn::trainer::BurnTrainer::new(&params, &device, 0.01, 0.004);
        let mut b = texset_core::train::Batch::default();
        let mut rng = texset_core::rng::Rng::new(1, 0, 0);
        sampler.fill(&mut rng, schedule.batch_texels, &mut b);
        trainer.step(&b.uv, &b.mask, &b.target, &b.weight, 1.0, Some(0.05), true);
        let mut times = Vec::new();
        for _ in 0..runs {
            let t = Instant::now();
            for _ in 0..steps_per_run {
                trainer.step(&b.uv, &b.mask, &b.target, &b.weight, 1.0, Some(0.05), true);
            }
            times.push(f64::from(steps_per_run) * schedule.batch_texels as f64 / t.elapsed().as_secs_f64());
        }
        results.push(Measurement {
            what: format!("train burn-{backend:?} (batch {})", schedule.batch_texels),
            texels_per_sec: median(times),
            runs,
            note: String::new(),
        });
    }

    // CPU reference decode of the first material, whole maps, multi- and single-threaded.
    let params = initial_params(&set, &layout, 1);
    let (levels, layers, _) = quantise(&layout, &params);
    let (bundle, _, _) = pack(&set, &layout, levels, layers)?;
    let decoder = Decoder::new(&bundle);
    let texels: f64 = bundle.manifest.materials[0].maps.iter().map(|m| f64::from(m.width) * f64::from(m.height)).fold(0.0, f64::max);
    let decode_once = || -> Result<f64> {
        let t = Instant::now();
        let maps = decoder.decode_material(0)?;
        std::hint::black_box(&maps);
        Ok(texels / t.elapsed().as_secs_f64())
    };
    decode_once()?;
    let times: Vec<f64> = (0..runs).map(|_| decode_once()).collect::<Result<_>>()?;
    let flops_per_texel = decode_flops_per_texel(&bundle);
    let flop_note = |texels_per_sec: f64, cores: usize| {
        let (ceiling, how) = flop_ceiling(cores);
        let achieved = texels_per_sec * flops_per_texel;
        format!("{:.2} GFLOP/s at {flops_per_texel} FLOP/texel = {:.1}% of the ceiling ({how})", achieved / 1e9, 100.0 * achieved / ceiling)
    };
    let multi = median(times);
    results.push(Measurement {
        what: format!("decode cpu whole-material ({threads} threads, texels of all maps per MLP eval)"),
        texels_per_sec: multi,
        runs,
        note: flop_note(multi, threads),
    });
    let single = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    let times: Vec<f64> = single.install(|| (0..runs).map(|_| decode_once()).collect::<Result<_>>())?;
    let one = median(times);
    results.push(Measurement { what: "decode cpu whole-material (1 thread)".into(), texels_per_sec: one, runs, note: flop_note(one, 1) });
    // Random access: one texel at a time through the public API.
    let n = 20_000;
    let mut out = [0.0f32; 4];
    let mut times = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        for i in 0..n {
            let u = (i as f32 * 0.618_034).fract();
            let v = (i as f32 * 0.414_213_5).fract();
            decoder.decode_texel(0, 0, u, v, &mut out)?;
        }
        times.push(f64::from(n) / t.elapsed().as_secs_f64());
    }
    results.push(Measurement {
        what: "decode cpu random-access texel (1 thread, one map)".into(),
        texels_per_sec: median(times),
        runs,
        note: String::new(),
    });

    // GPU decode through the specialised WGSL decoder, after a warm-up, timed by queue sync.
    if gpu_decode {
        if let Some((adapter, device, queue)) = texset_shaders::request_device()? {
            let info = adapter.get_info();
            let device_name = format!("{}, {:?}", info.name, info.backend);
            let gpu = texset_shaders::GpuDecoder::new(&device, &bundle)?;
            let entry = &bundle.manifest.materials[0].maps[0];
            let map_texels = f64::from(entry.width) * f64::from(entry.height);
            let stored = texset_shaders::DecodeMode::Stored;
            gpu.decode_map(&device, &queue, 0, 0, stored)?;
            let mut times = Vec::new();
            for _ in 0..runs {
                let t = Instant::now();
                std::hint::black_box(gpu.decode_map(&device, &queue, 0, 0, stored)?);
                times.push(map_texels / t.elapsed().as_secs_f64());
            }
            results.push(Measurement {
                what: format!("decode gpu whole map incl. read-back ({device_name}; {} ch)", entry.channels),
                texels_per_sec: median(times),
                runs,
                note: String::new(),
            });
            // A 1920x1080 frame of random-access samples of one map (all its channels): the
            // samples stay on the GPU, only the decode is timed (submit to completion).
            let (width, height) = (1920u32, 1080u32);
            let mut rng = texset_core::rng::Rng::new(7, 0, 0);
            let uvs: Vec<[f32; 2]> = (0..width * height).map(|_| [rng.next_f32(), rng.next_f32()]).collect();
            let batch = gpu.upload_samples(&device, &uvs)?;
            gpu.run_samples(&device, &queue, &batch, 0, 0, stored, 0.0, false)?;
            let mut frame_secs = Vec::new();
            for _ in 0..runs {
                let t = Instant::now();
                gpu.run_samples(&device, &queue, &batch, 0, 0, stored, 0.0, false)?;
                frame_secs.push(t.elapsed().as_secs_f64());
            }
            let frame = median(frame_secs);
            results.push(Measurement {
                what: format!("decode gpu random-access 1920x1080 frame ({device_name}; {} ch)", entry.channels),
                texels_per_sec: f64::from(width * height) / frame,
                runs,
                note: format!("{:.2} ms per frame", frame * 1e3),
            });
        } else {
            eprintln!("SKIPPED: no wgpu adapter; GPU decode not measured");
        }
    }

    if json {
        println!("{}", serde_json::to_string_pretty(&results)?);
    } else {
        for r in &results {
            println!("{:<80} {:>12.0} texels/s (median of {})", r.what, r.texels_per_sec, r.runs);
            if !r.note.is_empty() {
                println!("    {}", r.note);
            }
        }
    }
    Ok(())
}
