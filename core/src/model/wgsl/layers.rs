//! The generated layers, written through the [`Emitter`]: a hidden layer and the last one forward
//! (the decoder's and the GPU trainer's), and a layer backward through its weights (the
//! trainer's). Values are named by [`super::emit`]'s protocol: a layer reads its inputs
//! [`act`]`(p, l, j)` and leaves its outputs [`act`]`(p, l + 1, j)` (or [`pre`] before a kept
//! activation), each a `vec4` of four neighbours.

use super::emit::{Emitter, act, expr, grad, grad_in, name, outs, pre};
use super::{MlpPrecision, MlpShape, PackedLayer, WIDE_VEC4S, activate, component};
use crate::model::params::Activation;

/// Where a generated hidden layer applies its activation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HiddenActivation {
    /// In its loop, to each output: the decoder's.
    Inline(Activation),
    /// After its loop, to the named outputs, the values before it named [`pre`]`(p, l + 1, j)`:
    /// the GPU trainer's, whose backward pass takes the activation's derivative at them.
    KeepPre(Activation),
}

/// Layer `l` in the scalar shape ([`MlpShape::Scalar`]) for `texels` texels: a loop over its
/// outputs, each iteration loading one row's weights a scalar at a time for every texel, stored to
/// [`outs`]`(p, l)` (`groups` · 4 scalars, the padding 0) and named [`act`]`(p, l + 1, j)` (or
/// [`pre`] without `act`). A hidden layer takes its activation (`act`: `Some`) and its bias from
/// the biases' `vec4`s; the last (`is_last`) no activation, its bias in the `vec4` after each row
/// ([`PackedLayer::row_and_bias_at`]).
fn scalar_layer(
    e: &mut Emitter,
    layer: &PackedLayer,
    l: usize,
    texels: u32,
    is_last: bool,
    function: Option<Activation>,
    num: MlpPrecision,
) {
    let groups = if is_last { layer.outputs.div_ceil(4) } else { layer.rows / 4 };
    for p in 0..texels {
        e.var(outs(p, l), expr!("array<{}, {}>", num.scalar(), 4 * groups));
    }
    e.for_range("q", expr!("{}u", layer.outputs));
    e.let_("r", expr!("{}u + q * {}u", layer.weights_at, layer.row_stride(is_last)));
    if is_last {
        e.let_("b", num.convert1(&expr!("mlp[r + {}u].x", layer.row_vec4s)));
    } else {
        e.let_("b", num.convert1(&expr!("mlp[{}u + q / 4u][q % 4u]", layer.biases_at)));
    }
    for k in 0..layer.inputs {
        e.let_(name("w", k), num.convert1(&expr!("mlp[r + {}u].{}", k / 4, component(k))));
    }
    for p in 0..texels {
        let terms = (0..layer.inputs).map(|k| expr!("{} * {}.{}", name("w", k), act(p, l, k / 4), component(k)));
        let sum = std::iter::once("b".to_owned()).chain(terms).collect::<Vec<_>>().join(" + ");
        let value = match function {
            None => sum,
            Some(function) => activate(function, &sum, num.scalar()),
        };
        e.set(expr!("{}[q]", outs(p, l)), value);
    }
    e.close();
    let named = is_last || function.is_some();
    for p in 0..texels {
        let value = |j: u32| if named { act(p, l + 1, j) } else { pre(p, l + 1, j) };
        name_groups(e, value, &outs(p, l), groups, num);
    }
}

/// The named `vec4`s `name(j)` of the scalars in the array `array`, `groups` of four.
fn name_groups(e: &mut Emitter, name: impl Fn(u32) -> String, array: &str, groups: u32, num: MlpPrecision) {
    for j in 0..groups {
        let [a, b, c, d] = [0, 1, 2, 3].map(|k| expr!("{array}[{}u]", 4 * j + k));
        e.let_(name(j), expr!("{}({a}, {b}, {c}, {d})", num.vec4()));
    }
}

