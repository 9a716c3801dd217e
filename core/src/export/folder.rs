//! Writing decoded maps as image files with the source's names, channel layout and bit depth.

use crate::bundle::{Manifest, MapEntry};
use crate::decode::{DecodeError, DecodedMap, Decoder};
use crate::io::{AtomicFile, Overwrite, Written};
use crate::set::SampleFormat;
use std::cell::RefCell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;

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
    if entry.info.sample_format == SampleFormat::F32 { encode_exr(map, entry) } else { encode_png(map, entry) }
}

fn encode_exr(map: &DecodedMap, entry: &MapEntry) -> Result<Vec<u8>, String> {
    use image::{ImageEncoder, codecs::openexr::OpenExrEncoder};
    let ch = entry.info.channels as usize;
    let values = map.values.iter().enumerate().map(|(i, &v)| entry.info.scaled(i % ch, v));
    let color = match entry.info.channels {
        // A height map's one channel (and a gray+alpha pair), which `image` does not write.
        1 | 2 => return crate::set::encode_gray_exr(&values.collect::<Vec<f32>>(), map.width, map.height, entry.info.channels),
        3 => image::ExtendedColorType::Rgb32F,
        4 => image::ExtendedColorType::Rgba32F,
        c => return Err(format!("{c}-channel float maps cannot be written as EXR")),
    };
    let bytes: Vec<u8> = values.flat_map(f32::to_le_bytes).collect();
    let mut out = std::io::Cursor::new(Vec::new());
    OpenExrEncoder::new(&mut out).write_image(&bytes, map.width, map.height, color).map_err(|e| e.to_string())?;
    Ok(out.into_inner())
}

/// Encodes one decoded map as PNG bytes (8 or 16 bit, as the map's sample format says): the same
/// encoder, settings and bytes as a map written band by band ([`decode_to_folder`]).
pub fn encode_png(map: &DecodedMap, entry: &MapEntry) -> Result<Vec<u8>, String> {
    let out = Rc::new(RefCell::new(Vec::new()));
    let mut stream = png_stream(Shared(Rc::clone(&out)), map.width, map.height, entry)?;
    stream.write_all(&png_samples(&map.values, entry)).map_err(|e| e.to_string())?;
    stream.finish().map_err(|e| e.to_string())?;
    Rc::try_unwrap(out).map(RefCell::into_inner).map_err(|_| "the PNG writer still holds its buffer".to_owned())
}

/// A PNG writer for one map of `width`×`height` texels, header written, that takes its rows in
/// order as [`png_samples`] makes them. The `image` crate's defaults: balanced deflate, adaptive
/// filters.
fn png_stream<W: Write + 'static>(w: W, width: u32, height: u32, entry: &MapEntry) -> Result<png::StreamWriter<'static, W>, String> {
    let color = match entry.info.channels {
        1 => png::ColorType::Grayscale,
        2 => png::ColorType::GrayscaleAlpha,
        3 => png::ColorType::Rgb,
        4 => png::ColorType::Rgba,
        c => return Err(format!("{c} channels cannot be written as PNG")),
    };
    let mut encoder = png::Encoder::new(w, width, height);
    encoder.set_color(color);
    encoder.set_depth(if entry.info.sample_format == SampleFormat::U8 { png::BitDepth::Eight } else { png::BitDepth::Sixteen });
    encoder.set_compression(png::Compression::Balanced);
    encoder.set_filter(png::Filter::Adaptive);
    encoder.write_header().and_then(png::Writer::into_stream_writer).map_err(|e| e.to_string())
}

/// Decoded values in `[0, 1]` as PNG samples: 8-bit unorm, or 16-bit big-endian.
fn png_samples(values: &[f32], entry: &MapEntry) -> Vec<u8> {
    if entry.info.sample_format == SampleFormat::U8 {
        values.iter().copied().map(crate::decode::unorm8).collect()
    } else {
        values.iter().flat_map(|&v| crate::decode::unorm16(v).to_be_bytes()).collect()
    }
}

/// The file a decoded map is written to: `<dir>/<material>/<material>_<kind>.png` (`.exr` for
/// float sources).
#[must_use]
pub(crate) fn map_path(dir: &Path, material: &str, entry: &MapEntry) -> PathBuf {
    let extension = if entry.info.sample_format == SampleFormat::F32 { "exr" } else { "png" };
    dir.join(material).join(format!("{material}_{}.{extension}", entry.info.kind))
}

/// Texels of every map of a material that [`decode_to_folder`] decodes at a time (in bands of
/// rows): 2^20, so a band holds 16 MiB of f32 values per 4-channel map whatever the map's size.
pub(crate) const STREAM_BAND_TEXELS: usize = 1 << 20;

/// Decodes every map of the bundle into `dir` (atomic writes) on the CPU; returns the written
/// paths. Files in the way are replaced as `overwrite` allows ([`write_folder`]).
///
/// PNG maps stream: each is decoded and written in bands of rows ([`STREAM_BAND_TEXELS`] texels
/// of every map at a time), so memory does not grow with a map's size. Float (EXR) maps are
/// gathered whole before they are written.
pub fn decode_to_folder(decoder: &Decoder, dir: &Path, overwrite: Overwrite) -> Result<Vec<PathBuf>, ExportError> {
    decode_to_folder_in_bands(decoder, dir, overwrite, STREAM_BAND_TEXELS)
}

