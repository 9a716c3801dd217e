//! The preview's CPU reference, the twin of `preview.wgsl`: a ray per pixel against the preview
//! shapes, GGX + Lambert under the lights, and the rendered error `texset eval` reports.

use super::lighting::{Background, CHANNEL_BACKGROUND, Lighting, ViewMode, blurred_level, heat};
use super::{Manifest, NONE, PreviewUniforms, Shape};
use crate::environment::{PreparedEnvironment, tonemap::tonemap};
use texset_core::{decode::unmap, set::linear_to_srgb};

type V3 = [f32; 3];

fn add(a: V3, b: V3) -> V3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}
fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
fn mul(a: V3, s: f32) -> V3 {
    [a[0] * s, a[1] * s, a[2] * s]
}
fn dot(a: V3, b: V3) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
fn cross(a: V3, b: V3) -> V3 {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}
fn normalize(a: V3) -> V3 {
    mul(a, 1.0 / dot(a, a).sqrt())
}

struct Hit {
    normal: V3,
    tangent: V3,
    uv: [f32; 2],
}

/// Column-major 3×3 (as WGSL's `mat3x3`): `m[c]` is column `c`.
type M3 = [V3; 3];
fn mat_vec(m: &M3, v: V3) -> V3 {
    add(add(mul(m[0], v[0]), mul(m[1], v[1])), mul(m[2], v[2]))
}
fn transpose_vec(m: &M3, v: V3) -> V3 {
    [dot(m[0], v), dot(m[1], v), dot(m[2], v)]
}
fn mat_mul(a: &M3, b: &M3) -> M3 {
    [mat_vec(a, b[0]), mat_vec(a, b[1]), mat_vec(a, b[2])]
}
fn cube_rotation() -> M3 {
    let (yaw, pitch) = (0.6f32, 0.45f32);
    let ry = [[yaw.cos(), 0.0, -yaw.sin()], [0.0, 1.0, 0.0], [yaw.sin(), 0.0, yaw.cos()]];
    let rx = [[1.0, 0.0, 0.0], [0.0, pitch.cos(), pitch.sin()], [0.0, -pitch.sin(), pitch.cos()]];
    mat_mul(&rx, &ry)
}

// Reason: `near` is the largest of `tmin`, so exact equality tells which slab it came from (as
// the WGSL does).
#[allow(clippy::float_cmp)]
fn intersect(origin: V3, dir: V3, shape: u32) -> Option<Hit> {
    use std::f32::consts::PI;
    if shape == 0 {
        let b = dot(origin, dir);
        let c = dot(origin, origin) - 1.0;
        let disc = b * b - c;
        if disc < 0.0 {
            return None;
        }
        let t = -b - disc.sqrt();
        let p = add(origin, mul(dir, t));
        let phi = p[0].atan2(p[2]);
        return Some(Hit {
            normal: normalize(p),
            tangent: [phi.cos(), 0.0, -phi.sin()],
            uv: [phi / (2.0 * PI) + 0.5, p[1].clamp(-1.0, 1.0).acos() / PI],
        });
    }
    if shape == 1 {
        if dir[2].abs() < 1e-6 {
            return None;
        }
        let t = -origin[2] / dir[2];
        let p = add(origin, mul(dir, t));
        if t <= 0.0 || p[0].abs() > 1.0 || p[1].abs() > 1.0 {
            return None;
        }
        return Some(Hit { normal: [0.0, 0.0, 1.0], tangent: [1.0, 0.0, 0.0], uv: [p[0] * 0.5 + 0.5, 0.5 - p[1] * 0.5] });
    }
    let r = cube_rotation();
    let o = transpose_vec(&r, origin);
    let d = transpose_vec(&r, dir);
    let size = 0.75f32;
    let mut tmin = [0.0f32; 3];
    let mut tmax = [0.0f32; 3];
    for k in 0..3 {
        let inv = 1.0 / d[k];
        let t0 = (-size - o[k]) * inv;
        let t1 = (size - o[k]) * inv;
        tmin[k] = t0.min(t1);
        tmax[k] = t0.max(t1);
    }
    let near = tmin[0].max(tmin[1]).max(tmin[2]);
    let far = tmax[0].min(tmax[1]).min(tmax[2]);
    if near > far || far < 0.0 {
        return None;
    }
    let q = mul(add(o, mul(d, near)), 1.0 / size);
    let sign = |x: f32| {
        if x > 0.0 {
            1.0
        } else if x < 0.0 {
            -1.0
        } else {
            0.0
        }
    };
    let (n, tangent, uv) = if near == tmin[0] {
        ([sign(q[0]), 0.0, 0.0], [0.0, 0.0, -sign(q[0])], [-sign(q[0]) * q[2], -q[1]])
    } else if near == tmin[1] {
        ([0.0, sign(q[1]), 0.0], [1.0, 0.0, 0.0], [q[0], sign(q[1]) * q[2]])
    } else {
        ([0.0, 0.0, sign(q[2])], [sign(q[2]), 0.0, 0.0], [sign(q[2]) * q[0], -q[1]])
    };
    Some(Hit {
        normal: mat_vec(&r, n),
        tangent: mat_vec(&r, tangent),
        uv: [(uv[0] * 0.5 + 0.5).clamp(0.0, 1.0), (uv[1] * 0.5 + 0.5).clamp(0.0, 1.0)],
    })
}

