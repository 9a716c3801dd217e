//! The MLP's input layout, stated once: per latent grid (grid 0 first) its channels' features —
//! one per channel, or four per channel (each bilinear corner times its weight) for a grid whose
//! corners the decoder reads —, then the positional encoding's four values per frequency
//! (`sin x, cos x, sin y, cos y`), then, with a latent pyramid, the LOD input. Every consumer
//! walks this: the CPU reference, the batched and fused CPU kernels, the GPU trainer's generated
//! gather and scatter, the WGSL latent fetch of texset-shaders and burn's model; a test checks
//! each one's offsets against these slots (`every_consumer_reads_the_input_layouts_slots`).

use std::ops::Range;

/// MLP inputs each latent channel gives: 1, or 4 for a grid whose corners the decoder reads.
#[must_use]
pub const fn inputs_per_channel(corners: bool) -> usize {
    if corners { 4 } else { 1 }
}

/// What one latent grid gives the MLP's input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GridInputs {
    /// Its first latent channel: its channels' index in a budget mask.
    pub first_channel: usize,
    /// Its channels.
    pub channels: usize,
    /// Whether each channel gives its four weighted corners instead of their sum.
    pub corners: bool,
    /// Its first MLP input.
    pub first_input: usize,
}

impl GridInputs {
    /// Inputs per channel ([`inputs_per_channel`]).
    #[must_use]
    pub const fn reads(&self) -> usize {
        inputs_per_channel(self.corners)
    }

    /// The input of channel `channel` (of this grid), read `read`: corner `read` of a grid that
    /// reads its corners, else `read` 0.
    #[must_use]
    pub const fn input(&self, channel: usize, read: usize) -> usize {
        self.first_input + channel * self.reads() + read
    }

    /// The inputs of channel `channel` (of this grid).
    #[must_use]
    pub const fn channel_inputs(&self, channel: usize) -> Range<usize> {
        let first = self.input(channel, 0);
        first..first + self.reads()
    }

    /// All of its inputs.
    #[must_use]
    pub const fn inputs(&self) -> Range<usize> {
        self.first_input..self.first_input + self.channels * self.reads()
    }
}

/// The MLP's input layout ([module docs](self)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputLayout {
    grids: Vec<GridInputs>,
    pe_frequencies: usize,
    lod: bool,
}

impl InputLayout {
    /// The layout of grids of `(channels, corners)` (grid 0 first), `pe_frequencies` positional
    /// encoding frequencies and, with `lod`, the LOD input.
    #[must_use]
    pub fn new(grids: impl IntoIterator<Item = (u32, bool)>, pe_frequencies: u32, lod: bool) -> Self {
        let (mut first_channel, mut first_input) = (0, 0);
        let grids = grids
            .into_iter()
            .map(|(channels, corners)| {
                let grid = GridInputs { first_channel, channels: channels as usize, corners, first_input };
                first_channel += grid.channels;
                first_input += grid.channels * grid.reads();
                grid
            })
            .collect();
        Self { grids, pe_frequencies: pe_frequencies as usize, lod }
    }

    /// Each grid's inputs, grid 0 first.
    #[must_use]
    pub fn grids(&self) -> &[GridInputs] {
        &self.grids
    }

    /// Latent channels over all grids (the width of a budget mask).
    #[must_use]
    pub fn latent_channels(&self) -> usize {
        self.grids.last().map_or(0, |g| g.first_channel + g.channels)
    }

    /// Inputs the latents give (the first positional-encoding input).
    #[must_use]
    pub fn latent_features(&self) -> usize {
        self.grids.last().map_or(0, |g| g.inputs().end)
    }

    /// The inputs that read latent channel `channel` (of all grids): empty past the last.
    #[must_use]
    pub fn channel_inputs(&self, channel: usize) -> Range<usize> {
        self.grids
            .iter()
            .find(|g| (g.first_channel..g.first_channel + g.channels).contains(&channel))
            .map_or(self.latent_features()..self.latent_features(), |g| g.channel_inputs(channel - g.first_channel))
    }

    /// Positional-encoding frequencies.
    #[must_use]
    pub fn pe_frequencies(&self) -> usize {
        self.pe_frequencies
    }

    /// The input of frequency `frequency`'s value `component`: 0 `sin x`, 1 `cos x`, 2 `sin y`,
    /// 3 `cos y`.
    #[must_use]
    pub fn pe_input(&self, frequency: usize, component: usize) -> usize {
        self.latent_features() + 4 * frequency + component
    }

    /// The LOD input, with a latent pyramid.
    #[must_use]
    pub fn lod_input(&self) -> Option<usize> {
        self.lod.then(|| self.latent_features() + 4 * self.pe_frequencies)
    }

    /// Width of the MLP input.
    #[must_use]
    pub fn width(&self) -> usize {
        self.latent_features() + 4 * self.pe_frequencies + usize::from(self.lod)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slots follow one another without gaps or overlaps, in the stated order.
    #[test]
    fn slots_tile_the_input_in_order() {
        let layout = InputLayout::new([(3, true), (2, false), (4, false)], 2, true);
        let mut next = 0;
        for g in layout.grids() {
            for c in 0..g.channels {
                for k in 0..g.reads() {
                    assert_eq!(g.input(c, k), next);
                    next += 1;
                }
                assert_eq!(layout.channel_inputs(g.first_channel + c), g.channel_inputs(c));
            }
        }
        assert_eq!((layout.latent_channels(), layout.latent_features()), (9, 18));
        for f in 0..2 {
            for j in 0..4 {
                assert_eq!(layout.pe_input(f, j), next);
                next += 1;
            }
        }
        assert_eq!(layout.lod_input(), Some(next));
        assert_eq!(layout.width(), next + 1);
        assert_eq!(layout.channel_inputs(9), 18..18);
        assert_eq!(InputLayout::new([], 0, false).width(), 0);
    }
}
