//! Every consumer of the MLP's input layout against its slots (issue 69): the CPU reference
//! (`features_at_level`), the fused CPU kernel's gather, burn's model, and the GPU trainer's
//! generated gather and scatter each put every latent feature, positional-encoding value and the
//! LOD input where [`InputLayout`] says. (texset-shaders' latent fetch has the same test there:
//! `the_latent_fetch_reads_the_input_layouts_slots`.)

use crate::model::params::{Activation, GridParams, LayerParams, ModelParams, pe_angular_frequency};
use crate::model::reference::{bilinear_corners, features_at_level};
use crate::model::{InputLayout, LOD_INPUT_SCALE};
use crate::train::sampler::Batch;

/// Grid `g`'s channel `c` holds `value(g, c)` in every cell, so its bilinear feature is that value
/// and its corner features the value times each corner's weight.
fn value(g: usize, c: usize) -> f32 {
    0.1 * (10 * g + c + 1) as f32
}

/// Two grids, the first read by its corners, two PE frequencies and (with `pyramid`) a second
/// pyramid level, so every kind of slot is there; one zero layer.
fn probe(pyramid: bool) -> ModelParams {
    let grid = |g: usize, width: u32, height: u32, channels: u32, corners: bool| GridParams {
        width,
        height,
        channels,
        values: (0..width * height).flat_map(|_| (0..channels as usize).map(move |c| value(g, c))).collect(),
        corners,
    };
    let grids = vec![grid(0, 5, 3, 2, true), grid(1, 4, 4, 3, false)];
    let mip_grids = if pyramid { vec![grid(0, 3, 2, 2, true), grid(1, 2, 2, 3, false)] } else { Vec::new() };
    let mut params = ModelParams { grids, pe_frequencies: 2, layers: Vec::new(), mip_grids, mip_group: 1, activation: Activation::Relu };
    params.layers = vec![LayerParams::zeros(params.mlp_inputs(), 1)];
    params
}

/// What every slot of `layout` holds for texel `(u, v)` at mip level `level` under `mask`, from
/// the layout alone.
fn expected(params: &ModelParams, layout: &InputLayout, (u, v): (f32, f32), level: u32, mask: &[f32]) -> Vec<f32> {
    let mut want = vec![f32::NAN; layout.width()];
    let grids = params.level_grids(params.pyramid_level(level));
    for (g, (slot, grid)) in layout.grids().iter().zip(grids).enumerate() {
        let (_, weights) = bilinear_corners(u, v, grid.width, grid.height);
        for c in 0..slot.channels {
            let m = mask[slot.first_channel + c];
            if slot.corners {
                for (k, w) in weights.iter().enumerate() {
                    want[slot.input(c, k)] = w * value(g, c) * m;
                }
            } else {
                want[slot.input(c, 0)] = weights.iter().sum::<f32>() * value(g, c) * m;
            }
        }
    }
    // The level's grid 0 scales the positional encoding.
    let (px, py) = (u * grids[0].width as f32, v * grids[0].height as f32);
    for k in 0..layout.pe_frequencies() {
        let a = pe_angular_frequency(k as u32);
        for (j, x) in [(a * px).sin(), (a * px).cos(), (a * py).sin(), (a * py).cos()].into_iter().enumerate() {
            want[layout.pe_input(k, j)] = x;
        }
    }
    if let Some(lod) = layout.lod_input() {
        want[lod] = params.lod_level(level) as f32 * LOD_INPUT_SCALE;
    }
    assert!(want.iter().all(|w| w.is_finite()), "the slots cover the input");
    want
}

fn assert_close(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: input width");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-5, "{what}: input {i} is {g}, its slot holds {w}");
    }
}

const TEXELS: [(f32, f32); 3] = [(0.31, 0.62), (0.05, 0.97), (0.77, 0.18)];

/// A mask with every other channel off.
fn mask(lc: usize) -> Vec<f32> {
    (0..lc).map(|c| if c % 2 == 0 { 1.0 } else { 0.0 }).collect()
}

#[test]
fn the_reference_and_the_kernel_gather_read_the_input_layouts_slots() {
    let params = probe(true);
    let layout = params.input_layout();
    let lc = layout.latent_channels();
    assert_eq!((layout.latent_channels(), layout.width()), (5, 2 * 4 + 3 + 8 + 1));
    let mask = mask(lc);
    let batch = Batch {
        len: TEXELS.len(),
        uv: TEXELS.iter().flat_map(|&(u, v)| [u, v]).collect(),
        mask: mask.repeat(TEXELS.len()),
        target: vec![0.0; TEXELS.len()],
        weight: vec![0.0; TEXELS.len()],
        level: vec![0, 1, 1],
        gate: Vec::new(),
    };
    let gathered = crate::train::kernel::gathered_features(&params, &batch);
    for (i, &uv) in TEXELS.iter().enumerate() {
        let want = expected(&params, &layout, uv, batch.level[i], &mask);
        let mut features = vec![f32::NAN; layout.width()];
        features_at_level(&params, uv.0, uv.1, batch.level[i], &mask, &mut features);
        assert_close("the CPU reference", &features, &want);
        assert_close("the kernel's gather", &gathered[i * layout.width()..(i + 1) * layout.width()], &want);
    }
}

