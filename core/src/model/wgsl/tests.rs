//! The generator's own tests: packing, code shapes and precisions, without a device (the GPU
//! parity tests are texset-shaders' and the trainer's).

use super::*;
use crate::model::QuantizedLayer;
use crate::model::params::LayerParams;

fn layer(inputs: usize, outputs: usize, seed: f32) -> LayerParams {
    LayerParams {
        inputs,
        outputs,
        weights: (0..inputs * outputs).map(|i| (i as f32 * 0.37 + seed).sin()).collect(),
        biases: (0..outputs).map(|o| (o as f32 * 0.11 - seed).cos()).collect(),
    }
}

/// `packed`'s MLP in uniform memory, four texels a block, `vec4` rows in `f32`.
fn uniform_mlp(packed: &PackedWeights) -> MlpWgsl<'_> {
    MlpWgsl {
        layers: &packed.layers,
        block: 4,
        memory: WeightMemory::Uniform,
        vec4s: packed.vec4s.len() as u32,
        group: 0,
        binding: 1,
        shape: MlpShape::Vec4Rows,
        precision: MlpPrecision::F32,
        int8: &[],
        activation: Activation::Relu,
    }
}

/// The packed array holds every weight and bias at the place the generated code reads it, and
/// zeros in the padding.
#[test]
fn packing_places_every_weight() {
    let layers = [layer(41, 62, 0.3), layer(62, 30, 0.7), layer(30, 9, 1.1)];
    let packed = pack_weights(&layers);
    for (l, (p, layer)) in packed.layers.iter().zip(&layers).enumerate() {
        let last = l + 1 == layers.len();
        let stride = p.row_vec4s as usize + usize::from(last);
        for o in 0..p.rows as usize {
            for i in 0..4 * p.row_vec4s as usize {
                let got = packed.vec4s[p.weights_at as usize + o * stride + i / 4][i % 4];
                let want = if o < layer.outputs && i < layer.inputs { layer.weights[o * layer.inputs + i] } else { 0.0 };
                assert_eq!(got.to_bits(), want.to_bits(), "layer {l} row {o} input {i}");
            }
            let bias = if last {
                packed.vec4s[p.weights_at as usize + o * stride + p.row_vec4s as usize][0]
            } else {
                packed.vec4s[p.biases_at as usize + o / 4][o % 4]
            };
            let want = layer.biases.get(o).copied().unwrap_or(0.0);
            assert_eq!(bias.to_bits(), want.to_bits(), "layer {l} bias {o}");
        }
    }
    // A hidden layer's padded outputs are the next layer's padded inputs.
    assert_eq!(packed.layers[0].rows, 64);
    assert_eq!(packed.layers[1].row_vec4s * 4, 64);
    assert_eq!(packed.layers[2].rows, 12);
    assert_eq!(packed.words().len(), packed.vec4s.len() * 4);
}

/// A wide layer reads its inputs in a loop: the code stays small (a 512-wide decoder's
/// unrolled rows took lavapipe minutes to compile).
#[test]
fn wide_layers_loop_over_their_inputs() {
    let layers = [layer(41, 512, 0.3), layer(512, 512, 0.7), layer(512, 9, 1.1)];
    let packed = pack_weights(&layers);
    let narrow = [layer(41, 64, 0.3), layer(64, 48, 0.7), layer(48, 9, 1.1)];
    let narrow_packed = pack_weights(&narrow);
    let code = |p: &PackedWeights| MlpWgsl { memory: WeightMemory::Storage, ..uniform_mlp(p) }.code();
    let (wide, narrow) = (code(&packed), code(&narrow_packed));
    assert!(wide.contains("for (var j = 0u; j < 128u; j++)"), "{wide}");
    assert!(wide.len() < 4 * narrow.len(), "wide {} bytes, narrow {}", wide.len(), narrow.len());
    assert!(wide.contains("var<storage, read> mlp: array<vec4<f32>>;"));
}

