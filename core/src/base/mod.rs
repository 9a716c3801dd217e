//! The lowest layer beside `io`: the one random-number generator ([`rng`]) and a minimal
//! executor for wgpu's futures ([`executor`]). Nothing here names another module of the crate.

pub(crate) mod executor;
pub mod rng;
