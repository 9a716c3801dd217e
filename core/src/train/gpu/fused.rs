//! The weight gradient summed inside `fwd_bwd`'s workgroup (issue 41, item 3): no per-texel scratch
//! in device memory and no `wgrad` pass. In the backward pass, once a layer's output gradients are
//! known, the workgroup's texels leave their rows of that layer (its inputs and its output
//! gradients, from the named values the generated MLP holds) in workgroup memory, a round of
//! `texels` texels at a time, and each invocation sums one tile of the layer's weight gradient over
//! them, in texel order, in registers. After the last round each tile is stored as the workgroup's
//! partial sum (`wpart`, a chunk per workgroup), and `adam` sums the workgroups' partials in order:
//! a step stays deterministic for a seed on a device.
//!
//! Per 65,536-texel step of the default model this drops the scratch round trip (its rows written,
//! then read by `wgrad`) for 512 partials of every weight and bias (11,593 of a 41-64-64-64-9
//! decoder: 23.7 MB): the bytes `step_cost` counts fall from 408.7 to 154.0 MB (decision 040). The
//! multiply-adds are `wgrad`'s, from workgroup memory instead of device memory.

use super::wgsl::WORKGROUP;
use crate::model::wgsl::component;
use crate::model::wgsl::emit::{Emitter, act, expr, grad, name};

/// One layer's tile per invocation: four outputs × `kv` `vec4`s of inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LayerTile {
    inputs: u32,
    outputs: u32,
    /// `vec4`s of inputs a tile sums.
    kv: u32,
    /// Tiles across the inputs.
    kt: u32,
}

impl LayerTile {
    /// The narrowest tile that covers the layer with at most [`WORKGROUP`] invocations; `None`
    /// when its outputs alone need more (over 256).
    fn new(inputs: u32, outputs: u32) -> Option<Self> {
        let ov = outputs.div_ceil(4);
        let ki = inputs.div_ceil(4).max(1);
        if ov > WORKGROUP {
            return None;
        }
        let kv = (1..=ki).find(|&kv| ov * ki.div_ceil(kv) <= WORKGROUP)?;
        Some(Self { inputs, outputs, kv, kt: ki.div_ceil(kv) })
    }

    /// `vec4`s of outputs.
    fn ov(self) -> u32 {
        self.outputs.div_ceil(4)
    }

    /// Invocations with a tile.
    fn tiles(self) -> u32 {
        self.ov() * self.kt
    }

    /// `vec4`s of a texel's input row in workgroup memory (whole tiles, zero-padded).
    fn av(self) -> u32 {
        self.kt * self.kv
    }
}

/// How `fwd_bwd` sums the weight gradients in its workgroup: rounds of `texels` texels, each
/// layer's tile per invocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct FusedPlan {
    /// Texels whose rows a round holds (a divisor of the workgroup's invocations).
    pub(super) texels: u32,
    layers: Vec<LayerTile>,
}

impl FusedPlan {
    /// The plan for `layers` (inputs, outputs) with rounds of `texels`; `None` when a layer is
    /// wider than one tile per invocation covers, or `texels` divides no workgroup.
    pub(super) fn new(layers: &[(u32, u32)], texels: u32) -> Option<Self> {
        if texels == 0 || !WORKGROUP.is_multiple_of(texels) {
            return None;
        }
        let layers = layers.iter().map(|&(i, o)| LayerTile::new(i, o)).collect::<Option<Vec<_>>>()?;
        Some(Self { texels, layers })
    }

    /// The plan with the most texels a round (fewest barriers) whose rows take at most
    /// `budget_bytes` of workgroup memory; `None` when none does.
    pub(super) fn fitting(layers: &[(u32, u32)], budget_bytes: u64) -> Option<Self> {
        let mut texels = WORKGROUP;
        while texels >= 4 {
            if let Some(plan) = Self::new(layers, texels)
                && plan.workgroup_bytes() <= budget_bytes
            {
                return Some(plan);
            }
            texels /= 2;
        }
        None
    }

    /// `vec4`s a texel's rows take in the widest layer.
    fn row_vec4s(&self) -> u32 {
        self.layers.iter().map(|l| l.av() + l.ov()).max().unwrap_or(1)
    }

    /// Bytes of workgroup memory the rounds take.
    pub(super) fn workgroup_bytes(&self) -> u64 {
        u64::from(self.texels) * u64::from(self.row_vec4s()) * 16
    }

    /// The workgroup array the rounds share.
    pub(super) fn declaration(&self) -> String {
        let mut e = Emitter::with_comment(
            "A round's rows of one layer (train/gpu/fused.rs): per texel its inputs, then per texel its output gradients.",
        );
        e.declare(expr!("var<workgroup> wrows: array<vec4<f32>, {}>", self.texels * self.row_vec4s()));
        e.finish()
    }

