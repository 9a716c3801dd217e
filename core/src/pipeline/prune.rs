//! The prune pass: latent channels no texture reads leave the model ([`prune`]), a flat map's
//! output rows keep only their biases, set to its mean ([`settle_flat_outputs`]), and every
//! texture's budget before and after training is reported with the reason for a change.

use crate::model::layout::ModelLayout;
use crate::model::params::ModelParams;
use crate::options::CompressOptions;
use crate::progress::{Pass, Progress};
use crate::set::TextureSet;
use crate::train::TrainReport;
use serde::Serialize;

/// What the prune pass removed.
#[derive(Clone, Debug, Serialize)]
pub struct PruneReport {
    /// Latent channels before.
    pub channels_before: usize,
    /// Latent channels after (channels no texture reads are removed).
    pub channels_after: usize,
    /// What the removal during training did, when it ran.
    pub during_training: Option<String>,
    /// Every texture's budget before training (the analyse pass's, or an override) and in the
    /// bundle, with the reason for a change; in the order of
    /// [`AnalyseReport::budgets`](crate::analyse::AnalyseReport::budgets).
    pub budgets: Vec<BudgetChange>,
    /// Flat maps (`material/kind`) that read no latent channel and now decode from their mean
    /// alone: their rows of the last layer zero, their biases the mean.
    pub flat_outputs: Vec<String>,
}

/// Sets the last-layer rows of every flat map that reads no latent channel to zero weights and
/// its mean as bias, so it decodes to that constant exactly, whatever the steps it trained.
/// Training only approaches this: the row must learn to cancel the positional encoding's and the
/// other maps' activations, which took the 64-64-64 decoder and NTC's rates 0.74 of an 8-bit step
/// after 600 steps (docs/decisions/034-ntc-recipe-default.md). Rows are independent outputs, so no
/// other map changes. Flat: every channel, by the analyse pass's test
/// ([`crate::analyse::content::is_flat_std_dev`]); a duplicate shares its original's rows, and a
/// normal map trained towards unit normals keeps its trained row. Returns the maps settled, as `material/kind`.
pub(crate) fn settle_flat_outputs(set: &TextureSet, layout: &ModelLayout, params: &mut ModelParams) -> Vec<String> {
    use crate::analyse::content::{channel_std_devs, is_flat_std_dev};
    let mut settled = Vec::new();
    let Some(last) = params.layers.last_mut() else { return settled };
    for (material, slots) in set.materials.iter().zip(&layout.textures) {
        for (texture, slot) in material.textures.iter().zip(slots) {
            let flat = channel_std_devs(texture).into_iter().all(is_flat_std_dev);
            if !flat || !slot.latent_channels.is_empty() || slot.duplicate_of.is_some() || slot.unit_normal_targets {
                continue;
            }
            let channels = texture.info.channels as usize;
            let texels = texture.texel_count().max(1) as f64;
            for c in 0..channels.min(slot.channels) {
                let o = slot.output_offset + c;
                if o >= last.outputs {
                    continue;
                }
                let mean = texture.texels.iter().skip(c).step_by(channels).map(|&v| f64::from(v)).sum::<f64>() / texels;
                last.weights[o * last.inputs..(o + 1) * last.inputs].fill(0.0);
                last.biases[o] = mean as f32;
            }
            settled.push(format!("{}/{}", material.name, texture.info.kind));
        }
    }
    settled
}

/// Why a texture's learned budget is what it is: how many of its channels the cut kept and how
/// strong the kept and the dropped ones were.
fn learned_budget_reason(cut: &crate::train::LearnedCut, slot: usize, before: usize, after: usize) -> String {
    let importance = cut.importance.get(slot).map(Vec::as_slice).unwrap_or_default();
    let bar = cut.drop_below;
    let kept_min = importance.iter().copied().filter(|&i| i >= bar).fold(f32::INFINITY, f32::min);
    let dropped_max = importance.iter().copied().filter(|&i| i < bar).fold(0.0f32, f32::max);
    let pct = |v: f32| format!("{:.1}%", 100.0 * v);
    if before == 0 {
        "unchanged: it read no channels".to_owned()
    } else if after == before {
        format!("learned: kept all {before} (weakest at {} of the library's strongest, the bar {})", pct(kept_min), pct(bar))
    } else if after == 0 {
        format!("learned: dropped all {before} (strongest at {}, under the bar {}): decoded from the biases", pct(dropped_max), pct(bar))
    } else {
        format!(
            "learned: dropped {} of {before} under the bar {} (strongest dropped {}, weakest kept {})",
            before - after,
            pct(bar),
            pct(dropped_max),
            pct(kept_min)
        )
    }
}