/// The statements of hidden layer `l` (activation `activation`) for `texels` texels: from the named
/// inputs [`act`]`(p, l, j)` (`vec4`s of four inputs) to the named outputs [`act`]`(p, l + 1, j)`,
/// in a loop whose iterations load their weights once for every texel (see the module's
/// documentation of `model::wgsl` and [`MlpShape`]). Also leaves the outputs in [`outs`]`(p, l)`
/// (an array the loop stores: of `vec4`s in `Vec4Rows`, of scalars in `Scalar`).
pub fn hidden_layer(
    e: &mut Emitter,
    layer: &PackedLayer,
    l: usize,
    texels: u32,
    shape: MlpShape,
    num: MlpPrecision,
    activation: HiddenActivation,
) {
    let groups = layer.rows / 4;
    let n = layer.row_vec4s;
    let (inline, after) = match activation {
        HiddenActivation::Inline(a) => (Some(a), None),
        HiddenActivation::KeepPre(a) => (None, Some(a)),
    };
    if shape == MlpShape::Scalar {
        scalar_layer(e, layer, l, texels, false, inline, num);
        name_activated(e, l, texels, groups, after, num);
        return;
    }
    let v4 = num.vec4();
    for p in 0..texels {
        e.var(outs(p, l), expr!("array<{v4}, {groups}>"));
        if l == 0 && n > WIDE_VEC4S {
            let values: Vec<String> = (0..n).map(|j| act(p, 0, j)).collect();
            e.var_init(name("in", p), expr!("array<{v4}, {n}>({})", values.join(", ")));
        }
    }
    e.for_range("q", expr!("{groups}u"));
    group_body(e, layer, l, texels, num, inline);
    e.close();
    for p in 0..texels {
        for j in 0..groups {
            let named = if inline.is_some() { act(p, l + 1, j) } else { pre(p, l + 1, j) };
            e.let_(named, expr!("{}[{j}u]", outs(p, l)));
        }
    }
    name_activated(e, l, texels, groups, after, num);
}

/// With `after`, the named outputs [`act`]`(p, l + 1, j)` of hidden layer `l`: `after` of the
/// named values before it, [`pre`]`(p, l + 1, j)`.
fn name_activated(e: &mut Emitter, l: usize, texels: u32, groups: u32, after: Option<Activation>, num: MlpPrecision) {
    let Some(function) = after else { return };
    for p in 0..texels {
        for j in 0..groups {
            e.let_(act(p, l + 1, j), activate(function, &pre(p, l + 1, j), num.vec4()));
        }
    }
}

/// The statements of the last layer `l` (no activation), every output, for `texels` texels: from
/// the named inputs [`act`]`(p, l, j)` to the named outputs [`act`]`(p, l + 1, j)`, `vec4`s of
/// four outputs (those past the layer's outputs 0). What the GPU trainer's forward pass ends with;
/// the decoder computes the four outputs of one map instead (`mlp_output`).
pub fn last_layer(e: &mut Emitter, layer: &PackedLayer, l: usize, texels: u32, shape: MlpShape) {
    let groups = layer.outputs.div_ceil(4);
    let n = layer.row_vec4s;
    if shape == MlpShape::Scalar {
        scalar_layer(e, layer, l, texels, true, None, MlpPrecision::F32);
        return;
    }
    for p in 0..texels {
        e.var(outs(p, l), expr!("array<vec4<f32>, {groups}>"));
    }
    e.for_range("q", expr!("{groups}u"));
    e.let_("r", expr!("{}u + q * {}u", layer.weights_at, 4 * (n + 1)));
    four_outputs(e, n, texels, &|p, j| act(p, l, j), false);
    for p in 0..texels {
        e.set(expr!("{}[q]", outs(p, l)), name("z", p));
    }
    e.close();
    for p in 0..texels {
        for j in 0..groups {
            e.let_(act(p, l + 1, j), expr!("{}[{j}u]", outs(p, l)));
        }
    }
}

