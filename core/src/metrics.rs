//! Image quality metrics on normalised `[0, 1]` values: PSNR and SSIM (Wang et al. 2004,
//! 11×11 Gaussian window, σ = 1.5, K1 = 0.01, K2 = 0.03).

use rayon::prelude::*;

/// Sum of squared differences and count, for pooling PSNR over several maps.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct SquaredError {
    /// Σ (a − b)².
    pub sum: f64,
    /// Number of values.
    pub count: u64,
}

impl SquaredError {
    /// Of two equally long slices.
    #[must_use]
    pub fn of(a: &[f32], b: &[f32]) -> Self {
        let sum = a
            .par_chunks(65536)
            .zip(b.par_chunks(65536))
            .map(|(a, b)| a.iter().zip(b).map(|(x, y)| f64::from(x - y).powi(2)).sum::<f64>())
            .sum();
        Self { sum, count: a.len().min(b.len()) as u64 }
    }
    /// Adds another.
    pub fn add(&mut self, other: Self) {
        self.sum += other.sum;
        self.count += other.count;
    }
    /// PSNR in dB for a peak of 1 (infinite for identical data is reported as 99 dB).
    #[must_use]
    pub fn psnr_db(&self) -> f64 {
        psnr_from_mse(self.sum / self.count.max(1) as f64)
    }
}

/// PSNR in dB of a mean squared error for a peak of 1, capped at 99 dB.
#[must_use]
pub fn psnr_from_mse(mse: f64) -> f64 {
    if mse <= 1e-10 { 99.0 } else { (-10.0 * mse.log10()).min(99.0) }
}

/// PSNR of two equally long slices of `[0, 1]` values.
#[must_use]
pub fn psnr(a: &[f32], b: &[f32]) -> f64 {
    SquaredError::of(a, b).psnr_db()
}

fn gaussian_kernel() -> [f32; 11] {
    let mut k = [0.0f32; 11];
    let mut sum = 0.0;
    for (i, v) in k.iter_mut().enumerate() {
        let x = i as f32 - 5.0;
        *v = (-(x * x) / (2.0 * 1.5 * 1.5)).exp();
        sum += *v;
    }
    for v in &mut k {
        *v /= sum;
    }
    k
}

/// Separable Gaussian blur with clamp-to-edge borders.
fn blur(plane: &[f32], width: usize, height: usize, kernel: &[f32; 11]) -> Vec<f32> {
    let mut tmp = vec![0.0f32; plane.len()];
    tmp.par_chunks_mut(width).enumerate().for_each(|(y, row)| {
        for (x, out) in row.iter_mut().enumerate() {
            let mut s = 0.0;
            for (k, w) in kernel.iter().enumerate() {
                let xx = (x as isize + k as isize - 5).clamp(0, width as isize - 1) as usize;
                s += w * plane[y * width + xx];
            }
            *out = s;
        }
    });
    let mut out = vec![0.0f32; plane.len()];
    out.par_chunks_mut(width).enumerate().for_each(|(y, row)| {
        for (x, o) in row.iter_mut().enumerate() {
            let mut s = 0.0;
            for (k, w) in kernel.iter().enumerate() {
                let yy = (y as isize + k as isize - 5).clamp(0, height as isize - 1) as usize;
                s += w * tmp[yy * width + x];
            }
            *o = s;
        }
    });
    out
}

/// Mean SSIM of one channel of two interleaved images (`channels` values per texel).
#[must_use]
pub fn ssim_channel(a: &[f32], b: &[f32], width: usize, height: usize, channels: usize, channel: usize) -> f64 {
    let n = width * height;
    if n == 0 || a.len() < n * channels || b.len() < n * channels {
        return 0.0;
    }
    let x: Vec<f32> = (0..n).map(|i| a[i * channels + channel]).collect();
    let y: Vec<f32> = (0..n).map(|i| b[i * channels + channel]).collect();
    let k = gaussian_kernel();
    let mu_x = blur(&x, width, height, &k);
    let mu_y = blur(&y, width, height, &k);
    let xx: Vec<f32> = x.iter().map(|v| v * v).collect();
    let yy: Vec<f32> = y.iter().map(|v| v * v).collect();
    let xy: Vec<f32> = x.iter().zip(&y).map(|(p, q)| p * q).collect();
    let s_xx = blur(&xx, width, height, &k);
    let s_yy = blur(&yy, width, height, &k);
    let s_xy = blur(&xy, width, height, &k);
    let (c1, c2) = (0.01f32 * 0.01, 0.03f32 * 0.03);
    let total: f64 = (0..n)
        .into_par_iter()
        .map(|i| {
            let (mx, my) = (mu_x[i], mu_y[i]);
            let vx = (s_xx[i] - mx * mx).max(0.0);
            let vy = (s_yy[i] - my * my).max(0.0);
            let cov = s_xy[i] - mx * my;
            f64::from(((2.0 * mx * my + c1) * (2.0 * cov + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2)))
        })
        .sum();
    total / n as f64
}

/// Mean SSIM over all channels of two interleaved images.
#[must_use]
pub fn ssim(a: &[f32], b: &[f32], width: usize, height: usize, channels: usize) -> f64 {
    (0..channels).map(|c| ssim_channel(a, b, width, height, channels, c)).sum::<f64>() / channels.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psnr_of_known_error() {
        let a = vec![0.5f32; 100];
        let b = vec![0.6f32; 100];
        // MSE = 0.01 → 20 dB.
        assert!((psnr(&a, &b) - 20.0).abs() < 1e-3);
        assert!((psnr(&a, &a) - 99.0).abs() < f64::EPSILON);
    }

    #[test]
    fn ssim_is_one_for_identical_and_drops_with_noise() {
        let (w, h) = (32, 32);
        let a: Vec<f32> = (0..w * h).map(|i| ((i % w) as f32 / w as f32 + (i / w) as f32 / h as f32) * 0.5).collect();
        assert!((ssim(&a, &a, w, h, 1) - 1.0).abs() < 1e-6);
        let noisy: Vec<f32> = a.iter().enumerate().map(|(i, v)| v + if i % 2 == 0 { 0.1 } else { -0.1 }).collect();
        let s = ssim(&a, &noisy, w, h, 1);
        assert!(s < 0.9 && s > 0.0, "ssim {s}");
        // A constant offset hurts SSIM far less than noise of the same energy.
        let shifted: Vec<f32> = a.iter().map(|v| v + 0.1).collect();
        assert!(ssim(&a, &shifted, w, h, 1) > s);
    }
}