fn light(n: V3, v: V3, l: V3, intensity: f32, albedo: V3, roughness: f32, metallic: f32) -> V3 {
    use std::f32::consts::PI;
    let n_dot_l = dot(n, l);
    if n_dot_l <= 0.0 {
        return [0.0; 3];
    }
    let h = normalize(add(v, l));
    let n_dot_v = dot(n, v).max(1e-4);
    let n_dot_h = dot(n, h).max(0.0);
    let v_dot_h = dot(v, h).max(0.0);
    let alpha = (roughness * roughness).max(1e-3);
    let a2 = alpha * alpha;
    let denom = n_dot_h * n_dot_h * (a2 - 1.0) + 1.0;
    let d = a2 / (PI * denom * denom);
    let k = alpha * 0.5;
    let vis = 1.0 / ((n_dot_l * (1.0 - k) + k) * (n_dot_v * (1.0 - k) + k) * 4.0);
    let mut out = [0.0; 3];
    for c in 0..3 {
        let f0 = 0.04 + (albedo[c] - 0.04) * metallic;
        let fresnel = f0 + (1.0 - f0) * (1.0 - v_dot_h).powf(5.0);
        let specular = d * vis * fresnel;
        let diffuse = (1.0 - fresnel) * (1.0 - metallic) * albedo[c] / PI;
        out[c] = (diffuse + specular) * n_dot_l * intensity;
    }
    out
}

/// A world direction in the environment's frame (`environment_dir` in `preview_shade.wgsl`).
fn environment_dir(lighting: &Lighting, d: V3) -> V3 {
    let (sin, cos) = lighting.rotation_rad.sin_cos();
    [cos * d[0] - sin * d[2], d[1], sin * d[0] + cos * d[2]]
}

fn ray_dir(uniforms: &PreviewUniforms, uv: [f32; 2]) -> V3 {
    uniforms.camera.ray_dir(uv, uniforms.view[1])
}

fn uv_distance(a: [f32; 2], b: [f32; 2]) -> f32 {
    let du = (a[0] - b[0]).abs();
    let (du, dv) = (du.min(1.0 - du), a[1] - b[1]);
    (du * du + dv * dv).sqrt()
}

/// How far in texture space one viewport pixel reaches at viewport point `uv` whose ray hits the
/// shape at `hit_uv` (0 with the LOD filter off): the larger of the texture-space distances to the
/// hits one pixel right and one pixel down (u wraps around the sphere's seam). The WGSL
/// `pixel_footprint` is its twin; analytic rather than `dpdx`/`dpdy` so both compute the same.
#[must_use]
pub fn pixel_footprint(uniforms: &PreviewUniforms, uv: [f32; 2], hit_uv: [f32; 2]) -> f32 {
    if uniforms.lod_filter[1] < 0.5 || uniforms.lod_filter[0] <= 0.0 {
        return 0.0;
    }
    let shape = (uniforms.view[0] + 0.5) as u32;
    let step = 1.0 / uniforms.lod_filter[0];
    let origin = uniforms.camera.eye;
    let hx = intersect(origin, ray_dir(uniforms, [uv[0] + step / uniforms.view[1], uv[1]]), shape);
    let hy = intersect(origin, ray_dir(uniforms, [uv[0], uv[1] + step]), shape);
    let fx = hx.map_or(0.0, |h| uv_distance(hit_uv, h.uv));
    let fy = hy.map_or(0.0, |h| uv_distance(hit_uv, h.uv));
    fx.max(fy)
}

