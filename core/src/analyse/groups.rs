//! Material groups (materials related by a duplicate or colour variant) and the channels each reads.

use crate::analyse::{BudgetSource, TextureBudget, channel_priority};
use crate::model::layout::{GridShape, TextureSlot};
use crate::set::TextureSet;

/// Groups of related materials: two materials are related when a map of one is a duplicate or a
/// colour variant of a map of the other. Returns each material's group (groups numbered in order
/// of their first material).
#[must_use]
pub fn material_groups(textures: &[Vec<TextureSlot>]) -> Vec<usize> {
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let mut parent: Vec<usize> = (0..textures.len()).collect();
    for (m, slots) in textures.iter().enumerate() {
        for slot in slots {
            if let Some((other, _)) = slot.duplicate_of {
                let (a, b) = (root(&mut parent, m), root(&mut parent, other));
                parent[a.max(b)] = a.min(b);
            }
        }
    }
    let mut ids: Vec<Option<usize>> = vec![None; textures.len()];
    let mut next = 0;
    (0..textures.len())
        .map(|m| {
            let r = root(&mut parent, m);
            *ids[r].get_or_insert_with(|| {
                next += 1;
                next - 1
            })
        })
        .collect()
}

/// Gives each group of related materials its own channels of every grid, in proportion to the
/// group's content (bits per texel × texels, summed over its maps), at least one per grid. A map
/// keeps its budget's share of its group's channels. Leaves everything shared when a grid has
/// fewer channels than there are groups.
pub(crate) fn split_channels_by_material_group(
    set: &TextureSet,
    grids: &[GridShape],
    contents: &[Vec<(f32, f32)>],
    textures: &mut [Vec<TextureSlot>],
    budgets: &mut [TextureBudget],
) {
    let groups = material_groups(textures);
    let count = groups.iter().max().map_or(0, |g| g + 1);
    if count < 2 || grids.iter().any(|g| (g.channels as usize) < count) {
        return;
    }
    let mut weight = vec![0.0f64; count];
    for (m, material) in set.materials.iter().enumerate() {
        for (t, texture) in material.textures.iter().enumerate() {
            if textures[m][t].duplicate_of.is_none() {
                weight[groups[m]] += f64::from(contents[m][t].0) * texture.texel_count() as f64;
            }
        }
    }
    let sum: f64 = weight.iter().sum::<f64>().max(1e-12);
    // Per group, its channels of each grid (contiguous ranges), then in priority order.
    let mut own: Vec<Vec<u32>> = vec![Vec::new(); count];
    let mut offset = 0u32;
    for g in grids {
        let free = g.channels as usize - count;
        // One each, then the rest by largest remainder.
        let shares: Vec<f64> = weight.iter().map(|w| w / sum * free as f64).collect();
        let mut take: Vec<usize> = shares.iter().map(|s| 1 + s.floor() as usize).collect();
        let mut left = g.channels as usize - take.iter().sum::<usize>();
        let mut order: Vec<usize> = (0..count).collect();
        order.sort_by(|&a, &b| (shares[b] - shares[b].floor()).total_cmp(&(shares[a] - shares[a].floor())));
        for &k in order.iter().cycle() {
            if left == 0 {
                break;
            }
            take[k] += 1;
            left -= 1;
        }
        let mut start = offset;
        for (k, n) in take.iter().enumerate() {
            own[k].extend(start..start + *n as u32);
            start += *n as u32;
        }
        offset += g.channels;
    }
    let priority = channel_priority(grids);
    let rank: std::collections::HashMap<u32, usize> = priority.iter().enumerate().map(|(i, &c)| (c, i)).collect();
    for list in &mut own {
        list.sort_by_key(|c| rank.get(c).copied().unwrap_or(usize::MAX));
    }
    let total: usize = grids.iter().map(|g| g.channels as usize).sum();
    let names: Vec<Vec<&str>> = (0..count)
        .map(|k| set.materials.iter().enumerate().filter(|(m, _)| groups[*m] == k).map(|(_, mat)| mat.name.as_str()).collect())
        .collect();
    let mut b = budgets.iter_mut();
    for (m, slots) in textures.iter_mut().enumerate() {
        let list = &own[groups[m]];
        for slot in slots {
            let budget = b.next();
            // An artist's budget is a channel count (up to the group's own channels); the
            // analysis's budgets are fractions of all channels, scaled to the group's.
            let manual = budget.as_ref().is_some_and(|b| b.source == BudgetSource::Manual);
            let k = if manual { slot.latent_channels.len() } else { (slot.latent_channels.len() * list.len()).div_ceil(total.max(1)) };
            let mut channels = list[..k.min(list.len())].to_vec();
            channels.sort_unstable();
            slot.latent_channels = channels;
            if let Some(budget) = budget {
                budget.channels = slot.latent_channels.len() as u32;
                budget.reason = format!(
                    "{}; material group {} of {count} ({}) reads its own {} channels",
                    budget.reason.replacen("every channel", "every channel of its group", 1),
                    groups[m] + 1,
                    names[groups[m]].join(", "),
                    list.len()
                );
            }
        }
    }
}