/// One texture's channel budget before and after training.
#[derive(Clone, Debug, Serialize)]
pub struct BudgetChange {
    /// `material/kind`.
    pub texture: String,
    /// Latent channels it read when training started.
    pub before: u32,
    /// Latent channels it reads in the bundle.
    pub after: u32,
    /// Why they differ, or that they do not.
    pub reason: String,
}

/// Prune pass: removes latent channels that no texture reads (their inputs are always masked to
/// zero, so removal is exact), with the matching first-layer weight columns.
#[must_use]
pub(crate) fn prune(layout: &ModelLayout, params: &ModelParams) -> (ModelLayout, ModelParams, PruneReport) {
    let lc = layout.latent_channels();
    let mut used = layout.read_channels();
    // Keep at least one channel per grid (the format needs one; an unread one costs its bits only).
    let mut offset = 0usize;
    for g in &layout.grids {
        let ch = g.channels as usize;
        if ch > 0 && !used[offset..offset + ch].contains(&true) {
            used[offset] = true;
        }
        offset += ch;
    }
    let mut remap = vec![None; lc];
    let mut next = 0u32;
    for (c, u) in used.iter().enumerate() {
        if *u {
            remap[c] = Some(next);
            next += 1;
        }
    }
    let mut new_layout = layout.clone();
    let mut new_params = params.clone();
    let mut offset = 0usize;
    let mut keep_inputs: Vec<usize> = Vec::new();
    let per_level = layout.grids.len().max(1);
    let mut kept_per_grid: Vec<Vec<usize>> = Vec::with_capacity(per_level);
    for shape in &mut new_layout.grids {
        let ch = shape.channels as usize;
        let kept: Vec<usize> = (0..ch).filter(|c| used[offset + c]).collect();
        keep_inputs.extend(kept.iter().flat_map(|c| params.channel_inputs(offset + c)));
        shape.channels = kept.len() as u32;
        kept_per_grid.push(kept);
        offset += ch;
    }
    for (i, shape) in new_layout.mip_grids.iter_mut().enumerate() {
        shape.channels = kept_per_grid[i % per_level].len() as u32;
    }
    // Every pyramid level drops the same channels as level 0.
    for (i, (grid, old)) in new_params.all_grids_mut().zip(params.all_grids()).enumerate() {
        let kept = &kept_per_grid[i % per_level];
        let ch = old.channels as usize;
        let cells = grid.width as usize * grid.height as usize;
        grid.values = (0..cells).flat_map(|cell| kept.iter().map(move |&c| old.values[cell * ch + c])).collect();
        grid.channels = kept.len() as u32;
    }
    keep_inputs.extend(params.latent_features()..params.mlp_inputs());
    if let (Some(first), Some(old)) = (new_params.layers.first_mut(), params.layers.first()) {
        first.inputs = keep_inputs.len();
        first.weights = (0..old.outputs).flat_map(|o| keep_inputs.iter().map(move |&i| old.weights[o * old.inputs + i])).collect();
    }
    for slot in new_layout.textures.iter_mut().flatten() {
        slot.latent_channels = slot.latent_channels.iter().filter_map(|&c| remap[c as usize]).collect();
    }
    let report = PruneReport {
        channels_before: lc,
        channels_after: next as usize,
        during_training: None,
        budgets: Vec::new(),
        flat_outputs: Vec::new(),
    };
    (new_layout, new_params, report)
}