/// The level of detail a pixel of texture-space `footprint` asks of a map: log2 of the texels it
/// spans along the map's larger side (negative: magnified, which decodes level 0).
#[must_use]
pub fn map_lod(footprint: f32, entry: &texset_core::bundle::MapEntry) -> f32 {
    (footprint * entry.info.width.max(entry.info.height) as f32).max(1e-30).log2()
}

/// CPU reference of `shade` in preview.wgsl: the colour of the pixel at `uv` (0..1, y down).
/// `fetch(slot, uv, footprint)` returns the un-mapped value of the map in
/// `PreviewUniforms::maps` slot `slot` (basecolor 0, normal 1, roughness 2, metallic 3, ao 4,
/// orm 5, emissive 6), or `None` when the material has none; `footprint` is
/// [`pixel_footprint`] (0 unless the LOD filter is on), for [`map_lod`].
pub fn shade(uniforms: &PreviewUniforms, uv: [f32; 2], fetch: &dyn Fn(usize, [f32; 2], f32) -> Option<[f32; 4]>) -> [f32; 4] {
    shade_environment(uniforms, None, uv, fetch)
}

/// CPU reference of the shading pass (`fs_shade` in `preview_shade.wgsl`) on a shape: [`shade`]
/// where `environment` is `None` or its [`Lighting`] asks for the point lights alone; else the
/// pixel lit by the prepared environment (split sum, as [`PreparedEnvironment::specular`],
/// [`PreparedEnvironment::irradiance`] and [`PreparedEnvironment::brdf`] look it up), the point
/// lights added when asked, exposed and tone mapped, and the environment or a colour behind.
pub fn shade_environment(
    uniforms: &PreviewUniforms,
    environment: Option<(&Lighting, &PreparedEnvironment)>,
    uv: [f32; 2],
    fetch: &dyn Fn(usize, [f32; 2], f32) -> Option<[f32; 4]>,
) -> [f32; 4] {
    let view = environment.map_or(ViewMode::Lit, |(lighting, _)| lighting.view);
    let environment = environment.filter(|(lighting, _)| lighting.environment);
    // Colours are encoded for a target that is not sRGB; data is shown as stored.
    let shown_colour = |c: V3| {
        let c = c.map(|v| v.clamp(0.0, 1.0));
        if uniforms.view[3] > 0.5 { c.map(linear_to_srgb) } else { c }
    };
    let unlit = |c: V3| [c[0], c[1], c[2], 1.0];
    let encode = |linear: [f32; 3], lighting: &Lighting| {
        let mapped = tonemap(linear, lighting.tone_mapper, lighting.exposure_ev);
        let mut out = [0.0, 0.0, 0.0, 1.0];
        for c in 0..3 {
            out[c] = if uniforms.view[3] > 0.5 { linear_to_srgb(mapped[c]) } else { mapped[c] };
        }
        out
    };
    let dir = ray_dir(uniforms, uv);
    let Some(hit) = intersect(uniforms.camera.eye, dir, (uniforms.view[0] + 0.5) as u32) else {
        if view != ViewMode::Lit {
            return unlit(shown_colour([CHANNEL_BACKGROUND; 3]));
        }
        if let Some((lighting, prepared)) = environment {
            let last = prepared.specular_levels().len().saturating_sub(1) as f32;
            let behind = match lighting.background {
                Background::Solid(c) => c,
                Background::Environment => prepared.specular(environment_dir(lighting, dir), 0.0),
                Background::Blurred => {
                    let roughness = if last > 0.0 { blurred_level(last) / last } else { 0.0 };
                    prepared.specular(environment_dir(lighting, dir), roughness)
                }
            };
            return encode(behind, lighting);
        }
        let g = 0.08 + 0.06 * (1.0 - uv[1]);
        return [g, g, g * 1.1, 1.0];
    };
    let footprint = pixel_footprint(uniforms, uv, hit.uv);
    let get = |slot: usize, fallback: [f32; 4]| {
        if uniforms.maps[slot] == NONE { fallback } else { fetch(slot, hit.uv, footprint).unwrap_or(fallback) }
    };
    let base = get(0, [0.5, 0.5, 0.5, 1.0]);
    let normal_ts = get(1, [0.0, 0.0, 1.0, 0.0]);
    let orm = get(5, [1.0, 0.5, 0.0, 0.0]);
    let roughness = get(2, [orm[1]; 4])[0];
    let metallic = get(3, [orm[2]; 4])[0];
    let ao = get(4, [orm[0]; 4])[0];
    let emissive = get(6, [0.0; 4]);
    let data = |v: f32| unlit([v.clamp(0.0, 1.0); 3]);
    match view {
        ViewMode::Lit => {}
        ViewMode::BaseColor => return unlit(shown_colour([base[0], base[1], base[2]])),
        ViewMode::Normal => return unlit(std::array::from_fn(|c| (normal_ts[c] * 0.5 + 0.5).clamp(0.0, 1.0))),
        ViewMode::Roughness => return data(roughness),
        ViewMode::Metallic => return data(metallic),
        ViewMode::Occlusion => return data(ao),
        ViewMode::Emissive => return unlit(shown_colour([emissive[0], emissive[1], emissive[2]])),
        ViewMode::Uv => return unlit([hit.uv[0].fract(), hit.uv[1].fract(), 0.0]),
        ViewMode::Checker => return unlit(uv_checker(hit.uv)),
        ViewMode::MipLevel => return unlit(mip_colour(uniforms, footprint)),
        // What the material pass probes: `shade_probe`.
        ViewMode::Height | ViewMode::Error => return unlit(no_map(hit.uv)),
    }
    let n_geo = hit.normal;
    let t = normalize(sub(hit.tangent, mul(n_geo, dot(n_geo, hit.tangent))));
    let b = cross(n_geo, t);
    let n = normalize(add(add(mul(t, normal_ts[0]), mul(b, normal_ts[1])), mul(n_geo, normal_ts[2].max(1e-3))));
    let v = mul(dir, -1.0);
    let albedo = [base[0], base[1], base[2]];
    let (roughness, metallic) = (roughness.clamp(0.0, 1.0), metallic.clamp(0.0, 1.0));
    let emissive = [emissive[0], emissive[1], emissive[2]];
    let l0 = [uniforms.light0[0], uniforms.light0[1], uniforms.light0[2]];
    let l1 = [uniforms.light1[0], uniforms.light1[1], uniforms.light1[2]];
    let lights = |color: V3| {
        let color = add(color, light(n, v, l0, uniforms.light0[3], albedo, roughness, metallic));
        add(color, light(n, v, l1, uniforms.light1[3], albedo, roughness, metallic))
    };
    if let Some((lighting, prepared)) = environment {
        let n_dot_v = dot(n, v).clamp(1e-4, 1.0);
        let split = prepared.brdf(n_dot_v, roughness);
        let r = sub(mul(n, 2.0 * dot(n, v)), v);
        let prefiltered = prepared.specular(environment_dir(lighting, r), roughness);
        let irradiance = prepared.irradiance(environment_dir(lighting, n));
        let mut color = [0.0; 3];
        for c in 0..3 {
            let f0 = 0.04 + (albedo[c] - 0.04) * metallic;
            let specular = prefiltered[c] * (f0 * split[0] + split[1]);
            let diffuse = irradiance[c] * albedo[c] * (1.0 - metallic);
            color[c] = (diffuse + specular) * ao + emissive[c];
        }
        if lighting.point_lights {
            color = lights(color);
        }
        return encode(color, lighting);
    }
    let color = lights(add(mul(albedo, 0.03 * ao), emissive));
    let mut out = [0.0, 0.0, 0.0, 1.0];
    for c in 0..3 {
        let mapped = color[c] / (1.0 + color[c]);
        out[c] = if uniforms.view[3] > 0.5 { linear_to_srgb(mapped) } else { mapped };
    }
    out
}

