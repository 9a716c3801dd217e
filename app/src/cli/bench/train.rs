//! `texset bench train`: training texels/s of the fused CPU trainer (and the fused GPU trainer
//! and burn's backends when asked), each the median of timed runs after a warm-up; the runs go
//! round the trainers in turn, so their ratios are measured at the same moments. The fused CPU
//! trainer's GFLOP/s against the CPU's ceiling.

use anyhow::Result;
use std::time::Instant;
use texset_core::{
    analyse,
    model::{Activation, wgsl::MlpShape},
    options::{Backend, CompressOptions},
    rng::Rng,
    set::load_library,
    train::{
        Batch, FusedTrainer, GpuTrainer, KernelChoice, STATS_RING, Sampler, Schedule, Trainer, WgradPass, WgradTile, device_for,
        initial_params,
    },
};

use super::{DirsArg, Measurement, TimingArgs, flop_ceiling, median, parse_shape, print_measurements};

/// Training steps per timed run of a CPU trainer.
const STEPS_PER_RUN: u32 = 5;
/// Training steps per timed run of the GPU trainer: one whole submission.
const GPU_STEPS_PER_RUN: u32 = STATS_RING;
/// Steps whose dispatches are timed one by one (after the timed runs).
const PROFILED_STEPS: u32 = 5;
/// Texels per step of `--batch-sweep`: 8,192 to 262,144.
const SWEEP_BATCHES: [usize; 6] = [8_192, 16_384, 32_768, 65_536, 131_072, 262_144];

// `texset bench train`.
#[derive(clap::Args)]
#[expect(clippy::struct_excessive_bools, reason = "each is a command-line switch, not a state")]
pub(crate) struct TrainBenchArgs {
    #[command(flatten)]
    dirs: DirsArg,
    /// Also time burn backends (flex; wgpu when `--wgpu`).
    #[arg(long)]
    burn: bool,
    /// Include burn-wgpu (needs a GPU adapter; lavapipe is slow).
    #[arg(long)]
    wgpu: bool,
    /// Also time the fused GPU trainer (any adapter; lavapipe is slow), with its roofline.
    #[arg(long)]
    gpu: bool,
    /// Texels per step (default: the default preset's; 65536 is NTC's step).
    #[arg(long)]
    batch: Option<usize>,
    /// With `--gpu`: the fused GPU trainer at 8,192 to 262,144 texels per step (doubling), each
    /// with its wall time per step and every dispatch's GPU time (timestamp queries, where the
    /// adapter has them).
    #[arg(long, requires = "gpu")]
    batch_sweep: bool,
    /// With `--gpu`: how the weight gradients are summed, instead of the adapter's way (`fused` on
    /// a hardware GPU, `16x32x1024` on one the CPU emulates): `fused` (in `fwd_bwd`'s workgroup,
    /// rounds of as many texels as fit 16 KiB), `fused-N` (rounds of N texels), or a `wgrad` pass
    /// of tiles `OUTPUTSxINPUTSxTEXELS` (e.g. `8x8x256`).
    #[arg(long, alias = "wgrad-tile", requires = "gpu", value_name = "PASS", value_parser = parse_wgrad)]
    wgrad: Option<WgradPass>,
    /// With `--gpu`: steps per submission, a GPU trainer timed for each (comma-separated, 1 to 16;
    /// default: the trainer's, 16). `1,16` shows the fixed cost per submission.
    #[arg(long, requires = "gpu", value_delimiter = ',', value_name = "STEPS", value_parser = clap::value_parser!(u32).range(1..=i64::from(STATS_RING)))]
    submit_steps: Vec<u32>,
    /// With `--gpu`: the code shape of the trainer's MLP, `vec4-rows` or `scalar`, instead of the
    /// adapter's (`vec4-rows` on a hardware GPU, `scalar` on one the CPU emulates).
    #[arg(long, requires = "gpu", value_name = "SHAPE", value_parser = parse_shape)]
    mlp_shape: Option<MlpShape>,
    /// The decoder's hidden activations to time, each on every trainer timed (comma-separated:
    /// `relu,hgelu` times both in turn, for their ratio in one run; default the default's, `relu`).
    #[arg(long, value_enum, value_delimiter = ',')]
    activation: Vec<Activation>,
    #[command(flatten)]
    timing: TimingArgs,
}

