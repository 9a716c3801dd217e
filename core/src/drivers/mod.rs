//! Drivers: runs of the pipeline that answer a bigger question. Rate control to a target PSNR
//! ([`rate`]), the precision search ([`search`]), adding materials to a trained library
//! ([`extend`]) and batch compression of a library folder ([`batch`]).

pub mod batch;
pub mod extend;
pub mod rate;
pub mod search;
