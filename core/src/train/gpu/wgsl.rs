//! The GPU trainer's WGSL: `train.wgsl` specialised to a model and library, with the constants,
//! flags and generated code (the weights' binding `mlp` and `load_weights`, `packed_at`, `gather`,
//! `scatter`, `mlp_train` and the `wgrad` entry point) the host and the shader share. The MLP's
//! layers come from the one generator every decoding shader runs (`model::wgsl`).

use super::fused::FusedPlan;
use super::layout::{LayerRow, Shapes, Tables, WgradTile, row_vec4s};
use crate::model::InputLayout;
use crate::model::params::{Activation, ModelParams};
use crate::model::quant::{self, WeightFormat};
use crate::model::wgsl::WeightMemory;
use crate::model::wgsl::emit::{Emitter, act, expr, grad, grad_in, name, pre};
use crate::model::wgsl::{self as mlp_gen, HiddenActivation, MlpPrecision, MlpShape, MlpWgsl, PackedLayer};

/// The WGSL of the trainer, before the host's constants are prepended.
pub(crate) const TRAIN_WGSL: &str = include_str!("train.wgsl");

/// Invocations per workgroup of every entry point.
pub(super) const WORKGROUP: u32 = 64;
// The step's flags (`Step.flags`): what the host sets and the shader reads, by the same names.
pub(super) const FLAG_GIVEN_SAMPLES: u32 = 1;
pub(super) const FLAG_NOISE: u32 = 2;
pub(super) const FLAG_TRAIN_GRIDS: u32 = 4;
const FLAG_INT8: u32 = 8;
const FLAG_FP16: u32 = 16;
const FLAG_E4M3: u32 = 32;
const FLAG_MXINT8: u32 = 64;
/// With `FLAG_NOISE`: one draw per latent per step (`latent_noise`), not one per read.
pub(super) const FLAG_NOISE_PER_LATENT: u32 = 128;
/// Sparse Adam: a parameter with a zero gradient keeps its value and moments.
pub(super) const FLAG_SPARSE: u32 = 256;

/// The `prepare` kernel's flag that fake-quantises the weights in `format`.
pub(super) fn format_flag(format: WeightFormat) -> u32 {
    match format {
        WeightFormat::Int8 => FLAG_INT8,
        WeightFormat::Fp16 => FLAG_FP16,
        WeightFormat::Fp8E4m3 => FLAG_E4M3,
        WeightFormat::MxInt8 => FLAG_MXINT8,
    }
}

