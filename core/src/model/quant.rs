//! Quantisation: latents to `bits`-bit levels over a fixed range, MLP weights to int8 with one
//! scale per output row.

#[cfg(feature = "train")]
use crate::model::params::GridParams;
use crate::model::params::LayerParams;

/// The value range every latent is clamped to before quantisation.
#[cfg(feature = "train")]
pub(crate) const LATENT_RANGE: [f32; 2] = [-1.0, 1.0];

/// Step between two latent levels at `bits` bits over [`LATENT_RANGE`].
#[must_use]
#[cfg(feature = "train")]
pub(crate) fn latent_step(bits: u32) -> f32 {
    (LATENT_RANGE[1] - LATENT_RANGE[0]) / ((1u32 << bits) - 1) as f32
}

/// The level (`0 ..= 2^bits - 1`) nearest to `value`.
#[must_use]
#[cfg(feature = "train")]
pub(crate) fn latent_level(value: f32, bits: u32) -> u8 {
    let max_level = ((1u32 << bits) - 1) as f32;
    let t = (value.clamp(LATENT_RANGE[0], LATENT_RANGE[1]) - LATENT_RANGE[0]) / latent_step(bits);
    t.round().clamp(0.0, max_level) as u8
}

/// The value of a latent level over [`LATENT_RANGE`].
#[must_use]
#[cfg(feature = "train")]
pub(crate) fn latent_value(level: u8, bits: u32) -> f32 {
    level_value(level, bits, LATENT_RANGE)
}

/// The value of a latent level over `range`: `range[0] + level · (range[1] − range[0]) / (2^bits − 1)`.
/// Every decoder (CPU, WGSL) uses exactly this expression.
#[must_use]
pub fn level_value(level: u8, bits: u32, range: [f32; 2]) -> f32 {
    range[0] + f32::from(level) * ((range[1] - range[0]) / ((1u32 << bits) - 1) as f32)
}

/// Rounds every value of a grid to its nearest level (in place).
#[cfg(feature = "train")]
pub(crate) fn round_grid(grid: &mut GridParams, bits: u32) {
    for v in &mut grid.values {
        *v = latent_value(latent_level(*v, bits), bits);
    }
}

/// The levels of a grid.
#[must_use]
#[cfg(feature = "train")]
pub(crate) fn grid_levels(grid: &GridParams, bits: u32) -> Vec<u8> {
    grid.values.iter().map(|&v| latent_level(v, bits)).collect()
}

/// How a bundle stores its decoder's weights (biases are f32 in every format).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum WeightFormat {
    /// int8 with one f32 scale per output row: `w = q · scale[o]` (format version 1's only one).
    #[default]
    #[serde(rename = "int8_per_row")]
    Int8,
    /// IEEE half precision, no scale.
    Fp16,
    /// 8-bit minifloat E4M3 (OCP FP8: 4 exponent bits, bias 7, 3 mantissa bits, subnormals, ±448
    /// at most, no infinities) with one f32 scale per output row: `w = e4m3(code) · scale[o]`.
    #[cfg_attr(feature = "clap", value(name = "e4m3"))]
    Fp8E4m3,
    /// Block-scaled int8 in the style of OCP MXINT8: each run of [`MX_BLOCK`] inputs of a row
    /// shares a power-of-two scale (one exponent byte), `w = q · 2^e`.
    #[cfg_attr(feature = "clap", value(name = "mxint8", help = "int8 with a shared power-of-two scale per block of 32 inputs"))]
    MxInt8,
}

/// Inputs per shared exponent in [`WeightFormat::MxInt8`].
pub(crate) const MX_BLOCK: usize = 32;

/// The largest finite E4M3 value.
pub(crate) const E4M3_MAX: f32 = 448.0;

impl WeightFormat {
    /// Every format, int8 first.
    pub const ALL: [Self; 4] = [Self::Int8, Self::Fp16, Self::Fp8E4m3, Self::MxInt8];

