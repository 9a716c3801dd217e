//! Budgets learned in training: a gate per (texture, channel) with a group lasso, and the cut
//! that turns them into budgets.

use crate::model::layout::ModelLayout;
use crate::model::params::LayerParams;
use crate::options::LearnedBudgets;
use crate::train::schedule::step_at_fraction;

/// Budgets learned in training ([`LearnedBudgets`]): the gates, their optimiser state, and the
/// cut once it happened.
#[derive(Clone, Debug)]
pub struct BudgetGates {
    pub(super) options: LearnedBudgets,
    /// Step of the cut.
    pub(super) at: u32,
    /// `[slot][latent_channels]` gate values (flat slots in layout order; 0 outside a budget).
    pub values: Vec<f32>,
    pub(super) m: Vec<f32>,
    pub(super) v: Vec<f32>,
    pub(super) t: u32,
    /// Per slot, the budget training started with.
    pub(super) start: Vec<Vec<u32>>,
    /// `[slot][latent_channels]`: 1 where a gate trains (a sampled texture's starting budget).
    pub(super) trains: Vec<f32>,
    /// Per slot, the share of a batch's texels that are its own (the lasso rides on them like
    /// the loss does, so its strength does not depend on how many textures share the batch).
    pub(super) shares: Vec<f32>,
    /// Per slot, the flat slot of the original it duplicates.
    pub(super) duplicate_of: Vec<Option<usize>>,
    pub(super) latent_channels: usize,
    /// The budgets after the cut.
    pub cut: Option<LearnedCut>,
}

/// What the cut of learned budgets decided.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LearnedCut {
    /// Step it happened at.
    pub step: u32,
    /// Per texture (flat slots in layout order), the latent channels it reads from then on.
    pub budgets: Vec<Vec<u32>>,
    /// Per texture, per channel of its starting budget (in that order), its importance
    /// `|gate| · ‖first-layer column‖₂` relative to the library's largest.
    pub importance: Vec<Vec<f32>>,
    /// The threshold it was cut at (relative importance).
    pub drop_below: f32,
}

impl LearnedCut {
    /// The layout with these budgets (every texture's channels; channels no texture reads stay
    /// in the grids until the prune pass).
    #[must_use]
    pub fn apply(&self, layout: &ModelLayout) -> ModelLayout {
        let mut layout = layout.clone();
        for (slot, budget) in layout.textures.iter_mut().flatten().zip(&self.budgets) {
            slot.latent_channels.clone_from(budget);
        }
        layout
    }
}

impl BudgetGates {
    pub(super) fn new(options: LearnedBudgets, steps: u32, layout: &ModelLayout) -> Self {
        let lc = layout.latent_channels();
        let material_start: Vec<usize> = layout
            .textures
            .iter()
            .scan(0usize, |n, m| {
                let start = *n;
                *n += m.len();
                Some(start)
            })
            .collect();
        let slots: Vec<_> = layout.textures.iter().flatten().collect();
        let mut values = vec![0.0f32; slots.len() * lc];
        for (s, slot) in slots.iter().enumerate() {
            for &c in &slot.latent_channels {
                if let Some(v) = values.get_mut(s * lc + c as usize) {
                    *v = 1.0;
                }
            }
        }
        let duplicate_of: Vec<Option<usize>> =
            slots.iter().map(|s| s.duplicate_of.and_then(|(m, k)| material_start.get(m).map(|o| o + k))).collect();
        let mut trains = values.clone();
        for (s, d) in duplicate_of.iter().enumerate() {
            if d.is_some() {
                trains[s * lc..(s + 1) * lc].fill(0.0);
            }
        }
        Self {
            at: step_at_fraction(steps, options.at),
            trains,
            shares: vec![0.0; slots.len()],
            options,
            m: vec![0.0; values.len()],
            v: vec![0.0; values.len()],
            values,
            t: 0,
            start: slots.iter().map(|s| s.latent_channels.clone()).collect(),
            duplicate_of,
            latent_channels: lc,
            cut: None,
        }
    }

    /// The gates' Adam moments and update count (for checkpoints).
    #[must_use]
    pub fn moments(&self) -> (&[f32], &[f32], u32) {
        (&self.m, &self.v, self.t)
    }

    /// Whether the gates still train.
    pub(super) fn active(&self) -> bool {
        self.cut.is_none()
    }

    /// The cut: importance per (texture, channel), the budgets that keep what clears the bar.
    pub(super) fn decide(&self, first: &LayerParams, step: u32) -> LearnedCut {
        let lc = self.latent_channels;
        let norms = column_norms(first, lc);
        let raw: Vec<Vec<f32>> = self
            .start
            .iter()
            .enumerate()
            .map(|(s, budget)| budget.iter().map(|&c| self.values[s * lc + c as usize].abs() * norms[c as usize]).collect())
            .collect();
        let largest = raw
            .iter()
            .zip(&self.duplicate_of)
            .filter(|(_, d)| d.is_none())
            .flat_map(|(r, _)| r.iter().copied())
            .fold(0.0f32, f32::max)
            .max(f32::MIN_POSITIVE);
        let mut importance: Vec<Vec<f32>> = raw.iter().map(|r| r.iter().map(|v| v / largest).collect()).collect();
        for (s, d) in self.duplicate_of.iter().enumerate() {
            if let Some(o) = *d
                && let Some(i) = importance.get(o).cloned()
            {
                importance[s] = i;
            }
        }
        let mut budgets: Vec<Vec<u32>> = self
            .start
            .iter()
            .zip(&importance)
            .map(|(budget, imp)| budget.iter().zip(imp).filter(|(_, i)| **i >= self.options.drop_below).map(|(&c, _)| c).collect())
            .collect();
        // A duplicate is never sampled: it reads what its original reads.
        for (s, d) in self.duplicate_of.iter().enumerate() {
            if let Some(o) = *d
                && let Some(b) = budgets.get(o).cloned()
            {
                budgets[s] = b;
            }
        }
        LearnedCut { step, budgets, importance, drop_below: self.options.drop_below }
    }

    /// Per slot, its mask under the cut.
    pub(super) fn masks(cut: &LearnedCut, lc: usize) -> Vec<Vec<f32>> {
        cut.budgets
            .iter()
            .map(|b| {
                let mut mask = vec![0.0; lc];
                for &c in b {
                    if let Some(m) = mask.get_mut(c as usize) {
                        *m = 1.0;
                    }
                }
                mask
            })
            .collect()
    }
}

/// ‖column c‖₂ of a first layer, for its first `lc` inputs.
pub(crate) fn column_norms(first: &LayerParams, lc: usize) -> Vec<f32> {
    (0..lc).map(|c| (0..first.outputs).map(|o| first.weights[o * first.inputs + c].powi(2)).sum::<f32>().sqrt()).collect()
}
