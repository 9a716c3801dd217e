//! Time budgets (`RunOptions::time_budget_secs`): a timed probe of the trainer turns the budget
//! into steps ([`fit_time_budget`]), and a long run without one says beforehand how long it will
//! take ([`announce_duration`]). The loop re-fits the length part-way
//! ([`LoopOptions::deadline`](crate::train::run::LoopOptions::deadline)).

use crate::options::CompressOptions;
use crate::progress::{Cancel, Progress};
use crate::train::TrainError;
use crate::train::run::{LoopOutcome, Refit, Trainer};
use std::borrow::Cow;
use std::time::{Duration, Instant};

/// How a time budget became steps ([`fit_time_budget`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TimeBudget {
    /// The budget asked for, seconds.
    pub budget_secs: f64,
    /// Steps the probe timed (after one untimed warm-up step).
    pub probe_steps: u32,
    /// Seconds the probe took in all, taken from the budget.
    pub probe_secs: f64,
    /// Measured seconds per step.
    pub secs_per_step: f64,
    /// Steps the schedule got.
    pub steps: u32,
    /// Changes of length part-way, as the machine's speed changed
    /// ([`LoopOptions::deadline`](crate::train::run::LoopOptions::deadline)).
    pub refits: Vec<Refit>,
}

/// At most this long, seconds, and this share of the budget go to timing the trainer.
const PROBE_MAX_SECS: f64 = 2.0;
const PROBE_BUDGET_SHARE: f64 = 0.05;
/// Steps the probe times at least and at most.
const PROBE_MIN_STEPS: u32 = 2;
const PROBE_MAX_STEPS: u32 = 200;

impl TimeBudget {
    /// The budget with the re-fits of the run it set ([`LoopOutcome::refits`]).
    #[must_use]
    pub fn with_refits(self, outcome: &LoopOutcome) -> Self {
        Self { refits: outcome.refits.clone(), ..self }
    }

    /// When training must end, called as the probe ends: the budget less the probe's seconds.
    #[must_use]
    pub fn deadline_from_now(&self) -> Instant {
        Instant::now() + Duration::from_secs_f64((self.budget_secs - self.probe_secs).max(0.0))
    }

    /// The steps that fit `budget_secs` after `probe_secs` at `secs_per_step` (at least one).
    #[must_use]
    pub fn steps_for(budget_secs: f64, probe_secs: f64, secs_per_step: f64) -> u32 {
        let left = (budget_secs - probe_secs).max(0.0);
        ((left / secs_per_step.max(1e-9)).floor() as u32).max(1)
    }
}

/// `options` with the schedule's steps fitted to `options.run.time_budget_secs`, and how; the
/// options unchanged without a budget. `make` builds the trainer the run will use, from options;
/// the probe runs it on a long schedule (so every probe step is an early, noisy-latent step) and
/// throws it away.
pub(crate) fn fit_time_budget<'o, 't>(
    options: &'o CompressOptions,
    make: impl FnOnce(&CompressOptions) -> Result<Box<dyn Trainer + 't>, TrainError>,
    cancel: &Cancel,
) -> Result<(Cow<'o, CompressOptions>, Option<TimeBudget>), TrainError> {
    let Some(budget_secs) = options.run.time_budget_secs else { return Ok((Cow::Borrowed(options), None)) };
    let started = Instant::now();
    let secs_per_step = probe(options, make, (budget_secs * PROBE_BUDGET_SHARE).min(PROBE_MAX_SECS), cancel)?;
    let probe_secs = started.elapsed().as_secs_f64();
    let steps = TimeBudget::steps_for(budget_secs, probe_secs, secs_per_step.0);
    let mut fitted = options.clone();
    fitted.schedule.give_steps(steps);
    Ok((
        Cow::Owned(fitted),
        Some(TimeBudget {
            budget_secs,
            probe_steps: secs_per_step.1,
            probe_secs,
            secs_per_step: secs_per_step.0,
            steps,
            refits: Vec::new(),
        }),
    ))
}

/// Times `make`'s trainer on a long schedule (every probe step an early, noisy-latent one) for
/// about `limit_secs` after one untimed warm-up step: (seconds per step, steps timed).
fn probe<'t>(
    options: &CompressOptions,
    make: impl FnOnce(&CompressOptions) -> Result<Box<dyn Trainer + 't>, TrainError>,
    limit_secs: f64,
    cancel: &Cancel,
) -> Result<(f64, u32), TrainError> {
    let mut long = options.clone();
    long.schedule.steps = long.schedule.steps.max(10 * PROBE_MAX_STEPS);
    let mut probe = make(&long)?;
    probe.run_step()?;
    probe.wait()?;
    let timed = Instant::now();
    let mut probe_steps = 0;
    while probe_steps < PROBE_MIN_STEPS || (probe_steps < PROBE_MAX_STEPS && timed.elapsed().as_secs_f64() < limit_secs) {
        if cancel.is_cancelled() {
            return Err(TrainError::Cancelled);
        }
        probe.run_step()?;
        probe_steps += 1;
    }
    probe.wait()?;
    Ok((timed.elapsed().as_secs_f64() / f64::from(probe_steps), probe_steps))
}

/// Runs of more texels than this say beforehand how long they will take ([`announce_duration`]):
/// twice the default preset's.
pub const ANNOUNCE_ABOVE_TEXELS: f64 = 1e8;

/// For a long run without a time budget (more than [`ANNOUNCE_ABOVE_TEXELS`] texels, e.g.
/// `--preset max` on a CPU): times `make`'s trainer for about a second and says, through
/// [`Progress::note`], how long the run will take. Nothing for shorter runs.
pub(crate) fn announce_duration<'t>(
    options: &CompressOptions,
    make: impl FnOnce(&CompressOptions) -> Result<Box<dyn Trainer + 't>, TrainError>,
    backend: &str,
    progress: &dyn Progress,
    cancel: &Cancel,
) -> Result<(), TrainError> {
    let texels = f64::from(options.schedule.steps) * options.schedule.batch_texels as f64;
    if options.run.time_budget_secs.is_some() || texels <= ANNOUNCE_ABOVE_TEXELS {
        return Ok(());
    }
    let (secs_per_step, _) = probe(options, make, 1.0, cancel)?;
    let secs = secs_per_step * f64::from(options.schedule.steps);
    progress.note(&format!(
        "{} steps × {} texels on {backend}: {:.1} ms per step measured, so about {} (--time-budget SECS sets a limit instead)",
        options.schedule.steps,
        options.schedule.batch_texels,
        1e3 * secs_per_step,
        human_duration(secs)
    ));
    Ok(())
}

/// `secs` as "42 s", "12 min" or "3.4 h".
fn human_duration(secs: f64) -> String {
    if secs < 90.0 {
        format!("{secs:.0} s")
    } else if secs < 5400.0 {
        format!("{:.0} min", secs / 60.0)
    } else {
        format!("{:.1} h", secs / 3600.0)
    }
}

#[cfg(test)]
mod tests {
    use super::TimeBudget;

    /// The budget left after the probe, in whole steps, and never no step at all.
    #[test]
    fn a_time_budget_buys_the_steps_that_fit_after_the_probe() {
        assert_eq!(TimeBudget::steps_for(10.0, 0.5, 0.01), 950);
        assert_eq!(TimeBudget::steps_for(10.0, 0.5, 0.0095), 1000);
        assert_eq!(TimeBudget::steps_for(1.0, 2.0, 0.01), 1);
        assert_eq!(TimeBudget::steps_for(5.0, 0.0, 0.0), u32::MAX);
    }
}
