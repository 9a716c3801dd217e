//! The workspace integration tests, one binary (see app/tests/integration/main.rs for why).
//! `shared_device` stays a binary of its own: it registers burn's wgpu device once per process.
#![allow(missing_docs)]

mod bundle_roundtrip;
mod corner_reads;
mod decode_parity;
mod forged;
mod gltf_import;
mod gpu_path;
mod gpu_trainer;
mod ingest;
mod library_add;
mod lit_quad;
mod mips;
mod normals;
mod pinned;
mod quantisation;
mod rate;
mod search;
mod sharing;
mod training;
