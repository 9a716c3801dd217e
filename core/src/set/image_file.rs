//! One image file's bytes to a [`Texture`]: PNG, JPEG, TGA and EXR through `image`, and EXR files
//! of one or two channels (a height map's `Y` or `R`, with or without `A`, as painting and
//! simulation tools write them), which `image` does not read, through `exr`. Sizes are checked
//! from the header before any pixel is decoded.

use super::ingest::{BOMB_MIN_DECODED_BYTES, IngestError, MAX_DIMENSION, MAX_EXPANSION, MAX_IMAGE_BYTES, MIN_DIMENSION};
use crate::set::{ColorSpace, MapInfo, MapKind, NormalConvention, SampleFormat, Texture};
use image::{DynamicImage, ImageReader};
use std::path::Path;

/// Decodes one image file into a [`Texture`] of the given kind. The file is opened read-only
/// and must be a regular file (a FIFO or device would block or never end).
pub(crate) fn load_texture(path: &Path, kind: MapKind, normal_convention: NormalConvention) -> Result<Texture, IngestError> {
    let io = |source: std::io::Error| IngestError::Io { path: path.to_path_buf(), source };
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() {
        return Err(IngestError::Unsupported { path: path.to_path_buf(), what: "not a regular file".into() });
    }
    if meta.len() > MAX_IMAGE_BYTES {
        return Err(IngestError::Unsupported {
            path: path.to_path_buf(),
            what: format!("file of {} bytes, beyond the limit of {MAX_IMAGE_BYTES}", meta.len()),
        });
    }
    let bytes = std::fs::read(path).map_err(io)?;
    decode_texture(&bytes, path, kind, normal_convention)
}

/// Decodes an image file's bytes into a [`Texture`]. The format is told from the bytes, else
/// from `path`'s extension; `path` names the file in errors. Dimensions are checked before any
/// pixel is decoded, and decoding runs under allocation limits (decompression bombs are errors).
pub fn decode_texture(bytes: &[u8], path: &Path, kind: MapKind, normal_convention: NormalConvention) -> Result<Texture, IngestError> {
    let decode_err = |message: String| IngestError::Decode { path: path.to_path_buf(), message };
    if let Some(gray) = gray_exr_channels(bytes) {
        return decode_gray_exr(bytes, &gray, path, kind, normal_convention);
    }
    let reader = || -> Result<ImageReader<std::io::Cursor<&[u8]>>, IngestError> {
        let mut reader = ImageReader::new(std::io::Cursor::new(bytes));
        if let Ok(format) = image::ImageFormat::from_path(path) {
            reader.set_format(format);
        }
        reader.with_guessed_format().map_err(|source| IngestError::Io { path: path.to_path_buf(), source })
    };
    if reader()?.format().is_none() {
        return Err(decode_err("not a PNG, JPEG, TGA or EXR image".into()));
    }
    // The header alone first (bounded work), so a size beyond the limit is named as such.
    let mut decoder = reader()?.into_decoder().map_err(|e| decode_err(e.to_string()))?;
    let (width, height) = image::ImageDecoder::dimensions(&decoder);
    check_dimensions(path, width, height)?;
    let decoded_bytes = image::ImageDecoder::total_bytes(&decoder);
    let file_bytes = bytes.len() as u64;
    if decoded_bytes > BOMB_MIN_DECODED_BYTES && decoded_bytes / file_bytes.max(1) > MAX_EXPANSION {
        return Err(IngestError::Bomb { path: path.to_path_buf(), width, height, decoded_bytes, file_bytes });
    }
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_DIMENSION);
    limits.max_image_height = Some(MAX_DIMENSION);
    limits.max_alloc = Some(MAX_IMAGE_BYTES);
    image::ImageDecoder::set_limits(&mut decoder, limits).map_err(|e| decode_err(e.to_string()))?;
    let image = DynamicImage::from_decoder(decoder).map_err(|e| decode_err(e.to_string()))?;
    texture_from_image(&image, path, kind, normal_convention)
}

fn check_dimensions(path: &Path, width: u32, height: u32) -> Result<(), IngestError> {
    if width == 0 || height == 0 {
        return Err(IngestError::ZeroSize { path: path.to_path_buf(), width, height });
    }
    if width > MAX_DIMENSION || height > MAX_DIMENSION {
        return Err(IngestError::TooLarge { path: path.to_path_buf(), width, height, max: MAX_DIMENSION });
    }
    Ok(())
}

