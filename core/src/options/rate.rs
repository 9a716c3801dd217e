//! The model's shape follows the rate: which latent grids (texels per cell, channel split, bits),
//! which decoder and how many of the preset's steps a target rate gets, before its channel counts
//! are fitted to the rate ([`super::CompressOptions::fit_bits_per_texel_for`]). At low rates more, coarser channels
//! pay; at high rates a finer grid beats more channels of the same grid, as NTC's presets find
//! (docs/decisions/050-shape-follows-rate.md has the runs behind each row).

use super::{CompressOptions, GridOptions, ModelConfig, StepsOrigin};
use serde::Serialize;

/// One row of [`RATE_SHAPES`]: the shape of every rate from `from_bits_per_texel` up to the next
/// row's.
#[derive(Clone, Debug, PartialEq)]
pub struct RateShape {
    /// The lowest rate this row serves, bits per texel.
    pub from_bits_per_texel: f64,
    /// The grids, finest first, their channel counts before fitting (the fit keeps their ratio).
    pub grids: &'static [GridOptions],
    /// The decoder's hidden layer widths, input side first.
    pub hidden_widths: &'static [usize],
    /// The preset's training steps are multiplied by this (a preset's steps only: steps given are
    /// trained as given; on a hardware GPU `auto` scales the result as it scales a preset's).
    pub steps_scale: f64,
    /// The preset's decoder learning rate is multiplied by this where the row's decoder is
    /// trained (a decoder or a rate given explicitly is trained at the rate given or the preset's).
    pub mlp_learning_rate_scale: f32,
    /// The decoder reads grid 0's corners ([`ModelConfig::corner_reads`]) unless they were given
    /// or the options prune channels or learn budgets, which corner reads refuse.
    pub corner_reads: bool,
    /// Why this row has this shape, in words.
    pub why: &'static str,
}

const fn grid(texels_per_cell: u32, channels: u32, bits: u32) -> GridOptions {
    GridOptions { texels_per_cell, channels, bits }
}

/// The row from 5 bits per texel; the row from 6 is this shape at fewer steps.
const FROM_5: RateShape = RateShape {
    from_bits_per_texel: 5.0,
    grids: &[grid(2, 4, 4), grid(4, 12, 4), grid(8, 16, 4)],
    hidden_widths: &[96, 96, 64],
    steps_scale: 0.9,
    mlp_learning_rate_scale: 2.4,
    corner_reads: true,
    why: "a third grid, one cell per 2×2 texels with 4 channels, above the default's two; 4-bit latents (over the default's grids: +0.43 dB pooled at 5 bits per texel on the cabinet, +0.79 and +0.82 at 8 on the cabinet and shoe_street, +2.08 at 15 on the cabinet); a 96-96-64 decoder (+0.84 at 8 on the cabinet) learning at 2.4 times the preset's rate (+0.09 to +0.29 dB pooled at 8 on four of five sets, −0.23 on the glass; +0.14 at 5 on the cabinet); corner reads on the 2×2 grid (+0.17 to +0.37 dB pooled at 5 on the six shared sets), at 0.9 of the preset's steps",
};

