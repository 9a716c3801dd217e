//! The split-sum BRDF table (Karis 2013): for each (n·v, roughness), the GGX specular BRDF with
//! height-correlated Smith visibility integrated over the hemisphere and split by the Schlick
//! Fresnel term into `A` (the F0 factor) and `B` (the bias), as glTF-Sample-Viewer's
//! `ibl_filtering.frag` integrates it: `V·(v·h)·(n·l)/(n·h)` per GGX half-vector sample, times
//! `1 − Fc` into A and `Fc = (1 − v·h)⁵` into B, times 4 / N.

use super::ggx::{hammersley, sample_half_vector, visibility_correlated};
use rayon::prelude::*;

/// The split-sum table: `size_px` × `size_px` entries of `[A, B]`; entry `(x, y)` is
/// `texels()[y · size_px + x]` and holds the integral at `n·v = (x + 0.5) / size_px` and
/// perceptual roughness `(y + 0.5) / size_px`. Uploaded as a two-channel texture (x across, y
/// down) sampled at `(n·v, roughness)` with a linear, clamp-to-edge sampler it reads what
/// [`BrdfTable::sample`] reads.
#[derive(Clone, Debug, PartialEq)]
pub struct BrdfTable {
    pub(super) size_px: u32,
    pub(super) texels: Vec<[f32; 2]>,
}

impl BrdfTable {
    /// The table of `size_px` × `size_px` entries, `samples` GGX samples each.
    pub(super) fn integrate(size_px: u32, samples: u32) -> Self {
        let size = size_px as usize;
        let mut texels = vec![[0.0f32; 2]; size * size];
        texels.par_chunks_mut(size).enumerate().for_each(|(y, row)| {
            let roughness = (y as f64 + 0.5) / f64::from(size_px);
            for (x, texel) in row.iter_mut().enumerate() {
                let n_dot_v = (x as f64 + 0.5) / f64::from(size_px);
                *texel = integrate_entry(n_dot_v, roughness, samples);
            }
        });
        Self { size_px, texels }
    }

    /// Entries per side.
    #[must_use]
    pub fn size_px(&self) -> u32 {
        self.size_px
    }

    /// The entries `[A, B]`, rows of rising roughness, n·v rising along each row.
    #[must_use]
    pub fn texels(&self) -> &[[f32; 2]] {
        &self.texels
    }

    /// `[A, B]` at `n_dot_v` and perceptual `roughness` (each clamped to [0, 1]; NaN reads as 0):
    /// bilinear between entry centres, clamped at the edge entries.
    #[must_use]
    pub fn sample(&self, n_dot_v: f32, roughness: f32) -> [f32; 2] {
        let size = self.size_px as usize;
        let last = size.saturating_sub(1) as f32;
        let coordinate = |value: f32| {
            let value = if value.is_nan() { 0.0 } else { value.clamp(0.0, 1.0) };
            (value * self.size_px as f32 - 0.5).clamp(0.0, last)
        };
        let (x, y) = (coordinate(n_dot_v), coordinate(roughness));
        let (x0, y0) = (x.floor(), y.floor());
        let (tx, ty) = (x - x0, y - y0);
        let (x0, y0) = (x0 as usize, y0 as usize);
        let (x1, y1) = ((x0 + 1).min(size.saturating_sub(1)), (y0 + 1).min(size.saturating_sub(1)));
        let at = |x: usize, y: usize| self.texels.get(y * size + x).copied().unwrap_or_default();
        let (a, b, c, d) = (at(x0, y0), at(x1, y0), at(x0, y1), at(x1, y1));
        std::array::from_fn(|i| {
            let top = a[i] + (b[i] - a[i]) * tx;
            let bottom = c[i] + (d[i] - c[i]) * tx;
            top + (bottom - top) * ty
        })
    }
}

/// `[A, B]` at one `n_dot_v` and perceptual `roughness` from `samples` Hammersley samples.
fn integrate_entry(n_dot_v: f64, roughness: f64, samples: u32) -> [f32; 2] {
    let alpha = roughness * roughness;
    // Tangent space, +Z the normal, the view in the XZ plane.
    let view = [(1.0 - n_dot_v * n_dot_v).max(0.0).sqrt(), 0.0, n_dot_v];
    let (mut a, mut b) = (0.0f64, 0.0f64);
    for i in 0..samples {
        let h = sample_half_vector(hammersley(i, samples), alpha);
        let v_dot_h_signed = view[0] * h[0] + view[1] * h[1] + view[2] * h[2];
        let n_dot_l = (2.0 * v_dot_h_signed * h[2] - view[2]).clamp(0.0, 1.0);
        let n_dot_h = h[2].clamp(0.0, 1.0);
        let v_dot_h = v_dot_h_signed.clamp(0.0, 1.0);
        if n_dot_l > 0.0 && n_dot_h > 0.0 {
            let v_pdf = visibility_correlated(n_dot_l, n_dot_v, alpha) * v_dot_h * n_dot_l / n_dot_h;
            let fc = (1.0 - v_dot_h).powi(5);
            a += (1.0 - fc) * v_pdf;
            b += fc * v_pdf;
        }
    }
    let scale = 4.0 / f64::from(samples.max(1));
    [(a * scale) as f32, (b * scale) as f32]
}
