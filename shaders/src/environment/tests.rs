//! The environment module's unit tests: the mappings, SH, prefilter, table, studio, cache and
//! tone mappers on the CPU. Files on disk and the GPU twin are tested in tests/integration.
#![allow(clippy::unwrap_used, reason = "a test: a failure is the message")]
#![allow(clippy::float_cmp, reason = "exact equalities are the properties tested (grey, determinism)")]

use super::*;

/// Small options (debug builds are slow) whose roughest level still has 4×4-texel faces: a mean
/// over fewer output texels is too coarse a quadrature to test energy with.
fn small_options() -> PrepareOptions {
    PrepareOptions { face_size_px: 64, level_count: 5, base_samples: 32, brdf_size_px: 32, brdf_samples: 256 }
}

/// An environment of `width_px` × `width_px / 2` from a function of the direction.
fn environment_from(width_px: u32, f: impl Fn([f32; 3]) -> [f32; 3]) -> Environment {
    let height_px = width_px / 2;
    let texels = (0..width_px * height_px)
        .map(|i| {
            let uv = [((i % width_px) as f32 + 0.5) / width_px as f32, ((i / width_px) as f32 + 0.5) / height_px as f32];
            f(equirect_uv_to_direction(uv))
        })
        .collect();
    Environment::new(width_px, height_px, texels).unwrap()
}

/// Directions spread over the sphere (a Fibonacci lattice).
fn sphere_directions(count: usize) -> Vec<[f32; 3]> {
    (0..count)
        .map(|i| {
            let y = 1.0 - 2.0 * (i as f32 + 0.5) / count as f32;
            let r = (1.0 - y * y).sqrt();
            let phi = i as f32 * 2.399_963;
            [r * phi.cos(), y, r * phi.sin()]
        })
        .collect()
}

fn close(a: [f32; 3], b: [f32; 3], tolerance: f32) -> bool {
    a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tolerance)
}

#[test]
fn equirect_mapping_round_trips_and_has_its_documented_axes() {
    for dir in sphere_directions(200) {
        let back = equirect_uv_to_direction(direction_to_equirect_uv(dir));
        assert!(close(dir, back, 1e-5), "{dir:?} -> {back:?}");
    }
    assert!(close(equirect_uv_to_direction([0.5, 0.5]), [0.0, 0.0, -1.0], 1e-6));
    assert!(close(equirect_uv_to_direction([0.75, 0.5]), [1.0, 0.0, 0.0], 1e-6));
    assert!(close(equirect_uv_to_direction([0.3, 0.0]), [0.0, 1.0, 0.0], 1e-6));
}

#[test]
fn cube_mapping_round_trips_and_has_the_gpu_convention() {
    for dir in sphere_directions(200) {
        let (face, uv) = cube_face_uv(dir);
        assert!(close(cube_direction(face, uv), dir, 1e-5), "{dir:?}");
    }
    // Face centres point along the axes in CUBE_FACES' order.
    let axes = [[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, -1.0]];
    for (face, axis) in axes.into_iter().enumerate() {
        assert!(close(cube_direction(face, [0.5, 0.5]), axis, 1e-6), "{}", CUBE_FACES[face]);
    }
    // +X's top-left corner (u = v = 0) is (1, 1, 1) (s = t = −1): Vulkan's table.
    let corner = 1.0 / 3.0f32.sqrt();
    assert!(close(cube_direction(0, [0.0, 0.0]), [corner, corner, corner], 1e-6));
}

#[test]
fn new_replaces_negative_and_non_finite_values_and_refuses_bad_shapes() {
    let env = Environment::new(2, 1, vec![[-1.0, f32::NAN, 2.0], [f32::INFINITY, 0.5, f32::NEG_INFINITY]]).unwrap();
    assert_eq!(env.texels(), &[[0.0, 0.0, 2.0], [0.0, 0.5, 0.0]]);
    assert_eq!(env.replaced_values(), 4);
    assert!(matches!(Environment::new(2, 2, vec![[0.0; 3]; 3]), Err(EnvironmentError::Shape { .. })));
    assert!(matches!(Environment::new(0, 0, Vec::new()), Err(EnvironmentError::Shape { .. })));
    assert!(matches!(Environment::new(MAX_WIDTH_PX + 1, 1, Vec::new()), Err(EnvironmentError::Shape { .. })));
}

