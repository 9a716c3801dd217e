//! The fused GPU trainer: WGSL through wgpu (any Vulkan, Metal or DX12 adapter), every step five
//! dispatches over buffers that stay on the device (`train.wgsl` says what each does). It is one
//! more [`Trainer`] in the one loop ([`run`]); the loop's snapshots and checkpoints are its only
//! read-backs of the model, and the loss comes back through an asynchronous ring every
//! [`STATS_RING`] steps.
//!
//! Determinism: texels and noise come from a counter-based hash of (seed, step, texel); weight
//! gradients are summed over fixed chunks in order, latent gradients in 32.32 fixed point with
//! integer atomics (exact, so their order does not matter): a seed gives the same bundle on the
//! same device, run through or resumed.

use crate::io::fault::{self, Fault};
use crate::model::layout::ModelLayout;
use crate::model::params::ModelParams;
use crate::model::quant::{self, WeightFormat};
use crate::options::CompressOptions;
use crate::progress::{Cancel, Progress, TrainPhase};
use crate::set::TextureSet;
use crate::train::TrainError;
use crate::train::adam::{ADAM_BETA1, ADAM_BETA2};
use crate::train::init::starting_params;
use crate::train::run::{Capabilities, LoopOptions, StepStats, TimeBudget, TrainReport, Trainer, fit_time_budget, run};
use crate::train::sampler::{CHUNK_TEXELS, Sampler};
use crate::train::schedule::{Schedule, round_grids};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::{Arc, Mutex, mpsc};

mod device;

use device::Gpu;
pub use device::share_device;

/// The WGSL of the trainer, before the host's constants are prepended.
pub const TRAIN_WGSL: &str = include_str!("train.wgsl");

/// Steps whose loss sums one asynchronous read-back brings.
pub const STATS_RING: u32 = 16;

const WORKGROUP: u32 = 64;
const FLAG_GIVEN_SAMPLES: u32 = 1;
const FLAG_NOISE: u32 = 2;
const FLAG_TRAIN_GRIDS: u32 = 4;
const FLAG_INT8: u32 = 8;
const FLAG_FP16: u32 = 16;
const FLAG_E4M3: u32 = 32;
const FLAG_MXINT8: u32 = 64;
/// Workgroups a dispatch has along x at most (WebGPU's guaranteed 65,535).
const MAX_GROUPS_X: u32 = 65_535;

/// What the per-step uniform holds (`Step` in train.wgsl).
#[derive(Clone, Copy, Debug, Default)]
struct StepUniform {
    step: u32,
    seed: u64,
    flags: u32,
    noise_amplitude: f32,
    lr_grid: f32,
    lr_mlp: f32,
    c1: f32,
    c2: f32,
    grad_scale: f32,
    stats_slot: u32,
}

impl StepUniform {
    fn bytes(&self) -> Vec<u8> {
        let words: [u32; 12] = [
            self.step,
            self.seed as u32,
            (self.seed >> 32) as u32,
            self.flags,
            self.noise_amplitude.to_bits(),
            self.lr_grid.to_bits(),
            self.lr_mlp.to_bits(),
            self.c1.to_bits(),
            self.c2.to_bits(),
            self.grad_scale.to_bits(),
            self.stats_slot,
            0,
        ];
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }
}

/// The model's shapes as the trainer lays them out: one flat parameter array (every grid of every
/// level, then per layer its weights and biases: the checkpoint's order).
#[derive(Clone, Debug)]
struct Shapes {
    /// Texels per step.
    batch: u32,
    /// Values of every grid of every level.
    grid_total: u32,
    /// Weights and biases of every layer.
    layer_total: u32,
    /// Rows (outputs) of every layer.
    rows: u32,
    /// Per layer (inputs, outputs).
    layers: Vec<(u32, u32)>,
    /// `vec4`s of the per-texel scratch.
    scratch: u64,
}

impl Shapes {
    fn new(params: &ModelParams, batch: usize) -> Result<Self, TrainError> {
        let too_big = |what: &str| TrainError::Gpu(format!("the model's {what} exceed what the GPU trainer addresses (2³² values)"));
        let grid_total = u32::try_from(params.all_grids().map(crate::model::params::GridParams::len).sum::<usize>())
            .map_err(|_| too_big("latent grids"))?;
        let layer_total =
            u32::try_from(params.layers.iter().map(|l| l.weights.len() + l.biases.len()).sum::<usize>()).map_err(|_| too_big("layers"))?;
        let layers: Vec<(u32, u32)> = params.layers.iter().map(|l| (l.inputs as u32, l.outputs as u32)).collect();
        let rows = layers.iter().map(|l| l.1).sum();
        let per_texel: u64 = layers.iter().map(|&(i, o)| u64::from(row_vec4s(i)) + u64::from(row_vec4s(o))).sum();
        let batch = u32::try_from(batch).map_err(|_| too_big("batch texels"))?;
        Ok(Self { batch, grid_total, layer_total, rows, layers, scratch: per_texel * u64::from(batch) })
    }