/// The shapes by rate, lowest first; each row serves the rates from its own up to the next row's.
pub const RATE_SHAPES: [RateShape; 5] = [
    RateShape {
        from_bits_per_texel: 0.0,
        grids: &[grid(8, 6, 4), grid(16, 22, 4)],
        hidden_widths: &[64, 64, 64],
        steps_scale: 1.0,
        mlp_learning_rate_scale: 1.0,
        corner_reads: false,
        why: "grids one octave coarser than the default's at low rates: one cell per 8×8 texels and per 16×16, 6:22 channels, 4-bit latents (the precision search's pick at 1 bit per texel on three of four sets; +0.25 dB pooled over the default's grids at 1.67 bits per texel on the cabinet)",
    },
    RateShape {
        from_bits_per_texel: 2.0,
        grids: &[grid(4, 12, 4), grid(8, 16, 4)],
        hidden_widths: &[64, 64, 64],
        steps_scale: 1.0,
        mlp_learning_rate_scale: 1.0,
        corner_reads: false,
        why: "the default preset's grids: 4-bit latents, one cell per 4×4 texels and per 8×8, 12:16 channels",
    },
    FROM_5,
    RateShape {
        from_bits_per_texel: 6.0,
        steps_scale: 0.8,
        why: "the row from 5's grids, decoder, decoder learning rate and corner reads at 0.8 of the preset's steps, which keeps the default preset at 8 bits per texel under 3 minutes on two cores (0.92× the time of the row without corner reads at 0.9, shoe_beach, alternated)",
        ..FROM_5
    },
    RateShape {
        from_bits_per_texel: 10.0,
        grids: &[grid(1, 2, 4), grid(2, 4, 4), grid(4, 12, 4), grid(8, 16, 4)],
        hidden_widths: &[128, 128, 64],
        steps_scale: 1.0,
        mlp_learning_rate_scale: 1.0,
        corner_reads: false,
        why: "a fourth grid, one cell per texel with 2 channels, above the third; 4-bit latents (over three grids: +0.49 dB pooled at 10 bits per texel and +0.75 at 15 on the cabinet); a 128-128-64 decoder (+0.72 at 15 on the cabinet), its training time growing with the rate",
    },
];

impl RateShape {
    /// What decides the model a row trains (every field but `why`), as text for a cache key: a
    /// key that holds it is redone when the row changes.
    #[must_use]
    pub fn fingerprint(&self) -> String {
        format!(
            "{}:{:?}:{:?}:{}:{}:{}",
            self.from_bits_per_texel, self.grids, self.hidden_widths, self.steps_scale, self.mlp_learning_rate_scale, self.corner_reads
        )
    }
}

/// The row of [`RATE_SHAPES`] that serves `bits_per_texel`.
#[must_use]
pub fn rate_shape(bits_per_texel: f64) -> &'static RateShape {
    RATE_SHAPES.iter().rev().find(|row| bits_per_texel >= row.from_bits_per_texel).unwrap_or(&RATE_SHAPES[0])
}

/// The parts of the model's shape given explicitly (a command-line flag, a search point): a
/// rate's shape leaves them as they are. Not serialised: it says where a value came from, not
/// what the bundle stores.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[expect(clippy::struct_excessive_bools, reason = "each says of one independent value whether it was given")]
pub struct ExplicitShape {
    /// The grids (texels per cell, channel split, bits).
    pub grids: bool,
    /// Every grid's latent bits.
    pub latent_bits: bool,
    /// The decoder's hidden layer widths.
    pub decoder: bool,
    /// The decoder's learning rate.
    pub mlp_learning_rate: bool,
    /// Whether the decoder reads grid 0's corners.
    pub corner_reads: bool,
}

/// What a rate chose for the model's shape, as the analyse pass reports it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShapeChoice {
    /// The rate asked for, bits per texel.
    pub bits_per_texel: f64,
    /// The row that served it: its lowest rate.
    pub row_from_bits_per_texel: f64,
    /// Why the row has its shape.
    pub why: String,
    /// What was given explicitly and kept instead of the row's (`grids`, `latent bits`,
    /// `decoder`, `steps`).
    pub kept: Vec<String>,
    /// The preset's steps before the row's [`RateShape::steps_scale`]; `None` where steps were
    /// given. Fitting another rate to the same options starts again from these.
    pub preset_steps: Option<u32>,
    /// The steps the row gave (the preset's times its scale), where it gave any.
    pub steps: Option<u32>,
    /// The preset's decoder learning rate before the row's
    /// [`RateShape::mlp_learning_rate_scale`]; `None` where the rate or the decoder was given.
    pub preset_mlp_learning_rate: Option<f32>,
    /// The decoder learning rate the row gave, where it gave one.
    pub mlp_learning_rate: Option<f32>,
}

