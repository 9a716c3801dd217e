//! The one generator of a model's WGSL MLP, for every shader that runs it: texset-shaders'
//! decoder (compute and fragment entry points), the studio's preview, the exported shaders, and
//! the GPU trainer's forward and backward passes (`hidden_layer`, `last_layer`, `layer_backward`,
//! in the code shape its adapter runs fastest: [`MlpShape`]; docs/decisions/031).
//!
//! The weights are dequantised once, on the host ([`pack_weights`], the values the CPU reference
//! multiplies by), into one array of `vec4<f32>`: a uniform buffer where it fits the device's
//! limit, else a storage buffer ([`WeightMemory`]); the packed-int8 path lays them out as
//! [`PackedInt8`] instead. In the generated code:
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

use crate::model::params::Activation;
use std::fmt::Write as _;

mod activation;
mod int8;
mod pack;
pub use activation::{activate, activation_backward, activation_functions};
pub use int8::{Int8Layer, PackedInt8};
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
        let mut t = self.binding();
        t.push_str(&activation_functions(self.activation, self.precision));
        let _ = writeln!(t, "const BLOCK: u32 = {}u;", self.block.max(1));
        struct_decl(&mut t, "MlpInput", "x", self.input_vec4s(), "vec4<f32>");
        struct_decl(&mut t, "MlpHidden", "h", self.hidden_vec4s(), self.precision.vec4());
        self.hidden_fn(&mut t, Form::Single);
        self.hidden_fn(&mut t, Form::Block(self.block.max(1)));
        self.output_fn(&mut t, Form::Single);
        self.output_fn(&mut t, Form::Block(self.block.max(1)));
        t
    }

    /// The declaration of `mlp`, the weights' array, in its memory.
    #[must_use]
    pub fn binding(&self) -> String {
        let mut t = String::from("// Generated by texset_core::model::wgsl (the one MLP generator).\n");
        let ty = if self.precision == MlpPrecision::Int8 { "vec4<u32>" } else { "vec4<f32>" };
        let _ = match self.memory {
            WeightMemory::Uniform => {
                writeln!(t, "@group({}) @binding({}) var<uniform> mlp: array<{ty}, {}>;", self.group, self.binding, self.vec4s.max(1))
            }
            WeightMemory::Workgroup => writeln!(t, "var<workgroup> mlp: array<{ty}, {}>;", self.vec4s.max(1)),
            WeightMemory::Storage => {
                writeln!(t, "@group({}) @binding({}) var<storage, read> mlp: array<{ty}>;", self.group, self.binding)
            }
        };
        t
    }

    /// `mlp_hidden` (one texel) or `mlp_hidden_block` (`BLOCK` texels).
    fn hidden_fn(&self, t: &mut String, form: Form) {
        let hidden = self.layers.split_last().map_or(&[][..], |(_, h)| h);
        let texels = form.texels();
        if form == Form::Single {
            t.push_str("fn mlp_hidden(a0: MlpInput) -> MlpHidden {\n");
        } else {
            t.push_str("fn mlp_hidden_block(a: array<MlpInput, BLOCK>) -> array<MlpHidden, BLOCK> {\n");
        }
        let num = self.precision;
        for p in 0..texels {
            let src = if form == Form::Single { "a0".to_owned() } else { format!("a[{p}u]") };
            for j in 0..self.input_vec4s() {
                let _ = writeln!(t, "    let x{p}_0_{j} = {};", num.convert4(&format!("{src}.x{j}")));
            }
        }
        let shape = self.shape.for_layers(self.layers);
        if num == MlpPrecision::Int8 {
            for (l, layer) in self.int8.iter().enumerate() {
                int8::int8_layer(t, layer, l, texels, self.activation);
            }
        } else {
            for (l, layer) in hidden.iter().enumerate() {
                hidden_layer(t, layer, l, texels, shape, num, HiddenActivation::Inline(self.activation));
            }
        }
        let depth = hidden.len();
        let fields = |p: u32| -> String {
            let values: Vec<String> = (0..self.hidden_vec4s()).map(|j| format!("x{p}_{depth}_{j}")).collect();
            format!("MlpHidden({})", values.join(", "))
        };
        return_per_texel(t, "MlpHidden", form, fields);
    }

    /// `mlp_output` (one texel) or `mlp_output_block` (`BLOCK` texels).
    fn output_fn(&self, t: &mut String, form: Form) {
        let Some(last) = self.layers.last() else {
            return;
        };
        let n = last.row_vec4s;
        let texels = form.texels();
        if form == Form::Single {
            t.push_str("fn mlp_output(row: u32, h0: MlpHidden) -> vec4<f32> {\n");
        } else {
            t.push_str("fn mlp_output_block(row: u32, h: array<MlpHidden, BLOCK>) -> array<vec4<f32>, BLOCK> {\n");
            for p in 0..texels {
                let _ = writeln!(t, "    let h{p} = h[{p}u];");
            }
        }
        let _ = writeln!(t, "    let r = {}u + row * {}u;", last.weights_at, n + 1);
        // The last layer in f32 whatever the precision: its few multiply-adds (4 of the ~7,000 a
        // texel's decode runs per input) carry the outputs' own rounding, which f16 would add to.
        let input = |p: u32, j: u32| match self.precision {
            MlpPrecision::F32 | MlpPrecision::Int8 => format!("h{p}.h{j}"),
            MlpPrecision::F16 => format!("vec4<f32>(h{p}.h{j})"),
        };
        four_outputs(t, n, texels, "    ", &input, self.precision == MlpPrecision::Int8);
        return_per_texel(t, "vec4<f32>", form, |p| format!("z{p}"));
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
            Self::F16 => format!("vec4<f16>({expr})"),
        }
    }

    /// `expr`, an `f32`, in this precision.
    fn convert1(self, expr: &str) -> String {
        match self {
            Self::F32 | Self::Int8 => expr.to_owned(),
            Self::F16 => format!("f16({expr})"),
        }
    }
}

