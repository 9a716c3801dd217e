//! The viewport's probe views and its wipe: the per-texel error against the original maps
//! (pooled, and of one map; of the decoded bundle, and of a side that reads maps from its texture
//! with the reference after them) and the height map, drawn on the heat ramp or in grey by the
//! material and shading passes, match their CPU reference `shade_probe` on lavapipe; a wipe draws
//! each side exactly as that side drawn alone, left and right of its split.
#![allow(clippy::unwrap_used)]

use super::preview_deferred::originals_of;
use texset_core::{bundle::Bundle, decode::Decoder, set::MapKind};
use texset_shaders::preview::{
    Layout, Lighting, MaterialRenderer, Originals, PassTimer, PreparedMaterial, PreviewUniforms, Probe, ShadePass, Shape, SurfacePass,
    ViewMode, render_sides, render_sides_timed, shade_probe,
};
use texset_testkit::tiny_bundle;

/// The texel centre of map `entry` under `uv` (as `texel_centre` in preview.wgsl).
fn texel_centre(width: u32, height: u32, uv: [f32; 2]) -> [f32; 2] {
    let f = |t: f32, n: u32| (((t - t.floor()) * n as f32).floor() + 0.5) / n as f32;
    [f(uv[0], width), f(uv[1], height)]
}

/// Layer `layer` of `originals` at `uv`, nearest texel, as stored values.
fn stored(originals: &Originals, layer: usize, uv: [f32; 2]) -> [f32; 4] {
    let x = ((uv[0] * originals.width as f32) as u32).min(originals.width - 1);
    let y = ((uv[1] * originals.height as f32) as u32).min(originals.height - 1);
    originals.layers[layer][(y * originals.width + x) as usize].map(|b| f32::from(b) / 255.0)
}

/// What the material pass writes for `probe` at texture point `uv` of `material`: from the decoded
/// bundle (`decoded`), else from layer `i` of `texture`, against layer `i + offset` of it.
fn cpu_probe(bundle: &Bundle, material: usize, probe: Probe, decoded: bool, texture: &Originals, uv: [f32; 2]) -> Option<f32> {
    let cpu = Decoder::new(bundle);
    let maps = &bundle.manifest.materials[material].maps;
    let (picked, offset): (Vec<usize>, usize) = match probe {
        Probe::Error { map: None, reference_offset } => ((0..maps.len()).collect(), reference_offset as usize),
        Probe::Error { map: Some(kind), reference_offset } => {
            (maps.iter().position(|e| e.info.kind == kind).into_iter().collect(), reference_offset as usize)
        }
        Probe::Height => (maps.iter().position(|e| e.info.kind == MapKind::Height).into_iter().collect(), 0),
        Probe::Material => (Vec::new(), 0),
    };
    if picked.is_empty() {
        return None;
    }
    let mut sum = 0.0;
    for &i in &picked {
        let centre = texel_centre(maps[i].info.width, maps[i].info.height, uv);
        let shown = if decoded {
            let mut t = [0.0; 4];
            cpu.decode_texel(material, i, centre[0], centre[1], &mut t).unwrap();
            t
        } else {
            stored(texture, i, centre)
        };
        if probe == Probe::Height {
            sum += shown[0];
            continue;
        }
        let reference = stored(texture, i + offset, centre);
        let channels = maps[i].info.channels.min(4) as usize;
        sum += (0..channels).map(|c| (shown[c] - reference[c]).abs()).sum::<f32>() / channels as f32;
    }
    Some(sum / picked.len() as f32)
}

