//! Training: the fused CPU trainer ([`fused`]), burn's autodiff trainer ([`burn`]) and the
//! checkpoints they resume from ([`checkpoint`]).

pub mod burn;
pub mod checkpoint;
pub mod fused;
mod gemm;

pub use fused::*;