/// The `vec4` component of value `i` of a group of four: `x`, `y`, `z` or `w`.
#[must_use]
pub fn component(i: u32) -> &'static str {
    ["x", "y", "z", "w"][(i % 4) as usize]
}

/// Layer `l` in the scalar shape ([`MlpShape::Scalar`]) for `texels` texels: a loop over its
/// outputs, each iteration loading one row's weights a scalar at a time for every texel, stored to
/// `o{texel}_{l}` (`groups` · 4 scalars, the padding 0) and named `x{texel}_{l + 1}_{j}`. A
/// hidden layer takes its activation (`last`: `Some`) and its bias from the biases' `vec4`s; the
/// last (`last`: `None`) neither,
/// its bias in the `vec4` after each row ([`PackedLayer::row_and_bias_at`]).
fn scalar_layer(t: &mut String, layer: &PackedLayer, l: usize, texels: u32, is_last: bool, act: Option<Activation>, num: MlpPrecision) {
    let groups = if is_last { layer.outputs.div_ceil(4) } else { layer.rows / 4 };
    for p in 0..texels {
        let _ = writeln!(t, "    var o{p}_{l}: array<{}, {}>;", num.scalar(), 4 * groups);
    }
    let _ = writeln!(t, "    for (var q = 0u; q < {}u; q++) {{", layer.outputs);
    let _ = writeln!(t, "        let r = {}u + q * {}u;", layer.weights_at, layer.row_stride(is_last));
    if is_last {
        let _ = writeln!(t, "        let b = {};", num.convert1(&format!("mlp[r + {}u].x", layer.row_vec4s)));
    } else {
        let _ = writeln!(t, "        let b = {};", num.convert1(&format!("mlp[{}u + q / 4u][q % 4u]", layer.biases_at)));
    }
    for k in 0..layer.inputs {
        let _ = writeln!(t, "        let w{k} = {};", num.convert1(&format!("mlp[r + {}u].{}", k / 4, component(k))));
    }
    for p in 0..texels {
        let mut sum = "b".to_owned();
        for k in 0..layer.inputs {
            let _ = write!(sum, " + w{k} * x{p}_{l}_{}.{}", k / 4, component(k));
        }
        let value = match act {
            None => sum,
            Some(act) => activate(act, &sum, num.scalar()),
        };
        let _ = writeln!(t, "        o{p}_{l}[q] = {value};");
    }
    t.push_str("    }\n");
    let name = if is_last || act.is_some() { "x" } else { "z" };
    for p in 0..texels {
        name_groups(t, &format!("{name}{p}_{}", l + 1), &format!("o{p}_{l}"), groups, num);
    }
}

/// The named `vec4`s `{name}_{j}` of the scalars in the array `{array}`, `groups` of four.
fn name_groups(t: &mut String, name: &str, array: &str, groups: u32, num: MlpPrecision) {
    for j in 0..groups {
        let _ = writeln!(
            t,
            "    let {name}_{j} = {}({array}[{}u], {array}[{}u], {array}[{}u], {array}[{}u]);",
            num.vec4(),
            4 * j,
            4 * j + 1,
            4 * j + 2,
            4 * j + 3
        );
    }
}

