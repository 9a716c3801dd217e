//! Unit tests of the training loop: what each trainer refuses, the schedule's refits and deadlines.

use super::{Capabilities, LoopOptions, Trainer, refit_length, run};
use crate::options::{CompressOptions, Sampling};
use crate::progress::Cancel;
use crate::train::schedule::{SamplingChange, Schedule};
use std::time::Instant;

/// The GPU trainer draws on the device from the uniform table: it refuses error-driven
/// sampling by name (and `compress` with it, or sends `auto` to the CPU trainer), the CPU
/// and burn trainers take it.
#[test]
fn the_gpu_trainer_refuses_error_driven_sampling() {
    let set = crate::train::sampler::tests_support::set();
    let mut options = CompressOptions::default();
    let (layout, _) = crate::analyse::analyse(&set, &options).expect("layout");
    assert_eq!(Capabilities::FUSED_GPU.missing(&options, &layout), None);
    for sampling in [Sampling::Error, Sampling::RmsError] {
        options.schedule.sampling.mode = sampling;
        let (what, _) = Capabilities::FUSED_GPU.missing(&options, &layout).expect("refused");
        assert_eq!(what, "error-driven sampling");
        assert_eq!(Capabilities::FUSED_CPU.missing(&options, &layout), None);
        assert_eq!(Capabilities::BURN.missing(&options, &layout), None);
    }
    let Err(crate::train::TrainError::Backend(message)) =
        crate::train::gpu::gpu_trainer(&set, &layout, &options, &crate::train::initial_params(&set, &layout, 1))
    else {
        panic!("the GPU trainer took error-driven sampling");
    };
    assert!(message.contains("cannot train error-driven sampling"), "{message}");
}

/// burn's reference trainer refuses NTC's quantisation pieces (noise per latent, FP8 weight
/// QAT) and takes the rest of the recipe (rates, freeze point, decay, Adam, initialisation),
/// so it trains the default schedule; the fused trainers take it all.
#[test]
fn burn_refuses_ntcs_quantisation_the_fused_trainers_take_it() {
    use crate::options::{Recipe, RecipePiece};
    let set = crate::train::sampler::tests_support::set();
    let mut options = CompressOptions::default();
    let (layout, _) = crate::analyse::analyse(&set, &options).expect("layout");
    assert_eq!(Capabilities::BURN.missing(&options, &layout), None, "the default schedule");
    options.schedule.apply_recipe(Recipe::Ntc, &[]);
    assert!(Capabilities::BURN.missing(&options, &layout).is_some_and(|(what, _)| what.starts_with("NTC's quantisation")));
    assert_eq!(Capabilities::FUSED_CPU.missing(&options, &layout), None);
    assert_eq!(Capabilities::FUSED_GPU.missing(&options, &layout), None);
    for piece in [RecipePiece::Noise, RecipePiece::Weights] {
        let mut one = options.clone();
        one.schedule.apply_recipe(Recipe::Ntc, &[piece]);
        assert!(Capabilities::BURN.missing(&one, &layout).is_some(), "NTC without {piece:?}");
    }
    options.schedule.apply_recipe(Recipe::Ntc, &[RecipePiece::Noise, RecipePiece::Weights]);
    assert_eq!(Capabilities::BURN.missing(&options, &layout), None);
}

/// Refreshes every 5 % of the steps from the first 5 %, uniform again at
/// `sampling_uniform_after`; a resumed run measures its map at once; uniform sampling never
/// changes.
#[test]
fn error_maps_refresh_every_twentieth_of_the_run_until_the_uniform_tail() {
    let set = crate::train::sampler::tests_support::set();
    let mut options = CompressOptions::default();
    let (layout, _) = crate::analyse::analyse(&set, &options).expect("layout");
    options.schedule.steps = 1000;
    let uniform = Schedule::new(&options, &layout);
    assert!((0..1000).all(|s| uniform.sampling_change(s, s == 123).is_none()));
    options.schedule.sampling.mode = Sampling::Error;
    let schedule = Schedule::new(&options, &layout);
    let changes: Vec<(u32, SamplingChange)> = (0..1000).filter_map(|s| schedule.sampling_change(s, false).map(|c| (s, c))).collect();
    let refreshes: Vec<u32> = changes.iter().filter(|(_, c)| *c == SamplingChange::Refresh).map(|(s, _)| *s).collect();
    assert_eq!(refreshes, (1..18).map(|k| 50 * k).collect::<Vec<_>>());
    assert_eq!(changes.last(), Some(&(900, SamplingChange::Uniform)));
    assert_eq!(schedule.sampling_change(123, true), Some(SamplingChange::Refresh));
    assert_eq!(schedule.sampling_change(20, true), None);
    assert_eq!(schedule.sampling_change(950, true), None);
}