/// The prune pass of [`super::compress`] on the trained `params`: the channels training removed
/// ([`TrainReport::pruned_channels`]) and the budgets it learned applied to the analysed
/// `layout`, then [`prune`], reported with every texture's budget change.
pub(super) fn prune_pass(
    set: &TextureSet,
    layout: ModelLayout,
    params: &ModelParams,
    train_report: &TrainReport,
    options: &CompressOptions,
    progress: &dyn Progress,
) -> (ModelLayout, ModelParams, PruneReport) {
    progress.pass_started(Pass::Prune);
    // Channels training removed are read by no texture any more.
    let mut layout = layout;
    let budgets_before: Vec<usize> = layout.textures.iter().flatten().map(|s| s.latent_channels.len()).collect();
    if !train_report.pruned_channels.is_empty() {
        for slot in layout.textures.iter_mut().flatten() {
            slot.latent_channels.retain(|c| train_report.pruned_channels.binary_search(c).is_err());
        }
    }
    if let Some(cut) = &train_report.learned_budgets {
        layout = cut.apply(&layout);
    }
    let (layout, mut params, mut prune_report) = prune(&layout, params);
    prune_report.during_training = during_training(train_report, options, &budgets_before);
    prune_report.budgets = budget_changes(set, &layout, &budgets_before, train_report, options);
    prune_report.flat_outputs = settle_flat_outputs(set, &layout, &mut params);
    progress.pass_finished(
        Pass::Prune,
        &format!(
            "latent channels {} → {}{}{}",
            prune_report.channels_before,
            prune_report.channels_after,
            prune_report.during_training.as_deref().map(|d| format!(" ({d})")).unwrap_or_default(),
            match prune_report.flat_outputs.len() {
                0 => String::new(),
                n => format!("; {n} flat map(s) decode from their mean"),
            }
        ),
    );
    (layout, params, prune_report)
}

/// What the removal during training did, in words (channel pruning's, else the learned budgets'
/// cut); `None` when neither ran.
fn during_training(train_report: &TrainReport, options: &CompressOptions, budgets_before: &[usize]) -> Option<String> {
    if let Some(p) = &options.budgets.prune {
        return Some(format!(
            "{} channels removed at {:.0}% of training by {:?} (group lasso {}), keeping {:?} per grid",
            train_report.pruned_channels.len(),
            100.0 * p.at,
            p.method,
            p.group_lasso,
            p.keep_per_grid
        ));
    }
    let (cut, b) = (train_report.learned_budgets.as_ref()?, options.budgets.learned.as_ref()?);
    let before: usize = budgets_before.iter().sum();
    let after: usize = cut.budgets.iter().map(Vec::len).sum();
    Some(format!(
        "budgets learned: gates per texture and channel with a group lasso of {}, cut at step {} keeping importance ≥ {:.0}% of the largest: {before} → {after} texture-channel reads",
        b.strength,
        cut.step,
        100.0 * cut.drop_below
    ))
}

/// Every texture's budget before training (`budgets_before`, in flat slot order) and in the
/// pruned `layout`, with the reason for a change.
fn budget_changes(
    set: &TextureSet,
    layout: &ModelLayout,
    budgets_before: &[usize],
    train_report: &TrainReport,
    options: &CompressOptions,
) -> Vec<BudgetChange> {
    // The layout holds one slot per texture of the set, in the set's order (as the analyse pass
    // named them).
    let names = set.materials.iter().flat_map(|m| m.textures.iter().map(move |t| format!("{}/{}", m.name, t.info.kind)));
    let method = options.budgets.prune.as_ref().map(|p| format!("{:?} pruning at {:.0}% of training", p.method, 100.0 * p.at));
    let learned = train_report.learned_budgets.as_ref();
    layout
        .textures
        .iter()
        .flatten()
        .zip(budgets_before)
        .zip(names)
        .enumerate()
        .map(|(s, ((slot, &before), texture))| {
            let after = slot.latent_channels.len();
            if let Some(cut) = learned {
                let reason = learned_budget_reason(cut, s, before, after);
                return BudgetChange { texture, before: before as u32, after: after as u32, reason };
            }
            let reason = match (after.cmp(&before), &method) {
                (std::cmp::Ordering::Less, Some(method)) => {
                    format!(
                        "{} of its channels were among the {} that {method} removed",
                        before - after,
                        train_report.pruned_channels.len()
                    )
                }
                (std::cmp::Ordering::Equal, Some(_)) => "unchanged: pruning removed none of its channels".to_owned(),
                _ => "unchanged: no channel pruning during training".to_owned(),
            };
            BudgetChange { texture, before: before as u32, after: after as u32, reason }
        })
        .collect()
}
