//! `texset bench decode`: decode texels/s of the CPU reference decoder (whole materials, multi-
//! and single-threaded, and one texel at a time) and, when asked, the WGSL decoder on a GPU; each
//! the median of timed runs after a warm-up. The bundle is the untrained model of the folders'
//! shape: decode cost does not depend on training.

use anyhow::{Context as _, Result};
use std::time::Instant;
use texset_core::{analyse, decode::Decoder, options::CompressOptions, pack, quantise, set::load_library, train::initial_params};

use super::{DirsArg, Measurement, TimingArgs, flop_ceiling, median, print_measurements};

// `texset bench decode`.
#[derive(clap::Args)]
pub(crate) struct DecodeBenchArgs {
    #[command(flatten)]
    dirs: DirsArg,
    /// Include GPU decode through the WGSL decoder (any adapter, lavapipe included).
    #[arg(long)]
    gpu: bool,
    /// With `--gpu`: the code shape of the decoder's hidden layers, `vec4-rows` or `scalar`,
    /// instead of the adapter's (`vec4-rows` on a hardware GPU, `scalar` on one the CPU emulates).
    #[arg(long, requires = "gpu", value_name = "SHAPE", value_parser = super::parse_shape)]
    mlp_shape: Option<texset_core::model::wgsl::MlpShape>,
    /// With `--gpu`: the MLP's arithmetic, `f32`, `f16` (an adapter with `SHADER_F16`) or `int8`
    /// (packed int8 dot products), instead of the adapter's.
    #[arg(long, requires = "gpu", value_enum)]
    precision: Option<texset_core::model::wgsl::MlpPrecision>,
    /// The decoder's hidden widths, e.g. `64-48-32` (the default before decision 034), instead of
    /// the default's `64-64-64`: decode cost depends on them, so compare builds at equal widths.
    #[arg(long, value_name = "W-W-W")]
    decoder: Option<String>,
    /// The decoder reads grid 0's four weighted corners (`compress --corner-reads`): a wider
    /// first layer, the same latent reads.
    #[arg(long)]
    corner_reads: bool,
    #[command(flatten)]
    timing: TimingArgs,
}

impl DecodeBenchArgs {
    pub(crate) fn run(self) -> Result<()> {
        let dirs = self.dirs.or_samples()?;
        let (set, _) = load_library(&dirs)?;
        let mut options = CompressOptions::default();
        if let Some(text) = &self.decoder {
            options.model.hidden_widths = crate::cli::options::parse_decoder_widths(text)?;
        }
        options.model.corner_reads = self.corner_reads;
        let (layout, _) = analyse(&set, &options)?;
        let (runs, gpu) = (self.timing.runs.max(1), self.gpu);
        let threads = rayon::current_num_threads();
        let mut results = Vec::new();

        // CPU reference decode of the first material, whole maps, multi- and single-threaded.
        let params = initial_params(&set, &layout, 1);
        let (levels, layers, _) = quantise(&layout, &params);
        let (bundle, _, _) = pack(&set, &layout, levels, layers)?;
        let decoder = Decoder::new(&bundle);
        let texels: f64 =
            bundle.manifest.materials[0].maps.iter().map(|m| f64::from(m.info.width) * f64::from(m.info.height)).fold(0.0, f64::max);
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
            format!(
                "{:.2} GFLOP/s at {flops_per_texel} FLOP/texel = {:.1}% of the ceiling ({how})",
                achieved / 1e9,
                100.0 * achieved / ceiling
            )
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
        results.push(Measurement {
            what: "decode cpu whole-material (1 thread)".into(),
            texels_per_sec: one,
            runs,
            note: flop_note(one, 1),
        });
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
        if gpu {
            if let Some((adapter, device, queue)) = texset_shaders::request_device()? {
                let mut options = texset_shaders::GpuModelOptions::for_device(&device);
                options.shape = self.mlp_shape.unwrap_or(options.shape);
                options.precision = self.precision.unwrap_or(options.precision);
                results.extend(gpu_decode(&adapter, &device, &queue, &bundle, runs, options)?);
            } else {
                eprintln!("SKIPPED: no wgpu adapter; GPU decode not measured");
            }
        }
        print_measurements(&results, self.timing.json.json)
    }
}

/// FLOPs of one MLP evaluation (every output) plus the latent fetch, per texel.
fn decode_flops_per_texel(bundle: &texset_core::bundle::Bundle) -> f64 {
    let mlp: usize = bundle.layers.iter().map(|l| 2 * l.inputs * l.outputs).sum();
    // Bilinear fetch: 4 multiply-adds per latent channel; positional encoding not counted.
    let fetch = 8 * bundle.manifest.latent_channels();
    (mlp + fetch) as f64
}

