//! Scoring a bundle against its source set: PSNR pooled, per map and per channel, SSIM, FLIP, and
//! the mean angular error of normal maps.

#[cfg(feature = "transcode")]
pub mod bcn;
pub(crate) mod metrics;

#[cfg(feature = "flip")]
pub use metrics::{FlipMap, flip_map, flip_mean};
pub use metrics::{SquaredError, psnr, psnr_from_mse};

use crate::bundle::{Manifest, MapEntry};
use crate::decode::{DecodeError, DecodedMap, Decoder};
use crate::eval::metrics::ssim;
use crate::set::{Material, SampleFormat, Texture, TextureSet};
use serde::Serialize;

/// Quality of one map.
#[derive(Clone, Debug, Serialize)]
pub struct MapScore {
    /// Material name.
    pub material: String,
    /// Map kind.
    pub map: String,
    /// PSNR over all channels, dB.
    pub psnr_db: f64,
    /// PSNR per channel, dB.
    pub channel_psnr_db: Vec<f64>,
    /// Mean SSIM over channels.
    pub ssim: f64,
    /// Mean FLIP error (0 = identical; [`crate::eval::metrics::flip_mean`]); measured with SSIM when the
    /// `flip` feature is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flip: Option<f64>,
    /// Normal maps: mean angle between decoded and source normals, degrees.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub normal_angular_error_deg: Option<f64>,
}

/// Quality of a whole library.
#[derive(Clone, Debug, Serialize)]
pub struct EvalReport {
    /// PSNR pooled over every channel value of every map, dB.
    pub pooled_psnr_db: f64,
    /// Per map.
    pub maps: Vec<MapScore>,
}

/// Why a set and a bundle cannot be compared.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// The bundle does not hold the set's materials or maps.
    #[error("the bundle does not match the reference set: {0}")]
    Mismatch(String),
    /// Decoding failed.
    #[error(transparent)]
    Decode(#[from] DecodeError),
}

/// Rounds normalised values to what the map's file format can store (so scores describe the
/// decoded PNG, not the unrounded network output).
pub fn quantize_to_format(values: &mut [f32], format: SampleFormat) {
    let levels = match format {
        SampleFormat::U8 => 255.0,
        SampleFormat::U16 => 65535.0,
        SampleFormat::F32 => return,
    };
    for v in values {
        *v = (*v * levels).round() / levels;
    }
}

/// Decodes every map of the bundle and scores it against the set (matched by material name and
/// map kind). `with_ssim` can be turned off for speed.
pub fn evaluate(set: &TextureSet, decoder: &Decoder, with_ssim: bool) -> Result<EvalReport, EvalError> {
    Ok(score(set, &decode_set(set, decoder)?, with_ssim))
}

/// Decodes the bundle's maps of every texture of the set, in the set's order (matched by
/// material name and map kind; sizes checked), rounded to what each map's file format stores.
pub fn decode_set(set: &TextureSet, decoder: &Decoder) -> Result<Vec<Vec<DecodedMap>>, EvalError> {
    let manifest = decoder.manifest();
    let mut out = Vec::with_capacity(set.materials.len());
    for material in &set.materials {
        let mi = find_material(manifest, material)?;
        let decoded = decoder.decode_material(mi)?;
        let mut maps = Vec::with_capacity(material.textures.len());
        for texture in &material.textures {
            let (ti, entry) = find_map(manifest, mi, material, texture)?;
            let mut d = decoded[ti].clone();
            quantize_to_format(&mut d.values, entry.info.sample_format);
            maps.push(d);
        }
        out.push(maps);
    }
    Ok(out)
}

/// The bundle's index of the set's `material` (matched by name).
fn find_material(manifest: &Manifest, material: &Material) -> Result<usize, EvalError> {
    manifest
        .materials
        .iter()
        .position(|m| m.name == material.name)
        .ok_or_else(|| EvalError::Mismatch(format!("no material '{}' in the bundle", material.name)))
}

/// The bundle's map of `texture` (matched by kind) in material `mi`, checked to have its size.
fn find_map<'m>(manifest: &'m Manifest, mi: usize, material: &Material, texture: &Texture) -> Result<(usize, &'m MapEntry), EvalError> {
    let (ti, entry) = manifest.materials[mi]
        .maps
        .iter()
        .enumerate()
        .find(|(_, m)| m.info.kind == texture.info.kind)
        .ok_or_else(|| EvalError::Mismatch(format!("no {} map for '{}' in the bundle", texture.info.kind, material.name)))?;
    if (entry.info.width, entry.info.height, entry.info.channels) != (texture.info.width, texture.info.height, texture.info.channels) {
        return Err(EvalError::Mismatch(format!(
            "{}/{} is {}x{}x{} in the bundle and {}x{}x{} in {}",
            material.name,
            texture.info.kind,
            entry.info.width,
            entry.info.height,
            entry.info.channels,
            texture.info.width,
            texture.info.height,
            texture.info.channels,
            texture.source_path.display()
        )));
    }
    Ok((ti, entry))
}

