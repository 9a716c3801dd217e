//! The one generator of a model's WGSL MLP, for every shader that runs it: texset-shaders'
//! decoder (compute and fragment entry points), the studio's preview, the exported shaders, and
//! the GPU trainer's forward and backward passes (`hidden_layer`, `last_layer`, `layer_backward`,
//! in the code shape its adapter runs fastest: [`MlpShape`]; docs/decisions/031).
//!
//! The weights are dequantised once, on the host ([`pack_weights`], the values the CPU reference
//! multiplies by), into one array of `vec4<f32>`: a uniform buffer where it fits the device's
//! limit, else a storage buffer ([`WeightMemory`]); the packed-int8 path lays them out as
//! [`PackedInt8`] instead. In the generated code:
//! - every activation is a named value ([`emit::act`]`(texel, layer, j)`, a `vec4` of four
//!   neighbouring inputs), read by its literal name, never by a run-time index into a private
//!   array (which drivers spill to memory and lavapipe reads lane by lane);
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

use crate::model::params::Activation;
use emit::{Emitter, act, expr, name};

mod activation;
pub mod emit;
mod int8;
mod layers;
mod pack;
pub use activation::{activate, activation_backward, activation_functions};
pub use int8::{Int8Layer, PackedInt8};
pub use layers::{HiddenActivation, hidden_layer, last_layer, layer_backward};
pub use pack::{PackedLayer, PackedWeights, pack_layout, pack_weights};

/// Layers wider than this many `vec4`s (128 inputs) read their inputs in a loop instead of as
/// named values: with a 512-wide layer's rows unrolled, the widest-decoder parity test took 555 s
/// on lavapipe, 179 s with the loop.
pub const WIDE_VEC4S: u32 = 32;

/// Where the generated code reads its weights from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightMemory {
    /// `var<uniform> mlp: array<vec4<f32>, N>`: the constant cache on hardware GPUs.
    Uniform,
    /// `var<workgroup> mlp: array<vec4<f32>, N>`: the GPU trainer's fallback, each workgroup
    /// copying the weights in (a fragment shader has no workgroup memory: the decoder never
    /// takes it).
    Workgroup,
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
            Self::Workgroup => "workgroup",
            Self::Storage => "storage",
        }
    }
}