#[test]
fn probe_views_match_their_cpu_reference_and_a_wipe_shows_each_side() {
    let name = "probe_views_match_their_cpu_reference_and_a_wipe_shows_each_side";
    let Some((adapter, device, queue)) = super::rendering_gpu_or_skip(name) else {
        return;
    };
    let bundle = tiny_bundle();
    // Material "n": a normal, a float-range height and an emissive colour variant.
    let material = 1;
    let originals = originals_of(&bundle, material);
    // A side reading maps from its texture: the originals shifted, then the originals themselves.
    let shifted: Vec<Vec<[u8; 4]>> = originals.layers.iter().map(|l| l.iter().map(|t| t.map(|b| b.saturating_add(9))).collect()).collect();
    let with_reference =
        Originals { width: originals.width, height: originals.height, layers: shifted.iter().chain(&originals.layers).cloned().collect() };
    let prepared = PreparedMaterial::new(&device, &bundle, None).unwrap();
    let mut decoded = MaterialRenderer::from_prepared(&device, prepared.clone());
    decoded.set_originals(&device, &queue, &originals).unwrap();
    let mut texture = MaterialRenderer::from_prepared(&device, prepared);
    texture.set_originals(&device, &queue, &with_reference).unwrap();
    let surface = SurfacePass::new(&device);
    let mut shade = ShadePass::new(&device, wgpu::TextureFormat::Rgba32Float);
    let size = [96u32, 96];
    let maps = bundle.manifest.materials[material].maps.len() as u32;
    let cases = [
        (ViewMode::Error, Probe::Error { map: None, reference_offset: 0 }, true),
        (ViewMode::Error, Probe::Error { map: Some(MapKind::Normal), reference_offset: 0 }, true),
        (ViewMode::Error, Probe::Error { map: Some(MapKind::Basecolor), reference_offset: 0 }, true),
        (ViewMode::Height, Probe::Height, true),
        (ViewMode::Error, Probe::Error { map: None, reference_offset: maps }, false),
    ];
    for (view, probe, from_bundle) in cases {
        let lighting = Lighting { view, error_full_scale: 0.08, ..Lighting::default() };
        shade.set_lighting(&queue, lighting);
        let u = PreviewUniforms::new(&bundle.manifest, material, 0.7, 3.0, Shape::Plane, 1.0)
            .with_srgb_encoding(true)
            .with_originals(!from_bundle)
            .with_probe(probe);
        let renderer = if from_bundle { &mut decoded } else { &mut texture };
        renderer.write_uniforms(&queue, 0, &u);
        surface.write_uniforms(&queue, 0, &u);
        shade.write_uniforms(&queue, 0, &u);
        let gpu = render_sides(&device, &queue, (&[(&*renderer, 0)], Layout::One), (&surface, &shade), None, size).unwrap();
        let source = if from_bundle { &originals } else { &with_reference };
        let probe_at = |uv: [f32; 2]| cpu_probe(&bundle, material, probe, from_bundle, source, uv);
        let (mut beyond, mut hot) = (0usize, 0usize);
        for y in 0..size[1] {
            for x in 0..size[0] {
                let uv = [(x as f32 + 0.5) / size[0] as f32, (y as f32 + 0.5) / size[1] as f32];
                let cpu = shade_probe(&u, &lighting, uv, &probe_at);
                let at = ((y * size[0] + x) * 4) as usize;
                beyond += (0..3).filter(|&c| (cpu[c] - gpu[at + c]).abs() > 2.0 / 255.0).count();
                hot += usize::from(gpu[at] > 0.5 && gpu[at + 2] < 0.5);
            }
        }
        let share = beyond as f64 / (3 * size[0] * size[1]) as f64;
        println!("{view:?} {probe:?}: {:.3} % of values beyond 2/255 of the CPU reference; {hot} warm pixels", share * 100.0);
        assert!(share <= 0.005, "{view:?} {probe:?}: {:.3} % of values beyond 2/255", share * 100.0);
        if from_bundle && view == ViewMode::Error && probe != (Probe::Error { map: Some(MapKind::Basecolor), reference_offset: 0 }) {
            // The random originals against a tiny model: the error shows, somewhere hot (the
            // shifted texture's 9/255 everywhere is the reference's own check above).
            assert!(hot > 0, "{probe:?}: no pixel up the ramp");
        }
    }

    // A wipe at 30 %: side 0 (the originals, lit) left of it, side 1 (decoded) right, each as
    // drawn alone through the same camera.
    shade.set_lighting(&queue, Lighting::default());
    let base = PreviewUniforms::new(&bundle.manifest, material, 0.7, 3.0, Shape::Sphere, 1.0).with_srgb_encoding(true);
    let [left_u, right_u] = [base.with_originals(true), base.with_originals(false)];
    texture.set_originals(&device, &queue, &originals).unwrap();
    texture.write_uniforms(&queue, 0, &left_u);
    decoded.write_uniforms(&queue, 0, &right_u);
    let mut alone = Vec::new();
    for (renderer, u) in [(&texture, left_u), (&decoded, right_u)] {
        surface.write_uniforms(&queue, 0, &u);
        shade.write_uniforms(&queue, 0, &u);
        alone.push(render_sides(&device, &queue, (&[(renderer, 0)], Layout::One), (&surface, &shade), None, size).unwrap());
    }
    for (side, u) in [left_u, right_u].iter().enumerate() {
        surface.write_uniforms(&queue, side, u);
        shade.write_uniforms(&queue, side, u);
    }
    let layout = Layout::Wipe(0.3);
    let wipe = render_sides(&device, &queue, (&[(&texture, 0), (&decoded, 0)], layout), (&surface, &shade), None, size).unwrap();
    let split = layout.split_px(size[0]).unwrap() as usize;
    assert_eq!(split, 29);
    let mut worst = [0.0f32; 2];
    for y in 0..size[1] as usize {
        for x in 0..size[0] as usize {
            let side = usize::from(x >= split);
            let at = (y * size[0] as usize + x) * 4;
            for c in 0..4 {
                worst[side] = worst[side].max((wipe[at + c] - alone[side][at + c]).abs());
            }
        }
    }
    println!("wipe against each side alone: max |difference| {worst:?}");
    assert!(worst[0] < 1e-5 && worst[1] < 1e-5, "the wipe's sides differ from the sides drawn alone: {worst:?}");
    assert_ne!(alone[0], alone[1], "the two sides drew the same image");

    // The same wipe with each pass timed (`texset render --gpu-time`): the timestamps change
    // nothing drawn, and each pass takes some time within the frame's.
    let Some(timer) = PassTimer::new(&device, &queue) else {
        println!("SKIPPED the pass timing: {} has no timestamp queries", adapter.get_info().name);
        return;
    };
    let sides = [(&texture, 0), (&decoded, 0)];
    let (timed, times) = render_sides_timed(&device, &queue, (&sides, layout), (&surface, &shade), None, size, Some(&timer)).unwrap();
    let times = times.unwrap();
    println!("the wipe's passes {:?} ms, the frame {:.4} ms", times.pass_ms, times.frame_ms);
    assert_eq!(timed, wipe, "the timed wipe differs from the untimed one");
    assert!(times.pass_ms.iter().all(|&ms| ms > 0.0 && ms <= times.frame_ms), "{times:?}");
    assert!(times.pass_ms.iter().sum::<f64>() <= times.frame_ms * 1.001, "the passes overlap beyond the frame: {times:?}");
}