/// Scores maps decoded by [`decode_set`] against the set; `with_ssim` also measures FLIP (when
/// the `flip` feature is on), the two slow metrics.
#[must_use]
pub fn score(set: &TextureSet, decoded: &[Vec<DecodedMap>], with_ssim: bool) -> EvalReport {
    let mut pooled = SquaredError::default();
    let mut maps = Vec::new();
    for (material, decoded) in set.materials.iter().zip(decoded) {
        for (texture, d) in material.textures.iter().zip(decoded) {
            let se = SquaredError::of(&d.values, &texture.texels);
            pooled.add(se);
            let ch = texture.info.channels as usize;
            let channel_psnr_db = (0..ch)
                .map(|c| {
                    let a: Vec<f32> = d.values.iter().skip(c).step_by(ch).copied().collect();
                    let b: Vec<f32> = texture.texels.iter().skip(c).step_by(ch).copied().collect();
                    SquaredError::of(&a, &b).psnr_db()
                })
                .collect();
            let ssim_value = if with_ssim {
                ssim(&d.values, &texture.texels, texture.info.width as usize, texture.info.height as usize, ch)
            } else {
                f64::NAN
            };
            #[cfg(feature = "flip")]
            let flip = with_ssim.then(|| {
                crate::eval::metrics::flip_mean(&texture.texels, &d.values, texture.info.width as usize, texture.info.height as usize, ch)
            });
            #[cfg(not(feature = "flip"))]
            let flip = None;
            let normal_angular_error_deg = (texture.info.kind == crate::set::MapKind::Normal)
                .then(|| crate::eval::metrics::normal_angular_error_deg(&texture.texels, &d.values, ch));
            maps.push(MapScore {
                material: material.name.clone(),
                map: texture.info.kind.to_string(),
                psnr_db: se.psnr_db(),
                channel_psnr_db,
                ssim: ssim_value,
                flip,
                normal_angular_error_deg,
            });
        }
    }
    EvalReport { pooled_psnr_db: pooled.psnr_db(), maps }
}

/// PSNR of every mip level of one map against its box-filtered reference chain.
#[derive(Clone, Debug, Serialize)]
pub struct MipScore {
    /// Material name.
    pub material: String,
    /// Map kind.
    pub map: String,
    /// Per level (0 first), `[width, height]`.
    pub level_sizes: Vec<[u32; 2]>,
    /// Per level, PSNR in dB of the decoded level against the reference level
    /// ([`crate::model::mips::box_chain`] of the source: linear-light colour, renormalised normals).
    pub level_psnr_db: Vec<f64>,
}

/// Per-level PSNR of every map whose bundle entry has a mip chain, and the pooled PSNR of each
/// level over all of them (levels a map lacks are left out of that level's pool).
#[derive(Clone, Debug, Serialize)]
pub struct MipReport {
    /// Per level, pooled PSNR over every map that has it.
    pub pooled_level_psnr_db: Vec<f64>,
    /// Per map.
    pub maps: Vec<MipScore>,
}

impl MipReport {
    /// The largest drop of any level below level 0, over every map, in dB (0 when no level is
    /// worse than level 0), with the map and level it happens at.
    #[must_use]
    pub fn worst_drop_db(&self) -> (f64, Option<(String, usize)>) {
        let mut worst = (0.0, None);
        for m in &self.maps {
            let Some(&base) = m.level_psnr_db.first() else { continue };
            for (level, &p) in m.level_psnr_db.iter().enumerate().skip(1) {
                if base - p > worst.0 {
                    worst = (base - p, Some((format!("{}/{}", m.material, m.map), level)));
                }
            }
        }
        worst
    }
}

/// Scores every mip level of the bundle's maps against box-filtered reference chains of `set`
/// (decoded levels quantised to each map's sample format first, as files would be). `None` when
/// the bundle stores no mip chain.
pub fn evaluate_mips(set: &TextureSet, decoder: &Decoder) -> Result<Option<MipReport>, EvalError> {
    let manifest = decoder.manifest();
    if manifest.mip_levels <= 1 {
        return Ok(None);
    }
    let mut pooled: Vec<SquaredError> = Vec::new();
    let mut maps = Vec::new();
    for material in &set.materials {
        let mi = find_material(manifest, material)?;
        for texture in &material.textures {
            let (ti, entry) = find_map(manifest, mi, material, texture)?;
            let below = crate::model::mips::box_chain(
                &texture.texels,
                texture.info.width,
                texture.info.height,
                texture.info.channels,
                texture.info.kind,
                texture.info.color_space,
                &texture.info.channel_ranges,
            );
            let reference = std::iter::once((texture.info.width, texture.info.height, texture.texels.as_slice()))
                .chain(below.iter().map(|l| (l.width, l.height, l.values.as_slice())));
            let mut score = MipScore {
                material: material.name.clone(),
                map: texture.info.kind.to_string(),
                level_sizes: Vec::new(),
                level_psnr_db: Vec::new(),
            };
            for (level, (width, height, values)) in reference.enumerate() {
                let mut d = decoder.decode_map_level(mi, ti, level as u32)?;
                quantize_to_format(&mut d.values, entry.info.sample_format);
                let se = SquaredError::of(&d.values, values);
                if pooled.len() <= level {
                    pooled.push(SquaredError::default());
                }
                pooled[level].add(se);
                score.level_sizes.push([width, height]);
                score.level_psnr_db.push(se.psnr_db());
            }
            maps.push(score);
        }
    }
    Ok(Some(MipReport { pooled_level_psnr_db: pooled.iter().map(SquaredError::psnr_db).collect(), maps }))
}