impl ShapeChoice {
    /// One line: `8 bits per texel: <why>; kept as given: latent bits`.
    #[must_use]
    pub fn describe(&self) -> String {
        let kept = if self.kept.is_empty() { String::new() } else { format!("; kept as given: {}", self.kept.join(", ")) };
        let steps = match (self.preset_steps, self.steps) {
            (Some(preset), Some(steps)) if preset != steps => format!("; {steps} training steps (the preset's {preset})"),
            _ => String::new(),
        };
        let rate = match (self.preset_mlp_learning_rate, self.mlp_learning_rate) {
            (Some(preset), Some(rate)) if preset.to_bits() != rate.to_bits() => {
                format!("; decoder learning rate {rate} (the preset's {preset})")
            }
            _ => String::new(),
        };
        format!("{} bits per texel: {}{steps}{rate}{kept}", self.bits_per_texel, self.why)
    }
}

impl CompressOptions {
    /// Gives the model the shape of `bits_per_texel`'s row (its grids, decoder and corner reads),
    /// a preset's steps the row's scale and the row's decoder its learning rate, recording them
    /// ([`ModelConfig::shape_choice`]). Idempotent: a second rate starts again from the
    /// preset's steps and rate, and sets the reads again.
    pub(super) fn take_rate_shape(&mut self, bits_per_texel: f64) {
        let row = rate_shape(bits_per_texel);
        let before = self.model.shape_choice.as_ref();
        let preset_steps = before.and_then(|c| c.preset_steps).unwrap_or(self.schedule.steps);
        let preset_rate = before.and_then(|c| c.preset_mlp_learning_rate).unwrap_or(self.schedule.optimiser.mlp_learning_rate);
        self.model.take_rate_shape(row, bits_per_texel);
        let explicit = self.model.explicit;
        let Some(choice) = self.model.shape_choice.as_mut() else { return };
        if self.schedule.steps_origin == StepsOrigin::Preset {
            self.schedule.steps = ((f64::from(preset_steps) * row.steps_scale).round() as u32).max(1);
            choice.preset_steps = Some(preset_steps);
            choice.steps = Some(self.schedule.steps);
        } else {
            choice.kept.push("steps".to_owned());
        }
        if explicit.mlp_learning_rate {
            choice.kept.push("decoder learning rate".to_owned());
        } else if !explicit.decoder {
            self.schedule.optimiser.mlp_learning_rate = preset_rate * row.mlp_learning_rate_scale;
            choice.preset_mlp_learning_rate = Some(preset_rate);
            choice.mlp_learning_rate = Some(self.schedule.optimiser.mlp_learning_rate);
        } else {
            // A decoder given trains at the preset's rate, whatever the row before gave.
            self.schedule.optimiser.mlp_learning_rate = preset_rate;
        }
        if explicit.corner_reads {
            if row.corner_reads != self.model.corner_reads {
                choice.kept.push("corner reads".to_owned());
            }
        } else if let Some(with) = self.budgets.refuses_corner_reads().filter(|_| row.corner_reads) {
            self.model.corner_reads = false;
            choice.kept.push(format!("bilinear reads, for {with}"));
        } else {
            self.model.corner_reads = row.corner_reads;
        }
    }
}

impl ModelConfig {
    /// Gives the grids and the decoder the shape of `row` (the row of `bits_per_texel`), but for
    /// what was given explicitly, and records the choice ([`ModelConfig::shape_choice`]).
    fn take_rate_shape(&mut self, row: &RateShape, bits_per_texel: f64) {
        let mut kept = Vec::new();
        if self.explicit.grids {
            kept.push("grids".to_owned());
        } else {
            // `--latent-bits` sets every grid's bits alike: the first grid's are the ones given.
            let given_bits = self.grids.first().map(|g| g.bits).filter(|_| self.explicit.latent_bits);
            self.grids = row.grids.to_vec();
            if let Some(bits) = given_bits {
                for g in &mut self.grids {
                    g.bits = bits;
                }
            }
        }
        if self.explicit.latent_bits {
            kept.push("latent bits".to_owned());
        }
        if self.explicit.decoder {
            kept.push("decoder".to_owned());
        } else {
            self.hidden_widths = row.hidden_widths.to_vec();
        }
        self.shape_choice = Some(ShapeChoice {
            bits_per_texel,
            row_from_bits_per_texel: row.from_bits_per_texel,
            why: row.why.to_owned(),
            kept,
            preset_steps: None,
            steps: None,
            preset_mlp_learning_rate: None,
            mlp_learning_rate: None,
        });
    }
}
