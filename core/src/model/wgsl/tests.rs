//! The generator's own tests: packing, code shapes and precisions, without a device (the GPU
//! parity tests are texset-shaders' and the trainer's).

use super::*;

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
