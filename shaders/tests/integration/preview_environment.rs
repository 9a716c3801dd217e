//! The shading pass lit by an environment (split-sum IBL, exposure, the tone mappers, rotation,
//! the backgrounds) matches its CPU reference `shade_environment` on lavapipe at 128²: FLIP mean
//! at most 0.01 for every setting. The environment is coloured by direction and has a sun, so a
//! cube face or an axis the GPU reads differently from the CPU shows.
#![allow(clippy::unwrap_used)]

use super::preview_deferred::originals_of;
use texset_core::{bundle::MapEntry, decode::unmap, eval::flip_mean};
use texset_shaders::environment::{Environment, PrepareOptions, ToneMapper, equirect_uv_to_direction, prepare};
use texset_shaders::preview::{
    Background, Lighting, MaterialRenderer, Originals, PreparedMaterial, PreviewUniforms, ShadePass, Shape, SurfacePass, ViewMode,
    render_deferred, shade_environment,
};
use texset_testkit::tiny_bundle;

/// Red towards +X, green up, blue towards +Z, and a small sun high in the +X +Z quarter.
fn coloured_environment() -> Environment {
    let (width, height) = (128u32, 64u32);
    let sun = {
        let s = [0.5f32, 0.7, 0.5];
        let l = (s[0] * s[0] + s[1] * s[1] + s[2] * s[2]).sqrt();
        s.map(|c| c / l)
    };
    let texels = (0..height)
        .flat_map(|y| (0..width).map(move |x| (x, y)))
        .map(|(x, y)| {
            let d = equirect_uv_to_direction([(x as f32 + 0.5) / width as f32, (y as f32 + 0.5) / height as f32]);
            let near_sun = d[0] * sun[0] + d[1] * sun[1] + d[2] * sun[2] > 0.97;
            let glow = if near_sun { 30.0 } else { 0.0 };
            [0.1 + 0.9 * d[0].max(0.0) + glow, 0.2 + 0.6 * d[1].max(0.0) + glow, 0.1 + 0.9 * d[2].max(0.0) + glow]
        })
        .collect();
    Environment::new(width, height, texels).unwrap()
}

/// Map slot `slot` of `u` at `uv` as the material pass reads the originals: the nearest texel,
/// un-mapped (`None` where the material has no such map).
fn original_texel(u: &PreviewUniforms, originals: &Originals, entries: &[MapEntry], slot: usize, uv: [f32; 2]) -> Option<[f32; 4]> {
    let layer = *u.layers.get(slot)? as usize;
    let (texels, entry) = (originals.layers.get(layer)?, entries.get(layer)?);
    let x = ((uv[0] * originals.width as f32) as u32).min(originals.width - 1);
    let y = ((uv[1] * originals.height as f32) as u32).min(originals.height - 1);
    let t = texels[(y * originals.width + x) as usize].map(|b| f32::from(b) / 255.0);
    Some(unmap(entry, t))
}

