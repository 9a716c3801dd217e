//! The GPU trainer's WGSL: `train.wgsl` specialised to a model and library, with the constants,
//! flags and generated code (`weight`, `load_weights`, `gather`, `scatter`, `mlp` and the `wgrad`
//! entry point) the host and the shader share.

use super::layout::{Shapes, Tables, WeightMemory, WgradTile, row_vec4s};
use crate::model::params::ModelParams;
use crate::model::quant::{self, WeightFormat};
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
pub(super) fn specialise(params: &ModelParams, shapes: &Shapes, tables: &Tables, memory: WeightMemory, adam_row: u32) -> String {
    let lc = params.latent_channels() as u32;
    let oc = params.output_channels() as u32;
    let widths = shapes.layers.iter().flat_map(|&(i, o)| [i, o]);
    let maxw = widths.chain([params.mlp_inputs() as u32, 1]).max().unwrap_or(1);
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
        ("WSH_LEN", if memory == WeightMemory::Workgroup { shapes.layer_total.max(1) } else { 1 }),
        ("WU_LEN", shapes.uniform_vec4s()),
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
    ];
    let mut text = String::from("// Specialised by texset (core/src/train/gpu/wgsl.rs).\n");
    for (name, value) in consts {
        let _ = writeln!(text, "const {name}: u32 = {value}u;");
    }
    let _ = writeln!(text, "const E4M3_MAX: f32 = {:?};", quant::E4M3_MAX);
    // Generated, not a constant's branch: an entry point binds every buffer its code names, even
    // in a branch never taken, and `fwdw` cannot be bound as storage and as uniform at once.
    let (read, load) = match memory {
        WeightMemory::Uniform => ("weight_uniform(i)", ""),
        WeightMemory::Workgroup => ("weight_workgroup(i)", "copy_weights_to_workgroup(lid);"),
        WeightMemory::Storage => ("weight_storage(i)", ""),
    };
    let _ = writeln!(text, "fn weight(i: u32) -> f32 {{ return {read}; }}");
    let _ = writeln!(text, "fn load_weights(lid: u32) {{ {load} }}");
    // The layers with their shapes as literals (the tables' layer rows, in code).
    let rows: Vec<&[u32]> = tables.words[tables.layer_off as usize..tables.samples_off as usize].chunks_exact(6).collect();
    let channels: Vec<u32> = params.grids.iter().map(|g| g.channels).collect();
    text.push_str(&gather_wgsl(&channels, params.pe_frequencies, params.pyramid_levels() > 1, shapes.tpi(), maxw));
    text.push_str(&mlp_wgsl(&rows, lc, oc, shapes.tpi(), maxw));
    text.push_str(&wgrad_wgsl(shapes.wgrad_tile));
    text.push_str(crate::model::MODEL_WGSL);
    text.push_str(TRAIN_WGSL);
    text
}