    fn chunks(&self) -> u32 {
        self.batch / CHUNK_TEXELS as u32
    }

    /// `wgrad`'s invocations per chunk: per layer, 8×8 tiles of its weights plus a column of
    /// bias tiles.
    fn tiles(&self) -> u32 {
        self.layers.iter().map(|&(i, o)| o.div_ceil(8) * (i.div_ceil(8) + 1)).sum()
    }

    fn all(&self) -> u32 {
        self.grid_total + self.layer_total
    }

    /// Texels each `fwd_bwd` invocation trains: 2 where the batch is whole workgroups of pairs.
    /// Each weight the generated `mlp` loads then serves two texels; 4 took the default model's
    /// step from 34 to 28 ms on lavapipe but its compile from 8 to 23 s (2: from 2.5 s at 1).
    fn tpi(&self) -> u32 {
        if self.batch.is_multiple_of(2 * WORKGROUP) { 2 } else { 1 }
    }

    /// The weights and biases as a uniform buffer's `vec4`s.
    fn uniform_vec4s(&self) -> u32 {
        self.layer_total.div_ceil(4).max(1)
    }
}

/// Offsets of the tables in the `tables` buffer, and the constants the shader is specialised with.
#[derive(Clone, Debug)]
struct Tables {
    words: Vec<u32>,
    texels: Vec<f32>,
    groups: u32,
    total_draws: u32,
    group_off: u32,
    cum_off: u32,
    target_off: u32,
    mask_off: u32,
    grid_off: u32,
    layer_off: u32,
    samples_off: u32,
}

impl Tables {
    fn new(sampler: &Sampler<'_>, params: &ModelParams, shapes: &Shapes) -> Result<Self, TrainError> {
        let table = sampler.draw_table();
        let lc = params.latent_channels();
        let too_big = |what: &str| TrainError::Gpu(format!("the library's {what} exceed what the GPU trainer addresses (2³²)"));
        let total_draws = u32::try_from(sampler.texel_count()).map_err(|_| too_big("texel draws"))?;
        let mut words = Vec::new();
        let mut texels: Vec<f32> = Vec::new();
        // Groups: width, height, LOD level, repeats (their masks follow in the same order).
        let group_off = 0u32;
        let oc = params.output_channels();
        // Per group and output channel: first value of its channel in `texels`, the stride between
        // texels and the loss weight (0: not targeted).
        let mut targets = vec![0u32; table.len() * oc * 3];
        for (g, group) in table.iter().enumerate() {
            for t in &group.targets {
                let data = texels.len();
                texels.extend_from_slice(t.data);
                for c in 0..t.channels {
                    let o = t.output_offset + c;
                    if o < oc {
                        let at = (g * oc + o) * 3;
                        targets[at] = u32::try_from(data + c).map_err(|_| too_big("reference texels"))?;
                        targets[at + 1] = t.channels as u32;
                        targets[at + 2] = t.weights.get(c).copied().unwrap_or(0.0).to_bits();
                    }
                }
            }
            let repeats = u32::try_from(group.repeats).map_err(|_| too_big("mip draw weights"))?;
            words.extend([group.width, group.height, params.lod_level(group.level), repeats]);
        }
        let cum_off = words.len() as u32;
        let mut total = 0u64;
        for group in &table {
            total += u64::from(group.width) * u64::from(group.height) * group.repeats;
            words.push(u32::try_from(total).map_err(|_| too_big("texel draws"))?);
        }
        let target_off = words.len() as u32;
        words.extend_from_slice(&targets);
        let mask_off = words.len() as u32;
        for group in &table {
            words.extend(group.mask.iter().take(lc).map(|m| m.to_bits()));
        }
        // Grids: channels per grid, then per level per grid (first value, width, height).
        let grid_off = words.len() as u32;
        words.extend(params.grids.iter().map(|g| g.channels));
        let mut base = 0u32;
        for grid in params.all_grids() {
            words.extend([base, grid.width, grid.height]);
            base += grid.len() as u32;
        }
        // Layers: inputs, outputs, weights, biases (offsets in the layer region), scratch offsets
        // of the input rows and of the output-gradient rows, in `vec4`s ([`row_vec4s`]).
        let layer_off = words.len() as u32;
        let (mut at, mut scratch) = (0u32, 0u64);
        for &(inputs, outputs) in &shapes.layers {
            let act = scratch;
            scratch += u64::from(row_vec4s(inputs)) * u64::from(shapes.batch);
            let dz = scratch;
            scratch += u64::from(row_vec4s(outputs)) * u64::from(shapes.batch);
            let act = u32::try_from(act).map_err(|_| too_big("activations"))?;
            let dz = u32::try_from(dz).map_err(|_| too_big("activations"))?;
            words.extend([inputs, outputs, at, at + inputs * outputs, act, dz]);
            at += inputs * outputs + outputs;
        }
        let samples_off = words.len() as u32;
        words.resize(words.len() + 2 * shapes.batch as usize, 0);
        Ok(Self {
            words,
            texels,
            groups: table.len() as u32,
            total_draws,
            group_off,
            cum_off,
            target_off,
            mask_off,
            grid_off,
            layer_off,
            samples_off,
        })
    }
}

