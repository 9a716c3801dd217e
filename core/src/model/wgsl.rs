//! The one generator of a model's WGSL MLP, for every shader that runs it: texset-shaders'
//! decoder (compute and fragment entry points), the studio's preview and the exported shaders.
//!
//! The weights are dequantised once, on the host ([`pack_weights`], the values the CPU reference
//! multiplies by), into one array of `vec4<f32>`: a uniform buffer where it fits the device's
//! limit, else a storage buffer ([`WeightMemory`]). In the generated code:
//! - every activation is a named value (`x{texel}_{layer}_{j}`, a `vec4` of four neighbouring
//!   inputs), read by its literal name, never by a run-time index into a private array (which
//!   drivers spill to memory and lavapipe reads lane by lane);
//! - a hidden layer is a loop over its outputs, four at a time: each iteration loads those four
//!   rows once, one row at a time, for every texel of the block, so a block of texels shares each
//!   weight load; the loop (not a full unroll) keeps compile times to seconds (a full unroll of
//!   the default model compiled in 6.6 s instead of 2.3 s on lavapipe, and its `bench decode
//!   --gpu` did not finish in 600 s, against about 150 s looped);
//! - a layer wider than [`WIDE_VEC4S`] reads its inputs in an inner loop instead;
//! - the last layer computes four consecutive outputs from a row chosen at run time (a map's own
//!   outputs, `mlp_output`).
//!
//! The generated functions (`T` texels a block, named by [`MlpWgsl`]):
//! - `struct MlpInput { x0 .. }`, `struct MlpHidden { h0 .. }`: the first layer's inputs and the
//!   last hidden layer's outputs, four to a field;
//! - `mlp_hidden(a: MlpInput) -> MlpHidden` and `mlp_hidden_block(a: array<MlpInput, BLOCK>) ->
//!   array<MlpHidden, BLOCK>`;
//! - `mlp_output(row: u32, h: MlpHidden) -> vec4<f32>` and `mlp_output_block(row, h: array<MlpHidden,
//!   BLOCK>) -> array<vec4<f32>, BLOCK>`: outputs `row..row + 4` of the last layer, before clamping.

use crate::model::params::LayerParams;
use std::fmt::Write as _;

/// Layers wider than this many `vec4`s (128 inputs) read their inputs in a loop instead of as
/// named values: with a 512-wide layer's rows unrolled, the widest-decoder parity test took 555 s
/// on lavapipe, 179 s with the loop.
pub const WIDE_VEC4S: u32 = 32;

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
    /// padded activations are 0 after `ReLU`); the last layer's outputs plus three zero rows, so a
    /// four-row read from any output stays inside the layer.
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

/// Where the generated code reads its weights from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightMemory {
    /// `var<uniform> mlp: array<vec4<f32>, N>`: the constant cache on hardware GPUs.
    Uniform,
    /// `var<storage, read> mlp: array<vec4<f32>>`: for weights above the uniform limit.
    Storage,
}

impl WeightMemory {
    /// Uniform memory when `bytes` fit `max_uniform_bytes` (the device's
    /// `max_uniform_buffer_binding_size`), storage otherwise.
    #[must_use]
    pub fn for_limit(bytes: u64, max_uniform_bytes: u64) -> Self {
        if bytes <= max_uniform_bytes { Self::Uniform } else { Self::Storage }
    }

    /// Its name, as the benchmarks print it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Uniform => "uniform",
            Self::Storage => "storage",
        }
    }
}

/// The uniform-buffer size WebGPU guarantees (`maxUniformBufferBindingSize`'s default): what a
/// portable exported shader may assume.
pub const PORTABLE_UNIFORM_BYTES: u64 = 65_536;

