//! The dequantised MLP laid out for the generated code: each layer's rows of `vec4`s, its biases,
//! and where they lie ([`pack_layout`], [`pack_weights`]).

use crate::model::params::LayerParams;

/// Where one layer's dequantised weights lie in the packed `vec4` array ([`pack_weights`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PackedLayer {
    /// Input width.
    pub inputs: u32,
    /// Output width.
    pub outputs: u32,
    /// `vec4`s of one row (the inputs rounded up to four, zero-padded).
    pub row_vec4s: u32,
    /// Rows stored: a hidden layer's outputs rounded up to four (zero rows, zero biases, so the
    /// padded activations are 0 after `ReLU` or `HGELUClamp`); the last layer's outputs plus three
    /// zero rows, so a four-row read from any output stays inside the layer.
    pub rows: u32,
    /// The `vec4` index of row 0. A hidden layer's rows are `row_vec4s` each; the last layer's are
    /// `row_vec4s + 1`, the extra `vec4` holding the row's bias in `x`.
    pub weights_at: u32,
    /// The `vec4` index of a hidden layer's biases, four to a `vec4` (unused for the last layer).
    pub biases_at: u32,
}

/// A model's dequantised MLP laid out for the generated code.
#[derive(Clone, Debug, PartialEq)]
pub struct PackedWeights {
    /// Every layer's rows and biases.
    pub vec4s: Vec<[f32; 4]>,
    /// Where each layer lies.
    pub layers: Vec<PackedLayer>,
}

impl PackedWeights {
    /// Bytes of the buffer.
    #[must_use]
    pub fn bytes(&self) -> u64 {
        self.vec4s.len() as u64 * 16
    }

    /// The buffer's 32-bit words (f32 bit patterns), little-endian order of the `vec4`s.
    #[must_use]
    pub fn words(&self) -> Vec<u32> {
        self.vec4s.iter().flat_map(|v| v.map(f32::to_bits)).collect()
    }
}

/// Where each layer of an MLP of `shapes` (inputs, outputs per layer) lies in the packed array, and
/// the array's `vec4`s: [`pack_weights`]'s layout, which the GPU trainer fills on the device.
#[must_use]
pub fn pack_layout(shapes: &[(u32, u32)]) -> (Vec<PackedLayer>, u32) {
    let mut at = 0u32;
    let last = shapes.len().saturating_sub(1);
    let layers = shapes
        .iter()
        .enumerate()
        .map(|(l, &(inputs, outputs))| {
            let row_vec4s = inputs.div_ceil(4);
            let is_last = l == last;
            let rows = if is_last { outputs + 3 } else { outputs.div_ceil(4) * 4 };
            let weights_at = at;
            at += rows * (row_vec4s + u32::from(is_last));
            let biases_at = at;
            if !is_last {
                at += rows / 4;
            }
            PackedLayer { inputs, outputs, row_vec4s, rows, weights_at, biases_at }
        })
        .collect();
    (layers, at)
}

impl PackedLayer {
    /// `vec4`s from one row to the next: the last layer's rows hold their bias in one more.
    #[must_use]
    pub fn row_stride(&self, is_last: bool) -> u32 {
        self.row_vec4s + u32::from(is_last)
    }

    /// The `f32` index (four to a `vec4`) of row `o`'s first weight and of its bias.
    #[must_use]
    pub fn row_and_bias_at(&self, o: u32, is_last: bool) -> (u32, u32) {
        let row = 4 * (self.weights_at + o * self.row_stride(is_last));
        let bias = if is_last { row + 4 * self.row_vec4s } else { 4 * self.biases_at + o };
        (row, bias)
    }
}

/// Dequantised `layers` (what [`crate::model::reference::mlp_forward`] multiplies by) laid out as
/// [`PackedLayer`] says ([`pack_layout`]).
#[must_use]
pub fn pack_weights(layers: &[LayerParams]) -> PackedWeights {
    let shapes: Vec<(u32, u32)> = layers.iter().map(|l| (l.inputs as u32, l.outputs as u32)).collect();
    let (packed, total) = pack_layout(&shapes);
    let mut words = vec![0.0f32; total as usize * 4];
    let last = layers.len().saturating_sub(1);
    for (l, (layer, p)) in layers.iter().zip(&packed).enumerate() {
        for o in 0..layer.outputs {
            let (row, bias) = p.row_and_bias_at(o as u32, l == last);
            let row = row as usize;
            words[row..row + layer.inputs].copy_from_slice(&layer.weights[o * layer.inputs..(o + 1) * layer.inputs]);
            words[bias as usize] = layer.biases[o];
        }
    }
    let vec4s = words.chunks_exact(4).map(|c| [c[0], c[1], c[2], c[3]]).collect();
    PackedWeights { vec4s, layers: packed }
}