/// A re-fitted schedule keeps each event's fraction of the run, leaves past events where
/// they were, brings an event whose fraction is already past to the next step, and keeps
/// "never" as never.
#[test]
fn a_refitted_schedule_keeps_its_events_fractions() {
    let set = crate::train::sampler::tests_support::set();
    let mut options = CompressOptions::default();
    let (layout, _) = crate::analyse::analyse(&set, &options).expect("layout");
    options.schedule.steps = 1000;
    options.schedule.sampling.mode = Sampling::Error;
    options.schedule.quantisation.latents = crate::options::Quantisation::Qat;
    options.schedule.quantisation.weights = crate::options::Quantisation::Qat;
    options.schedule.quantisation.freeze_latents_at = 0.8;
    let s = Schedule::new(&options, &layout);
    assert_eq!((s.freeze_step, s.int8_step, s.sampling_uniform_step), (800, 900, 900));
    let half = s.with_steps(500, 250).expect("steps left");
    assert_eq!((half.steps, half.freeze_step, half.int8_step, half.sampling_uniform_step), (500, 400, 450, 450));
    assert_eq!(half.sampling_refresh_every, 25);
    let short = s.with_steps(260, 250).expect("steps left");
    assert_eq!((short.freeze_step, short.int8_step, short.sampling_uniform_step), (250, 250, 250));
    let late = s.with_steps(2000, 850).expect("steps left");
    assert_eq!((late.freeze_step, late.int8_step, late.sampling_uniform_step), (800, 1800, 1800));
    assert!(s.with_steps(250, 250).is_none());
    // The learning rates' decay goes on from where it was, to its end at the new length,
    // across two changes.
    assert!((half.decay(250) - s.decay(250)).abs() < 1e-6);
    let floor = options.schedule.optimiser.learning_rate_floor;
    assert!((half.decay(500) - floor).abs() < 1e-6);
    assert!(half.decay(300) < half.decay(250));
    let again = half.with_steps(700, 400).expect("steps left");
    assert!((again.decay(400) - half.decay(400)).abs() < 1e-6);
    assert!((again.decay(700) - floor).abs() < 1e-6);
    // PTQ: the latents never freeze in training, whatever the length.
    options.schedule.quantisation.latents = crate::options::Quantisation::Ptq;
    let ptq = Schedule::new(&options, &layout);
    assert_eq!(ptq.with_steps(500, 100).expect("steps left").freeze_step, 500);
}

/// The length that ends at the deadline from the speed measured now; small moves are left
/// alone, and a run grows at most [`REFIT_MAX_GROWTH`]-fold and always has a step left.
#[test]
fn a_deadline_gives_the_length_that_ends_there() {
    assert_eq!(refit_length(100, 400, 400, 30.0, 0.1), None);
    assert_eq!(refit_length(100, 400, 400, 30.9, 0.1), None);
    assert_eq!(refit_length(100, 400, 400, 31.9, 0.1), None);
    assert_eq!(refit_length(100, 400, 400, 28.1, 0.1), None);
    assert_eq!(refit_length(100, 400, 400, 15.0, 0.1), Some(250));
    assert_eq!(refit_length(100, 400, 400, 0.0, 0.1), Some(101));
    assert_eq!(refit_length(100, 400, 400, 1e6, 0.1), Some(800));
    assert_eq!(refit_length(100, 400, 400, 35.0, 0.1), Some(450));
}

/// A run whose deadline has passed ends at its first look (a quarter of the way), one step
/// later, and says so; without a deadline the same run keeps its length.
#[test]
fn a_passed_deadline_ends_the_run_at_its_first_look() {
    let set = crate::train::sampler::tests_support::set();
    let mut options = CompressOptions::default();
    let (layout, _) = crate::analyse::analyse(&set, &options).expect("layout");
    options.schedule.steps = 40;
    for deadline in [None, Some(Instant::now())] {
        let start = crate::train::initial_params(&set, &layout, 1);
        let sampler = crate::train::Sampler::new(&set, &layout);
        let mut trainer = crate::train::fused::FusedTrainer::new(sampler, Schedule::new(&options, &layout), start);
        let loop_options = LoopOptions { layout: Some(&layout), deadline, ..LoopOptions::default() };
        let outcome = run(&mut trainer, &loop_options, &crate::progress::NoProgress, &Cancel::default()).expect("trains");
        if deadline.is_some() {
            assert_eq!(outcome.refits.len(), 1, "{:?}", outcome.refits);
            assert_eq!((outcome.refits[0].at_step, outcome.refits[0].from_steps, outcome.refits[0].to_steps), (10, 40, 11));
            assert_eq!((outcome.steps_run, trainer.schedule().steps), (11, 11));
        } else {
            assert!(outcome.refits.is_empty());
            assert_eq!(outcome.steps_run, 40);
        }
    }
}
