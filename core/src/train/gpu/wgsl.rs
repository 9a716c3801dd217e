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
use crate::model::wgsl::{self as mlp_gen, HiddenActivation, MlpPrecision, MlpShape, MlpWgsl, PackedLayer};
use std::fmt::Write as _;

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
    let mut text = String::from("// Specialised by texset (core/src/train/gpu/wgsl.rs).\n");
    for (name, value) in consts {
        let _ = writeln!(text, "const {name}: u32 = {value}u;");
    }
    let _ = writeln!(text, "const E4M3_MAX: f32 = {:?};", quant::E4M3_MAX);
    let _ = writeln!(text, "const ADAM_BETA1: f32 = {:?};", crate::train::adam::ADAM_BETA1);
    let _ = writeln!(text, "const ADAM_EPS: f32 = {:?};", crate::train::adam::ADAM_EPS);
    let _ = writeln!(text, "const LOD_INPUT_SCALE: f32 = {:?};", crate::model::LOD_INPUT_SCALE);
    // The weights' binding as the one MLP generator declares it for `memory`, and their copy
    // into workgroup memory where they go there. Generated, not a constant's branch: an entry
    // point binds every buffer its code names, even in a branch never taken.
    text.push_str(&weights_wgsl(shapes, memory));
    text.push_str(&packed_at_wgsl(&shapes.packed));
    // The layers with their shapes as literals (the tables' layer rows, in code).
    text.push_str(&LayerRow::wgsl());
    let rows: Vec<LayerRow> = tables.words[tables.layer_off as usize..tables.samples_off as usize]
        .chunks_exact(LayerRow::WORDS)
        .map(LayerRow::from_words)
        .collect();
    text.push_str(&gather_wgsl(&layout, shapes.tpi(), maxw));
    text.push_str(&mlp_gen::activation_functions(params.activation, MlpPrecision::F32));
    let dims = MlpDims { lf, oc, tpi: shapes.tpi(), maxw };
    let fused = shapes.fused();
    if let Some(plan) = fused {
        text.push_str(&plan.declaration());
    }
    text.push_str(&mlp_wgsl(&shapes.packed, mlp_shape, params.activation, &rows, dims, fused));
    if let Some(tile) = shapes.wgrad_tile() {
        text.push_str(&wgrad_wgsl(tile));
    }
    text.push_str(crate::model::MODEL_WGSL);
    text.push_str(TRAIN_WGSL);
    text
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
    let mut t = String::from("fn gather(first: u32) {\n");
    for p in 0..tpi {
        let base = (p * maxw) as usize;
        let _ = writeln!(t, "    let d{p} = draw(first + {p}u);\n    drawn[{p}u] = d{p};\n    let at{p} = texel_at(d{p}.x, d{p}.y);");
        let _ = writeln!(t, "    texel_masks[{p}u] = at{p}.mask_base;");
        for (gi, slot) in grids.iter().enumerate() {
            let _ = writeln!(t, "    let g{p}_{gi} = grid_at(at{p}.level, {gi}u, at{p}.uv);");
            let _ = writeln!(t, "    texel_grids[{}u] = g{p}_{gi};", p as usize * grids.len() + gi);
            for k in 0..slot.channels {
                // The latent channel: the mask's and the noise's index.
                let ch = slot.first_channel + k;
                if slot.corners {
                    for corner in 0..4 {
                        let at = base + slot.input(k, corner);
                        let _ =
                            writeln!(t, "    xa[{at}u] = latent_corner(first + {p}u, g{p}_{gi}, {k}u, {corner}u, {ch}u, at{p}.mask_base);");
                    }
                } else {
                    let at = base + slot.input(k, 0);
                    let _ = writeln!(t, "    xa[{at}u] = latent_feature(first + {p}u, g{p}_{gi}, {k}u, {ch}u, at{p}.mask_base);");
                }
            }
        }
        let _ = writeln!(t, "    let pos{p} = pe_position(at{p});");
        for k in 0..layout.pe_frequencies() {
            let _ = writeln!(t, "    let sx{p}_{k} = pe_sin_cos({k}u, pos{p}.x);\n    let sy{p}_{k} = pe_sin_cos({k}u, pos{p}.y);");
            for (j, value) in
                ["sx", "sx", "sy", "sy"].iter().zip([".x", ".y", ".x", ".y"]).map(|(v, c)| format!("{v}{p}_{k}{c}")).enumerate()
            {
                let _ = writeln!(t, "    xa[{}u] = {value};", base + layout.pe_input(k, j));
            }
        }
        if let Some(lod) = layout.lod_input() {
            let _ = writeln!(t, "    xa[{}u] = f32(at{p}.lod) * LOD_INPUT_SCALE;", base + lod);
        }
    }
    t.push_str("}\n");
    // The latent features' gradients (`xb`, as `mlp` leaves them) to the grids they were read from.
    t.push_str("fn scatter() {\n");
    for p in 0..tpi {
        let base = (p * maxw) as usize;
        let _ = writeln!(t, "    let mask{p} = texel_masks[{p}u];");
        for (gi, slot) in grids.iter().enumerate() {
            let _ = writeln!(t, "    let g{p}_{gi} = texel_grids[{}u];", p as usize * grids.len() + gi);
            for k in 0..slot.channels {
                let ch = slot.first_channel + k;
                if slot.corners {
                    for corner in 0..4 {
                        let at = base + slot.input(k, corner);
                        let _ = writeln!(t, "    scatter_corner(g{p}_{gi}, {k}u, {corner}u, xb[{at}u] * t_f(mask{p} + {ch}u));");
                    }
                } else {
                    let at = base + slot.input(k, 0);
                    let _ = writeln!(t, "    scatter_feature(g{p}_{gi}, {k}u, xb[{at}u] * t_f(mask{p} + {ch}u));");
                }
            }
        }
    }
    t.push_str("}\n");
    t
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
    let copy = if memory == WeightMemory::Workgroup {
        "    for (var k = lid; k < MLP_VEC4S; k += WG) {
        mlp[k] = vec4<f32>(fwdw[4u * k], fwdw[4u * k + 1u], fwdw[4u * k + 2u], fwdw[4u * k + 3u]);
    }
    workgroupBarrier();
