//! The decoder's packed-int8 path ([`MlpPrecision::Int8`](super::MlpPrecision::Int8)): the
//! hidden layers as int8 weights times int8 activations, four to a 32-bit word, summed by WGSL's
//! `dot4I8Packed` (`DP4a`), as RTXNTC's fallback path does (docs/decisions/037).
//!
//! - **Weights** are the bundle's own int8 codes and per-row scales (a bundle of another
//!   [`crate::model::WeightFormat`] is requantised to int8 per row), packed sixteen to a
//!   `vec4<u32>`: a quarter of the `f32` layout's bytes.
//! - **Activations** are quantised per texel and per layer, to the largest magnitude of that
//!   layer's inputs: the first layer's signed inputs (latents, positional encoding) to ±127, a
//!   later layer's inputs (`ReLU` outputs, never negative) to 0..255 stored less 128, the weights'
//!   row sums (`zero`) putting the 128 back (`HGELUClamp` outputs, down to −3/16, go to ±127 as
//!   the first layer's). So each layer costs one scale, its
//!   largest input, and no calibration.
//! - The last hidden layer's outputs stay `f32` (`MlpHidden`), and so does the last layer: four
//!   outputs, under 2 % of the multiply-adds.
//!
//! [`PackedInt8::forward`] is the CPU twin of the generated code (the same rounding, the same
//! integer sums), so the GPU path is tested against it to f32 rounding, and against the CPU
//! reference to what the activations' rounding trades.

use super::emit::{Emitter, act, expr, name, outs};
use super::{PackedLayer, activate, component, pack_layout, pack_weights};
use crate::model::params::Activation;
use crate::model::quant::{QuantizedLayer, WeightFormat};

/// Where one hidden layer lies in [`PackedInt8::vec4s`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Int8Layer {
    /// Input width.
    pub inputs: u32,
    /// Output width.
    pub outputs: u32,
    /// Rows stored: the outputs rounded up to four (zero rows, zero scales, zero biases).
    pub rows: u32,
    /// `vec4<u32>`s of one row: sixteen int8 codes each, the inputs rounded up to sixteen,
    /// zero-padded.
    pub row_vec4s: u32,
    /// The `vec4` index of row 0.
    pub weights_at: u32,
    /// The `vec4` index of the parameters: for every four rows, three `vec4`s: the rows' scales
    /// (`f32` bits), their zero-point corrections (`i32` bits: 128 times the row's code sum for
    /// a layer of unsigned inputs, else 0) and their biases (`f32` bits).
    pub params_at: u32,
    /// Whether the inputs are quantised signed (±127, the first layer's) or unsigned (0..255,
    /// stored less 128: `ReLU` outputs).
    pub signed_inputs: bool,
}

/// A model's MLP laid out for [`MlpPrecision::Int8`]: the hidden layers' int8 rows and
/// parameters, then the last layer's `f32` rows as [`super::pack_weights`] lays them out.
#[derive(Clone, Debug, PartialEq)]
pub struct PackedInt8 {
    /// Every layer's words.
    pub vec4s: Vec<[u32; 4]>,
    /// Where each hidden layer lies.
    pub hidden: Vec<Int8Layer>,
    /// Every layer's [`PackedLayer`]: the shapes, and the last layer's `f32` rows (its
    /// `weights_at`, within `vec4s`). The hidden layers' offsets are unused.
    pub layers: Vec<PackedLayer>,
    /// The hidden layers' activation.
    pub activation: Activation,
}

/// Largest input of a layer, in the largest code it quantises to.
const SIGNED_LEVELS: f32 = 127.0;
const UNSIGNED_LEVELS: f32 = 255.0;
/// What an unsigned code is stored less of, to fit `dot4I8Packed`'s signed bytes.
const UNSIGNED_OFFSET: i32 = 128;

