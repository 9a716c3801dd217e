//! The shader crate's integration tests, one binary (see app/tests/integration/main.rs for why).
#![allow(missing_docs)]

mod environment;
mod export;
mod gpu_matches_cpu;
mod naga_validates;
mod preview_deferred;
mod preview_environment;
mod preview_matches_cpu;
mod preview_mesh;
mod preview_probe;