/// `renderer`'s slot 0 drawn alone through the three passes with uniforms `u`, at `size`.
fn draw_alone(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    (surface, shade): (&SurfacePass, &ShadePass),
    renderer: &mut MaterialRenderer,
    u: PreviewUniforms,
    size: [u32; 2],
) -> Vec<f32> {
    renderer.write_uniforms(queue, 0, &u);
    surface.write_uniforms(queue, 0, &u);
    shade.write_uniforms(queue, 0, &u);
    render_sides(device, queue, (&[(&*renderer, 0)], Layout::One), (surface, shade), None, size).unwrap()
}

/// A prepared material makes the decoder's pipeline only when first drawn decoded: its lit
/// originals (the studio's before training, `texset render --ab original,bcn`) wait for no
/// decoder compile, and the decoder made late draws as one made with an earlier draw.
#[test]
fn a_prepared_material_compiles_its_decoder_only_when_drawn_decoded() {
    let name = "a_prepared_material_compiles_its_decoder_only_when_drawn_decoded";
    let Some((_, device, queue)) = super::rendering_gpu_or_skip(name) else {
        return;
    };
    let bundle = tiny_bundle();
    let material = 1;
    let originals = originals_of(&bundle, material);
    let surface = SurfacePass::new(&device);
    let shade = ShadePass::new(&device, wgpu::TextureFormat::Rgba32Float);
    let size = [64u32, 64];
    let base = PreviewUniforms::new(&bundle.manifest, material, 0.7, 3.0, Shape::Sphere, 1.0).with_srgb_encoding(true);
    let draw = |renderer: &mut MaterialRenderer, u: PreviewUniforms| draw_alone(&device, &queue, (&surface, &shade), renderer, u, size);
    let prepared = PreparedMaterial::new(&device, &bundle, None).unwrap();
    assert!(!prepared.decoder_made(), "the decoder was compiled before anything was drawn");
    let mut maps = MaterialRenderer::from_prepared(&device, prepared);
    maps.set_originals(&device, &queue, &originals).unwrap();
    let lit_maps = draw(&mut maps, base.with_originals(true));
    assert!(!maps.prepared().decoder_made(), "drawing the originals compiled the decoder");

    // Another preparation of the bundle, drawn decoded first.
    let mut early = MaterialRenderer::from_prepared(&device, PreparedMaterial::new(&device, &bundle, None).unwrap());
    early.set_originals(&device, &queue, &originals).unwrap();
    let decoded = draw(&mut early, base.with_originals(false));
    assert!(early.prepared().decoder_made());
    assert_eq!(lit_maps, draw(&mut early, base.with_originals(true)), "the originals differ once the decoder is made");

    let late = draw(&mut maps, base.with_originals(false));
    assert!(maps.prepared().decoder_made());
    assert_eq!(late, decoded, "the decoder made on a later draw draws otherwise");
    assert_ne!(late, lit_maps, "decoded and original drew the same image");
}

