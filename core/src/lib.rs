//! texset engine: neural compression of material texture sets.
//!
//! A library of materials (folders of maps) is compressed into one bundle: shared low-bit latent
//! grids plus one small MLP decoder whose outputs are every channel of every map. Any texel of any
//! map decodes at random access.
//!
//! The modules follow the pipeline (ARCHITECTURE.md has the map):
//! - [`set`]: the texture set, map naming and ingest of image folders;
//! - [`pipeline`]: the front door [`compress`] and its passes (analyse → train → prune →
//!   quantise → pack), configured by [`options`] and reporting through [`progress`];
//! - [`model`]: parameter shapes, the CPU reference decoder, layout, quantisation, mips and the
//!   one generator of the shaders' WGSL MLP;
//! - [`train`]: the training loop and its trainers (fused CPU, fused GPU in WGSL, burn);
//! - [`bundle`]: the file format; [`decode`]: decoding whole maps; [`eval`]: metrics and `BCn`;
//! - [`drivers`]: rate control, precision search, `add` and batch; [`io`]: export and transcode.
//!
//! The runtime side (an engine reading bundles) builds without the `train` feature: [`bundle`],
//! [`decode`], [`model`] and [`eval`]'s metrics, with no burn.

#[cfg(feature = "train")]
pub mod analyse;
pub mod bundle;
pub mod decode;
pub mod eval;
pub mod executor;
pub mod io;
pub mod model;
pub mod rng;
pub mod set;

#[cfg(feature = "train")]
pub mod drivers;
#[cfg(feature = "train")]
pub mod options;
#[cfg(feature = "train")]
pub mod pipeline;
#[cfg(feature = "train")]
pub mod train;

pub use bundle::{Bundle, BundleError};
pub use decode::{DecodedMap, Decoder};
#[cfg(feature = "train")]
pub use options::{Backend, BudgetConfig, CompressOptions, ModelConfig, OptionsError, Preset, RunOptions, ScheduleConfig};
#[cfg(feature = "train")]
pub use pipeline::progress;
#[cfg(feature = "train")]
pub use pipeline::{CompressError, CompressReport, Compressed, compress};
#[cfg(feature = "train")]
pub use progress::{Cancel, NoProgress, Pass, Progress, TrainStatus};
pub use set::{MapKind, Material, TextureSet};
