//! An HDR environment prepared for split-sum image-based lighting (Karis 2013): the CPU side the
//! viewport uploads and the reference its parity tests compare against.
//!
//! - [`Environment`]: linear RGB radiance in an equirectangular image, +Y up, loaded from `.hdr` or
//!   `.exr` ([`Environment::load`]) or made here ([`Environment::studio`]). The one mapping
//!   between directions and the image is [`direction_to_equirect_uv`] /
//!   [`equirect_uv_to_direction`].
//! - [`prepare`] turns it into a [`PreparedEnvironment`]: a GGX-prefiltered specular cube (one
//!   level per roughness, [`CubeLevel`], faces in [`cube_direction`]'s layout), nine SH
//!   coefficients of diffuse irradiance/π ([`sh9_basis`]) and the split-sum table ([`BrdfTable`]).
//!   Rotation is not baked in: the viewport rotates the lookup direction.
//! - [`PreparedEnvironment::specular`], [`PreparedEnvironment::irradiance`] and
//!   [`PreparedEnvironment::brdf`] are the lookups the CPU reference renderer calls, filtered as
//!   the GPU samples the uploaded data.
//! - The prepared data is cached by content ([`PreparedEnvironment::cache_key`],
//!   [`PreparedEnvironment::write_cache`], [`PreparedEnvironment::read_cache`]).
//! - [`tonemap`]: the display transforms (Khronos PBR Neutral, `AgX`, ACES Hill, none) on the CPU
//!   and their WGSL twin, [`tonemap::TONEMAP_WGSL`].

mod brdf;
mod cache;
mod cube;
mod ggx;
mod load;
mod prefilter;
mod pyramid;
mod sh;
mod studio;
#[cfg(test)]
mod tests;
pub mod tonemap;

use std::path::PathBuf;

pub use brdf::BrdfTable;
pub use cache::{CacheError, MAX_SOURCE_FILE_BYTES};
pub use cube::{CUBE_FACES, CubeLevel, cube_direction, cube_face_uv};
pub use sh::sh9_basis;
pub use studio::STUDIO_WIDTH_PX;
pub use tonemap::{TONEMAP_WGSL, ToneMapper};

/// The widest environment accepted, in texels (a 16K equirectangular image).
pub const MAX_WIDTH_PX: u32 = 16384;
/// The tallest environment accepted, in texels.
pub const MAX_HEIGHT_PX: u32 = 8192;

/// Why an environment could not be loaded or prepared. Every fault of a file names it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EnvironmentError {
    /// The path is a folder, missing, or not a regular file.
    #[error("{path:?} is not a file")]
    NotAFile {
        /// The path given.
        path: PathBuf,
    },
    /// The extension is neither `.hdr` nor `.exr`.
    #[error("{path:?} is not an environment image: the extension must be .hdr or .exr")]
    UnknownExtension {
        /// The path given.
        path: PathBuf,
    },
    /// The file could not be opened or read.
    #[error("cannot read {path:?}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The image decoder refused the file (truncated, corrupt, or another format under the name).
    #[error("cannot decode {path:?}: {source}")]
    Decode {
        /// The file.
        path: PathBuf,
        /// What the decoder said.
        source: image::ImageError,
    },
    /// The header claims a size above [`MAX_WIDTH_PX`] × [`MAX_HEIGHT_PX`] (checked before
    /// decoding) or a size of zero.
    #[error("{path:?} is {width_px}x{height_px} texels; an environment is 1x1 to {MAX_WIDTH_PX}x{MAX_HEIGHT_PX}")]
    Size {
        /// The file.
        path: PathBuf,
        /// The width its header claims.
        width_px: u32,
        /// The height its header claims.
        height_px: u32,
    },
    /// [`Environment::new`] was given a size outside 1x1 to [`MAX_WIDTH_PX`] × [`MAX_HEIGHT_PX`],
    /// or a texel count that is not width × height.
    #[error("an environment of {width_px}x{height_px} texels cannot hold {texel_count} texels (1x1 to {MAX_WIDTH_PX}x{MAX_HEIGHT_PX})")]
    Shape {
        /// The width given.
        width_px: u32,
        /// The height given.
        height_px: u32,
        /// The number of texels given.
        texel_count: usize,
    },
    /// A [`PrepareOptions`] field is outside its range.
    #[error("PrepareOptions::{name} is {value}; it must be in {min}..={max}")]
    Option {
        /// The field.
        name: &'static str,
        /// Its value.
        value: u32,
        /// The smallest value allowed.
        min: u32,
        /// The largest value allowed.
        max: u32,
    },
}