/// [`decode_to_folder`] in bands of about `band_texels` texels (tests write maps in many bands).
pub fn decode_to_folder_in_bands(
    decoder: &Decoder,
    dir: &Path,
    overwrite: Overwrite,
    band_texels: usize,
) -> Result<Vec<PathBuf>, ExportError> {
    write_materials(decoder.manifest(), dir, overwrite, |mi, written| {
        let material = &decoder.manifest().materials[mi];
        let mut outputs: Vec<Option<Output>> = material.maps.iter().map(|_| None).collect();
        decoder.decode_material_bands(mi, 0, band_texels, |k, first_row, band| {
            let (Some(entry), Some(slot)) = (material.maps.get(k), outputs.get_mut(k)) else { return Ok(()) };
            let path = map_path(dir, &material.name, entry);
            let fail = |message: String| ExportError::Write { path: path.clone(), message };
            let last = first_row + band.height >= entry.info.height;
            let output = match slot.take() {
                Some(output) => output,
                None => Output::start(&path, entry).map_err(fail)?,
            };
            let output = output.push(&band, entry).map_err(fail)?;
            if last {
                output.finish(&path, entry).map_err(fail)?;
                written.push(path);
            } else {
                *slot = Some(output);
            }
            Ok(())
        })
    })
}

/// One map being written by [`decode_to_folder`].
enum Output {
    /// A PNG, its rows written as they come, into a temporary file.
    Png { file: Rc<RefCell<AtomicFile>>, stream: Box<png::StreamWriter<'static, Shared<AtomicFile>>> },
    /// Values gathered whole (a float map, written as EXR).
    Whole(DecodedMap),
}

/// What a PNG stream writes into (a temporary file, a buffer), shared with the code that takes it
/// back when the stream is done (to commit the file, to return the bytes).
struct Shared<T>(Rc<RefCell<T>>);

impl<T: Write> Write for Shared<T> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().write(bytes)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.borrow_mut().flush()
    }
}

impl Output {
    fn start(path: &Path, entry: &MapEntry) -> Result<Self, String> {
        if entry.info.sample_format == SampleFormat::F32 {
            return Ok(Self::Whole(DecodedMap { width: entry.info.width, height: 0, channels: entry.info.channels, values: Vec::new() }));
        }
        let file = Rc::new(RefCell::new(AtomicFile::create(path).map_err(|e| e.to_string())?));
        let stream = png_stream(Shared(Rc::clone(&file)), entry.info.width, entry.info.height, entry)?;
        Ok(Self::Png { file, stream: Box::new(stream) })
    }

    fn push(mut self, band: &DecodedMap, entry: &MapEntry) -> Result<Self, String> {
        match &mut self {
            Self::Png { stream, .. } => stream.write_all(&png_samples(&band.values, entry)).map_err(|e| e.to_string())?,
            Self::Whole(map) => {
                map.height += band.height;
                map.values.extend_from_slice(&band.values);
            }
        }
        Ok(self)
    }

    fn finish(self, path: &Path, entry: &MapEntry) -> Result<(), String> {
        match self {
            Self::Png { file, stream } => {
                stream.finish().map_err(|e| e.to_string())?;
                let file = Rc::try_unwrap(file).map_err(|_| "the PNG writer still holds its file".to_owned())?;
                file.into_inner().commit().map_err(|e| e.to_string())
            }
            Self::Whole(map) => crate::io::fsutil::write_atomic(path, &encode_map(&map, entry)?).map_err(|e| e.to_string()),
        }
    }
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
    write_materials(manifest, dir, overwrite, |mi, written| {
        let maps = decode_material(mi)?;
        for (map, entry) in maps.iter().zip(&manifest.materials[mi].maps) {
            let path = map_path(dir, &manifest.materials[mi].name, entry);
            let bytes = encode_map(map, entry).map_err(|message| ExportError::Write { path: path.clone(), message })?;
            crate::io::fsutil::write_atomic(&path, &bytes)
                .map_err(|e| ExportError::Write { path: path.clone(), message: e.to_string() })?;
            written.push(path);
        }
        Ok(())
    })
}

/// What [`write_folder`] and [`decode_to_folder`] share: every target checked against the record
/// before anything is decoded, each material's folder made, `write_material(material index,
/// written)` called to write its maps (pushing each path once it is in place), and the record
/// saved after each material. On an error, what was written so far is recorded (best effort: the
/// disk may be what failed), so a rerun may replace it; the error names the map.
fn write_materials(
    manifest: &Manifest,
    dir: &Path,
    overwrite: Overwrite,
    mut write_material: impl FnMut(usize, &mut Vec<PathBuf>) -> Result<(), ExportError>,
) -> Result<Vec<PathBuf>, ExportError> {
    let mut record = Written::open(dir)?;
    let targets: Vec<PathBuf> =
        manifest.materials.iter().flat_map(|material| material.maps.iter().map(|entry| map_path(dir, &material.name, entry))).collect();
    record.check(targets.iter().map(PathBuf::as_path), overwrite)?;
    let mut written = Vec::new();
    for (mi, material) in manifest.materials.iter().enumerate() {
        let folder = dir.join(&material.name);
        std::fs::create_dir_all(&folder).map_err(|e| ExportError::Write { path: folder.clone(), message: e.to_string() })?;
        let mut done = Vec::new();
        let result = write_material(mi, &mut done);
        for path in &done {
            record.add(path);
        }
        written.extend(done);
        if let Err(e) = result {
            let _ = record.save();
            return Err(e);
        }
        // After each material: a run killed later leaves the materials before recorded.
        record.save()?;
    }
    Ok(written)
}
