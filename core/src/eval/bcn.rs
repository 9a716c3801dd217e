//! Today's baseline: a map block-compressed as engines ship it ([`crate::export::bcn`]), scored
//! for side-by-side comparison at its bit cost.

use crate::eval::metrics::SquaredError;
use crate::export::bcn::{BcFormat, Profile, decode, encode};
use crate::set::{Texture, TextureSet};
use rayon::prelude::*;
use serde::Serialize;

/// A map after a block-compression round trip.
#[derive(Clone, Debug)]
pub struct BcRoundTrip {
    /// The format.
    pub format: BcFormat,
    /// Its bits per texel.
    pub bits_per_texel: f64,
    /// Decoded values, the texture's layout (`[y][x][c]`, its channel count, in `[0, 1]`).
    pub values: Vec<f32>,
    /// PSNR against the texture over all its channels, dB.
    pub psnr_db: f64,
    /// The squared error behind `psnr_db`, to pool with other maps.
    pub squared_error: SquaredError,
    /// The blocks' size, bytes (4×4 blocks, sizes padded to multiples of 4).
    pub bytes: u64,
}

/// Compresses `texture` with `format` and decodes it back.
#[must_use]
pub fn round_trip(texture: &Texture, format: BcFormat) -> BcRoundTrip {
    let blocks = encode(texture.info.width, texture.info.height, texture.info.channels, &texture.texels, format);
    let values = decode(&blocks, texture.info.width, texture.info.height, texture.info.channels, texture.info.kind, format);
    let squared_error = SquaredError::of(&texture.texels, &values);
    BcRoundTrip {
        format,
        bits_per_texel: format.bits_per_texel(),
        psnr_db: squared_error.psnr_db(),
        squared_error,
        bytes: blocks.len() as u64,
        values,
    }
}

/// One map of a set block-compressed for [`baseline`].
#[derive(Clone, Debug, Serialize)]
pub struct BaselineMap {
    /// Material name.
    pub material: String,
    /// Map kind.
    pub map: String,
    /// The format it got.
    pub format: BcFormat,
    /// Its PSNR over all its channels, dB.
    pub psnr_db: f64,
    /// Its blocks, bytes (4×4 blocks, sizes padded to multiples of 4).
    pub bytes: u64,
}

/// A whole set block-compressed with one [`Profile`]: what `texset compress --match-bc` has to
/// reach, measured the way [`crate::eval::score`] measures a bundle (PSNR pooled over every
/// channel value of every map, bits per texel over the materials' texels).
#[derive(Clone, Debug, Serialize)]
pub struct Baseline {
    /// The profile.
    pub profile: Profile,
    /// Every map, in library order.
    pub maps: Vec<BaselineMap>,
    /// PSNR pooled over every channel value of every map, dB.
    pub pooled_psnr_db: f64,
    /// All blocks' bits over the set's texel count (no mips).
    pub bits_per_texel: f64,
}

/// Block-compresses every map of `set` with `profile` (maps in parallel) and scores the round trip.
#[must_use]
pub fn baseline(set: &TextureSet, profile: Profile) -> Baseline {
    baseline_with_values(set, profile).0
}

