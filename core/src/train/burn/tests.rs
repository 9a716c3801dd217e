//! burn's model against the specification and the fused CPU kernel.
#![allow(clippy::unwrap_used)]

use burn::prelude::*;

use crate::model::params::{Activation, GridParams, LayerParams, ModelParams, pe_angular_frequency};
use crate::train::burn::model::*;
use crate::train::burn::trainer::*;

use crate::base::rng::Rng;

/// Uniform in `[-a, a)`.
fn sym(rng: &mut Rng, a: f32) -> f32 {
    (rng.next_f32() * 2.0 - 1.0) * a
}

/// A random model: grids `(w, h, c)`, PE frequencies, hidden widths, outputs.
fn random_params(rng: &mut Rng, grids: &[(u32, u32, u32)], pe: u32, hidden: &[usize], outputs: usize) -> ModelParams {
    let grids: Vec<GridParams> = grids
        .iter()
        .map(|&(w, h, c)| {
            let mut g = GridParams::zeros(w, h, c);
            g.values.iter_mut().for_each(|x| *x = sym(rng, 1.2));
            g
        })
        .collect();
    let latent: usize = grids.iter().map(|g| g.channels as usize).sum();
    let mut widths = vec![latent + 4 * pe as usize];
    widths.extend(hidden);
    widths.push(outputs);
    let layers = widths
        .windows(2)
        .map(|w| {
            let mut l = LayerParams::zeros(w[0], w[1]);
            let k = 1.5 / (w[0] as f32).sqrt();
            l.weights.iter_mut().for_each(|x| *x = sym(rng, k));
            l.biases.iter_mut().for_each(|x| *x = sym(rng, 0.2));
            l
        })
        .collect();
    ModelParams { grids, pe_frequencies: pe, layers, mip_grids: Vec::new(), mip_group: 1, ..ModelParams::default() }
}

fn small_params(rng: &mut Rng) -> ModelParams {
    random_params(rng, &[(5, 4, 3), (3, 2, 2)], 2, &[8, 6], 5)
}

/// `n` random uv pairs, with the edges 0.0 and 1.0 (and corners) forced in.
fn random_uv(rng: &mut Rng, n: usize) -> Vec<f32> {
    let mut uv: Vec<f32> = (0..2 * n).map(|_| rng.next_f32()).collect();
    let edges = [(0.0, 0.0), (1.0, 1.0), (0.0, 1.0), (1.0, 0.0), (0.0, 0.37), (0.81, 1.0)];
    for (i, (u, v)) in edges.iter().enumerate().take(n) {
        uv[2 * i] = *u;
        uv[2 * i + 1] = *v;
    }
    uv
}

/// Scalar reference of spec steps 1–4 for one texel, in f64 after the f32 texel-coordinate
/// arithmetic. `noise[corner][channel]` (with grid clamping to [-1, 1]) when given.
fn reference(p: &ModelParams, u: f32, v: f32, mask: &[f32], noise: Option<&[Vec<f32>; 4]>) -> Vec<f64> {
    let mut h: Vec<f64> = Vec::new();
    for g in &p.grids {
        let (w, gh, c) = (g.width as usize, g.height as usize, g.channels as usize);
        let gx = u * g.width as f32 - 0.5;
        let gy = v * g.height as f32 - 0.5;
        let (x0f, y0f) = (gx.floor(), gy.floor());
        let (fx, fy) = (f64::from(gx - x0f), f64::from(gy - y0f));
        let clampi = |i: f32, n: usize| (i.max(0.0) as usize).min(n - 1);
        let (x0, x1) = (clampi(x0f, w), clampi(x0f + 1.0, w));
        let (y0, y1) = (clampi(y0f, gh), clampi(y0f + 1.0, gh));
        let base = h.len();
        for ch in 0..c {
            let at = |x: usize, y: usize, corner: usize| {
                let raw = g.values[(y * w + x) * c + ch];
                match noise {
                    Some(n) => f64::from(raw.clamp(-1.0, 1.0)) + f64::from(n[corner][base + ch]),
                    None => f64::from(raw),
                }
            };
            let f = (1.0 - fx) * (1.0 - fy) * at(x0, y0, 0)
                + fx * (1.0 - fy) * at(x1, y0, 1)
                + (1.0 - fx) * fy * at(x0, y1, 2)
                + fx * fy * at(x1, y1, 3);
            h.push(f);
        }
    }
    for (f, m) in h.iter_mut().zip(mask) {
        *f *= f64::from(*m);
    }
    let px = f64::from(u * p.grids[0].width as f32);
    let py = f64::from(v * p.grids[0].height as f32);
    for k in 0..p.pe_frequencies {
        let a = f64::from(pe_angular_frequency(k));
        h.extend([(a * px).sin(), (a * px).cos(), (a * py).sin(), (a * py).cos()]);
    }
    for (i, l) in p.layers.iter().enumerate() {
        let mut next = Vec::with_capacity(l.outputs);
        for o in 0..l.outputs {
            let mut s = f64::from(l.biases[o]);
            for (x, w) in h.iter().zip(&l.weights[o * l.inputs..(o + 1) * l.inputs]) {
                s += x * f64::from(*w);
            }
            let hidden = match p.activation {
                Activation::Relu => s.max(0.0),
                Activation::Hgelu => s.min(3.0) * (s / 3.0 + 0.5).clamp(0.0, 1.0),
            };
            next.push(if i + 1 < p.layers.len() { hidden } else { s });
        }
        h = next;
    }
    h
}

