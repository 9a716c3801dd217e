//! Content estimates: flat maps and the bits per texel a map's detail needs.

/// A texture whose every channel a constant (its mean) reproduces at this PSNR or better counts
/// as flat: the MLP bias carries it, so it gets no latent channels (it then costs one output row
/// of the last layer, nothing else). 48 dB is a per-channel standard deviation of ~1/255.
pub(crate) const FLAT_PSNR_DB: f32 = 48.0;

/// Whether a channel of this standard deviation counts as flat ([`FLAT_PSNR_DB`] from its mean):
/// the analyse pass's test, and the prune pass's before it settles a flat map's row.
pub(crate) fn is_flat_std_dev(std_dev: f32) -> bool {
    std_dev <= 10f32.powf(-FLAT_PSNR_DB / 20.0)
}

/// Per channel standard deviations of a texture's values.
pub(crate) fn channel_std_devs(t: &crate::set::Texture) -> Vec<f32> {
    let ch = t.info.channels as usize;
    let n = t.texel_count().max(1) as f64;
    (0..ch)
        .map(|c| {
            let values = t.texels.iter().skip(c).step_by(ch).map(|&v| f64::from(v));
            let mean = values.clone().sum::<f64>() / n;
            (values.map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt() as f32
        })
        .collect()
}

/// The distortion the content estimate aims at: mean squared error of 40 dB.
pub(crate) const CONTENT_TARGET_PSNR_DB: f32 = 40.0;

/// How much a texture has to say, in bits per texel at [`CONTENT_TARGET_PSNR_DB`]: per channel,
/// the Gaussian rate `½·log2(1 + σ²/D)` of its whole variance plus the same rate of its detail
/// energy above the finest latent grid's Nyquist rate (the variance left after averaging over
/// `block × block` cells, which only latent channels, not the MLP's smooth inputs, can carry).
/// Returns `(bits, detail energy of the busiest channel)`.
#[must_use]
pub(crate) fn content_bits(t: &crate::set::Texture, block: u32) -> (f32, f32) {
    let (w, h, ch) = (t.info.width as usize, t.info.height as usize, t.info.channels as usize);
    let block = block.max(1) as usize;
    let distortion = 10f64.powf(-f64::from(CONTENT_TARGET_PSNR_DB) / 10.0);
    let (bw, bh) = (w.div_ceil(block), h.div_ceil(block));
    let mut bits = 0.0f64;
    let mut busiest = 0.0f64;
    for c in 0..ch {
        let value = |x: usize, y: usize| f64::from(t.texels[(y * w + x) * ch + c]);
        let mut sums = vec![(0.0f64, 0u32); bw * bh];
        let (mut sum, mut sum_sq) = (0.0f64, 0.0f64);
        for y in 0..h {
            for x in 0..w {
                let v = value(x, y);
                sum += v;
                sum_sq += v * v;
                let cell = &mut sums[(y / block) * bw + x / block];
                cell.0 += v;
                cell.1 += 1;
            }
        }
        let n = (w * h).max(1) as f64;
        let variance = (sum_sq / n - (sum / n).powi(2)).max(0.0);
        let mut detail = 0.0f64;
        for y in 0..h {
            for x in 0..w {
                let (s, k) = sums[(y / block) * bw + x / block];
                detail += (value(x, y) - s / f64::from(k.max(1))).powi(2);
            }
        }
        let detail = detail / n;
        busiest = busiest.max(detail);
        bits += 0.5 * (1.0 + variance / distortion).log2() + 0.5 * (1.0 + detail / distortion).log2();
    }
    (bits as f32, busiest as f32)
}

/// A texture whose content is at most this fraction of the library's busiest texture reads half
/// the channels; at most [`QUARTER_BUDGET_SHARE`], a quarter. Budgets come in these three steps
/// (not a continuum) because textures of a material with one budget share one MLP evaluation per
/// texel in training and decoding; every distinct budget adds one.
pub(crate) const HALF_BUDGET_SHARE: f32 = 0.5;
/// See [`HALF_BUDGET_SHARE`].
pub(crate) const QUARTER_BUDGET_SHARE: f32 = 0.25;
