//! texset engine: neural compression of material texture sets.
//!
//! A library of materials (folders of maps) is compressed into one bundle: shared low-bit latent
//! grids plus one small MLP decoder whose outputs are every channel of every map. Any texel of any
//! map decodes at random access.
//!
//! - Runtime side (always built): [`bundle`] (reader/writer), [`decode`] (CPU reference decoder),
//!   [`metrics`] and [`eval`].
//! - Making bundles (feature `train`, default): [`ingest`], the pipeline front door
//!   [`compress`], the fused CPU trainer ([`train`]) and the burn model ([`burn_model`]).
//!
//! See ARCHITECTURE.md for where a texel goes from PNG to bundle to shader.

pub mod bundle;
pub mod decode;
pub mod eval;
pub mod fault;
pub mod fsutil;
pub mod metrics;
pub mod mips;
pub mod naming;
pub mod params;
pub mod quant;
pub mod reference;
pub mod set;

#[cfg(feature = "train")]
pub mod batch;
#[cfg(feature = "train")]
pub mod bcn;
#[cfg(feature = "train")]
pub mod burn_model;
#[cfg(feature = "train")]
pub mod burn_train;
#[cfg(feature = "train")]
pub mod checkpoint;
#[cfg(feature = "train")]
pub mod export;
#[cfg(feature = "train")]
pub mod extend;
#[cfg(feature = "train")]
mod gemm;
#[cfg(feature = "ingest")]
pub mod ingest;
#[cfg(feature = "train")]
pub mod layout;
#[cfg(feature = "train")]
pub mod options;
#[cfg(feature = "train")]
pub mod pipeline;
#[cfg(feature = "train")]
pub mod progress;
#[cfg(feature = "train")]
pub mod rate;
#[cfg(feature = "train")]
pub mod search;
#[cfg(feature = "train")]
pub mod synth;
#[cfg(feature = "train")]
pub mod train;
#[cfg(feature = "train")]
pub mod transcode;

pub use bundle::{Bundle, BundleError};
pub use decode::{DecodedMap, Decoder};
#[cfg(feature = "train")]
pub use options::{Backend, BudgetConfig, CompressOptions, ModelConfig, OptionsError, Preset, RunOptions, ScheduleConfig};
#[cfg(feature = "train")]
pub use pipeline::{CompressError, CompressReport, Compressed, compress};
#[cfg(feature = "train")]
pub use progress::{Cancel, NoProgress, Pass, Progress, TrainStatus};
pub use set::{MapKind, Material, TextureSet};