/// Where `fwd_bwd` reads the layers' weights from: the fastest memory the adapter fits them in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightMemory {
    /// A uniform buffer (`fwdw` bound again as `wu`): every invocation reads the same weight at
    /// once, which a GPU's constant path serves best; lavapipe loads a uniform buffer's values
    /// lane by lane too, but without the branch and bounds check per lane of a storage load
    /// (with the generated `mlp`, together: the default model's step from 111 to 60 ms).
    Uniform,
    /// Workgroup memory, copied from `fwdw` by each workgroup.
    Workgroup,
    /// The storage buffer `fwdw`.
    Storage,
}

impl WeightMemory {
    /// The fastest memory `limits` let the weights of `shapes` go to.
    fn for_limits(shapes: &Shapes, limits: &wgpu::Limits) -> Self {
        let uniform_bytes = u64::from(shapes.uniform_vec4s()) * 16;
        // Beside the loss reduction's workgroup memory.
        let workgroup_bytes = u64::from(shapes.layer_total) * 4 + u64::from(WORKGROUP) * 16;
        if uniform_bytes <= limits.max_uniform_buffer_binding_size {
            Self::Uniform
        } else if workgroup_bytes <= u64::from(limits.max_compute_workgroup_storage_size) {
            Self::Workgroup
        } else {
            Self::Storage
        }
    }

    /// Its name, as the bench prints it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Uniform => "uniform",
            Self::Workgroup => "workgroup",
            Self::Storage => "storage",
        }
    }
}

/// The trainer's WGSL specialised to a model and library: constants and the generated `weight`,
/// `load_weights` and `mlp` prepended to `train.wgsl`.
fn specialise(params: &ModelParams, shapes: &Shapes, tables: &Tables, memory: WeightMemory, adam_row: u32) -> String {
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
        ("MX_BLOCK", quant::MX_BLOCK as u32),
        ("MIP_GROUP", params.mip_group()),
    ];
    let mut text = String::from("// Specialised by texset (core/src/train/gpu/mod.rs).\n");
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

/// `vec4`s of a scratch row of `width` values: whole pairs, zero-padded, so a row is stored and
/// read four values to an access and `wgrad`'s 8-wide tiles read whole pairs.
fn row_vec4s(width: u32) -> u32 {
    2 * width.div_ceil(8)
}

/// The statements that store the named values `{name}_0..{name}_{count}` to the scratch row at
/// `row` ([`row_vec4s`]), four to a `vec4`, the rest zeros.
fn store_row(t: &mut String, row: &str, name: &str, count: u32) {
    for j in 0..row_vec4s(count) {
        let value = |c: u32| if 4 * j + c < count { format!("{name}_{}", 4 * j + c) } else { "0.0".into() };
        let _ = writeln!(t, "    scratch[{row} + {j}u] = vec4<f32>({}, {}, {}, {});", value(0), value(1), value(2), value(3));
    }
}

/// A dispatch's workgroups for `count` invocations of 64 in rows of at most [`MAX_GROUPS_X`]:
/// (x, y) and the invocations a row holds.
fn spread(count: u32) -> (u32, u32, u32) {
    let groups = count.div_ceil(WORKGROUP).max(1);
    let x = groups.min(MAX_GROUPS_X);
    (x, groups.div_ceil(x), x * WORKGROUP)
}

