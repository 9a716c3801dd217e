//! Randomness, value noise, small math helpers and the scalar fields every map derives from.

use texset_core::rng::{Rng, splitmix64};

// ---------------------------------------------------------------------------------------------
// Randomness and noise.
// ---------------------------------------------------------------------------------------------

/// Derives the seed of one material from the caller's seed and a material number.
pub(super) fn material_seed(seed: u64, material: u64) -> u64 {
    splitmix64(seed ^ splitmix64(material.wrapping_mul(0xA076_1D64_78BD_642F)))
}

/// Hashes a seed and two integer coordinates.
pub(super) fn hash2(seed: u64, a: i64, b: i64) -> u64 {
    splitmix64(seed ^ splitmix64((a as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ splitmix64(b as u64)))
}

/// Converts a hash to a float uniformly distributed in `[0, 1)`.
pub(super) fn unit(h: u64) -> f32 {
    (h >> 40) as f32 * (1.0 / 16_777_216.0)
}

/// A uniform float in `[0, 1)` for a seed and two integer coordinates.
pub(super) fn rand2(seed: u64, a: i64, b: i64) -> f32 {
    unit(hash2(seed, a, b))
}

/// The stream for placing features from `seed` (the one [`Rng`], its first output skipped).
pub(super) fn feature_rng(seed: u64) -> Rng {
    Rng::from_state(seed).skip(1)
}

/// Uniform floats in a range from the feature stream.
pub(super) trait UniformRange {
    /// A uniform float in `[lo, hi)`.
    fn range(&mut self, lo: f32, hi: f32) -> f32;
}

impl UniformRange for Rng {
    fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.next_f32()
    }
}

/// Quintic fade curve used by the value noise, with zero first and second derivatives at 0 and 1.
pub(super) fn fade(t: f32) -> f32 {
    t * t * t * (t * (t * 6.0 - 15.0) + 10.0)
}

/// Tileable value noise in `[0, 1)` at texture coordinates `(u, v)` in `[0, 1)`.
///
/// The lattice has `cells_u` × `cells_v` cells across the tile and wraps around, so the
/// noise tiles seamlessly.
pub(super) fn value_noise(seed: u64, u: f32, v: f32, cells_u: u32, cells_v: u32) -> f32 {
    let x = u * cells_u as f32;
    let y = v * cells_v as f32;
    let x0 = x.floor();
    let y0 = y.floor();
    let tx = fade(x - x0);
    let ty = fade(y - y0);
    let cu = i64::from(cells_u);
    let cv = i64::from(cells_v);
    let ix0 = (x0 as i64).rem_euclid(cu);
    let iy0 = (y0 as i64).rem_euclid(cv);
    let ix1 = (ix0 + 1) % cu;
    let iy1 = (iy0 + 1) % cv;
    let a = rand2(seed, ix0, iy0);
    let b = rand2(seed, ix1, iy0);
    let c = rand2(seed, ix0, iy1);
    let d = rand2(seed, ix1, iy1);
    lerp(lerp(a, b, tx), lerp(c, d, tx), ty)
}

/// Tileable fractal (fBm) value noise in `[0, 1)`: `octaves` layers, each with twice the
/// lattice cells of the previous one and `gain` times its amplitude.
pub(super) fn fbm(seed: u64, u: f32, v: f32, cells_u: u32, cells_v: u32, octaves: u32, gain: f32) -> f32 {
    let mut sum = 0.0;
    let mut amplitude = 1.0;
    let mut total = 0.0;
    for octave in 0..octaves {
        let scale = 1_u32 << octave;
        let octave_seed = splitmix64(seed.wrapping_add(u64::from(octave)));
        sum += amplitude * value_noise(octave_seed, u, v, cells_u * scale, cells_v * scale);
        total += amplitude;
        amplitude *= gain;
    }
    sum / total
}

// ---------------------------------------------------------------------------------------------
// Small math helpers.
// ---------------------------------------------------------------------------------------------

/// Linear interpolation from `a` (at `t = 0`) to `b` (at `t = 1`).
pub(super) fn lerp(a: f32, b: f32, t: f32) -> f32 {
    a + (b - a) * t
}

/// Clamps to `[0, 1]`.
pub(super) fn clamp01(x: f32) -> f32 {
    x.clamp(0.0, 1.0)
}

/// Hermite smoothstep between `edge0` and `edge1`.
pub(super) fn smoothstep(edge0: f32, edge1: f32, x: f32) -> f32 {
    let t = clamp01((x - edge0) / (edge1 - edge0));
    t * t * (3.0 - 2.0 * t)
}

/// Distance between two tile coordinates in `[0, 1)` along one wrapping axis.
pub(super) fn wrap_delta(a: f32, b: f32) -> f32 {
    let d = a - b;
    d - (d + 0.5).floor()
}

/// An sRGB-encoded colour with components in `[0, 1]`.
pub(super) type Rgb = [f32; 3];

/// Builds a colour from 8-bit sRGB components.
pub(super) fn rgb8(r: u8, g: u8, b: u8) -> Rgb {
    [f32::from(r) / 255.0, f32::from(g) / 255.0, f32::from(b) / 255.0]
}

/// Component-wise colour interpolation.
pub(super) fn mix(a: Rgb, b: Rgb, t: f32) -> Rgb {
    [lerp(a[0], b[0], t), lerp(a[1], b[1], t), lerp(a[2], b[2], t)]
}

/// Scales a colour's brightness.
pub(super) fn scale(c: Rgb, k: f32) -> Rgb {
    [c[0] * k, c[1] * k, c[2] * k]
}

