//! Per-texture channel budgets as the budget panel shows them: channels read (shared with other
//! materials vs the material's own) and each texture's share of the bundle's bits.

use texset_core::{bundle::Manifest, model::ModelLayout};

/// One texture's row.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetRow {
    /// `material/kind`.
    pub texture: String,
    /// Latent channels it reads.
    pub channels: u32,
    /// Of how many in the bundle.
    pub total_channels: u32,
    /// Of those it reads, how many textures of other materials read too.
    pub shared_channels: u32,
    /// Stored as another map's outputs (a duplicate or colour variant).
    pub stored_once: bool,
    /// Its share of the latent and last-layer bits: each channel's bits split evenly among the
    /// textures that read it, plus its own output rows of the last layer (int8 + scale + bias).
    pub bits: f64,
}

/// One map as the rows see it: kind token, latent channels read, output rows it owns (0 when stored
/// as another map's outputs), stored once.
pub type MapBudget = (String, Vec<u32>, u32, bool);

/// What the rows are computed from: one entry per texture, plus the grids.
pub struct BudgetInput {
    /// Per grid: texels (cells) and bits per value.
    pub grids: Vec<(u64, u32, u32)>,
    /// Per material: name and per map (kind token, channels read, output rows it owns, stored once).
    pub materials: Vec<(String, Vec<MapBudget>)>,
    /// Inputs of the last MLP layer (row length).
    pub last_layer_inputs: u32,
}

impl BudgetInput {
    /// From an analysed layout (before training).
    #[must_use]
    pub fn from_layout(layout: &ModelLayout, names: &[(String, Vec<String>)]) -> Self {
        let grids = layout.grids.iter().map(|g| (u64::from(g.width) * u64::from(g.height), g.channels, g.bits)).collect();
        let materials = names
            .iter()
            .zip(&layout.textures)
            .map(|((name, kinds), slots)| {
                let maps = kinds
                    .iter()
                    .zip(slots)
                    .map(|(kind, s)| {
                        let stored_once = s.duplicate_of.is_some();
                        (kind.clone(), s.latent_channels.clone(), if stored_once { 0 } else { s.channels as u32 }, stored_once)
                    })
                    .collect();
                (name.clone(), maps)
            })
            .collect();
        Self { grids, materials, last_layer_inputs: layout.hidden_widths.last().copied().unwrap_or(0) as u32 }
    }

    /// From a bundle's manifest (after training).
    #[must_use]
    pub fn from_manifest(manifest: &Manifest) -> Self {
        let grids = manifest.grids.iter().map(|g| (u64::from(g.width) * u64::from(g.height), g.channels, g.bits)).collect();
        let mut claimed = std::collections::BTreeSet::new();
        let materials = manifest
            .materials
            .iter()
            .map(|m| {
                let maps = m
                    .maps
                    .iter()
                    .map(|e| {
                        // Maps that share an output slice (duplicates, colour variants) own it once.
                        let first = claimed.insert(e.output_offset);
                        (e.info.kind.token().to_owned(), e.latent_channels.clone(), if first { e.info.channels } else { 0 }, !first)
                    })
                    .collect();
                (m.name.clone(), maps)
            })
            .collect();
        Self { grids, materials, last_layer_inputs: manifest.layers.last().map_or(0, |l| l.inputs) }
    }

    /// The rows, in library order.
    #[must_use]
    pub fn rows(&self) -> Vec<BudgetRow> {
        let total: u32 = self.grids.iter().map(|g| g.1).sum();
        // Bits of one channel of each global channel index.
        let mut channel_bits = Vec::new();
        for &(cells, channels, bits) in &self.grids {
            for _ in 0..channels {
                channel_bits.push(cells as f64 * f64::from(bits));
            }
        }
        let mut readers = vec![0u32; total as usize];
        let mut materials_reading: Vec<std::collections::BTreeSet<usize>> = vec![std::collections::BTreeSet::new(); total as usize];
        for (mi, (_, maps)) in self.materials.iter().enumerate() {
            for (_, channels, _, _) in maps {
                for &c in channels {
                    if let Some(r) = readers.get_mut(c as usize) {
                        *r += 1;
                        materials_reading[c as usize].insert(mi);
                    }
                }
            }
        }
        let row_bits = f64::from(self.last_layer_inputs * 8 + 64);
        let mut rows = Vec::new();
        for (mi, (name, maps)) in self.materials.iter().enumerate() {
            for (kind, channels, outputs, stored_once) in maps {
                let latent: f64 = channels
                    .iter()
                    .filter_map(|&c| Some(channel_bits.get(c as usize)? / f64::from(*readers.get(c as usize)?.max(&1))))
                    .sum();
                let shared =
                    channels.iter().filter(|&&c| materials_reading.get(c as usize).is_some_and(|s| s.iter().any(|&o| o != mi))).count();
                rows.push(BudgetRow {
                    texture: format!("{name}/{kind}"),
                    channels: channels.len() as u32,
                    total_channels: total,
                    shared_channels: shared as u32,
                    stored_once: *stored_once,
                    bits: latent + f64::from(*outputs) * row_bits,
                });
            }
        }
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_split_channel_bits_among_readers() {
        // One grid of 4 cells × 2 channels × 4 bits; two materials read channel 0, only `b` reads 1.
        let input = BudgetInput {
            grids: vec![(4, 2, 4)],
            materials: vec![
                ("a".into(), vec![("roughness".into(), vec![0], 1, false)]),
                ("b".into(), vec![("roughness".into(), vec![0, 1], 1, false), ("ao".into(), vec![], 0, true)]),
            ],
            last_layer_inputs: 8,
        };
        let rows = input.rows();
        assert_eq!(rows.len(), 3);
        let row_bits = f64::from(8 * 8 + 64);
        assert!((rows[0].bits - (16.0 / 2.0 + row_bits)).abs() < 1e-9);
        assert!((rows[1].bits - (16.0 / 2.0 + 16.0 + row_bits)).abs() < 1e-9);
        assert!(rows[2].bits.abs() < 1e-9);
        assert_eq!((rows[0].shared_channels, rows[1].shared_channels), (1, 1));
        assert!(rows[2].stored_once);
        assert_eq!(rows[1].total_channels, 2);
    }
}