fn reference_loss(p: &ModelParams, uv: &[f32], mask: &[f32], target: &[f32], weight: &[f32]) -> f64 {
    let b = uv.len() / 2;
    let (lc, oc) = (p.latent_channels(), p.output_channels());
    let mut sum = 0.0;
    for i in 0..b {
        let y = reference(p, uv[2 * i], uv[2 * i + 1], &mask[i * lc..(i + 1) * lc], None);
        for o in 0..oc {
            let d = y[o] - f64::from(target[i * oc + o]);
            sum += f64::from(weight[i * oc + o]) * d * d;
        }
    }
    sum / b as f64
}

/// A mask that drops a few channels per sample.
fn random_mask(rng: &mut Rng, b: usize, lc: usize) -> Vec<f32> {
    (0..b * lc).map(|_| if rng.next_f32() < 0.3 { 0.0 } else { 1.0 }).collect()
}

fn tensor2(data: &[f32], rows: usize, cols: usize, device: &Device) -> Tensor<2> {
    Tensor::from_data(TensorData::new(data.to_vec(), [rows, cols]), device)
}

#[test]
fn params_round_trip_exactly() {
    let mut rng = Rng::from_state(1);
    let params = small_params(&mut rng);
    let device = Device::flex();
    assert_eq!(NtcModel::from_params(&params, &device).to_params(), params);
    assert_eq!(NtcModel::from_params(&params, &device.clone().autodiff()).to_params(), params);
    // The config describes the same shapes.
    let config = NtcModelConfig::for_params(&params);
    let fresh = config.init(&device).to_params();
    assert_eq!(fresh.zeros_like(), params.zeros_like());
}

#[test]
fn forward_matches_scalar_reference() {
    for activation in [Activation::Relu, Activation::Hgelu] {
        let mut rng = Rng::from_state(2);
        forward_matches_scalar_reference_with(&ModelParams { activation, ..small_params(&mut rng) }, &mut rng);
    }
}

fn forward_matches_scalar_reference_with(params: &ModelParams, rng: &mut Rng) {
    let device = Device::flex();
    let model = NtcModel::from_params(params, &device);
    let b = 40;
    let lc = params.latent_channels();
    let oc = params.output_channels();
    let uv = random_uv(rng, b);
    let mask = random_mask(rng, b, lc);
    assert!(mask.contains(&0.0));
    let noise: Vec<f32> = (0..4 * b * lc).map(|_| sym(rng, 0.1)).collect();

    for with_noise in [false, true] {
        let noise_tensor = with_noise.then(|| Tensor::<3>::from_data(TensorData::new(noise.clone(), [4, b, lc]), &device));
        let out = model.forward(tensor2(&uv, b, 2, &device), tensor2(&mask, b, lc, &device), noise_tensor);
        assert_eq!(out.dims(), [b, oc]);
        let out = read_f32(out);
        let mut max_diff = 0.0f64;
        for i in 0..b {
            let corner_noise: [Vec<f32>; 4] = std::array::from_fn(|k| noise[(k * b + i) * lc..(k * b + i + 1) * lc].to_vec());
            let expect = reference(params, uv[2 * i], uv[2 * i + 1], &mask[i * lc..(i + 1) * lc], with_noise.then_some(&corner_noise));
            for o in 0..oc {
                max_diff = max_diff.max((f64::from(out[i * oc + o]) - expect[o]).abs());
            }
        }
        assert!(max_diff <= 1e-5, "noise {with_noise}: max abs diff {max_diff}");
    }

    // decode = clamp(forward).
    let decoded = read_f32(model.decode(tensor2(&uv, b, 2, &device), tensor2(&mask, b, lc, &device)));
    assert!(decoded.iter().all(|x| (0.0..=1.0).contains(x)));
}

