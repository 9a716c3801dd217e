//! The material sets: bricks, wood, metal plates and a twill fabric in two colourways.

use super::field::{
    Field, Rgb, UniformRange, ambient_occlusion, clamp01, fade, fbm, feature_rng, hash2, lerp, mix, normal_map, rand2, rgb8, scale,
    smoothstep, unit, value_noise, wrap_delta,
};
use texset_core::rng::splitmix64;

// ---------------------------------------------------------------------------------------------
// Material sets.
// ---------------------------------------------------------------------------------------------

/// The maps of one generated material before encoding.
pub(super) struct MaterialSet {
    /// The height field in `[0, 1]`.
    pub(super) height: Field,
    /// The 8-bit RGB normal map.
    pub(super) normal: Vec<u8>,
    /// The ambient occlusion in `[0, 1]`.
    pub(super) ao: Field,
    /// The roughness in `[0, 1]`.
    pub(super) roughness: Field,
    /// The metallic map in `[0, 1]`, if meaningful for the material.
    pub(super) metallic: Option<Field>,
    /// The sRGB-encoded base colour, one colour per pixel.
    pub(super) basecolor: Vec<Rgb>,
}

/// Builds the height-derived maps shared by every material.
pub(super) fn derived(height: &Field, relief_depth_tile_frac: f32, ao_strength: f32) -> (Vec<u8>, Field) {
    let normal = normal_map(height, relief_depth_tile_frac);
    let ao = ambient_occlusion(height, &[1.5 / 256.0, 4.0 / 256.0, 10.0 / 256.0], ao_strength);
    (normal, ao)
}

/// Running-bond bricks with mortar joints, per-brick colour variation and surface noise.
pub(super) fn bricks(size_px: usize, seed: u64) -> MaterialSet {
    const COURSES: u32 = 8;
    const BRICKS_PER_COURSE: u32 = 4;
    const MORTAR_HALF_TILE_FRAC: f32 = 0.0055;
    const BEVEL_TILE_FRAC: f32 = 0.007;
    let brick_w = 1.0 / BRICKS_PER_COURSE as f32;
    let brick_h = 1.0 / COURSES as f32;
    let s_edge = splitmix64(seed ^ 0x11);
    let s_surface = splitmix64(seed ^ 0x12);
    let s_pits = splitmix64(seed ^ 0x13);
    let s_mortar = splitmix64(seed ^ 0x14);
    let s_brick = splitmix64(seed ^ 0x15);
    let s_mottle = splitmix64(seed ^ 0x16);

    let n = size_px * size_px;
    let mut brick_mask = Vec::with_capacity(n);
    let mut brick_ids = Vec::with_capacity(n);
    let mut surfaces = Vec::with_capacity(n);
    let height = Field::from_fn(size_px, |u, v| {
        let row_f = v * COURSES as f32;
        let row = row_f.floor();
        let fv = row_f - row;
        let row_i = (row as i64).rem_euclid(i64::from(COURSES));
        let shift = if row_i % 2 == 1 { 0.5 } else { 0.0 };
        let col_f = u * BRICKS_PER_COURSE as f32 + shift;
        let col = col_f.floor();
        let fu = col_f - col;
        let col_i = (col as i64).rem_euclid(i64::from(BRICKS_PER_COURSE));
        let id = hash2(s_brick, row_i, col_i);

        // Distance to the nearest brick edge, roughened so the edges look chipped.
        let dx = fu.min(1.0 - fu) * brick_w;
        let dy = fv.min(1.0 - fv) * brick_h;
        let roughen = (fbm(s_edge, u, v, 24, 24, 3, 0.5) - 0.5) * 0.008;
        let d = dx.min(dy) + roughen;
        let profile = smoothstep(MORTAR_HALF_TILE_FRAC, MORTAR_HALF_TILE_FRAC + BEVEL_TILE_FRAC, d);

        let surface = fbm(s_surface ^ id, u, v, 16, 16, 5, 0.55);
        let pits = value_noise(s_pits, u, v, 128, 128);
        let pit_depth = smoothstep(0.72, 0.95, pits) * 0.08;
        let brick_top = 0.72 + (unit(id >> 3) - 0.5) * 0.06 + (surface - 0.5) * 0.14 - pit_depth;
        let mortar = 0.2 + (fbm(s_mortar, u, v, 64, 64, 3, 0.6) - 0.5) * 0.1;

        brick_mask.push(profile);
        brick_ids.push(id);
        surfaces.push(surface);
        lerp(mortar, brick_top, profile)
    });
    let (normal, ao) = derived(&height, 0.02, 3.0);

    let reds = [rgb8(150, 62, 44), rgb8(122, 48, 38), rgb8(170, 92, 60), rgb8(138, 74, 56)];
    let mortar_colour = rgb8(168, 162, 150);
    let mut basecolor = Vec::with_capacity(n);
    let mut roughness = Vec::with_capacity(n);
    let inv = 1.0 / size_px as f32;
    for i in 0..n {
        let (x, y) = (i % size_px, i / size_px);
        let (u, v) = ((x as f32 + 0.5) * inv, (y as f32 + 0.5) * inv);
        let id = brick_ids[i];
        let pick = (id % reds.len() as u64) as usize;
        let base = mix(reds[pick], reds[(pick + 1) % reds.len()], unit(id >> 7));
        let mottle = fbm(s_mottle, u, v, 32, 32, 3, 0.5);
        let brick = scale(base, 0.78 + 0.3 * surfaces[i] + 0.14 * (mottle - 0.5));
        let mortar = scale(mortar_colour, 0.88 + 0.2 * mottle);
        let t = brick_mask[i];
        // A little grime settles in cavities.
        let cavity = 0.8 + 0.2 * ao.data[i];
        basecolor.push(scale(mix(mortar, brick, t), cavity));
        roughness.push(clamp01(lerp(0.94, 0.8 + 0.1 * surfaces[i], t) + 0.04 * (mottle - 0.5)));
    }
    MaterialSet { height, normal, ao, roughness: Field { size_px, data: roughness }, metallic: None, basecolor }
}

