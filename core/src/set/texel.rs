//! How a texel is stored: the sRGB transfer functions of colour maps, and a normal's
//! `n · 0.5 + 0.5` encoding through its channel ranges. What ingest, the mip chains, the decoders
//! and the previews agree on.

/// The inverse sRGB transfer function (IEC 61966-2-1), one channel.
#[must_use]
pub(crate) fn srgb_to_linear(c: f32) -> f32 {
    if c <= 0.04045 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) }
}

/// The sRGB transfer function (IEC 61966-2-1), one channel: the inverse of [`srgb_to_linear`].
#[must_use]
pub fn linear_to_srgb(c: f32) -> f32 {
    if c <= 0.003_130_8 { c * 12.92 } else { 1.055 * c.powf(1.0 / 2.4) - 0.055 }
}

/// Renormalises one normal texel to unit length in place: its first three values are stored
/// values, each its channel's `[low, high]` range (`ranges`; missing: `[0, 1]`, as for every
/// 8- and 16-bit source) mapped to `[0, 1]`, of a normal encoded `n · 0.5 + 0.5`. A normal of
/// (near) zero length, or a texel of under three values, stays as it is. What the box chain does
/// to each normal it averages, and what unit normal targets do to level 0
/// ([`super::Texture::unit_normal_texels`]).
pub(crate) fn renormalise_stored_normal(texel: &mut [f32], ranges: &[[f32; 2]]) {
    let Some(xyz) = texel.get_mut(..3) else { return };
    let range = |c: usize| ranges.get(c).copied().unwrap_or([0.0, 1.0]);
    let n: [f32; 3] = std::array::from_fn(|c| {
        let [low, high] = range(c);
        (low + (high - low) * xyz[c]) * 2.0 - 1.0
    });
    let length = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
    if length <= 1e-6 {
        return;
    }
    for (c, value) in xyz.iter_mut().enumerate() {
        let [low, high] = range(c);
        *value = ((n[c] / length * 0.5 + 0.5 - low) / (high - low).max(f32::MIN_POSITIVE)).clamp(0.0, 1.0);
    }
}

#[cfg(test)]
mod tests {
    // Exact comparisons are the point where a value must stay as it was.
    #![allow(clippy::float_cmp)]
    use super::*;

    #[test]
    fn a_zero_length_normal_stays_as_it_is() {
        let mut texel = [0.5, 0.5, 0.5, 0.25];
        renormalise_stored_normal(&mut texel, &[]);
        assert_eq!(texel, [0.5, 0.5, 0.5, 0.25]);
        let mut tilted = [1.0, 0.5, 0.5];
        renormalise_stored_normal(&mut tilted, &[[0.0, 1.0]; 3]);
        assert_eq!(tilted, [1.0, 0.5, 0.5]);
        let mut short = [0.75, 0.5, 0.5];
        renormalise_stored_normal(&mut short, &[]);
        assert_eq!(short, [1.0, 0.5, 0.5]);
    }
}