/// `gather(first)`: draws texels `first..first + tpi` (`drawn`) and writes their features to `xa`
/// (texel t's at t · maxw): per grid (`channels`), its latent features, then the positional
/// encoding's `pe` frequencies and, with a pyramid, the LOD input; and `scatter()`, which adds the
/// latent features' gradients (`xb`) to the grid cells they were read from. Every feature is
/// stored and read at a literal index, and each texel's grids are located once for both: lavapipe
/// stores to a private array at an index known only at run time by a select over the whole array.
/// Generated, the two took `fwd_bwd` from 340 to 327 ms per 65,536-texel step of the default
/// model on lavapipe (loops over the grids and channels in the shader before).
fn gather_wgsl(channels: &[u32], pe: u32, has_lod: bool, tpi: u32, maxw: u32) -> String {
    let mut t = String::from("fn gather(first: u32) {\n");
    let lc: u32 = channels.iter().sum();
    for p in 0..tpi {
        let base = p * maxw;
        let _ = writeln!(t, "    let d{p} = draw(first + {p}u);\n    drawn[{p}u] = d{p};\n    let at{p} = texel_at(d{p}.x, d{p}.y);");
        let _ = writeln!(t, "    texel_masks[{p}u] = at{p}.mask_base;");
        let mut feature = 0;
        for (gi, &c) in channels.iter().enumerate() {
            let _ = writeln!(t, "    let g{p}_{gi} = grid_at(at{p}.level, {gi}u, at{p}.uv);");
            let _ = writeln!(t, "    texel_grids[{}u] = g{p}_{gi};", p as usize * channels.len() + gi);
            for k in 0..c {
                let f = feature + k;
                let _ = writeln!(t, "    xa[{}u] = latent_feature(first + {p}u, g{p}_{gi}, {k}u, {f}u, at{p}.mask_base);", base + f);
            }
            feature += c;
        }
        let _ = writeln!(t, "    let pos{p} = pe_position(at{p});");
        for k in 0..pe {
            let at = base + lc + 4 * k;
            let _ = writeln!(t, "    let sx{p}_{k} = pe_sin_cos({k}u, pos{p}.x);\n    let sy{p}_{k} = pe_sin_cos({k}u, pos{p}.y);");
            let _ = writeln!(
                t,
                "    xa[{at}u] = sx{p}_{k}.x;\n    xa[{}u] = sx{p}_{k}.y;\n    xa[{}u] = sy{p}_{k}.x;\n    xa[{}u] = sy{p}_{k}.y;",
                at + 1,
                at + 2,
                at + 3
            );
        }
        if has_lod {
            let _ = writeln!(t, "    xa[{}u] = f32(at{p}.lod) * LOD_INPUT_SCALE;", base + lc + 4 * pe);
        }
    }
    t.push_str("}\n");
    // The latent features' gradients (`xb`, as `mlp` leaves them) to the grids they were read from.
    t.push_str("fn scatter() {\n");
    for p in 0..tpi {
        let _ = writeln!(t, "    let mask{p} = texel_masks[{p}u];");
        let mut feature = 0;
        for (gi, &c) in channels.iter().enumerate() {
            let _ = writeln!(t, "    let g{p}_{gi} = texel_grids[{}u];", p as usize * channels.len() + gi);
            for k in 0..c {
                let f = feature + k;
                let _ = writeln!(t, "    scatter_feature(g{p}_{gi}, {k}u, xb[{}u] * t_f(mask{p} + {f}u));", p * maxw + f);
            }
            feature += c;
        }
    }
    t.push_str("}\n");
    t
}