/// Converts a decoded image into a normalised [`Texture`]. An image under [`MIN_DIMENSION`] on a
/// side must be constant ([`IngestError::TooSmall`] otherwise); it is returned at its own size
/// ([`load_material`] gives it the material's).
pub(crate) fn texture_from_image(
    image: &DynamicImage,
    path: &Path,
    kind: MapKind,
    normal_convention: NormalConvention,
) -> Result<Texture, IngestError> {
    let (width, height) = (image.width(), image.height());
    check_dimensions(path, width, height)?;
    let values = u64::from(width) * u64::from(height) * u64::from(image.color().channel_count());
    if values > super::limits::MAX_MAP_VALUES {
        return Err(IngestError::TooLarge { path: path.to_path_buf(), width, height, max: MAX_DIMENSION });
    }
    let unsupported = |what: &str| IngestError::Unsupported { path: path.to_path_buf(), what: what.to_owned() };
    let (channels, sample_format, texels): (u32, SampleFormat, Vec<f32>) = match image {
        DynamicImage::ImageLuma8(i) => (1, SampleFormat::U8, i.as_raw().iter().map(|&v| f32::from(v) / 255.0).collect()),
        DynamicImage::ImageLumaA8(i) => (2, SampleFormat::U8, i.as_raw().iter().map(|&v| f32::from(v) / 255.0).collect()),
        DynamicImage::ImageRgb8(i) => (3, SampleFormat::U8, i.as_raw().iter().map(|&v| f32::from(v) / 255.0).collect()),
        DynamicImage::ImageRgba8(i) => (4, SampleFormat::U8, i.as_raw().iter().map(|&v| f32::from(v) / 255.0).collect()),
        DynamicImage::ImageLuma16(i) => (1, SampleFormat::U16, i.as_raw().iter().map(|&v| f32::from(v) / 65535.0).collect()),
        DynamicImage::ImageLumaA16(i) => (2, SampleFormat::U16, i.as_raw().iter().map(|&v| f32::from(v) / 65535.0).collect()),
        DynamicImage::ImageRgb16(i) => (3, SampleFormat::U16, i.as_raw().iter().map(|&v| f32::from(v) / 65535.0).collect()),
        DynamicImage::ImageRgba16(i) => (4, SampleFormat::U16, i.as_raw().iter().map(|&v| f32::from(v) / 65535.0).collect()),
        DynamicImage::ImageRgb32F(i) => (3, SampleFormat::F32, i.as_raw().clone()),
        DynamicImage::ImageRgba32F(i) => (4, SampleFormat::F32, i.as_raw().clone()),
        _ => return Err(unsupported("pixel format (expected 8/16-bit gray, gray+alpha, RGB, RGBA or float RGB/RGBA)")),
    };
    texture_from_samples(path, kind, normal_convention, (width, height, channels), sample_format, texels)
}

/// A [`Texture`] from interleaved samples (`[0, 1]`, or any finite float for
/// [`SampleFormat::F32`], mapped per channel to `[0, 1]` by its range).
fn texture_from_samples(
    path: &Path,
    kind: MapKind,
    normal_convention: NormalConvention,
    (width, height, channels): (u32, u32, u32),
    sample_format: SampleFormat,
    mut texels: Vec<f32>,
) -> Result<Texture, IngestError> {
    let unsupported = |what: &str| IngestError::Unsupported { path: path.to_path_buf(), what: what.to_owned() };
    let mut channel_ranges = vec![[0.0_f32, 1.0_f32]; channels as usize];
    if sample_format == SampleFormat::F32
        && kind == MapKind::Normal
        && channels >= 3
        && float_normals_are_signed(&texels, channels as usize)
    {
        // Stored as every normal map is, `n · 0.5 + 0.5` (then by its range), so that each
        // stage maps it to a vector once.
        for texel in texels.chunks_exact_mut(channels as usize) {
            for v in &mut texel[..3] {
                *v = *v * 0.5 + 0.5;
            }
        }
    }
    if sample_format == SampleFormat::F32 {
        // Float data is mapped per channel to [0, 1] by its range; the range is stored in the
        // bundle so decode writes the original scale back.
        for (c, range) in channel_ranges.iter_mut().enumerate() {
            let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
            for v in texels.iter().skip(c).step_by(channels as usize) {
                if !v.is_finite() {
                    return Err(unsupported("float image with NaN or infinite values"));
                }
                lo = lo.min(f64::from(*v));
                hi = hi.max(f64::from(*v));
            }
            if hi <= lo {
                hi = lo + lo.abs().max(1.0);
            }
            if !((hi - lo) as f32).is_finite() {
                return Err(unsupported("float image whose value range overflows f32"));
            }
            *range = [lo as f32, hi as f32];
            for v in texels.iter_mut().skip(c).step_by(channels as usize) {
                *v = ((f64::from(*v) - lo) / (hi - lo)) as f32;
            }
        }
    }
    // Float images (EXR) hold linear values, colour included: only 8- and 16-bit colour is
    // sRGB-encoded.
    let color_space = if sample_format == SampleFormat::F32 { ColorSpace::Linear } else { kind.color_space() };
    let texture = Texture {
        info: MapInfo { kind, width, height, channels, sample_format, color_space, normal_convention, channel_ranges },
        source_path: path.to_path_buf(),
        texels,
    };
    if (width < MIN_DIMENSION || height < MIN_DIMENSION) && texture.constant_value().is_none() {
        return Err(IngestError::TooSmall { path: path.to_path_buf(), width, height, min: MIN_DIMENSION });
    }
    Ok(texture)
}

