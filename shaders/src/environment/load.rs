//! Loading an environment from a Radiance `.hdr` or `OpenEXR` `.exr` file.

use super::{Environment, EnvironmentError, MAX_HEIGHT_PX, MAX_WIDTH_PX};
use image::{ImageDecoder, ImageFormat, ImageReader};
use std::path::Path;

/// The most bytes the decoder may allocate: the largest environment accepted as RGBA f32 (an
/// EXR decodes with alpha), 2 GiB.
const MAX_DECODE_BYTES: u64 = MAX_WIDTH_PX as u64 * MAX_HEIGHT_PX as u64 * 16;

impl Environment {
    /// Reads an equirectangular environment from `path`, a Radiance `.hdr` or an `OpenEXR` `.exr`
    /// (by its extension, any case), as linear RGB (an EXR's alpha is dropped). The size its
    /// header claims is checked against [`MAX_WIDTH_PX`] × [`MAX_HEIGHT_PX`] before any texel is
    /// decoded. Negative and non-finite values read as 0 and are counted
    /// ([`Environment::replaced_values`]). Every error names the file.
    pub fn load(path: &Path) -> Result<Self, EnvironmentError> {
        let metadata = std::fs::metadata(path).map_err(|source| EnvironmentError::Read { path: path.to_path_buf(), source })?;
        if !metadata.is_file() {
            return Err(EnvironmentError::NotAFile { path: path.to_path_buf() });
        }
        let extension = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        let format = match extension.as_deref() {
            Some("hdr") => ImageFormat::Hdr,
            Some("exr") => ImageFormat::OpenExr,
            _ => return Err(EnvironmentError::UnknownExtension { path: path.to_path_buf() }),
        };
        let file = std::fs::File::open(path).map_err(|source| EnvironmentError::Read { path: path.to_path_buf(), source })?;
        let decode_error = |source| EnvironmentError::Decode { path: path.to_path_buf(), source };
        let mut reader = ImageReader::with_format(std::io::BufReader::new(file), format);
        let mut limits = image::Limits::default();
        limits.max_alloc = Some(MAX_DECODE_BYTES);
        reader.limits(limits);
        // The decoder reads the header only; the size is checked before a texel is decoded.
        let decoder = reader.into_decoder().map_err(decode_error)?;
        let (width_px, height_px) = decoder.dimensions();
        if !(1..=MAX_WIDTH_PX).contains(&width_px) || !(1..=MAX_HEIGHT_PX).contains(&height_px) {
            return Err(EnvironmentError::Size { path: path.to_path_buf(), width_px, height_px });
        }
        let image = image::DynamicImage::from_decoder(decoder).map_err(decode_error)?;
        let rgb = image.into_rgb32f();
        let texels = rgb.as_raw().chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
        Environment::new(width_px, height_px, texels)
    }
}
