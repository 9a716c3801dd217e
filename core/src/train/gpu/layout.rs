//! How the GPU trainer lays the model and the library out on the device: the shapes of the flat
//! parameter array, the tables the shader reads, the memory the weights go to, and the flat order
//! (the checkpoint's) values travel in.

use super::fused::FusedPlan;
use super::wgsl::WORKGROUP;
use crate::model::params::ModelParams;
use crate::model::wgsl::WeightMemory;
use crate::model::wgsl::{MlpShape, PackedLayer, pack_layout};
use crate::train::TrainError;
use crate::train::sampler::{CHUNK_TEXELS, Sampler};

/// The model's shapes as the trainer lays them out: one flat parameter array (every grid of every
/// level, then per layer its weights and biases: the checkpoint's order).
#[derive(Clone, Debug)]
pub(super) struct Shapes {
    /// Texels per step.
    pub(super) batch: u32,
    /// Values of every grid of every level.
    pub(super) grid_total: u32,
    /// Weights and biases of every layer.
    pub(super) layer_total: u32,
    /// Rows (outputs) of every layer.
    pub(super) rows: u32,
    /// Per layer (inputs, outputs).
    pub(super) layers: Vec<(u32, u32)>,
    /// How the weight gradients are summed (the adapter decides; [`WgradTile::SMALL`]'s pass
    /// until it does).
    pub(super) wgrad: Wgrad,
    /// The layers as the forward and backward passes read them: the decoder's packed `vec4`
    /// layout (`model::wgsl::pack_layout`), which `prepare` fills from the flat parameters.
    pub(super) packed: Vec<PackedLayer>,
    /// `vec4`s of the packed weights.
    pub(super) packed_vec4s: u32,
}

impl Shapes {
    pub(super) fn new(params: &ModelParams, batch: usize) -> Result<Self, TrainError> {
        let too_big = |what: &str| super::beyond_u32("model's", what);
        let grid_total = u32::try_from(params.all_grids().map(crate::model::params::GridParams::len).sum::<usize>())
            .map_err(|_| too_big("latent grids"))?;
        let layer_total =
            u32::try_from(params.layers.iter().map(|l| l.weights.len() + l.biases.len()).sum::<usize>()).map_err(|_| too_big("layers"))?;
        let layers: Vec<(u32, u32)> = params.layers.iter().map(|l| (l.inputs as u32, l.outputs as u32)).collect();
        let rows = layers.iter().map(|l| l.1).sum();
        let batch = u32::try_from(batch).map_err(|_| too_big("batch texels"))?;
        let (packed, packed_vec4s) = pack_layout(&layers);
        Ok(Self { batch, grid_total, layer_total, rows, layers, wgrad: Wgrad::Tiles(WgradTile::SMALL), packed, packed_vec4s })
    }

    /// `vec4`s of the per-texel scratch: every texel's input and output-gradient rows of every
    /// layer ([`row_vec4s`]), or none where the weight gradients are fused.
    pub(super) fn scratch(&self) -> u64 {
        if self.fused().is_some() {
            return 0;
        }
        let per_texel: u64 = self.layers.iter().map(|&(i, o)| u64::from(row_vec4s(i)) + u64::from(row_vec4s(o))).sum();
        per_texel * u64::from(self.batch)
    }

    /// The `wgrad` pass's tile, or `None` where `fwd_bwd` sums the weight gradients itself.
    pub(super) fn wgrad_tile(&self) -> Option<WgradTile> {
        match self.wgrad {
            Wgrad::Tiles(tile) => Some(tile),
            Wgrad::Fused(_) => None,
        }
    }

    /// The plan of the weight gradients `fwd_bwd` sums itself, or `None` where a `wgrad` pass does.
    pub(super) fn fused(&self) -> Option<&FusedPlan> {
        match &self.wgrad {
            Wgrad::Fused(plan) => Some(plan),
            Wgrad::Tiles(_) => None,
        }
    }