#[test]
fn sh_of_a_constant_environment_gives_that_radiance_everywhere() {
    let radiance = [0.7, 1.3, 2.0];
    let prepared = prepare(&environment_from(64, |_| radiance), &small_options()).unwrap();
    for normal in sphere_directions(100) {
        let e = prepared.irradiance(normal);
        assert!(close(e, radiance, 1e-3), "{normal:?}: {e:?}");
    }
}

#[test]
fn sh_of_one_bright_texel_follows_the_cosine_lobe() {
    // One texel lit at the equator towards −Z; the exact irradiance/π is
    // radiance · solid angle · max(0, n·l) / π. Nine coefficients approximate the clamped cosine
    // to about 6 % of its peak at the light and 9 % of it at the terminator (Ramamoorthi &
    // Hanrahan): 0.1 of the peak covers both.
    let (w, h) = (64u32, 32u32);
    let mut texels = vec![[0.0f32; 3]; (w * h) as usize];
    let (x, y) = (w / 2, h / 2);
    texels[(y * w + x) as usize] = [1000.0; 3];
    let env = Environment::new(w, h, texels).unwrap();
    let light = equirect_uv_to_direction([(x as f32 + 0.5) / w as f32, (y as f32 + 0.5) / h as f32]);
    let rows = sh::row_solid_angles(h);
    let solid_angle = rows[y as usize] / f64::from(w);
    let peak = (1000.0 * solid_angle / std::f64::consts::PI) as f32;
    let prepared = prepare(&env, &small_options()).unwrap();
    for normal in sphere_directions(300) {
        let cosine = (normal[0] * light[0] + normal[1] * light[1] + normal[2] * light[2]).max(0.0);
        let got = prepared.irradiance(normal)[0];
        assert!((got - peak * cosine).abs() <= 0.1 * peak, "{normal:?}: {got} vs {}", peak * cosine);
    }
}

#[test]
fn a_constant_environment_prefilters_to_the_constant_at_every_level() {
    let radiance = [0.25, 1.0, 3.0];
    let prepared = prepare(&environment_from(64, |_| radiance), &small_options()).unwrap();
    assert_eq!(prepared.specular_levels().len(), 5);
    for level in prepared.specular_levels() {
        for texel in level.texels() {
            assert!(close(*texel, radiance, 1e-4 * 3.0), "roughness {}: {texel:?}", level.roughness());
        }
    }
    for dir in sphere_directions(50) {
        assert!(close(prepared.specular(dir, 0.37), radiance, 3e-4));
    }
}

#[test]
fn level_zero_of_a_smooth_environment_is_the_source() {
    let smooth = |d: [f32; 3]| [1.0 + 0.5 * d[0], 1.0 + 0.5 * d[1], 1.0 - 0.25 * d[2]];
    let env = environment_from(128, smooth);
    let prepared = prepare(&env, &small_options()).unwrap();
    for dir in sphere_directions(300) {
        let got = prepared.specular(dir, 0.0);
        assert!(close(got, smooth(dir), 0.02), "{dir:?}: {got:?} vs {:?}", smooth(dir));
    }
}

/// A sharp, bright environment: a small sun over a grey sky and a darker ground.
fn sunny(width_px: u32) -> Environment {
    let sun = cube::normalize([0.3, 0.6, -0.7]);
    environment_from(width_px, move |d| {
        let cos = d[0] * sun[0] + d[1] * sun[1] + d[2] * sun[2];
        let base = if d[1] > 0.0 { [0.4, 0.5, 0.7] } else { [0.2, 0.15, 0.1] };
        if cos > 0.998 { [500.0, 450.0, 400.0] } else { base }
    })
}