/// The scalar shape unrolls a layer's inputs: a wide model keeps the looping `vec4` rows.
#[test]
fn wide_models_keep_vec4_rows() {
    let narrow = pack_weights(&[layer(41, 64, 0.3), layer(64, 9, 0.7)]);
    let wide = pack_weights(&[layer(41, 512, 0.3), layer(512, 9, 0.7)]);
    assert_eq!(MlpShape::Scalar.for_layers(&narrow.layers), MlpShape::Scalar);
    assert_eq!(MlpShape::Scalar.for_layers(&wide.layers), MlpShape::Vec4Rows);
    assert_eq!(MlpShape::Vec4Rows.for_layers(&narrow.layers), MlpShape::Vec4Rows);
}

/// In `f16` every weight is converted as it is loaded and the layers hold `f16`s; `MlpInput`
/// and `mlp_output`'s result stay `f32`, so the decoder around the MLP is the same.
#[test]
fn f16_code_converts_each_load_and_keeps_f32_at_its_edges() {
    let packed = pack_weights(&[layer(41, 64, 0.3), layer(64, 48, 0.7), layer(48, 9, 1.1)]);
    for shape in [MlpShape::Vec4Rows, MlpShape::Scalar] {
        let mlp = MlpWgsl { shape, precision: MlpPrecision::F16, ..uniform_mlp(&packed) };
        let code = mlp.code();
        // The hidden layers' loads (the last layer's, in `mlp_output`, stay f32).
        let hidden = &code[..code.find("fn mlp_output(").expect("mlp_output is generated")];
        for line in hidden.lines().filter(|l| l.contains("mlp[")) {
            assert!(line.contains("f16>(mlp[") || line.contains("f16(mlp["), "{shape:?}: an unconverted load: {line}");
        }
        assert!(code.contains("x0: vec4<f32>,") && code.contains("h0: vec4<f16>,"), "{code}");
        assert!(
            code.contains("fn mlp_output(row: u32, h0: MlpHidden) -> vec4<f32>") && code.contains("dot(w0_0, vec4<f32>(h0.h0))"),
            "{code}"
        );
        let f32_code = MlpWgsl { precision: MlpPrecision::F32, ..mlp }.code();
        assert!(!f32_code.contains("f16"), "{f32_code}");
    }
    assert_eq!(MlpPrecision::F16.enable(), "enable f16;\n");
    assert_eq!(MlpPrecision::F32.enable(), "");
}

#[test]
fn weight_memory_follows_the_limit() {
    assert_eq!(WeightMemory::for_limit(65_536, PORTABLE_UNIFORM_BYTES), WeightMemory::Uniform);
    assert_eq!(WeightMemory::for_limit(65_537, PORTABLE_UNIFORM_BYTES), WeightMemory::Storage);
}

/// Activations are named: the generated code indexes no array at run time but the weights and
/// the loop's own output group.
#[test]
fn generated_code_names_its_activations() {
    let layers = [layer(41, 64, 0.3), layer(64, 48, 0.7), layer(48, 32, 0.2), layer(32, 9, 1.1)];
    let packed = pack_weights(&layers);
    let code = uniform_mlp(&packed).code();
    // Every `name[index]` outside the weight reads has a literal index, or is the loop's own
    // store of its output group.
    for line in code.lines() {
        for (at, _) in line.match_indices('[') {
            let index: String = line[at + 1..].chars().take_while(|&c| c != ']').collect();
            let literal = index.strip_suffix('u').is_some_and(|d| d.chars().all(|c| c.is_ascii_digit()));
            let allowed = line[..at].ends_with("mlp") || index == "q" || literal;
            assert!(allowed, "a run-time index in: {line}");
        }
    }
    assert!(code.contains("fn mlp_hidden(") && code.contains("fn mlp_hidden_block(") && code.contains("fn mlp_output_block("));
    assert!(code.contains("var<uniform> mlp: array<vec4<f32>, "));
}

