//! Files in and out besides bundles: decoded maps as PNG/EXR ([`export`]), BCn/KTX2/DDS transcode
//! ([`transcode`]), atomic writes and bounded reads ([`fsutil`]), the record of what texset wrote
//! in an output folder ([`written`]) and test-only fault injection ([`fault`]).

#[cfg(feature = "train")]
pub(crate) mod export;
pub mod fault;
pub(crate) mod fsutil;
#[cfg(feature = "transcode")]
pub(crate) mod transcode;
pub(crate) mod written;

#[cfg(feature = "train")]
pub use export::{ExportError, decode_to_folder, encode_png, write_folder};
pub use fsutil::{read_regular, read_regular_text, write_atomic};
#[cfg(feature = "transcode")]
pub use transcode::{Container, Profile, dds_bytes, ktx2_bytes, mip_chain, transcode_chain, vk_format};
pub use written::{Overwrite, RECORD_FILE, Written, WrittenError};