/// A grid that reads its corners: burn's forward pass (four weighted inputs a channel, each under
/// its channel's mask) against the CPU reference's features and MLP.
#[test]
fn corner_reads_match_the_cpu_reference() {
    let mut rng = Rng::from_state(5);
    let mut params = ModelParams { activation: Activation::Hgelu, ..small_params(&mut rng) };
    params.grids[0].corners = true;
    let inputs = params.mlp_inputs();
    let outputs = params.layers[0].outputs;
    let mut first = LayerParams::zeros(inputs, outputs);
    first.weights.iter_mut().for_each(|w| *w = sym(&mut rng, 1.5 / (inputs as f32).sqrt()));
    params.layers[0] = first;
    let device = Device::flex();
    let model = NtcModel::from_params(&params, &device);
    assert_eq!(model.to_params(), params);
    let (b, lc, oc) = (40, params.latent_channels(), params.output_channels());
    let uv = random_uv(&mut rng, b);
    let mask = random_mask(&mut rng, b, lc);
    let out = read_f32(model.forward(tensor2(&uv, b, 2, &device), tensor2(&mask, b, lc, &device), None));
    let (mut features, mut scratch) = (vec![0.0; inputs], crate::model::reference::MlpScratch::default());
    let mut worst = 0.0f32;
    for i in 0..b {
        crate::model::reference::features_at_level(&params, uv[2 * i], uv[2 * i + 1], 0, &mask[i * lc..(i + 1) * lc], &mut features);
        let want = crate::model::reference::mlp_forward(&params, &features, &mut scratch);
        for o in 0..oc {
            worst = worst.max((out[i * oc + o] - want[o]).abs());
        }
    }
    assert!(worst <= 1e-5, "max abs diff {worst}");
}

#[test]
fn loss_and_grads_match_finite_differences() {
    for activation in [Activation::Relu, Activation::Hgelu] {
        let mut rng = Rng::from_state(3);
        loss_and_grads_match_finite_differences_with(&ModelParams { activation, ..small_params(&mut rng) }, &mut rng);
    }
}

fn loss_and_grads_match_finite_differences_with(params: &ModelParams, rng: &mut Rng) {
    let b = 24;
    let lc = params.latent_channels();
    let oc = params.output_channels();
    let uv = random_uv(rng, b);
    let mask = random_mask(rng, b, lc);
    let target: Vec<f32> = (0..b * oc).map(|_| rng.next_f32()).collect();
    let weight: Vec<f32> = (0..b * oc).map(|_| if rng.next_f32() < 0.2 { 0.0 } else { 0.5 + rng.next_f32() }).collect();

    let (loss_value, grads) = loss_and_grads(params, &uv, &mask, &target, &weight, &Device::flex());
    let expect_loss = reference_loss(params, &uv, &mask, &target, &weight);
    assert!((f64::from(loss_value) - expect_loss).abs() <= 1e-5 * expect_loss.max(1.0), "loss {loss_value} vs {expect_loss}");

    // Central differences of the f64 reference loss, over *every* parameter. The perturbed
    // value is an f32, so the actual step (p+ - p-) is used as the denominator.
    let h = 1e-3f32;
    let fd = |p: &ModelParams, get: &dyn Fn(&mut ModelParams) -> &mut f32| -> f64 {
        let mut plus = p.clone();
        let mut minus = p.clone();
        let x = *get(&mut plus);
        *get(&mut plus) = x + h;
        *get(&mut minus) = x - h;
        let step = f64::from(*get(&mut plus)) - f64::from(*get(&mut minus));
        (reference_loss(&plus, &uv, &mask, &target, &weight) - reference_loss(&minus, &uv, &mask, &target, &weight)) / step
    };
    // Tolerance: burn accumulates in f32 (≈1e-6 relative), the FD of the f64 reference has
    // O(h²) truncation error; 1e-4 absolute + 1e-3 relative covers both with margin while
    // catching any layout or indexing error (those are O(gradient)).
    let check = |what: String, analytic: f32, numeric: f64| {
        let tol = 1e-4 + 1e-3 * numeric.abs();
        assert!((f64::from(analytic) - numeric).abs() <= tol, "{what}: autodiff {analytic} vs finite difference {numeric}");
    };
    let mut checked = 0;
    let mut nonzero = 0;
    for gi in 0..params.grids.len() {
        for i in 0..params.grids[gi].values.len() {
            let n = fd(params, &|p: &mut ModelParams| &mut p.grids[gi].values[i]);
            check(format!("grid {gi} value {i}"), grads.grids[gi].values[i], n);
            checked += 1;
            nonzero += usize::from(n != 0.0);
        }
    }
    for li in 0..params.layers.len() {
        for i in 0..params.layers[li].weights.len() {
            let n = fd(params, &|p: &mut ModelParams| &mut p.layers[li].weights[i]);
            check(format!("layer {li} weight {i}"), grads.layers[li].weights[i], n);
            checked += 1;
            nonzero += usize::from(n != 0.0);
        }
        for i in 0..params.layers[li].biases.len() {
            let n = fd(params, &|p: &mut ModelParams| &mut p.layers[li].biases[i]);
            check(format!("layer {li} bias {i}"), grads.layers[li].biases[i], n);
            checked += 1;
            nonzero += usize::from(n != 0.0);
        }
    }
    assert_eq!(checked, params.parameter_count());
    assert!(nonzero > checked / 2, "too few non-zero gradients ({nonzero}/{checked})");
}