/// Whether a float normal map (`channels` ≥ 3, interleaved) holds signed vectors (`n`, each
/// component in `[−1, 1]`) rather than encoded ones (`n · 0.5 + 0.5`, as 8- and 16-bit maps do):
/// signed when any x, y or z is negative (an encoded value never is), or when its texels are unit
/// vectors as they stand (within 2 % on average) but not once decoded as `2v − 1` (a flat signed
/// map, every texel `(0, 0, 1)`).
fn float_normals_are_signed(texels: &[f32], channels: usize) -> bool {
    let xyz = || texels.chunks_exact(channels).map(|t| [t[0], t[1], t[2]]);
    if xyz().flatten().any(|v| v < 0.0) {
        return true;
    }
    let count = xyz().count().max(1) as f64;
    let mean_length = |f: fn(f32) -> f32| xyz().map(|n| f64::from(n.map(f).iter().map(|c| c * c).sum::<f32>().sqrt())).sum::<f64>() / count;
    let (as_signed, as_encoded) = (mean_length(|v| v), mean_length(|v| v * 2.0 - 1.0));
    (as_signed - 1.0).abs() < 0.02 && (as_encoded - 1.0).abs() >= 0.02
}

/// EXR's magic number, the first four bytes of every EXR file.
const EXR_MAGIC: [u8; 4] = [0x76, 0x2f, 0x31, 0x01];

/// The channels of an EXR file that `image` does not read and [`decode_gray_exr`] does: one
/// channel of any name (`Y`, `R`, `height`…), or one and an alpha (`A`), in a flat (not deep)
/// first layer; the alpha last. `None` for anything else, which `image` reads or names the fault.
fn gray_exr_channels(bytes: &[u8]) -> Option<Vec<String>> {
    if !bytes.starts_with(&EXR_MAGIC) {
        return None;
    }
    let meta = exr::meta::MetaData::read_from_buffered(std::io::Cursor::new(bytes), false).ok()?;
    let header = meta.headers.first().filter(|h| !h.deep)?;
    let mut names: Vec<String> = header.channels.list.iter().map(|c| c.name.to_string()).collect();
    // `A`, or a layer's (`beauty.A`): a channel name, not a file extension.
    let alpha = |n: &String| n == "A" || n.rsplit('.').next() == Some("A");
    names.sort_by_key(alpha);
    match names.as_slice() {
        [_] => Some(names),
        [gray, a] if !alpha(gray) && alpha(a) => Some(names),
        _ => None,
    }
}

