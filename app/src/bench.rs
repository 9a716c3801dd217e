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

fn default_dirs() -> Result<Vec<PathBuf>> {
    let mut dirs: Vec<PathBuf> =
        std::fs::read_dir("sample_textures")?.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect();
    dirs.sort();
    Ok(dirs)
}

#[derive(serde::Serialize)]
struct Measurement {
    what: String,
    texels_per_sec: f64,
    runs: usize,
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
    let dirs = if dirs.is_empty() { default_dirs()? } else { dirs };
    let (set, _) = texset_core::ingest::load_library(&dirs)?;
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
        let device = texset_core::burn_train::device_for(backend);
        let params = initial_params(&set, &layout, 1);
        let mut trainer = texset_core::burn_model::BurnTrainer::new(&params, &device, 0.01, 0.004);
        let mut b = texset_core::train::Batch::default();
        let mut rng = texset_core::train::Rng::new(1, 0, 0);
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
    results.push(Measurement {
        what: format!("decode cpu whole-material ({threads} threads, texels of all maps per MLP eval)"),
        texels_per_sec: median(times),
        runs,
    });
    let single = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    let times: Vec<f64> = single.install(|| (0..runs).map(|_| decode_once()).collect::<Result<_>>())?;
    results.push(Measurement { what: "decode cpu whole-material (1 thread)".into(), texels_per_sec: median(times), runs });
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
    results.push(Measurement { what: "decode cpu random-access texel (1 thread, one map)".into(), texels_per_sec: median(times), runs });

    // GPU whole-map decode through the WGSL decoder, timed to the end of the read-back (queue sync).
    if gpu_decode {
        if let Some((adapter, device, queue)) = texset_shaders::request_device()? {
            let gpu = texset_shaders::GpuDecoder::new(&device, &bundle)?;
            let entry = &bundle.manifest.materials[0].maps[0];
            let map_texels = f64::from(entry.width) * f64::from(entry.height);
            gpu.decode_map(&device, &queue, 0, 0)?;
            let mut times = Vec::new();
            for _ in 0..runs {
                let t = Instant::now();
                std::hint::black_box(gpu.decode_map(&device, &queue, 0, 0)?);
                times.push(map_texels / t.elapsed().as_secs_f64());
            }
            let info = adapter.get_info();
            results.push(Measurement {
                what: format!("decode gpu whole map incl. read-back ({}, {:?}; {} ch)", info.name, info.backend, entry.channels),
                texels_per_sec: median(times),
                runs,
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
        }
    }
    Ok(())
}