    /// Texels of a chunk, whose weight gradients are summed in order (the partial sums of the
    /// chunks are then summed in order): a `fwd_bwd` workgroup's where they are fused; else the
    /// tile's, or the largest power of two below it that divides the batch, down to
    /// [`CHUNK_TEXELS`].
    pub(super) fn chunk_texels(&self) -> u32 {
        let Wgrad::Tiles(tile) = self.wgrad else {
            return WORKGROUP * self.tpi();
        };
        let mut texels = tile.texels;
        while texels > CHUNK_TEXELS as u32 && !self.batch.is_multiple_of(texels) {
            texels /= 2;
        }
        texels
    }

    pub(super) fn chunks(&self) -> u32 {
        self.batch / self.chunk_texels()
    }

    /// `wgrad`'s invocations per chunk: per layer, its weights in tiles (the first column's also
    /// sum the biases).
    pub(super) fn tiles(&self) -> u32 {
        let Some(WgradTile { outputs, inputs, .. }) = self.wgrad_tile() else {
            return 0;
        };
        self.layers.iter().map(|&(i, o)| o.div_ceil(outputs) * i.div_ceil(inputs)).sum()
    }

    pub(super) fn all(&self) -> u32 {
        self.grid_total + self.layer_total
    }

    /// Texels each `fwd_bwd` invocation trains: 2 where the batch is whole workgroups of pairs.
    /// Each weight the generated `mlp` loads then serves two texels; 4 took the default model's
    /// step from 34 to 28 ms on lavapipe but its compile from 8 to 23 s (2: from 2.5 s at 1).
    pub(super) fn tpi(&self) -> u32 {
        if self.batch.is_multiple_of(2 * WORKGROUP) { 2 } else { 1 }
    }

    /// `fwd_bwd`'s workgroups: each writes its texels' loss sums to one slot of `stats_part`.
    pub(super) fn fwd_bwd_workgroups(&self) -> u32 {
        self.batch / (WORKGROUP * self.tpi())
    }
}

/// One MLP layer's row of the `tables` buffer, stated once: the host writes its words
/// ([`LayerRow::words`], in [`LayerRow::FIELDS`]' order) and reads them back by name
/// ([`LayerRow::from_words`]); the shader reads them through the accessors `layer_row_accessors` (wgsl.rs)
/// generates from the same list (`layer_inputs(l)`, …), never by a position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct LayerRow {
    /// Input width.
    pub(super) inputs: u32,
    /// Output width.
    pub(super) outputs: u32,
    /// Where its weights start in the layer region.
    pub(super) weights: u32,
    /// Where its biases start in the layer region.
    pub(super) biases: u32,
    /// Scratch offset of its input rows, in `vec4`s.
    pub(super) activations: u32,
    /// Scratch offset of its output-gradient rows, in `vec4`s.
    pub(super) output_grads: u32,
}