/// What one step of the GPU trainer costs ([`GpuTrainer::step_cost`]): counted, not measured.
#[derive(Clone, Copy, Debug)]
pub struct StepCost {
    /// Compute dispatches.
    pub dispatches: u32,
    /// Floating-point operations.
    pub flop: f64,
    /// Bytes to and from device memory, at least (caches aside).
    pub bytes: f64,
}

/// How far [`GpuTrainer::dispatch`] goes into a step.
#[derive(Clone, Copy, Debug)]
enum Until {
    /// `prepare` only.
    ForwardWeights,
    /// Up to the gradients and the loss sums, without Adam.
    Gradients,
    /// The whole step.
    Update,
}

/// A read-back of the stats ring in flight.
struct PendingStats {
    receiver: mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>,
}

/// The fused GPU trainer.
pub struct GpuTrainer<'a> {
    gpu: Gpu,
    sampler: Sampler<'a>,
    schedule: Schedule,
    shapes: Shapes,
    /// Zeros of the model's shapes: what read-backs fill.
    template: ModelParams,
    step: u32,
    adam_t: u32,
    /// The latest per-channel MSE the ring brought back.
    last_mse: f32,
    pending: Option<PendingStats>,
    /// Fault injection: the step a simulated device loss happens at.
    lost_at_step: Option<u32>,
    /// Where `fwd_bwd` reads the weights from.
    weight_memory: WeightMemory,
    /// The uncaptured error the device reported, if any (device lost, out of memory, …).
    error: Arc<Mutex<Option<String>>>,
}

impl<'a> GpuTrainer<'a> {
    /// Opens a device on the default adapter, uploads the library and the starting `params`, and
    /// compiles the trainer specialised to them.
    pub fn new(sampler: Sampler<'a>, schedule: Schedule, params: &ModelParams) -> Result<Self, TrainError> {
        Self::with_weight_memory(sampler, schedule, params, None)
    }

    /// As [`Self::new`], with the weights in `memory` instead of the fastest memory the
    /// adapter's limits allow (`None`): what lets the parity tests run every variant on one
    /// adapter. An error when the weights do not fit `memory` on this adapter.
    pub fn with_weight_memory(
        sampler: Sampler<'a>,
        schedule: Schedule,
        params: &ModelParams,
        memory: Option<WeightMemory>,
    ) -> Result<Self, TrainError> {
        if fault::is_active(Fault::GpuNoAdapter) {
            return Err(TrainError::Gpu("no GPU adapter (simulated: TEXSET_FAULT=gpu-no-adapter)".into()));
        }
        if fault::is_active(Fault::GpuDevice) {
            return Err(TrainError::Gpu("the adapter failed to create a device (simulated: TEXSET_FAULT=gpu-device)".into()));
        }
        let shapes = Shapes::new(params, schedule.batch_texels)?;
        let tables = Tables::new(&sampler, params, &shapes)?;
        let error = Arc::new(Mutex::new(None));
        let gpu = Gpu::open(&error)?;
        let limits = gpu.device.limits();
        let fastest = WeightMemory::for_limits(&shapes, &limits);
        let weight_memory = match memory {
            None => fastest,
            // The variants go from fastest to slowest, and each fits where the one before does.
            Some(m) if m as u8 >= fastest as u8 => m,
            Some(m) => return Err(TrainError::Gpu(format!("the decoder's weights do not fit {} memory on this adapter", m.name()))),
        };
        let (_, _, adam_row) = spread(shapes.all());
        let wgsl = specialise(params, &shapes, &tables, weight_memory, adam_row);
        let mut flat = Vec::with_capacity(shapes.all() as usize);
        flatten(params, &mut flat);
        let gpu = gpu.build(&wgsl, &tables, &shapes, &flat, weight_memory)?;
        let template = params.zeros_like();
        let lost_at_step = fault::gpu_lost_at_step();
        Ok(Self {
            gpu,
            sampler,
            schedule,
            shapes,
            template,
            step: 0,
            adam_t: 0,
            last_mse: f32::NAN,
            pending: None,
            lost_at_step,
            weight_memory,
            error,
        })
    }

    /// The adapter's name and backend.
    #[must_use]
    pub fn adapter(&self) -> String {
        self.gpu.adapter_name.clone()
    }

    /// Where the forward and backward passes read the layers' weights from (the adapter's limits
    /// decide).
    #[must_use]
    pub fn weight_memory(&self) -> WeightMemory {
        self.weight_memory
    }

    fn check_device(&self) -> Result<(), TrainError> {
        match self.error.lock().map(|e| e.clone()) {
            Ok(None) => Ok(()),
            Ok(Some(e)) => Err(TrainError::Gpu(format!("the GPU device failed: {e}"))),
            Err(_) => Err(TrainError::Gpu("the GPU device's error state was poisoned".into())),
        }
    }

