//! The search cache: finished searches under a descriptor of their set, so a later search on a
//! similar set starts from their best points.

use super::{SearchError, SearchPoint};
use crate::set::TextureSet;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// What a cached search remembers of its set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetDescriptor {
    /// Material names, comma separated (for the report).
    pub materials: String,
    /// log2 of the texel count.
    pub texels_log2: f64,
    /// Maps.
    pub maps: usize,
    /// Output channels.
    pub output_channels: usize,
    /// Content estimate, bits per texel at 40 dB (`analyse::content::content_bits` per map, weighted by
    /// texels).
    pub content_bits_per_texel: f64,
    /// The searched rate, bits per texel.
    pub bits_per_texel: f64,
}

impl SetDescriptor {
    /// Describes `set` searched at `bits_per_texel`.
    #[must_use]
    pub fn of(set: &TextureSet, bits_per_texel: f64) -> Self {
        let mut content = 0.0f64;
        let mut texels = 0usize;
        for (_, _, t) in set.textures() {
            content += f64::from(crate::analyse::content::content_bits(t, 4).0) * t.texel_count() as f64;
            texels += t.texel_count();
        }
        Self {
            materials: set.materials.iter().map(|m| m.name.as_str()).collect::<Vec<_>>().join(","),
            texels_log2: (texels.max(1) as f64).log2(),
            maps: set.textures().count(),
            output_channels: set.output_channels(),
            content_bits_per_texel: content / texels.max(1) as f64,
            bits_per_texel,
        }
    }

    /// How unlike two sets are: 0 for equal descriptors; under 1 counts as similar (a quarter of
    /// the texels or twice them, one map more or less, a fifth more content, 1.4× the rate each
    /// cost about a quarter).
    #[must_use]
    pub fn distance(&self, other: &Self) -> f64 {
        let content = (self.content_bits_per_texel.max(1e-3) / other.content_bits_per_texel.max(1e-3)).ln().abs();
        (self.texels_log2 - other.texels_log2).abs() / 8.0
            + self.maps.abs_diff(other.maps) as f64 / 4.0
            + self.output_channels.abs_diff(other.output_channels) as f64 / 12.0
            + content * 1.4
            + (self.bits_per_texel / other.bits_per_texel).ln().abs() * 0.7
    }
}

/// A finished search as the cache keeps it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CachedSearch {
    /// The set and rate.
    pub descriptor: SetDescriptor,
    /// Every short trial: point and short-run PSNR, dB.
    pub trials: Vec<(SearchPoint, f64)>,
    /// The point chosen after the full runs.
    pub chosen: SearchPoint,
}

/// The cache file: every search run with it, newest last.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SearchCache {
    /// Format version (1).
    pub version: u32,
    /// Searches.
    pub searches: Vec<CachedSearch>,
}

impl SearchCache {
    /// Reads `path`; a missing file is an empty cache.
    pub fn read(path: &Path) -> Result<Self, SearchError> {
        let cache_error = |message: String| SearchError::Cache { path: path.to_owned(), message };
        let text = match crate::io::read_regular_text(path, 64 << 20) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self { version: 1, searches: Vec::new() }),
            Err(e) => return Err(cache_error(e.to_string())),
        };
        let cache: Self =
            serde_json::from_str(&text).map_err(|e| cache_error(format!("not a search cache ({e}); delete it to start afresh")))?;
        if cache.version != 1 {
            return Err(cache_error(format!("version {} (this texset reads 1); delete it to start afresh", cache.version)));
        }
        Ok(cache)
    }

    /// Writes the cache atomically (creating its folder).
    pub fn write(&self, path: &Path) -> Result<(), SearchError> {
        let cache_error = |message: String| SearchError::Cache { path: path.to_owned(), message };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| cache_error(e.to_string()))?;
        }
        let json = serde_json::to_string_pretty(self).map_err(|e| cache_error(e.to_string()))?;
        crate::io::fsutil::write_atomic(path, json.as_bytes()).map_err(|e| cache_error(e.to_string()))
    }

    /// The most similar earlier search (distance under 1), if any.
    #[must_use]
    pub fn nearest(&self, descriptor: &SetDescriptor) -> Option<&CachedSearch> {
        self.searches
            .iter()
            .map(|s| (s.descriptor.distance(descriptor), s))
            .filter(|(d, _)| *d < 1.0)
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, s)| s)
    }
}
