//! RTXNTC's coherent rows on the GPU trainer (`--sampling rows`): the latent gradients summed per
//! subgroup before their atomics give the per-lane atomics' bits and the CPU's gradients, and the
//! device's draws come in rows (a step's sparse Adam moves the latents of fewer cells).

use super::gpu_trainer::{adapter, library, model_bits, worst_relative};
use texset_core::{
    CompressOptions, ModelConfig, ScheduleConfig, analyse,
    internal_tests::loss_and_grads_with,
    model::ModelParams,
    options::Sampling,
    rng::Rng,
    train::{Batch, GpuTrainer, KernelChoice, Sampler, Schedule, Trainer as _, initial_params},
};
use texset_testkit::skip_gpu;

/// One step on rows of neighbours, with the latent gradients summed per subgroup and without:
/// the same bits, and the fused CPU kernel's gradients; with the decoder reading each latent
/// and with it reading the four corners (`scatter_corner`).
#[test]
fn rows_summed_per_subgroup_give_the_per_lane_bits() {
    const TEST: &str = "rows_summed_per_subgroup_give_the_per_lane_bits";
    if !adapter(TEST) {
        return;
    }
    for corner_reads in [false, true] {
        let options = CompressOptions {
            model: ModelConfig { corner_reads, mips: true, ..ModelConfig::default() },
            schedule: ScheduleConfig { steps: 10, batch_texels: 1024, sampling: Sampling::Rows, ..ScheduleConfig::default() },
            ..CompressOptions::default()
        };
        let set = library();
        let (layout, _) = analyse(&set, &options).unwrap();
        let mut params = initial_params(&set, &layout, 7);
        let mut rng = Rng::new(3, 0, 0);
        for g in params.all_grids_mut() {
            for v in &mut g.values {
                *v = rng.next_f32() - 0.5;
            }
        }
        let trainer = |subgroup_scatter| {
            let choice = KernelChoice { subgroup_scatter, ..KernelChoice::default() };
            GpuTrainer::with_kernels(Sampler::new(&set, &layout), Schedule::new(&options, &layout), &params, choice).unwrap()
        };
        let mut summed = trainer(None);
        if !summed.subgroup_scatter() {
            skip_gpu(TEST, &format!("{} has no subgroups", summed.adapter()));
            return;
        }
        let mut plain = trainer(Some(false));
        assert!(!plain.subgroup_scatter());
        assert!(summed.sampler().rows(), "the run's sampler draws rows");
        let draws = summed.sampler().draw(&mut Rng::new(11, 0, 0), 1024);
        let runs = draws.windows(2).filter(|w| w[0].0 == w[1].0 && w[1].1 == w[0].1 + 1).count();
        // Rows of the coarse mip levels (a few texels wide) wrap within each run of 32.
        assert!(runs >= 1024 * 3 / 4, "neighbours along x: {runs}");
        let mut batch = Batch::default();
        summed.sampler().fill_draws(&draws, 1024, &mut batch);
        let (cpu_loss, cpu) = loss_and_grads_with(&params, &batch, None);
        let (summed_loss, by_subgroup) = summed.gradients_for(&draws, None).unwrap();
        let (plain_loss, by_lane) = plain.gradients_for(&draws, None).unwrap();
        assert_eq!(model_bits(&by_subgroup), model_bits(&by_lane), "corner reads {corner_reads}: the same bits");
        assert_eq!(summed_loss.to_bits(), plain_loss.to_bits());
        let (rel, name) = worst_relative(&by_subgroup, &cpu);
        eprintln!("adapter {}, corner reads {corner_reads}: loss cpu {cpu_loss} gpu {summed_loss}; worst {name} {rel:e}", summed.adapter());
        assert!((summed_loss - cpu_loss).abs() <= 1e-4 * cpu_loss.abs(), "loss {summed_loss} vs {cpu_loss}");
        assert!(rel <= 1e-4, "{name}: relative gradient difference {rel:e}");
    }
}

/// The device draws rows: after one step of sparse Adam (a latent no texel read keeps its value),
/// 256 texels in rows of 32 neighbours have moved far fewer latents than as many texels drawn one by one, and
/// the same run again moves the same bits.
#[test]
fn the_devices_rows_touch_fewer_cells() {
    if !adapter("the_devices_rows_touch_fewer_cells") {
        return;
    }
    let set = texset_testkit::small_set(128);
    let moved = |sampling| {
        let options = CompressOptions {
            model: ModelConfig { mips: false, ..ModelConfig::default() },
            schedule: ScheduleConfig { steps: 10, batch_texels: 256, sampling, ..ScheduleConfig::default() },
            ..CompressOptions::default()
        };
        let (layout, _) = analyse(&set, &options).unwrap();
        let schedule = Schedule::new(&options, &layout);
        assert!(schedule.sparse_updates, "the default recipe's sparse Adam");
        let params = initial_params(&set, &layout, 1);
        let mut gpu = GpuTrainer::with_kernels(Sampler::new(&set, &layout), schedule, &params, KernelChoice::default()).unwrap();
        gpu.run_step().unwrap();
        let after = gpu.params().unwrap();
        let changed = |a: &ModelParams, b: &ModelParams| {
            a.all_grids().zip(b.all_grids()).map(|(x, y)| x.values.iter().zip(&y.values).filter(|(p, q)| p != q).count()).sum::<usize>()
        };
        (changed(&params, &after), model_bits(&after))
    };
    let (uniform, _) = moved(Sampling::Uniform);
    let (rows, bits) = moved(Sampling::Rows);
    eprintln!("latents moved by one step of 256 texels: uniform draws {uniform}, rows {rows}");
    assert!(rows > 0 && 10 * rows < 6 * uniform, "rows moved {rows} latents, uniform draws {uniform}");
    assert_eq!(moved(Sampling::Rows).1, bits, "the same bits twice");
}
