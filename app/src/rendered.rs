//! Rendered error (`texset eval`): each material drawn as the studio's preview draws it — a plane
//! under a light orbiting it, GGX + Lambert with tangent-space normals — once from the original
//! maps and once from the decoded ones, on the CPU (`texset_shaders::preview::render_cpu`), and
//! the pictures compared by PSNR and FLIP. Errors the decoder makes in normals or roughness show
//! here even where a map's own PSNR looks fine.

use serde::Serialize;
use texset_core::{
    bundle::{Manifest, MaterialEntry},
    decode::DecodedMap,
    eval::{SquaredError, flip_mean},
    set::{Material, TextureSet},
};
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

/// Scores every material of `set` (with `decoded` from texset-core's `eval::decode_set`, in the
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
        let Some((originals, decodes)) = in_manifest_order(material, entry, decoded) else { continue };
        let (a, b) = (renders(manifest, mi, &originals, lights, size_px), renders(manifest, mi, &decodes, lights, size_px));
        let mut error = SquaredError::default();
        let mut flip = 0.0;
        for (a, b) in a.iter().zip(&b) {
            error.add(rgb_error(b, a));
            flip += flip_mean(a, b, size_px as usize, size_px as usize, 4);
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

/// `material`'s maps in the order of its manifest `entry`, each as (original, the same map of
/// `maps`, which are in the set's order). `None` when the set lacks one of the bundle's maps:
/// there is no original to draw the material from.
fn in_manifest_order<'a>(
    material: &'a Material,
    entry: &MaterialEntry,
    maps: &'a [DecodedMap],
) -> Option<(Vec<StoredMap<'a>>, Vec<StoredMap<'a>>)> {
    let pairs: Option<Vec<(StoredMap, StoredMap)>> = entry
        .maps
        .iter()
        .map(|map| {
            let (t, d) = material.textures.iter().zip(maps).find(|(t, _)| t.info.kind == map.info.kind)?;
            Some(((t.info.width, t.info.height, t.info.channels, &t.texels[..]), (d.width, d.height, d.channels, &d.values[..])))
        })
        .collect();
    Some(pairs?.into_iter().unzip())
}

/// Material `mi` of `manifest` drawn from `maps` as the preview's plane, under each of `lights`
/// light positions evenly around the orbit: one RGBA render per light.
fn renders(manifest: &Manifest, mi: usize, maps: &[StoredMap], lights: usize, size_px: u32) -> Vec<Vec<f32>> {
    (0..lights)
        .map(|light| {
            let angle = std::f32::consts::TAU * light as f32 / lights as f32;
            render_cpu(manifest, mi, maps, Shape::Plane, angle, size_px, size_px)
        })
        .collect()
}

/// The squared error of render `b` against render `a`, RGB of RGBA.
fn rgb_error(b: &[f32], a: &[f32]) -> SquaredError {
    let rgb = |v: &[f32]| -> Vec<f32> { v.chunks_exact(4).flat_map(|p| [p[0], p[1], p[2]]).collect() };
    SquaredError::of(&rgb(b), &rgb(a))
}

/// The rendered error one decoded map causes on its own: the material drawn from the originals
/// with only this map decoded.
#[derive(Clone, Debug, Serialize)]
pub struct MapRenderedScore {
    /// Material name.
    pub material: String,
    /// Map kind.
    pub map: String,
    /// PSNR of the renders (as [`RenderedScore::rendered_psnr_db`]), dB.
    pub rendered_psnr_db: f64,
}

/// Per material and map of `set`, the rendered PSNR with only that map decoded (the others the
/// originals): which map's errors the light sees (`texset eval --by-map`). The originals are
/// rendered once per material.
#[must_use]
pub fn rendered_by_map(
    set: &TextureSet,
    manifest: &Manifest,
    decoded: &[Vec<DecodedMap>],
    lights: usize,
    size_px: u32,
) -> Vec<MapRenderedScore> {
    let mut out = Vec::new();
    for (material, decoded) in set.materials.iter().zip(decoded) {
        let Some((mi, entry)) = manifest.materials.iter().enumerate().find(|(_, m)| m.name == material.name) else { continue };
        let originals: Vec<DecodedMap> = material
            .textures
            .iter()
            .map(|t| DecodedMap { width: t.info.width, height: t.info.height, channels: t.info.channels, values: t.texels.clone() })
            .collect();
        let Some((stored, _)) = in_manifest_order(material, entry, &originals) else { continue };
        let reference = renders(manifest, mi, &stored, lights, size_px);
        for (i, (texture, map)) in material.textures.iter().zip(decoded).enumerate() {
            let mut maps = originals.clone();
            maps[i] = map.clone();
            let Some((_, variant)) = in_manifest_order(material, entry, &maps) else { continue };
            let mut error = SquaredError::default();
            for (b, a) in renders(manifest, mi, &variant, lights, size_px).iter().zip(&reference) {
                error.add(rgb_error(b, a));
            }
            out.push(MapRenderedScore {
                material: material.name.clone(),
                map: texture.info.kind.to_string(),
                rendered_psnr_db: error.psnr_db(),
            });
        }
    }
    out
}

