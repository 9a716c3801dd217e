//! texset engine: neural compression of material texture sets.
//!
//! A library of materials (folders of maps) is compressed into one bundle: shared low-bit latent
//! grids plus one small MLP decoder whose outputs are every channel of every map. Any texel of any
//! map decodes at random access.
//!
//! The modules follow the pipeline (ARCHITECTURE.md has the map):
//! - [`set`]: the texture set, map naming and ingest of image folders;
//! - the front door [`compress`] and its passes ([`analyse()`] → train → prune → [`quantise`] →
//!   [`pack`]), configured by [`options`] and reporting through [`Progress`];
//! - [`model`]: parameter shapes, the CPU reference decoder, layout, quantisation, mips and the
//!   one generator of the shaders' WGSL MLP;
//! - [`train`]: the training loop and its trainers (fused CPU, fused GPU in WGSL, burn);
//! - [`bundle`]: the file format; [`decode`]: decoding whole maps; [`eval`]: metrics and `BCn`;
//! - [`export`]: PNG/EXR, KTX2/DDS and the BC codec; [`drivers`]: rate control, precision
//!   search, `add` and batch; [`io`]: atomic writes, bounded reads and fault injection.
//!
//! The runtime side (an engine reading bundles) builds without the `train` feature: [`bundle`],
//! [`decode`], [`model`] and [`eval`]'s metrics, with no burn.
//!
//! The public surface is the crate root and the modules above, and every public item has one
//! path: a public module's items are re-exported from that module (each module's parts are
//! private); the crate root holds only what lives in private modules (the front door's passes
//! and reports, progress, `block_on`, `rng`). What only tests need is in the hidden
//! `internal_tests` module.

#[cfg(feature = "train")]
mod analyse;
mod base;
pub mod bundle;
pub mod decode;
pub mod eval;
pub mod export;
pub mod io;
pub mod model;
pub mod set;

#[cfg(feature = "train")]
pub mod drivers;
#[cfg(feature = "train")]
pub mod options;
#[cfg(feature = "train")]
mod pipeline;
#[cfg(feature = "train")]
pub mod train;

/// What the workspace's tests and benchmarks reach inside the engine and no engine or front end
/// needs: the training loop's parts, the trainers' internals, the mip and reference-decoder
/// helpers a parity test compares against. Not an API: it changes with the code it exposes.
#[doc(hidden)]
pub mod internal_tests {
    #[cfg(feature = "train")]
    pub use crate::analyse::groups::material_groups;
    #[cfg(feature = "train")]
    pub use crate::eval::quantize_to_format;
    #[cfg(feature = "train")]
    pub use crate::export::folder::decode_to_folder_in_bands;
    pub use crate::model::mips::box_chain;
    pub use crate::model::params::{lod_level, pyramid_level};
    pub use crate::model::reference::features_at_level;
    #[cfg(feature = "train")]
    pub use crate::train::burn::model::{NtcModel, NtcModelConfig};
    #[cfg(feature = "train")]
    pub use crate::train::burn::trainer::loss_and_grads as burn_loss_and_grads;
    #[cfg(feature = "train")]
    pub use crate::train::burn::wgpu_device_is_shared;
    #[cfg(feature = "train")]
    pub use crate::train::checkpoint::{seed_bytes as checkpoint_seed_bytes, step_from_bytes as checkpoint_step_from_bytes};
    #[cfg(feature = "train")]
    pub use crate::train::gpu::STAGES;
    #[cfg(feature = "train")]
    pub use crate::train::init::starting_params;
    #[cfg(feature = "train")]
    pub use crate::train::kernel::{Noise, forward_backward, latent_noise, loss_and_grads, loss_and_grads_with};
    #[cfg(feature = "train")]
    pub use crate::train::run::{ANNOUNCE_ABOVE_TEXELS, LoopOptions, TimeBudget, run};
}

#[cfg(feature = "train")]
pub use analyse::{AnalyseError, AnalyseReport, BudgetSource, DuplicateFinding, TextureBudget};
pub use base::executor::block_on;
pub use base::rng;
#[cfg(feature = "train")]
pub(crate) use pipeline::progress;
#[cfg(feature = "train")]
pub use pipeline::{
    BudgetChange, CompressError, CompressReport, Compressed, PackReport, PruneReport, analyse, compress, pack, quantise, snapshot_bundle,
};
#[cfg(feature = "train")]
pub use progress::{Cancel, NoProgress, Pass, Progress, TrainPhase, TrainStatus};