#[test]
fn the_roughest_level_is_smooth_and_keeps_the_mean() {
    for env in [sunny(256), Environment::studio(256)] {
        let prepared = prepare(&env, &small_options()).unwrap();
        let source_mean = env.mean_radiance();
        let roughest = prepared.specular_levels().last().unwrap();
        let mean = roughest.mean_radiance();
        for c in 0..3 {
            assert!((mean[c] / source_mean[c] - 1.0).abs() <= 0.05, "channel {c}: {mean:?} vs {source_mean:?}");
        }
        // No fireflies. The same level filtered with 32 times the samples (16,384 a texel) stands
        // for the converged convolution. With 512 samples the level differs from it by up to 21.5 %
        // of its brightest texel (measured; a 3.6°-radius sun 600 times brighter than the sky,
        // read through filtered importance sampling's blurred mips; the studio 4.2 %). Without the +1 mip bias it
        // was 37 %; a firefly (one unfiltered sample on the sun) is a multiple of the peak.
        let last = small_options().level_count - 1;
        let dense = PrepareOptions { base_samples: 32 * small_options().base_samples, ..small_options() };
        let reference = prefilter::level(&pyramid::Pyramid::new(&env), &dense, last);
        let largest = roughest.texels().iter().flatten().fold(0.0f32, |m, v| m.max(*v));
        for (got, want) in roughest.texels().iter().zip(reference.texels()) {
            assert!(close(*got, *want, 0.25 * largest), "{got:?} vs {want:?} (largest {largest})");
        }
    }
}

#[test]
fn the_split_sum_table_has_its_known_edges() {
    let table = BrdfTable::integrate(32, 512);
    let [a, b] = table.sample(1.0, 0.0);
    assert!((a - 1.0).abs() < 0.01 && b.abs() < 0.01, "LUT(1, 0) = ({a}, {b})");
    for [a, b] in table.texels() {
        assert!(*a >= 0.0 && *b >= 0.0 && a + b <= 1.0 + 1e-4, "({a}, {b})");
    }
    // Grazing and rough loses energy to masking; B grows at grazing angles.
    let [a, b] = table.sample(0.05, 0.5);
    assert!(a < 0.9 && b > 0.02, "LUT(0.05, 0.5) = ({a}, {b})");
    // Each entry's centre reads that entry.
    assert_eq!(table.sample(0.5 / 32.0, 0.5 / 32.0), table.texels()[0]);
}

#[test]
fn preparing_is_deterministic() {
    let env = sunny(64);
    let a = prepare(&env, &small_options()).unwrap();
    let b = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap().install(|| prepare(&env, &small_options()).unwrap());
    assert_eq!(a, b);
}

#[test]
fn options_out_of_range_are_refused() {
    let env = environment_from(8, |_| [1.0; 3]);
    for options in [
        PrepareOptions { face_size_px: 0, ..PrepareOptions::default() },
        PrepareOptions { level_count: 14, ..PrepareOptions::default() },
        PrepareOptions { brdf_samples: 0, ..PrepareOptions::default() },
    ] {
        assert!(matches!(prepare(&env, &options), Err(EnvironmentError::Option { .. })), "{options:?}");
    }
    let defaults = PrepareOptions::default();
    let samples: Vec<u32> = (0..6).map(|k| defaults.level_samples(k)).collect();
    assert_eq!(samples, [0, 32, 64, 128, 256, 512], "Bevy's schedule 32·2^⌊4r⌋");
    let sizes: Vec<u32> = (0..6).map(|k| defaults.level_face_size_px(k)).collect();
    assert_eq!(sizes, [128, 64, 32, 16, 8, 4]);
}

#[test]
fn the_studio_is_deterministic_finite_neutral_and_averages_one() {
    let studio = Environment::studio(256);
    assert_eq!(studio, Environment::studio(256));
    assert_eq!((studio.width_px(), studio.height_px()), (256, 128));
    assert!(studio.texels().iter().flatten().all(|v| v.is_finite() && *v >= 0.0));
    assert!(studio.texels().iter().all(|[r, g, b]| r == g && g == b), "grey everywhere");
    let mean = studio.mean_radiance();
    assert!((mean[0] - 1.0).abs() < 1e-3, "{mean:?}");
    // Lights brighter than the dome, the floor dimmer than the sky.
    let largest = studio.texels().iter().fold(0.0f32, |m, t| m.max(t[0]));
    assert!(largest > 3.0, "{largest}");
    assert!(studio.radiance([0.0, -1.0, 0.0])[0] < studio.radiance([0.0, 1.0, 0.0])[0]);
}

#[test]
fn load_or_studio_is_the_studio_without_a_path_and_names_a_bad_file() {
    let studio = Environment::load_or_studio(None).unwrap();
    assert_eq!(studio, Environment::studio(STUDIO_WIDTH_PX));
    let missing = std::path::Path::new("no such environment.hdr");
    let error = Environment::load_or_studio(Some(missing)).unwrap_err();
    assert!(matches!(&error, EnvironmentError::Read { path, .. } if path == missing), "{error}");
    assert!(error.to_string().contains("no such environment.hdr"), "{error}");
}