/// One knot in a wood board.
pub(super) struct Knot {
    /// The plank row the knot belongs to.
    pub(super) row: usize,
    /// Horizontal position in tile coordinates.
    pub(super) u: f32,
    /// Vertical position in tile coordinates.
    pub(super) v: f32,
    /// Radius of the dark core in tile coordinates.
    pub(super) radius: f32,
}

/// Horizontal wood planks with growth rings, fibre noise, knots and butt joints.
pub(super) fn wood(size_px: usize, seed: u64) -> MaterialSet {
    const PLANK_ROWS: u32 = 5;
    const GAP_HALF_TILE_FRAC: f32 = 0.0025;
    const GAP_BEVEL_TILE_FRAC: f32 = 0.004;
    let plank_h = 1.0 / PLANK_ROWS as f32;
    let s_layout = splitmix64(seed ^ 0x21);
    let s_warp = splitmix64(seed ^ 0x22);
    let s_fibre = splitmix64(seed ^ 0x23);
    let s_fine = splitmix64(seed ^ 0x24);

    // Two boards per row: butt joints at a random offset and roughly half a tile further.
    let mut rng = feature_rng(s_layout);
    let joints: Vec<[f32; 2]> = (0..PLANK_ROWS)
        .map(|_| {
            let a = rng.next_f32();
            let b = (a + rng.range(0.4, 0.6)).fract();
            [a, b]
        })
        .collect();
    let mut knots = Vec::new();
    for row in 0..PLANK_ROWS {
        let count = (rng.next_f32() * 2.6) as u32;
        for _ in 0..count {
            knots.push(Knot {
                row: row as usize,
                u: rng.next_f32(),
                v: (row as f32 + rng.range(0.25, 0.75)) * plank_h,
                radius: rng.range(0.008, 0.018),
            });
        }
    }

    let n = size_px * size_px;
    let mut gap_mask = Vec::with_capacity(n);
    let mut board_ids = Vec::with_capacity(n);
    let mut latewood = Vec::with_capacity(n);
    let mut knot_mask = Vec::with_capacity(n);
    let mut fibres = Vec::with_capacity(n);
    let height = Field::from_fn(size_px, |u, v| {
        let row_f = v * PLANK_ROWS as f32;
        let row = row_f.floor();
        let fv = row_f - row;
        let row_i = (row as usize).min(PLANK_ROWS as usize - 1);
        let [a, b] = joints[row_i];
        let (lo, hi) = if a < b { (a, b) } else { (b, a) };
        let segment = i64::from(u >= lo && u < hi);
        let board = hash2(s_layout, row_i as i64, segment);
        let du = wrap_delta(u, a).abs().min(wrap_delta(u, b).abs());
        let dv = fv.min(1.0 - fv) * plank_h;
        let gap = smoothstep(GAP_HALF_TILE_FRAC, GAP_HALF_TILE_FRAC + GAP_BEVEL_TILE_FRAC, du.min(dv));

        // Growth rings: stripes along the plank, bent by low-frequency noise, with each board
        // cut at a different distance from the heart of its log.
        let rings_per_plank = 7.0 + 6.0 * unit(board >> 5);
        let warp = fbm(s_warp ^ board, u, v, 3, 6, 4, 0.5) - 0.5;
        let mut ring_coord = (fv + warp * 0.6) * rings_per_plank + 13.0 * unit(board >> 11);
        let mut knot = 0.0_f32;
        for k in knots.iter().filter(|k| k.row == row_i) {
            let ku = wrap_delta(u, k.u);
            let kv = v - k.v;
            let d2 = ku * ku + kv * kv;
            let r2 = k.radius * k.radius;
            // The grain swirls around the knot: rings become concentric near its centre.
            ring_coord += 2.5 * r2 * 4.0 / (d2 + r2 * 4.0);
            knot = knot.max(1.0 - smoothstep(0.55, 1.0, d2.sqrt() / k.radius));
        }
        let ring = ring_coord - ring_coord.floor();
        // Earlywood darkens gradually into latewood, which ends abruptly at the next ring.
        let late_ramp = smoothstep(0.35, 0.92, ring);
        let late = late_ramp * late_ramp * (1.0 - smoothstep(0.94, 1.0, ring));
        let fibre = value_noise(s_fibre, u, v + warp * 0.05, 6, 160);
        let fine = value_noise(s_fine, u, v, 64, 256);

        let board_top = 0.7 + (unit(board >> 17) - 0.5) * 0.05;
        let top = board_top + 0.035 * late + 0.03 * (fibre - 0.5) + 0.01 * (fine - 0.5) - 0.025 * knot;
        gap_mask.push(gap);
        board_ids.push(board);
        latewood.push(late);
        knot_mask.push(knot);
        fibres.push(fibre);
        lerp(0.12, top, gap)
    });
    let (normal, ao) = derived(&height, 0.012, 3.0);

    let light = rgb8(184, 130, 82);
    let dark = rgb8(150, 98, 58);
    let late_colour = rgb8(104, 62, 34);
    let knot_colour = rgb8(72, 42, 24);
    let gap_colour = rgb8(52, 36, 24);
    let mut basecolor = Vec::with_capacity(n);
    let mut roughness = Vec::with_capacity(n);
    for i in 0..n {
        let board = board_ids[i];
        let early = scale(mix(light, dark, unit(board >> 23)), 0.92 + 0.16 * fibres[i]);
        let mut c = mix(early, late_colour, 0.5 * latewood[i]);
        c = mix(c, knot_colour, 0.85 * knot_mask[i]);
        c = mix(gap_colour, c, gap_mask[i]);
        basecolor.push(c);
        let r = 0.62 - 0.08 * latewood[i] + 0.08 * (fibres[i] - 0.5) - 0.06 * knot_mask[i];
        roughness.push(clamp01(lerp(0.9, r, gap_mask[i])));
    }
    MaterialSet { height, normal, ao, roughness: Field { size_px, data: roughness }, metallic: None, basecolor }
}