/// The trainer's WGSL specialised to a model and library: constants and the generated `weight`,
/// `load_weights` and `mlp` prepended to `train.wgsl`.
pub(super) fn specialise(
    params: &ModelParams,
    shapes: &Shapes,
    tables: &Tables,
    memory: WeightMemory,
    mlp_shape: MlpShape,
    adam_row: u32,
) -> String {
    let layout = params.input_layout();
    let lc = layout.latent_channels() as u32;
    let lf = layout.latent_features() as u32;
    let oc = params.output_channels() as u32;
    let widths = shapes.layers.iter().flat_map(|&(i, o)| [i, o]);
    let maxw = widths.chain([layout.width() as u32, 1]).max().unwrap_or(1);
    let consts = [
        ("N", shapes.batch),
        ("CHUNK", shapes.chunk_texels()),
        ("CHUNKS", shapes.chunks()),
        ("GROUPS", tables.groups.max(1)),
        ("TOTAL_DRAWS", tables.total_draws),
        ("GROUP_OFF", tables.group_off),
        ("CUM_OFF", tables.cum_off),
        ("TARGET_OFF", tables.target_off),
        ("MASK_OFF", tables.mask_off),
        ("GRID_OFF", tables.grid_off),
        ("LAYER_OFF", tables.layer_off),
        ("SAMPLES_OFF", tables.samples_off),
        ("GRIDS", params.grids.len() as u32),
        ("LC", lc),
        ("PE", params.pe_frequencies),
        ("OC", oc),
        ("MAXW", maxw),
        ("LAYERS", shapes.layers.len() as u32),
        ("ROWS", shapes.rows),
        ("TILES", shapes.tiles()),
        ("PL", shapes.layer_total),
        ("GRID_TOTAL", shapes.grid_total),
        ("P_ALL", shapes.all()),
        ("ADAM_ROW", adam_row),
        ("MLP_VEC4S", shapes.packed_vec4s.max(1)),
        ("TPI", shapes.tpi()),
        ("XLEN", maxw * shapes.tpi()),
        ("TPI_GRIDS", shapes.tpi() * params.grids.len().max(1) as u32),
        // What the host and the shader must agree on, from one source.
        ("WG", WORKGROUP),
        ("FLAG_GIVEN_SAMPLES", FLAG_GIVEN_SAMPLES),
        ("FLAG_NOISE", FLAG_NOISE),
        ("FLAG_TRAIN_GRIDS", FLAG_TRAIN_GRIDS),
        ("FLAG_INT8", FLAG_INT8),
        ("FLAG_FP16", FLAG_FP16),
        ("FLAG_E4M3", FLAG_E4M3),
        ("FLAG_MXINT8", FLAG_MXINT8),
        ("FLAG_NOISE_PER_LATENT", FLAG_NOISE_PER_LATENT),
        ("FLAG_SPARSE", FLAG_SPARSE),
        ("MX_BLOCK", quant::MX_BLOCK as u32),
        ("MIP_GROUP", params.mip_group()),
        ("PYRAMID_LEVELS", params.pyramid_levels()),
    ];
    let mut text = Emitter::with_comment("Specialised by texset (core/src/train/gpu/wgsl.rs).");
    for (constant, value) in consts {
        text.constant_u32(constant, value);
    }
    text.constant_f32("E4M3_MAX", quant::E4M3_MAX);
    text.constant_f32("ADAM_BETA1", crate::train::adam::ADAM_BETA1);
    text.constant_f32("ADAM_EPS", crate::train::adam::ADAM_EPS);
    text.constant_f32("LOD_INPUT_SCALE", crate::model::LOD_INPUT_SCALE);
    // The weights' binding as the one MLP generator declares it for `memory`, and their copy
    // into workgroup memory where they go there. Generated, not a constant's branch: an entry
    // point binds every buffer its code names, even in a branch never taken.
    text.verbatim(&weights_wgsl(shapes, memory));
    text.verbatim(&packed_at_wgsl(&shapes.packed));
    // The layers with their shapes as literals (the tables' layer rows, in code).
    text.verbatim(&layer_row_accessors());
    let rows: Vec<LayerRow> = tables.words[tables.layer_off as usize..tables.samples_off as usize]
        .chunks_exact(LayerRow::WORDS)
        .map(LayerRow::from_words)
        .collect();
    text.verbatim(&gather_wgsl(&layout, shapes.tpi(), maxw));
    text.verbatim(&mlp_gen::activation_functions(params.activation, MlpPrecision::F32));
    let dims = MlpDims { lf, oc, tpi: shapes.tpi(), maxw };
    let fused = shapes.fused();
    if let Some(plan) = fused {
        text.verbatim(&plan.declaration());
    }
    text.verbatim(&mlp_wgsl(&shapes.packed, mlp_shape, params.activation, &rows, dims, fused));
    if let Some(tile) = shapes.wgrad_tile() {
        text.verbatim(&wgrad_wgsl(tile));
    }
    text.verbatim(crate::model::MODEL_WGSL);
    text.verbatim(TRAIN_WGSL);
    text.finish()
}

/// WGSL accessors of layer `l`'s row ([`LayerRow`]), one per field: `fn layer_<field>(l: u32) ->
/// u32`, reading the `tables` word at `LAYER_OFF + l · WORDS + <its index>`.
pub(super) fn layer_row_accessors() -> String {
    let mut e = Emitter::new();
    for (i, field) in LayerRow::FIELDS.iter().enumerate() {
        e.function(expr!("{}(l: u32) -> u32", name("layer_", *field)));
        e.ret(expr!("t_u(LAYER_OFF + l * {}u + {i}u)", LayerRow::WORDS));
        e.close();
    }
    e.finish()
}