/// [`baseline`], and every map's round-tripped values (in [`TextureSet::textures`] order), to
/// score or render them further.
#[must_use]
pub fn baseline_with_values(set: &TextureSet, profile: Profile) -> (Baseline, Vec<Vec<f32>>) {
    let textures: Vec<(&str, &Texture)> = set.textures().map(|(m, _, t)| (set.materials[m].name.as_str(), t)).collect();
    let scored: Vec<(BaselineMap, SquaredError, Vec<f32>)> = textures
        .par_iter()
        .map(|&(material, texture)| {
            let rt = round_trip(texture, profile.format(texture.info.kind, texture.info.channels));
            let map = BaselineMap {
                material: material.to_owned(),
                map: texture.info.kind.to_string(),
                format: rt.format,
                psnr_db: rt.psnr_db,
                bytes: rt.bytes,
            };
            (map, rt.squared_error, rt.values)
        })
        .collect();
    let mut pooled = SquaredError::default();
    for (_, se, _) in &scored {
        pooled.add(*se);
    }
    let bytes: u64 = scored.iter().map(|(m, _, _)| m.bytes).sum();
    let (maps, values): (Vec<BaselineMap>, Vec<Vec<f32>>) = scored.into_iter().map(|(m, _, v)| (m, v)).unzip();
    let baseline =
        Baseline { profile, pooled_psnr_db: pooled.psnr_db(), bits_per_texel: bytes as f64 * 8.0 / set.texel_count().max(1) as f64, maps };
    (baseline, values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::set::{ColorSpace, MapInfo, MapKind, NormalConvention, SampleFormat};

    fn texture(kind: MapKind, channels: u32, w: u32, h: u32, f: impl Fn(u32, u32, u32) -> f32) -> Texture {
        let mut texels = Vec::new();
        for y in 0..h {
            for x in 0..w {
                for c in 0..channels {
                    texels.push(f(x, y, c));
                }
            }
        }
        Texture {
            info: MapInfo {
                kind,
                width: w,
                height: h,
                channels,
                sample_format: SampleFormat::U8,
                color_space: ColorSpace::Linear,
                normal_convention: NormalConvention::OpenGl,
                channel_ranges: vec![[0.0, 1.0]; channels as usize],
            },
            source_path: "t.png".into(),
            texels,
        }
    }

    #[test]
    fn smooth_maps_survive_every_format_and_odd_sizes_are_padded() {
        let smooth = |x: u32, y: u32, c: u32| 0.2 + 0.5 * (x as f32 / 37.0) + 0.2 * (y as f32 / 29.0) * (c as f32 + 1.0) / 4.0;
        for (kind, channels, format) in [
            (MapKind::Basecolor, 3, BcFormat::Bc7),
            (MapKind::Basecolor, 3, BcFormat::Bc1),
            (MapKind::Roughness, 1, BcFormat::Bc4),
            (MapKind::Ao, 2, BcFormat::Bc5),
        ] {
            // 37×29: not a multiple of the 4×4 block.
            let t = texture(kind, channels, 37, 29, smooth);
            let r = round_trip(&t, format);
            assert_eq!(r.values.len(), t.texels.len());
            println!("{format:?} on a smooth {channels}-channel ramp: {:.2} dB", r.psnr_db);
            assert!(r.psnr_db > 35.0, "{format:?}: {:.2} dB on a smooth ramp", r.psnr_db);
        }
    }

    #[test]
    fn normals_keep_their_length_through_bc5() {
        let t = texture(MapKind::Normal, 3, 16, 16, |x, y, c| {
            let (nx, ny) = ((x as f32 / 15.0 - 0.5) * 0.8, (y as f32 / 15.0 - 0.5) * 0.8);
            let nz = (1.0 - nx * nx - ny * ny).sqrt();
            [nx, ny, nz][c as usize] * 0.5 + 0.5
        });
        assert_eq!(BcFormat::for_map(MapKind::Normal, 3), BcFormat::Bc5);
        let r = round_trip(&t, BcFormat::Bc5);
        assert!(r.psnr_db > 35.0, "{:.2} dB", r.psnr_db);
    }

    #[test]
    fn noise_costs_bc1_more_than_bc7() {
        let t = texture(MapKind::Basecolor, 3, 32, 32, |_, _, _| 0.0);
        let noisy: Vec<f32> = (0..t.texels.len()).map(|i| ((i as u32).wrapping_mul(2_654_435_761) >> 24) as f32 / 255.0).collect();
        let t = Texture { texels: noisy, ..t };
        let (bc1, bc7) = (round_trip(&t, BcFormat::Bc1), round_trip(&t, BcFormat::Bc7));
        assert!(bc7.psnr_db > bc1.psnr_db, "BC7 {:.2} dB vs BC1 {:.2} dB", bc7.psnr_db, bc1.psnr_db);
    }
}