/// Riveted steel plates with seams, dents, scratches and grime.
pub(super) fn metal_plates(size_px: usize, seed: u64) -> MaterialSet {
    const PLATES_PER_SIDE: u32 = 2;
    const SEAM_HALF_TILE_FRAC: f32 = 0.003;
    const BEVEL_TILE_FRAC: f32 = 0.005;
    const RIVET_INSET_TILE_FRAC: f32 = 0.022;
    const RIVET_RADIUS_TILE_FRAC: f32 = 0.0085;
    const RIVET_GAPS_PER_EDGE: u32 = 7;
    const SCRATCHES: u32 = 70;
    let plate = 1.0 / PLATES_PER_SIDE as f32;
    let s_plate = splitmix64(seed ^ 0x31);
    let s_dent = splitmix64(seed ^ 0x32);
    let s_brush = splitmix64(seed ^ 0x33);
    let s_scratch = splitmix64(seed ^ 0x34);
    let s_grime = splitmix64(seed ^ 0x35);

    let scratch = scratch_mask(size_px, s_scratch, SCRATCHES);
    let n = size_px * size_px;
    let mut plate_mask = Vec::with_capacity(n);
    let mut plate_ids = Vec::with_capacity(n);
    let mut brushes = Vec::with_capacity(n);
    let mut rivet_mask = Vec::with_capacity(n);
    let rivet_step = (plate - 2.0 * RIVET_INSET_TILE_FRAC) / RIVET_GAPS_PER_EDGE as f32;
    let mut index = 0;
    let height = Field::from_fn(size_px, |u, v| {
        let pu_f = u * PLATES_PER_SIDE as f32;
        let pv_f = v * PLATES_PER_SIDE as f32;
        let (pu_i, pv_i) = (pu_f.floor(), pv_f.floor());
        let id = hash2(s_plate, pu_i as i64, pv_i as i64);
        // Position inside the plate, in tile units.
        let lu = (pu_f - pu_i) * plate;
        let lv = (pv_f - pv_i) * plate;
        let d = lu.min(plate - lu).min(lv.min(plate - lv));
        let profile = smoothstep(SEAM_HALF_TILE_FRAC, SEAM_HALF_TILE_FRAC + BEVEL_TILE_FRAC, d);

        // Rivets sit on a ring inset from the plate edges; find the nearest one.
        let snap = |t: f32| {
            let k = ((t - RIVET_INSET_TILE_FRAC) / rivet_step + 0.5).floor();
            RIVET_INSET_TILE_FRAC + k.clamp(0.0, RIVET_GAPS_PER_EDGE as f32) * rivet_step
        };
        let (su, sv) = (snap(lu), snap(lv));
        let mut rivet_d2 = f32::MAX;
        for (ru, rv) in [
            (su, RIVET_INSET_TILE_FRAC),
            (su, plate - RIVET_INSET_TILE_FRAC),
            (RIVET_INSET_TILE_FRAC, sv),
            (plate - RIVET_INSET_TILE_FRAC, sv),
        ] {
            let (du, dv) = (lu - ru, lv - rv);
            rivet_d2 = rivet_d2.min(du * du + dv * dv);
        }
        let r2 = RIVET_RADIUS_TILE_FRAC * RIVET_RADIUS_TILE_FRAC;
        let dome = (r2 - rivet_d2).max(0.0).sqrt() / RIVET_RADIUS_TILE_FRAC;
        let rivet = smoothstep(0.0, 0.25, dome);

        let dent = fbm(s_dent ^ id, u, v, 4, 4, 4, 0.5) - 0.5;
        let brush = fbm(s_brush ^ id, u, v, 2, 96, 3, 0.6);
        let top = 0.62 + (unit(id >> 9) - 0.5) * 0.04 + dent * 0.08 + (brush - 0.5) * 0.012 - 0.05 * scratch.data[index] + 0.22 * dome;
        index += 1;
        plate_mask.push(profile);
        plate_ids.push(id);
        brushes.push(brush);
        rivet_mask.push(rivet);
        lerp(0.15, top, profile)
    });
    let (normal, ao) = derived(&height, 0.015, 4.0);

    let steel = rgb8(158, 160, 164);
    let bright = rgb8(206, 208, 212);
    let grime_colour = rgb8(66, 58, 48);
    let inv = 1.0 / size_px as f32;
    let mut basecolor = Vec::with_capacity(n);
    let mut roughness = Vec::with_capacity(n);
    let mut metallic = Vec::with_capacity(n);
    for i in 0..n {
        let (x, y) = (i % size_px, i / size_px);
        let (u, v) = ((x as f32 + 0.5) * inv, (y as f32 + 0.5) * inv);
        let id = plate_ids[i];
        let scratched = scratch.data[i];
        // Grime gathers in cavities and in blotches driven by noise.
        let blotch = fbm(s_grime, u, v, 8, 8, 4, 0.55);
        let grime = clamp01(smoothstep(0.6, 0.8, blotch) * 0.6 + (1.0 - ao.data[i]) * 1.6) * (1.0 - scratched);
        let plate_tint = 0.9 + 0.14 * unit(id >> 13);
        let mut c = scale(steel, plate_tint * (0.96 + 0.08 * brushes[i]));
        c = mix(c, bright, 0.6 * scratched);
        c = mix(c, grime_colour, 0.85 * grime);
        c = mix(scale(grime_colour, 0.7), c, plate_mask[i]);
        basecolor.push(c);
        let plate_rough = 0.32 + 0.1 * unit(id >> 19) + 0.12 * (brushes[i] - 0.5) - 0.08 * rivet_mask[i];
        let r = lerp(lerp(plate_rough, 0.2, scratched), 0.85, grime);
        roughness.push(clamp01(lerp(0.9, r, plate_mask[i])));
        metallic.push(clamp01(lerp(0.3, 1.0 - 0.75 * grime, plate_mask[i])));
    }
    MaterialSet {
        height,
        normal,
        ao,
        roughness: Field { size_px, data: roughness },
        metallic: Some(Field { size_px, data: metallic }),
        basecolor,
    }
}