/// The GPU decoder on one adapter: its compile time per entry point, a whole map, a 1920×1080
/// frame of random-access samples of one map, and the same frame of every map of material 0
/// (what a material shader decodes per pixel), with the FLOP rate against the adapter's fp32
/// peak where it is known.
fn gpu_decode(
    adapter: &wgpu::Adapter,
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    bundle: &texset_core::bundle::Bundle,
    runs: usize,
    options: texset_shaders::GpuModelOptions,
) -> Result<Vec<Measurement>> {
    let info = adapter.get_info();
    let device_name = format!("{}, {:?}", info.name, info.backend);
    print_adapter(adapter);
    let mut results = Vec::new();
    let gpu = texset_shaders::GpuDecoder::with_options(device, bundle, options)
        .with_context(|| format!("the decoder on {device_name} with {} arithmetic", options.precision.name()))?;
    let compile = gpu.compile_secs(device)?;
    let fragment_secs = if texset_shaders::renders_fragment_format(adapter) { gpu.prepare_fragment(device).ok() } else { None };
    let model = gpu.model();
    println!(
        "decoder on {device_name}: weights in {} memory ({:.1} KiB), {} texels per compute invocation, hidden layers in {}, \
         {} arithmetic; compile: cs_decode_map {:.2} s, cs_decode_samples {:.2} s, fs_decode_map {}",
        model.weight_memory.name(),
        model.mlp_words.len() as f64 * 4.0 / 1024.0,
        model.block,
        model.shape.name(),
        model.precision.name(),
        compile.decode_map,
        compile.decode_samples,
        fragment_secs.map_or_else(|| "n/a (no render target)".to_owned(), |s| format!("{s:.2} s"))
    );
    // The studio's PBR preview: its fragment pipeline (the decoder inside the shading), made
    // as the preview makes it. With `MESA_SHADER_CACHE_DISABLE=true` a CPU driver's cold compile.
    if texset_shaders::renders_fragment_format(adapter) {
        match preview_compile(device, queue, bundle) {
            Ok([made, first, next]) => println!(
                "preview pipeline on {device_name}: made in {made:.2} s, first 8x8 draw {first:.2} s (a driver that compiles at first use \
                 compiles then), the next {next:.3} s"
            ),
            Err(e) => println!("preview pipeline on {device_name}: not made: {e}"),
        }
    }
    let entry = &bundle.manifest.materials[0].maps[0];
    let map_texels = f64::from(entry.info.width) * f64::from(entry.info.height);
    let stored = texset_shaders::DecodeMode::Stored;
    gpu.decode_map(device, queue, 0, 0, stored)?;
    let mut times = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        std::hint::black_box(gpu.decode_map(device, queue, 0, 0, stored)?);
        times.push(map_texels / t.elapsed().as_secs_f64());
    }
    results.push(Measurement {
        what: format!("decode gpu whole map incl. read-back ({device_name}; {} ch)", entry.info.channels),
        texels_per_sec: median(times),
        runs,
        note: String::new(),
    });
    // 1920x1080 random-access samples: the samples stay on the GPU, only the decode is timed
    // (submit to completion).
    let (width, height) = (1920u32, 1080u32);
    let mut rng = texset_core::rng::Rng::new(7, 0, 0);
    let uvs: Vec<[f32; 2]> = (0..width * height).map(|_| [rng.next_f32(), rng.next_f32()]).collect();
    let batch = gpu.upload_samples(device, &uvs)?;
    let maps = bundle.manifest.materials[0].maps.len();
    let peak = fp32_peak(adapter);
    let flops = map_flops_per_texel(bundle);
    for (what, of_maps) in [("one map", 1), ("every map of material 0", maps)] {
        let frame = |gpu: &texset_shaders::GpuDecoder| -> Result<()> {
            for map in 0..of_maps {
                gpu.run_samples(device, queue, &batch, 0, map, stored, 0.0, false)?;
            }
            Ok(())
        };
        frame(&gpu)?;
        let mut frame_secs = Vec::new();
        for _ in 0..runs {
            let t = Instant::now();
            frame(&gpu)?;
            frame_secs.push(t.elapsed().as_secs_f64());
        }
        let secs = median(frame_secs);
        let texels_per_sec = f64::from(width * height) * of_maps as f64 / secs;
        let gflops = texels_per_sec * flops / 1e9;
        let against = peak
            .as_ref()
            .map_or_else(|| "fp32 peak unknown".to_owned(), |(peak, how)| format!("{:.2}% of {how}", 100.0 * gflops * 1e9 / peak));
        results.push(Measurement {
            what: format!("decode gpu random-access 1920x1080 frame, {what} ({device_name}; {of_maps} maps)"),
            texels_per_sec,
            runs,
            note: format!("{:.2} ms per frame; {gflops:.1} GFLOP/s at {flops} FLOP/texel ({against})", secs * 1e3),
        });
    }
    Ok(results)
}