/// The statements of layer `l`'s backward pass through its weights for `texels` texels: from the
/// named output gradients [`grad`]`(p, l, g)` (`vec4`s of four outputs) to the named gradients of
/// its first `inputs` inputs, [`grad_in`]`(p, l, j)` (`vec4`s of four inputs; no activation
/// applied), in a loop whose iterations load their weights once for every texel: in `Vec4Rows`
/// one `vec4` of every output's row (four inputs), in `Scalar` one input's weight of every row.
/// `is_last`: the layer's rows hold their bias in one more `vec4` ([`PackedLayer::row_stride`]).
pub fn layer_backward(e: &mut Emitter, layer: &PackedLayer, l: usize, texels: u32, is_last: bool, inputs: u32, shape: MlpShape) {
    let groups = inputs.div_ceil(4);
    let stride = layer.row_stride(is_last);
    let sum = |p: u32| -> String {
        let terms: Vec<String> = (0..layer.outputs).map(|q| expr!("{}.{} * {}", grad(p, l, q / 4), component(q), name("w", q))).collect();
        if terms.is_empty() { "0.0".to_owned() } else { terms.join(" + ") }
    };
    if shape == MlpShape::Scalar {
        for p in 0..texels {
            e.var(name("gs", (p, l)), expr!("array<f32, {}>", 4 * groups));
        }
        e.for_range("k", expr!("{inputs}u"));
        for q in 0..layer.outputs {
            e.let_(name("w", q), expr!("mlp[{}u + k / 4u][k % 4u]", layer.weights_at + q * stride));
        }
        for p in 0..texels {
            e.set(expr!("{}[k]", name("gs", (p, l))), sum(p));
        }
        e.close();
        for p in 0..texels {
            name_groups(e, |j| grad_in(p, l, j), &name("gs", (p, l)), groups, MlpPrecision::F32);
        }
        return;
    }
    for p in 0..texels {
        e.var(name("gv", (p, l)), expr!("array<vec4<f32>, {groups}>"));
    }
    e.for_range("j", expr!("{groups}u"));
    for q in 0..layer.outputs {
        e.let_(name("w", q), expr!("mlp[{}u + j]", layer.weights_at + q * stride));
    }
    for p in 0..texels {
        let value = if layer.outputs == 0 { "vec4<f32>(0.0)".to_owned() } else { sum(p) };
        e.set(expr!("{}[j]", name("gv", (p, l))), value);
    }
    e.close();
    for p in 0..texels {
        for j in 0..groups {
            e.let_(grad_in(p, l, j), expr!("{}[{j}u]", name("gv", (p, l))));
        }
    }
}

/// The statements computing `z{texel}` ([`name`]`("z", p)`), four consecutive outputs of the last
/// layer (rows `r..r + 4`, `r` in scope, each row `n` `vec4`s of weights and one holding its
/// bias), from the inputs `input(texel, j)`, `n` `vec4`s of them (`vec4<f32>`: the last layer is
/// `f32` in every [`MlpPrecision`]). `bits`: `mlp` holds `vec4<u32>`s
/// ([`super::PackedInt8`]), read as `f32` bit patterns.
pub(super) fn four_outputs(e: &mut Emitter, n: u32, texels: u32, input: &dyn Fn(u32, u32) -> String, bits: bool) {
    let load = |index: String| if bits { expr!("bitcast<vec4<f32>>(mlp[{index}])") } else { expr!("mlp[{index}]") };
    if n > WIDE_VEC4S {
        // A wide layer: the inputs as an array read in a loop.
        let biases: Vec<String> = (0..4).map(|c| expr!("{}.x", load(expr!("r + {}u", c * (n + 1) + n)))).collect();
        for p in 0..texels {
            let values: Vec<String> = (0..n).map(|j| input(p, j)).collect();
            e.var_init(name("hh", p), expr!("array<vec4<f32>, {n}>({})", values.join(", ")));
            e.var_init(name("z", p), expr!("vec4<f32>({})", biases.join(", ")));
        }
        e.for_range("j", expr!("{n}u"));
        for c in 0..4 {
            e.let_(name("w", c), load(expr!("r + {}u + j", c * (n + 1))));
        }
        for p in 0..texels {
            let [w0, w1, w2, w3] = [0u32, 1, 2, 3].map(|c| name("w", c));
            let h = expr!("{}[j]", name("hh", p));
            e.add(name("z", p), expr!("vec4<f32>(dot({w0}, {h}), dot({w1}, {h}), dot({w2}, {h}), dot({w3}, {h}))"));
        }
        e.close();
        return;
    }
    for c in 0..4 {
        for j in 0..=n {
            e.let_(name("w", (c, j)), load(expr!("r + {}u", c * (n + 1) + j)));
        }
        for p in 0..texels {
            let sum: Vec<String> = (0..n).map(|j| expr!("dot({}, {})", name("w", (c, j)), input(p, j))).collect();
            e.let_(name("z", (p, c)), expr!("{}.x + ({})", name("w", (c, n)), sum.join(" + ")));
        }
    }
    for p in 0..texels {
        let [a, b, c, d] = [0u32, 1, 2, 3].map(|c| name("z", (p, c)));
        e.let_(name("z", p), expr!("vec4<f32>({a}, {b}, {c}, {d})"));
    }
}

