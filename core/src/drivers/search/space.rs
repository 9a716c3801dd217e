//! The search space: the latent shapes, bit depths and decoder sizes a search may pick, and a
//! point of it sized to a rate.

use crate::model::quant::WeightFormat;
use crate::options::{CompressOptions, ExplicitShape, GridOptions, OptionsError};
use crate::set::TextureSet;
use serde::{Deserialize, Serialize};

/// Dimensions of the space.
pub(super) const DIMS: usize = 5;

/// The values each dimension may take.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchSpace {
    /// Bits per latent value (every grid).
    pub latent_bits: Vec<u32>,
    /// Texels per cell of the finest grid (the coarse grid has twice as many per axis).
    pub finest_texels_per_cell: Vec<u32>,
    /// Channels of the fine and the coarse grid before fitting to the rate (the fit keeps their
    /// ratio).
    pub channel_splits: Vec<[u32; 2]>,
    /// Hidden layer widths of the decoder.
    pub hidden_widths: Vec<Vec<usize>>,
    /// Decoder weight formats.
    pub weight_formats: Vec<WeightFormat>,
}

impl Default for SearchSpace {
    /// 81 points around the default preset: latent bits 2/4/8; finest grid 2, 4 or 8 texels per
    /// cell; channel splits 12:16 (the default), 20:8 (finer) and 6:22 (coarser); decoders
    /// 32-32, 64-64-64 (the default) and 96-64-32; int8 weights (the other formats change a
    /// bundle by a few kilobytes and its PSNR by hundredths of a dB: docs/benchmarks.md).
    fn default() -> Self {
        Self {
            latent_bits: vec![2, 4, 8],
            finest_texels_per_cell: vec![2, 4, 8],
            channel_splits: vec![[12, 16], [20, 8], [6, 22]],
            hidden_widths: vec![vec![32, 32], vec![64, 64, 64], vec![96, 64, 32]],
            weight_formats: vec![WeightFormat::Int8],
        }
    }
}

impl SearchSpace {
    pub(super) fn sizes(&self) -> [usize; DIMS] {
        [
            self.latent_bits.len(),
            self.finest_texels_per_cell.len(),
            self.channel_splits.len(),
            self.hidden_widths.len(),
            self.weight_formats.len(),
        ]
    }

    pub(super) fn point(&self, index: [usize; DIMS]) -> SearchPoint {
        SearchPoint {
            latent_bits: self.latent_bits[index[0]],
            finest_texels_per_cell: self.finest_texels_per_cell[index[1]],
            channel_split: self.channel_splits[index[2]],
            hidden_widths: self.hidden_widths[index[3]].clone(),
            weight_format: self.weight_formats[index[4]],
        }
    }

    pub(super) fn index_of(&self, p: &SearchPoint) -> Option<[usize; DIMS]> {
        Some([
            self.latent_bits.iter().position(|&b| b == p.latent_bits)?,
            self.finest_texels_per_cell.iter().position(|&t| t == p.finest_texels_per_cell)?,
            self.channel_splits.iter().position(|&s| s == p.channel_split)?,
            self.hidden_widths.iter().position(|w| *w == p.hidden_widths)?,
            self.weight_formats.iter().position(|&f| f == p.weight_format)?,
        ])
    }

    pub(super) fn all(&self) -> Vec<[usize; DIMS]> {
        // Every index in order, the last dimension fastest.
        let s = self.sizes();
        let count: usize = s.iter().product();
        (0..count)
            .map(|mut k| {
                let mut x = [0usize; DIMS];
                for d in (0..DIMS).rev() {
                    x[d] = k % s[d];
                    k /= s[d];
                }
                x
            })
            .collect()
    }

    pub(super) fn validate(&self) -> Result<(), String> {
        if self.sizes().contains(&0) {
            return Err("every dimension of the search space needs at least one value".into());
        }
        if self.latent_bits.iter().any(|b| !(1..=8).contains(b)) {
            return Err("latent bits must be 1..=8".into());
        }
        if self.finest_texels_per_cell.iter().any(|&t| t == 0 || t > 64) {
            return Err("texels per cell must be 1..=64".into());
        }
        if self.channel_splits.iter().any(|s| s.contains(&0)) {
            return Err("channel splits need at least one channel per grid".into());
        }
        let max_width = crate::model::params::MAX_MLP_WIDTH;
        if self.hidden_widths.iter().any(|w| w.is_empty() || w.iter().any(|&x| x == 0 || x > max_width)) {
            return Err(format!("decoder widths must be 1..={max_width}, at least one layer"));
        }
        Ok(())
    }
}

/// One configuration the search can try.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchPoint {
    /// Bits per latent value.
    pub latent_bits: u32,
    /// Texels per cell of the finest grid.
    pub finest_texels_per_cell: u32,
    /// Fine and coarse channels before fitting.
    pub channel_split: [u32; 2],
    /// Decoder hidden widths.
    pub hidden_widths: Vec<usize>,
    /// Decoder weight format.
    #[serde(default)]
    pub weight_format: WeightFormat,
}

impl SearchPoint {
    /// The point `options` already is, when its grids are two with the coarse one twice as
    /// coarse as the fine one and the same bits (the presets are).
    #[must_use]
    pub fn of(options: &CompressOptions) -> Option<Self> {
        let [fine, coarse] = options.model.grids.as_slice() else { return None };
        (coarse.texels_per_cell == 2 * fine.texels_per_cell && coarse.bits == fine.bits).then(|| Self {
            latent_bits: fine.bits,
            finest_texels_per_cell: fine.texels_per_cell,
            channel_split: [fine.channels, coarse.channels],
            hidden_widths: options.model.hidden_widths.clone(),
            weight_format: options.model.weight_format,
        })
    }

    /// `base` with this point's shape, sized to `bits_per_texel` on `set`.
    pub fn options(&self, base: &CompressOptions, bits_per_texel: f64, set: &TextureSet) -> Result<CompressOptions, OptionsError> {
        let mut options = base.clone();
        options.model.grids = vec![
            GridOptions { texels_per_cell: self.finest_texels_per_cell, channels: self.channel_split[0], bits: self.latent_bits },
            GridOptions { texels_per_cell: 2 * self.finest_texels_per_cell, channels: self.channel_split[1], bits: self.latent_bits },
        ];
        options.model.hidden_widths.clone_from(&self.hidden_widths);
        options.model.weight_format = self.weight_format;
        // The point is the shape: the rate only sizes its channels (the base's reads kept).
        options.model.explicit =
            ExplicitShape { grids: true, latent_bits: true, decoder: true, mlp_learning_rate: false, corner_reads: true };
        options.budgets.prune = None;
        options.fit_bits_per_texel_for(bits_per_texel, set)?;
        Ok(options)
    }

    /// A short label: `4b 1/4 12:16 64-48-32` (weights other than int8 follow: ` fp16`).
    #[must_use]
    pub fn label(&self) -> String {
        let widths: Vec<String> = self.hidden_widths.iter().map(ToString::to_string).collect();
        let format = match self.weight_format {
            WeightFormat::Int8 => String::new(),
            other => format!(" {}", other.label()),
        };
        format!(
            "{}b 1/{} {}:{} {}{format}",
            self.latent_bits,
            self.finest_texels_per_cell,
            self.channel_split[0],
            self.channel_split[1],
            widths.join("-")
        )
    }
}
