//! Mip chains of reference maps: the 2×2 box reduction every level of a bundle's mip chain is
//! trained towards and measured against, and the one `texset transcode` writes.

use crate::set::{ColorSpace, MapKind, linear_to_srgb, renormalise_stored_normal, srgb_to_linear};

/// One level of a mip chain: `width × height × channels` values `[y][x][c]`, stored encoding
/// (`[0, 1]`; sRGB for colour maps, `n · 0.5 + 0.5` for normals).
#[derive(Clone, Debug, PartialEq)]
pub struct MipLevel {
    /// Width in texels.
    pub width: u32,
    /// Height in texels.
    pub height: u32,
    /// Values.
    pub values: Vec<f32>,
}

/// The levels below `level0` (`width × height × channels` values) down to 1×1, level 1 first:
/// each the 2×2 box average of the one above (sizes halve rounding down; an odd edge repeats its
/// last texel). Colour channels of sRGB maps are averaged in linear light (alpha as is); normal
/// maps are renormalised to unit length ([`crate::set::renormalise_stored_normal`], through the map's
/// `channel_ranges`: a float source's values are stored mapped from their range).
#[must_use]
pub fn box_chain(
    level0: &[f32],
    width: u32,
    height: u32,
    channels: u32,
    kind: MapKind,
    color_space: ColorSpace,
    channel_ranges: &[[f32; 2]],
) -> Vec<MipLevel> {
    let c = channels as usize;
    let srgb_channels = if color_space == ColorSpace::Srgb { c.min(3) } else { 0 };
    let normal = kind == MapKind::Normal && c >= 3;
    let mut levels: Vec<MipLevel> = Vec::new();
    let (mut aw, mut ah) = (width as usize, height as usize);
    while aw > 1 || ah > 1 {
        let above: &[f32] = levels.last().map_or(level0, |l| &l.values);
        let (w, h) = ((aw / 2).max(1), (ah / 2).max(1));
        let mut values = vec![0.0_f32; w * h * c];
        for y in 0..h {
            for x in 0..w {
                let out = &mut values[(y * w + x) * c..][..c];
                for (dy, dx) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                    let (sx, sy) = ((2 * x + dx).min(aw - 1), (2 * y + dy).min(ah - 1));
                    for (k, o) in out.iter_mut().enumerate() {
                        let v = above.get((sy * aw + sx) * c + k).copied().unwrap_or(0.0);
                        *o += 0.25 * if k < srgb_channels { srgb_to_linear(v) } else { v };
                    }
                }
                for o in out.iter_mut().take(srgb_channels) {
                    *o = linear_to_srgb(*o);
                }
                if normal {
                    renormalise_stored_normal(out, channel_ranges);
                }
            }
        }
        levels.push(MipLevel { width: w as u32, height: h as u32, values });
        (aw, ah) = (w, h);
    }
    levels
}

/// Size of mip level `level` of a `width × height` map (halving, rounding down, at least 1).
#[must_use]
pub fn level_size(width: u32, height: u32, level: u32) -> (u32, u32) {
    let shift = level.min(31);
    ((width >> shift).max(1), (height >> shift).max(1))
}

#[cfg(test)]
mod tests {
    // Exact comparisons are the point where a value must stay as it was.
    #![allow(clippy::float_cmp)]
    use super::*;

    /// A float normal map is stored with each channel's range mapped to `[0, 1]`; its chain must
    /// be the chain of the original values mapped the same way (before, the renormalisation read
    /// the mapped values as `n · 0.5 + 0.5` and gave normals of the wrong direction and length).
    #[test]
    fn a_float_normal_maps_chain_renormalises_through_its_channel_ranges() {
        // 4×2 normals, `n · 0.5 + 0.5`, tilted different ways (so their means are short).
        let normals: [[f32; 3]; 8] = [
            [0.6, 0.0, 0.8],
            [-0.6, 0.0, 0.8],
            [0.0, 0.6, 0.8],
            [0.0, -0.28, 0.96],
            [0.36, 0.48, 0.8],
            [0.0, 0.0, 1.0],
            [-0.8, 0.0, 0.6],
            [0.0, 0.8, 0.6],
        ];
        let original: Vec<f32> = normals.iter().flat_map(|n| n.map(|c| c * 0.5 + 0.5)).collect();
        let ranges: Vec<[f32; 2]> = (0..3)
            .map(|c| {
                let values = original.iter().skip(c).step_by(3);
                [values.clone().copied().fold(f32::MAX, f32::min), values.copied().fold(f32::MIN, f32::max)]
            })
            .collect();
        assert!(ranges.iter().all(|r| r[0] > 0.05), "every range starts above 0: {ranges:?}");
        let r = &ranges;
        let stored: Vec<f32> = original.chunks_exact(3).flat_map(|t| (0..3).map(move |c| (t[c] - r[c][0]) / (r[c][1] - r[c][0]))).collect();

        let expected = box_chain(&original, 4, 2, 3, MapKind::Normal, ColorSpace::Linear, &[]);
        let got = box_chain(&stored, 4, 2, 3, MapKind::Normal, ColorSpace::Linear, &ranges);
        assert_eq!(got.len(), expected.len());
        for (level_got, level_expected) in got.iter().zip(&expected) {
            for (t, (g, e)) in level_got.values.chunks_exact(3).zip(level_expected.values.chunks_exact(3)).enumerate() {
                let n: Vec<f32> = (0..3).map(|c| (ranges[c][0] + (ranges[c][1] - ranges[c][0]) * g[c]) * 2.0 - 1.0).collect();
                let length = n.iter().map(|v| v * v).sum::<f32>().sqrt();
                assert!((length - 1.0).abs() < 1e-4, "texel {t}: length {length}");
                for c in 0..3 {
                    let mapped = (e[c] - ranges[c][0]) / (ranges[c][1] - ranges[c][0]);
                    assert!((g[c] - mapped).abs() < 1e-4, "texel {t} channel {c}: {} against {mapped}", g[c]);
                }
            }
        }
    }
}