/// `mlp(first) -> vec3<f32>`: the forward pass of texels `first..first + tpi` from their features
/// in `xa` (texel t's at t · maxw), their loss (`loss_grad` per texel and output; the loss sums
/// returned) and backward pass, ending with the latent features' gradient in `xb` (at t · maxw,
/// `lc` of them); every layer's input row and output-gradient row go to the scratch (`rows`: the
/// tables' layer rows: inputs, outputs, weights, biases, input rows, gradient rows).
///
/// Every activation is a named value (`x{texel}_{layer}_{index}`, `d{texel}_{layer}_{index}`),
/// read by its literal name: lavapipe keeps those in registers, where it reads an array indexed at
/// run time lane by lane. The loops run over one layer's outputs (forward) or inputs (backward),
/// each iteration loading its weights once (`w{index}`) for one sum per texel, unrolled over the
/// other side, its result stored to the texel's row of `ob`: the shader compiles in seconds (a
/// fully unrolled MLP took lavapipe minutes). lavapipe loads a uniform-buffer value at an address
/// that depends on a loop counter lane by lane (only a constant address is one load, broadcast):
/// that load, not the multiply-add, is the cost the texels share.
fn mlp_wgsl(rows: &[&[u32]], lc: u32, oc: u32, tpi: u32, maxw: u32) -> String {
    let mut t = String::from("fn mlp(first: u32) -> vec3<f32> {\n");
    let count = rows.len();
    for p in 0..tpi {
        let _ = writeln!(t, "    let out{p} = TARGET_OFF + drawn[{p}u].x * OC * 3u;\n    let tex{p} = drawn[{p}u].y;");
        if let Some(first) = rows.first() {
            for k in 0..first[0] {
                let _ = writeln!(t, "    let x{p}_0_{k} = xa[{}u];", p * maxw + k);
            }
        }
    }
    // Forward: layer l's inputs x*_{l}_*, its outputs x*_{l+1}_* (ReLU but on the last).
    for (l, r) in rows.iter().enumerate() {
        let (nin, nout, w, b, act) = (r[0], r[1], r[2], r[3], r[4]);
        for p in 0..tpi {
            let _ = writeln!(t, "    let act{l}_{p} = {act}u + (first + {p}u) * {}u;", row_vec4s(nin));
            store_row(&mut t, &format!("act{l}_{p}"), &format!("x{p}_{l}"), nin);
        }
        let _ = writeln!(t, "    for (var q = 0u; q < {nout}u; q++) {{\n        let r = {w}u + q * {nin}u;");
        let _ = writeln!(t, "        let b = weight({b}u + q);");
        for k in 0..nin {
            let _ = writeln!(t, "        let w{k} = weight(r + {k}u);");
        }
        for p in 0..tpi {
            let _ = write!(t, "        let s{p} = b");
            for k in 0..nin {
                let _ = write!(t, " + w{k} * x{p}_{l}_{k}");
            }
            let out = if l + 1 < count { format!("max(s{p}, 0.0)") } else { format!("s{p}") };
            let _ = writeln!(t, ";\n        ob[{p}u][q] = {out};");
        }
        t.push_str("    }\n");
        for p in 0..tpi {
            for q in 0..nout {
                let _ = writeln!(t, "    let x{p}_{}_{q} = ob[{p}u][{q}u];", l + 1);
            }
        }
    }
    // Loss: d*_{count-1}_* is dLoss/dy.
    let _ = writeln!(t, "    var sums = vec3<f32>(0.0);");
    for p in 0..tpi {
        for o in 0..oc {
            let _ = writeln!(t, "    let d{p}_{}_{o} = loss_grad(out{p}, tex{p}, {o}u, x{p}_{count}_{o}, &sums);", count - 1);
        }
    }
    // Backward: layer l's output gradient d*_{l}_*, its input gradient d*_{l-1}_* (masked where
    // the ReLU input was not positive); the first layer's only for the latent features.
    for (l, r) in rows.iter().enumerate().rev() {
        let (nin, nout, w, dz) = (r[0], r[1], r[2], r[5]);
        for p in 0..tpi {
            let _ = writeln!(t, "    let dz{l}_{p} = {dz}u + (first + {p}u) * {}u;", row_vec4s(nout));
            store_row(&mut t, &format!("dz{l}_{p}"), &format!("d{p}_{l}"), nout);
        }
        let inputs = if l == 0 { lc.min(nin) } else { nin };
        if inputs == 0 {
            continue;
        }
        let _ = writeln!(t, "    for (var k = 0u; k < {inputs}u; k++) {{");
        for q in 0..nout {
            let _ = writeln!(t, "        let w{q} = weight({}u + k);", w + q * nin);
        }
        for p in 0..tpi {
            let _ = write!(t, "        ob[{p}u][k] = 0.0");
            for q in 0..nout {
                let _ = write!(t, " + w{q} * d{p}_{l}_{q}");
            }
            t.push_str(";\n");
        }
        t.push_str("    }\n");
        if l == 0 {
            for p in 0..tpi {
                for k in 0..inputs {
                    let _ = writeln!(t, "    xb[{}u] = ob[{p}u][{k}u];", p * maxw + k);
                }
            }
        } else {
            for p in 0..tpi {
                for k in 0..nin {
                    let _ = writeln!(t, "    let d{p}_{}_{k} = select(0.0, ob[{p}u][{k}u], x{p}_{l}_{k} > 0.0);", l - 1);
                }
            }
        }
    }
    t.push_str("    return sums;\n}\n");
    t
}

/// The statements that store the named values `{name}_0..{name}_{count}` to the scratch row at
/// `row` ([`row_vec4s`]), four to a `vec4`, the rest zeros.
fn store_row(t: &mut String, row: &str, name: &str, count: u32) {
    for j in 0..row_vec4s(count) {
        let value = |c: u32| if 4 * j + c < count { format!("{name}_{}", 4 * j + c) } else { "0.0".into() };
        let _ = writeln!(t, "    scratch[{row} + {j}u] = vec4<f32>({}, {}, {}, {});", value(0), value(1), value(2), value(3));
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
        let lb = LAYER_OFF + l * 6u;
        let tiles = ((t_u(lb + 1u) + {m}u) / {to}u) * ((t_u(lb) + {n}u) / {tk}u);
        if t < tiles || l + 1u >= LAYERS {{
            break;
        }}
        t -= tiles;
        l += 1u;
    }}
    let lb = LAYER_OFF + l * 6u;
    let nin = t_u(lb);
    let nout = t_u(lb + 1u);
    let k_tiles = (nin + {n}u) / {tk}u;
    let ot = t / k_tiles;
    let kt = t % k_tiles;
    let o0 = ot * {to}u;
    let k0 = kt * {tk}u;
    // Rows are whole pairs of `vec4`s (`row_vec4s`).
    let d_stride = 2u * ((nout + 7u) / 8u);
    let a_stride = 2u * ((nin + 7u) / 8u);
    let dz = t_u(lb + 5u) + {ov}u * ot;
    let act = t_u(lb + 4u) + {kv}u * kt;
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
    t.push_str("    }\n    let out = chunk * PL;\n    let w = out + t_u(lb + 2u) + o0 * nin + k0;\n    let b = out + t_u(lb + 3u) + o0;\n");
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
