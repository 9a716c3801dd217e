//! The model layout the analyse pass decides: grid shapes, MLP widths and, per texture, its
//! output slice and channel budget. Training, pruning and packing all follow it.

use crate::model::params::{GridParams, LayerParams, ModelParams};
use serde::Serialize;

/// Shape and bit depth of one latent grid.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GridShape {
    /// Cells across.
    pub width: u32,
    /// Cells down.
    pub height: u32,
    /// Channels.
    pub channels: u32,
    /// Bits per latent value.
    pub bits: u32,
    /// The MLP reads each channel's four weighted corners ([`crate::model::params::GridParams::corners`]).
    pub corners: bool,
}

/// Where one texture (map) sits in the model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TextureSlot {
    /// First MLP output channel.
    pub output_offset: usize,
    /// Channels of the map.
    pub channels: usize,
    /// Latent channels it reads (its budget), sorted indices over all grids.
    pub latent_channels: Vec<u32>,
    /// Loss weight of each of its channels.
    pub loss_weight: f32,
    /// Per channel, a factor on `loss_weight` (empty: 1 for every channel); a normal map's z
    /// channel takes [`crate::options::LossConfig::normal_z_weight`].
    pub channel_loss_factors: Vec<f32>,
    /// A normal map trained towards its unit-length normals
    /// ([`crate::options::NormalTargets::Unit`]).
    pub unit_normal_targets: bool,
    /// `(material, map)` of an earlier, identical texture whose outputs this one shares: it is
    /// stored once (same `output_offset` and budget) and not sampled again in training.
    pub duplicate_of: Option<(usize, usize)>,
    /// With `duplicate_of`: the affine colour transform that turns the original's decoded values
    /// into this texture's (`None`: identical).
    pub color_transform: Option<Vec<[f32; 5]>>,
}

/// The whole layout.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelLayout {
    /// Latent grids, finest first.
    pub grids: Vec<GridShape>,
    /// Positional-encoding frequencies.
    pub pe_frequencies: u32,
    /// Hidden widths of the MLP.
    pub hidden_widths: Vec<usize>,
    /// Per material, per map (in the set's order), its slot.
    pub textures: Vec<Vec<TextureSlot>>,
    /// Mip levels the latents encode: 1 (level 0 only) or the full mip chain of the largest map.
    pub mip_levels: u32,
    /// Consecutive mip levels each pyramid level serves (1: one pyramid level per mip level).
    pub mip_group: u32,
    /// The pyramid's levels 1 and up, level by level, each with every grid (see
    /// [`crate::model::params::ModelParams::mip_grids`]); empty without a mip chain.
    pub mip_grids: Vec<GridShape>,
    /// How the decoder's weights are stored (and fake-quantised in training).
    pub weight_format: crate::model::quant::WeightFormat,
    /// The decoder's hidden activation.
    pub activation: crate::model::params::Activation,
}

impl ModelLayout {
    /// Total latent channels.
    #[must_use]
    pub fn latent_channels(&self) -> usize {
        self.grids.iter().map(|g| g.channels as usize).sum()
    }

    /// Total output channels: the end of the last output slice (a layout that adds materials to
    /// a trained library lists only the new ones, whose slices start after the old outputs).
    #[must_use]
    pub fn output_channels(&self) -> usize {
        self.textures.iter().flatten().map(|t| t.output_offset + t.channels).max().unwrap_or(0)
    }

    /// Per latent channel, whether any texture reads it.
    #[must_use]
    pub fn read_channels(&self) -> Vec<bool> {
        let mut read = vec![false; self.latent_channels()];
        for slot in self.textures.iter().flatten() {
            for &c in &slot.latent_channels {
                if let Some(r) = read.get_mut(c as usize) {
                    *r = true;
                }
            }
        }
        read
    }

    /// The channel mask of a texture: 1.0 for each latent channel it reads.
    #[must_use]
    pub fn mask(&self, slot: &TextureSlot) -> Vec<f32> {
        let mut mask = vec![0.0; self.latent_channels()];
        for &c in &slot.latent_channels {
            if let Some(m) = mask.get_mut(c as usize) {
                *m = 1.0;
            }
        }
        mask
    }

    /// Width of the MLP input: the latent features (four per channel of a grid that reads its
    /// corners), the positional encoding and, with a mip chain, the LOD input.
    #[must_use]
    pub fn mlp_inputs(&self) -> usize {
        crate::model::InputLayout::new(self.grids.iter().map(|g| (g.channels, g.corners)), self.pe_frequencies, self.mip_levels > 1).width()
    }

    /// Zero-valued parameters of this shape.
    #[must_use]
    pub fn zero_params(&self) -> ModelParams {
        let mut layers = Vec::new();
        let mut inputs = self.mlp_inputs();
        for &w in self.hidden_widths.iter().chain(std::iter::once(&self.output_channels())) {
            layers.push(LayerParams::zeros(inputs, w));
            inputs = w;
        }
        ModelParams {
            grids: self
                .grids
                .iter()
                .map(|g| GridParams { corners: g.corners, ..GridParams::zeros(g.width, g.height, g.channels) })
                .collect(),
            pe_frequencies: self.pe_frequencies,
            layers,
            mip_grids: self
                .mip_grids
                .iter()
                .map(|g| GridParams { corners: g.corners, ..GridParams::zeros(g.width, g.height, g.channels) })
                .collect(),
            mip_group: self.mip_group,
            activation: self.activation,
        }
    }
}