/// CPU reference of the shading pass's probe views ([`ViewMode::Height`], [`ViewMode::Error`]) on
/// a shape: `probe(uv)` is the number the material pass writes for the surface at texture point
/// `uv` (`None` where the material has no map probed).
pub fn shade_probe(uniforms: &PreviewUniforms, lighting: &Lighting, uv: [f32; 2], probe: &dyn Fn([f32; 2]) -> Option<f32>) -> [f32; 4] {
    let dir = ray_dir(uniforms, uv);
    let colour = match intersect(uniforms.camera.eye, dir, (uniforms.view[0] + 0.5) as u32) {
        None => {
            let g = CHANNEL_BACKGROUND.clamp(0.0, 1.0);
            [if uniforms.view[3] > 0.5 { linear_to_srgb(g) } else { g }; 3]
        }
        Some(hit) => match probe(hit.uv) {
            None => no_map(hit.uv),
            Some(v) if lighting.view == ViewMode::Error => heat(v / lighting.error_full_scale.max(1e-6)),
            Some(v) => [v.clamp(0.0, 1.0); 3],
        },
    };
    [colour[0], colour[1], colour[2], 1.0]
}

/// Where a probe found no map: grey stripes in texture space (`no_map` in `preview_shade.wgsl`).
fn no_map(uv: [f32; 2]) -> V3 {
    let t = (uv[0] + uv[1]) * 16.0;
    [if t - t.floor() < 0.5 { 0.3 } else { 0.2 }; 3]
}

