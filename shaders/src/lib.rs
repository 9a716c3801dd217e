//! texset GPU side: the WGSL decoder (`decode.wgsl`, the twin of the CPU reference decoder in
//! core/src/model/reference.rs) and the wgpu code that runs it.
//!
//! [`GpuModel`] lays a bundle out as the shader reads it: the latent levels bit-packed as the
//! bundle stores them, the MLP's weights dequantised once into `vec4<f32>`s (uniform memory where
//! they fit), and a generated block of WGSL (shapes as constants, the grids' whole-word latent
//! fetch, and the MLP from texset-core's one generator, `model::wgsl`) that
//! specialises `decode.wgsl` to the bundle. Compute entry points decode `BLOCK` texels per
//! invocation, sharing each weight load.
//! [`GpuDecoder`] uploads that once and decodes whole maps (compute, or a fragment shader into a
//! render target) or lists of random-access samples. [`export`] writes the same specialised
//! decoder as WGSL, GLSL, HLSL or MSL for engines.
//!
//! The library never creates a GPU device: callers pass theirs. [`request_device`] is a blocking
//! helper for tests and the CLI.
//!
//! [`environment`] prepares an HDR environment for the viewport's image-based lighting (specular
//! cube, irradiance SH, split-sum table, a content-keyed cache) and holds the tone mappers, on the
//! CPU and as WGSL.
//!
//! Features: `device` (default: wgpu, [`GpuDecoder`] and [`preview`]), `export` (default:
//! naga, [`export`]) and `environment` (default: image, rayon, sha2; [`environment`]). Without them the crate is the generator and the data layout alone
//! ([`GpuModel`], [`GpuModel::functions_wgsl`]), for an engine on its own wgpu (texset-bevy).

use texset_core::decode::DecodeError;

#[cfg(feature = "device")]
pub mod blit;
#[cfg(feature = "device")]
mod decoder;
#[cfg(feature = "device")]
mod device;
#[cfg(feature = "environment")]
pub mod environment;
#[cfg(feature = "export")]
pub mod export;
pub mod model;
#[cfg(feature = "device")]
pub mod preview;

#[cfg(feature = "device")]
pub use decoder::{CompileSecs, FRAGMENT_FORMAT, GpuDecoder, ModelBuffers, SampleBatch, renders_fragment_format};
#[cfg(feature = "device")]
pub use device::{block_on, render_rgba32f, request_device, request_device_for_training, stable_features};
#[cfg(feature = "device")]
pub(crate) use device::{buffer_init, check_device_limit, fullscreen_pipeline, read_texture, triangle_pipeline};
#[cfg(feature = "export")]
pub use export::{EntryPoint, ExportError, ExportOptions, ShaderLang, export_shader, export_shader_with};
pub use model::{Bindings, GpuModel, GpuModelOptions, TableStorage};

/// The WGSL template of the decoder ([`model::GpuModel::wgsl`] specialises it to a bundle).
pub const DECODE_WGSL: &str = include_str!("decode.wgsl");

/// Side of the square compute workgroup of `cs_decode_map` (`WORKGROUP_SIDE` in the WGSL).
pub const WORKGROUP_SIDE: u32 = 8;
/// Workgroup size of `cs_decode_samples` (`SAMPLE_WORKGROUP` in the WGSL).
pub const SAMPLE_WORKGROUP: u32 = 64;

/// What the decoder writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeMode {
    /// The stored values in `[0, 1]` (`decode_texel`; [`texset_core::decode::Decoder::decode_texel`] on the CPU).
    Stored,
    /// Un-mapped for shading (`decode_texel_linear`; [`texset_core::decode::unmap`] on the CPU).
    Shading,
}

/// Why the GPU decoder could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
    /// The material or map does not exist in the bundle.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The bundle's model is larger than the shader's fixed maximum sizes.
    #[error("the GPU decoder supports at most {limit} {what}, the bundle has {got}")]
    ModelTooLarge {
        /// What is too large.
        what: &'static str,
        /// The bundle's value.
        got: usize,
        /// The shader's maximum.
        limit: usize,
    },
    /// A buffer or dispatch is larger than the device allows.
    #[error("{what} needs {got}, the device allows {limit}")]
    DeviceLimit {
        /// What exceeds the limit.
        what: &'static str,
        /// Needed.
        got: u64,
        /// The device limit.
        limit: u64,
    },
    /// `f16` arithmetic was asked of a device without `SHADER_F16`.
    #[error("f16 arithmetic needs SHADER_F16, which this device was not created with")]
    NoShaderF16,
    /// The device refused to create a device from the adapter.
    #[cfg(feature = "device")]
    #[error("could not create a wgpu device: {0}")]
    RequestDevice(#[from] wgpu::RequestDeviceError),
    /// An image's bytes are not its size's.
    #[error("a {width}x{height} image needs {expected} bytes of RGBA, got {got}")]
    ImageBytes {
        /// The image's size, pixels.
        width: u32,
        /// Its height.
        height: u32,
        /// Bytes it needs.
        expected: u64,
        /// Bytes given.
        got: usize,
    },
    /// A wgpu validation, out-of-memory or internal error.
    #[error("wgpu error: {0}")]
    Wgpu(String),
    /// Waiting for the GPU failed.
    #[cfg(feature = "device")]
    #[error("waiting for the GPU failed: {0}")]
    Poll(#[from] wgpu::PollError),
    /// Mapping the read-back buffer failed.
    #[cfg(feature = "device")]
    #[error("reading the decoded map back failed: {0}")]
    Map(#[from] wgpu::BufferAsyncError),
}

/// `value` as a u32, or [`GpuError::ModelTooLarge`] naming `what`.
pub(crate) fn to_u32(what: &'static str, value: usize) -> Result<u32, GpuError> {
    u32::try_from(value).map_err(|_| GpuError::ModelTooLarge { what, got: value, limit: u32::MAX as usize })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Rust mirrors of the WGSL constants must match the shader.
    #[test]
    fn wgsl_constants_match_rust() {
        assert!(DECODE_WGSL.contains(&format!("const WORKGROUP_SIDE: u32 = {WORKGROUP_SIDE}u;")));
        assert!(DECODE_WGSL.contains(&format!("const SAMPLE_WORKGROUP: u32 = {SAMPLE_WORKGROUP}u;")));
        for entry in EntryPoint::ALL {
            assert!(DECODE_WGSL.contains(&format!("fn {}(", entry.name())), "decode.wgsl lacks {}", entry.name());
        }
    }
}