/// Linear RGB radiance around a point, as an equirectangular image (+Y up; the mapping is
/// [`direction_to_equirect_uv`]). Row 0 is the top (+Y); texel `(x, y)` is
/// `texels()[y * width_px + x]` and its centre is at `u = (x + 0.5) / width_px`,
/// `v = (y + 0.5) / height_px`.
///
/// Every value is finite and non-negative: [`Environment::new`] (and so [`Environment::load`])
/// replaces a negative, NaN or infinite channel value by 0 and counts it
/// ([`Environment::replaced_values`]) rather than refusing the image, since a few such values (an
/// EXR's negative ringing around a sun, say) are common in published HDRIs and harmless at 0.
#[derive(Clone, Debug, PartialEq)]
pub struct Environment {
    width_px: u32,
    height_px: u32,
    texels: Vec<[f32; 3]>,
    replaced_values: usize,
}

impl Environment {
    /// An environment of `width_px` × `height_px` texels, rows top (+Y) to bottom. Negative and
    /// non-finite channel values become 0 (counted in [`Environment::replaced_values`]).
    pub fn new(width_px: u32, height_px: u32, mut texels: Vec<[f32; 3]>) -> Result<Self, EnvironmentError> {
        let fits = (1..=MAX_WIDTH_PX).contains(&width_px) && (1..=MAX_HEIGHT_PX).contains(&height_px);
        if !fits || texels.len() != width_px as usize * height_px as usize {
            return Err(EnvironmentError::Shape { width_px, height_px, texel_count: texels.len() });
        }
        let mut replaced_values = 0;
        for value in texels.iter_mut().flatten() {
            // `!(v >= 0)` is true for NaN too.
            if !(*value >= 0.0 && value.is_finite()) {
                *value = 0.0;
                replaced_values += 1;
            }
        }
        Ok(Self { width_px, height_px, texels, replaced_values })
    }

    /// Width in texels (the full turn around +Y).
    #[must_use]
    pub fn width_px(&self) -> u32 {
        self.width_px
    }

    /// Height in texels (+Y at the top row's edge to −Y at the bottom's).
    #[must_use]
    pub fn height_px(&self) -> u32 {
        self.height_px
    }

    /// The texels, row-major from the top row; linear RGB, finite and non-negative.
    #[must_use]
    pub fn texels(&self) -> &[[f32; 3]] {
        &self.texels
    }

    /// How many channel values were negative, NaN or infinite and now read as 0.
    #[must_use]
    pub fn replaced_values(&self) -> usize {
        self.replaced_values
    }

    /// The mean radiance over the sphere (each texel weighted by its solid angle), per channel.
    #[must_use]
    pub fn mean_radiance(&self) -> [f32; 3] {
        let weights = sh::row_solid_angles(self.height_px);
        let mut sum = [0.0f64; 3];
        for (row, row_weight) in self.texels.chunks_exact(self.width_px as usize).zip(&weights) {
            let weight = row_weight / f64::from(self.width_px);
            for texel in row {
                for (s, v) in sum.iter_mut().zip(texel) {
                    *s += f64::from(*v) * weight;
                }
            }
        }
        sum.map(|s| (s / (4.0 * std::f64::consts::PI)) as f32)
    }

    /// The radiance towards `dir` (any length but zero), bilinear between texel centres (wrapping
    /// around +Y, clamped at the poles).
    #[must_use]
    pub fn radiance(&self, dir: [f32; 3]) -> [f32; 3] {
        pyramid::bilinear(self.width_px, self.height_px, &self.texels, direction_to_equirect_uv(dir))
    }
}

/// The equirectangular coordinates of direction `dir` (any length but zero; +Y up): `u` turns
/// with the azimuth, `u = 0.5 + atan2(x, −z) / 2π` (so the image's centre column looks along −Z,
/// its quarter at u = 0.75 along +X), and `v = acos(y) / π` (0 at +Y, the top row; 1 at −Y).
/// The one description of the mapping: [`equirect_uv_to_direction`] inverts it, the loader, the
/// prefilter, the SH projection and the studio environment all use it, and so must the viewport.
#[must_use]
pub fn direction_to_equirect_uv(dir: [f32; 3]) -> [f32; 2] {
    let [x, y, z] = dir;
    let length = (x * x + y * y + z * z).sqrt();
    let cos_theta = if length > 0.0 { (y / length).clamp(-1.0, 1.0) } else { 1.0 };
    [0.5 + x.atan2(-z) / std::f32::consts::TAU, cos_theta.acos() / std::f32::consts::PI]
}

