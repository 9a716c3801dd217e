//! Normal maps trained for shading: unit-length targets, per-kind loss weights and the z
//! channel's weight reach every trainer through the one sampler (the GPU trainer's gradients
//! with them are checked in `gpu_trainer.rs`).
// Reason: the weights compared are products of small exact values (3 · 0.5, 1).
#![allow(clippy::unwrap_used, clippy::float_cmp)]

use texset_core::{
    analyse,
    options::{CompressOptions, LossConfig, NORMAL_LOSS_WEIGHT, NormalTargets, OptionsError, ScheduleConfig},
    rng::Rng,
    set::{MapKind, TextureSet},
    train::{Batch, Sampler},
};

/// A normal map whose normals are tilted and 0.6–1.0 long (as a JPEG-sourced map stores them).
pub(crate) fn short_normals(size: u32) -> texset_core::set::Texture {
    texset_testkit::texture(MapKind::Normal, size, size, 3, |x, y, c| {
        let (u, v) = (x as f32 / size as f32, y as f32 / size as f32);
        let n = [0.4 * (u * 7.0).sin(), 0.3 * (v * 5.0).cos(), 0.8];
        let length = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
        let scale = (0.6 + 0.4 * ((u + v) * 3.0).sin().abs()) / length;
        n[c as usize] * scale * 0.5 + 0.5
    })
}

fn set_with_normals() -> TextureSet {
    let mut set = texset_testkit::small_set(32);
    set.materials[0].textures.push(short_normals(32));
    set
}

fn length(stored: &[f32]) -> f32 {
    stored.iter().map(|v| (v * 2.0 - 1.0).powi(2)).sum::<f32>().sqrt()
}

#[test]
fn unit_normal_texels_keep_the_direction_at_unit_length() {
    let t = short_normals(16);
    assert!(t.texels.chunks_exact(3).any(|n| length(n) < 0.9), "the source's normals are short");
    let unit = t.unit_normal_texels();
    for (n, u) in t.texels.chunks_exact(3).zip(unit.chunks_exact(3)) {
        assert!((length(u) - 1.0).abs() < 1e-5, "{u:?}");
        let (a, b) = (n.iter().map(|v| v * 2.0 - 1.0), u.iter().map(|v| v * 2.0 - 1.0));
        let cos = a.zip(b).map(|(p, q)| p * q).sum::<f32>() / length(n);
        assert!(cos > 1.0 - 1e-5, "same direction: {n:?} → {u:?}");
    }
    // Through a float map's channel ranges: the normal lives in the range's values.
    let mut ranged = t.clone();
    ranged.info.channel_ranges = vec![[-0.5, 1.5]; 3];
    for v in &mut ranged.texels {
        *v = (*v + 0.5) * 0.5;
    }
    let unit = ranged.unit_normal_texels();
    for u in unit.chunks_exact(3) {
        let n: Vec<f32> = u.iter().map(|v| -0.5 + 2.0 * v).collect();
        assert!((length(&n) - 1.0).abs() < 1e-4, "{n:?}");
    }
    // Other kinds are left alone.
    let base = &texset_testkit::small_set(8).materials[0].textures[0];
    assert_eq!(base.unit_normal_texels(), base.texels);
}

#[test]
fn the_sampler_trains_unit_normals_with_their_weights() {
    let set = set_with_normals();
    let schedule = ScheduleConfig {
        loss: LossConfig { weights: [("normal".to_owned(), 3.0)].into(), normal_targets: NormalTargets::Unit, normal_z_weight: 0.5 },
        ..ScheduleConfig::default()
    };
    let options = CompressOptions { schedule, ..CompressOptions::default() };
    let (layout, _) = analyse(&set, &options).unwrap();
    let slot = &layout.textures[0][2];
    assert!(slot.unit_normal_targets);
    let sampler = Sampler::new(&set, &layout);
    let mut batch = Batch::default();
    sampler.fill(&mut Rng::new(5, 0, 0), 256, &mut batch);
    let oc = layout.output_channels();
    let mut seen = 0;
    for i in 0..batch.len {
        let o = i * oc + slot.output_offset;
        if batch.weight[o] == 0.0 {
            continue;
        }
        seen += 1;
        assert!((length(&batch.target[o..o + 3]) - 1.0).abs() < 1e-5, "unit target {:?}", &batch.target[o..o + 3]);
        assert_eq!(&batch.weight[o..o + 3], &[3.0, 3.0, 1.5], "normal weight 3, z half of it");
        assert_eq!(batch.weight[i * oc], 1.0, "the base colour keeps weight 1");
    }
    assert!(seen > 0);

    // The default trains the stored values with the normal maps' weight, z alike.
    let (layout, _) = analyse(&set, &CompressOptions::default()).unwrap();
    let slot = &layout.textures[0][2];
    assert!(!slot.unit_normal_targets);
    assert_eq!(slot.channel_loss_factors, vec![1.0, 1.0, 1.0]);
    assert_eq!(slot.loss_weight, NORMAL_LOSS_WEIGHT);
    let mut batch = Batch::default();
    Sampler::new(&set, &layout).fill(&mut Rng::new(5, 0, 0), 256, &mut batch);
    assert!(
        (0..batch.len).any(|i| {
            let o = i * oc + slot.output_offset;
            batch.weight[o] == NORMAL_LOSS_WEIGHT && length(&batch.target[o..o + 3]) < 0.9
        }),
        "stored (short) normals"
    );
}

#[test]
fn loss_weights_must_be_finite_and_not_negative() {
    for (kind, z) in [("normal", -1.0), ("normal", f32::NAN)] {
        let mut schedule = ScheduleConfig::default();
        schedule.loss.normal_z_weight = z;
        let options = CompressOptions { schedule, ..CompressOptions::default() };
        assert!(matches!(options.validate(), Err(OptionsError::LossWeight { .. })), "{kind} z {z}");
    }
    let mut schedule = ScheduleConfig::default();
    schedule.loss.weights = [("orm".to_owned(), -2.0)].into();
    let options = CompressOptions { schedule, ..CompressOptions::default() };
    assert_eq!(options.validate(), Err(OptionsError::LossWeight { what: "orm".into(), weight: -2.0 }));
}
