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
pub(crate) fn ssim_channel(a: &[f32], b: &[f32], width: usize, height: usize, channels: usize, channel: usize) -> f64 {
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
pub(crate) fn ssim(a: &[f32], b: &[f32], width: usize, height: usize, channels: usize) -> f64 {
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

/// Mean angle in degrees between the normal vectors of two tangent-space normal maps stored as
/// `t = n * 0.5 + 0.5` (`channels` ≥ 3 per texel; both in one convention). Each texel's vectors are
/// normalised first; texels whose vector has no length in either map are skipped.
#[must_use]
pub(crate) fn normal_angular_error_deg(a: &[f32], b: &[f32], channels: usize) -> f64 {
    if channels < 3 {
        return f64::NAN;
    }
    let vector = |t: &[f32]| -> Option<[f64; 3]> {
        let v = [f64::from(t[0]) * 2.0 - 1.0, f64::from(t[1]) * 2.0 - 1.0, f64::from(t[2]) * 2.0 - 1.0];
        let len = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        (len > 1e-6).then(|| [v[0] / len, v[1] / len, v[2] / len])
    };
    let (mut sum, mut count) = (0.0f64, 0usize);
    for (x, y) in a.chunks_exact(channels).zip(b.chunks_exact(channels)) {
        if let (Some(u), Some(v)) = (vector(x), vector(y)) {
            let cos = (u[0] * v[0] + u[1] * v[1] + u[2] * v[2]).clamp(-1.0, 1.0);
            sum += cos.acos().to_degrees();
            count += 1;
        }
    }
    if count == 0 { f64::NAN } else { sum / count as f64 }
}

/// Mean FLIP error (NVIDIA's perceptual difference metric, LDR version: Andersson et al. 2020,
/// through the `nv-flip` crate, which builds NVIDIA's reference C++) between two images of
/// `channels` stored values in `[0, 1]` per texel, viewed as sRGB-encoded 8-bit colour at the
/// default 67 pixels per degree. One-channel maps are viewed as grey, two-channel ones with blue 0,
/// alpha is ignored. 0 is identical; 1 is the largest difference.
#[cfg(feature = "flip")]
#[must_use]
pub fn flip_mean(reference: &[f32], test: &[f32], width: usize, height: usize, channels: usize) -> f64 {
    let rgb8 = |values: &[f32]| -> Vec<u8> {
        let byte = crate::decode::unorm8;
        values
            .chunks_exact(channels.max(1))
            .flat_map(|t| match t.len() {
                1 => [byte(t[0]); 3],
                2 => [byte(t[0]), byte(t[1]), 0],
                _ => [byte(t[0]), byte(t[1]), byte(t[2])],
            })
            .collect()
    };
    let error = flip_error(&rgb8(reference), &rgb8(test), width as u32, height as u32);
    f64::from(nv_flip::FlipPool::from_image(&error).mean())
}

/// NVIDIA's FLIP per pixel of two RGB8 images of `width` × `height` (lengths checked by the
/// callers).
#[cfg(feature = "flip")]
fn flip_error(reference: &[u8], test: &[u8], width: u32, height: u32) -> nv_flip::FlipImageFloat {
    let reference = nv_flip::FlipImageRgb8::with_data(width, height, reference);
    let test = nv_flip::FlipImageRgb8::with_data(width, height, test);
    nv_flip::flip(reference, test, nv_flip::DEFAULT_PIXELS_PER_DEGREE)
}

/// A FLIP error map of two images as shown on screen: each pixel's error in NVIDIA's magma colour
/// map (black: none, yellow: the most), and the mean error.
#[cfg(feature = "flip")]
#[derive(Clone, Debug)]
pub struct FlipMap {
    /// RGB8 rows, top to bottom.
    pub magma_rgb8: Vec<u8>,
    /// Mean FLIP over the pixels: 0 is identical, 1 the largest difference.
    pub mean: f64,
}

/// FLIP (LDR, 67 pixels per degree) of `test` against `reference`, two sRGB-encoded RGB8 images
/// of `width` × `height` (rows top to bottom); `None` when a buffer is not that size.
#[cfg(feature = "flip")]
#[must_use]
pub fn flip_map(reference: &[u8], test: &[u8], width: u32, height: u32) -> Option<FlipMap> {
    let len = (width as usize).checked_mul(height as usize)?.checked_mul(3)?;
    if width == 0 || height == 0 || reference.len() != len || test.len() != len {
        return None;
    }
    let error = flip_error(reference, test, width, height);
    let mean = f64::from(nv_flip::FlipPool::from_image(&error).mean());
    Some(FlipMap { magma_rgb8: error.apply_color_lut(&nv_flip::magma_lut()).to_vec(), mean })
}

#[cfg(test)]
mod metric_tests {
    use super::*;

    #[test]
    fn angular_error_of_a_known_tilt() {
        // Flat normals against normals tilted by 10 degrees about x.
        let tilt = 10f32.to_radians();
        let flat: Vec<f32> = (0..16).flat_map(|_| [0.5, 0.5, 1.0]).collect();
        let tilted: Vec<f32> = (0..16).flat_map(|_| [0.5, tilt.sin() * 0.5 + 0.5, tilt.cos() * 0.5 + 0.5]).collect();
        let error = normal_angular_error_deg(&flat, &tilted, 3);
        assert!((error - 10.0).abs() < 1e-3, "{error}");
        assert!(normal_angular_error_deg(&flat, &flat, 3).abs() < 1e-3);
        assert!(normal_angular_error_deg(&flat, &flat, 1).is_nan());
    }

    #[cfg(feature = "flip")]
    #[test]
    fn flip_is_zero_for_identical_images_and_grows_with_the_error() {
        let (w, h) = (64usize, 64usize);
        let image: Vec<f32> = (0..w * h).flat_map(|i| [(i % w) as f32 / w as f32, (i / w) as f32 / h as f32, 0.3]).collect();
        let noisy = |amount: f32| -> Vec<f32> {
            image.iter().enumerate().map(|(i, v)| v + amount * (((i * 7919) % 13) as f32 / 6.0 - 1.0)).collect()
        };
        assert!(flip_mean(&image, &image, w, h, 3) < 1e-6);
        let (small, large) = (flip_mean(&image, &noisy(0.02), w, h, 3), flip_mean(&image, &noisy(0.2), w, h, 3));
        assert!(small > 0.0 && large > 2.0 * small && large <= 1.0, "{small} {large}");
        // One channel is viewed as grey.
        let grey: Vec<f32> = image.iter().step_by(3).copied().collect();
        assert!(flip_mean(&grey, &grey, w, h, 1) < 1e-6);
    }

    #[cfg(feature = "flip")]
    #[test]
    fn a_flip_map_is_dark_where_images_agree_and_bright_where_they_differ() {
        let (w, h) = (32u32, 32u32);
        let image: Vec<u8> = (0..w * h).flat_map(|i| [(i % w * 8) as u8, (i / w * 8) as u8, 90]).collect();
        // The right half inverted.
        let test: Vec<u8> = image
            .chunks_exact(3)
            .enumerate()
            .flat_map(|(i, p)| if i as u32 % w >= w / 2 { [255 - p[0], 255 - p[1], 255 - p[2]] } else { [p[0], p[1], p[2]] })
            .collect();
        let same = flip_map(&image, &image, w, h).expect("the sizes match");
        assert!(same.mean < 1e-6);
        let map = flip_map(&image, &test, w, h).expect("the sizes match");
        assert_eq!(map.magma_rgb8.len(), (w * h * 3) as usize);
        let brightness = |x: u32, y: u32| map.magma_rgb8[((y * w + x) * 3) as usize..][..3].iter().map(|&v| u32::from(v)).sum::<u32>();
        // Well inside each half (FLIP's filters spread an edge a few pixels).
        assert!(brightness(4, 16) < 60 && brightness(27, 16) > 200, "{} {}", brightness(4, 16), brightness(27, 16));
        assert!(map.mean > 0.2, "{}", map.mean);
        // A buffer not the stated size is refused, not read past.
        assert!(flip_map(&image, &test[..30], w, h).is_none());
        assert!(flip_map(&image, &test, w + 1, h).is_none());
    }
}