    /// The statements of layer `l`'s weight gradient over the workgroup's texels, inside
    /// `mlp_train(first, lid, chunk)`, where its inputs `x{p}_{l}_{j}` (`named` `vec4`s of them)
    /// and output gradients `d{p}_{l}_{j}` are named values of each of the invocation's `tpi`
    /// texels; `weights` and `biases`: the layer's offsets in a chunk of `wpart`.
    pub(super) fn layer_gradient(&self, e: &mut Emitter, l: usize, named: u32, tpi: u32, weights: u32, biases: u32) {
        let Some(&tile) = self.layers.get(l) else {
            return;
        };
        let LayerTile { inputs, outputs, kv, kt } = tile;
        let (st, av, ov) = (self.texels, tile.av(), tile.ov());
        let d_at = st * av;
        let groups = WORKGROUP / st;
        let tiles = tile.tiles();
        e.comment(expr!("Layer {l}'s weight gradient: {ov}×{kt} tiles of 4 outputs × {} inputs (fused.rs).", 4 * kv));
        let (og, kg, gb) = (name("og", l), name("kg", l), name("gb", l));
        let gw = |k: u32| name("gw", (l, k));
        e.let_(&og, expr!("lid / {kt}u"));
        e.let_(&kg, expr!("lid % {kt}u"));
        e.var_init(&gb, "vec4<f32>(0.0)");
        for k in 0..4 * kv {
            e.var_init(gw(k), "vec4<f32>(0.0)");
        }
        // Per texel of the invocation (its values have literal names), a round per group of
        // `st` invocations: the group leaves its rows, every tile sums them. The rounds are a loop
        // of uniform trip count (its barriers in uniform control flow), not unrolled: the code
        // stays one copy per texel whatever the rounds.
        for p in 0..tpi {
            e.for_range("group", expr!("{groups}u"));
            e.if_(expr!("lid / {st}u == group"));
            e.let_("r", expr!("lid % {st}u"));
            for j in 0..av {
                let value = if j < named { act(p, l, j) } else { "vec4<f32>(0.0)".into() };
                e.set(expr!("wrows[r * {av}u + {j}u]"), value);
            }
            for j in 0..ov {
                e.set(expr!("wrows[{d_at}u + r * {ov}u + {j}u]"), grad(p, l, j));
            }
            e.close();
            e.call("workgroupBarrier()");
            e.if_(expr!("lid < {tiles}u"));
            e.for_range("r", expr!("{st}u"));
            e.let_("d", expr!("wrows[{d_at}u + r * {ov}u + {og}]"));
            e.add(&gb, "d");
            for j in 0..kv {
                e.let_(name("a", j), expr!("wrows[r * {av}u + {kg} * {kv}u + {j}u]"));
            }
            for k in 0..4 * kv {
                e.add(gw(k), expr!("d * {}.{}", name("a", k / 4), component(k)));
            }
            e.close();
            e.close();
            e.call("workgroupBarrier()");
            e.close();
        }
        // The tile's sums as the workgroup's partial: row `o` of the weights is `inputs` long.
        e.if_(expr!("lid < {tiles}u"));
        e.let_("part", "chunk * PL");
        for o in 0..4u32 {
            let row = name("o", o);
            e.let_(&row, expr!("{og} * 4u + {o}u"));
            e.if_(expr!("{row} < {outputs}u"));
            e.set_if(expr!("{kg} == 0u"), expr!("wpart[part + {biases}u + {row}]"), expr!("{gb}[{o}]"));
            for k in 0..4 * kv {
                let condition = expr!("{kg} * {}u + {k}u < {inputs}u", 4 * kv);
                let target = expr!("wpart[part + {weights}u + {row} * {inputs}u + {kg} * {}u + {k}u]", 4 * kv);
                e.set_if(condition, target, expr!("{}[{o}]", gw(k)));
            }
            e.close();
        }
        e.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_layer_of_the_default_decoder_gets_one_tile_per_invocation() {
        // The default model: 41 inputs, 64-64-64 hidden, 9 outputs (and a narrower one).
        for layers in [vec![(41, 64), (64, 64), (64, 64), (64, 9)], vec![(41, 64), (64, 48), (48, 32), (32, 9)]] {
            let plan = FusedPlan::new(&layers, 32).expect("a plan");
            for (tile, &(i, o)) in plan.layers.iter().zip(&layers) {
                assert!(tile.tiles() <= WORKGROUP, "{i}×{o}: {} tiles", tile.tiles());
                assert!(4 * tile.av() >= i && 4 * tile.ov() >= o, "{i}×{o} covered");
            }
            // 32 texels of a 64-wide layer's rows: 32 × (16 + 16) vec4s.
            assert!(plan.workgroup_bytes() <= 16_384, "{} bytes", plan.workgroup_bytes());
        }
    }

    #[test]
    fn rounds_shrink_to_fit_the_budget_and_wide_layers_are_refused() {
        let layers = [(41, 64), (64, 64), (64, 9)];
        let big = FusedPlan::fitting(&layers, 1 << 20).expect("fits");
        assert_eq!(big.texels, WORKGROUP);
        let small = FusedPlan::fitting(&layers, 16_384).expect("fits");
        assert_eq!((small.texels, small.workgroup_bytes()), (32, 16_384));
        assert!(FusedPlan::fitting(&layers, 256).is_none());
        assert!(FusedPlan::new(&[(64, 512)], 32).is_none(), "512 outputs need two tiles an invocation");
        assert!(FusedPlan::new(&layers, 48).is_none(), "48 texels divide no workgroup of 64");
    }
}