impl PackedInt8 {
    /// Lays `layers` (a bundle's, in any weight format) with `activation` on the hidden layers
    /// out for the int8 path.
    #[must_use]
    pub fn new(layers: &[QuantizedLayer], activation: Activation) -> Self {
        let shapes: Vec<(u32, u32)> = layers.iter().map(|l| (l.inputs as u32, l.outputs as u32)).collect();
        let (mut packed, _) = pack_layout(&shapes);
        let mut vec4s: Vec<[u32; 4]> = Vec::new();
        let mut hidden = Vec::new();
        let last = layers.len().saturating_sub(1);
        for (l, layer) in layers.iter().enumerate().take(last) {
            let int8 = match layer.format {
                WeightFormat::Int8 => layer.clone(),
                _ => QuantizedLayer::quantize(&layer.dequantize()),
            };
            let (inputs, outputs) = (layer.inputs as u32, layer.outputs as u32);
            let rows = outputs.div_ceil(4) * 4;
            let row_vec4s = inputs.div_ceil(16);
            let weights_at = vec4s.len() as u32;
            let signed_inputs = l == 0 || activation != Activation::Relu;
            let mut words = vec![0u32; (rows * row_vec4s * 4) as usize];
            let mut scales = vec![0.0f32; rows as usize];
            let mut zero = vec![0i32; rows as usize];
            let mut biases = vec![0.0f32; rows as usize];
            for o in 0..layer.outputs {
                let codes = &int8.weights[o * layer.inputs..(o + 1) * layer.inputs];
                for (i, &code) in codes.iter().enumerate() {
                    let word = o * (row_vec4s as usize * 4) + i / 4;
                    words[word] |= u32::from(code.to_le_bytes()[0]) << (8 * (i % 4));
                }
                scales[o] = int8.scales.get(o).copied().unwrap_or(0.0);
                let sum: i32 = codes.iter().map(|&c| i32::from(c)).sum();
                zero[o] = if signed_inputs { 0 } else { UNSIGNED_OFFSET * sum };
                biases[o] = layer.biases.get(o).copied().unwrap_or(0.0);
            }
            vec4s.extend(words.chunks_exact(4).map(|c| [c[0], c[1], c[2], c[3]]));
            let params_at = vec4s.len() as u32;
            for g in 0..(rows / 4) as usize {
                let four = 4 * g..4 * g + 4;
                vec4s.push(std::array::from_fn(|c| scales[four.start + c].to_bits()));
                vec4s.push(std::array::from_fn(|c| zero[four.start + c].cast_unsigned()));
                vec4s.push(std::array::from_fn(|c| biases[four.start + c].to_bits()));
            }
            hidden.push(Int8Layer { inputs, outputs, rows, row_vec4s, weights_at, params_at, signed_inputs });
        }
        // The last layer in f32: `pack_weights`'s layout of it alone, after the hidden layers.
        if let (Some(layer), Some(p)) = (layers.last(), packed.last_mut()) {
            let last = pack_weights(&[layer.dequantize()]);
            p.weights_at = vec4s.len() as u32;
            p.biases_at = p.weights_at + last.layers[0].biases_at;
            vec4s.extend(last.vec4s.iter().map(|v| v.map(f32::to_bits)));
        }
        Self { vec4s, hidden, layers: packed, activation }
    }

    /// Bytes of the buffer.
    #[must_use]
    pub fn bytes(&self) -> u64 {
        self.vec4s.len() as u64 * 16
    }

    /// The buffer's 32-bit words.
    #[must_use]
    pub fn words(&self) -> Vec<u32> {
        self.vec4s.iter().flatten().copied().collect()
    }

    fn word(&self, at: usize) -> u32 {
        self.vec4s.get(at / 4).map_or(0, |v| v[at % 4])
    }

    /// The MLP's outputs for the inputs `features`, computed as the generated code computes them
    /// (its CPU twin): every output, before clamping.
    #[must_use]
    pub fn forward(&self, features: &[f32]) -> Vec<f32> {
        let mut x: Vec<f32> = features.to_vec();
        for layer in &self.hidden {
            // The padded inputs are 0, as the generated code's are.
            x.resize(layer.inputs.div_ceil(4) as usize * 4, 0.0);
            let (codes, scale) = quantize_inputs(&x, layer.signed_inputs);
            let mut y = Vec::with_capacity(layer.rows as usize);
            for o in 0..layer.rows as usize {
                let group = layer.params_at as usize + 3 * (o / 4);
                let f = |k: usize| self.word(4 * (group + k) + o % 4);
                let (scale_w, zero, bias) = (f32::from_bits(f(0)), f(1).cast_signed(), f32::from_bits(f(2)));
                let row = 4 * (layer.weights_at as usize + o * layer.row_vec4s as usize);
                let mut sum = 0i32;
                for (w, &c) in codes.iter().enumerate() {
                    sum += dot4_i8_packed(self.word(row + w), c);
                }
                y.push(self.activation.apply(bias + (sum + zero) as f32 * (scale_w * scale)));
            }
            x = y;
        }
        let Some(last) = self.layers.last() else {
            return x;
        };
        (0..last.outputs)
            .map(|o| {
                let (row, bias) = last.row_and_bias_at(o, true);
                let weight = |i: usize| f32::from_bits(self.word(row as usize + i));
                let mut z = f32::from_bits(self.word(bias as usize));
                for (i, &v) in x.iter().enumerate().take(last.inputs as usize) {
                    z += weight(i) * v;
                }
                z
            })
            .collect()
    }
}

