//! Quantisation: latents to `bits`-bit levels over a fixed range, MLP weights to int8 with one
//! scale per output row.

use crate::params::{GridParams, LayerParams};

/// The value range every latent is clamped to before quantisation.
pub const LATENT_RANGE: [f32; 2] = [-1.0, 1.0];

/// Step between two latent levels at `bits` bits over [`LATENT_RANGE`].
#[must_use]
pub fn latent_step(bits: u32) -> f32 {
    (LATENT_RANGE[1] - LATENT_RANGE[0]) / ((1u32 << bits) - 1) as f32
}

/// The level (`0 ..= 2^bits - 1`) nearest to `value`.
#[must_use]
pub fn latent_level(value: f32, bits: u32) -> u8 {
    let max_level = ((1u32 << bits) - 1) as f32;
    let t = (value.clamp(LATENT_RANGE[0], LATENT_RANGE[1]) - LATENT_RANGE[0]) / latent_step(bits);
    t.round().clamp(0.0, max_level) as u8
}

/// The value of a latent level over [`LATENT_RANGE`].
#[must_use]
pub fn latent_value(level: u8, bits: u32) -> f32 {
    level_value(level, bits, LATENT_RANGE)
}

/// The value of a latent level over `range`: `range[0] + level · (range[1] − range[0]) / (2^bits − 1)`.
/// Every decoder (CPU, WGSL) uses exactly this expression.
#[must_use]
pub fn level_value(level: u8, bits: u32, range: [f32; 2]) -> f32 {
    range[0] + f32::from(level) * ((range[1] - range[0]) / ((1u32 << bits) - 1) as f32)
}

/// Rounds every value of a grid to its nearest level (in place).
pub fn round_grid(grid: &mut GridParams, bits: u32) {
    for v in &mut grid.values {
        *v = latent_value(latent_level(*v, bits), bits);
    }
}

/// The levels of a grid.
#[must_use]
pub fn grid_levels(grid: &GridParams, bits: u32) -> Vec<u8> {
    grid.values.iter().map(|&v| latent_level(v, bits)).collect()
}

/// An int8 layer: `w[o][i] = weights[o][i] * scales[o]`.
#[derive(Clone, Debug, PartialEq)]
pub struct QuantizedLayer {
    /// Input width.
    pub inputs: usize,
    /// Output width.
    pub outputs: usize,
    /// `outputs * inputs` int8 weights, `[out][in]`.
    pub weights: Vec<i8>,
    /// One scale per output row.
    pub scales: Vec<f32>,
    /// Biases, kept as f32 (they are few).
    pub biases: Vec<f32>,
}

impl QuantizedLayer {
    /// Quantises a layer: per output row, `scale = max |w| / 127`, `q = round(w / scale)`.
    #[must_use]
    pub fn quantize(layer: &LayerParams) -> Self {
        let mut weights = Vec::with_capacity(layer.weights.len());
        let mut scales = Vec::with_capacity(layer.outputs);
        for o in 0..layer.outputs {
            let row = &layer.weights[o * layer.inputs..(o + 1) * layer.inputs];
            let max_abs = row.iter().fold(0.0_f32, |m, w| m.max(w.abs()));
            let scale = if max_abs > 0.0 { max_abs / 127.0 } else { 1.0 };
            scales.push(scale);
            weights.extend(row.iter().map(|w| (w / scale).round().clamp(-127.0, 127.0) as i8));
        }
        Self { inputs: layer.inputs, outputs: layer.outputs, weights, scales, biases: layer.biases.clone() }
    }

    /// Quantises a layer keeping some rows' scales: `fixed[o] = Some(scale)` quantises row `o`
    /// with that scale (clamped to ±127), `None` picks `max |w| / 127` as [`Self::quantize`] does.
    /// Weights that are already `q · scale` come back as exactly `q`, so a frozen row keeps its
    /// int8 values and scale bit for bit.
    #[must_use]
    pub fn quantize_with_scales(layer: &LayerParams, fixed: &[Option<f32>]) -> Self {
        let mut q = Self::quantize(layer);
        for (o, scale) in fixed.iter().enumerate().take(layer.outputs) {
            if let Some(scale) = *scale {
                q.scales[o] = scale;
                let row = &layer.weights[o * layer.inputs..(o + 1) * layer.inputs];
                for (dst, w) in q.weights[o * layer.inputs..(o + 1) * layer.inputs].iter_mut().zip(row) {
                    *dst = (w / scale).round().clamp(-127.0, 127.0) as i8;
                }
            }
        }
        q
    }

    /// The float layer these int8 values stand for.
    #[must_use]
    pub fn dequantize(&self) -> LayerParams {
        let mut weights = Vec::with_capacity(self.weights.len());
        for o in 0..self.outputs {
            let scale = self.scales[o];
            weights.extend(self.weights[o * self.inputs..(o + 1) * self.inputs].iter().map(|&q| f32::from(q) * scale));
        }
        LayerParams { inputs: self.inputs, outputs: self.outputs, weights, biases: self.biases.clone() }
    }
}

/// Replaces a layer's weights by their int8-quantised values (the straight-through forward of
/// quantisation-aware fine-tuning).
#[must_use]
pub fn fake_quantize(layer: &LayerParams) -> LayerParams {
    QuantizedLayer::quantize(layer).dequantize()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latent_levels_round_trip() {
        for bits in [1, 2, 4, 8] {
            let max_level = (1u32 << bits) - 1;
            for level in 0..=max_level {
                let level = level as u8;
                assert_eq!(latent_level(latent_value(level, bits), bits), level);
            }
            assert_eq!(latent_level(-5.0, bits), 0);
            assert_eq!(u32::from(latent_level(5.0, bits)), max_level);
        }
    }

    #[test]
    fn fixed_scales_keep_frozen_rows_bit_for_bit() {
        let layer =
            LayerParams { inputs: 4, outputs: 2, weights: vec![0.3, -0.7, 0.01, 0.2, 0.5, 0.25, -0.125, 0.9], biases: vec![0.0; 2] };
        let q = QuantizedLayer::quantize(&layer);
        // Row 0 frozen: its dequantised values requantise to the same int8 and scale, even with a
        // new, larger weight in column 3 (clamped to the old scale's range).
        let mut grown = q.dequantize();
        grown.weights[3] = 5.0;
        let fixed = [Some(q.scales[0]), None];
        let again = QuantizedLayer::quantize_with_scales(&grown, &fixed);
        assert_eq!(again.scales[0].to_bits(), q.scales[0].to_bits());
        assert_eq!(&again.weights[..3], &q.weights[..3]);
        assert_eq!(again.weights[3], 127);
        assert_eq!(&again.weights[4..], &q.weights[4..]);
    }

    #[test]
    fn int8_error_is_within_half_a_step() {
        let layer = LayerParams { inputs: 3, outputs: 2, weights: vec![0.5, -0.25, 0.125, 0.0, 0.0, 0.0], biases: vec![0.1, 0.2] };
        let q = QuantizedLayer::quantize(&layer);
        let d = q.dequantize();
        for o in 0..2 {
            for i in 0..3 {
                let err = (d.weights[o * 3 + i] - layer.weights[o * 3 + i]).abs();
                assert!(err <= q.scales[o] * 0.5 + 1e-7, "error {err} at {o},{i}");
            }
        }
        assert_eq!(d.biases, layer.biases);
        assert!(d.weights[3..].iter().all(|&w| w == 0.0));
    }
}