/// The statements of hidden layer `l` (activation `act`) for `texels` texels: from the named inputs
/// `x{texel}_{l}_{j}` (`vec4`s of four inputs) to the named outputs `x{texel}_{l + 1}_{j}`, in a
/// loop whose iterations load their weights once for every texel (see the module's documentation
/// and [`MlpShape`]). Also leaves the outputs in `o{texel}_{l}` (an array the loop stores: of
/// `vec4`s in `Vec4Rows`, of scalars in `Scalar`).
pub fn hidden_layer(t: &mut String, layer: &PackedLayer, l: usize, texels: u32, shape: MlpShape, num: MlpPrecision, act: HiddenActivation) {
    let groups = layer.rows / 4;
    let n = layer.row_vec4s;
    let (inline, after) = match act {
        HiddenActivation::Inline(a) => (Some(a), None),
        HiddenActivation::KeepPre(a) => (None, Some(a)),
    };
    if shape == MlpShape::Scalar {
        scalar_layer(t, layer, l, texels, false, inline, num);
        name_activated(t, l, texels, groups, after, num);
        return;
    }
    let v4 = num.vec4();
    for p in 0..texels {
        let _ = writeln!(t, "    var o{p}_{l}: array<{v4}, {groups}>;");
        if l == 0 && n > WIDE_VEC4S {
            let values: Vec<String> = (0..n).map(|j| format!("x{p}_0_{j}")).collect();
            let _ = writeln!(t, "    var in{p} = array<{v4}, {n}>({});", values.join(", "));
        }
    }
    let _ = writeln!(t, "    for (var q = 0u; q < {groups}u; q++) {{");
    group_body(t, layer, l, texels, num, inline);
    t.push_str("    }\n");
    let name = if inline.is_some() { "x" } else { "z" };
    for p in 0..texels {
        for j in 0..groups {
            let _ = writeln!(t, "    let {name}{p}_{}_{j} = o{p}_{l}[{j}u];", l + 1);
        }
    }
    name_activated(t, l, texels, groups, after, num);
}

/// Where a generated hidden layer applies its activation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HiddenActivation {
    /// In its loop, to each output: the decoder's.
    Inline(Activation),
    /// After its loop, to the named outputs, the values before it named `z{texel}_{l + 1}_{j}`:
    /// the GPU trainer's, whose backward pass takes the activation's derivative at them.
    KeepPre(Activation),
}

/// With `after`, the named outputs `x{texel}_{l + 1}_{j}` of hidden layer `l`: `after` of the
/// named values before it, `z{texel}_{l + 1}_{j}`.
fn name_activated(t: &mut String, l: usize, texels: u32, groups: u32, after: Option<Activation>, num: MlpPrecision) {
    let Some(act) = after else { return };
    for p in 0..texels {
        for j in 0..groups {
            let m = l + 1;
            let _ = writeln!(t, "    let x{p}_{m}_{j} = {};", activate(act, &format!("z{p}_{m}_{j}"), num.vec4()));
        }
    }
}

/// The statements of the last layer `l` (no activation), every output, for `texels` texels: from
/// the named inputs `x{texel}_{l}_{j}` to the named outputs `x{texel}_{l + 1}_{j}`, `vec4`s of
/// four outputs (those past the layer's outputs 0). What the GPU trainer's forward pass ends with;
/// the decoder computes the four outputs of one map instead (`mlp_output`).
pub fn last_layer(t: &mut String, layer: &PackedLayer, l: usize, texels: u32, shape: MlpShape) {
    let groups = layer.outputs.div_ceil(4);
    let n = layer.row_vec4s;
    if shape == MlpShape::Scalar {
        scalar_layer(t, layer, l, texels, true, None, MlpPrecision::F32);
        return;
    }
    for p in 0..texels {
        let _ = writeln!(t, "    var o{p}_{l}: array<vec4<f32>, {groups}>;");
    }
    let _ = writeln!(t, "    for (var q = 0u; q < {groups}u; q++) {{");
    let _ = writeln!(t, "        let r = {}u + q * {}u;", layer.weights_at, 4 * (n + 1));
    four_outputs(t, n, texels, "        ", &|p, j| format!("x{p}_{l}_{j}"), false);
    for p in 0..texels {
        let _ = writeln!(t, "        o{p}_{l}[q] = z{p};");
    }
    t.push_str("    }\n");
    for p in 0..texels {
        for j in 0..groups {
            let _ = writeln!(t, "    let x{p}_{}_{j} = o{p}_{l}[{j}u];", l + 1);
        }
    }
}

