//! `texset bench train`: training texels/s of the fused CPU trainer (and the fused GPU trainer
//! and burn's backends when asked), each the median of timed runs after a warm-up; the fused CPU
//! trainer's GFLOP/s against the CPU's ceiling.

use anyhow::Result;
use std::time::Instant;
use texset_core::rng::Rng;
use texset_core::train::gpu::GpuTrainer;
use texset_core::train::{Batch, FusedTrainer, Sampler, Schedule, Trainer, initial_params};
use texset_core::{Backend, CompressOptions};

use super::decode::flop_ceiling;
use super::{DirsArg, Measurement, TimingArgs, median, print_measurements};

/// Training steps per timed run.
const STEPS_PER_RUN: u32 = 5;

// `texset bench train`.
#[derive(clap::Args)]
pub struct TrainBenchArgs {
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
    #[command(flatten)]
    timing: TimingArgs,
}

impl TrainBenchArgs {
    pub fn run(self) -> Result<()> {
        let dirs = self.dirs.or_samples()?;
        let (set, _) = texset_core::set::ingest::load_library(&dirs)?;
        let mut options = CompressOptions::default();
        if let Some(batch) = self.batch {
            options.schedule.batch_texels = batch;
        }
        let (layout, _) = texset_core::pipeline::analyse(&set, &options)?;
        let runs = self.timing.runs.max(1);
        let threads = rayon::current_num_threads();
        let mut results = Vec::new();

        // Fused CPU trainer.
        let schedule = Schedule::new(&options, &layout);
        let batch = schedule.batch_texels as f64;
        let params = initial_params(&set, &layout, 1);
        let flops_per_texel = train_flops_per_texel(&params);
        let mut trainer = FusedTrainer::new(Sampler::new(&set, &layout), schedule, params);
        trainer.run_step();
        let mut times = Vec::new();
        for _ in 0..runs {
            let t = Instant::now();
            for _ in 0..STEPS_PER_RUN {
                trainer.run_step();
            }
            times.push(f64::from(STEPS_PER_RUN) * batch / t.elapsed().as_secs_f64());
        }
        let texels_per_sec = median(times);
        let (ceiling, how) = flop_ceiling(threads);
        let achieved = texels_per_sec * flops_per_texel;
        results.push(Measurement {
            what: format!("train cpu-fused ({threads} threads, batch {batch})"),
            texels_per_sec,
            runs,
            note: format!(
                "{:.2} GFLOP/s at {flops_per_texel} FLOP/texel = {:.1}% of the ceiling ({how})",
                achieved / 1e9,
                100.0 * achieved / ceiling
            ),
        });

        // The fused GPU trainer: its steps queue on the device, so each timed run ends waiting
        // for the last.
        if self.gpu {
            let schedule = Schedule::new(&options, &layout);
            let batch = schedule.batch_texels as f64;
            let mut trainer = GpuTrainer::new(Sampler::new(&set, &layout), schedule, &initial_params(&set, &layout, 1))?;
            trainer.run_step()?;
            trainer.finish()?;
            let mut times = Vec::new();
            for _ in 0..runs {
                let t = Instant::now();
                for _ in 0..STEPS_PER_RUN {
                    trainer.run_step()?;
                }
                trainer.finish()?;
                times.push(f64::from(STEPS_PER_RUN) * batch / t.elapsed().as_secs_f64());
            }
            let texels_per_sec = median(times);
            let secs_per_step = batch / texels_per_sec.max(1e-9);
            let cost = trainer.step_cost();
            results.push(Measurement {
                what: format!("train gpu-fused on {} (batch {batch})", trainer.adapter()),
                texels_per_sec,
                runs,
                note: format!(
                    "{:.2} ms per step; per step {} dispatches, {:.1} MFLOP, at least {:.1} MB moved (counted): {:.2} GFLOP/s, {:.2} GB/s; weights in {} memory",
                    1e3 * secs_per_step,
                    cost.dispatches,
                    cost.flop / 1e6,
                    cost.bytes / 1e6,
                    cost.flop / secs_per_step / 1e9,
                    cost.bytes / secs_per_step / 1e9,
                    if trainer.weights_in_workgroup_memory() { "workgroup" } else { "storage" }
                ),
            });
        }

        // burn backends.
        let burn_backends = [(self.burn, Backend::Flex), (self.wgpu, Backend::Wgpu)].into_iter().filter_map(|(on, b)| on.then_some(b));
        for backend in burn_backends {
            let schedule = Schedule::new(&options, &layout);
            let sampler = Sampler::new(&set, &layout);
            let device = texset_core::train::burn::device_for(backend);
            let params = initial_params(&set, &layout, 1);
            let mut trainer = texset_core::train::burn::trainer::BurnTrainer::new(&params, &device, 0.01, 0.004);
            let mut b = Batch::default();
            let mut rng = Rng::new(1, 0, 0);
            sampler.fill(&mut rng, schedule.batch_texels, &mut b);
            trainer.step(&b.uv, &b.mask, &b.target, &b.weight, 1.0, Some(0.05), true);
            let mut times = Vec::new();
            for _ in 0..runs {
                let t = Instant::now();
                for _ in 0..STEPS_PER_RUN {
                    trainer.step(&b.uv, &b.mask, &b.target, &b.weight, 1.0, Some(0.05), true);
                }
                times.push(f64::from(STEPS_PER_RUN) * schedule.batch_texels as f64 / t.elapsed().as_secs_f64());
            }
            results.push(Measurement {
                what: format!("train burn-{backend:?} (batch {})", schedule.batch_texels),
                texels_per_sec: median(times),
                runs,
                note: String::new(),
            });
        }
        print_measurements(&results, self.timing.json.json)
    }
}

/// FLOPs of one training texel in the fused trainer: the forward MLP, the weight gradients of
/// every layer, the input gradients of every layer but the first, which computes them for the
/// latent inputs only, and the bilinear gather and scatter (4 multiply-adds per latent channel
/// each). Positional encoding, loss and Adam are not counted.
fn train_flops_per_texel(params: &texset_core::model::params::ModelParams) -> f64 {
    let mlp: usize = params.layers.iter().map(|l| 2 * l.inputs * l.outputs).sum();
    let latent = params.latent_channels();
    let input_grads: usize = params.layers.iter().enumerate().map(|(i, l)| 2 * l.outputs * if i == 0 { latent } else { l.inputs }).sum();
    (2 * mlp + input_grads + 16 * latent) as f64
}