/// Quantises `[0, 1]` to 8 bits with rounding.
pub(super) fn quantize_u8(x: f32) -> u8 {
    (clamp01(x) * 255.0 + 0.5).floor() as u8
}

/// Quantises `[0, 1]` to 16 bits with rounding.
pub(super) fn quantize_u16(x: f32) -> u16 {
    (clamp01(x) * 65535.0 + 0.5).floor() as u16
}

// ---------------------------------------------------------------------------------------------
// Scalar fields and the height-derived maps.
// ---------------------------------------------------------------------------------------------

/// A square, wrap-around scalar field stored row-major, row 0 at the top of the image.
#[derive(Clone)]
pub(super) struct Field {
    /// The side length in pixels.
    pub(super) size_px: usize,
    /// The `size_px * size_px` values.
    pub(super) data: Vec<f32>,
}

impl Field {
    /// Fills a field by evaluating `f(u, v)` at every pixel centre, with `u` rightwards and
    /// `v` downwards, both in `[0, 1)`.
    pub(super) fn from_fn(size_px: usize, mut f: impl FnMut(f32, f32) -> f32) -> Self {
        let inv = 1.0 / size_px as f32;
        let mut data = Vec::with_capacity(size_px * size_px);
        for y in 0..size_px {
            let v = (y as f32 + 0.5) * inv;
            for x in 0..size_px {
                let u = (x as f32 + 0.5) * inv;
                data.push(f(u, v));
            }
        }
        Self { size_px, data }
    }

    /// The value at integer coordinates, wrapping around the edges.
    pub(super) fn at(&self, x: isize, y: isize) -> f32 {
        let n = self.size_px as isize;
        let xi = x.rem_euclid(n) as usize;
        let yi = y.rem_euclid(n) as usize;
        self.data[yi * self.size_px + xi]
    }

    /// A wrap-around box blur with a `(2 * radius_px + 1)²` kernel, done as two separable
    /// running-sum passes.
    pub(super) fn box_blur(&self, radius_px: usize) -> Self {
        let n = self.size_px;
        let width = (2 * radius_px + 1) as f64;
        let mut horizontal = vec![0.0_f32; n * n];
        for y in 0..n {
            let row = &self.data[y * n..(y + 1) * n];
            let mut sum: f64 = (0..=2 * radius_px).map(|k| f64::from(row[(k + n * (radius_px / n + 1) - radius_px) % n])).sum();
            for x in 0..n {
                horizontal[y * n + x] = (sum / width) as f32;
                let leaving = row[(x + n * (radius_px / n + 1) - radius_px) % n];
                let entering = row[(x + radius_px + 1) % n];
                sum += f64::from(entering) - f64::from(leaving);
            }
        }
        let mut out = vec![0.0_f32; n * n];
        for x in 0..n {
            let column = |y: usize| horizontal[y * n + x];
            let mut sum: f64 = (0..=2 * radius_px).map(|k| f64::from(column((k + n * (radius_px / n + 1) - radius_px) % n))).sum();
            for y in 0..n {
                out[y * n + x] = (sum / width) as f32;
                let leaving = column((y + n * (radius_px / n + 1) - radius_px) % n);
                let entering = column((y + radius_px + 1) % n);
                sum += f64::from(entering) - f64::from(leaving);
            }
        }
        Self { size_px: n, data: out }
    }
}

/// Derives a tangent-space normal map (OpenGL convention, +Y up) from a height field by
/// central differences, encoded as `n * 0.5 + 0.5` in 8-bit RGB.
///
/// `relief_depth_tile_frac` is the physical depth of the full height range `[0, 1]` as a
/// fraction of the tile width, so the look does not change with the resolution.
pub(super) fn normal_map(height: &Field, relief_depth_tile_frac: f32) -> Vec<u8> {
    let n = height.size_px;
    // Height units to texels: one full height unit spans this many texels of depth.
    let depth_texels = relief_depth_tile_frac * n as f32;
    let mut out = Vec::with_capacity(n * n * 3);
    for y in 0..n as isize {
        for x in 0..n as isize {
            let dh_dx = (height.at(x + 1, y) - height.at(x - 1, y)) * 0.5 * depth_texels;
            // Image rows grow downwards, so "up" is the previous row.
            let dh_dy_up = (height.at(x, y - 1) - height.at(x, y + 1)) * 0.5 * depth_texels;
            let (nx, ny, nz) = (-dh_dx, -dh_dy_up, 1.0_f32);
            let inv_len = 1.0 / (nx * nx + ny * ny + nz * nz).sqrt();
            for c in [nx, ny, nz] {
                out.push(quantize_u8(c * inv_len * 0.5 + 0.5));
            }
        }
    }
    out
}

/// Derives ambient occlusion from a height field: at several radii, the amount by which each
/// texel lies below its neighbourhood average darkens it.
///
/// The radii are given as fractions of the tile width so the result is resolution independent;
/// `strength` converts the averaged height deficit (in height units) into occlusion.
pub(super) fn ambient_occlusion(height: &Field, radii_tile_frac: &[f32], strength: f32) -> Field {
    let n = height.size_px;
    let mut occlusion = vec![0.0_f32; n * n];
    for &radius in radii_tile_frac {
        let radius_px = ((radius * n as f32 + 0.5).floor() as usize).clamp(1, n / 2);
        let blurred = height.box_blur(radius_px);
        for (occ, (&avg, &h)) in occlusion.iter_mut().zip(blurred.data.iter().zip(&height.data)) {
            *occ += (avg - h).max(0.0);
        }
    }
    let k = strength / radii_tile_frac.len().max(1) as f32;
    Field { size_px: n, data: occlusion.iter().map(|&o| clamp01(1.0 - k * o)).collect() }
}