impl LayerRow {
    /// The fields, in the order of the row's words.
    pub(super) const FIELDS: [&'static str; 6] = ["inputs", "outputs", "weights", "biases", "activations", "output_grads"];

    /// Words a row takes.
    pub(super) const WORDS: usize = Self::FIELDS.len();

    /// The row's words, in [`Self::FIELDS`]' order.
    pub(super) fn words(self) -> [u32; Self::WORDS] {
        Self::FIELDS.map(|f| self.field(f))
    }

    /// The value of field `name` (0 for a name not in [`Self::FIELDS`]).
    fn field(self, name: &str) -> u32 {
        match name {
            "inputs" => self.inputs,
            "outputs" => self.outputs,
            "weights" => self.weights,
            "biases" => self.biases,
            "activations" => self.activations,
            "output_grads" => self.output_grads,
            _ => 0,
        }
    }

    /// The row whose words are `words` ([`Self::WORDS`] of them; missing ones 0).
    pub(super) fn from_words(words: &[u32]) -> Self {
        let at = |name: &str| Self::FIELDS.iter().position(|f| *f == name).and_then(|i| words.get(i)).copied().unwrap_or(0);
        Self {
            inputs: at("inputs"),
            outputs: at("outputs"),
            weights: at("weights"),
            biases: at("biases"),
            activations: at("activations"),
            output_grads: at("output_grads"),
        }
    }
}

/// Offsets of the tables in the `tables` buffer, and the constants the shader is specialised with.
#[derive(Clone, Debug)]
pub(super) struct Tables {
    pub(super) words: Vec<u32>,
    pub(super) texels: Vec<f32>,
    pub(super) groups: u32,
    pub(super) total_draws: u32,
    pub(super) group_off: u32,
    pub(super) cum_off: u32,
    pub(super) target_off: u32,
    pub(super) mask_off: u32,
    pub(super) grid_off: u32,
    pub(super) layer_off: u32,
    pub(super) samples_off: u32,
}

impl Tables {
    pub(super) fn new(sampler: &Sampler<'_>, params: &ModelParams, shapes: &Shapes) -> Result<Self, TrainError> {
        let table = sampler.draw_table();
        let lc = params.latent_channels();
        let too_big = |what: &str| super::beyond_u32("library's", what);
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
            let row = LayerRow { inputs, outputs, weights: at, biases: at + inputs * outputs, activations: act, output_grads: dz };
            words.extend(row.words());
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

/// The tile of a layer's weight gradients one `wgrad` invocation sums: `outputs × inputs` sums
/// (each a multiple of 4) over a chunk of `texels` (in texel order), each texel's rows read once
/// per tile. It trades registers against loads. Tiles of as many texels give the same bits; the
/// chunk sets the order of the sums, so other chunks give other roundings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WgradTile {
    /// Outputs of the tile: its rows of the weight matrix.
    pub outputs: u32,
    /// Inputs of the tile: its columns.
    pub inputs: u32,
    /// Texels of a chunk: a power of two from 256 ([`CHUNK_TEXELS`]); a batch that is no
    /// multiple of it gets the largest power of two below that divides it.
    pub texels: u32,
}

impl WgradTile {
    /// 8×8 over 256 texels: 64 sums and 4 `vec4` loads per texel, within a hardware GPU's
    /// registers, and many chunks to spread over its cores.
    pub const SMALL: Self = Self { outputs: 8, inputs: 8, texels: 256 };
    /// 16×32 over 1,024 texels: 512 sums and 12 `vec4` loads per texel, for a GPU the CPU
    /// emulates (lavapipe, WARP, SwiftShader): there a load runs lane by lane and a register
    /// spills to the cache for little, and Adam sums a quarter of the chunks. On lavapipe, per
    /// 65,536-texel step of the default model, `wgrad` and `adam` took 591 and 23 ms before
    /// (8×8 over 256 texels, the biases in tiles of their own), 281 and 8 ms with this tile
    /// (docs/decisions/029-weight-gradient-tiles.md). 32×32 loaded less but compiled seconds
    /// longer for no clear gain.
    pub const LARGE: Self = Self { outputs: 16, inputs: 32, texels: 1024 };

    /// A tile of `outputs × inputs` sums over chunks of `texels`: an error unless both sides
    /// are multiples of 4 in 4..=64 and `texels` a power of two in 256..=65,536.
    pub fn new(outputs: u32, inputs: u32, texels: u32) -> Result<Self, TrainError> {
        let side = |n: u32| (4..=64).contains(&n) && n.is_multiple_of(4);
        let chunk = (CHUNK_TEXELS as u32..=65_536).contains(&texels) && texels.is_power_of_two();
        if side(outputs) && side(inputs) && chunk {
            Ok(Self { outputs, inputs, texels })
        } else {
            Err(TrainError::Backend(format!(
                "a weight-gradient tile of {outputs}×{inputs} over {texels} texels: each side must be a multiple of 4 from 4 to 64, the texels a power of two from 256 to 65536"
            )))
        }
    }