    /// Its name as `--weight-format` spells it, for reports: `int8`, `fp16`, `e4m3` or `mxint8`.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Int8 => "int8",
            Self::Fp16 => "fp16",
            Self::Fp8E4m3 => "e4m3",
            Self::MxInt8 => "mxint8",
        }
    }

    /// The code a bundle's manifest and the WGSL decoder use (0 = int8).
    #[must_use]
    pub fn code(self) -> u32 {
        match self {
            Self::Int8 => 0,
            Self::Fp16 => 1,
            Self::Fp8E4m3 => 2,
            Self::MxInt8 => 3,
        }
    }

    /// Scale values stored per output row: one (int8, E4M3), one per block (MXINT8), none (fp16).
    #[must_use]
    pub fn scales_per_row(self, inputs: usize) -> usize {
        match self {
            Self::Int8 | Self::Fp8E4m3 => 1,
            Self::Fp16 => 0,
            Self::MxInt8 => inputs.div_ceil(MX_BLOCK),
        }
    }

    /// Bytes a layer takes in a bundle: weight codes (each of the layer's sections padded to 4
    /// bytes), scales (f32, or one exponent byte per block for MXINT8) and f32 biases.
    #[must_use]
    pub fn layer_bytes(self, inputs: usize, outputs: usize) -> usize {
        let n = inputs * outputs;
        let biases = 4 * outputs;
        match self {
            Self::Int8 | Self::Fp8E4m3 => n.next_multiple_of(4) + 4 * outputs + biases,
            Self::Fp16 => (2 * n).next_multiple_of(4) + biases,
            Self::MxInt8 => n.next_multiple_of(4) + (outputs * self.scales_per_row(inputs)).next_multiple_of(4) + biases,
        }
    }
}

/// The value of an E4M3 code (bit 7 sign, bits 6..3 exponent, bits 2..0 mantissa). Codes 0x7F and
/// 0xFF (NaN in the OCP format) are never written; they read as ±448.
#[must_use]
pub(crate) fn e4m3_value(code: u8) -> f32 {
    let exponent = u32::from((code >> 3) & 15);
    let mantissa = f32::from(code & 7);
    let magnitude = if code & 0x7F == 0x7F {
        E4M3_MAX
    } else if exponent == 0 {
        mantissa * pow2(-9)
    } else {
        (8.0 + mantissa) * pow2(exponent as i32 - 10)
    };
    if code & 0x80 != 0 { -magnitude } else { magnitude }
}

/// The E4M3 code nearest to `value` (saturating at ±448; ties away from zero).
#[must_use]
pub(crate) fn e4m3_code(value: f32) -> u8 {
    let sign = if value.is_sign_negative() { 0x80 } else { 0 };
    let x = value.abs();
    if x.is_nan() || x == 0.0 {
        return 0;
    }
    if x >= E4M3_MAX {
        return sign | 0x7E;
    }
    // The spacing of representable values around x: 2^(e - 3) for x in [2^e, 2^(e+1)), e ≥ -6.
    let e = (x.log2().floor() as i32).max(-6);
    let step = pow2(e - 3);
    let q = (x / step).round() * step;
    let code = if q < pow2(-6) {
        (q / pow2(-9)).round() as u8
    } else {
        let qe = q.log2().floor() as i32;
        let mantissa = (q / pow2(qe - 3)).round() as i32 - 8;
        (((qe + 7) as u8) << 3) | mantissa as u8
    };
    sign | code.min(0x7E)
}

/// `2^n` for small `n`, exactly.
fn pow2(n: i32) -> f32 {
    f32::from_bits(((n + 127) as u32) << 23)
}

/// A quantised layer in one [`WeightFormat`]: `w[o][i]` is the code's value times its scale.
#[derive(Clone, Debug, PartialEq)]
pub struct QuantizedLayer {
    /// Input width.
    pub inputs: usize,
    /// Output width.
    pub outputs: usize,
    /// The format.
    pub format: WeightFormat,
    /// `outputs * inputs` 8-bit codes, `[out][in]`: int8 values (int8, MXINT8) or E4M3 bit
    /// patterns; empty for fp16.
    pub weights: Vec<i8>,
    /// `outputs * inputs` fp16 bit patterns for [`WeightFormat::Fp16`]; empty otherwise.
    pub halves: Vec<u16>,
    /// [`WeightFormat::scales_per_row`] scales per output row, `[out][block]` (MXINT8's are powers
    /// of two).
    pub scales: Vec<f32>,
    /// Biases, kept as f32 (they are few).
    pub biases: Vec<f32>,
}