/// The unit direction at equirectangular coordinates `uv` (the inverse of
/// [`direction_to_equirect_uv`]): azimuth `φ = (u − 0.5)·2π`, polar angle `θ = v·π`, direction
/// `(sin θ sin φ, cos θ, −sin θ cos φ)`.
#[must_use]
pub fn equirect_uv_to_direction(uv: [f32; 2]) -> [f32; 3] {
    let phi = (uv[0] - 0.5) * std::f32::consts::TAU;
    let theta = uv[1] * std::f32::consts::PI;
    let (sin_theta, cos_theta) = theta.sin_cos();
    let (sin_phi, cos_phi) = phi.sin_cos();
    [sin_theta * sin_phi, cos_theta, -sin_theta * cos_phi]
}

/// How [`prepare`] prepares an environment. Every field is part of
/// [`PreparedEnvironment::cache_key`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PrepareOptions {
    /// Side of the specular cube's level-0 faces, in texels, 1 to 4096 (default 128).
    pub face_size_px: u32,
    /// Levels of the specular cube, 1 to 13 (default 6). Level `k` is filtered for perceptual
    /// roughness `k / (level_count − 1)` (0 for a single level) and its faces are
    /// `max(face_size_px >> k, 1)` texels a side: a GPU mip chain, sampled at mip
    /// `roughness · (level_count − 1)`.
    pub level_count: u32,
    /// GGX samples per texel at roughness `r` are `base_samples · 2^⌊4r⌋` (Bevy's schedule:
    /// 32 to 512 at the default 32); 1 to 4096. Level 0 (roughness 0) is the source resampled,
    /// without samples.
    pub base_samples: u32,
    /// Side of the split-sum table, in entries, 2 to 1024 (default 64).
    pub brdf_size_px: u32,
    /// GGX samples per split-sum table entry, 1 to 65536 (default 512).
    pub brdf_samples: u32,
}

impl Default for PrepareOptions {
    fn default() -> Self {
        Self { face_size_px: 128, level_count: 6, base_samples: 32, brdf_size_px: 64, brdf_samples: 512 }
    }
}

impl PrepareOptions {
    /// Every field within its documented range, or the first that is not.
    pub fn validate(&self) -> Result<(), EnvironmentError> {
        let ranges = [
            ("face_size_px", self.face_size_px, 1, 4096),
            ("level_count", self.level_count, 1, 13),
            ("base_samples", self.base_samples, 1, 4096),
            ("brdf_size_px", self.brdf_size_px, 2, 1024),
            ("brdf_samples", self.brdf_samples, 1, 65536),
        ];
        for (name, value, min, max) in ranges {
            if !(min..=max).contains(&value) {
                return Err(EnvironmentError::Option { name, value, min, max });
            }
        }
        Ok(())
    }

    /// The perceptual roughness level `level` is filtered for: `level / (level_count − 1)`.
    #[must_use]
    pub fn level_roughness(&self, level: u32) -> f32 {
        if self.level_count <= 1 { 0.0 } else { level as f32 / (self.level_count - 1) as f32 }
    }

    /// The side of level `level`'s faces in texels: `max(face_size_px >> level, 1)`.
    #[must_use]
    pub fn level_face_size_px(&self, level: u32) -> u32 {
        self.face_size_px.checked_shr(level).unwrap_or(0).max(1)
    }

    /// GGX samples per texel of level `level`: `base_samples · 2^⌊4·level / (level_count − 1)⌋`
    /// (0 for level 0, which is resampled).
    #[must_use]
    pub fn level_samples(&self, level: u32) -> u32 {
        if level == 0 || self.level_count <= 1 {
            return 0;
        }
        self.base_samples << (4 * level / (self.level_count - 1)).min(4)
    }
}

/// An environment prepared for split-sum image-based lighting by [`prepare`] (or read back from
/// its cache). Data layouts are documented on [`CubeLevel`], [`sh9_basis`] and [`BrdfTable`].
#[derive(Clone, Debug, PartialEq)]
pub struct PreparedEnvironment {
    options: PrepareOptions,
    specular: Vec<CubeLevel>,
    irradiance_sh: [[f32; 3]; 9],
    brdf: BrdfTable,
}