/// The studio's viewport reads a decoded side from the CPU decode as textures while its view
/// moves (decision 051): the CPU decode at texel centres, then the originals, in the side's
/// texture. Its error view, each texel's |decoded − original|, draws what the per-pixel decoder's
/// draws, to the texture's 8 bits.
#[test]
fn a_decoded_side_read_from_textures_shows_the_per_pixel_decoders_error() {
    let name = "a_decoded_side_read_from_textures_shows_the_per_pixel_decoders_error";
    let Some((_, device, queue)) = super::rendering_gpu_or_skip(name) else {
        return;
    };
    let bundle = tiny_bundle();
    let material = 1;
    let originals = originals_of(&bundle, material);
    let cpu = Decoder::new(&bundle);
    let maps = &bundle.manifest.materials[material].maps;
    let decoded_values: Vec<Vec<f32>> = maps
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let (w, h, c) = (entry.info.width, entry.info.height, entry.info.channels as usize);
            let mut values = Vec::with_capacity(w as usize * h as usize * c);
            for y in 0..h {
                for x in 0..w {
                    let mut t = [0.0; 4];
                    let uv = [(x as f32 + 0.5) / w as f32, (y as f32 + 0.5) / h as f32];
                    cpu.decode_texel(material, i, uv[0], uv[1], &mut t).unwrap();
                    values.extend_from_slice(&t[..c.min(4)]);
                    values.extend(std::iter::repeat_n(0.0, c.saturating_sub(4)));
                }
            }
            values
        })
        .collect();
    let decoded_maps: Vec<(u32, u32, u32, &[f32])> =
        maps.iter().zip(&decoded_values).map(|(e, v)| (e.info.width, e.info.height, e.info.channels, v.as_slice())).collect();
    let decoded = Originals::from_maps(&decoded_maps);
    assert_eq!((decoded.width, decoded.height), (originals.width, originals.height));
    let texture = Originals { width: decoded.width, height: decoded.height, layers: [decoded.layers, originals.layers.clone()].concat() };

    let prepared = PreparedMaterial::new(&device, &bundle, None).unwrap();
    let mut per_pixel = MaterialRenderer::from_prepared(&device, prepared.clone());
    per_pixel.set_originals(&device, &queue, &originals).unwrap();
    let mut textures = MaterialRenderer::from_prepared(&device, prepared);
    textures.set_originals(&device, &queue, &texture).unwrap();
    let surface = SurfacePass::new(&device);
    let mut shade = ShadePass::new(&device, wgpu::TextureFormat::Rgba32Float);
    shade.set_lighting(&queue, Lighting { view: ViewMode::Error, error_full_scale: 0.08, ..Lighting::default() });
    let size = [96u32, 96];
    let base = PreviewUniforms::new(&bundle.manifest, material, 0.7, 3.0, Shape::Plane, 1.0).with_srgb_encoding(true);
    let draw = |renderer: &mut MaterialRenderer, u: PreviewUniforms| draw_alone(&device, &queue, (&surface, &shade), renderer, u, size);
    for map in [None, Some(MapKind::Normal), Some(MapKind::Basecolor)] {
        let shipped = draw(&mut per_pixel, base.with_originals(false).with_probe(Probe::Error { map, reference_offset: 0 }));
        let from_textures =
            draw(&mut textures, base.with_originals(true).with_probe(Probe::Error { map, reference_offset: maps.len() as u32 }));
        let beyond = shipped.iter().zip(&from_textures).filter(|(a, b)| (*a - *b).abs() > 2.0 / 255.0).count();
        let share = beyond as f64 / shipped.len() as f64;
        println!("{map:?}: {:.3} % of values beyond 2/255 of the per-pixel decoder's", share * 100.0);
        assert!(share <= 0.005, "{map:?}: {:.3} % of values beyond 2/255", share * 100.0);
        if map.is_none() {
            // The random originals against a tiny model: the error shows, somewhere warm.
            let warm = shipped.chunks_exact(4).filter(|p| p[0] > 0.5 && p[2] < 0.5).count();
            assert!(warm > 0, "the error view drew nothing to compare");
        }
    }
}
