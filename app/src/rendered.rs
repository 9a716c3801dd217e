//! Rendered error (`texset eval`): each material drawn as the studio's preview draws it — a plane
//! under a light orbiting it, GGX + Lambert with tangent-space normals — once from the original
//! maps and once from the decoded ones, on the CPU (`texset_shaders::preview::render_cpu`), and
//! the pictures compared by PSNR and FLIP. Errors the decoder makes in normals or roughness show
//! here even where a map's own PSNR looks fine.

use serde::Serialize;
use texset_core::bundle::Manifest;
use texset_core::decode::DecodedMap;
use texset_core::eval::metrics::{SquaredError, flip_mean};
use texset_core::set::TextureSet;
use texset_shaders::preview::{Shape, StoredMap, render_cpu};

/// How one material looks lit, decoded against original.
#[derive(Clone, Debug, Serialize)]
pub struct RenderedScore {
    /// Material name.
    pub material: String,
    /// Light positions (evenly around the orbit).
    pub lights: usize,
    /// Side of each render, pixels.
    pub size_px: u32,
    /// PSNR of the renders' sRGB-encoded RGB over every light, dB.
    pub rendered_psnr_db: f64,
    /// Mean FLIP of the renders, averaged over the lights.
    pub rendered_flip: f64,
}

/// Scores every material of `set` (with `decoded` from `texset_core::eval::decode_set`, in the
/// set's order) rendered under `lights` light positions at `size_px`².
#[must_use]
pub fn rendered_scores(
    set: &TextureSet,
    manifest: &Manifest,
    decoded: &[Vec<DecodedMap>],
    lights: usize,
    size_px: u32,
) -> Vec<RenderedScore> {
    let mut out = Vec::new();
    for (material, decoded) in set.materials.iter().zip(decoded) {
        let Some((mi, entry)) = manifest.materials.iter().enumerate().find(|(_, m)| m.name == material.name) else { continue };
        // Both sides in manifest order. A material whose set lacks one of the bundle's maps is not
        // rendered (there is no original to draw it from).
        let pairs: Option<Vec<(StoredMap, StoredMap)>> = entry
            .maps
            .iter()
            .map(|map| {
                let (t, d) = material.textures.iter().zip(decoded).find(|(t, _)| t.kind == map.kind)?;
                Some(((t.width, t.height, t.channels, &t.texels[..]), (d.width, d.height, d.channels, &d.values[..])))
            })
            .collect();
        let Some(pairs) = pairs else { continue };
        let (originals, decodes): (Vec<StoredMap>, Vec<StoredMap>) = pairs.into_iter().unzip();
        let mut error = SquaredError::default();
        let mut flip = 0.0;
        for light in 0..lights {
            let angle = std::f32::consts::TAU * light as f32 / lights as f32;
            let a = render_cpu(manifest, mi, &originals, Shape::Plane, angle, size_px, size_px);
            let b = render_cpu(manifest, mi, &decodes, Shape::Plane, angle, size_px, size_px);
            let rgb = |v: &[f32]| -> Vec<f32> { v.chunks_exact(4).flat_map(|p| [p[0], p[1], p[2]]).collect() };
            error.add(SquaredError::of(&rgb(&b), &rgb(&a)));
            flip += flip_mean(&a, &b, size_px as usize, size_px as usize, 4);
        }
        out.push(RenderedScore {
            material: material.name.clone(),
            lights,
            size_px,
            rendered_psnr_db: error.psnr_db(),
            rendered_flip: flip / lights.max(1) as f64,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use texset_core::set::MapKind;
    use texset_core::{Cancel, CompressOptions, NoProgress, ScheduleConfig, compress};

    #[test]
    fn rendered_error_sees_what_the_light_sees() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../sample_textures/bricks");
        let (set, _) = texset_core::set::ingest::load_library(&[dir]).unwrap();
        // Only the manifest is needed: two steps.
        let bundle = compress(
            &set,
            &CompressOptions { schedule: ScheduleConfig { steps: 2, ..Default::default() }, ..CompressOptions::default() },
            &NoProgress,
            &Cancel::new(),
        )
        .unwrap()
        .bundle;
        let exact: Vec<DecodedMap> = set.materials[0]
            .textures
            .iter()
            .map(|t| DecodedMap { width: t.width, height: t.height, channels: t.channels, values: t.texels.clone() })
            .collect();
        let score = |maps: Vec<DecodedMap>| rendered_scores(&set, &bundle.manifest, &[maps], 4, 96).remove(0);

        let same = score(exact.clone());
        assert!(
            same.rendered_psnr_db >= 99.0 && same.rendered_flip < 1e-6,
            "identical maps, identical renders (PSNR is capped at 99 dB): {same:?}"
        );

        // The same damage (+0.08 on the first channel: one map PSNR) to the normal map and to
        // the AO map, which only dims the faint ambient term: the render sees the first.
        let damaged = |kind: MapKind| {
            let mut maps = exact.clone();
            let i = set.materials[0].textures.iter().position(|t| t.kind == kind).unwrap();
            let ch = maps[i].channels as usize;
            for v in maps[i].values.iter_mut().step_by(ch) {
                *v = (*v + 0.08).min(1.0);
            }
            score(maps)
        };
        let (normal, ao) = (damaged(MapKind::Normal), damaged(MapKind::Ao));
        println!("normal damaged: {normal:?}\nao damaged: {ao:?}");
        assert!(normal.rendered_psnr_db < 60.0 && normal.rendered_flip > 0.0, "{normal:?}");
        assert!(normal.rendered_psnr_db + 10.0 < ao.rendered_psnr_db, "{normal:?} vs {ao:?}");
        assert!(normal.rendered_flip > 2.0 * ao.rendered_flip, "{normal:?} vs {ao:?}");
    }
}