/// `--wgrad`'s value: `fused`, `fused-N` or `OUTPUTSxINPUTSxTEXELS`.
fn parse_wgrad(text: &str) -> Result<WgradPass, String> {
    if text == "fused" {
        return Ok(WgradPass::Fused { round_texels: None });
    }
    if let Some(n) = text.strip_prefix("fused-") {
        let n = n.parse::<u32>().map_err(|e| format!("{n:?} in {text:?}: {e}"))?;
        return Ok(WgradPass::Fused { round_texels: Some(n) });
    }
    let sides: Vec<&str> = text.split(['x', '×']).collect();
    let [outputs, inputs, texels] = sides[..] else {
        return Err(format!("{text:?} is not fused, fused-N or OUTPUTSxINPUTSxTEXELS, e.g. 8x8x256"));
    };
    let side = |s: &str| s.trim().parse::<u32>().map_err(|e| format!("{s:?} in {text:?}: {e}"));
    WgradTile::new(side(outputs)?, side(inputs)?, side(texels)?).map(WgradPass::Tiles).map_err(|e| e.to_string())
}

impl TrainBenchArgs {
    fn kernels(&self) -> KernelChoice {
        KernelChoice { wgrad: self.wgrad, mlp_shape: self.mlp_shape, ..KernelChoice::default() }
    }

    pub(crate) fn run(self) -> Result<()> {
        let kernels = self.kernels();
        let dirs = self.dirs.clone().or_samples()?;
        let (set, _) = load_library(&dirs)?;
        if self.batch_sweep {
            return gpu_batch_sweep(&set, kernels, self.timing.runs.max(1), self.timing.json.json);
        }
        let mut options = CompressOptions::default();
        if let Some(batch) = self.batch {
            options.schedule.batch_texels = batch;
        }
        let activations = if self.activation.is_empty() { vec![options.model.activation] } else { self.activation.clone() };
        let mut variants = Vec::new();
        for &activation in &activations {
            let mut options = options.clone();
            options.model.activation = activation;
            let (layout, _) = analyse(&set, &options)?;
            variants.push((options, layout));
        }
        let runs = self.timing.runs.max(1);
        // Every trainer is built and warmed up first, then the timed runs go round them in turn,
        // so a ratio between two trainers is measured at the same moments on a shared machine.
        let mut contenders: Vec<Contender<'_>> = Vec::new();
        let mut batch = options.schedule.batch_texels;
        for (options, layout) in &variants {
            batch = Schedule::new(options, layout).batch_texels;
            // The activation is named where more than one is timed.
            let tag = if variants.len() > 1 { format!(", {}", options.model.activation.name()) } else { String::new() };
            self.add_trainers(&set, options, layout, &tag, &mut contenders)?;
        }

        for _ in 0..runs {
            for c in &mut contenders {
                let t = Instant::now();
                (c.run)(c.steps)?;
                c.times.push(f64::from(c.steps) * batch as f64 / t.elapsed().as_secs_f64());
            }
        }
        let results: Vec<Measurement> = contenders
            .into_iter()
            .map(|c| {
                let texels_per_sec = median(c.times);
                Measurement { what: c.what, texels_per_sec, runs, note: (c.note)(texels_per_sec) }
            })
            .collect();
        print_measurements(&results, self.timing.json.json)
    }