/// The statements of layer `l`'s backward pass through its weights for `texels` texels: from the
/// named output gradients `d{texel}_{l}_{g}` (`vec4`s of four outputs) to the named gradients of
/// its first `inputs` inputs, `gin{texel}_{l}_{j}` (`vec4`s of four inputs; no activation
/// applied), in a loop whose iterations load their weights once for every texel: in `Vec4Rows`
/// one `vec4` of every output's row (four inputs), in `Scalar` one input's weight of every row.
/// `is_last`: the layer's rows hold their bias in one more `vec4` ([`PackedLayer::row_stride`]).
pub fn layer_backward(t: &mut String, layer: &PackedLayer, l: usize, texels: u32, is_last: bool, inputs: u32, shape: MlpShape) {
    let groups = inputs.div_ceil(4);
    let stride = layer.row_stride(is_last);
    let sum = |p: u32, factor: &dyn Fn(u32) -> String| -> String {
        let terms: Vec<String> = (0..layer.outputs).map(|q| format!("d{p}_{l}_{}.{} * {}", q / 4, component(q), factor(q))).collect();
        if terms.is_empty() { "0.0".to_owned() } else { terms.join(" + ") }
    };
    if shape == MlpShape::Scalar {
        for p in 0..texels {
            let _ = writeln!(t, "    var gs{p}_{l}: array<f32, {}>;", 4 * groups);
        }
        let _ = writeln!(t, "    for (var k = 0u; k < {inputs}u; k++) {{");
        for q in 0..layer.outputs {
            let _ = writeln!(t, "        let w{q} = mlp[{}u + k / 4u][k % 4u];", layer.weights_at + q * stride);
        }
        for p in 0..texels {
            let _ = writeln!(t, "        gs{p}_{l}[k] = {};", sum(p, &|q| format!("w{q}")));
        }
        t.push_str("    }\n");
        for p in 0..texels {
            name_groups(t, &format!("gin{p}_{l}"), &format!("gs{p}_{l}"), groups, MlpPrecision::F32);
        }
        return;
    }
    for p in 0..texels {
        let _ = writeln!(t, "    var gv{p}_{l}: array<vec4<f32>, {groups}>;");
    }
    let _ = writeln!(t, "    for (var j = 0u; j < {groups}u; j++) {{");
    for q in 0..layer.outputs {
        let _ = writeln!(t, "        let w{q} = mlp[{}u + j];", layer.weights_at + q * stride);
    }
    for p in 0..texels {
        let value = sum(p, &|q| format!("w{q}"));
        let value = if layer.outputs == 0 { "vec4<f32>(0.0)".to_owned() } else { value };
        let _ = writeln!(t, "        gv{p}_{l}[j] = {value};");
    }
    t.push_str("    }\n");
    for p in 0..texels {
        for j in 0..groups {
            let _ = writeln!(t, "    let gin{p}_{l}_{j} = gv{p}_{l}[{j}u];");
        }
    }
}

/// The statements computing `z{texel}`, four consecutive outputs of the last layer (rows `r..r +
/// 4`, `r` in scope, each row `n` `vec4`s of weights and one holding its bias), from the inputs
/// `input(texel, j)`, `n` `vec4`s of them (`vec4<f32>`: the last layer is `f32` in every
/// [`MlpPrecision`]); at `indent`. `bits`: `mlp` holds `vec4<u32>`s ([`PackedInt8`]), read as
/// `f32` bit patterns.
fn four_outputs(t: &mut String, n: u32, texels: u32, indent: &str, input: &dyn Fn(u32, u32) -> String, bits: bool) {
    let load = |index: String| if bits { format!("bitcast<vec4<f32>>(mlp[{index}])") } else { format!("mlp[{index}]") };
    if n > WIDE_VEC4S {
        // A wide layer: the inputs as an array read in a loop.
        let biases: Vec<String> = (0..4).map(|c| format!("{}.x", load(format!("r + {}u", c * (n + 1) + n)))).collect();
        for p in 0..texels {
            let values: Vec<String> = (0..n).map(|j| input(p, j)).collect();
            let _ = writeln!(t, "{indent}var hh{p} = array<vec4<f32>, {n}>({});", values.join(", "));
            let _ = writeln!(t, "{indent}var z{p} = vec4<f32>({});", biases.join(", "));
        }
        let _ = writeln!(t, "{indent}for (var j = 0u; j < {n}u; j++) {{");
        for c in 0..4 {
            let _ = writeln!(t, "{indent}    let w{c} = {};", load(format!("r + {}u + j", c * (n + 1))));
        }
        for p in 0..texels {
            let _ =
                writeln!(t, "{indent}    z{p} += vec4<f32>(dot(w0, hh{p}[j]), dot(w1, hh{p}[j]), dot(w2, hh{p}[j]), dot(w3, hh{p}[j]));");
        }
        let _ = writeln!(t, "{indent}}}");
        return;
    }
    for c in 0..4 {
        for j in 0..=n {
            let _ = writeln!(t, "{indent}let w{c}_{j} = {};", load(format!("r + {}u", c * (n + 1) + j)));
        }
        for p in 0..texels {
            let sum: Vec<String> = (0..n).map(|j| format!("dot(w{c}_{j}, {})", input(p, j))).collect();
            let _ = writeln!(t, "{indent}let z{p}_{c} = w{c}_{n}.x + ({});", sum.join(" + "));
        }
    }
    for p in 0..texels {
        let _ = writeln!(t, "{indent}let z{p} = vec4<f32>(z{p}_0, z{p}_1, z{p}_2, z{p}_3);");
    }
}