/// Rasterises `count` random thin scratches into a wrap-around mask in `[0, 1]`.
pub(super) fn scratch_mask(size_px: usize, seed: u64, count: u32) -> Field {
    let n = size_px as f32;
    let mut mask = Field { size_px, data: vec![0.0; size_px * size_px] };
    let mut rng = feature_rng(seed);
    for _ in 0..count {
        // Work in pixel units; the segment may extend past the edges and wraps around.
        let (x0, y0) = (rng.next_f32() * n, rng.next_f32() * n);
        // A random direction without trigonometry: normalise a random vector from a disc.
        let (mut dx, mut dy) = (rng.range(-1.0, 1.0), rng.range(-1.0, 1.0));
        let len = (dx * dx + dy * dy).sqrt().max(1e-3);
        dx /= len;
        dy /= len;
        let length_px = rng.range(0.03, 0.16) * n;
        let half_width_px = rng.range(0.35, 0.8) * (n / 256.0).max(0.5);
        let strength = rng.range(0.3, 0.9);
        let (x1, y1) = (x0 + dx * length_px, y0 + dy * length_px);
        let pad = half_width_px + 1.0;
        let (bx0, bx1) = ((x0.min(x1) - pad).floor() as isize, (x0.max(x1) + pad).ceil() as isize);
        let (by0, by1) = ((y0.min(y1) - pad).floor() as isize, (y0.max(y1) + pad).ceil() as isize);
        for py in by0..=by1 {
            for px in bx0..=bx1 {
                // Distance from the pixel centre to the segment.
                let (cx, cy) = (px as f32 + 0.5 - x0, py as f32 + 0.5 - y0);
                let t = (cx * dx + cy * dy).clamp(0.0, length_px);
                let (ex, ey) = (cx - dx * t, cy - dy * t);
                let dist = (ex * ex + ey * ey).sqrt();
                // Scratches fade out towards both ends.
                let along = t / length_px;
                let taper = smoothstep(0.0, 0.2, along) * smoothstep(0.0, 0.2, 1.0 - along);
                let value = (1.0 - smoothstep(half_width_px * 0.3, half_width_px + 0.5, dist)) * taper * strength;
                if value > 0.0 {
                    let xi = px.rem_euclid(size_px as isize) as usize;
                    let yi = py.rem_euclid(size_px as isize) as usize;
                    let cell = &mut mask.data[yi * size_px + xi];
                    *cell = cell.max(value);
                }
            }
        }
    }
    mask
}

