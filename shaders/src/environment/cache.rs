//! The prepared environment's cache: keyed by the content of the source file and every option,
//! stored in a small versioned little-endian file written atomically.
//!
//! Layout (version 1), all little-endian:
//!
//! | bytes | what |
//! |---|---|
//! | 8 | magic `TXSETIBL` |
//! | 4 | version, u32 = 1 |
//! | 20 | the [`PrepareOptions`]: `face_size_px`, `level_count`, `base_samples`, `brdf_size_px`, `brdf_samples`, u32 each |
//! | 108 | the irradiance SH: 9 coefficients × RGB, f32 |
//! | 12 per texel | the specular levels' texels in order (level 0 first, each as [`CubeLevel`] lays it out), RGB f32 |
//! | 8 per entry | the split-sum table's entries ([`BrdfTable`]'s layout), A and B f32 |
//! | 32 | SHA-256 of every byte before it |
//!
//! A reader checks the magic, the version, the options against their ranges
//! ([`PrepareOptions::validate`]) and the length those options imply against the file's length
//! before it allocates, then the checksum, then that every value is finite.

use super::{BrdfTable, CubeLevel, PrepareOptions, PreparedEnvironment};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use texset_core::io::{read_regular, write_atomic};

/// Largest environment file read whole for its cache key, in bytes (its texels are bounded again
/// when it is decoded: [`super::MAX_WIDTH_PX`] × [`super::MAX_HEIGHT_PX`]).
pub const MAX_SOURCE_FILE_BYTES: u64 = 1 << 30;

/// The file's first bytes.
const MAGIC: [u8; 8] = *b"TXSETIBL";
/// The layout's version (and the preparation's: bump it when either changes, so old caches are
/// recomputed rather than misread).
const VERSION: u32 = 1;
/// Bytes before the SH: magic, version, five options.
const HEADER_BYTES: usize = 8 + 4 + 5 * 4;
/// Bytes of the SH coefficients.
const SH_BYTES: usize = 9 * 3 * 4;
/// Lowercase hexadecimal digits, for the cache key.
const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";
/// Bytes of the trailing checksum.
const CHECKSUM_BYTES: usize = 32;

/// Why a cache file could not be written or read. A caller that gets one on reading recomputes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    /// The file could not be read or written.
    #[error("environment cache {path:?}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The file is not a valid cache of this version: `reason` says what is wrong.
    #[error("environment cache {path:?} is unusable: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong (bad magic, another version, options out of range, wrong length, bad
        /// checksum, a value that is not finite).
        reason: String,
    },
}

impl PreparedEnvironment {
    /// The cache key of preparing the environment file whose bytes are `source_bytes` with
    /// `options`: a lowercase hex SHA-256 of the cache version, the bytes and every option. Any
    /// change to either (or to the layout's version) gives another key.
    #[must_use]
    pub fn cache_key(source_bytes: &[u8], options: &PrepareOptions) -> String {
        let mut hasher = Sha256::new();
        hasher.update(b"texset environment cache");
        hasher.update(VERSION.to_le_bytes());
        hasher.update((source_bytes.len() as u64).to_le_bytes());
        hasher.update(source_bytes);
        for value in option_values(options) {
            hasher.update(value.to_le_bytes());
        }
        hasher.finalize().iter().fold(String::with_capacity(64), |mut hex, b| {
            hex.push(char::from(HEX_DIGITS[usize::from(b >> 4)]));
            hex.push(char::from(HEX_DIGITS[usize::from(b & 15)]));
            hex
        })
    }

    /// [`Self::cache_key`] of the file at `path`, read whole: a regular file of at most
    /// [`MAX_SOURCE_FILE_BYTES`] (a FIFO or device is refused, not read). The error does not name
    /// the file; the caller does.
    pub fn file_cache_key(path: &Path, options: &PrepareOptions) -> std::io::Result<String> {
        Ok(Self::cache_key(&read_regular(path, MAX_SOURCE_FILE_BYTES)?, options))
    }

    /// Writes the cache file `path` atomically (a temporary file in the same folder, synced, then
    /// renamed over `path`).
    pub fn write_cache(&self, path: &Path) -> Result<(), CacheError> {
        let mut bytes = Vec::with_capacity(expected_len(&self.options).unwrap_or(0));
        bytes.extend_from_slice(&MAGIC);
        bytes.extend_from_slice(&VERSION.to_le_bytes());
        for value in option_values(&self.options) {
            bytes.extend_from_slice(&value.to_le_bytes());
        }
        for value in self.irradiance_sh.iter().flatten() {
            bytes.extend_from_slice(&value.to_le_bytes());
        }
        for value in self.specular.iter().flat_map(|level| level.texels.iter().flatten()) {
            bytes.extend_from_slice(&value.to_le_bytes());
        }
        for value in self.brdf.texels.iter().flatten() {
            bytes.extend_from_slice(&value.to_le_bytes());
        }
        let checksum = Sha256::digest(&bytes);
        bytes.extend_from_slice(&checksum);
        write_atomic(path, &bytes).map_err(|source| CacheError::Io { path: path.to_path_buf(), source })
    }