/// Dequantised `layers` (what [`crate::model::reference::mlp_forward`] multiplies by) laid out as
/// [`PackedLayer`] says.
#[must_use]
pub fn pack_weights(layers: &[LayerParams]) -> PackedWeights {
    let mut vec4s: Vec<[f32; 4]> = Vec::new();
    let mut packed = Vec::new();
    let last = layers.len().saturating_sub(1);
    for (l, layer) in layers.iter().enumerate() {
        let row_vec4s = layer.inputs.div_ceil(4);
        let is_last = l == last;
        let rows = if is_last { layer.outputs + 3 } else { layer.outputs.div_ceil(4) * 4 };
        let weights_at = vec4s.len();
        for o in 0..rows {
            let start = vec4s.len();
            vec4s.resize(start + row_vec4s + usize::from(is_last), [0.0; 4]);
            if o < layer.outputs {
                for (i, &w) in layer.weights[o * layer.inputs..(o + 1) * layer.inputs].iter().enumerate() {
                    vec4s[start + i / 4][i % 4] = w;
                }
                if is_last {
                    vec4s[start + row_vec4s][0] = layer.biases[o];
                }
            }
        }
        let biases_at = vec4s.len();
        if !is_last {
            vec4s.resize(biases_at + rows / 4, [0.0; 4]);
            for (o, &b) in layer.biases.iter().enumerate() {
                vec4s[biases_at + o / 4][o % 4] = b;
            }
        }
        packed.push(PackedLayer {
            inputs: layer.inputs as u32,
            outputs: layer.outputs as u32,
            row_vec4s: row_vec4s as u32,
            rows: rows as u32,
            weights_at: weights_at as u32,
            biases_at: biases_at as u32,
        });
    }
    PackedWeights { vec4s, layers: packed }
}

/// The generated MLP of one model: what [`MlpWgsl::code`] writes.
#[derive(Clone, Copy, Debug)]
pub struct MlpWgsl<'a> {
    /// The layers as [`pack_weights`] laid them out.
    pub layers: &'a [PackedLayer],
    /// Texels per block (`BLOCK`) of the `_block` functions.
    pub block: u32,
    /// Where the weights are read from.
    pub memory: WeightMemory,
    /// Total `vec4`s of the weight array (its length in uniform memory).
    pub vec4s: u32,
    /// The bind group and binding of `mlp`.
    pub group: u32,
    /// See `group`.
    pub binding: u32,
}

