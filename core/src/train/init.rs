//! Where training starts: the seeded initialisation, or a bundle's model for a fine-tune.

use crate::model::layout::ModelLayout;
use crate::model::params::ModelParams;
use crate::options::CompressOptions;
use crate::rng::Rng;
use crate::set::TextureSet;
use crate::train::TrainError;

/// Initial parameters: latents uniform in ±0.25, He-uniform weights, output biases at each
/// channel's mean value.
#[must_use]
pub fn initial_params(set: &TextureSet, layout: &ModelLayout, seed: u64) -> ModelParams {
    let mut params = layout.zero_params();
    let mut rng = Rng::new(seed, 0xA11CE, 0);
    for grid in params.all_grids_mut() {
        for v in &mut grid.values {
            *v = (rng.next_f32() * 2.0 - 1.0) * 0.25;
        }
    }
    let last = params.layers.len().saturating_sub(1);
    for (l, layer) in params.layers.iter_mut().enumerate() {
        let bound = (6.0 / layer.inputs.max(1) as f32).sqrt() * if l == last { 0.1 } else { 1.0 };
        for w in &mut layer.weights {
            *w = (rng.next_f32() * 2.0 - 1.0) * bound;
        }
    }
    // Channels no texture reads get zero first-layer weights: they never receive a gradient, so
    // they stay zero, and pruning them later changes nothing (not even int8 row scales).
    let read = layout.read_channels();
    if let Some(first) = params.layers.first_mut() {
        for o in 0..first.outputs {
            for (c, r) in read.iter().enumerate() {
                if !r {
                    first.weights[o * first.inputs + c] = 0.0;
                }
            }
        }
    }
    if let Some(out) = params.layers.last_mut() {
        for (material, slots) in set.materials.iter().zip(&layout.textures) {
            // A duplicate or colour variant shares its original's outputs: the original's mean.
            for (texture, slot) in material.textures.iter().zip(slots).filter(|(_, s)| s.duplicate_of.is_none()) {
                let ch = texture.channels as usize;
                for c in 0..ch {
                    let sum: f64 = texture.texels.iter().skip(c).step_by(ch).map(|&v| f64::from(v)).sum();
                    if let Some(b) = out.biases.get_mut(slot.output_offset + c) {
                        *b = (sum / texture.texel_count().max(1) as f64) as f32;
                    }
                }
            }
        }
    }
    params
}

/// Learning rates of a fine-tune (`CompressOptions::init_from`), relative to the options'.
pub const FINE_TUNE_LEARNING_RATE_SCALE: f32 = 0.3;

/// The parameters training starts from: `options.init_from`'s model (dequantised) when given, a
/// fine-tune, else the seeded initialisation.
pub fn starting_params(set: &TextureSet, layout: &ModelLayout, options: &CompressOptions) -> Result<ModelParams, TrainError> {
    let fresh = initial_params(set, layout, options.schedule.seed);
    let Some(path) = &options.run.init_from else { return Ok(fresh) };
    let error = |message: String| TrainError::InitFrom { path: path.clone(), message };
    let bundle = crate::bundle::Bundle::read(path).map_err(|e| error(e.to_string()))?;
    let params = crate::decode::Decoder::new(&bundle).params().clone();
    let grid_shape = |p: &ModelParams| p.all_grids().map(|g| (g.width, g.height, g.channels)).collect::<Vec<_>>();
    let layer_shape = |p: &ModelParams| p.layers.iter().map(|l| (l.inputs, l.outputs)).collect::<Vec<_>>();
    if grid_shape(&params) != grid_shape(&fresh)
        || layer_shape(&params) != layer_shape(&fresh)
        || params.pe_frequencies != fresh.pe_frequencies
    {
        return Err(error(format!(
            "its model (grids {:?}, layers {:?}) is not this library's (grids {:?}, layers {:?})",
            grid_shape(&params),
            layer_shape(&params),
            grid_shape(&fresh),
            layer_shape(&fresh)
        )));
    }
    Ok(params)
}