    /// The trainers asked for, built for `options` and `layout` and warmed up, onto `contenders`
    /// (their names end with `tag`).
    fn add_trainers<'a>(
        &self,
        set: &'a texset_core::set::TextureSet,
        options: &'a CompressOptions,
        layout: &'a texset_core::model::ModelLayout,
        tag: &str,
        contenders: &mut Vec<Contender<'a>>,
    ) -> Result<()> {
        let kernels = self.kernels();
        let threads = rayon::current_num_threads();
        let batch = Schedule::new(options, layout).batch_texels;

        // Fused CPU trainer.
        let params = initial_params(set, layout, 1);
        let flops_per_texel = train_flops_per_texel(&params);
        let (ceiling, how) = flop_ceiling(threads);
        let mut cpu = FusedTrainer::new(Sampler::new(set, layout), Schedule::new(options, layout), params);
        cpu.run_step();
        contenders.push(Contender::new(
            format!("train cpu-fused ({threads} threads, batch {batch}{tag})"),
            STEPS_PER_RUN,
            Box::new(move |steps| {
                for _ in 0..steps {
                    cpu.run_step();
                }
                Ok(())
            }),
            Box::new(move |texels_per_sec| {
                let achieved = texels_per_sec * flops_per_texel;
                format!(
                    "{:.2} GFLOP/s at {flops_per_texel} FLOP/texel = {:.1}% of the ceiling ({how})",
                    achieved / 1e9,
                    100.0 * achieved / ceiling
                )
            }),
        ));

        // The fused GPU trainer: its steps queue on the device, so each timed run ends waiting
        // for the last. One per `--submit-steps` value.
        let submissions = if self.submit_steps.is_empty() { vec![STATS_RING] } else { self.submit_steps.clone() };
        for per_submission in if self.gpu { submissions } else { Vec::new() } {
            let mut gpu = GpuTrainer::with_kernels(
                Sampler::new(set, layout),
                Schedule::new(options, layout),
                &initial_params(set, layout, 1),
                kernels,
            )?;
            gpu.set_steps_per_submission(per_submission);
            gpu.run_step()?;
            gpu.finish()?;
            let cost = gpu.step_cost();
            let memory = gpu.weight_memory().name();
            let shape = gpu.mlp_shape().name();
            let wgrad = gpu.wgrad_pass().name();
            let dispatches =
                gpu.profile_steps(PROFILED_STEPS)?.map_or_else(|| "no timestamp queries on this device".to_owned(), |t| dispatch_line(&t));
            contenders.push(Contender::new(
                format!("train gpu-fused on {} (batch {batch}, {per_submission} steps per submission{tag})", gpu.adapter()),
                GPU_STEPS_PER_RUN,
                Box::new(move |steps| {
                    for _ in 0..steps {
                        gpu.run_step()?;
                    }
                    Ok(gpu.finish()?)
                }),
                Box::new(move |texels_per_sec| {
                    let secs_per_step = batch as f64 / texels_per_sec.max(1e-9);
                    format!(
                        "{:.2} ms per step; per step {} dispatches, {:.1} MFLOP, at least {:.1} MB moved (counted): {:.2} GFLOP/s, {:.2} GB/s; weights in {memory} memory, MLP in {shape}, weight gradients {wgrad}; GPU time per dispatch: {dispatches}",
                        1e3 * secs_per_step,
                        cost.dispatches,
                        cost.flop / 1e6,
                        cost.bytes / 1e6,
                        cost.flop / secs_per_step / 1e9,
                        cost.bytes / secs_per_step / 1e9,
                    )
                }),
            ));
        }

        // burn backends: a fixed batch (its bare step, without the sampling a run adds).
        let burn_backends =
            [(self.burn, Backend::BurnFlex), (self.wgpu, Backend::BurnWgpu)].into_iter().filter_map(|(on, b)| on.then_some(b));
        for backend in burn_backends {
            let sampler = Sampler::new(set, layout);
            let device = device_for(backend);
            let params = initial_params(set, layout, 1);
            let mut trainer = texset_core::train::BurnTrainer::new(&params, &device, 0.01, 0.004);
            let mut b = Batch::default();
            let mut rng = Rng::new(1, 0, 0);
            sampler.fill(&mut rng, batch, &mut b);
            trainer.step(&b.uv, &b.mask, &b.target, &b.weight, 1.0, Some(0.05), true);
            contenders.push(Contender::new(
                format!("train burn-{backend:?} (batch {batch}, bare step{tag})"),
                STEPS_PER_RUN,
                Box::new(move |steps| {
                    for _ in 0..steps {
                        trainer.step(&b.uv, &b.mask, &b.target, &b.weight, 1.0, Some(0.05), true);
                    }
                    Ok(())
                }),
                Box::new(|_| String::new()),
            ));
        }

        Ok(())
    }
}