    /// Its name, as the bench prints it: `32×32×1024`.
    #[must_use]
    pub fn name(self) -> String {
        format!("{}×{}×{}", self.outputs, self.inputs, self.texels)
    }
}

/// How a step sums the weight gradients over its texels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WgradPass {
    /// A `wgrad` pass of its own, over the per-texel rows `fwd_bwd` stores in device memory.
    Tiles(WgradTile),
    /// Inside `fwd_bwd`'s workgroup, from the rows of `round_texels` texels at a time in
    /// workgroup memory (`None`: the most whose rows fit [`FUSED_BUDGET_BYTES`] and the adapter's
    /// limit, or the limit alone); no scratch, no `wgrad` pass (`fused.rs`).
    Fused {
        /// Texels a round holds: 4 to 64, a power of two.
        round_texels: Option<u32>,
    },
}

impl WgradPass {
    /// The pass for an adapter of `device_type`: tiles of [`WgradTile::LARGE`] on a GPU the CPU
    /// emulates; fused on a hardware GPU.
    pub(super) fn for_device(device_type: wgpu::DeviceType) -> Self {
        if device_type == wgpu::DeviceType::Cpu { Self::Tiles(WgradTile::LARGE) } else { Self::Fused { round_texels: None } }
    }

    /// Its name, as the bench prints it: `tiles 16×32×1024` or `fused, rounds of 32 texels`.
    #[must_use]
    pub fn name(self) -> String {
        match self {
            Self::Tiles(tile) => format!("tiles {}", tile.name()),
            Self::Fused { round_texels: Some(n) } => format!("fused, rounds of {n} texels"),
            Self::Fused { round_texels: None } => "fused".to_owned(),
        }
    }
}

/// Workgroup memory the fused weight gradient's rows take at most by default (32 texels of a
/// 64-wide layer): WebGPU's guaranteed `maxComputeWorkgroupStorageSize`, so a hardware GPU keeps
/// several workgroups per core.
pub const FUSED_BUDGET_BYTES: u64 = 16_384;

/// How the shapes sum the weight gradients, resolved for the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Wgrad {
    Tiles(WgradTile),
    Fused(FusedPlan),
}

impl Wgrad {
    /// `pass` for `shapes` on an adapter of `limits`, beside the other workgroup memory of
    /// `fwd_bwd` with its weights in `memory` ([`workgroup_bytes_beside_rows`]): an error when the
    /// fused rows fit no round the adapter allows, or the model has a layer wider than its tiles
    /// cover.
    pub(super) fn resolve(pass: WgradPass, shapes: &Shapes, limits: &wgpu::Limits, memory: WeightMemory) -> Result<Self, TrainError> {
        let limit = u64::from(limits.max_compute_workgroup_storage_size);
        let other_bytes = workgroup_bytes_beside_rows(shapes, memory);
        let room = limit.saturating_sub(other_bytes);
        match pass {
            WgradPass::Tiles(tile) => Ok(Self::Tiles(tile)),
            WgradPass::Fused { round_texels: None } => FusedPlan::fitting(&shapes.layers, room.min(FUSED_BUDGET_BYTES))
                .or_else(|| FusedPlan::fitting(&shapes.layers, room))
                .map(Self::Fused)
                .ok_or_else(|| TrainError::Gpu("the fused weight gradient does not fit this model on this adapter".into())),
            WgradPass::Fused { round_texels: Some(n) } => {
                let plan = FusedPlan::new(&shapes.layers, n).ok_or_else(|| {
                    TrainError::Backend(format!(
                        "fused rounds of {n} texels: a power of two from 4 to {WORKGROUP}, and layers of at most 256 outputs"
                    ))
                })?;
                if plan.workgroup_bytes() > room {
                    return Err(TrainError::Gpu(format!(
                        "fused rounds of {n} texels take {} bytes of workgroup memory, beside {other_bytes}; this adapter has {limit}",
                        plan.workgroup_bytes()
                    )));
                }
                Ok(Self::Fused(plan))
            }
        }
    }

    /// What it is, as [`WgradPass`] words it.
    pub(super) fn pass(&self) -> WgradPass {
        match self {
            Self::Tiles(tile) => WgradPass::Tiles(*tile),
            Self::Fused(plan) => WgradPass::Fused { round_texels: Some(plan.texels) },
        }
    }
}

/// The kernel variants a [`super::GpuTrainer`] runs; `None`: what suits the adapter best. Every
/// choice trains the same model: the parity tests run each on one adapter.
#[derive(Clone, Copy, Debug, Default)]
pub struct KernelChoice {
    /// Where the forward and backward passes read the weights from.
    pub weight_memory: Option<WeightMemory>,
    /// How the weight gradients are summed.
    pub wgrad: Option<WgradPass>,
    /// The code shape of the forward and backward passes' MLP.
    pub mlp_shape: Option<MlpShape>,
}