/// The end of a generated function: texel 0's `value` alone (one texel), or every texel's as an
/// `array<ty, BLOCK>`; then the closing brace.
fn return_per_texel(t: &mut String, ty: &str, form: Form, value: impl Fn(u32) -> String) {
    if form == Form::Single {
        let _ = writeln!(t, "    return {};\n}}", value(0));
    } else {
        let all: Vec<String> = (0..form.texels()).map(value).collect();
        let _ = writeln!(t, "    return array<{ty}, BLOCK>({});\n}}", all.join(", "));
    }
}

/// The statements of one group of four outputs `q` of hidden layer `l` (`q` in scope), for
/// `texels` texels: `o{p}_{l}[q]` = `act` of four rows times the inputs.
fn group_body(t: &mut String, layer: &PackedLayer, l: usize, texels: u32, num: MlpPrecision, act: Option<Activation>) {
    let act_of = |sum: &str| act.map_or_else(|| sum.to_owned(), |a| activate(a, sum, num.vec4()));
    let n = layer.row_vec4s;
    let v4 = num.vec4();
    let _ = writeln!(t, "        let r = {}u + q * {}u;", layer.weights_at, 4 * n);
    let _ = writeln!(t, "        let b = {};", num.convert4(&format!("mlp[{}u + q]", layer.biases_at)));
    if n > WIDE_VEC4S {
        // A wide layer: its inputs as an array read in a loop (each iteration one `vec4` of the
        // four rows), so the code stays small for the compiler.
        for p in 0..texels {
            let source = if l == 0 { format!("in{p}") } else { format!("o{p}_{}", l - 1) };
            let _ = writeln!(t, "        var s{p} = {v4}(0.0);\n        let from{p} = &{source};");
        }
        let _ = writeln!(t, "        for (var j = 0u; j < {n}u; j++) {{");
        for row in 0..4 {
            let _ = writeln!(t, "            let w{row} = {};", num.convert4(&format!("mlp[r + {}u + j]", row * n)));
        }
        for p in 0..texels {
            let _ = writeln!(
                t,
                "            let x{p} = (*from{p})[j];\n            s{p} += {v4}(dot(w0, x{p}), dot(w1, x{p}), dot(w2, x{p}), dot(w3, x{p}));"
            );
        }
        t.push_str("        }\n");
        for p in 0..texels {
            let _ = writeln!(t, "        o{p}_{l}[q] = {};", act_of(&format!("b + s{p}")));
        }
        return;
    }
    for row in 0..4 {
        for j in 0..n {
            let _ = writeln!(t, "        let w{row}_{j} = {};", num.convert4(&format!("mlp[r + {}u]", row * n + j)));
        }
        for p in 0..texels {
            let sum: Vec<String> = (0..n).map(|j| format!("dot(w{row}_{j}, x{p}_{l}_{j})")).collect();
            let _ = writeln!(t, "        let s{p}_{row} = {};", sum.join(" + "));
        }
    }
    for p in 0..texels {
        let sum = format!("b + {v4}(s{p}_0, s{p}_1, s{p}_2, s{p}_3)");
        let _ = writeln!(t, "        o{p}_{l}[q] = {};", act_of(&sum));
    }
}

fn struct_decl(t: &mut String, name: &str, field: &str, count: u32, ty: &str) {
    let _ = writeln!(t, "struct {name} {{");
    for j in 0..count.max(1) {
        let _ = writeln!(t, "    {field}{j}: {ty},");
    }
    t.push_str("}\n");
}

#[cfg(test)]
mod tests;