/// `gather(first)`: draws texels `first..first + tpi` (`drawn`) and writes their features to `xa`
/// (texel t's at t · maxw) at the slots of `layout`: per grid its latent features (one per
/// channel, or each of the four corners times its weight), then the positional encoding and, with
/// a pyramid, the LOD input; and `scatter()`, which adds the latent features' gradients (`xb`) to
/// the grid cells they were read from (a corner feature's to its own cell). Every feature is
/// stored and read at a literal index, and each texel's grids are located once for both: lavapipe
/// stores to a private array at an index known only at run time by a select over the whole array.
/// Generated, the two took `fwd_bwd` from 340 to 327 ms per 65,536-texel step of the default
/// model on lavapipe (loops over the grids and channels in the shader before).
pub(crate) fn gather_wgsl(layout: &InputLayout, tpi: u32, maxw: u32) -> String {
    let grids = layout.grids();
    let mut e = Emitter::new();
    e.function("gather(first: u32)");
    for p in 0..tpi {
        let base = (p * maxw) as usize;
        let (d, at) = (name("d", p), name("at", p));
        e.let_(&d, expr!("draw(first + {p}u)"));
        e.set(expr!("drawn[{p}u]"), &d);
        e.let_(&at, expr!("texel_at({d}.x, {d}.y)"));
        e.set(expr!("texel_masks[{p}u]"), expr!("{at}.mask_base"));
        for (gi, slot) in grids.iter().enumerate() {
            let g = name("g", (p, gi));
            e.let_(&g, expr!("grid_at({at}.level, {gi}u, {at}.uv)"));
            e.set(expr!("texel_grids[{}u]", p as usize * grids.len() + gi), &g);
            for k in 0..slot.channels {
                // The latent channel: the mask's and the noise's index.
                let ch = slot.first_channel + k;
                if slot.corners {
                    for corner in 0..4 {
                        let input = base + slot.input(k, corner);
                        e.set(expr!("xa[{input}u]"), expr!("latent_corner(first + {p}u, {g}, {k}u, {corner}u, {ch}u, {at}.mask_base)"));
                    }
                } else {
                    let input = base + slot.input(k, 0);
                    e.set(expr!("xa[{input}u]"), expr!("latent_feature(first + {p}u, {g}, {k}u, {ch}u, {at}.mask_base)"));
                }
            }
        }
        let pos = name("pos", p);
        e.let_(&pos, expr!("pe_position({at})"));
        for k in 0..layout.pe_frequencies() {
            let (sx, sy) = (name("sx", (p, k)), name("sy", (p, k)));
            e.let_(&sx, expr!("pe_sin_cos({k}u, {pos}.x)"));
            e.let_(&sy, expr!("pe_sin_cos({k}u, {pos}.y)"));
            for (j, value) in [expr!("{sx}.x"), expr!("{sx}.y"), expr!("{sy}.x"), expr!("{sy}.y")].into_iter().enumerate() {
                e.set(expr!("xa[{}u]", base + layout.pe_input(k, j)), value);
            }
        }
        if let Some(lod) = layout.lod_input() {
            e.set(expr!("xa[{}u]", base + lod), expr!("f32({at}.lod) * LOD_INPUT_SCALE"));
        }
    }
    e.close();
    // The latent features' gradients (`xb`, as `mlp` leaves them) to the grids they were read from.
    e.function("scatter()");
    for p in 0..tpi {
        let base = (p * maxw) as usize;
        let mask = name("mask", p);
        e.let_(&mask, expr!("texel_masks[{p}u]"));
        for (gi, slot) in grids.iter().enumerate() {
            let g = name("g", (p, gi));
            e.let_(&g, expr!("texel_grids[{}u]", p as usize * grids.len() + gi));
            for k in 0..slot.channels {
                let ch = slot.first_channel + k;
                if slot.corners {
                    for corner in 0..4 {
                        let input = base + slot.input(k, corner);
                        e.call(expr!("scatter_corner({g}, {k}u, {corner}u, xb[{input}u] * t_f({mask} + {ch}u))"));
                    }
                } else {
                    let input = base + slot.input(k, 0);
                    e.call(expr!("scatter_feature({g}, {k}u, xb[{input}u] * t_f({mask} + {ch}u))"));
                }
            }
        }
    }
    e.close();
    e.finish()
}

/// Where `fwd_bwd` binds `fwdw` for the weights in `memory` (train.wgsl's bindings): again as a
/// uniform buffer (12) or a read-only storage buffer (14) that the generated `mlp` names, or as
/// itself (4), which `load_weights` copies to the workgroup's `mlp`.
pub(super) fn mlp_binding(memory: WeightMemory) -> u32 {
    match memory {
        WeightMemory::Uniform => 12,
        WeightMemory::Workgroup => 4,
        WeightMemory::Storage => 14,
    }
}