    /// The current parameters, read back from the device.
    pub fn params(&self) -> Result<ModelParams, TrainError> {
        let flat = self.gpu.read_f32(&self.gpu.buffers.params, u64::from(self.shapes.all()))?;
        self.check_device()?;
        Ok(unflatten(&self.template, &flat))
    }

    fn upload_params(&self, params: &ModelParams) {
        let mut flat = Vec::with_capacity(self.shapes.all() as usize);
        flatten(params, &mut flat);
        self.gpu.queue.write_buffer(&self.gpu.buffers.params, 0, &f32_bytes(&flat));
    }

    /// Dispatches a step's work with this uniform, up to `until`: the whole step, the gradients
    /// without the update (the gradient parity test), or the forward weights alone (the weight
    /// formats' parity test). One pass, one submission.
    fn dispatch(&self, uniform: &StepUniform, until: Until) {
        self.gpu.queue.write_buffer(&self.gpu.buffers.uniform, 0, &uniform.bytes());
        let mut encoder = self.gpu.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("texset train step") });
        {
            let mut pass =
                encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("texset train step"), timestamp_writes: None });
            let p = &self.gpu.pipelines;
            let (rx, ry, _) = spread(self.shapes.rows);
            let (ax, ay, _) = spread(self.shapes.all());
            let stages = [
                (&p.prepare, (rx, ry)),
                (&p.fwd_bwd, (self.shapes.batch / (WORKGROUP * self.shapes.tpi()), 1)),
                (&p.wgrad, (self.shapes.tiles().div_ceil(WORKGROUP), self.shapes.chunks())),
                (&p.stats, (1, 1)),
                (&p.adam, (ax, ay)),
            ];
            let count = match until {
                Until::ForwardWeights => 1,
                Until::Gradients => 4,
                Until::Update => 5,
            };
            for ((pipeline, group), (x, y)) in stages.into_iter().take(count) {
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, group, &[]);
                pass.dispatch_workgroups(x, y, 1);
            }
        }
        self.gpu.queue.submit([encoder.finish()]);
    }

    /// The layers as the forward pass of the weight fine-tune reads them in `format` (their
    /// fake-quantised values): the parity test's view of `prepare`.
    pub fn fake_quantised_layers(&self, format: WeightFormat) -> Result<Vec<crate::model::params::LayerParams>, TrainError> {
        self.dispatch(&StepUniform { flags: format_flag(format), ..StepUniform::default() }, Until::ForwardWeights);
        let layers = self.gpu.read_f32(&self.gpu.buffers.fwdw, u64::from(self.shapes.layer_total))?;
        self.check_device()?;
        // `fwdw` starts as the parameters' layer region does: lay it out after empty grids.
        let mut flat = vec![0.0; self.shapes.grid_total as usize];
        flat.extend(layers);
        Ok(unflatten(&self.template, &flat).layers)
    }

    /// One step's loss and gradients (scaled by `1 / batch`, as [`crate::train::loss_and_grads`])
    /// on the given draws ([`Sampler::draw`]), without noise and without an update: the parity
    /// test's view of the kernels.
    pub fn gradients_for(&mut self, draws: &[(u32, u32)]) -> Result<(f32, ModelParams), TrainError> {
        let n = self.shapes.batch as usize;
        if draws.len() != n {
            return Err(TrainError::Backend(format!("{} draws given for a batch of {n}", draws.len())));
        }
        let words: Vec<u32> = draws.iter().flat_map(|&(g, t)| [g, t]).collect();
        let offset = 4 * u64::from(self.gpu.samples_off);
        self.gpu.queue.write_buffer(&self.gpu.buffers.tables, offset, &u32_bytes(&words));
        let uniform = StepUniform { flags: FLAG_GIVEN_SAMPLES | FLAG_TRAIN_GRIDS, ..StepUniform::default() };
        self.dispatch(&uniform, Until::Gradients);
        let fixed = self.gpu.read_u32(&self.gpu.buffers.grid_grad, 4 * u64::from(self.shapes.grid_total))?;
        // Clear the accumulators the update would have cleared.
        let zeros = vec![0u8; fixed.len() * 4];
        self.gpu.queue.write_buffer(&self.gpu.buffers.grid_grad, 0, &zeros);
        let parts = self.gpu.read_f32(&self.gpu.buffers.wpart, u64::from(self.shapes.chunks()) * u64::from(self.shapes.layer_total))?;
        let stats = self.gpu.read_f32(&self.gpu.buffers.stats, 3)?;
        self.check_device()?;
        let scale = 1.0 / n as f32;
        let fixed_point = |lo: u32, hi: u32| f64::from(hi) * 4_294_967_296.0 + f64::from(lo);
        let mut flat: Vec<f32> =
            fixed.chunks_exact(4).map(|w| ((fixed_point(w[0], w[1]) - fixed_point(w[2], w[3])) / 4_294_967_296.0) as f32 * scale).collect();
        let pl = self.shapes.layer_total as usize;
        for p in 0..pl {
            let sum: f32 = parts.iter().skip(p).step_by(pl).sum();
            flat.push(sum * scale);
        }
        Ok((stats[0] * scale, unflatten(&self.template, &flat)))
    }

    /// Takes a finished read-back of the stats ring; every [`STATS_RING`] steps (and after the
    /// first) starts the next, waiting first for one still out so the queue never runs far ahead.
    fn poll_stats(&mut self, slot: u32) -> Result<(), TrainError> {
        if let Some(pending) = &self.pending {
            match pending.receiver.try_recv() {
                Ok(result) => {
                    self.pending = None;
                    self.take_stats(result)?;
                }
                Err(mpsc::TryRecvError::Empty) => {
                    // Let the callbacks of finished work run.
                    let _ = self.gpu.device.poll(wgpu::PollType::Poll);
                }
                Err(mpsc::TryRecvError::Disconnected) => return Err(TrainError::Gpu("the loss read-back never finished".into())),
            }
        }
        let first = self.last_mse.is_nan();
        if slot + 1 == STATS_RING || first {
            if let Some(pending) = self.pending.take() {
                self.wait_stats(&pending)?;
            }
            let pending = PendingStats { receiver: self.gpu.start_stats_read() };
            if first {
                // The first step waits, so status has a loss from the start.
                self.wait_stats(&pending)?;
            } else {
                self.pending = Some(pending);
            }
        }
        Ok(())
    }

    fn wait_stats(&mut self, pending: &PendingStats) -> Result<(), TrainError> {
        self.gpu
            .device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| TrainError::Gpu(format!("waiting for the GPU failed: {e}")))?;
        let result = pending.receiver.recv().map_err(|_| TrainError::Gpu("the loss read-back never finished".into()))?;
        self.take_stats(result)
    }

    fn take_stats(&mut self, result: Result<(), wgpu::BufferAsyncError>) -> Result<(), TrainError> {
        result.map_err(|e| TrainError::Gpu(format!("reading the loss back failed: {e}")))?;
        self.last_mse = self.gpu.take_stats_mse()?;
        Ok(())
    }

    /// Runs one step.
    fn step_once(&mut self) -> Result<StepStats, TrainError> {
        let step = self.step;
        if self.lost_at_step == Some(step) {
            return Err(TrainError::Gpu(format!("device lost at step {step} (simulated: TEXSET_FAULT=gpu-lost-at-step={step})")));
        }
        self.check_device()?;
        let schedule = &self.schedule;
        let phase = schedule.phase(step);
        if schedule.latent_noise && (step == schedule.freeze_step || (phase != TrainPhase::NoisyLatents && self.adam_t == 0)) {
            let mut params = self.params()?;
            round_grids(&mut params, &schedule.grid_bits);
            self.upload_params(&params);
        }
        let schedule = &self.schedule;
        let train_grids = phase == TrainPhase::NoisyLatents;
        let mut flags = 0;
        if train_grids {
            flags |= FLAG_TRAIN_GRIDS;
            if schedule.latent_noise {
                flags |= FLAG_NOISE;
            }
        }
        if phase == TrainPhase::Int8Weights {
            flags |= format_flag(schedule.weight_format);
        }
        let t = self.adam_t + 1;
        let decay = schedule.decay(step);
        let slot = step % STATS_RING;
        let uniform = StepUniform {
            step,
            seed: schedule.seed,
            flags,
            noise_amplitude: 0.5 * quant::latent_step(schedule.grid_bits.first().copied().unwrap_or(8)),
            lr_grid: schedule.grid_learning_rate * decay,
            lr_mlp: schedule.mlp_learning_rate * decay,
            c1: 1.0 - ADAM_BETA1.powi(t as i32),
            c2: 1.0 - ADAM_BETA2.powi(t as i32),
            grad_scale: 1.0 / schedule.batch_texels as f32,
            stats_slot: slot,
        };
        self.dispatch(&uniform, Until::Update);
        self.adam_t = t;
        self.step += 1;
        self.poll_stats(slot)?;
        Ok(StepStats { mse: self.last_mse, phase })
    }

    /// The model as it would ship now: latents rounded, weights in their format.
    pub fn shipped_params(&self) -> Result<ModelParams, TrainError> {
        let mut params = self.params()?;
        round_grids(&mut params, &self.schedule.grid_bits);
        params.layers = params.layers.iter().map(|l| quant::fake_quantize(l, self.schedule.weight_format)).collect();
        Ok(params)
    }

    /// Waits until the device has done every step submitted so far (timing).
    pub fn finish(&self) -> Result<(), TrainError> {
        self.gpu
            .device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| TrainError::Gpu(format!("waiting for the GPU failed: {e}")))?;
        self.check_device()
    }

    /// What one step costs, counted from the shapes (not measured): the roofline's inputs.
    #[must_use]
    pub fn step_cost(&self) -> StepCost {
        let n = f64::from(self.shapes.batch);
        let macs: f64 = self.shapes.layers.iter().map(|&(i, o)| f64::from(i) * f64::from(o)).sum();
        let widths: f64 = self.shapes.layers.iter().map(|&(i, o)| f64::from(i) + f64::from(o)).sum();
        let inputs: f64 = self.shapes.layers.iter().map(|&(i, _)| f64::from(i)).sum();
        let lc = self.template.latent_channels() as f64;
        let oc = self.template.output_channels() as f64;
        let all = f64::from(self.shapes.all());
        let layer_total = f64::from(self.shapes.layer_total);
        let chunks = f64::from(self.shapes.chunks());
        // Forward, input gradients and weight gradients: 3 × 2 FLOP per multiply-add; the gather
        // and the scatter: 4 corners × 2 FLOP per latent channel each.
        let flop = n * (6.0 * macs + 16.0 * lc);
        // Per texel: its rows of the scratch written once and read back (backward reads the
        // inputs, `wgrad` both), its latent corners (4 × f32 read, 4 × u32 atomic read-and-write), its
        // targets; per step: the weight partials written and read, Adam's 5 arrays.
        let per_texel = 4.0 * (widths + inputs + widths) + 4.0 * lc * (4.0 + 8.0) + 4.0 * oc;
        let bytes = n * per_texel + chunks * layer_total * 8.0 + all * 4.0 * 5.0;
        StepCost { dispatches: 5, flop, bytes }
    }

    /// The sampler (its draws feed [`GpuTrainer::gradients_for`]).
    #[must_use]
    pub fn sampler(&self) -> &Sampler<'a> {
        &self.sampler
    }
}

