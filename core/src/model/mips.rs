//! Mip chains of reference maps: the 2×2 box reduction every level of a bundle's mip chain is
//! trained towards and measured against, and the one `texset transcode` writes.

use crate::set::{ColorSpace, MapKind};

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

fn srgb_to_linear(v: f32) -> f32 {
    if v <= 0.040_45 { v / 12.92 } else { ((v + 0.055) / 1.055).powf(2.4) }
}

fn linear_to_srgb(v: f32) -> f32 {
    if v <= 0.003_130_8 { v * 12.92 } else { 1.055 * v.powf(1.0 / 2.4) - 0.055 }
}

/// The levels below `level0` (`width × height × channels` values) down to 1×1, level 1 first:
/// each the 2×2 box average of the one above (sizes halve rounding down; an odd edge repeats its
/// last texel). Colour channels of sRGB maps are averaged in linear light (alpha as is); normal
/// maps are renormalised to unit length.
#[must_use]
pub fn box_chain(level0: &[f32], width: u32, height: u32, channels: u32, kind: MapKind, color_space: ColorSpace) -> Vec<MipLevel> {
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
                    let n = [out[0] * 2.0 - 1.0, out[1] * 2.0 - 1.0, out[2] * 2.0 - 1.0];
                    let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
                    if len > 1e-6 {
                        for k in 0..3 {
                            out[k] = n[k] / len * 0.5 + 0.5;
                        }
                    }
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