impl MlpWgsl<'_> {
    /// `vec4`s of the first layer's inputs (`MlpInput`'s fields).
    #[must_use]
    pub fn input_vec4s(&self) -> u32 {
        self.layers.first().map_or(1, |l| l.row_vec4s)
    }

    /// `vec4`s of the last layer's inputs (`MlpHidden`'s fields).
    #[must_use]
    pub fn hidden_vec4s(&self) -> u32 {
        self.layers.last().map_or(1, |l| l.row_vec4s)
    }

    /// The WGSL: the `mlp` binding, `BLOCK`, the two structs and the four functions.
    #[must_use]
    pub fn code(&self) -> String {
        let mut t = String::from("// Generated by texset_core::model::wgsl (the one MLP generator).\n");
        let _ = match self.memory {
            WeightMemory::Uniform => {
                writeln!(t, "@group({}) @binding({}) var<uniform> mlp: array<vec4<f32>, {}>;", self.group, self.binding, self.vec4s.max(1))
            }
            WeightMemory::Storage => {
                writeln!(t, "@group({}) @binding({}) var<storage, read> mlp: array<vec4<f32>>;", self.group, self.binding)
            }
        };
        let _ = writeln!(t, "const BLOCK: u32 = {}u;", self.block.max(1));
        struct_decl(&mut t, "MlpInput", "x", self.input_vec4s());
        struct_decl(&mut t, "MlpHidden", "h", self.hidden_vec4s());
        self.hidden_fn(&mut t, 1);
        self.hidden_fn(&mut t, self.block.max(1));
        self.output_fn(&mut t, 1);
        self.output_fn(&mut t, self.block.max(1));
        t
    }

    /// `mlp_hidden` (one texel) or `mlp_hidden_block` (`texels`).
    fn hidden_fn(&self, t: &mut String, texels: u32) {
        let hidden = self.layers.split_last().map_or(&[][..], |(_, h)| h);
        if texels == 1 {
            t.push_str("fn mlp_hidden(a0: MlpInput) -> MlpHidden {\n");
        } else {
            t.push_str("fn mlp_hidden_block(a: array<MlpInput, BLOCK>) -> array<MlpHidden, BLOCK> {\n");
        }
        for p in 0..texels {
            let src = if texels == 1 { "a0".to_owned() } else { format!("a[{p}u]") };
            for j in 0..self.input_vec4s() {
                let _ = writeln!(t, "    let x{p}_0_{j} = {src}.x{j};");
            }
        }
        for (l, layer) in hidden.iter().enumerate() {
            let groups = layer.rows / 4;
            let n = layer.row_vec4s;
            for p in 0..texels {
                let _ = writeln!(t, "    var o{p}_{l}: array<vec4<f32>, {groups}>;");
                if l == 0 && n > WIDE_VEC4S {
                    let values: Vec<String> = (0..n).map(|j| format!("x{p}_0_{j}")).collect();
                    let _ = writeln!(t, "    var in{p} = array<vec4<f32>, {n}>({});", values.join(", "));
                }
            }
            let _ = writeln!(t, "    for (var q = 0u; q < {groups}u; q++) {{");
            group_body(t, layer, l, texels);
            t.push_str("    }\n");
            for p in 0..texels {
                for j in 0..groups {
                    let _ = writeln!(t, "    let x{p}_{}_{j} = o{p}_{l}[{j}u];", l + 1);
                }
            }
        }
        let depth = hidden.len();
        let fields = |p: u32| -> String {
            let values: Vec<String> = (0..self.hidden_vec4s()).map(|j| format!("x{p}_{depth}_{j}")).collect();
            format!("MlpHidden({})", values.join(", "))
        };
        return_per_texel(t, "MlpHidden", texels, fields);
    }

    /// `mlp_output` (one texel) or `mlp_output_block` (`texels`).
    fn output_fn(&self, t: &mut String, texels: u32) {
        let Some(last) = self.layers.last() else {
            return;
        };
        let n = last.row_vec4s;
        if texels == 1 {
            t.push_str("fn mlp_output(row: u32, h0: MlpHidden) -> vec4<f32> {\n");
        } else {
            t.push_str("fn mlp_output_block(row: u32, h: array<MlpHidden, BLOCK>) -> array<vec4<f32>, BLOCK> {\n");
            for p in 0..texels {
                let _ = writeln!(t, "    let h{p} = h[{p}u];");
            }
        }
        let _ = writeln!(t, "    let r = {}u + row * {}u;", last.weights_at, n + 1);
        if n > WIDE_VEC4S {
            // A wide last layer: the hidden values as an array read in a loop.
            let biases: Vec<String> = (0..4).map(|c| format!("mlp[r + {}u].x", c * (n + 1) + n)).collect();
            for p in 0..texels {
                let values: Vec<String> = (0..n).map(|j| format!("h{p}.h{j}")).collect();
                let _ = writeln!(t, "    var hh{p} = array<vec4<f32>, {n}>({});", values.join(", "));
                let _ = writeln!(t, "    var z{p} = vec4<f32>({});", biases.join(", "));
            }
            let _ = writeln!(t, "    for (var j = 0u; j < {n}u; j++) {{");
            for c in 0..4 {
                let _ = writeln!(t, "        let w{c} = mlp[r + {}u + j];", c * (n + 1));
            }
            for p in 0..texels {
                let _ =
                    writeln!(t, "        z{p} += vec4<f32>(dot(w0, hh{p}[j]), dot(w1, hh{p}[j]), dot(w2, hh{p}[j]), dot(w3, hh{p}[j]));");
            }
            t.push_str("    }\n");
            return_per_texel(t, "vec4<f32>", texels, |p| format!("z{p}"));
            return;
        }
        for c in 0..4 {
            for j in 0..=n {
                let _ = writeln!(t, "    let w{c}_{j} = mlp[r + {}u];", c * (n + 1) + j);
            }
            for p in 0..texels {
                let sum: Vec<String> = (0..n).map(|j| format!("dot(w{c}_{j}, h{p}.h{j})")).collect();
                let _ = writeln!(t, "    let z{p}_{c} = w{c}_{n}.x + ({});", sum.join(" + "));
            }
        }
        return_per_texel(t, "vec4<f32>", texels, |p| format!("vec4<f32>(z{p}_0, z{p}_1, z{p}_2, z{p}_3)"));
    }
}