/// Reads a one- or two-channel EXR ([`gray_exr_channels`]) as a gray or gray+alpha float map,
/// its size checked from the header (dimensions, and decoded bytes against the file's: a bomb)
/// before any pixel is decoded.
fn decode_gray_exr(
    bytes: &[u8],
    names: &[String],
    path: &Path,
    kind: MapKind,
    normal_convention: NormalConvention,
) -> Result<Texture, IngestError> {
    use exr::prelude::{ReadChannels as _, ReadLayers as _};
    let decode_err = |message: String| IngestError::Decode { path: path.to_path_buf(), message };
    let meta = exr::meta::MetaData::read_from_buffered(std::io::Cursor::new(bytes), false).map_err(|e| decode_err(e.to_string()))?;
    let size = meta.headers.first().map(|h| h.layer_size).ok_or_else(|| decode_err("no layer".into()))?;
    let dimension = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
    let (width, height) = (dimension(size.0), dimension(size.1));
    check_dimensions(path, width, height)?;
    let channels = names.len() as u32;
    let decoded_bytes = u64::from(width) * u64::from(height) * u64::from(channels) * 4;
    let file_bytes = bytes.len() as u64;
    if decoded_bytes > BOMB_MIN_DECODED_BYTES && decoded_bytes / file_bytes.max(1) > MAX_EXPANSION {
        return Err(IngestError::Bomb { path: path.to_path_buf(), width, height, decoded_bytes, file_bytes });
    }
    let image = exr::prelude::read()
        .no_deep_data()
        .largest_resolution_level()
        .all_channels()
        .first_valid_layer()
        .all_attributes()
        .from_buffered(std::io::Cursor::new(bytes))
        .map_err(|e| decode_err(e.to_string()))?;
    let layer = &image.layer_data;
    if layer.size != size {
        return Err(decode_err(format!("layer of {}x{}, not the header's {}x{}", layer.size.0, layer.size.1, size.0, size.1)));
    }
    let texels_count = size.0 * size.1;
    let mut texels = vec![0.0f32; texels_count * names.len()];
    for (c, name) in names.iter().enumerate() {
        let channel = layer
            .channel_data
            .list
            .iter()
            .find(|ch| ch.name.to_string() == *name)
            .ok_or_else(|| decode_err(format!("no channel {name}")))?;
        if channel.sample_data.len() != texels_count {
            return Err(decode_err(format!("channel {name} holds {} samples for {width}x{height}", channel.sample_data.len())));
        }
        for (texel, value) in texels.chunks_mut(names.len()).zip(channel.sample_data.values_as_f32()) {
            texel[c] = value;
        }
    }
    texture_from_samples(path, kind, normal_convention, (width, height, channels), SampleFormat::F32, texels)
}

