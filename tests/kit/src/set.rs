//! Synthetic texture sets for tests that train.

use std::path::PathBuf;
use texset_core::set::{ColorSpace, MapInfo, MapKind, Material, MaterialConstants, NormalConvention, SampleFormat, Texture, TextureSet};

/// A synthetic texture from a function of (x, y, c).
pub fn texture(kind: MapKind, width: u32, height: u32, channels: u32, f: impl Fn(u32, u32, u32) -> f32) -> Texture {
    let mut texels = Vec::new();
    for y in 0..height {
        for x in 0..width {
            for c in 0..channels {
                texels.push((f(x, y, c).clamp(0.0, 1.0) * 255.0).round() / 255.0);
            }
        }
    }
    Texture {
        info: MapInfo {
            kind,
            width,
            height,
            channels,
            sample_format: SampleFormat::U8,
            color_space: if kind == MapKind::Basecolor { ColorSpace::Srgb } else { ColorSpace::Linear },
            normal_convention: NormalConvention::OpenGl,
            channel_ranges: vec![[0.0, 1.0]; channels as usize],
        },
        source_path: PathBuf::from(format!("synthetic_{kind}.png")),
        texels,
    }
}

/// A small smooth-but-detailed material: base colour (RGB), roughness (gray) at half resolution.
#[must_use]
pub fn small_set(size: u32) -> TextureSet {
    let s = size as f32;
    let base = texture(MapKind::Basecolor, size, size, 3, |x, y, c| {
        let (u, v) = (x as f32 / s, y as f32 / s);
        0.5 + 0.35 * ((u * 9.0 + c as f32).sin() * (v * 7.0 - c as f32 * 0.5).cos())
    });
    let half = size / 2;
    let rough = texture(MapKind::Roughness, half, half, 1, |x, y, _| {
        let (u, v) = (x as f32 / half as f32, y as f32 / half as f32);
        0.4 + 0.3 * (u * 5.0 + v * 3.0).sin()
    });
    TextureSet {
        materials: vec![Material {
            name: "synthetic".into(),
            source_dir: PathBuf::from("synthetic"),
            textures: vec![base, rough],
            constants: MaterialConstants::default(),
        }],
    }
}

/// Decodes `uv` pairs (`[n][2]`) through a burn model with one texture's channel budget applied
/// to every sample; returns `[n][output_channels]` clamped outputs.
#[cfg(feature = "train")]
#[must_use]
pub fn burn_decode(
    model: &texset_core::internal_tests::NtcModel,
    device: &burn::prelude::Device,
    uv: &[f32],
    budget: &[u32],
    latent_channels: usize,
) -> Vec<f32> {
    let n = uv.len() / 2;
    let mut mask = vec![0.0f32; n * latent_channels];
    for i in 0..n {
        for &c in budget {
            mask[i * latent_channels + c as usize] = 1.0;
        }
    }
    let uv_t = burn::prelude::Tensor::<2>::from_data(burn::tensor::TensorData::new(uv.to_vec(), [n, 2]), device);
    let mask_t = burn::prelude::Tensor::<2>::from_data(burn::tensor::TensorData::new(mask, [n, latent_channels]), device);
    model.decode(uv_t, mask_t).into_data().try_into_vec_as::<f32>().unwrap()
}