/// Rebuilds every decoded normal map's z from its x and y, `z = sqrt(max(0, 1 − x² − y²))` (as a
/// BC5 shader does), in the stored encoding `n · 0.5 + 0.5` of maps whose channels span `[0, 1]`:
/// what a decoder of x and y alone would give from these x and y (`texset eval
/// --rebuild-normal-z`). Other maps, and normal maps with other channel ranges, are left alone.
// Reason: ingest gives 8- and 16-bit maps exactly the range [0, 1]; any other is a float map's.
#[allow(clippy::float_cmp)]
pub fn rebuild_normal_z(set: &TextureSet, decoded: &mut [Vec<DecodedMap>]) {
    for (material, maps) in set.materials.iter().zip(decoded) {
        for (texture, map) in material.textures.iter().zip(maps) {
            let unit_ranges = texture.info.channel_ranges.iter().all(|&r| r == [0.0, 1.0]);
            if texture.info.kind != texset_core::set::MapKind::Normal || map.channels < 3 || !unit_ranges {
                continue;
            }
            for texel in map.values.chunks_exact_mut(map.channels as usize) {
                let (x, y) = (texel[0] * 2.0 - 1.0, texel[1] * 2.0 - 1.0);
                texel[2] = (1.0 - x * x - y * y).max(0.0).sqrt() * 0.5 + 0.5;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use texset_core::{
        Cancel, NoProgress, compress,
        options::{CompressOptions, ScheduleConfig},
        set::{MapKind, load_library},
    };

    #[test]
    fn rendered_error_sees_what_the_light_sees() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../sample_textures/bricks");
        let (set, _) = load_library(&[dir]).unwrap();
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
            .map(|t| DecodedMap { width: t.info.width, height: t.info.height, channels: t.info.channels, values: t.texels.clone() })
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
            let i = set.materials[0].textures.iter().position(|t| t.info.kind == kind).unwrap();
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

        // Each map decoded alone: the damaged normal map is the one the render sees.
        let mut maps = exact.clone();
        let ni = set.materials[0].textures.iter().position(|t| t.info.kind == MapKind::Normal).unwrap();
        let channels = maps[ni].channels as usize;
        for v in maps[ni].values.iter_mut().step_by(channels) {
            *v = (*v + 0.08).min(1.0);
        }
        let by_map = rendered_by_map(&set, &bundle.manifest, &[maps.clone()], 4, 96);
        assert_eq!(by_map.len(), set.materials[0].textures.len());
        for r in &by_map {
            let expected = if r.map == "normal" { normal.rendered_psnr_db } else { 99.0 };
            assert!((r.rendered_psnr_db - expected).abs() < 1e-9, "{r:?}");
        }

        // Unit normals keep their direction when z is rebuilt from x and y.
        let mut unit = vec![exact.clone()];
        let channels = unit[0][ni].channels as usize;
        for texel in unit[0][ni].values.chunks_exact_mut(channels) {
            let n = [texel[0] * 2.0 - 1.0, texel[1] * 2.0 - 1.0, (texel[2] * 2.0 - 1.0).max(0.0)];
            let length = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt().max(1e-6);
            for c in 0..3 {
                texel[c] = n[c] / length * 0.5 + 0.5;
            }
        }
        let mut rebuilt = unit.clone();
        rebuild_normal_z(&set, &mut rebuilt);
        let worst = unit[0][ni].values.iter().zip(&rebuilt[0][ni].values).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
        assert!(worst < 1e-3, "z rebuilt from unit x, y: {worst}");
    }
}
