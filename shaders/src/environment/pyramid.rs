//! The source as a cube with a mip pyramid, read by the prefilter with filtered importance
//! sampling (Křivánek & Colbert, GPU Gems 3 ch. 20), as glTF-Sample-Viewer does: level 0 is the
//! equirectangular source resampled into faces of `width_px / 4` texels (rounded up to a power of
//! two, 4 to 1024; as fine as the source at the faces' centres), each coarser level halves the
//! faces, each texel the solid-angle weighted mean of its 2×2 children, down to 1×1.
//!
//! Why a cube and not a pyramid of the equirectangular image: an equirectangular texel's solid
//! angle shrinks to 0 at the poles, so a box pyramid spreads a sun near a pole over rows nearer the
//! equator and a weighted one over-blurs it; measured on `royal_esplanade_1k.hdr` (its sun 6° from
//! the zenith), the rough levels' mean radiance was off by +44 % (box) and −16 % (weighted) at 16
//! samples per texel. Cube texels differ in solid angle by at most 5.2× (centre to corner).

use super::cube::{CubeLevel, cube_direction, cube_face_uv, texel_solid_angle};
use super::{Environment, equirect_uv_to_direction};
use rayon::prelude::*;

/// The largest level-0 face side, in texels (6 × 1024² texels, 72 MiB).
const MAX_FACE_SIZE_PX: u32 = 1024;

/// The source cube and its halvings.
pub(super) struct Pyramid {
    levels: Vec<CubeLevel>,
}

impl Pyramid {
    /// The pyramid of `source`.
    pub(super) fn new(source: &Environment) -> Self {
        let face_size_px = source.width_px.div_ceil(4).next_power_of_two().clamp(4, MAX_FACE_SIZE_PX);
        let mut levels = vec![resample(source, face_size_px)];
        while let Some(finer) = levels.last().filter(|l| l.face_size_px > 1) {
            let next = halve(finer);
            levels.push(next);
        }
        Self { levels }
    }

    /// `0.5·log2` of the mean solid angle of a level-0 texel, `4π / (6 · face_size_px²)`.
    pub(super) fn half_log2_texel_solid_angle(&self) -> f32 {
        let size = self.levels.first().map_or(1.0, |l| f64::from(l.face_size_px));
        (0.5 * (4.0 * std::f64::consts::PI / (6.0 * size * size)).log2()) as f32
    }

    /// The radiance towards `dir` at fractional mip `lod` (clamped to the pyramid): bilinear in
    /// the two levels around it and linear between them.
    pub(super) fn sample(&self, dir: [f32; 3], lod: f32) -> [f32; 3] {
        let last = self.levels.len().saturating_sub(1);
        let lod = if lod.is_nan() { 0.0 } else { lod.clamp(0.0, last as f32) };
        let lower = (lod.floor() as usize).min(last);
        let t = lod - lower as f32;
        let Some(a) = self.levels.get(lower).map(|l| l.sample(dir)) else {
            return [0.0; 3];
        };
        match self.levels.get(lower + 1) {
            Some(upper) if t > 0.0 => {
                let b = upper.sample(dir);
                std::array::from_fn(|c| a[c] + (b[c] - a[c]) * t)
            }
            _ => a,
        }
    }
}