#[test]
fn burns_model_reads_the_input_layouts_slots() {
    use crate::train::burn::model::NtcModel;
    use burn::prelude::*;
    // burn's model has no latent pyramid.
    let params = probe(false);
    let layout = params.input_layout();
    let device = Device::flex();
    let model = NtcModel::from_params(&params, &device);
    assert_eq!(model.input_layout(), layout);
    let lc = layout.latent_channels();
    let mask = mask(lc);
    let uv: Vec<f32> = TEXELS.iter().flat_map(|&(u, v)| [u, v]).collect();
    let b = TEXELS.len();
    let uv = Tensor::<2>::from_data(TensorData::new(uv, [b, 2]), &device);
    let masks = Tensor::<2>::from_data(TensorData::new(mask.repeat(b), [b, lc]), &device);
    let inputs: Vec<f32> = model.inputs(uv, masks, None, true).into_data().try_to_vec::<f32>().expect("f32 inputs");
    for (i, &uv) in TEXELS.iter().enumerate() {
        let want = expected(&params, &layout, uv, 0, &mask);
        assert_close("burn's model", &inputs[i * layout.width()..(i + 1) * layout.width()], &want);
    }
}

/// The GPU trainer's generated gather and scatter name each input by a literal index: every one
/// is the layout's slot of what it reads (a channel's feature or corner, a PE value, the LOD).
#[test]
fn the_gpu_gather_and_scatter_use_the_input_layouts_slots() {
    let params = probe(true);
    let layout = params.input_layout();
    let maxw = layout.width() as u32 + 3;
    let text = crate::train::gpu::wgsl::gather_wgsl(&layout, 2, maxw);
    let index = |line: &str, key: &str| -> usize {
        let at = line.find(key).unwrap_or_else(|| panic!("no {key} in {line}")) + key.len();
        line[at..].split('u').next().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("no index in {line}"))
    };
    let args = |line: &str| -> Vec<String> {
        let open = line.find('(').expect("a call");
        line[open + 1..line.rfind(')').expect("a call")].split(", ").map(|a| a.trim_end_matches('u').to_owned()).collect()
    };
    let mut seen = vec![0usize; 2 * layout.width()];
    for line in text.lines().map(str::trim) {
        let scatter = line.starts_with("scatter_");
        if line.contains("= latent_feature(") || line.contains("= latent_corner(") || scatter {
            let a = args(line.split(" = ").last().unwrap_or(line));
            // gather: (first + p, g{p}_{g}, k, [corner,] channel, mask); scatter: (g{p}_{g}, k, [corner,] d).
            let at = usize::from(!scatter);
            let (p, g) = a[at].strip_prefix('g').and_then(|r| r.split_once('_')).expect("a texel's grid");
            let (p, g): (usize, usize) = (p.parse().expect("a texel"), g.parse().expect("a grid"));
            let slot = layout.grids()[g];
            let c: usize = a[at + 1].parse().expect("a channel of the grid");
            let corner: usize = if slot.corners { a[at + 2].parse().expect("a corner") } else { 0 };
            let input = if scatter { index(line, "xb[") } else { index(line, "xa[") };
            assert_eq!(input, p * maxw as usize + slot.input(c, corner), "{line}");
            if !scatter {
                let channel: usize = a[at + 2 + usize::from(slot.corners)].parse().expect("the latent channel");
                assert_eq!(channel, slot.first_channel + c, "{line}");
                seen[p * layout.width() + slot.input(c, corner)] += 1;
            }
        } else if let Some(rest) = line.strip_prefix("xa[") {
            let at: usize = rest.split('u').next().and_then(|n| n.parse().ok()).expect("an index");
            let (p, local) = (at / maxw as usize, at % maxw as usize);
            let value = line.split(" = ").nth(1).expect("a value");
            if value.contains("LOD_INPUT_SCALE") {
                assert_eq!(Some(local), layout.lod_input(), "{line}");
            } else {
                // `sx{p}_{k}.x`: frequency k's sin x (`.y` cos), `sy`: y.
                let k: usize =
                    value[2..].split('_').nth(1).and_then(|r| r.split('.').next()).and_then(|n| n.parse().ok()).expect("a frequency");
                let j = usize::from(value.starts_with("sy")) * 2 + usize::from(value.ends_with(".y;"));
                assert_eq!(local, layout.pe_input(k, j), "{line}");
            }
            seen[p * layout.width() + local] += 1;
        }
    }
    assert!(seen.iter().all(|&n| n == 1), "every input of both texels written once: {seen:?}");
}