impl Trainer for GpuTrainer<'_> {
    fn capabilities(&self) -> Capabilities {
        Capabilities::FUSED_GPU
    }

    fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    fn steps_done(&self) -> u32 {
        self.step
    }

    fn refit_steps(&mut self, steps: u32) -> bool {
        // Every use of the schedule is on this side, step by step: the device holds no length.
        self.schedule.with_steps(steps, self.step).map(|s| self.schedule = s).is_some()
    }

    fn run_step(&mut self) -> Result<StepStats, TrainError> {
        self.step_once()
    }

    fn wait(&self) -> Result<(), TrainError> {
        self.finish()
    }

    fn final_params(&self) -> Result<ModelParams, TrainError> {
        // A failed read-back is the device's failure (the pipeline goes on on the CPU), never a
        // model of zeros.
        self.shipped_params()
    }

    fn save_checkpoint(&self, path: &Path, fingerprint: &str) -> Result<(), TrainError> {
        let all = u64::from(self.shapes.all());
        let params = unflatten(&self.template, &self.gpu.read_f32(&self.gpu.buffers.params, all)?);
        let m = unflatten(&self.template, &self.gpu.read_f32(&self.gpu.buffers.adam_m, all)?);
        let v = unflatten(&self.template, &self.gpu.read_f32(&self.gpu.buffers.adam_v, all)?);
        self.check_device()?;
        crate::train::checkpoint::save_state(path, fingerprint, self.step, self.adam_t, [&params, &m, &v], None)
    }

    fn load_checkpoint(&mut self, path: &Path, fingerprint: &str, _layout: &ModelLayout) -> Result<(), TrainError> {
        let state = crate::train::checkpoint::load_state(path, fingerprint, self.schedule.steps, &self.template)?;
        if state.gates.is_some() {
            return Err(TrainError::Checkpoint {
                path: path.to_path_buf(),
                message: "it has budget gates; the GPU trainer learns no budgets".into(),
            });
        }
        let [params, m, v] = &state.params;
        for (buffer, p) in [(&self.gpu.buffers.params, params), (&self.gpu.buffers.adam_m, m), (&self.gpu.buffers.adam_v, v)] {
            let mut flat = Vec::with_capacity(self.shapes.all() as usize);
            flatten(p, &mut flat);
            self.gpu.queue.write_buffer(buffer, 0, &f32_bytes(&flat));
        }
        self.step = state.step;
        self.adam_t = state.adam_t;
        Ok(())
    }
}