/// The UV checker (`uv_checker` in `preview_shade.wgsl`).
fn uv_checker(uv: [f32; 2]) -> V3 {
    let cell = uv.map(|t| ((t - t.floor()) * 8.0).floor());
    let hue = [0.25 + 0.6 * cell[0] / 7.0, 0.25 + 0.6 * cell[1] / 7.0, 0.85 - 0.6 * cell[0] / 7.0];
    let even = (cell[0] as u32 + cell[1] as u32).is_multiple_of(2);
    hue.map(|h| h * if even { 1.0 } else { 0.55 })
}

/// The mip view's colour (`mip_colour` in `preview_shade.wgsl`).
fn mip_colour(uniforms: &PreviewUniforms, footprint: f32) -> V3 {
    let lod = (footprint * uniforms.lod_filter[2]).max(1e-30).log2();
    heat((lod + 1.0) / 5.0)
}

/// One map as stored values in `[0, 1]`: width, height, channels, `[y][x][c]` values.
pub type StoredMap<'a> = (u32, u32, u32, &'a [f32]);

/// The preview's picture of material `material` computed on the CPU by [`shade`] from stored maps
/// given in manifest order (nearest texel, un-mapped for shading as `decode_texel_linear` does):
/// `shape` lit from orbit `angle`, `width` x `height` sRGB-encoded RGBA rows. `texset eval`
/// renders the original maps and the decoded ones this way and compares the pictures (the
/// rendered error).
#[must_use]
pub fn render_cpu(manifest: &Manifest, material: usize, maps: &[StoredMap], shape: Shape, angle: f32, width: u32, height: u32) -> Vec<f32> {
    let uniforms = PreviewUniforms::new(manifest, material, angle, 3.0, shape, width as f32 / height as f32).with_srgb_encoding(true);
    let entries = manifest.materials.get(material).map_or(&[][..], |m| m.maps.as_slice());
    let fetch = |slot: usize, uv: [f32; 2], _footprint: f32| -> Option<[f32; 4]> {
        let layer = *uniforms.layers.get(slot)? as usize;
        let (&(w, h, channels, values), entry) = (maps.get(layer)?, entries.get(layer)?);
        let x = ((uv[0].max(0.0) * w as f32) as u32).min(w.saturating_sub(1));
        let y = ((uv[1].max(0.0) * h as f32) as u32).min(h.saturating_sub(1));
        let base = (y as usize * w as usize + x as usize) * channels as usize;
        let mut t = [0.0; 4];
        for (c, v) in t.iter_mut().enumerate().take(channels as usize) {
            *v = values.get(base + c).copied().unwrap_or(0.0);
        }
        Some(unmap(entry, t))
    };
    let mut out = Vec::with_capacity(width as usize * height as usize * 4);
    for y in 0..height {
        for x in 0..width {
            let uv = [(x as f32 + 0.5) / width as f32, (y as f32 + 0.5) / height as f32];
            out.extend_from_slice(&shade(&uniforms, uv, &fetch));
        }
    }
    out
}