/// The uniform-buffer size WebGPU guarantees (`maxUniformBufferBindingSize`'s default): what a
/// portable exported shader may assume.
pub const PORTABLE_UNIFORM_BYTES: u64 = 65_536;

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
    /// The hidden layers' code shape (the last layer's four outputs are `vec4` rows in both);
    /// [`MlpShape::for_layers`] is applied.
    pub shape: MlpShape,
    /// The hidden layers' arithmetic ([`MlpPrecision`]): the weights are `f32` in memory in
    /// `F32` and `F16`, and laid out as [`PackedInt8`] in `Int8`.
    pub precision: MlpPrecision,
    /// `Int8`'s hidden layers ([`PackedInt8::hidden`]); empty in the other precisions.
    pub int8: &'a [Int8Layer],
    /// The hidden layers' activation.
    pub activation: Activation,
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

    /// The WGSL: the `mlp` binding, `BLOCK`, the two structs and the four functions (and the
    /// activation's, [`activation_functions`]).
    #[must_use]
    pub fn code(&self) -> String {
        let mut e = Emitter::new();
        e.verbatim(&self.binding());
        e.verbatim(&activation_functions(self.activation, self.precision));
        e.constant_u32("BLOCK", self.block.max(1));
        e.structure("MlpInput", (0..self.input_vec4s().max(1)).map(|j| (input_field(j), "vec4<f32>")));
        e.structure("MlpHidden", (0..self.hidden_vec4s().max(1)).map(|j| (hidden_field(j), self.precision.vec4())));
        self.hidden_fn(&mut e, Form::Single);
        self.hidden_fn(&mut e, Form::Block(self.block.max(1)));
        self.output_fn(&mut e, Form::Single);
        self.output_fn(&mut e, Form::Block(self.block.max(1)));
        e.finish()
    }

    /// The declaration of `mlp`, the weights' array, in its memory.
    #[must_use]
    pub fn binding(&self) -> String {
        let mut e = Emitter::with_comment("Generated by texset_core::model::wgsl (the one MLP generator).");
        let ty = if self.precision == MlpPrecision::Int8 { "vec4<u32>" } else { "vec4<f32>" };
        let (bound, vec4s) = (emit::binding_attributes(self.group, self.binding), self.vec4s.max(1));
        e.declare(match self.memory {
            WeightMemory::Uniform => expr!("{bound}<uniform> mlp: array<{ty}, {vec4s}>"),
            WeightMemory::Workgroup => expr!("var<workgroup> mlp: array<{ty}, {vec4s}>"),
            WeightMemory::Storage => expr!("{bound}<storage, read> mlp: array<{ty}>"),
        });
        e.finish()
    }

    /// `mlp_hidden` (one texel) or `mlp_hidden_block` (`BLOCK` texels).
    fn hidden_fn(&self, e: &mut Emitter, form: Form) {
        let hidden = self.layers.split_last().map_or(&[][..], |(_, h)| h);
        let texels = form.texels();
        if form == Form::Single {
            e.function("mlp_hidden(a0: MlpInput) -> MlpHidden");
        } else {
            e.function("mlp_hidden_block(a: array<MlpInput, BLOCK>) -> array<MlpHidden, BLOCK>");
        }
        let num = self.precision;
        for p in 0..texels {
            let src = if form == Form::Single { "a0".to_owned() } else { expr!("a[{p}u]") };
            for j in 0..self.input_vec4s() {
                e.let_(act(p, 0, j), num.convert4(&expr!("{src}.{}", input_field(j))));
            }
        }
        let shape = self.shape.for_layers(self.layers);
        if num == MlpPrecision::Int8 {
            for (l, layer) in self.int8.iter().enumerate() {
                int8::int8_layer(e, layer, l, texels, self.activation);
            }
        } else {
            for (l, layer) in hidden.iter().enumerate() {
                hidden_layer(e, layer, l, texels, shape, num, HiddenActivation::Inline(self.activation));
            }
        }
        let depth = hidden.len();
        let fields = |p: u32| -> String {
            let values: Vec<String> = (0..self.hidden_vec4s()).map(|j| act(p, depth, j)).collect();
            expr!("MlpHidden({})", values.join(", "))
        };
        return_per_texel(e, "MlpHidden", form, fields);
    }

    /// `mlp_output` (one texel) or `mlp_output_block` (`BLOCK` texels).
    fn output_fn(&self, e: &mut Emitter, form: Form) {
        let Some(last) = self.layers.last() else {
            return;
        };
        let n = last.row_vec4s;
        let texels = form.texels();
        if form == Form::Single {
            e.function("mlp_output(row: u32, h0: MlpHidden) -> vec4<f32>");
        } else {
            e.function("mlp_output_block(row: u32, h: array<MlpHidden, BLOCK>) -> array<vec4<f32>, BLOCK>");
            for p in 0..texels {
                e.let_(name("h", p), expr!("h[{p}u]"));
            }
        }
        e.let_("r", expr!("{}u + row * {}u", last.weights_at, n + 1));
        // The last layer in f32 whatever the precision: its few multiply-adds (4 of the ~7,000 a
        // texel's decode runs per input) carry the outputs' own rounding, which f16 would add to.
        let input = |p: u32, j: u32| match self.precision {
            MlpPrecision::F32 | MlpPrecision::Int8 => expr!("{}.{}", name("h", p), hidden_field(j)),
            MlpPrecision::F16 => expr!("vec4<f32>({}.{})", name("h", p), hidden_field(j)),
        };
        layers::four_outputs(e, n, texels, &input, self.precision == MlpPrecision::Int8);
        return_per_texel(e, "vec4<f32>", form, |p| name("z", p));
    }
}

/// Which of a generated function's two forms: one texel (`mlp_hidden`), or `BLOCK` texels
/// sharing each weight load (`mlp_hidden_block`; `BLOCK` may be 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    Single,
    Block(u32),
}

impl Form {
    fn texels(self) -> u32 {
        match self {
            Form::Single => 1,
            Form::Block(texels) => texels,
        }
    }
}

/// The code shape of a generated layer: how its loop loads the weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MlpShape {
    /// Each iteration four rows of `vec4`s (forward) or one `vec4` of every row (backward):
    /// a quarter of the load instructions, `dot` products. The decoder's shape, and the GPU
    /// trainer's on a hardware GPU.
    #[default]
    Vec4Rows,
    /// Each iteration one output's weights (forward) or one input's (backward), a scalar at a
    /// time (`mlp[r + j].x`): what lavapipe runs fastest. The GPU trainer's `fwd_bwd` on
    /// lavapipe, 65,536 texels of the default model: 544 ms per step in `vec4` rows, 326–443 ms
    /// in scalars. A model with a layer wider than [`WIDE_VEC4S`] `vec4`s takes `Vec4Rows`
    /// ([`MlpShape::for_layers`]).
    Scalar,
}

impl MlpShape {
    /// `self`, or `Vec4Rows` where a layer is wider than the scalar shape unrolls.
    #[must_use]
    pub fn for_layers(self, layers: &[PackedLayer]) -> Self {
        if layers.iter().any(|l| l.row_vec4s > WIDE_VEC4S || l.outputs > 4 * WIDE_VEC4S) { Self::Vec4Rows } else { self }
    }

