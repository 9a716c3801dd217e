//! The app's integration tests, one binary: each links the whole engine (burn, wgpu), so one
//! binary instead of one per file saves gigabytes of target/ and a link per file in CI.
#![allow(missing_docs)]

mod bad_input;
mod batch;
mod cli;
mod crash;
mod gltf_out;
mod gpu_fallback;
mod render;
mod studio;
mod studio_window;
mod transcode;