/// A fabric colourway: the base colour is `mix(dark, light, luminance)`.
pub(super) struct Colourway {
    /// The colour of the darkest parts of the weave (sRGB).
    pub(super) dark: [u8; 3],
    /// The colour of the brightest parts of the weave (sRGB).
    pub(super) light: [u8; 3],
}

/// An indigo, denim-like colourway.
pub(super) const INDIGO: Colourway = Colourway { dark: [14, 22, 52], light: [112, 134, 184] };

/// An ochre colourway.
pub(super) const OCHRE: Colourway = Colourway { dark: [78, 46, 8], light: [232, 184, 92] };

/// A woven fabric before it is given a colourway.
pub(super) struct Fabric {
    /// The height field in `[0, 1]`.
    pub(super) height: Field,
    /// The 8-bit RGB normal map.
    pub(super) normal: Vec<u8>,
    /// The ambient occlusion in `[0, 1]`.
    pub(super) ao: Field,
    /// The roughness in `[0, 1]`.
    pub(super) roughness: Field,
    /// The colour-independent luminance pattern in `[0, 1]`.
    pub(super) luminance: Field,
}

impl Fabric {
    /// Builds the material set for one colourway; only the base colour depends on it.
    pub(super) fn with_colourway(&self, colourway: &Colourway) -> MaterialSet {
        let dark = rgb8(colourway.dark[0], colourway.dark[1], colourway.dark[2]);
        let light = rgb8(colourway.light[0], colourway.light[1], colourway.light[2]);
        MaterialSet {
            height: self.height.clone(),
            normal: self.normal.clone(),
            ao: self.ao.clone(),
            roughness: self.roughness.clone(),
            metallic: None,
            basecolor: self.luminance.data.iter().map(|&l| mix(dark, light, l)).collect(),
        }
    }
}

