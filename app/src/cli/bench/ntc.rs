//! NTC's own rate–distortion figures, the curve `bench rd` measures texset against: RTXNTC-Library
//! v0.9.2's `TestData` (`AdaptiveCompressionSession.cpp`), the PSNR of its 32 test materials at its
//! nine presets (issue 66 quotes the table). Read between its rates linearly in log(rate).

/// One of NTC's presets over its 32 test materials.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct NtcRate {
    /// Bits per texel of the whole set.
    pub bits_per_texel: f64,
    /// Median PSNR, dB.
    pub median_db: f64,
    /// First quartile, dB.
    pub p25_db: f64,
    /// Third quartile, dB.
    pub p75_db: f64,
    /// Materials at or above 40 dB, of [`NTC_MATERIALS`].
    pub at_least_40db: usize,
}

/// How many materials NTC's table pools.
pub(super) const NTC_MATERIALS: usize = 32;

/// NTC's nine presets, lowest rate first.
pub(super) const NTC_TEST_DATA: [NtcRate; 9] = [
    NtcRate { bits_per_texel: 1.11, median_db: 33.2, p25_db: 28.8, p75_db: 38.8, at_least_40db: 6 },
    NtcRate { bits_per_texel: 1.67, median_db: 34.6, p25_db: 30.3, p75_db: 40.3, at_least_40db: 9 },
    NtcRate { bits_per_texel: 2.5, median_db: 36.4, p25_db: 32.0, p75_db: 41.6, at_least_40db: 10 },
    NtcRate { bits_per_texel: 3.75, median_db: 38.5, p25_db: 34.4, p75_db: 43.6, at_least_40db: 10 },
    NtcRate { bits_per_texel: 5.0, median_db: 39.9, p25_db: 36.1, p75_db: 45.0, at_least_40db: 16 },
    NtcRate { bits_per_texel: 6.67, median_db: 41.4, p25_db: 36.9, p75_db: 46.3, at_least_40db: 19 },
    NtcRate { bits_per_texel: 10.0, median_db: 44.0, p25_db: 41.3, p75_db: 48.5, at_least_40db: 24 },
    NtcRate { bits_per_texel: 15.0, median_db: 47.0, p25_db: 45.3, p75_db: 50.7, at_least_40db: 31 },
    NtcRate { bits_per_texel: 20.0, median_db: 48.6, p25_db: 47.1, p75_db: 52.3, at_least_40db: 32 },
];

/// `bench rd`'s default `--bpp`: NTC's nine rates (a test checks it against [`NTC_TEST_DATA`]).
pub(super) const NTC_RATES_ARG: &str = "1.11,1.67,2.5,3.75,5,6.67,10,15,20";

/// NTC's median, first and third quartile at `bits_per_texel`, dB, linear in log(rate) between
/// its presets; none outside them.
pub(super) fn ntc_at(bits_per_texel: f64) -> Option<[f64; 3]> {
    let row = |r: &NtcRate| [r.median_db, r.p25_db, r.p75_db];
    NTC_TEST_DATA.windows(2).find(|w| (w[0].bits_per_texel..=w[1].bits_per_texel).contains(&bits_per_texel)).map(|w| {
        let t = (bits_per_texel.ln() - w[0].bits_per_texel.ln()) / (w[1].bits_per_texel.ln() - w[0].bits_per_texel.ln());
        let (a, b) = (row(&w[0]), row(&w[1]));
        [0, 1, 2].map(|i| a[i] + t * (b[i] - a[i]))
    })
}

/// The `q` quantile (0..=1) of `values`, linear between order statistics (numpy's default); NaN
/// for none.
pub(super) fn quantile(values: &[f64], q: f64) -> f64 {
    let mut sorted: Vec<f64> = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let Some(last) = sorted.len().checked_sub(1) else { return f64::NAN };
    let at = q.clamp(0.0, 1.0) * last as f64;
    let (low, high) = (at.floor() as usize, at.ceil() as usize);
    sorted[low] + (at - low as f64) * (sorted[high] - sorted[low])
}

#[cfg(test)]
mod tests {
    // Exact values: the quantiles here are sums of halves and quarters.
    #![allow(clippy::unwrap_used, clippy::float_cmp)]
    use super::*;

    #[test]
    fn the_default_rates_are_ntcs_and_its_table_is_read_in_log_rate() {
        let rates: Vec<f64> = NTC_RATES_ARG.split(',').map(|r| r.parse().unwrap()).collect();
        assert_eq!(rates, NTC_TEST_DATA.map(|r| r.bits_per_texel));
        assert_eq!(ntc_at(3.75), Some([38.5, 34.4, 43.6]));
        // Halfway between 6.67 and 10 in log(rate) is √66.7 = 8.17, halfway between their
        // figures (linear in rate would give 41.4 + 1.5 / 3.33 · 2.6 = 42.57 for the median).
        let [median, p25, p75] = ntc_at((6.67f64 * 10.0).sqrt()).unwrap();
        assert!((median - 42.7).abs() < 1e-9 && (p25 - 39.1).abs() < 1e-9 && (p75 - 47.4).abs() < 1e-9, "{median} {p25} {p75}");
        assert_eq!((ntc_at(1.0), ntc_at(20.5)), (None, None));
        assert!(NTC_TEST_DATA.windows(2).all(|w| w[0].bits_per_texel < w[1].bits_per_texel && w[0].median_db < w[1].median_db));
    }

    #[test]
    fn quantiles_are_linear_between_order_statistics() {
        let values = [40.0, 10.0, 30.0, 20.0];
        assert_eq!(quantile(&values, 0.5), 25.0);
        assert_eq!(quantile(&values, 0.25), 17.5);
        assert_eq!(quantile(&values, 0.75), 32.5);
        assert_eq!(quantile(&[7.0], 0.25), 7.0);
        assert!(quantile(&[], 0.5).is_nan());
    }
}