/// The MLP code shape for an adapter of `device_type`: scalars on a GPU the CPU emulates (lavapipe
/// runs them fastest, [`MlpShape::Scalar`]), the decoder's `vec4` rows on a hardware GPU.
pub(super) fn mlp_shape_for_device(device_type: wgpu::DeviceType) -> MlpShape {
    MlpShape::fastest(device_type == wgpu::DeviceType::Cpu)
}

/// The fastest memory the forward and backward passes can read the weights of `shapes` from on an
/// adapter of `limits`: a uniform buffer (every invocation reads the same weight at once, which a
/// GPU's constant path serves best; lavapipe loads a uniform buffer's values lane by lane too, but
/// without the branch and bounds check per lane of a storage load: with the generated MLP,
/// together, the default model's step from 111 to 60 ms), else workgroup memory (copied in by
/// each workgroup), else the storage buffer.
pub(super) fn fastest_weight_memory(shapes: &Shapes, limits: &wgpu::Limits) -> WeightMemory {
    let bytes = u64::from(shapes.packed_vec4s) * 16;
    if bytes <= limits.max_uniform_buffer_binding_size {
        WeightMemory::Uniform
    } else if workgroup_bytes_beside_rows(shapes, WeightMemory::Workgroup) <= u64::from(limits.max_compute_workgroup_storage_size) {
        WeightMemory::Workgroup
    } else {
        WeightMemory::Storage
    }
}

/// Workgroup memory `fwd_bwd` takes besides the fused weight gradient's rows, with its weights in
/// `memory`: the loss reduction's (`red`, a `vec3` of 16 bytes per invocation), and the weights
/// where they are copied to workgroup memory.
pub(super) fn workgroup_bytes_beside_rows(shapes: &Shapes, memory: WeightMemory) -> u64 {
    let weights = if memory == WeightMemory::Workgroup { u64::from(shapes.packed_vec4s) * 16 } else { 0 };
    u64::from(WORKGROUP) * 16 + weights
}

/// `vec4`s of a scratch row of `width` values: whole pairs, zero-padded, so a row is stored and
/// read four values to an access and `wgrad`'s 8-wide tiles read whole pairs.
pub(super) fn row_vec4s(width: u32) -> u32 {
    2 * width.div_ceil(8)
}

/// Every value of `params` in the trainer's order (the checkpoint's): grids of every level, then
/// per layer its weights and biases.
pub(super) fn flatten(params: &ModelParams, out: &mut Vec<f32>) {
    for g in params.all_grids() {
        out.extend_from_slice(&g.values);
    }
    for l in &params.layers {
        out.extend_from_slice(&l.weights);
        out.extend_from_slice(&l.biases);
    }
}

/// `template`'s shapes filled from `flat` ([`flatten`]'s order).
pub(super) fn unflatten(template: &ModelParams, flat: &[f32]) -> ModelParams {
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

pub(super) fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

pub(super) fn u32_bytes(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::LayerRow;
    use crate::train::gpu::wgsl::layer_row_accessors;

    /// A layer row's words, its reading back and its WGSL accessors all follow one field list:
    /// each accessor reads the word the host wrote for its field.
    #[test]
    fn a_layer_rows_words_and_accessors_agree() {
        let row = LayerRow { inputs: 11, outputs: 22, weights: 33, biases: 44, activations: 55, output_grads: 66 };
        assert_eq!(LayerRow::from_words(&row.words()), row);
        let wgsl = layer_row_accessors();
        for (i, (field, word)) in LayerRow::FIELDS.iter().zip(row.words()).enumerate() {
            assert_eq!(word, row.field(field), "{field}");
            let accessor = format!("fn layer_{field}(l: u32) -> u32 {{\n    return t_u(LAYER_OFF + l * {}u + {i}u);\n}}", LayerRow::WORDS);
            assert!(wgsl.contains(&accessor), "{field}: {wgsl}");
        }
        assert_eq!(wgsl.matches("fn layer_").count(), LayerRow::WORDS);
    }
}