#[test]
fn the_cache_round_trips_and_refuses_damage() {
    let prepared = prepare(&sunny(64), &small_options()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("env.ibl");
    prepared.write_cache(&path).unwrap();
    assert_eq!(PreparedEnvironment::read_cache(&path).unwrap(), prepared);
    let bytes = std::fs::read(&path).unwrap();
    // Truncated anywhere, a flipped bit, an empty file, trailing bytes: errors naming the file.
    let mut flipped = bytes.clone();
    flipped[bytes.len() / 2] ^= 0x10;
    let mut longer = bytes.clone();
    longer.push(0);
    let mut huge = bytes.clone();
    huge[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    for (what, damaged) in [
        ("truncated", &bytes[..bytes.len() - 1]),
        ("header only", &bytes[..20]),
        ("empty", &[][..]),
        ("flipped", &flipped[..]),
        ("longer", &longer[..]),
        ("huge size", &huge[..]),
    ] {
        std::fs::write(&path, damaged).unwrap();
        let error = PreparedEnvironment::read_cache(&path).unwrap_err();
        assert!(error.to_string().contains("env.ibl"), "{what}: {error}");
    }
    assert!(matches!(PreparedEnvironment::read_cache(&dir.path().join("missing")), Err(CacheError::Io { .. })));
}

#[test]
fn the_cache_key_covers_the_bytes_and_every_option() {
    let options = PrepareOptions::default();
    let key = PreparedEnvironment::cache_key(b"abc", &options);
    assert_eq!(key.len(), 64);
    assert_eq!(key, PreparedEnvironment::cache_key(b"abc", &options));
    assert_ne!(key, PreparedEnvironment::cache_key(b"abd", &options));
    let changed = [
        PrepareOptions { face_size_px: 64, ..options },
        PrepareOptions { level_count: 5, ..options },
        PrepareOptions { base_samples: 16, ..options },
        PrepareOptions { brdf_size_px: 128, ..options },
        PrepareOptions { brdf_samples: 256, ..options },
    ];
    for other in changed {
        assert_ne!(key, PreparedEnvironment::cache_key(b"abc", &other), "{other:?}");
    }
}

/// Tone maps `rgb` halved at +1 EV (so exposure is exercised and cancels).
fn at_plus_one_ev(rgb: [f32; 3], mapper: ToneMapper) -> [f32; 3] {
    tonemap::tonemap(rgb.map(|c| c * 0.5), mapper, 1.0)
}

#[test]
fn tone_mappers_have_their_known_values() {
    // PBR Neutral: input − 0.04 between 0.08 and 0.8; 0 stays 0; bright values stay below 1.
    assert!(close(at_plus_one_ev([0.5, 0.3, 0.2], ToneMapper::PbrNeutral), [0.46, 0.26, 0.16], 1e-6));
    assert_eq!(tonemap::tonemap_pbr_neutral([0.0; 3]), [0.0; 3]);
    let bright = tonemap::tonemap_pbr_neutral([100.0, 50.0, 10.0]);
    assert!(bright.iter().all(|v| *v <= 1.0) && bright[0] > 0.98, "{bright:?}");
    // None clamps.
    assert_eq!(at_plus_one_ev([0.25, 2.0, -1.0], ToneMapper::None), [0.25, 1.0, 0.0]);
    // AgX and ACES: black stays near black, monotonic in grey, near white at the top.
    for mapper in [ToneMapper::Agx, ToneMapper::AcesHill] {
        let mut previous = -1.0;
        for i in 0..200 {
            let grey = 1e-3 * 1.06f32.powi(i);
            let out = tonemap::tonemap([grey; 3], mapper, 0.0);
            assert!(out[1] >= previous - 1e-6, "{mapper:?} at {grey}: {out:?}");
            previous = out[1];
        }
        assert!(tonemap::tonemap([0.0; 3], mapper, 0.0)[1] < 1e-3, "{mapper:?}");
        assert!(previous > 0.8, "{mapper:?}: {previous}");
    }
    // The WGSL declares the ids Rust uses.
    for mapper in ToneMapper::ALL {
        let declaration = format!("const {}: u32 = {}u;", mapper.wgsl_name(), mapper.wgsl_id());
        assert!(TONEMAP_WGSL.contains(&declaration), "tonemap.wgsl lacks `{declaration}`");
    }
}
