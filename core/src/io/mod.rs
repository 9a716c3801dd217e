//! Files in and out besides bundles: decoded maps as PNG/EXR ([`export`]), BCn/KTX2/DDS transcode
//! ([`transcode`]), atomic writes ([`fsutil`]) and test-only fault injection ([`fault`]).

#[cfg(feature = "train")]
pub mod export;
pub mod fault;
pub mod fsutil;
#[cfg(feature = "train")]
pub mod transcode;