impl QuantizedLayer {
    /// Quantises a layer in `format`: int8 and E4M3 scale each row to its largest magnitude,
    /// MXINT8 each block of [`MX_BLOCK`] inputs to the power of two that puts its largest
    /// magnitude in `[64, 128)`, fp16 rounds to nearest.
    #[must_use]
    pub fn quantize_as(layer: &LayerParams, format: WeightFormat) -> Self {
        let (inputs, outputs) = (layer.inputs, layer.outputs);
        let mut q =
            Self { inputs, outputs, format, weights: Vec::new(), halves: Vec::new(), scales: Vec::new(), biases: layer.biases.clone() };
        match format {
            WeightFormat::Int8 => return Self::quantize(layer),
            // Saturated to the largest finite half: a bundle holds no infinities.
            WeightFormat::Fp16 => {
                q.halves = layer.weights.iter().map(|&w| half::f16::from_f32(w.clamp(-65504.0, 65504.0)).to_bits()).collect();
            }
            WeightFormat::Fp8E4m3 => {
                for o in 0..outputs {
                    let row = &layer.weights[o * inputs..(o + 1) * inputs];
                    let max_abs = row.iter().fold(0.0_f32, |m, w| m.max(w.abs()));
                    let scale = if max_abs > 0.0 { max_abs / E4M3_MAX } else { 1.0 };
                    q.scales.push(scale);
                    q.weights.extend(row.iter().map(|w| i8::from_le_bytes([e4m3_code(w / scale)])));
                }
            }
            WeightFormat::MxInt8 => {
                for o in 0..outputs {
                    let row = &layer.weights[o * inputs..(o + 1) * inputs];
                    for block in row.chunks(MX_BLOCK) {
                        let max_abs = block.iter().fold(0.0_f32, |m, w| m.max(w.abs()));
                        let exponent = if max_abs > 0.0 { (max_abs.log2().floor() as i32 - 6).clamp(-126, 127) } else { 0 };
                        let scale = pow2(exponent);
                        q.scales.push(scale);
                        q.weights.extend(block.iter().map(|w| (w / scale).round().clamp(-127.0, 127.0) as i8));
                    }
                }
            }
        }
        q
    }

    /// Quantises a layer to int8: per output row, `scale = max |w| / 127`, `q = round(w / scale)`.
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
        Self {
            inputs: layer.inputs,
            outputs: layer.outputs,
            format: WeightFormat::Int8,
            weights,
            halves: Vec::new(),
            scales,
            biases: layer.biases.clone(),
        }
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

    /// The float layer these codes stand for: `value(code) · scale`, one f32 multiply, exactly
    /// as the WGSL decoder computes it.
    #[must_use]
    pub fn dequantize(&self) -> LayerParams {
        let n = self.inputs * self.outputs;
        let weights = match self.format {
            WeightFormat::Int8 => (0..n).map(|k| f32::from(self.weights[k]) * self.scales[k / self.inputs]).collect(),
            WeightFormat::Fp8E4m3 => (0..n).map(|k| e4m3_value(self.weights[k].to_le_bytes()[0]) * self.scales[k / self.inputs]).collect(),
            WeightFormat::MxInt8 => {
                let per_row = self.format.scales_per_row(self.inputs);
                (0..n)
                    .map(|k| {
                        let (o, i) = (k / self.inputs, k % self.inputs);
                        f32::from(self.weights[k]) * self.scales[o * per_row + i / MX_BLOCK]
                    })
                    .collect()
            }
            WeightFormat::Fp16 => self.halves.iter().map(|&h| half::f16::from_bits(h).to_f32()).collect(),
        };
        LayerParams { inputs: self.inputs, outputs: self.outputs, weights, biases: self.biases.clone() }
    }
}