"
    } else {
        ""
    };
    format!("{declaration}fn load_weights(lid: u32) {{\n{copy}}}\n")
}

/// `packed_at(l, o) -> vec2<u32>`: where `prepare` writes row `o` of layer `l` in `fwdw` (the
/// `f32` index of its first weight, and of its bias), the layers' places as literals.
fn packed_at_wgsl(layers: &[PackedLayer]) -> String {
    let mut t = String::from("fn packed_at(l: u32, o: u32) -> vec2<u32> {\n");
    let last = layers.len().saturating_sub(1);
    for (l, layer) in layers.iter().enumerate() {
        let is_last = l == last;
        let stride = 4 * layer.row_stride(is_last);
        let (row, bias) = layer.row_and_bias_at(0, is_last);
        let bias = if is_last { format!("{row}u + o * {stride}u + {}u", 4 * layer.row_vec4s) } else { format!("{bias}u + o") };
        let _ = writeln!(t, "    if l == {l}u {{\n        return vec2<u32>({row}u + o * {stride}u, {bias});\n    }}");
    }
    t.push_str("    return vec2<u32>(0u);\n}\n");
    t
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
/// (`x{texel}_{layer}_{j}`, `d{texel}_{layer}_{j}`), read by its literal name (lavapipe keeps
/// those in registers, where it reads an array indexed at run time lane by lane); each loop
/// iteration loads its weights once for all the invocation's texels.
fn mlp_wgsl(
    packed: &[PackedLayer],
    shape: MlpShape,
    act: Activation,
    rows: &[LayerRow],
    dims: MlpDims,
    fused: Option<&FusedPlan>,
) -> String {
    let MlpDims { lf, oc, tpi, maxw } = dims;
    let mut t = String::from("fn mlp_train(first: u32, lid: u32, chunk: u32) -> vec3<f32> {\n");
    let count = packed.len();
    for p in 0..tpi {
        let _ = writeln!(t, "    let out{p} = TARGET_OFF + drawn[{p}u].x * OC * 3u;\n    let tex{p} = drawn[{p}u].y;");
        if let Some(first) = packed.first() {
            for j in 0..first.row_vec4s {
                let value = |c: u32| if 4 * j + c < first.inputs { format!("xa[{}u]", p * maxw + 4 * j + c) } else { "0.0".into() };
                let _ = writeln!(t, "    let x{p}_0_{j} = vec4<f32>({}, {}, {}, {});", value(0), value(1), value(2), value(3));
            }
        }
    }
    // Forward: layer l's inputs x*_{l}_*, its outputs x*_{l+1}_* (ReLU but on the last).
    for (l, (layer, r)) in packed.iter().zip(rows).enumerate() {
        for p in (0..tpi).filter(|_| fused.is_none()) {
            let _ = writeln!(t, "    let act{l}_{p} = {}u + (first + {p}u) * {}u;", r.activations, row_vec4s(layer.inputs));
            store_row(&mut t, &format!("act{l}_{p}"), &format!("x{p}_{l}"), layer.row_vec4s, row_vec4s(layer.inputs));
        }
        if l + 1 < count {
            // `ReLU`'s backward pass gates on its outputs; another activation's reads the values
            // before it.
            let hidden = if act == Activation::Relu { HiddenActivation::Inline(act) } else { HiddenActivation::KeepPre(act) };
            mlp_gen::hidden_layer(&mut t, layer, l, tpi, shape, MlpPrecision::F32, hidden);
        } else {
            mlp_gen::last_layer(&mut t, layer, l, tpi, shape);
        }
    }
    // Loss: d*_{count-1}_* is dLoss/dy, four outputs to a `vec4`.
    let _ = writeln!(t, "    var sums = vec3<f32>(0.0);");
    for p in 0..tpi {
        for o in 0..oc {
            let _ = writeln!(
                t,
                "    let dy{p}_{o} = loss_grad(out{p}, tex{p}, {o}u, x{p}_{count}_{}.{}, &sums);",
                o / 4,
                mlp_gen::component(o)
            );
        }
        for g in 0..oc.div_ceil(4) {
            let value = |c: u32| if 4 * g + c < oc { format!("dy{p}_{}", 4 * g + c) } else { "0.0".into() };
            let _ = writeln!(t, "    let d{p}_{}_{g} = vec4<f32>({}, {}, {}, {});", count - 1, value(0), value(1), value(2), value(3));
        }
    }
    // Backward: layer l's output gradient d*_{l}_*, its input gradient d*_{l-1}_* (through the
    // activation: masked where ReLU's input was not positive, or times the derivative at the
    // values before it, z*_{l}_*); the first layer's only for the latent features.
    for (l, (layer, r)) in packed.iter().zip(rows).enumerate().rev() {
        if let Some(plan) = fused {
            plan.layer_gradient(&mut t, l, layer.row_vec4s, tpi, r.weights, r.biases);
        }
        for p in (0..tpi).filter(|_| fused.is_none()) {
            let _ = writeln!(t, "    let dz{l}_{p} = {}u + (first + {p}u) * {}u;", r.output_grads, row_vec4s(layer.outputs));
            store_row(&mut t, &format!("dz{l}_{p}"), &format!("d{p}_{l}"), layer.outputs.div_ceil(4), row_vec4s(layer.outputs));
        }
        let inputs = if l == 0 { lf.min(layer.inputs) } else { layer.inputs };
        if inputs == 0 {
            continue;
        }
        mlp_gen::layer_backward(&mut t, layer, l, tpi, l + 1 == count, inputs, shape);
        for p in 0..tpi {
            if l == 0 {
                for k in 0..inputs {
                    let _ = writeln!(t, "    xb[{}u] = gin{p}_0_{}.{};", p * maxw + k, k / 4, mlp_gen::component(k));
                }
            } else {
                for j in 0..inputs.div_ceil(4) {
                    let (g, z, a) = (format!("gin{p}_{l}_{j}"), format!("z{p}_{l}_{j}"), format!("x{p}_{l}_{j}"));
                    let _ = writeln!(t, "    let d{p}_{}_{j} = {};", l - 1, mlp_gen::activation_backward(act, &g, &z, &a));
                }
            }
        }
    }
    t.push_str("    return sums;\n}\n");
    t
}

/// The statements that store the named `vec4`s `{name}_0..{name}_{named}` to the scratch row at
/// `row`, then zeros to its `width` `vec4`s ([`row_vec4s`]).
fn store_row(t: &mut String, row: &str, name: &str, named: u32, width: u32) {
    for j in 0..width {
        let value = if j < named { format!("{name}_{j}") } else { "vec4<f32>(0.0)".into() };
        let _ = writeln!(t, "    scratch[{row} + {j}u] = {value};");
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
    let mut t = String::new();
    let _ = writeln!(
        t,
        "@compute @workgroup_size(WG)
fn wgrad(@builtin(global_invocation_id) gid: vec3<u32>) {{
    var t = gid.x;
    let chunk = gid.y;
    if t >= TILES {{
        return;
    }}
    var l = 0u;
    loop {{
        let tiles = ((layer_outputs(l) + {m}u) / {to}u) * ((layer_inputs(l) + {n}u) / {tk}u);
        if t < tiles || l + 1u >= LAYERS {{
            break;
        }}
        t -= tiles;
        l += 1u;
    }}
    let nin = layer_inputs(l);
    let nout = layer_outputs(l);
    let k_tiles = (nin + {n}u) / {tk}u;
    let ot = t / k_tiles;
    let kt = t % k_tiles;
    let o0 = ot * {to}u;
    let k0 = kt * {tk}u;
    // Rows are whole pairs of `vec4`s (`row_vec4s`).
    let d_stride = 2u * ((nout + 7u) / 8u);
    let a_stride = 2u * ((nin + 7u) / 8u);
    let dz = layer_output_grads(l) + {ov}u * ot;
    let act = layer_activations(l) + {kv}u * kt;
    let first = chunk * CHUNK;",
        m = to - 1,
        n = tk - 1
    );
    for h in 0..ov {
        let _ = write!(t, "    var cb_{h} = vec4<f32>(0.0);");
        for k in 0..tk {
            let _ = write!(t, " var c{k}_{h} = vec4<f32>(0.0);");
        }
        t.push('\n');
    }
    t.push_str("    for (var n = first; n < first + CHUNK; n++) {\n        let d_row = dz + n * d_stride;\n        let a_row = act + n * a_stride;\n");
    for h in 0..ov {
        let _ = writeln!(t, "        let d{h} = scratch[d_row + {h}u];\n        cb_{h} += d{h};");
    }
    for j in 0..kv {
        let _ = writeln!(t, "        let a{j} = scratch[a_row + {j}u];");
    }
    for k in 0..tk {
        let comp = ["x", "y", "z", "w"][(k % 4) as usize];
        let _ = write!(t, "       ");
        for h in 0..ov {
            let _ = write!(t, " c{k}_{h} += d{h} * a{}.{comp};", k / 4);
        }
        t.push('\n');
    }
    t.push_str(
        "    }\n    let out = chunk * PL;\n    let w = out + layer_weights(l) + o0 * nin + k0;\n    let b = out + layer_biases(l) + o0;\n",
    );
    for o in 0..to {
        let (h, c) = (o / 4, o % 4);
        let _ = writeln!(t, "    if o0 + {o}u < nout {{");
        let _ = writeln!(t, "        if k0 == 0u {{ wpart[b + {o}u] = cb_{h}[{c}]; }}");
        for k in 0..tk {
            let _ = writeln!(t, "        if k0 + {k}u < nin {{ wpart[w + {o}u * nin + {k}u] = c{k}_{h}[{c}]; }}");
        }
        t.push_str("    }\n");
    }
    t.push_str("}\n");
    t
}