/// FLOPs of one map's decode on the GPU: every hidden layer, four rows of the last (a map's
/// outputs), the bilinear fetch.
fn map_flops_per_texel(bundle: &texset_core::bundle::Bundle) -> f64 {
    let Some((last, hidden)) = bundle.layers.split_last() else { return 0.0 };
    let mlp: usize = hidden.iter().map(|l| 2 * l.inputs * l.outputs).sum::<usize>() + 2 * last.inputs * 4;
    (mlp + 8 * bundle.manifest.latent_channels()) as f64
}

/// The adapter's fp32 peak in FLOP/s where known: a software adapter runs on this CPU
/// ([`flop_ceiling`]); a few data-centre GPUs by name (vendor figures, non-tensor fp32).
fn fp32_peak(adapter: &wgpu::Adapter) -> Option<(f64, String)> {
    let info = adapter.get_info();
    if info.device_type == wgpu::DeviceType::Cpu {
        let (flops, how) = flop_ceiling(std::thread::available_parallelism().map_or(1, std::num::NonZero::get));
        return Some((flops, format!("this CPU: {how}")));
    }
    let name = info.name.to_ascii_uppercase();
    [("H100", 67e12), ("H200", 67e12), ("A100", 19.5e12), ("L40S", 91.6e12), ("RTX 4090", 82.6e12)]
        .iter()
        .find(|(card, _)| name.contains(card))
        .map(|&(card, flops)| (flops, format!("{card} fp32 {:.1} TFLOP/s", flops / 1e12)))
}

/// What the adapter offers the decoder and trainer: the features that pick an arithmetic path,
/// the limits that place the weights, and the cooperative-matrix configurations.
fn print_adapter(adapter: &wgpu::Adapter) {
    let info = adapter.get_info();
    println!("adapter: {} ({:?}, {:?}; driver {} {})", info.name, info.backend, info.device_type, info.driver, info.driver_info);
    let features = adapter.features();
    let wanted = [
        ("SHADER_F16", wgpu::Features::SHADER_F16),
        ("SUBGROUP", wgpu::Features::SUBGROUP),
        ("TIMESTAMP_QUERY", wgpu::Features::TIMESTAMP_QUERY),
        ("EXPERIMENTAL_COOPERATIVE_MATRIX", wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX),
    ];
    let listed: Vec<String> =
        wanted.iter().map(|(name, f)| format!("{name} {}", if features.contains(*f) { "yes" } else { "no" })).collect();
    println!("features: {}", listed.join(", "));
    let limits = adapter.limits();
    println!(
        "limits: max_uniform_buffer_binding_size {}, max_storage_buffer_binding_size {}, max_compute_workgroup_storage_size {}, \
         max_compute_invocations_per_workgroup {}",
        limits.max_uniform_buffer_binding_size,
        limits.max_storage_buffer_binding_size,
        limits.max_compute_workgroup_storage_size,
        limits.max_compute_invocations_per_workgroup
    );
    let matrices = adapter.cooperative_matrix_properties();
    if matrices.is_empty() {
        println!("cooperative matrices: none");
    }
    for m in matrices {
        println!(
            "cooperative matrix: {}x{}x{} {:?} -> {:?}{}",
            m.m_size,
            m.n_size,
            m.k_size,
            m.ab_type,
            m.cr_type,
            if m.saturating_accumulation { " (saturating)" } else { "" }
        );
    }
}

/// Seconds to make the studio preview's pipeline for `bundle`, to draw its first 8×8 image and to
/// draw the next: where a driver compiles the shader (at creation or at first use) shows.
fn preview_compile(device: &wgpu::Device, queue: &wgpu::Queue, bundle: &texset_core::bundle::Bundle) -> Result<[f64; 3]> {
    use texset_shaders::preview::{PreviewRenderer, PreviewUniforms, Shape};
    let t = Instant::now();
    let renderer = PreviewRenderer::new(device, bundle, wgpu::TextureFormat::Rgba32Float)?;
    let made = t.elapsed().as_secs_f64();
    renderer.write_uniforms(queue, 0, &PreviewUniforms::new(&bundle.manifest, 0, 0.7, 3.0, Shape::Sphere, 1.0));
    let draw = || -> Result<f64> {
        let t = Instant::now();
        std::hint::black_box(renderer.render(device, queue, 8, 8)?);
        Ok(t.elapsed().as_secs_f64())
    };
    let first = draw()?;
    Ok([made, first, draw()?])
}
