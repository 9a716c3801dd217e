//! The one random-number generator of texset: `SplitMix64` (Steele, Lea and Flood 2014). Small,
//! fast, and good enough for sampling texels, QAT noise, initial weights, search proposals and the
//! sample-texture generator. Every stream is a pure function of its seed, so runs are
//! reproducible on any thread count.

/// The increment of the `SplitMix64` state (the golden ratio in 64 bits).
const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The `SplitMix64` output function of state `x`: a fast, well-mixed 64-bit hash.
#[must_use]
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(GOLDEN_GAMMA);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A `SplitMix64` stream.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// The stream for `(seed, a, b)`: training derives one per (seed, step, chunk).
    #[must_use]
    pub fn new(seed: u64, a: u64, b: u64) -> Self {
        let mut r = Self(seed ^ a.wrapping_mul(GOLDEN_GAMMA) ^ b.wrapping_mul(0xD1B5_4A32_D192_ED03));
        r.next_u64();
        r
    }

    /// The stream whose next output is `splitmix64(state)`.
    #[must_use]
    pub fn from_state(state: u64) -> Self {
        Self(state)
    }

    /// This stream with its first `n` outputs skipped.
    #[must_use]
    pub fn skip(mut self, n: u64) -> Self {
        self.0 = self.0.wrapping_add(GOLDEN_GAMMA.wrapping_mul(n));
        self
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let out = splitmix64(self.0);
        self.0 = self.0.wrapping_add(GOLDEN_GAMMA);
        out
    }

    /// Uniform in `[0, 1)`, 24 bits.
    pub fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Uniform in `[0, 1)`, 53 bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[0, n)` (multiply-shift, no modulo bias).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first outputs of `SplitMix64` from state 0, as published with the algorithm.
    #[test]
    fn matches_the_published_splitmix64_stream() {
        let mut r = Rng::from_state(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(r.next_u64(), 0x06C4_5D18_8009_454F);
    }

    /// Skipping `n` outputs is drawing and dropping them.
    #[test]
    fn skip_is_drawing_and_dropping() {
        let mut drawn = Rng::from_state(7);
        for _ in 0..3 {
            drawn.next_u64();
        }
        assert_eq!(Rng::from_state(7).skip(3).next_u64(), drawn.next_u64());
    }
}