/// `mlp`, the packed weights as the one MLP generator declares them for `memory`, and
/// `load_weights(lid)`: their copy from `fwdw` into workgroup memory where they go there (nothing
/// elsewhere).
fn weights_wgsl(shapes: &Shapes, memory: WeightMemory) -> String {
    let declaration = MlpWgsl {
        layers: &shapes.packed,
        block: 1,
        memory,
        vec4s: shapes.packed_vec4s,
        group: 0,
        binding: mlp_binding(memory),
        shape: MlpShape::Vec4Rows,
        precision: MlpPrecision::F32,
        int8: &[],
        activation: Activation::Relu,
    }
    .binding();
    let mut e = Emitter::new();
    e.verbatim(&declaration);
    e.function("load_weights(lid: u32)");
    if memory == WeightMemory::Workgroup {
        e.open("for (var k = lid; k < MLP_VEC4S; k += WG)");
        e.set("mlp[k]", "vec4<f32>(fwdw[4u * k], fwdw[4u * k + 1u], fwdw[4u * k + 2u], fwdw[4u * k + 3u])");
        e.close();
        e.call("workgroupBarrier()");
    }
    e.close();
    e.finish()
}

/// `packed_at(l, o) -> vec2<u32>`: where `prepare` writes row `o` of layer `l` in `fwdw` (the
/// `f32` index of its first weight, and of its bias), the layers' places as literals.
fn packed_at_wgsl(layers: &[PackedLayer]) -> String {
    let mut e = Emitter::new();
    e.function("packed_at(l: u32, o: u32) -> vec2<u32>");
    let last = layers.len().saturating_sub(1);
    for (l, layer) in layers.iter().enumerate() {
        let is_last = l == last;
        let stride = 4 * layer.row_stride(is_last);
        let (row, bias) = layer.row_and_bias_at(0, is_last);
        let bias = if is_last { expr!("{row}u + o * {stride}u + {}u", 4 * layer.row_vec4s) } else { expr!("{bias}u + o") };
        e.if_(expr!("l == {l}u"));
        e.ret(expr!("vec2<u32>({row}u + o * {stride}u, {bias})"));
        e.close();
    }
    e.ret("vec2<u32>(0u)");
    e.close();
    e.finish()
}

/// The widths `mlp_wgsl` generates for.
#[derive(Clone, Copy)]
struct MlpDims {
    /// Latent features (the first layer's inputs that get a gradient: one per latent channel,
    /// four per channel of a grid whose corners the decoder reads).
    lf: u32,
    /// Output channels.
    oc: u32,
    /// Texels per invocation.
    tpi: u32,
    /// `xa`'s and `xb`'s stride per texel.
    maxw: u32,
}