/// A trainer the bench times: `run(n)` runs n steps and waits for them, `steps` a timed run;
/// `note` words the extra figures from the median texels/s.
struct Contender<'a> {
    what: String,
    steps: u32,
    run: Box<dyn FnMut(u32) -> Result<()> + 'a>,
    note: Box<dyn Fn(f64) -> String + 'a>,
    times: Vec<f64>,
}

impl<'a> Contender<'a> {
    fn new(what: String, steps: u32, run: Box<dyn FnMut(u32) -> Result<()> + 'a>, note: Box<dyn Fn(f64) -> String + 'a>) -> Self {
        Self { what, steps, run, note, times: Vec::new() }
    }
}

/// FLOPs of one training texel in the fused trainer: the forward MLP, the weight gradients of
/// every layer, the input gradients of every layer but the first, which computes them for the
/// latent inputs only, and the bilinear gather and scatter (4 multiply-adds per latent channel
/// each). Positional encoding, loss and Adam are not counted.
fn train_flops_per_texel(params: &texset_core::model::ModelParams) -> f64 {
    let mlp: usize = params.layers.iter().map(|l| 2 * l.inputs * l.outputs).sum();
    let latent = params.latent_channels();
    let input_grads: usize = params.layers.iter().enumerate().map(|(i, l)| 2 * l.outputs * if i == 0 { latent } else { l.inputs }).sum();
    (2 * mlp + input_grads + 16 * latent) as f64
}

/// Each dispatch's GPU time per step, and their sum.
fn dispatch_line(times: &texset_core::train::DispatchTimes) -> String {
    let each: Vec<String> = times.stage_ms.iter().map(|(name, ms)| format!("{name} {ms:.3}")).collect();
    format!("{} = {:.3} ms (mean of {} steps)", each.join(", "), times.total_ms(), times.steps)
}

/// `--batch-sweep`: the fused GPU trainer at each of [`SWEEP_BATCHES`]: wall time per step (the
/// median of `runs` runs of [`STEPS_PER_RUN`] steps, each run one submission) and the GPU time of each dispatch, so the
/// step's fixed cost (the part that does not grow with the batch) shows.
fn gpu_batch_sweep(set: &texset_core::set::TextureSet, kernels: KernelChoice, runs: usize, json: bool) -> Result<()> {
    let mut results = Vec::new();
    for batch in SWEEP_BATCHES {
        let mut options = CompressOptions::default();
        options.schedule.batch_texels = batch;
        let (layout, _) = analyse(set, &options)?;
        // A batch whose buffers this adapter cannot bind is reported, and the sweep goes on.
        let trainer = GpuTrainer::with_kernels(
            Sampler::new(set, &layout),
            Schedule::new(&options, &layout),
            &initial_params(set, &layout, 1),
            kernels,
        );
        let mut gpu = match trainer {
            Ok(gpu) => gpu,
            Err(e) => {
                eprintln!("train gpu-fused sweep (batch {batch}): not run: {e}");
                continue;
            }
        };
        gpu.run_step()?;
        gpu.finish()?;
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs {
            let t = Instant::now();
            for _ in 0..STEPS_PER_RUN {
                gpu.run_step()?;
            }
            gpu.finish()?;
            times.push(f64::from(STEPS_PER_RUN) * batch as f64 / t.elapsed().as_secs_f64());
        }
        let texels_per_sec = median(times);
        let wall_ms = 1e3 * batch as f64 / texels_per_sec.max(1e-9);
        let note = match gpu.profile_steps(PROFILED_STEPS)? {
            Some(t) => format!(
                "{wall_ms:.2} ms per step; GPU time per dispatch: {} ({:.0}% of the step's wall time)",
                dispatch_line(&t),
                100.0 * t.total_ms() / wall_ms
            ),
            None => format!("{wall_ms:.2} ms per step; no timestamp queries on this device"),
        };
        let what = format!("train gpu-fused sweep on {} (batch {batch}, weight gradients {})", gpu.adapter(), gpu.wgrad_pass().name());
        if !json {
            eprintln!("{what}: {note}");
        }
        results.push(Measurement { what, texels_per_sec, runs, note });
    }
    print_measurements(&results, json)
}