#[test]
fn the_shading_pass_lit_by_an_environment_matches_its_cpu_reference() {
    let name = "the_shading_pass_lit_by_an_environment_matches_its_cpu_reference";
    let Some((_, device, queue)) = super::rendering_gpu_or_skip(name) else {
        return;
    };
    let options = PrepareOptions { face_size_px: 128, level_count: 6, base_samples: 8, brdf_size_px: 32, brdf_samples: 64 };
    let prepared = prepare(&coloured_environment(), &options).unwrap();
    let bundle = tiny_bundle();
    let entries = &bundle.manifest.materials[0].maps;
    let originals = originals_of(&bundle, 0);
    let mut material = MaterialRenderer::from_prepared(&device, PreparedMaterial::new(&device, &bundle, None).unwrap());
    material.set_originals(&device, &queue, &originals).unwrap();
    let surface = SurfacePass::new(&device);
    let mut shade = ShadePass::new(&device, wgpu::TextureFormat::Rgba32Float);
    shade.set_environment(&device, &queue, &prepared).unwrap();
    let size = [128u32, 128];
    let settings = [
        Lighting::default(),
        Lighting {
            point_lights: true,
            exposure_ev: 1.0,
            tone_mapper: ToneMapper::Agx,
            rotation_rad: 1.3,
            background: Background::Environment,
            ..Lighting::default()
        },
        Lighting {
            exposure_ev: -1.0,
            tone_mapper: ToneMapper::AcesHill,
            background: Background::Solid([0.2, 0.3, 0.4]),
            ..Lighting::default()
        },
        Lighting { tone_mapper: ToneMapper::None, rotation_rad: -2.0, ..Lighting::default() },
    ];
    let mut images = Vec::new();
    for shape in [Shape::Sphere, Shape::Cube] {
        for lighting in settings {
            let u = PreviewUniforms::new(&bundle.manifest, 0, 0.7, 3.0, shape, 1.0).with_srgb_encoding(true).with_originals(true);
            material.write_uniforms(&queue, 0, &u);
            surface.write_uniforms(&queue, 0, &u);
            shade.write_uniforms(&queue, 0, &u);
            shade.set_lighting(&queue, lighting);
            let gpu = render_deferred(&device, &queue, &material, (&surface, &shade), None, size).unwrap();
            let fetch = |slot: usize, uv: [f32; 2], _footprint: f32| original_texel(&u, &originals, entries, slot, uv);
            let mut cpu = Vec::with_capacity(gpu.len());
            for y in 0..size[1] {
                for x in 0..size[0] {
                    let uv = [(x as f32 + 0.5) / size[0] as f32, (y as f32 + 0.5) / size[1] as f32];
                    cpu.extend_from_slice(&shade_environment(&u, Some((&lighting, &prepared)), uv, &fetch));
                }
            }
            let flip = flip_mean(&cpu, &gpu, size[0] as usize, size[1] as usize, 4);
            let worst = cpu.iter().zip(&gpu).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
            println!("{shape:?} {lighting:?}: FLIP mean {flip:.4}, max |gpu - cpu| {worst:.3}");
            assert!(flip <= 0.01, "{shape:?} {lighting:?}: FLIP mean {flip} against the CPU reference");
            assert!(gpu.iter().any(|&v| v > 0.05), "the image is blank");
            images.push(gpu);
        }
    }
    // Each setting shows something of its own: exposure, tone mapper, rotation and background
    // all change the picture.
    for (i, a) in images.iter().enumerate() {
        for b in &images[i + 1..] {
            let mean = a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum::<f32>() / a.len() as f32;
            assert!(mean > 1e-3, "two settings drew the same image ({mean})");
        }
    }
    // The channel views, unlit, against the CPU: within 1/255 but where the two round a uv to
    // different texels (the nearest texel on a texel's edge).
    // (The probe views, height and error, are `preview_probe`'s; the mip view reads the
    // footprint the LOD filter's height gives.)
    for view in ViewMode::ALL.into_iter().filter(|&v| !matches!(v, ViewMode::Lit | ViewMode::Height | ViewMode::Error)) {
        let lighting = Lighting { view, ..Lighting::default() };
        let u = PreviewUniforms::new(&bundle.manifest, 0, 0.7, 3.0, Shape::Sphere, 1.0)
            .with_srgb_encoding(true)
            .with_originals(true)
            .with_lod_filter(size[1] as f32);
        material.write_uniforms(&queue, 0, &u);
        surface.write_uniforms(&queue, 0, &u);
        shade.write_uniforms(&queue, 0, &u);
        shade.set_lighting(&queue, lighting);
        let gpu = render_deferred(&device, &queue, &material, (&surface, &shade), None, size).unwrap();
        let fetch = |slot: usize, uv: [f32; 2], _footprint: f32| original_texel(&u, &originals, entries, slot, uv);
        let mut beyond = 0usize;
        let mut values = 0usize;
        for y in 0..size[1] {
            for x in 0..size[0] {
                let uv = [(x as f32 + 0.5) / size[0] as f32, (y as f32 + 0.5) / size[1] as f32];
                let cpu = shade_environment(&u, Some((&lighting, &prepared)), uv, &fetch);
                let at = ((y * size[0] + x) * 4) as usize;
                beyond += (0..3).filter(|&c| (cpu[c] - gpu[at + c]).abs() > 1.0 / 255.0).count();
                values += 3;
            }
        }
        let share = beyond as f64 / values as f64;
        println!("{}: {beyond} of {values} values beyond 1/255 ({:.3} %)", view.name(), share * 100.0);
        assert!(share <= 0.001, "{}: {:.3} % of values beyond 1/255 of the CPU reference", view.name(), share * 100.0);
    }

    // Without an environment's lighting asked for, the pass draws the point lights as before.
    shade.set_lighting(&queue, Lighting::point_lights_only());
    let u = PreviewUniforms::new(&bundle.manifest, 0, 0.7, 3.0, Shape::Sphere, 1.0).with_srgb_encoding(true).with_originals(true);
    shade.write_uniforms(&queue, 0, &u);
    material.write_uniforms(&queue, 0, &u);
    surface.write_uniforms(&queue, 0, &u);
    let plain = render_deferred(&device, &queue, &material, (&surface, &shade), None, size).unwrap();
    assert_ne!(plain, images[0], "the environment changed nothing");
}