#[test]
fn trainer_lowers_the_loss() {
    let mut rng = Rng::from_state(4);
    let shapes = [(6, 6, 4), (3, 3, 4)];
    let teacher = random_params(&mut rng, &shapes, 2, &[16], 3);
    let mut student = random_params(&mut rng, &shapes, 2, &[16], 3);
    student.grids.iter_mut().for_each(|g| g.values.iter_mut().for_each(|x| *x *= 0.3));
    let device = Device::flex();
    let b = 128;
    let lc = teacher.latent_channels();
    let oc = teacher.output_channels();
    let uv = random_uv(&mut rng, b);
    let mask = vec![1.0; b * lc];
    let target: Vec<f32> =
        (0..b).flat_map(|i| reference(&teacher, uv[2 * i], uv[2 * i + 1], &mask[..lc], None)).map(|x| x as f32).collect();
    let weight = vec![1.0; b * oc];

    let mut trainer = BurnTrainer::new(&student, &device, 1e-2, 5e-3);
    let first = trainer.step(&uv, &mask, &target, &weight, 1.0, None, true);
    let mut last = first;
    for i in 0..300 {
        let noise = (i % 3 == 2).then_some(0.01);
        let train_grids = i % 5 != 4;
        last = trainer.step(&uv, &mask, &target, &weight, 1.0, noise, train_grids);
    }
    let (final_loss, _) = loss_and_grads(&trainer.params(), &uv, &mask, &target, &weight, &device);
    assert!(last.is_finite() && final_loss.is_finite());
    assert!(final_loss < 0.25 * first, "loss {first} -> {final_loss}");

    // Grid values stay in the quantisation range.
    assert!(trainer.params().grids.iter().flat_map(|g| &g.values).all(|x| x.abs() <= 1.0));

    // Frozen grids stay put.
    let before = trainer.params();
    trainer.step(&uv, &mask, &target, &weight, 1.0, None, false);
    let after = trainer.params();
    assert_eq!(before.grids, after.grids);
    assert_ne!(before.layers, after.layers);
}

