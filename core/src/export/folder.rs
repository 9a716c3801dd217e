//! Writing decoded maps as image files with the source's names, channel layout and bit depth.

use crate::bundle::{Manifest, MapEntry};
use crate::decode::{DecodeError, DecodedMap, Decoder};
use crate::io::{Overwrite, Written};
use crate::set::SampleFormat;
use std::path::{Path, PathBuf};

/// Why decoded maps could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// Decoding failed.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The GPU decoder failed.
    #[error("GPU decode failed: {0}")]
    Gpu(String),
    /// A file in the way that texset did not write, or its record of what it wrote.
    #[error(transparent)]
    Written(#[from] crate::io::WrittenError),
    /// A file or folder could not be written.
    #[error("cannot write {path:?}: {message}")]
    Write {
        /// The path.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// Encodes one decoded map in its source's format: 8/16-bit PNG, or float EXR with the stored
/// channel ranges applied (so float sources come back at their original scale).
pub(crate) fn encode_map(map: &DecodedMap, entry: &MapEntry) -> Result<Vec<u8>, String> {
    if entry.sample_format == SampleFormat::F32 { encode_exr(map, entry) } else { encode_png(map, entry) }
}

fn encode_exr(map: &DecodedMap, entry: &MapEntry) -> Result<Vec<u8>, String> {
    use image::{ImageEncoder, codecs::openexr::OpenExrEncoder};
    let color = match entry.channels {
        3 => image::ExtendedColorType::Rgb32F,
        4 => image::ExtendedColorType::Rgba32F,
        c => return Err(format!("{c}-channel float maps cannot be written as EXR")),
    };
    let ch = entry.channels as usize;
    let bytes: Vec<u8> = map
        .values
        .iter()
        .enumerate()
        .flat_map(|(i, v)| {
            let [lo, hi] = entry.channel_ranges.get(i % ch).copied().unwrap_or([0.0, 1.0]);
            (lo + (hi - lo) * v).to_le_bytes()
        })
        .collect();
    let mut out = std::io::Cursor::new(Vec::new());
    OpenExrEncoder::new(&mut out).write_image(&bytes, map.width, map.height, color).map_err(|e| e.to_string())?;
    Ok(out.into_inner())
}

/// Encodes one decoded map as PNG bytes (8 or 16 bit, as the map's sample format says).
pub fn encode_png(map: &DecodedMap, entry: &MapEntry) -> Result<Vec<u8>, String> {
    use image::{ImageEncoder, codecs::png::PngEncoder};
    let color = match (entry.channels, entry.sample_format) {
        (1, SampleFormat::U8) => image::ExtendedColorType::L8,
        (2, SampleFormat::U8) => image::ExtendedColorType::La8,
        (3, SampleFormat::U8) => image::ExtendedColorType::Rgb8,
        (4, SampleFormat::U8) => image::ExtendedColorType::Rgba8,
        (1, _) => image::ExtendedColorType::L16,
        (2, _) => image::ExtendedColorType::La16,
        (3, _) => image::ExtendedColorType::Rgb16,
        (4, _) => image::ExtendedColorType::Rgba16,
        (c, _) => return Err(format!("{c} channels cannot be written as PNG")),
    };
    let bytes: Vec<u8> = if entry.sample_format == SampleFormat::U8 {
        map.values.iter().copied().map(crate::decode::unorm8).collect()
    } else {
        // `image`'s encoders take 16-bit samples in native byte order (the PNG encoder swaps them
        // to the file's big-endian itself).
        map.values.iter().flat_map(|v| ((v.clamp(0.0, 1.0) * 65535.0).round() as u16).to_ne_bytes()).collect()
    };
    let mut out = Vec::new();
    PngEncoder::new(&mut out).write_image(&bytes, map.width, map.height, color).map_err(|e| e.to_string())?;
    Ok(out)
}

/// The file a decoded map is written to: `<dir>/<material>/<material>_<kind>.png` (`.exr` for
/// float sources).
#[must_use]
pub(crate) fn map_path(dir: &Path, material: &str, entry: &MapEntry) -> PathBuf {
    let extension = if entry.sample_format == SampleFormat::F32 { "exr" } else { "png" };
    dir.join(material).join(format!("{material}_{}.{extension}", entry.kind))
}

/// Decodes every map of the bundle into `dir` (atomic writes) on the CPU; returns the written
/// paths. Files in the way are replaced as `overwrite` allows ([`write_folder`]).
pub fn decode_to_folder(decoder: &Decoder, dir: &Path, overwrite: Overwrite) -> Result<Vec<PathBuf>, ExportError> {
    write_folder(decoder.manifest(), dir, overwrite, |material| Ok(decoder.decode_material(material)?))
}

/// Writes every map of a bundle into `dir` as `<material>/<material>_<map>.png` (atomic writes),
/// with `decode_material(material index)` giving each material's decoded maps in manifest order
/// (the CPU decoder, or a GPU one). Before anything is decoded, every target is checked against
/// the folder's record of what texset wrote ([`Written`]): a file texset did not write is
/// replaced only with [`Overwrite::Any`]. The record is updated last. Returns the written paths.
pub fn write_folder(
    manifest: &Manifest,
    dir: &Path,
    overwrite: Overwrite,
    mut decode_material: impl FnMut(usize) -> Result<Vec<DecodedMap>, ExportError>,
) -> Result<Vec<PathBuf>, ExportError> {
    let mut record = Written::open(dir)?;
    let targets: Vec<PathBuf> =
        manifest.materials.iter().flat_map(|material| material.maps.iter().map(|entry| map_path(dir, &material.name, entry))).collect();
    record.check(targets.iter().map(PathBuf::as_path), overwrite)?;
    let mut written = Vec::new();
    for (mi, material) in manifest.materials.iter().enumerate() {
        let folder = dir.join(&material.name);
        std::fs::create_dir_all(&folder).map_err(|e| ExportError::Write { path: folder.clone(), message: e.to_string() })?;
        let maps = decode_material(mi)?;
        for (map, entry) in maps.iter().zip(&material.maps) {
            let path = map_path(dir, &material.name, entry);
            let bytes = encode_map(map, entry).map_err(|message| ExportError::Write { path: path.clone(), message })?;
            if let Err(e) = crate::io::fsutil::write_atomic(&path, &bytes) {
                // What was written so far is texset's: recorded (best effort: the disk may be
                // what failed), so a rerun may replace it. The error names the map.
                let _ = record.save();
                return Err(ExportError::Write { path: path.clone(), message: e.to_string() });
            }
            record.add(&path);
            written.push(path);
        }
        // After each material: a run killed later leaves the materials before recorded.
        record.save()?;
    }
    Ok(written)
}
