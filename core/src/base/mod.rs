//! The lowest layer beside `io`: the one random-number generator ([`rng`]), a minimal executor
//! for wgpu's futures ([`executor`]) and the declaration of structs shared with WGSL
//! (`gpu_struct`). Nothing here names another module of the crate.

pub(crate) mod executor;
#[cfg(feature = "train")]
pub(crate) mod gpu_struct;
pub mod rng;