/// `mlp_train(first, lid, chunk) -> vec3<f32>`: the forward pass of texels `first..first + tpi`
/// from their features in `xa` (texel t's at t · maxw), their loss (`loss_grad` per texel and
/// output; the loss sums returned) and backward pass, ending with the latent features' gradient in
/// `xb` (at t · maxw, `lf` of them); every layer's input row and output-gradient row go to the
/// scratch (`rows`: the tables' layer rows: inputs, outputs, weights, biases, input rows, gradient
/// rows), or with a `fused` plan, each layer's weight gradient over the workgroup (invocation
/// `lid`) goes to its chunk `chunk` of `wpart` instead (`FusedPlan::layer_gradient`).
///
/// The layers are the one MLP generator's (`model::wgsl`: `hidden_layer`, `last_layer`,
/// `layer_backward`, in the code `shape` asks for), reading the packed `vec4` weights (`packed`)
/// the decoder reads: every activation and gradient a named `vec4` of four neighbours
/// (`emit::act(texel, layer, j)`, `emit::grad(texel, layer, j)`), read by its literal name
/// (lavapipe keeps those in registers, where it reads an array indexed at run time lane by lane);
/// each loop iteration loads its weights once for all the invocation's texels.
fn mlp_wgsl(
    packed: &[PackedLayer],
    shape: MlpShape,
    activation: Activation,
    rows: &[LayerRow],
    dims: MlpDims,
    fused: Option<&FusedPlan>,
) -> String {
    let MlpDims { lf, oc, tpi, maxw } = dims;
    let mut e = Emitter::new();
    e.function("mlp_train(first: u32, lid: u32, chunk: u32) -> vec3<f32>");
    let count = packed.len();
    for p in 0..tpi {
        e.let_(name("out", p), expr!("TARGET_OFF + drawn[{p}u].x * OC * 3u"));
        e.let_(name("tex", p), expr!("drawn[{p}u].y"));
        if let Some(first) = packed.first() {
            for j in 0..first.row_vec4s {
                let value = |c: u32| if 4 * j + c < first.inputs { expr!("xa[{}u]", p * maxw + 4 * j + c) } else { "0.0".into() };
                e.let_(act(p, 0, j), expr!("vec4<f32>({}, {}, {}, {})", value(0), value(1), value(2), value(3)));
            }
        }
    }
    // Forward: layer l's inputs act(p, l, j), its outputs act(p, l + 1, j) (activated but on the
    // last).
    for (l, (layer, r)) in packed.iter().zip(rows).enumerate() {
        for p in (0..tpi).filter(|_| fused.is_none()) {
            let row = name("act", (l, p));
            e.let_(&row, expr!("{}u + (first + {p}u) * {}u", r.activations, row_vec4s(layer.inputs)));
            store_row(&mut e, &row, |j| act(p, l, j), layer.row_vec4s, row_vec4s(layer.inputs));
        }
        if l + 1 < count {
            // `ReLU`'s backward pass gates on its outputs; another activation's reads the values
            // before it.
            let hidden =
                if activation == Activation::Relu { HiddenActivation::Inline(activation) } else { HiddenActivation::KeepPre(activation) };
            mlp_gen::hidden_layer(&mut e, layer, l, tpi, shape, MlpPrecision::F32, hidden);
        } else {
            mlp_gen::last_layer(&mut e, layer, l, tpi, shape);
        }
    }
    // Loss: grad(p, count - 1, j) is dLoss/dy, four outputs to a `vec4`.
    e.var_init("sums", "vec3<f32>(0.0)");
    for p in 0..tpi {
        for o in 0..oc {
            let y = expr!("{}.{}", act(p, count, o / 4), mlp_gen::component(o));
            e.let_(name("dy", (p, o)), expr!("loss_grad({}, {}, {o}u, {y}, &sums)", name("out", p), name("tex", p)));
        }
        for g in 0..oc.div_ceil(4) {
            let value = |c: u32| if 4 * g + c < oc { name("dy", (p, 4 * g + c)) } else { "0.0".into() };
            e.let_(grad(p, count - 1, g), expr!("vec4<f32>({}, {}, {}, {})", value(0), value(1), value(2), value(3)));
        }
    }
    // Backward: layer l's output gradient grad(p, l, j), its input gradient grad(p, l - 1, j)
    // (through the activation: masked where ReLU's input was not positive, or times the
    // derivative at the values before it, pre(p, l, j)); the first layer's only for the latent
    // features.
    for (l, (layer, r)) in packed.iter().zip(rows).enumerate().rev() {
        if let Some(plan) = fused {
            plan.layer_gradient(&mut e, l, layer.row_vec4s, tpi, r.weights, r.biases);
        }
        for p in (0..tpi).filter(|_| fused.is_none()) {
            let row = name("dz", (l, p));
            e.let_(&row, expr!("{}u + (first + {p}u) * {}u", r.output_grads, row_vec4s(layer.outputs)));
            store_row(&mut e, &row, |j| grad(p, l, j), layer.outputs.div_ceil(4), row_vec4s(layer.outputs));
        }
        let inputs = if l == 0 { lf.min(layer.inputs) } else { layer.inputs };
        if inputs == 0 {
            continue;
        }
        mlp_gen::layer_backward(&mut e, layer, l, tpi, l + 1 == count, inputs, shape);
        for p in 0..tpi {
            if l == 0 {
                for k in 0..inputs {
                    e.set(expr!("xb[{}u]", p * maxw + k), expr!("{}.{}", grad_in(p, 0, k / 4), mlp_gen::component(k)));
                }
            } else {
                for j in 0..inputs.div_ceil(4) {
                    let gradient = mlp_gen::activation_backward(activation, &grad_in(p, l, j), &pre(p, l, j), &act(p, l, j));
                    e.let_(grad(p, l - 1, j), gradient);
                }
            }
        }
    }
    e.ret("sums");
    e.close();
    e.finish()
}

/// The statements that store the named `vec4`s `named(0)..named(count)` to the scratch row at
/// `row`, then zeros to its `width` `vec4`s ([`row_vec4s`]).
fn store_row(e: &mut Emitter, row: &str, named: impl Fn(u32) -> String, count: u32, width: u32) {
    for j in 0..width {
        let value = if j < count { named(j) } else { "vec4<f32>(0.0)".into() };
        e.set(expr!("scratch[{row} + {j}u]"), value);
    }
}