/// `source` resampled into a cube of `face_size_px`-texel faces, energy kept: every source
/// texel is added to the cube texel its centre falls in, weighted by its solid angle, and each cube
/// texel is the weighted mean of what it received (near the poles many narrow source texels fall
/// in one cube texel; a point lookup there missed 16 % of a sun's energy). A cube texel that
/// received less than half its own solid angle (where the source is coarser than the cube) is a
/// bilinear lookup at its centre instead.
fn resample(source: &Environment, face_size_px: u32) -> CubeLevel {
    let size = face_size_px as usize;
    let (w, h) = (source.width_px as usize, source.height_px as usize);
    let mut sum = vec![[0.0f64; 3]; 6 * size * size];
    let mut received = vec![0.0f64; 6 * size * size];
    let row_solid_angles = super::sh::row_solid_angles(source.height_px);
    // In order, one thread: the same bits on any thread count.
    for (y, (row, row_solid_angle)) in source.texels.chunks_exact(w).zip(&row_solid_angles).enumerate() {
        let weight = row_solid_angle / w as f64;
        let v = (y as f32 + 0.5) / h as f32;
        for (x, texel) in row.iter().enumerate() {
            let (face, uv) = cube_face_uv(equirect_uv_to_direction([(x as f32 + 0.5) / w as f32, v]));
            let cx = ((uv[0] * face_size_px as f32) as usize).min(size - 1);
            let cy = ((uv[1] * face_size_px as f32) as usize).min(size - 1);
            let i = (face * size + cy) * size + cx;
            if let (Some(s), Some(r)) = (sum.get_mut(i), received.get_mut(i)) {
                for (s, c) in s.iter_mut().zip(texel) {
                    *s += f64::from(*c) * weight;
                }
                *r += weight;
            }
        }
    }
    let mut texels = vec![[0.0f32; 3]; 6 * size * size];
    texels.par_chunks_mut(size).enumerate().for_each(|(row_index, row)| {
        let (face, y) = (row_index / size, row_index % size);
        for (x, texel) in row.iter_mut().enumerate() {
            let i = row_index * size + x;
            let got = received.get(i).copied().unwrap_or(0.0);
            *texel = if got >= 0.5 * texel_solid_angle(face_size_px, x, y) {
                sum.get(i).copied().unwrap_or_default().map(|s| (s / got) as f32)
            } else {
                let uv = [(x as f32 + 0.5) / face_size_px as f32, (y as f32 + 0.5) / face_size_px as f32];
                source.radiance(cube_direction(face, uv))
            };
        }
    });
    CubeLevel { face_size_px, roughness: 0.0, texels }
}

/// `finer` with its faces halved: each texel the solid-angle weighted mean of its four children.
fn halve(finer: &CubeLevel) -> CubeLevel {
    let fine = finer.face_size_px as usize;
    let size = (fine / 2).max(1);
    let mut texels = vec![[0.0f32; 3]; 6 * size * size];
    texels.par_chunks_mut(size).enumerate().for_each(|(row_index, row)| {
        let (face, y) = (row_index / size, row_index % size);
        for (x, texel) in row.iter_mut().enumerate() {
            let mut sum = [0.0f64; 3];
            let mut total = 0.0f64;
            for (cx, cy) in [(2 * x, 2 * y), (2 * x + 1, 2 * y), (2 * x, 2 * y + 1), (2 * x + 1, 2 * y + 1)] {
                let (cx, cy) = (cx.min(fine - 1), cy.min(fine - 1));
                let weight = texel_solid_angle(finer.face_size_px, cx, cy);
                let child = finer.texels.get((face * fine + cy) * fine + cx).copied().unwrap_or_default();
                for (s, c) in sum.iter_mut().zip(child) {
                    *s += f64::from(c) * weight;
                }
                total += weight;
            }
            *texel = sum.map(|s| (s / total) as f32);
        }
    });
    CubeLevel { face_size_px: size as u32, roughness: 0.0, texels }
}

/// Bilinear lookup of an equirectangular image at `uv` between texel centres: wraps in `u`
/// (around +Y), clamps in `v` (at the poles).
pub(super) fn bilinear(width_px: u32, height_px: u32, texels: &[[f32; 3]], uv: [f32; 2]) -> [f32; 3] {
    let (w, h) = (width_px as usize, height_px as usize);
    let x = uv[0] * width_px as f32 - 0.5;
    let y = (uv[1] * height_px as f32 - 0.5).clamp(0.0, (h - 1) as f32);
    let (x0, y0) = (x.floor(), y.floor());
    let (tx, ty) = (x - x0, y - y0);
    let x0 = (x0 as i64).rem_euclid(w as i64) as usize;
    let x1 = (x0 + 1) % w;
    let y0 = y0 as usize;
    let y1 = (y0 + 1).min(h - 1);
    let at = |x: usize, y: usize| texels.get(y * w + x).copied().unwrap_or_default();
    let (a, b, c, d) = (at(x0, y0), at(x1, y0), at(x0, y1), at(x1, y1));
    std::array::from_fn(|i| {
        let top = a[i] + (b[i] - a[i]) * tx;
        let bottom = c[i] + (d[i] - c[i]) * tx;
        top + (bottom - top) * ty
    })
}