    /// The shape a GPU runs fastest: scalars on one the CPU emulates (`software`: lavapipe), `vec4`
    /// rows on hardware.
    #[must_use]
    pub fn fastest(software: bool) -> Self {
        if software { Self::Scalar } else { Self::Vec4Rows }
    }

    /// Its name, as the benchmarks print it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Vec4Rows => "vec4 rows",
            Self::Scalar => "scalar",
        }
    }
}

/// The arithmetic of the generated layers. In `F32` and `F16` the weights are `f32` in memory (the
/// values the CPU reference multiplies by); `F16` converts each as it is loaded, shared by the
/// block's texels, and computes the hidden layers in `f16` (WGSL's `enable f16;`, wgpu's
/// `SHADER_F16`; docs/decisions/033-f16-decoder.md). `Int8` reads the layout of [`PackedInt8`]
/// (docs/decisions/037). The module must begin with [`MlpPrecision::enable`]. In every precision
/// `MlpInput`, the last layer (four outputs, under 2 % of the multiply-adds) and `mlp_output`'s
/// result stay `f32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum MlpPrecision {
    /// `f32` throughout: portable, and within 1e-4 of the CPU reference.
    #[default]
    F32,
    /// `f16` hidden activations and multiply-adds: half the registers, and twice the rate where
    /// the GPU packs two `f16`s per lane; up to about one 8-bit step (4.1e-3) from the CPU
    /// reference on trained materials (docs/integration.md).
    F16,
    /// Packed int8: the hidden layers' int8 weights (the bundle's codes) times int8 activations,
    /// four to a word, summed by `dot4I8Packed` (`DP4a` where the GPU has it; a polyfill
    /// elsewhere), the activations quantised per texel and layer ([`PackedInt8`],
    /// docs/decisions/037). A quarter of the weights' bytes; up to a few 8-bit steps from the CPU
    /// reference (docs/integration.md).
    Int8,
}

impl MlpPrecision {
    /// The WGSL type of four values.
    #[must_use]
    pub fn vec4(self) -> &'static str {
        match self {
            Self::F32 | Self::Int8 => "vec4<f32>",
            Self::F16 => "vec4<f16>",
        }
    }

    /// The WGSL type of one value.
    #[must_use]
    pub fn scalar(self) -> &'static str {
        match self {
            Self::F32 | Self::Int8 => "f32",
            Self::F16 => "f16",
        }
    }

    /// The directive the module must begin with: `enable f16;` for `F16`, `requires
    /// packed_4x8_integer_dot_product;` (a WGSL language extension, no device feature) for
    /// `Int8`, nothing for `F32`.
    #[must_use]
    pub fn enable(self) -> &'static str {
        match self {
            Self::F32 => "",
            Self::F16 => "enable f16;\n",
            Self::Int8 => "requires packed_4x8_integer_dot_product;\n",
        }
    }

    /// Its name, as the CLI and the benchmarks write it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::Int8 => "int8",
        }
    }

    /// `expr`, a `vec4<f32>`, in this precision.
    fn convert4(self, expr: &str) -> String {
        match self {
            Self::F32 | Self::Int8 => expr.to_owned(),
            Self::F16 => expr!("vec4<f16>({expr})"),
        }
    }

    /// `expr`, an `f32`, in this precision.
    fn convert1(self, expr: &str) -> String {
        match self {
            Self::F32 | Self::Int8 => expr.to_owned(),
            Self::F16 => expr!("f16({expr})"),
        }
    }
}

/// The `vec4` component of value `i` of a group of four: `x`, `y`, `z` or `w`.
#[must_use]
pub fn component(i: u32) -> &'static str {
    ["x", "y", "z", "w"][(i % 4) as usize]
}

/// The end of a generated function: texel 0's `value` alone (one texel), or every texel's as an
/// `array<ty, BLOCK>`; then the closing brace.
fn return_per_texel(e: &mut Emitter, ty: &str, form: Form, value: impl Fn(u32) -> String) {
    if form == Form::Single {
        e.ret(value(0));
    } else {
        let all: Vec<String> = (0..form.texels()).map(value).collect();
        e.ret(expr!("array<{ty}, BLOCK>({})", all.join(", ")));
    }
    e.close();
}

/// The field of `MlpInput` holding inputs `4j..4j + 4`.
fn input_field(j: u32) -> String {
    name("x", j)
}

/// The field of `MlpHidden` holding the last hidden layer's outputs `4j..4j + 4`.
fn hidden_field(j: u32) -> String {
    name("h", j)
}

#[cfg(test)]
mod tests;
