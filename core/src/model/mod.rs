//! The model a bundle holds and the CPU reference decoder that defines it: parameter shapes
//! ([`params`]), the MLP's input layout ([`input`]), the reference decode of one texel ([`reference`](mod@reference)), the channel layout the analyse
//! pass decides ([`layout`]), quantisation of latents and weights ([`quant`]) and mip levels
//! ([`mips`]); [`batched`] is the MLP's fast batched form (SIMD kernels) the trainer and the
//! whole-map decoder run on.

pub(crate) mod batched;

/// WGSL of the model math every shader shares: the bilinear clamp-to-edge corners of a grid
/// (`bilinear_corners`, the twin of [`reference::bilinear_corners`]) and the positional
/// encoding with its angle reduction (`pe_sin_cos`): the one definition the decoder's and the GPU
/// trainer's shaders prepend.
pub const MODEL_WGSL: &str = include_str!("model.wgsl");
pub(crate) mod input;
#[cfg(feature = "train")]
pub(crate) mod layout;
pub(crate) mod mips;
pub(crate) mod params;
pub(crate) mod quant;
pub(crate) mod reference;
pub mod wgsl;

pub use input::{GridInputs, InputLayout, inputs_per_channel};
#[cfg(feature = "train")]
pub use layout::ModelLayout;
pub use mips::level_size;
pub use params::{Activation, HGELU_MAX, LOD_INPUT_SCALE, LayerParams, MAX_MLP_WIDTH, ModelParams, full_mip_count, mip_grid_side};
pub use quant::{QuantizedLayer, WeightFormat, fake_quantize, level_value};