impl PreparedEnvironment {
    /// The options it was prepared with.
    #[must_use]
    pub fn options(&self) -> &PrepareOptions {
        &self.options
    }

    /// The specular cube's levels, roughness 0 first ([`PrepareOptions::level_count`] of them).
    #[must_use]
    pub fn specular_levels(&self) -> &[CubeLevel] {
        &self.specular
    }

    /// Nine RGB coefficients, in [`sh9_basis`]'s order, with the cosine lobe and 1/π folded in:
    /// `Σ coefficient[i] · sh9_basis(n)[i]` is the irradiance at a surface facing `n` divided by
    /// π, i.e. the radiance a white Lambertian surface reflects (see
    /// [`PreparedEnvironment::irradiance`]).
    #[must_use]
    pub fn irradiance_sh(&self) -> &[[f32; 3]; 9] {
        &self.irradiance_sh
    }

    /// The split-sum table.
    #[must_use]
    pub fn brdf_table(&self) -> &BrdfTable {
        &self.brdf
    }

    /// The prefiltered radiance towards `dir` (any length but zero) at perceptual `roughness`
    /// (clamped to [0, 1]): trilinear, bilinear in a face (clamped at the face's edges) at the two
    /// levels around `roughness · (level_count − 1)` and linear between them. A GPU sampling the
    /// uploaded cube with a linear sampler at that mip agrees away from face edges (hardware
    /// filters across them).
    #[must_use]
    pub fn specular(&self, dir: [f32; 3], roughness: f32) -> [f32; 3] {
        let last = self.specular.len().saturating_sub(1);
        let position = if roughness.is_nan() { 0.0 } else { roughness.clamp(0.0, 1.0) * last as f32 };
        let lower = (position.floor() as usize).min(last);
        let upper = (lower + 1).min(last);
        let t = position - lower as f32;
        let (Some(a), Some(b)) = (self.specular.get(lower), self.specular.get(upper)) else {
            return [0.0; 3];
        };
        let a = a.sample(dir);
        if t <= 0.0 || upper == lower {
            return a;
        }
        let b = b.sample(dir);
        std::array::from_fn(|c| a[c] + (b[c] - a[c]) * t)
    }

    /// The diffuse irradiance at a surface facing `normal` (unit length), divided by π: the
    /// radiance a white Lambertian surface reflects. Evaluated from [`Self::irradiance_sh`] and
    /// clamped at 0 (nine coefficients ring: opposite a strong sun they can dip below 0).
    #[must_use]
    pub fn irradiance(&self, normal: [f32; 3]) -> [f32; 3] {
        let basis = sh9_basis(normal);
        let mut out = [0.0f32; 3];
        for (coefficient, y) in self.irradiance_sh.iter().zip(basis) {
            for (o, c) in out.iter_mut().zip(coefficient) {
                *o += c * y;
            }
        }
        out.map(|v| v.max(0.0))
    }

    /// The split-sum terms `[A, B]` at `n_dot_v` and perceptual `roughness` (each clamped to
    /// [0, 1]; specular = prefiltered · (F0·A + B)), bilinear as [`BrdfTable`] describes.
    #[must_use]
    pub fn brdf(&self, n_dot_v: f32, roughness: f32) -> [f32; 2] {
        self.brdf.sample(n_dot_v, roughness)
    }
}

/// Prepares `environment` for image-based lighting (rayon-parallel; deterministic: the same input
/// and options give the same bits on any thread count): the specular cube (level 0 the source
/// resampled with a filtered lookup, the others GGX-prefiltered with N = V = R, importance
/// sampled on a Hammersley set with filtered importance sampling from a cube mip pyramid of the
/// source, whose level 0 keeps the source's energy), the irradiance SH (from the source itself)
/// and the split-sum table.
pub fn prepare(environment: &Environment, options: &PrepareOptions) -> Result<PreparedEnvironment, EnvironmentError> {
    options.validate()?;
    let source = pyramid::Pyramid::new(environment);
    let specular = (0..options.level_count).map(|level| prefilter::level(&source, options, level)).collect();
    let irradiance_sh = sh::irradiance_sh(environment);
    let brdf = BrdfTable::integrate(options.brdf_size_px, options.brdf_samples);
    Ok(PreparedEnvironment { options: *options, specular, irradiance_sh, brdf })
}
