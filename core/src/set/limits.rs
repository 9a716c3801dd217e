//! The limits on a map and a name that ingest and the bundle reader share; the bundle's
//! [`crate::bundle::limits`] holds them with the rest (this module is private: one public path).

/// Longest material name, in bytes.
pub const MAX_NAME_BYTES: usize = 255;
/// Most decoded values (width × height × channels) of one map (2^28: 1 GiB of f32).
pub const MAX_MAP_VALUES: u64 = 1 << 28;