/// The end of a generated function: texel 0's `value` alone (one texel), or every texel's as an
/// `array<ty, BLOCK>`; then the closing brace.
fn return_per_texel(t: &mut String, ty: &str, texels: u32, value: impl Fn(u32) -> String) {
    if texels == 1 {
        let _ = writeln!(t, "    return {};\n}}", value(0));
    } else {
        let all: Vec<String> = (0..texels).map(value).collect();
        let _ = writeln!(t, "    return array<{ty}, BLOCK>({});\n}}", all.join(", "));
    }
}

/// The statements of one group of four outputs `q` of hidden layer `l` (`q` in scope), for
/// `texels` texels: `o{p}_{l}[q]` = `ReLU` of four rows times the inputs.
fn group_body(t: &mut String, layer: &PackedLayer, l: usize, texels: u32) {
    let n = layer.row_vec4s;
    let _ = writeln!(t, "        let r = {}u + q * {}u;", layer.weights_at, 4 * n);
    let _ = writeln!(t, "        let b = mlp[{}u + q];", layer.biases_at);
    if n > WIDE_VEC4S {
        // A wide layer: its inputs as an array read in a loop (each iteration one `vec4` of the
        // four rows), so the code stays small for the compiler.
        for p in 0..texels {
            let source = if l == 0 { format!("in{p}") } else { format!("o{p}_{}", l - 1) };
            let _ = writeln!(t, "        var s{p} = vec4<f32>(0.0);\n        let from{p} = &{source};");
        }
        let _ = writeln!(t, "        for (var j = 0u; j < {n}u; j++) {{");
        for row in 0..4 {
            let _ = writeln!(t, "            let w{row} = mlp[r + {}u + j];", row * n);
        }
        for p in 0..texels {
            let _ = writeln!(
                t,
                "            let x{p} = (*from{p})[j];\n            s{p} += vec4<f32>(dot(w0, x{p}), dot(w1, x{p}), dot(w2, x{p}), dot(w3, x{p}));"
            );
        }
        t.push_str("        }\n");
        for p in 0..texels {
            let _ = writeln!(t, "        o{p}_{l}[q] = max(b + s{p}, vec4<f32>(0.0));");
        }
        return;
    }
    for row in 0..4 {
        for j in 0..n {
            let _ = writeln!(t, "        let w{row}_{j} = mlp[r + {}u];", row * n + j);
        }
        for p in 0..texels {
            let sum: Vec<String> = (0..n).map(|j| format!("dot(w{row}_{j}, x{p}_{l}_{j})")).collect();
            let _ = writeln!(t, "        let s{p}_{row} = {};", sum.join(" + "));
        }
    }
    for p in 0..texels {
        let _ = writeln!(t, "        o{p}_{l}[q] = max(b + vec4<f32>(s{p}_0, s{p}_1, s{p}_2, s{p}_3), vec4<f32>(0.0));");
    }
}

fn struct_decl(t: &mut String, name: &str, field: &str, count: u32) {
    let _ = writeln!(t, "struct {name} {{");
    for j in 0..count.max(1) {
        let _ = writeln!(t, "    {field}{j}: vec4<f32>,");
    }
    t.push_str("}\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(inputs: usize, outputs: usize, seed: f32) -> LayerParams {
        LayerParams {
            inputs,
            outputs,
            weights: (0..inputs * outputs).map(|i| (i as f32 * 0.37 + seed).sin()).collect(),
            biases: (0..outputs).map(|o| (o as f32 * 0.11 - seed).cos()).collect(),
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
        let code = |p: &PackedWeights| {
            MlpWgsl { layers: &p.layers, block: 4, memory: WeightMemory::Storage, vec4s: p.vec4s.len() as u32, group: 0, binding: 1 }.code()
        };
        let (wide, narrow) = (code(&packed), code(&narrow_packed));
        assert!(wide.contains("for (var j = 0u; j < 128u; j++)"), "{wide}");
        assert!(wide.len() < 4 * narrow.len(), "wide {} bytes, narrow {}", wide.len(), narrow.len());
        assert!(wide.contains("var<storage, read> mlp: array<vec4<f32>>;"));
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
        let code = MlpWgsl {
            layers: &packed.layers,
            block: 4,
            memory: WeightMemory::Uniform,
            vec4s: packed.vec4s.len() as u32,
            group: 0,
            binding: 1,
        }
        .code();
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
}