/// `wgrad`: the weight and bias gradients of one chunk of CHUNK texels, each summed in texel order.
/// An invocation per tile of `to` outputs × `tk` inputs of a layer's weights, its sums named
/// `vec4`s over four outputs (`c{input}_{outputs / 4}`); the tiles of a layer's first inputs also
/// sum its biases (`cb_{outputs / 4}`). Each texel's rows are read once per `to · tk`
/// multiply-adds, `to / 4 + tk / 4` `vec4`s of them: lavapipe runs a storage load lane by lane,
/// component by component, so the loads, not the multiply-adds, are this pass's cost there, and
/// larger tiles pay ([`super::layout::WgradTile`]). A tile past a layer's edge sums the rows'
/// zero padding or the next row's values and stores none of it. Every weight's sum runs over the
/// chunk's texels in order whatever the tile's outputs and inputs: those change no bit.
fn wgrad_wgsl(tile: WgradTile) -> String {
    let (to, tk) = (tile.outputs, tile.inputs);
    let (ov, kv) = (to / 4, tk / 4);
    let (m, n) = (to - 1, tk - 1);
    let mut e = Emitter::new();
    e.verbatim("@compute @workgroup_size(WG)\n");
    e.function("wgrad(@builtin(global_invocation_id) gid: vec3<u32>)");
    e.var_init("t", "gid.x");
    e.let_("chunk", "gid.y");
    e.if_("t >= TILES");
    e.ret_void();
    e.close();
    e.var_init("l", "0u");
    e.open("loop");
    e.let_("tiles", expr!("((layer_outputs(l) + {m}u) / {to}u) * ((layer_inputs(l) + {n}u) / {tk}u)"));
    e.if_("t < tiles || l + 1u >= LAYERS");
    e.call("break");
    e.close();
    e.sub("t", "tiles");
    e.add("l", "1u");
    e.close();
    e.let_("nin", "layer_inputs(l)");
    e.let_("nout", "layer_outputs(l)");
    e.let_("k_tiles", expr!("(nin + {n}u) / {tk}u"));
    e.let_("ot", "t / k_tiles");
    e.let_("kt", "t % k_tiles");
    e.let_("o0", expr!("ot * {to}u"));
    e.let_("k0", expr!("kt * {tk}u"));
    e.comment("Rows are whole pairs of `vec4`s (`row_vec4s`).");
    e.let_("d_stride", "2u * ((nout + 7u) / 8u)");
    e.let_("a_stride", "2u * ((nin + 7u) / 8u)");
    e.let_("dz", expr!("layer_output_grads(l) + {ov}u * ot"));
    e.let_("act", expr!("layer_activations(l) + {kv}u * kt"));
    e.let_("first", "chunk * CHUNK");
    let sum = |k: u32, h: u32| name("c", (k, h));
    for h in 0..ov {
        e.var_init(name("cb_", h), "vec4<f32>(0.0)");
        for k in 0..tk {
            e.var_init(sum(k, h), "vec4<f32>(0.0)");
        }
    }
    e.open("for (var n = first; n < first + CHUNK; n++)");
    e.let_("d_row", "dz + n * d_stride");
    e.let_("a_row", "act + n * a_stride");
    for h in 0..ov {
        e.let_(name("d", h), expr!("scratch[d_row + {h}u]"));
        e.add(name("cb_", h), name("d", h));
    }
    for j in 0..kv {
        e.let_(name("a", j), expr!("scratch[a_row + {j}u]"));
    }
    for k in 0..tk {
        for h in 0..ov {
            e.add(sum(k, h), expr!("{} * {}.{}", name("d", h), name("a", k / 4), mlp_gen::component(k)));
        }
    }
    e.close();
    e.let_("out", "chunk * PL");
    e.let_("w", "out + layer_weights(l) + o0 * nin + k0");
    e.let_("b", "out + layer_biases(l) + o0");
    for o in 0..to {
        let (h, c) = (o / 4, o % 4);
        e.if_(expr!("o0 + {o}u < nout"));
        e.set_if("k0 == 0u", expr!("wpart[b + {o}u]"), expr!("{}[{c}]", name("cb_", h)));
        for k in 0..tk {
            e.set_if(expr!("k0 + {k}u < nin"), expr!("wpart[w + {o}u * nin + {k}u]"), expr!("{}[{c}]", sum(k, h)));
        }
        e.close();
    }
    e.close();
    e.finish()
}
