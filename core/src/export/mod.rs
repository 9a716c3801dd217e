//! What writes the formats engines load: decoded maps as PNG/EXR under the source's names
//! ([`write_folder`], [`decode_to_folder`]), block-compressed KTX2/DDS with mip chains
//! ([`transcode_chain`], [`ktx2_bytes`], [`dds_bytes`]) and the BC codec both they and the
//! baselines of [`crate::eval`] use ([`bcn`]).
//!
//! It sits above `decode` and below `eval` (ARCHITECTURE.md, "Core's layers"): the baselines
//! score the codec's blocks, and `--match-bc` in `drivers` aims at them.

#[cfg(feature = "transcode")]
pub mod bcn;
#[cfg(feature = "train")]
pub(crate) mod folder;
#[cfg(feature = "train")]
mod gltf;
#[cfg(feature = "transcode")]
mod images;
#[cfg(feature = "transcode")]
mod transcode;

#[cfg(feature = "train")]
pub use folder::{ExportError, decode_to_folder, encode_png, write_folder};
#[cfg(feature = "train")]
pub use gltf::{GltfWritten, TEXSET_EXTENSION, write_gltf};
#[cfg(feature = "transcode")]
pub use images::{ImageMips, ImagesError, MapImage, MaterialImages, TexelFormat, bundle_images, map_image, material_images};
#[cfg(feature = "transcode")]
pub use transcode::{
    Container, EncodedLevel, TranscodedMap, block_compressible, dds_bytes, ktx2_bytes, mip_chain, transcode_chain, vk_format,
};
