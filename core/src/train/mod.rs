//! Training. One entry ([`run::train`]) gives every backend's trainer its starting point, time
//! budget, checkpoints and report; one loop ([`run::run`]) drives any [`Trainer`] a step at a
//! time and owns cancel, pause, status, snapshots, checkpoints and resume; [`Capabilities`] says
//! what each trainer can train, and [`backend`] which trainer trains a run. The trainers:
//! - [`fused`]: the hand-fused CPU trainer (also `texset add`'s, with frozen parameters);
//! - [`gpu`]: the fused GPU trainer, WGSL through wgpu;
//! - [`burn`]: burn's autodiff on wgpu or flex, the reference.
//!
//! What they share: the texel [`sampler`], the [`schedule`] (phases, decay, rounding), the
//! starting point ([`init`]), one optimiser ([`adam`]), and for the fused trainer its CPU
//! [`kernel`] and learned-budget [`gates`]; [`checkpoint`] saves and restores a run.
//!
//! Determinism: a step's batch is split into fixed chunks of [`CHUNK_TEXELS`]; each chunk draws its
//! texels and noise from a generator seeded by `(seed, step, chunk)` and the gradients are summed
//! in chunk order, so results do not depend on the number of threads. The fused trainer sorts a
//! step's draws by position before the chunks train them (decision 053).

pub(crate) mod adam;
pub(crate) mod backend;
pub(crate) mod burn;
pub(crate) mod checkpoint;
pub(crate) mod fused;
pub(crate) mod gates;
pub(crate) mod gpu;
pub(crate) mod init;
#[cfg(test)]
mod input_consumers;
pub(crate) mod kernel;
pub(crate) mod run;
pub(crate) mod sampler;
pub(crate) mod schedule;
pub(crate) mod time_budget;

pub use backend::{Unsupported, resolve_auto};
pub use burn::trainer::BurnTrainer;
pub use burn::{AdapterSummary, adapters, device_for, share_wgpu_device};
pub use fused::FusedTrainer;
pub use gpu::{DispatchTimes, FUSED_BUDGET_BYTES, GpuTrainer, KernelChoice, STATS_RING, WgradPass, WgradTile, share_device};
pub use init::initial_params;
pub use run::{TrainReport, Trainer};
pub use sampler::{Batch, Sampler};
pub use schedule::Schedule;

pub(crate) use fused::{Trainable, train_fused};
pub(crate) use gates::LearnedCut;
pub(crate) use sampler::CHUNK_TEXELS;
pub(crate) use schedule::round_grids;

/// A training failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrainError {
    /// Cancelled through [`Cancel`](crate::progress::Cancel).
    #[error("training was cancelled")]
    Cancelled,
    /// A checkpoint could not be written or read.
    #[error("checkpoint {path:?}: {message}")]
    Checkpoint {
        /// The file.
        path: std::path::PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The training backend failed.
    #[error("training backend failed: {0}")]
    Backend(String),
    /// GPU training could not start or went on no further (no adapter, no device, device lost);
    /// [`crate::compress`] falls back to the CPU trainer.
    #[error("GPU training failed: {0}")]
    Gpu(String),
    /// The bundle to start from (`CompressOptions::init_from`) does not fit this library's model.
    #[error("cannot start from {path:?}: {message}")]
    InitFrom {
        /// The bundle.
        path: std::path::PathBuf,
        /// What does not fit.
        message: String,
    },
}