/// The statements of one group of four outputs `q` of hidden layer `l` (`q` in scope), for
/// `texels` texels: [`outs`]`(p, l)[q]` = `act` of four rows times the inputs.
fn group_body(e: &mut Emitter, layer: &PackedLayer, l: usize, texels: u32, num: MlpPrecision, act_fn: Option<Activation>) {
    let act_of = |sum: &str| act_fn.map_or_else(|| sum.to_owned(), |a| activate(a, sum, num.vec4()));
    let n = layer.row_vec4s;
    let v4 = num.vec4();
    e.let_("r", expr!("{}u + q * {}u", layer.weights_at, 4 * n));
    e.let_("b", num.convert4(&expr!("mlp[{}u + q]", layer.biases_at)));
    if n > WIDE_VEC4S {
        // A wide layer: its inputs as an array read in a loop (each iteration one `vec4` of the
        // four rows), so the code stays small for the compiler.
        for p in 0..texels {
            let source = if l == 0 { name("in", p) } else { outs(p, l - 1) };
            e.var_init(name("s", p), expr!("{v4}(0.0)"));
            e.let_(name("from", p), expr!("&{source}"));
        }
        e.for_range("j", expr!("{n}u"));
        for row in 0..4u32 {
            e.let_(name("w", row), num.convert4(&expr!("mlp[r + {}u + j]", row * n)));
        }
        for p in 0..texels {
            let x = name("x", p);
            let [w0, w1, w2, w3] = [0u32, 1, 2, 3].map(|c| name("w", c));
            e.let_(&x, expr!("(*{})[j]", name("from", p)));
            e.add(name("s", p), expr!("{v4}(dot({w0}, {x}), dot({w1}, {x}), dot({w2}, {x}), dot({w3}, {x}))"));
        }
        e.close();
        for p in 0..texels {
            e.set(expr!("{}[q]", outs(p, l)), act_of(&expr!("b + {}", name("s", p))));
        }
        return;
    }
    for row in 0..4u32 {
        for j in 0..n {
            e.let_(name("w", (row, j)), num.convert4(&expr!("mlp[r + {}u]", row * n + j)));
        }
        for p in 0..texels {
            let sum: Vec<String> = (0..n).map(|j| expr!("dot({}, {})", name("w", (row, j)), act(p, l, j))).collect();
            e.let_(name("s", (p, row)), sum.join(" + "));
        }
    }
    for p in 0..texels {
        let [a, b, c, d] = [0u32, 1, 2, 3].map(|row| name("s", (p, row)));
        e.set(expr!("{}[q]", outs(p, l)), act_of(&expr!("b + {v4}({a}, {b}, {c}, {d})")));
    }
}