/// `x` quantised as the generated code quantises a layer's inputs (`x.len()` a multiple of four):
/// its words of four codes, and the scale of one code.
fn quantize_inputs(x: &[f32], signed: bool) -> (Vec<u32>, f32) {
    let (levels, offset) = if signed { (SIGNED_LEVELS, 0) } else { (UNSIGNED_LEVELS, UNSIGNED_OFFSET) };
    let largest = x.iter().fold(0.0f32, |m, &v| m.max(if signed { v.abs() } else { v }));
    let inverse = if largest > 0.0 { levels / largest } else { 0.0 };
    let codes = x
        .chunks_exact(4)
        .map(|four| {
            four.iter().enumerate().fold(0u32, |word, (k, &v)| {
                let code = (v * inverse).round_ties_even() as i32 - offset;
                word | (u32::from(code.to_le_bytes()[0]) << (8 * k))
            })
        })
        .collect();
    (codes, largest / levels)
}

/// WGSL's `dot4I8Packed`: the sum of the products of the four signed bytes of `a` and `b`.
fn dot4_i8_packed(a: u32, b: u32) -> i32 {
    (0..4).map(|k| i32::from(a.to_le_bytes()[k].cast_signed()) * i32::from(b.to_le_bytes()[k].cast_signed())).sum()
}

/// The statements of hidden layer `layer`'s int8 form (index `l`) for `texels` texels: from the
/// named `f32` inputs [`act`]`(p, l, j)` to the named `f32` outputs [`act`]`(p, l + 1, j)`
/// (`function`), as [`PackedInt8::forward`] computes them. The weights are read from `mlp`, an array
/// of `vec4<u32>`.
pub(super) fn int8_layer(e: &mut Emitter, layer: &Int8Layer, l: usize, texels: u32, function: Activation) {
    let n4 = layer.inputs.div_ceil(4);
    let groups = layer.rows / 4;
    let nv = layer.row_vec4s;
    let (levels, offset, magnitude) = if layer.signed_inputs { (SIGNED_LEVELS, 0, "abs") } else { (UNSIGNED_LEVELS, UNSIGNED_OFFSET, "") };
    let codes = |p: u32, j: u32| name("c", (p, l, j));
    for p in 0..texels {
        // The largest input, its scale, and the inputs as codes, four to a word.
        let mut largest = expr!("{magnitude}({})", act(p, l, 0));
        for j in 1..n4 {
            largest = expr!("max({largest}, {magnitude}({}))", act(p, l, j));
        }
        let (m, mx, inv, xs) = (name("m", (p, l)), name("mx", (p, l)), name("inv", (p, l)), name("xs", (p, l)));
        e.let_(&m, largest);
        e.let_(&mx, expr!("max(max({m}.x, {m}.y), max({m}.z, {m}.w))"));
        e.let_(&inv, expr!("select(0.0, {levels:.1} / {mx}, {mx} > 0.0)"));
        e.let_(&xs, expr!("{mx} / {levels:.1}"));
        for j in 0..n4 {
            e.let_(codes(p, j), expr!("pack4xI8(vec4<i32>(round({} * {inv})) - vec4<i32>({offset}))", act(p, l, j)));
        }
        e.var(outs(p, l), expr!("array<vec4<f32>, {groups}>"));
    }
    e.for_range("q", expr!("{groups}u"));
    e.let_("r", expr!("{}u + q * {}u", layer.weights_at, 4 * nv));
    e.let_("sw", expr!("bitcast<vec4<f32>>(mlp[{}u + 3u * q])", layer.params_at));
    e.let_("zc", expr!("bitcast<vec4<i32>>(mlp[{}u + 3u * q + 1u])", layer.params_at));
    e.let_("b", expr!("bitcast<vec4<f32>>(mlp[{}u + 3u * q + 2u])", layer.params_at));
    for row in 0..4u32 {
        for v in 0..nv {
            e.let_(name("w", (row, v)), expr!("mlp[r + {}u]", row * nv + v));
        }
        for p in 0..texels {
            let terms: Vec<String> =
                (0..n4).map(|j| expr!("dot4I8Packed({}.{}, {})", name("w", (row, j / 4)), component(j), codes(p, j))).collect();
            e.let_(name("s", (p, row)), terms.join(" + "));
        }
    }
    for p in 0..texels {
        let [a, b, c, d] = [0u32, 1, 2, 3].map(|row| name("s", (p, row)));
        let z = expr!("b + vec4<f32>(vec4<i32>({a}, {b}, {c}, {d}) + zc) * (sw * {})", name("xs", (p, l)));
        e.set(expr!("{}[q]", outs(p, l)), activate(function, &z, "vec4<f32>"));
    }
    e.close();
    for p in 0..texels {
        for j in 0..groups {
            e.let_(act(p, l + 1, j), expr!("{}[{j}u]", outs(p, l)));
        }
    }
}
