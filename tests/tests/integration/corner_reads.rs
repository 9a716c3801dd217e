//! Corner reads (`ModelConfig::corner_reads`, NTC v0.5–0.7's learned interpolation): the model
//! starts as the bilinear one, the fused CPU kernel's gradients through the four weighted
//! corners are the loss's, and the bundle round-trips as format version 7.
#![allow(clippy::unwrap_used, missing_docs)]

use texset_core::{
    Cancel, NoProgress, analyse,
    bundle::Bundle,
    compress,
    decode::Decoder,
    eval::evaluate,
    internal_tests::loss_and_grads,
    model::ModelParams,
    options::{CompressOptions, ModelConfig, ScheduleConfig},
    rng::Rng,
    train::{Batch, Sampler, initial_params},
};

fn corner_options() -> CompressOptions {
    CompressOptions { model: ModelConfig { corner_reads: true, ..ModelConfig::default() }, ..CompressOptions::default() }
}

/// A batch of the small set's texels under `options`' layout, and that layout's initial model.
fn batch_and_params(options: &CompressOptions, texels: usize) -> (Batch, ModelParams) {
    let set = texset_testkit::small_set(32);
    let (layout, _) = analyse(&set, options).unwrap();
    let params = initial_params(&set, &layout, 3);
    let mut batch = Batch::default();
    Sampler::new(&set, &layout).fill(&mut Rng::new(4, 0, 0), texels, &mut batch);
    (batch, params)
}

#[test]
fn a_corner_reading_model_starts_as_the_bilinear_one() {
    let (batch, corners) = batch_and_params(&corner_options(), 256);
    let (_, bilinear) = batch_and_params(&CompressOptions::default(), 256);
    assert!(corners.grids[0].corners && !corners.grids[1].corners);
    let c0 = corners.grids[0].channels as usize;
    assert_eq!(corners.mlp_inputs(), bilinear.mlp_inputs() + 3 * c0);
    assert_eq!(corners.channel_inputs(1), 4..8);
    assert_eq!(corners.channel_inputs(c0), 4 * c0..4 * c0 + 1);
    // The same latents, and each channel's four columns its bilinear column: the same loss.
    assert_eq!(corners.grids[0].values, bilinear.grids[0].values);
    let (corner_loss, _) = loss_and_grads(&corners, &batch);
    let (bilinear_loss, _) = loss_and_grads(&bilinear, &batch);
    assert!((corner_loss - bilinear_loss).abs() <= 1e-5 * bilinear_loss, "{corner_loss} vs {bilinear_loss}");
}

#[test]
fn corner_read_gradients_match_finite_differences() {
    let (batch, mut params) = batch_and_params(&corner_options(), 64);
    // Columns that differ per corner, and latents away from the start: every path carries signal.
    let mut rng = Rng::new(9, 0, 0);
    for w in &mut params.layers[0].weights {
        *w += (rng.next_f32() - 0.5) * 0.2;
    }
    for g in params.all_grids_mut() {
        for v in &mut g.values {
            *v = rng.next_f32() - 0.5;
        }
    }
    let (_, grads) = loss_and_grads(&params, &batch);
    let loss_with = |p: &ModelParams| f64::from(loss_and_grads(p, &batch).0);
    let h = 1e-3f32;
    let check = |what: &str, get: &dyn Fn(&mut ModelParams) -> &mut f32, analytic: f32| {
        let (mut plus, mut minus) = (params.clone(), params.clone());
        *get(&mut plus) += h;
        *get(&mut minus) -= h;
        let numeric = (loss_with(&plus) - loss_with(&minus)) / (2.0 * f64::from(h));
        let tol = 2e-4 + 2e-2 * numeric.abs();
        assert!((f64::from(analytic) - numeric).abs() <= tol, "{what}: analytic {analytic} vs finite difference {numeric}");
    };
    // The grid-0 values with the largest gradients (cells the batch reads) and every corner
    // column of two channels' first-layer weights.
    let g0 = &grads.grids[0].values;
    let mut order: Vec<usize> = (0..g0.len()).collect();
    order.sort_by(|&a, &b| g0[b].abs().total_cmp(&g0[a].abs()));
    for &i in order.iter().take(12) {
        check(&format!("grid 0 value {i}"), &|p: &mut ModelParams| &mut p.grids[0].values[i], g0[i]);
    }
    let first = &grads.layers[0];
    for o in [0, 7] {
        for j in params.channel_inputs(0).chain(params.channel_inputs(2)) {
            let at = o * first.inputs + j;
            check(&format!("first layer weight ({o}, {j})"), &|p: &mut ModelParams| &mut p.layers[0].weights[at], first.weights[at]);
        }
    }
}

#[test]
fn a_corner_reading_bundle_is_version_7_and_decodes_as_trained() {
    let set = texset_testkit::small_set(32);
    let options = CompressOptions { schedule: ScheduleConfig { steps: 60, batch_texels: 1024, ..Default::default() }, ..corner_options() };
    let out = compress(&set, &options, &NoProgress, &Cancel::new()).unwrap();
    assert_eq!(u32::from_le_bytes(out.bundle_bytes[8..12].try_into().unwrap()), 7);
    let bundle = Bundle::from_bytes(&out.bundle_bytes).unwrap();
    assert!(bundle.manifest.grids[0].corners && !bundle.manifest.grids[1].corners);
    assert_eq!(bundle.to_bytes().unwrap().0, out.bundle_bytes);
    // Read as bilinear, the same bytes would not decode (the first layer is four columns wider).
    let mut bilinear = bundle.manifest.clone();
    bilinear.grids[0].corners = false;
    assert!(Bundle { manifest: bilinear, ..bundle.clone() }.to_bytes().is_err());
    let decoded = Decoder::new(&bundle).decode_map(0, 0).unwrap();
    assert!(decoded.values.iter().all(|v| v.is_finite() && (0.0..=1.0).contains(v)));
    let pooled = evaluate(&set, &Decoder::new(&bundle), false).unwrap().pooled_psnr_db;
    assert!(pooled > 20.0, "pooled {pooled} dB");
}
