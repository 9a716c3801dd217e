//! The GPU trainer's WGSL: `train.wgsl` specialised to a model and library, with the constants,
//! flags and generated functions (`weight`, `load_weights`, `mlp`) the host and the shader share.

use super::layout::{Shapes, Tables, WeightMemory, row_vec4s};
use crate::model::params::ModelParams;
use crate::model::quant::{self, WeightFormat};
use crate::train::sampler::CHUNK_TEXELS;
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
        ("CHUNK", CHUNK_TEXELS as u32),
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
    let _ = writeln!(text, "const HAS_LOD: bool = {};", params.pyramid_levels() > 1);
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
    text.push_str(&mlp_wgsl(&rows, lc, oc, shapes.tpi(), maxw));
    text.push_str(crate::model::MODEL_WGSL);
    text.push_str(TRAIN_WGSL);
    text
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
