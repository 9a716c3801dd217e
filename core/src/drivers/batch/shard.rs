//! Which part of a library one batch run does: a shard `index` of `count`, given by hand or read
//! from the array-job variables of the scheduler that started the run (docs/scale.md).
//!
//! Kubernetes Indexed Jobs, Slurm arrays and AWS Batch arrays all hand each task an index and
//! (but for Kubernetes) a count; [`Shard::from_scheduler`] reads whichever of them is set and
//! refuses when none is, or when two are set and disagree.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Which part of the library this run does: `index` of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// This shard, from 0.
    pub index: u32,
    /// Number of shards.
    pub count: u32,
}

/// The scheduler whose variables chose the shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scheduler {
    /// Given by hand (`i/n`), or the whole library.
    Manual,
    /// A Kubernetes Indexed Job: `JOB_COMPLETION_INDEX`, with `TEXSET_SHARD_COUNT` for the count.
    Kubernetes,
    /// A Slurm array: `SLURM_ARRAY_TASK_ID − SLURM_ARRAY_TASK_MIN` of `SLURM_ARRAY_TASK_COUNT`.
    Slurm,
    /// An AWS Batch array job: `AWS_BATCH_JOB_ARRAY_INDEX` of `AWS_BATCH_JOB_ARRAY_SIZE`.
    AwsBatch,
}

impl std::fmt::Display for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Manual => "manual",
            Self::Kubernetes => "Kubernetes",
            Self::Slurm => "Slurm",
            Self::AwsBatch => "AWS Batch",
        })
    }
}

/// Where a shard's run came from: what its summary records beside the shard.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardOrigin {
    /// The scheduler whose variables chose the shard.
    pub scheduler: Scheduler,
    /// The scheduler's attempt number for this task, from 1, where it tells one
    /// (`SLURM_RESTART_COUNT` + 1, `AWS_BATCH_JOB_ATTEMPT`, or `TEXSET_ATTEMPT` for any).
    pub attempt: Option<u32>,
    /// The machine that ran it.
    pub host: String,
}

impl Default for ShardOrigin {
    fn default() -> Self {
        Self { scheduler: Scheduler::Manual, attempt: None, host: String::new() }
    }
}

/// `--shard` could not be read, or the scheduler's variables give no shard.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShardError {
    /// The text is not `i/n` with `0 ≤ i < n`.
    #[error("shard {0:?} is not i/n with 0 <= i < n")]
    Syntax(String),
    /// No scheduler's array variables are set.
    #[error(
        "no batch scheduler's array variables are set: Kubernetes (JOB_COMPLETION_INDEX and TEXSET_SHARD_COUNT), Slurm \
         (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_COUNT) or AWS Batch (AWS_BATCH_JOB_ARRAY_INDEX, \
         AWS_BATCH_JOB_ARRAY_SIZE)"
    )]
    NoScheduler,
    /// A scheduler's index is set but a variable it needs is not.
    #[error("{scheduler}: {set} is set but {missing} is not")]
    Missing {
        /// The scheduler.
        scheduler: Scheduler,
        /// The variable that is set.
        set: &'static str,
        /// The variable that is needed.
        missing: &'static str,
    },
    /// A variable is not a whole number (or a count is 0).
    #[error("{variable}={value:?} is not a whole number (and a count is at least 1)")]
    NotANumber {
        /// The variable.
        variable: &'static str,
        /// Its value.
        value: String,
    },
    /// The index is not below the count (a Slurm array whose ids are not contiguous, say).
    #[error("{scheduler}: index {index} is not below the count {count} (array indices must run 0..count, contiguous)")]
    OutOfRange {
        /// The scheduler.
        scheduler: Scheduler,
        /// The index read.
        index: i64,
        /// The count read.
        count: u32,
    },
    /// A shard count above [`Shard::MAX_COUNT`].
    #[error("{count} shards: more than the {} a library is split into at most", Shard::MAX_COUNT)]
    TooMany {
        /// The count given.
        count: u64,
    },
    /// Two schedulers' variables are set and give different shards.
    #[error("{first} says shard {first_shard} but {second} says shard {second_shard}")]
    Disagree {
        /// One scheduler.
        first: Scheduler,
        /// Its shard, `i/n`.
        first_shard: String,
        /// The other.
        second: Scheduler,
        /// Its shard.
        second_shard: String,
    },
}

impl Shard {
    /// The whole library.
    pub const ALL: Self = Self { index: 0, count: 1 };

    /// The most shards a library is split into (a flag, a scheduler's variable or a summary
    /// file may say more; each is refused): a merge lists the missing ones, so the count bounds
    /// its work.
    pub const MAX_COUNT: u32 = 65_536;

    /// Parses `i/n`.
    pub fn parse(text: &str) -> Result<Self, ShardError> {
        let err = || ShardError::Syntax(text.to_owned());
        let (i, n) = text.split_once('/').ok_or_else(err)?;
        let (index, count) = (i.trim().parse::<u32>().map_err(|_| err())?, n.trim().parse::<u32>().map_err(|_| err())?);
        if count == 0 || index >= count {
            return Err(err());
        }
        if count > Self::MAX_COUNT {
            return Err(ShardError::TooMany { count: u64::from(count) });
        }
        Ok(Self { index, count })
    }