    /// Reads a cache file written by [`PreparedEnvironment::write_cache`]. A missing, truncated,
    /// corrupt or other-version file is an error (never a panic): recompute then.
    pub fn read_cache(path: &Path) -> Result<Self, CacheError> {
        use std::io::Read;
        let invalid = |reason: String| CacheError::Invalid { path: path.to_path_buf(), reason };
        let io = |source| CacheError::Io { path: path.to_path_buf(), source };
        // A FIFO or device is not opened: opening a FIFO blocks until something writes to it.
        if !std::fs::metadata(path).map_err(io)?.is_file() {
            return Err(invalid("not a regular file".into()));
        }
        let mut file = std::fs::File::open(path).map_err(io)?;
        let file_len = file.metadata().map_err(io)?.len();
        let mut header = [0u8; HEADER_BYTES];
        file.read_exact(&mut header).map_err(|_| invalid(format!("{file_len} bytes is shorter than the header")))?;
        if header[..8] != MAGIC {
            return Err(invalid("not an environment cache (bad magic)".into()));
        }
        let mut words = header[8..].chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
        let mut next = || words.next().unwrap_or(0);
        let version = next();
        if version != VERSION {
            return Err(invalid(format!("version {version}, this build reads {VERSION}")));
        }
        let options =
            PrepareOptions { face_size_px: next(), level_count: next(), base_samples: next(), brdf_size_px: next(), brdf_samples: next() };
        options.validate().map_err(|e| invalid(e.to_string()))?;
        let expected = expected_len(&options).ok_or_else(|| invalid("sizes overflow".into()))?;
        if file_len != expected as u64 {
            return Err(invalid(format!("{file_len} bytes, its options imply {expected}")));
        }
        let mut bytes = header.to_vec();
        bytes.resize(expected, 0);
        file.read_exact(&mut bytes[HEADER_BYTES..]).map_err(io)?;
        let (body, checksum) = bytes.split_at(expected - CHECKSUM_BYTES);
        if Sha256::digest(body).as_slice() != checksum {
            return Err(invalid("checksum mismatch (corrupt)".into()));
        }
        let mut values = body[HEADER_BYTES..].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]));
        if let Some(bad) = values.clone().find(|v| !v.is_finite()) {
            return Err(invalid(format!("a value is {bad}")));
        }
        let mut take3 = || [values.next().unwrap_or(0.0), values.next().unwrap_or(0.0), values.next().unwrap_or(0.0)];
        let irradiance_sh: [[f32; 3]; 9] = std::array::from_fn(|_| take3());
        let specular = (0..options.level_count)
            .map(|level| {
                let side = options.level_face_size_px(level) as usize;
                CubeLevel {
                    face_size_px: side as u32,
                    roughness: options.level_roughness(level),
                    texels: (0..6 * side * side).map(|_| take3()).collect(),
                }
            })
            .collect();
        let entries = options.brdf_size_px as usize * options.brdf_size_px as usize;
        let brdf_texels = (0..entries).map(|_| [values.next().unwrap_or(0.0), values.next().unwrap_or(0.0)]).collect();
        Ok(Self { options, specular, irradiance_sh, brdf: BrdfTable { size_px: options.brdf_size_px, texels: brdf_texels } })
    }
}

/// The options as the cache stores and hashes them, in the documented order.
fn option_values(options: &PrepareOptions) -> [u32; 5] {
    [options.face_size_px, options.level_count, options.base_samples, options.brdf_size_px, options.brdf_samples]
}

/// The length of a cache file of `options` (`None` on overflow; valid options never overflow).
fn expected_len(options: &PrepareOptions) -> Option<usize> {
    let mut texels = 0usize;
    for level in 0..options.level_count {
        let side = options.level_face_size_px(level) as usize;
        texels = texels.checked_add(side.checked_mul(side)?.checked_mul(6)?)?;
    }
    let entries = (options.brdf_size_px as usize).checked_mul(options.brdf_size_px as usize)?;
    HEADER_BYTES
        .checked_add(SH_BYTES)?
        .checked_add(texels.checked_mul(12)?)?
        .checked_add(entries.checked_mul(8)?)?
        .checked_add(CHECKSUM_BYTES)
}