/// A 2/2 twill weave with warp threads running vertically and weft threads horizontally,
/// with fibre noise and per-thread thickness and shade variation.
pub(super) fn fabric(size_px: usize, seed: u64) -> Fabric {
    const THREAD_WIDTH_CELL_FRAC: f32 = 0.86;
    // Threads per tile: 32 from 256 px up; smaller textures get fewer, coarser threads so
    // each one keeps at least 8 px and the weave stays resolvable (a multiple of 4 keeps the
    // twill tileable).
    let thread_count = ((size_px / 8) as u32 / 4 * 4).clamp(4, 32);
    let s_thread = splitmix64(seed ^ 0x41);
    let s_fibre_warp = splitmix64(seed ^ 0x42);
    let s_fibre_weft = splitmix64(seed ^ 0x43);
    let s_fuzz = splitmix64(seed ^ 0x44);
    let threads = thread_count as f32;
    let count = i64::from(thread_count);
    // The warp thread `i` lies on top of the weft thread `j` in a diagonal 2/2 twill.
    let warp_over = |i: i64, j: i64| {
        if (i + j).rem_euclid(4) < 2 { 1.0_f32 } else { -1.0 }
    };

    // The height of one thread surface: its centre line undulates over and under the
    // crossing threads and its cross-section is round.
    let thread = |across: f32, along: f32, index: i64, over: &dyn Fn(i64) -> f32| -> Option<(f32, f32)> {
        let thickness = THREAD_WIDTH_CELL_FRAC * (0.9 + 0.2 * rand2(s_thread, index, 0));
        let a = (across - 0.5) * 2.0 / thickness;
        if a.abs() >= 1.0 {
            return None;
        }
        let cross = (1.0 - a * a).sqrt();
        let y = along - 0.5;
        let j0 = y.floor();
        let t = fade(y - j0);
        let centre = lerp(over(j0 as i64), over(j0 as i64 + 1), t);
        Some((0.5 + 0.22 * centre + 0.26 * cross, cross))
    };

    let n = size_px * size_px;
    let mut luminance = Vec::with_capacity(n);
    let mut roughness = Vec::with_capacity(n);
    let height = Field::from_fn(size_px, |u, v| {
        let (x, y) = (u * threads, v * threads);
        let (i, j) = (x.floor() as i64, y.floor() as i64);
        let warp = thread(x - x.floor(), y, i.rem_euclid(count), &|jj| warp_over(i, jj));
        let weft = thread(y - y.floor(), x, j.rem_euclid(count) + count, &|ii| -warp_over(ii, j));
        let fuzz = fbm(s_fuzz, u, v, 64, 64, 2, 0.5);
        let (h, shade, rough) = match (warp, weft) {
            (Some((hw, cw)), weft) if weft.is_none_or(|(hf, _)| hw >= hf) => {
                // Warp fibres run along v: stretched noise with few cells along the thread.
                let fibre = value_noise(s_fibre_warp, u, v, thread_count * 8, thread_count / 2);
                let tone = 0.2 * rand2(s_thread, i.rem_euclid(count), 1);
                let shade = 0.3 + 0.35 * cw + 0.25 * fibre - tone;
                (hw + 0.04 * (fibre - 0.5), shade, 0.84 + 0.06 * fibre)
            }
            (_, Some((hf, cf))) => {
                let fibre = value_noise(s_fibre_weft, u, v, thread_count / 2, thread_count * 8);
                let tone = 0.15 * rand2(s_thread, j.rem_euclid(count) + count, 1);
                // The weft is a lighter yarn, as in denim.
                let shade = 0.45 + 0.35 * cf + 0.2 * fibre - tone;
                (hf + 0.04 * (fibre - 0.5), shade, 0.86 + 0.06 * fibre)
            }
            // The gaps between threads show the threads underneath, deep in shadow.
            _ => (0.08 + 0.04 * fuzz, 0.05, 0.95),
        };
        luminance.push(clamp01(shade + 0.06 * (fuzz - 0.5)));
        roughness.push(clamp01(rough));
        h
    });
    let (normal, ao) = derived(&height, 0.012, 3.0);
    Fabric { height, normal, ao, roughness: Field { size_px, data: roughness }, luminance: Field { size_px, data: luminance } }
}