/// A layer of trained-like magnitudes (weights about `1/√inputs`), quantised to int8 as a bundle
/// stores it.
fn int8_layer_of(inputs: usize, outputs: usize, seed: f32) -> QuantizedLayer {
    let mut l = layer(inputs, outputs, seed);
    let gain = 1.5 / (inputs as f32).sqrt();
    l.weights.iter_mut().for_each(|w| *w *= gain);
    l.biases.iter_mut().for_each(|b| *b *= 0.1);
    QuantizedLayer::quantize(&l)
}

/// The int8 layout holds the bundle's own codes, scales and biases bit for bit, the zero-point
/// correction (128 times the row's code sum) of a layer of unsigned inputs, zeros in the padding,
/// and the last layer's dequantised `f32` rows.
#[test]
fn int8_packing_keeps_the_bundles_codes() {
    let layers = [int8_layer_of(41, 62, 0.3), int8_layer_of(62, 30, 0.7), int8_layer_of(30, 9, 1.1)];
    let packed = PackedInt8::new(&layers, Activation::Relu);
    assert_eq!(packed.hidden.len(), 2);
    let word = |at: u32, k: usize| packed.vec4s[at as usize + k / 4][k % 4];
    for (l, (h, layer)) in packed.hidden.iter().zip(&layers).enumerate() {
        assert_eq!(
            (h.signed_inputs, h.rows, h.row_vec4s),
            (l == 0, layer.outputs.div_ceil(4) as u32 * 4, layer.inputs.div_ceil(16) as u32)
        );
        for o in 0..h.rows as usize {
            for i in 0..16 * h.row_vec4s as usize {
                let w = word(h.weights_at, o * 4 * h.row_vec4s as usize + i / 4);
                let got = (w >> (8 * (i % 4))) as u8 as i8;
                let want = if o < layer.outputs && i < layer.inputs { layer.weights[o * layer.inputs + i] } else { 0 };
                assert_eq!(got, want, "layer {l} row {o} input {i}");
            }
            let param = |k: usize| word(h.params_at, 12 * (o / 4) + 4 * k + o % 4);
            let (scale, bias) = (layer.scales.get(o).copied().unwrap_or(0.0), layer.biases.get(o).copied().unwrap_or(0.0));
            assert_eq!((param(0), param(2)), (scale.to_bits(), bias.to_bits()), "layer {l} row {o}");
            let sum: i32 = if o < layer.outputs {
                layer.weights[o * layer.inputs..(o + 1) * layer.inputs].iter().map(|&c| i32::from(c)).sum()
            } else {
                0
            };
            assert_eq!(param(1).cast_signed(), if l == 0 { 0 } else { 128 * sum }, "layer {l} row {o}");
        }
    }
    // The last layer: `pack_weights`'s rows, after the hidden layers.
    let last = packed.layers[2];
    let f32_last = pack_weights(&[layers[2].dequantize()]).layers[0];
    assert_eq!((last.rows, last.row_vec4s), (f32_last.rows, f32_last.row_vec4s));
    let dequantized = layers[2].dequantize();
    for o in 0..9 {
        let (row, bias) = last.row_and_bias_at(o, true);
        for i in 0..30 {
            assert_eq!(packed.vec4s[(row as usize + i) / 4][(row as usize + i) % 4], dequantized.weights[o as usize * 30 + i].to_bits());
        }
        assert_eq!(packed.vec4s[bias as usize / 4][bias as usize % 4], dequantized.biases[o as usize].to_bits());
    }
    assert_eq!(packed.bytes(), 16 * packed.vec4s.len() as u64);
    // A quarter of the f32 layout's bytes for the hidden layers, give or take the padding.
    let f32_bytes = pack_weights(&layers.iter().map(QuantizedLayer::dequantize).collect::<Vec<_>>()).bytes();
    assert!(packed.bytes() * 2 < f32_bytes, "int8 {} bytes, f32 {f32_bytes}", packed.bytes());
}