    /// Whether the material named `name` belongs to this shard: `sha256(name) mod count`, of
    /// the digest's first 8 bytes, so adding materials does not move the others.
    #[must_use]
    pub fn owns(&self, name: &str) -> bool {
        Self::of(name, self.count) == self.index
    }

    /// The shard of `count` that the material named `name` belongs to.
    #[must_use]
    pub fn of(name: &str, count: u32) -> u32 {
        let digest = Sha256::digest(name.as_bytes());
        let first = u64::from_le_bytes([digest[0], digest[1], digest[2], digest[3], digest[4], digest[5], digest[6], digest[7]]);
        u32::try_from(first % u64::from(count.max(1))).unwrap_or(0)
    }

    /// The shard that the array-job variables of a scheduler give, read through `var` (the
    /// process environment at the edge, a map in tests), with the scheduler and its attempt
    /// number. Empty variables count as unset.
    pub fn from_scheduler(var: &dyn Fn(&str) -> Option<String>) -> Result<(Self, Scheduler, Option<u32>), ShardError> {
        let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let found: Vec<(Self, Scheduler)> = [kubernetes(&var)?, slurm(&var)?, aws_batch(&var)?].into_iter().flatten().collect();
        let Some(&(shard, scheduler)) = found.first() else { return Err(ShardError::NoScheduler) };
        if let Some(&(other, second)) = found.iter().find(|(s, _)| *s != shard) {
            return Err(ShardError::Disagree { first: scheduler, first_shard: shard.to_string(), second, second_shard: other.to_string() });
        }
        let attempt = match optional_number(&var, "TEXSET_ATTEMPT")? {
            Some(attempt) => Some(attempt),
            None => match scheduler {
                Scheduler::Slurm => optional_number(&var, "SLURM_RESTART_COUNT")?.map(|n| n.saturating_add(1)),
                Scheduler::AwsBatch => optional_number(&var, "AWS_BATCH_JOB_ATTEMPT")?,
                Scheduler::Kubernetes | Scheduler::Manual => None,
            },
        };
        Ok((shard, scheduler, attempt))
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

type Var<'a> = dyn Fn(&str) -> Option<String> + 'a;

fn number(var: &Var<'_>, name: &'static str) -> Result<i64, ShardError> {
    let value = var(name).unwrap_or_default();
    value.trim().parse::<i64>().map_err(|_| ShardError::NotANumber { variable: name, value })
}

fn optional_number(var: &Var<'_>, name: &'static str) -> Result<Option<u32>, ShardError> {
    match var(name) {
        None => Ok(None),
        Some(value) => value.trim().parse::<u32>().map(Some).map_err(|_| ShardError::NotANumber { variable: name, value }),
    }
}

/// `index` of `count` as a shard, or why not.
fn shard(scheduler: Scheduler, index: i64, count_name: &'static str, count: i64) -> Result<Shard, ShardError> {
    let count =
        u32::try_from(count).ok().filter(|&c| c > 0).ok_or(ShardError::NotANumber { variable: count_name, value: count.to_string() })?;
    if count > Shard::MAX_COUNT {
        return Err(ShardError::TooMany { count: u64::from(count) });
    }
    let index = u32::try_from(index).ok().filter(|&i| i < count).ok_or(ShardError::OutOfRange { scheduler, index, count })?;
    Ok(Shard { index, count })
}

/// A scheduler that sets an index and a count variable: its shard when the index is set.
fn index_and_count(
    var: &Var<'_>,
    scheduler: Scheduler,
    index: &'static str,
    count: &'static str,
) -> Result<Option<(Shard, Scheduler)>, ShardError> {
    if var(index).is_none() {
        return Ok(None);
    }
    if var(count).is_none() {
        return Err(ShardError::Missing { scheduler, set: index, missing: count });
    }
    Ok(Some((shard(scheduler, number(var, index)?, count, number(var, count)?)?, scheduler)))
}

fn kubernetes(var: &Var<'_>) -> Result<Option<(Shard, Scheduler)>, ShardError> {
    index_and_count(var, Scheduler::Kubernetes, "JOB_COMPLETION_INDEX", "TEXSET_SHARD_COUNT")
}

fn slurm(var: &Var<'_>) -> Result<Option<(Shard, Scheduler)>, ShardError> {
    const ID: &str = "SLURM_ARRAY_TASK_ID";
    if var(ID).is_none() {
        return Ok(None);
    }
    for needed in ["SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_COUNT"] {
        if var(needed).is_none() {
            return Err(ShardError::Missing { scheduler: Scheduler::Slurm, set: ID, missing: needed });
        }
    }
    let index = number(var, ID)? - number(var, "SLURM_ARRAY_TASK_MIN")?;
    Ok(Some((shard(Scheduler::Slurm, index, "SLURM_ARRAY_TASK_COUNT", number(var, "SLURM_ARRAY_TASK_COUNT")?)?, Scheduler::Slurm)))
}

fn aws_batch(var: &Var<'_>) -> Result<Option<(Shard, Scheduler)>, ShardError> {
    index_and_count(var, Scheduler::AwsBatch, "AWS_BATCH_JOB_ARRAY_INDEX", "AWS_BATCH_JOB_ARRAY_SIZE")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests fail loudly on any error")]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn detect(vars: &[(&str, &str)]) -> Result<(Shard, Scheduler, Option<u32>), ShardError> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        Shard::from_scheduler(&|name| map.get(name).cloned())
    }

    #[test]
    fn shards_parse_and_split_the_names_between_them() {
        assert_eq!(Shard::parse("1/4").unwrap(), Shard { index: 1, count: 4 });
        for bad in ["4/4", "1", "a/2", "0/0", "-1/2", "auto"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
        let names: Vec<String> = (0..50).map(|i| format!("material_{i}")).collect();
        let shards = [Shard { index: 0, count: 3 }, Shard { index: 1, count: 3 }, Shard { index: 2, count: 3 }];
        for name in &names {
            assert_eq!(shards.iter().filter(|s| s.owns(name)).count(), 1, "{name}");
            assert!(Shard::ALL.owns(name));
            assert!(shards[Shard::of(name, 3) as usize].owns(name));
        }
    }

    #[test]
    fn each_scheduler_gives_its_shard_and_attempt() {
        let k8s = detect(&[("JOB_COMPLETION_INDEX", "2"), ("TEXSET_SHARD_COUNT", "5")]).unwrap();
        assert_eq!(k8s, (Shard { index: 2, count: 5 }, Scheduler::Kubernetes, None));
        let slurm = detect(&[
            ("SLURM_ARRAY_TASK_ID", "12"),
            ("SLURM_ARRAY_TASK_MIN", "10"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
            ("SLURM_RESTART_COUNT", "1"),
        ])
        .unwrap();
        assert_eq!(slurm, (Shard { index: 2, count: 4 }, Scheduler::Slurm, Some(2)));
        let aws = detect(&[("AWS_BATCH_JOB_ARRAY_INDEX", "0"), ("AWS_BATCH_JOB_ARRAY_SIZE", "3"), ("AWS_BATCH_JOB_ATTEMPT", "1")]).unwrap();
        assert_eq!(aws, (Shard { index: 0, count: 3 }, Scheduler::AwsBatch, Some(1)));
        // Two schedulers that agree (a Slurm job inside a pod, say) are one shard; the first names it.
        let both = detect(&[
            ("JOB_COMPLETION_INDEX", "1"),
            ("TEXSET_SHARD_COUNT", "2"),
            ("AWS_BATCH_JOB_ARRAY_INDEX", "1"),
            ("AWS_BATCH_JOB_ARRAY_SIZE", "2"),
            ("TEXSET_ATTEMPT", "3"),
        ])
        .unwrap();
        assert_eq!(both, (Shard { index: 1, count: 2 }, Scheduler::Kubernetes, Some(3)));
    }

    #[test]
    fn missing_conflicting_or_bad_variables_are_refused_by_name() {
        assert_eq!(detect(&[]), Err(ShardError::NoScheduler));
        assert_eq!(detect(&[("JOB_COMPLETION_INDEX", " ")]), Err(ShardError::NoScheduler));
        assert_eq!(
            detect(&[("JOB_COMPLETION_INDEX", "0")]),
            Err(ShardError::Missing { scheduler: Scheduler::Kubernetes, set: "JOB_COMPLETION_INDEX", missing: "TEXSET_SHARD_COUNT" })
        );
        let disagree = detect(&[
            ("JOB_COMPLETION_INDEX", "1"),
            ("TEXSET_SHARD_COUNT", "4"),
            ("AWS_BATCH_JOB_ARRAY_INDEX", "2"),
            ("AWS_BATCH_JOB_ARRAY_SIZE", "4"),
        ])
        .unwrap_err();
        assert_eq!(disagree.to_string(), "Kubernetes says shard 1/4 but AWS Batch says shard 2/4");
        let not_a_number = detect(&[("AWS_BATCH_JOB_ARRAY_INDEX", "x"), ("AWS_BATCH_JOB_ARRAY_SIZE", "4")]).unwrap_err();
        assert!(not_a_number.to_string().contains("AWS_BATCH_JOB_ARRAY_INDEX=\"x\""), "{not_a_number}");
        let gapped = detect(&[("SLURM_ARRAY_TASK_ID", "6"), ("SLURM_ARRAY_TASK_MIN", "0"), ("SLURM_ARRAY_TASK_COUNT", "4")]);
        assert_eq!(gapped, Err(ShardError::OutOfRange { scheduler: Scheduler::Slurm, index: 6, count: 4 }));
        let zero = detect(&[("AWS_BATCH_JOB_ARRAY_INDEX", "0"), ("AWS_BATCH_JOB_ARRAY_SIZE", "0")]).unwrap_err();
        assert!(matches!(zero, ShardError::NotANumber { variable: "AWS_BATCH_JOB_ARRAY_SIZE", .. }), "{zero}");
    }
}