/// burn's Adam with the default schedule's β2 0.999 and sparse updates takes the fused trainers'
/// update (`train::adam`) from the same gradients, and leaves grid cells no texel read (and their
/// moments: a second step keeps them too) exactly as they were.
#[test]
fn sparse_adam_matches_the_fused_update() {
    use crate::train::adam::{AdamStep, adam_update, corrections};
    let mut rng = Rng::from_state(6);
    let mut params = random_params(&mut rng, &[(12, 12, 3), (6, 6, 2)], 2, &[8], 3);
    // Latents in their range, as training keeps them (burn clamps every value it updates).
    params.grids.iter_mut().for_each(|g| g.values.iter_mut().for_each(|x| *x = x.clamp(-1.0, 1.0)));
    let device = Device::flex();
    let b = 4;
    let lc = params.latent_channels();
    let oc = params.output_channels();
    // Four texels in one corner: most cells of the finer grid are read by none of them.
    let uv: Vec<f32> = (0..2 * b).map(|_| 0.2 * rng.next_f32()).collect();
    let mask = vec![1.0; b * lc];
    let target: Vec<f32> = (0..b * oc).map(|_| rng.next_f32()).collect();
    let weight = vec![1.0; b * oc];
    let (grid_lr, mlp_lr) = (0.05, 0.01);
    let (_, grads) = loss_and_grads(&params, &uv, &mask, &target, &weight, &device);
    let adam = AdamOptions { beta2: 0.999, sparse: true };
    let mut trainer = BurnTrainer::new(&params, &device, grid_lr, mlp_lr).with_adam(adam);
    trainer.step(&uv, &mask, &target, &weight, 1.0, None, true);
    let burned = trainer.params();

    let (c1, c2) = corrections(adam.beta2, 1);
    let at = |lr| AdamStep { lr, c1, c2, grad_scale: 1.0, beta2: adam.beta2, sparse: true };
    let mut expected = params.clone();
    let update = |theta: &mut Vec<f32>, grad: &[f32], lr, clamp| {
        let (mut m, mut v) = (vec![0.0; grad.len()], vec![0.0; grad.len()]);
        adam_update(theta, grad, &mut m, &mut v, at(lr), clamp);
    };
    for (g, dg) in expected.grids.iter_mut().zip(&grads.grids) {
        update(&mut g.values, &dg.values, grid_lr, true);
    }
    for (l, dl) in expected.layers.iter_mut().zip(&grads.layers) {
        update(&mut l.weights, &dl.weights, mlp_lr, false);
        update(&mut l.biases, &dl.biases, mlp_lr, false);
    }
    let close = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-5 * (1.0 + y.abs()));
    for (g, e) in burned.grids.iter().zip(&expected.grids) {
        assert!(close(&g.values, &e.values), "grid {:?} against {:?}", g.values, e.values);
    }
    for (l, e) in burned.layers.iter().zip(&expected.layers) {
        assert!(close(&l.weights, &e.weights) && close(&l.biases, &e.biases));
    }
    let unread: Vec<usize> = (0..grads.grids[0].values.len()).filter(|&i| grads.grids[0].values[i] == 0.0).collect();
    assert!(unread.len() > grads.grids[0].values.len() / 2, "{} cells unread", unread.len());
    assert!(unread.iter().all(|&i| burned.grids[0].values[i].to_bits() == params.grids[0].values[i].to_bits()));
    // A second step on the same texels moves the cells they read, and still not the others.
    trainer.step(&uv, &mask, &target, &weight, 1.0, None, true);
    let again = trainer.params();
    assert!(unread.iter().all(|&i| again.grids[0].values[i].to_bits() == params.grids[0].values[i].to_bits()));
    assert_ne!(again.grids[0].values, burned.grids[0].values);
}

/// Throughput at the default-ish shapes (run with `--ignored --nocapture`).
#[test]
#[ignore = "benchmark"]
fn bench_flex_b4096() {
    let mut rng = Rng::from_state(5);
    let params = random_params(&mut rng, &[(128, 128, 8), (64, 64, 8)], 3, &[64, 48, 32], 9);
    assert_eq!(params.mlp_inputs(), 28);
    let device = Device::flex();
    let b = 4096;
    let lc = params.latent_channels();
    let oc = params.output_channels();
    let uv = random_uv(&mut rng, b);
    let mask = vec![1.0; b * lc];
    let target: Vec<f32> = (0..b * oc).map(|_| rng.next_f32()).collect();
    let weight = vec![1.0; b * oc];

    let _ = loss_and_grads(&params, &uv, &mask, &target, &weight, &device);
    let n = 10;
    let start = std::time::Instant::now();
    for _ in 0..n {
        let _ = loss_and_grads(&params, &uv, &mask, &target, &weight, &device);
    }
    let per = start.elapsed().as_secs_f64() / f64::from(n);
    println!("loss_and_grads B={b}: {:.1} ms ({:.1}/s)", per * 1e3, 1.0 / per);

    let mut trainer = BurnTrainer::new(&params, &device, 1e-2, 5e-3);
    trainer.step(&uv, &mask, &target, &weight, 1.0, None, true);
    for (noise, label) in [(None, "no noise"), (Some(0.05), "noise")] {
        let start = std::time::Instant::now();
        for _ in 0..n {
            trainer.step(&uv, &mask, &target, &weight, 1.0, noise, true);
        }
        let per = start.elapsed().as_secs_f64() / f64::from(n);
        println!("BurnTrainer::step B={b} ({label}): {:.1} ms ({:.1} steps/s)", per * 1e3, 1.0 / per);
    }
}
