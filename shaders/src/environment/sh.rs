//! Diffuse irradiance as nine spherical-harmonic coefficients (Ramamoorthi & Hanrahan 2001): the
//! source projected onto the real SH basis up to l = 2, each band scaled by the clamped-cosine
//! convolution `Â_l` (π, 2π/3, π/4) and by 1/π, so evaluating gives irradiance/π.

use super::{Environment, equirect_uv_to_direction};
use rayon::prelude::*;

/// `Â_l / π` for bands 0, 1, 2: the cosine lobe's convolution (Ramamoorthi & Hanrahan) divided
/// by π, folded into the stored coefficients.
const BAND_SCALE: [f64; 3] = [1.0, 2.0 / 3.0, 0.25];

/// The nine real SH basis functions at unit direction `dir = (x, y, z)`, in the stored order
/// (l, m) = (0, 0), (1, −1), (1, 0), (1, 1), (2, −2), (2, −1), (2, 0), (2, 1), (2, 2):
/// `0.282095`, `0.488603·y`, `0.488603·z`, `0.488603·x`, `1.092548·xy`, `1.092548·yz`,
/// `0.315392·(3z² − 1)`, `1.092548·xz`, `0.546274·(x² − y²)` (the usual Cartesian forms, applied
/// to texset's axes as they are: +Y up does not change the basis, only which coefficient holds
/// what). The GPU side evaluates the same nine with the coefficients of
/// [`super::PreparedEnvironment::irradiance_sh`].
#[must_use]
pub fn sh9_basis(dir: [f32; 3]) -> [f32; 9] {
    let [x, y, z] = dir;
    [
        0.282_095,
        0.488_603 * y,
        0.488_603 * z,
        0.488_603 * x,
        1.092_548 * x * y,
        1.092_548 * y * z,
        0.315_392 * (3.0 * z * z - 1.0),
        1.092_548 * x * z,
        0.546_274 * (x * x - y * y),
    ]
}

/// The solid angle of each whole row of an equirectangular image `height_px` rows tall (a texel
/// of a row `width_px` wide covers 1/`width_px` of it): `sin θ_y` at the row's centre, scaled so
/// the rows sum to exactly 4π and a constant environment projects exactly.
pub(super) fn row_solid_angles(height_px: u32) -> Vec<f64> {
    let rows: Vec<f64> = (0..height_px).map(|y| ((f64::from(y) + 0.5) / f64::from(height_px) * std::f64::consts::PI).sin()).collect();
    let total: f64 = rows.iter().sum();
    let scale = if total > 0.0 { 4.0 * std::f64::consts::PI / total } else { 0.0 };
    rows.into_iter().map(|r| r * scale).collect()
}

/// The irradiance/π coefficients of `environment` (see [`sh9_basis`] for the order).
pub(super) fn irradiance_sh(environment: &Environment) -> [[f32; 3]; 9] {
    let width = environment.width_px as usize;
    let row_weights = row_solid_angles(environment.height_px);
    // Per row in parallel, then summed in row order: the same bits on any number of threads.
    let rows: Vec<[[f64; 3]; 9]> = environment
        .texels
        .par_chunks(width)
        .zip(row_weights.par_iter())
        .enumerate()
        .map(|(y, (row, row_weight))| {
            let weight = row_weight / width as f64;
            let v = (y as f32 + 0.5) / environment.height_px as f32;
            let mut sum = [[0.0f64; 3]; 9];
            for (x, texel) in row.iter().enumerate() {
                let dir = equirect_uv_to_direction([(x as f32 + 0.5) / width as f32, v]);
                for (coefficient, basis) in sum.iter_mut().zip(sh9_basis(dir)) {
                    for (c, value) in coefficient.iter_mut().zip(texel) {
                        *c += f64::from(*value) * f64::from(basis) * weight;
                    }
                }
            }
            sum
        })
        .collect();
    let mut projected = [[0.0f64; 3]; 9];
    for row in &rows {
        for (total, value) in projected.iter_mut().flatten().zip(row.iter().flatten()) {
            *total += value;
        }
    }
    let band = [0, 1, 1, 1, 2, 2, 2, 2, 2];
    std::array::from_fn(|i| projected[i].map(|c| (c * BAND_SCALE[band[i]]) as f32))
}