/// Writes a one- or two-channel float map as EXR, channels `Y` (and `A`): what
/// [`decode_gray_exr`] reads back. `values` interleaved, `channels` 1 or 2.
#[cfg(feature = "train")]
pub(crate) fn encode_gray_exr(values: &[f32], width: u32, height: u32, channels: u32) -> Result<Vec<u8>, String> {
    use exr::prelude::{Image, SpecificChannels, Vec2, WritableImage as _};
    let (w, h) = (width as usize, height as usize);
    if values.len() != w * h * channels as usize {
        return Err(format!("{} values for {width}x{height} with {channels} channels", values.len()));
    }
    let mut out = std::io::Cursor::new(Vec::new());
    let written = match channels {
        1 => {
            let samples = SpecificChannels::build().with_channel("Y").with_pixel_fn(|Vec2(x, y)| (values[y * w + x],));
            Image::from_channels((w, h), samples).write().to_buffered(&mut out)
        }
        2 => {
            let samples = SpecificChannels::build()
                .with_channel("Y")
                .with_channel("A")
                .with_pixel_fn(|Vec2(x, y)| (values[(y * w + x) * 2], values[(y * w + x) * 2 + 1]));
            Image::from_channels((w, h), samples).write().to_buffered(&mut out)
        }
        c => return Err(format!("{c} channels are not a gray EXR")),
    };
    written.map_err(|e| e.to_string())?;
    Ok(out.into_inner())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A one-channel EXR named `name` (and an `A` channel with `alpha`), 8×6, values `y·x − 3`.
    fn gray_exr(name: &str, alpha: bool) -> Vec<u8> {
        use exr::prelude::{Image, SpecificChannels, Vec2, WritableImage as _};
        let value = |x: usize, y: usize| (y * x) as f32 - 3.0;
        let mut out = std::io::Cursor::new(Vec::new());
        if alpha {
            let samples = SpecificChannels::build().with_channel(name).with_channel("A").with_pixel_fn(|Vec2(x, y)| (value(x, y), 0.5f32));
            Image::from_channels((8, 6), samples).write().to_buffered(&mut out).unwrap();
        } else {
            let samples = SpecificChannels::build().with_channel(name).with_pixel_fn(|Vec2(x, y)| (value(x, y),));
            Image::from_channels((8, 6), samples).write().to_buffered(&mut out).unwrap();
        }
        out.into_inner()
    }

    /// Height maps as painting and simulation tools write them, one `Y` or `R` channel (with or
    /// without alpha), load as float maps at their own scale; `image` refused them ("image does
    /// not contain non-deep rgb channels", issue 67).
    #[test]
    fn single_channel_exrs_load_at_their_scale() {
        for (name, alpha) in [("Y", false), ("R", false), ("height", false), ("Y", true)] {
            let bytes = gray_exr(name, alpha);
            let texture = decode_texture(&bytes, Path::new("h.exr"), MapKind::Height, NormalConvention::OpenGl).unwrap();
            let channels = if alpha { 2 } else { 1 };
            assert_eq!((texture.info.width, texture.info.height, texture.info.channels), (8, 6, channels), "{name}");
            assert_eq!(texture.info.sample_format, SampleFormat::F32);
            let [low, high] = texture.info.channel_ranges[0];
            assert!((low + 3.0).abs() < 1e-6 && (high - 32.0).abs() < 1e-6, "{name}: the range of y·x − 3 over 8×6 is {low}..{high}");
            // Texel (x 5, y 4): 17, stored as (17 + 3) / 35.
            let stored = texture.texels[(4 * 8 + 5) * channels as usize];
            assert!((stored - 20.0 / 35.0).abs() < 1e-6, "{name}: {stored}");
        }
    }

    /// Float sources are linear, colour included; a float normal map is stored encoded (`n · 0.5 +
    /// 0.5`, as 8- and 16-bit ones are) whether its file holds signed or encoded vectors, so every
    /// later stage maps it to a vector once (issue 67: signed normals were mapped twice).
    #[test]
    fn float_maps_are_linear_and_signed_normals_are_stored_encoded() {
        let at = |texture: &Texture, i: usize, c: usize| {
            let [lo, hi] = texture.info.channel_ranges[c];
            lo + (hi - lo) * texture.texels[i * texture.info.channels as usize + c]
        };
        let tilted = [0.6f32, -0.48, 0.64];
        for (what, texels, expected) in [
            ("signed", [[0.0, 0.0, 1.0], tilted], [0.5, 0.5, 1.0]),
            ("flat signed", [[0.0, 0.0, 1.0]; 2], [0.5, 0.5, 1.0]),
            ("encoded", [[0.5, 0.5, 1.0], [0.8, 0.26, 0.82]], [0.5, 0.5, 1.0]),
        ] {
            // 4×4 texels: the first, then fifteen of the second.
            let texels: Vec<f32> = texels[0].iter().chain(texels[1].repeat(15).iter()).copied().collect();
            let texture =
                texture_from_samples(Path::new("n.exr"), MapKind::Normal, NormalConvention::OpenGl, (4, 4, 3), SampleFormat::F32, texels)
                    .unwrap();
            for (c, e) in expected.iter().enumerate() {
                assert!((at(&texture, 0, c) - e).abs() < 1e-6, "{what}: channel {c} {}", at(&texture, 0, c));
            }
            assert_eq!(texture.info.color_space, ColorSpace::Linear);
        }
        let basecolor = texture_from_samples(
            Path::new("c.exr"),
            MapKind::Basecolor,
            NormalConvention::OpenGl,
            (4, 4, 3),
            SampleFormat::F32,
            [0.2, 0.4, 2.0].repeat(16),
        )
        .unwrap();
        assert_eq!(basecolor.info.color_space, ColorSpace::Linear, "a float base colour is linear, not sRGB");
    }

    /// What export writes for a one- or two-channel float map reads back as it was.
    #[cfg(feature = "train")]
    #[test]
    fn gray_exrs_written_read_back() {
        let values: Vec<f32> = (0..4 * 5 * 2).map(|i| i as f32 * 0.25 - 1.0).collect();
        for channels in [1u32, 2] {
            let n = 4 * 5 * channels as usize;
            let bytes = encode_gray_exr(&values[..n], 4, 5, channels).unwrap();
            let texture = decode_texture(&bytes, Path::new("h.exr"), MapKind::Height, NormalConvention::OpenGl).unwrap();
            assert_eq!(texture.info.channels, channels);
            for (c, range) in texture.info.channel_ranges.iter().enumerate() {
                for (t, v) in texture.texels.iter().zip(&values[..n]).skip(c).step_by(channels as usize) {
                    assert!((range[0] + (range[1] - range[0]) * t - v).abs() < 1e-5);
                }
            }
        }
        assert!(encode_gray_exr(&values, 4, 5, 3).is_err());
    }

    /// A one-channel EXR whose header claims a size past the limit is refused from the header.
    #[test]
    fn a_gray_exr_claiming_a_huge_size_is_refused_from_its_header() {
        let mut bytes = gray_exr("Y", false);
        // The data window's max x, y (box2i after "dataWindow\0box2i\0" and its size).
        let at = bytes.windows(16).position(|w| w.starts_with(b"dataWindow\0box2i")).unwrap() + 17 + 4 + 8;
        bytes[at..at + 4].copy_from_slice(&100_000i32.to_le_bytes());
        let error = decode_texture(&bytes, Path::new("h.exr"), MapKind::Height, NormalConvention::OpenGl).unwrap_err().to_string();
        assert!(error.contains("h.exr") && error.contains("beyond the limit of 16384x16384"), "{error}");
    }
}
