//! The texset studio (eframe/egui) as a library, so tests can drive it without a screen. The
//! `texset` binary (src/main.rs) opens it, or runs the CLI (src/cli/).

pub mod decode;
pub mod render;
pub mod rendered;
pub mod studio;
pub mod synth;
