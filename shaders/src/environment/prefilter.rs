//! The specular cube, one level at a time: level 0 is the source resampled, the others are the
//! source convolved with the GGX lobe of their roughness assuming N = V = R (the split-sum
//! approximation), importance sampled on a Hammersley set with filtered importance sampling:
//! each sample reads the source's cube pyramid at `lod = 0.5·log2(Ω_s / Ω_p) + 1`,
//! `Ω_s = 1 / (N·pdf)` the solid angle the sample stands for and `Ω_p = 4π / (6·w²)` that of a
//! level-0 source texel (Křivánek & Colbert, GPU Gems 3 ch. 20; glTF-Sample-Viewer's
//! `ibl_filtering.frag`), so a few hundred samples give no fireflies.

use super::PrepareOptions;
use super::cube::{CubeLevel, cube_direction, normalize, texel_solid_angle};
use super::ggx::{distribution, hammersley, sample_half_vector};
use super::pyramid::Pyramid;
use rayon::prelude::*;

/// Added to every sample's mip: Křivánek & Colbert's +1, one level blurrier than the sample's
/// solid angle alone asks for, so neighbouring samples' footprints overlap and a small bright
/// source (a sun) between them is not missed or caught whole by the Hammersley pattern: measured
/// on a small sun, a 512-sample roughest level differed from a 16,384-sample one by up to 37 % of
/// its brightest texel without it and 21.5 % with it.
const LOD_BIAS: f64 = 1.0;

/// One GGX sample in tangent space (+Z the normal = view = reflection direction).
struct Sample {
    /// The light direction.
    light: [f32; 3],
    /// Its weight `n·l`.
    n_dot_l: f32,
    /// `0.5·log2(Ω_s) + LOD_BIAS`: half the log of the solid angle it stands for, biased.
    half_log2_solid_angle: f32,
}

/// Level `level` of the specular cube of `source` under `options`.
pub(super) fn level(source: &Pyramid, options: &PrepareOptions, level: u32) -> CubeLevel {
    let face_size_px = options.level_face_size_px(level);
    let roughness = options.level_roughness(level);
    let size = face_size_px as usize;
    let samples = ggx_samples(roughness, options.level_samples(level));
    let half_log2_source_texel = source.half_log2_texel_solid_angle();
    let mut texels = vec![[0.0f32; 3]; 6 * size * size];
    texels.par_chunks_mut(size).enumerate().for_each(|(row_index, row)| {
        let (face, y) = (row_index / size, row_index % size);
        for (x, texel) in row.iter_mut().enumerate() {
            let uv = [(x as f32 + 0.5) / face_size_px as f32, (y as f32 + 0.5) / face_size_px as f32];
            let normal = cube_direction(face, uv);
            *texel = if samples.is_empty() {
                // Level 0: the source resampled, read at the mip whose texels cover this one's
                // solid angle.
                let half_log2_texel = 0.5 * texel_solid_angle(face_size_px, x, y).log2() as f32;
                source.sample(normal, half_log2_texel - half_log2_source_texel)
            } else {
                convolve(source, &samples, normal, half_log2_source_texel)
            };
        }
    });
    CubeLevel { face_size_px, roughness, texels }
}

/// The `n·l`-weighted mean of the source over `samples` turned to face `normal`. Neighbouring
/// texels turn the same pattern by little, so what error it leaves varies smoothly.
fn convolve(source: &Pyramid, samples: &[Sample], normal: [f32; 3], half_log2_source_texel: f32) -> [f32; 3] {
    let up = if normal[1].abs() < 0.999 { [0.0, 1.0, 0.0] } else { [1.0, 0.0, 0.0] };
    let tangent = normalize(cross(up, normal));
    let bitangent = cross(normal, tangent);
    let mut sum = [0.0f32; 3];
    let mut weight = 0.0f32;
    for sample in samples {
        let [lx, ly, lz] = sample.light;
        let dir: [f32; 3] = std::array::from_fn(|i| tangent[i] * lx + bitangent[i] * ly + normal[i] * lz);
        let lod = sample.half_log2_solid_angle - half_log2_source_texel;
        let radiance = source.sample(dir, lod);
        for (s, r) in sum.iter_mut().zip(radiance) {
            *s += r * sample.n_dot_l;
        }
        weight += sample.n_dot_l;
    }
    if weight > 0.0 { sum.map(|s| s / weight) } else { sum }
}

/// `a × b`.
fn cross(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

/// The `count` Hammersley samples of the GGX lobe of perceptual `roughness` with N = V: the
/// reflections `l = 2 (n·h) h − n` of the sampled half vectors, those below the horizon dropped.
/// The density of `l` is `D(h) (n·h) / (4 (v·h)) = D(h) / 4`.
fn ggx_samples(roughness: f32, count: u32) -> Vec<Sample> {
    let alpha = f64::from(roughness) * f64::from(roughness);
    (0..count)
        .filter_map(|i| {
            let h = sample_half_vector(hammersley(i, count), alpha);
            let n_dot_h = h[2];
            let light = [2.0 * n_dot_h * h[0], 2.0 * n_dot_h * h[1], 2.0 * n_dot_h * n_dot_h - 1.0];
            let n_dot_l = light[2];
            if n_dot_l <= 0.0 {
                return None;
            }
            let pdf = distribution(n_dot_h, alpha) / 4.0;
            let solid_angle = 1.0 / (f64::from(count) * pdf);
            Some(Sample {
                light: light.map(|c| c as f32),
                n_dot_l: n_dot_l as f32,
                half_log2_solid_angle: (0.5 * solid_angle.log2() + LOD_BIAS) as f32,
            })
        })
        .collect()
}