/// Replaces a layer's weights by their quantised values in `format` (the straight-through forward
/// of quantisation-aware fine-tuning).
#[must_use]
pub fn fake_quantize(layer: &LayerParams, format: WeightFormat) -> LayerParams {
    QuantizedLayer::quantize_as(layer, format).dequantize()
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
    fn e4m3_codes_round_trip_and_round_to_nearest() {
        // Every non-NaN code reads back to itself; the values are the OCP table's.
        for code in 0..=255u8 {
            if code & 0x7F == 0x7F {
                continue;
            }
            let v = e4m3_value(code);
            let again = e4m3_code(v);
            // +0 and -0 both write as 0.
            if v == 0.0 {
                assert_eq!(again, 0);
            } else {
                assert_eq!(again, code, "code {code:#04x} = {v}");
            }
        }
        assert_eq!(e4m3_value(0x7E).to_bits(), 448.0f32.to_bits());
        assert_eq!(e4m3_value(0x08).to_bits(), 2f32.powi(-6).to_bits());
        assert_eq!(e4m3_value(0x01).to_bits(), 2f32.powi(-9).to_bits());
        assert_eq!(e4m3_value(0x38).to_bits(), 1.0f32.to_bits());
        assert_eq!(e4m3_value(0xB8).to_bits(), (-1.0f32).to_bits());
        assert_eq!(e4m3_code(1e6), 0x7E);
        assert_eq!(e4m3_code(-1e6), 0xFE);
        // Nearest: between 1.0 and 1.125 the midpoint splits them.
        assert_eq!(e4m3_value(e4m3_code(1.06)).to_bits(), 1.0f32.to_bits());
        assert_eq!(e4m3_value(e4m3_code(1.07)).to_bits(), 1.125f32.to_bits());
        // Relative error at most 1/16 in the normal range.
        for k in 0..2000 {
            let x = 0.02 + k as f32 * 0.21;
            let err = (e4m3_value(e4m3_code(x)) - x).abs() / x;
            assert!(err <= 1.0 / 16.0 + 1e-6, "{x}: {err}");
        }
    }

    #[test]
    fn every_format_dequantises_close_to_the_float_weights() {
        let inputs = 70;
        let weights: Vec<f32> = (0..3 * inputs).map(|k| ((k * 37 % 101) as f32 - 50.0) / 61.0 * if k < 40 { 0.01 } else { 1.0 }).collect();
        let layer = LayerParams { inputs, outputs: 3, weights, biases: vec![0.1, 0.2, 0.3] };
        for format in WeightFormat::ALL {
            let q = QuantizedLayer::quantize_as(&layer, format);
            assert_eq!(q.format, format);
            assert_eq!(q.scales.len(), 3 * format.scales_per_row(inputs));
            let d = q.dequantize();
            assert_eq!(d.biases, layer.biases);
            for (k, (a, b)) in layer.weights.iter().zip(&d.weights).enumerate() {
                let row_max = layer.weights[k / inputs * inputs..(k / inputs + 1) * inputs].iter().fold(0f32, |m, w| m.max(w.abs()));
                let bound = match format {
                    WeightFormat::Int8 => row_max / 127.0 * 0.5,
                    WeightFormat::Fp16 => a.abs() / 1024.0,
                    // Relative 1/16 in the normal range, the subnormal step below it.
                    WeightFormat::Fp8E4m3 => a.abs() / 16.0 + row_max / 448.0 * 2f32.powi(-10),
                    WeightFormat::MxInt8 => {
                        let block = k % inputs / MX_BLOCK;
                        q.scales[k / inputs * format.scales_per_row(inputs) + block] * 0.5
                    }
                };
                assert!((a - b).abs() <= bound + 1e-7, "{format:?} weight {k}: {a} -> {b}");
            }
        }
        // MXINT8's scales are powers of two that put each block's largest magnitude in [64, 128).
        let q = QuantizedLayer::quantize_as(&layer, WeightFormat::MxInt8);
        for s in &q.scales {
            assert_eq!(s.to_bits() & 0x007F_FFFF, 0, "{s} is not a power of two");
        }
        assert!(q.weights.iter().map(|w| w.unsigned_abs()).max().expect("weights") >= 64);
        // A block of small weights keeps its precision: its own exponent, not the row's.
        let small = &q.dequantize().weights[..32];
        for (a, b) in layer.weights[..32].iter().zip(small) {
            assert!((a - b).abs() <= 0.01 / 64.0, "{a} -> {b}");
        }
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