/// The CPU twin of the int8 path ([`PackedInt8::forward`]) stays within 2 % of the largest output
/// of the `f32` MLP it approximates (the same int8 weights, dequantised), on inputs like a
/// decoder's (latents in ±1, a positional encoding), and differs from it: the activations are
/// rounded.
#[test]
fn int8_twin_stays_near_the_reference_it_rounds() {
    let layers = [int8_layer_of(41, 64, 0.3), int8_layer_of(64, 48, 0.7), int8_layer_of(48, 32, 0.2), int8_layer_of(32, 9, 1.1)];
    for act in [Activation::Relu, Activation::Hgelu] {
        let packed = PackedInt8::new(&layers, act);
        assert!(packed.hidden.iter().enumerate().all(|(l, h)| h.signed_inputs == (l == 0 || act == Activation::Hgelu)));
        let dequantized: Vec<LayerParams> = layers.iter().map(QuantizedLayer::dequantize).collect();
        let reference = |x: &[f32]| -> Vec<f32> {
            let mut a = x.to_vec();
            for (l, layer) in dequantized.iter().enumerate() {
                a = (0..layer.outputs)
                    .map(|o| {
                        let z = layer.biases[o] + (0..layer.inputs).map(|i| layer.weights[o * layer.inputs + i] * a[i]).sum::<f32>();
                        if l + 1 < dequantized.len() { act.apply(z) } else { z }
                    })
                    .collect();
            }
            a
        };
        let (mut worst, mut largest) = (0.0f32, 0.0f32);
        for t in 0..64 {
            let x: Vec<f32> = (0..41).map(|i| ((i * 7 + t * 13) as f32 * 0.618).sin()).collect();
            let (want, got) = (reference(&x), packed.forward(&x));
            assert_eq!(got.len(), 9);
            for (g, w) in got.iter().zip(&want) {
                worst = worst.max((g - w).abs());
                largest = largest.max(w.abs());
            }
        }
        println!("int8 twin, {act:?}: max |int8 - f32| = {worst:e}, largest output {largest:e}");
        assert!(worst > 0.0, "int8 activations rounded nothing");
        assert!(worst <= 0.02 * largest, "int8 twin off by {worst} at outputs up to {largest} ({act:?})");
    }
}

/// The int8 code reads `mlp` as words, sums with `dot4I8Packed`, reads the last layer's `f32`
/// rows by bit pattern, names its activations, and begins with its `requires` directive.
#[test]
fn int8_code_packs_its_dot_products() {
    let layers = [int8_layer_of(41, 64, 0.3), int8_layer_of(64, 48, 0.7), int8_layer_of(48, 9, 1.1)];
    let packed = PackedInt8::new(&layers, Activation::Relu);
    let mlp = MlpWgsl {
        precision: MlpPrecision::Int8,
        int8: &packed.hidden,
        layers: &packed.layers,
        vec4s: packed.vec4s.len() as u32,
        ..uniform_mlp(&pack_weights(&[]))
    };
    let code = mlp.code();
    assert!(code.contains("var<uniform> mlp: array<vec4<u32>, "), "{code}");
    assert!(code.contains("dot4I8Packed(w0_0.x, c0_0_0)") && code.contains("pack4xI8("), "{code}");
    let output = &code[code.find("fn mlp_output(").expect("mlp_output is generated")..];
    for line in output.lines().filter(|l| l.contains("mlp[")) {
        assert!(line.contains("bitcast<vec4<f32>>(mlp["), "an f32 read of a word: {line}");
    }
    assert!(code.contains("x0: vec4<f32>,") && code.contains("h0: vec4<f32>,"), "{code}");
    assert_eq!(MlpPrecision::Int8.enable(), "requires packed_4x8_integer_dot_product;\n");
}