/// The `prepare` kernel's flag that fake-quantises the weights in `format`.
fn format_flag(format: WeightFormat) -> u32 {
    match format {
        WeightFormat::Int8 => FLAG_INT8,
        WeightFormat::Fp16 => FLAG_FP16,
        WeightFormat::Fp8E4m3 => FLAG_E4M3,
        WeightFormat::MxInt8 => FLAG_MXINT8,
    }
}

/// Every value of `params` in the trainer's order (the checkpoint's): grids of every level, then
/// per layer its weights and biases.
fn flatten(params: &ModelParams, out: &mut Vec<f32>) {
    for g in params.all_grids() {
        out.extend_from_slice(&g.values);
    }
    for l in &params.layers {
        out.extend_from_slice(&l.weights);
        out.extend_from_slice(&l.biases);
    }
}

/// `template`'s shapes filled from `flat` ([`flatten`]'s order).
fn unflatten(template: &ModelParams, flat: &[f32]) -> ModelParams {
    let mut params = template.clone();
    let mut at = 0;
    let mut take = |dst: &mut [f32]| {
        let n = dst.len().min(flat.len().saturating_sub(at));
        dst[..n].copy_from_slice(&flat[at..at + n]);
        at += dst.len();
    };
    for g in params.all_grids_mut() {
        take(&mut g.values);
    }
    for l in &mut params.layers {
        take(&mut l.weights);
        take(&mut l.biases);
    }
    params
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn u32_bytes(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Trains `set` with the fused GPU trainer in the one loop ([`run`]). [`TrainError::Gpu`] when no
/// adapter, no device or a lost device stops it: [`crate::compress`] then goes on on the CPU.
pub fn train_gpu(
    set: &TextureSet,
    layout: &ModelLayout,
    options: &CompressOptions,
    progress: &dyn Progress,
    cancel: &Cancel,
) -> Result<(ModelParams, TrainReport), TrainError> {
    let start = starting_params(set, layout, options)?;
    let (options, time_budget) =
        fit_time_budget(options, |o| Ok(Box::new(gpu_trainer(set, layout, o, &start)?) as Box<dyn Trainer>), cancel)?;
    let options = options.as_ref();
    // The probe's trainer is gone before the run's is made: the library is on the device once.
    crate::train::run::announce_duration(
        options,
        |o| Ok(Box::new(gpu_trainer(set, layout, o, &start)?) as Box<dyn Trainer>),
        "the GPU",
        progress,
        cancel,
    )?;
    let mut trainer = gpu_trainer(set, layout, options, &start)?;
    let backend = format!("gpu (fused WGSL, {})", trainer.adapter());
    let fingerprint = crate::train::checkpoint::fingerprint(set, layout, options);
    let loop_options = LoopOptions {
        checkpoint: options.run.checkpoint.as_ref(),
        resume_from: options.run.resume_from.as_deref(),
        fingerprint: &fingerprint,
        layout: Some(layout),
        deadline: time_budget.as_ref().map(TimeBudget::deadline_from_now),
    };
    let outcome = run(&mut trainer, &loop_options, progress, cancel)?;
    let params = trainer.shipped_params()?;
    let report = TrainReport {
        time_budget: time_budget.map(|b| b.with_refits(&outcome)),
        // The schedule as it ended: a time budget's run may have changed its length.
        ..TrainReport::new(backend, trainer.schedule(), &outcome)
    };
    Ok((params, report))
}

/// The GPU trainer for `options` from `start`.
pub fn gpu_trainer<'a>(
    set: &'a TextureSet,
    layout: &ModelLayout,
    options: &CompressOptions,
    start: &ModelParams,
) -> Result<GpuTrainer<'a>, TrainError> {
    if let Some((what, why)) = Capabilities::FUSED_GPU.missing(options, layout) {
        return Err(TrainError::Backend(format!("the GPU trainer cannot train {what} ({why})")));
    }
    let sampler = Sampler::new(set, layout).with_level_boost(options.schedule.mip_sample_boost);
    GpuTrainer::new(sampler, Schedule::new(options, layout), start)
}

#[cfg(test)]
mod tests;
