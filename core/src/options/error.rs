//! What is wrong with a set of options.

use crate::model::params::MAX_MLP_WIDTH;

/// Options training cannot use, or a rate they cannot reach.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum OptionsError {
    /// No latent grid.
    #[error("at least one latent grid is needed")]
    NoGrids,
    /// A grid's latent bits outside 1..=8.
    #[error("grid {grid}: latent bits must be 1..=8, got {bits}")]
    LatentBits {
        /// Which grid.
        grid: usize,
        /// Its bits.
        bits: u32,
    },
    /// A grid with no channels, too many, or zero texels per cell.
    #[error("grid {grid}: channels 1..=256 and texels per cell ≥ 1 required")]
    GridShape {
        /// Which grid.
        grid: usize,
    },
    /// A hidden layer of no width or wider than the GPU decoder takes.
    #[error("hidden widths must be 1..={MAX_MLP_WIDTH}")]
    HiddenWidth,
    /// More decoder inputs than the GPU decoder takes.
    #[error(
        "the decoder would take {inputs} inputs (latent channels, 4 per corner-read channel, 4 per PE frequency, 1 for mips); at most {MAX_MLP_WIDTH}"
    )]
    DecoderInputs {
        /// Inputs the options ask for.
        inputs: usize,
    },
    /// Corner reads asked with a part of training that does not take them yet.
    #[error("corner reads do not combine with {with} yet")]
    CornerReads {
        /// What they were asked with.
        with: &'static str,
    },
    /// More hidden layers than a bundle stores.
    #[error("{layers} hidden layers; at most {max}")]
    HiddenLayers {
        /// Layers asked for.
        layers: usize,
        /// The bundle's limit.
        max: usize,
    },
    /// A loss weight (per map kind, or a normal map's z weight) negative or not finite.
    #[error("loss weight {what}: must be finite and at least 0, got {weight}")]
    LossWeight {
        /// Which weight.
        what: String,
        /// Its value.
        weight: f32,
    },
    /// Zero steps or an empty batch.
    #[error("steps and batch size must be positive")]
    EmptySchedule,
    /// A freeze point outside 0..=1.
    #[error("freeze_latents_at and quantize_weights_at are fractions in 0..=1")]
    ScheduleFractions,
    /// A schedule value outside its range (the recipe's pieces).
    #[error("{what} must be {range}, got {value}")]
    ScheduleValue {
        /// The option.
        what: &'static str,
        /// Its range, in words.
        range: &'static str,
        /// The value given.
        value: f32,
    },
    /// Pruning names a different number of grids.
    #[error("pruning keeps channels for {keep} grids, there are {grids}")]
    PruneGrids {
        /// Grids the pruning names.
        keep: usize,
        /// Grids there are.
        grids: usize,
    },
    /// Pruning keeps no channel of a grid, or more than it has.
    #[error("pruning must keep 1 to all of each grid's channels")]
    PruneKeep,
    /// Pruning outside the training before the freeze.
    #[error("pruning happens after some training and before the latents freeze (0 < at < freeze_latents_at)")]
    PruneAt,
    /// A negative or non-finite lasso strength.
    #[error("a group-lasso strength must be a non-negative number")]
    Lasso,
    /// Learned budgets and pruning together.
    #[error("learned budgets and channel pruning do not combine: use one")]
    LearnedWithPrune,
    /// Budgets learned outside the training before the freeze.
    #[error("budgets are learned after some training and before the latents freeze (0 < at < freeze_latents_at)")]
    LearnedAt,
    /// A learned budget's threshold outside 0..1.
    #[error("a learned budget drops channels under a fraction 0 to 1 of the largest importance, got {drop_below}")]
    DropBelow {
        /// The threshold asked for.
        drop_below: f32,
    },
    /// More than 8 positional-encoding frequencies.
    #[error("at most 8 positional-encoding frequencies")]
    PeFrequencies,
    /// A mip cell growth outside 1..=4.
    #[error("the mip cell growth must be 1 to 4, got {growth}")]
    MipCellGrowth {
        /// The growth asked for.
        growth: f32,
    },
    /// A mip group outside 1..=4.
    #[error("the mip group must be 1 to 4 mip levels per pyramid level, got {group}")]
    MipGroup {
        /// The group asked for.
        group: u32,
    },
    /// An error-driven sampling mix outside 0..=0.95 or a uniform tail outside 0..=1.
    #[error("sampling: the mix must be 0 to 0.95 (got {mix}) and the uniform tail starts at a fraction 0 to 1 of the steps (got {after})")]
    Sampling {
        /// The mix asked for.
        mix: f32,
        /// The fraction after which the draws are uniform again.
        after: f32,
    },
    /// A mip sample boost outside 1..=4.
    #[error("the mip sample boost must be 1 to 4, got {boost}")]
    MipSampleBoost {
        /// The boost asked for.
        boost: f32,
    },
    /// A time budget that is not a positive number of seconds.
    #[error("the training time budget must be a positive number of seconds, got {secs}")]
    TimeBudget {
        /// The budget asked for.
        secs: f64,
    },
    /// A rate that is not a positive number.
    #[error("bits per texel must be positive, got {bits_per_texel}")]
    BitsPerTexel {
        /// The rate asked for.
        bits_per_texel: f64,
    },
    /// A rate too low for one channel per grid and the decoder.
    #[error(
        "{bits_per_texel} bits per texel is too few for this set: even one latent channel per grid (of {channels}) and the decoder do not fit"
    )]
    RateTooLow {
        /// The rate asked for.
        bits_per_texel: f64,
        /// The grids' channels before fitting.
        channels: u32,
    },
}
