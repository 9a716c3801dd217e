//! Deterministic procedural generator of small PBR material texture sets.
//!
//! Each material is built the way a texture artist's procedural tool would build it: one
//! tileable height field is authored first (bricks and mortar, planks and grain, riveted
//! plates, a twill weave), and every other map is derived from that height field plus the
//! masks used to build it. Normals come from central differences of the height, ambient
//! occlusion from a multi-scale "how far below the local average" cavity measure, and the
//! base colour, roughness and metallic maps from the same masks and noise.
//!
//! Determinism: all randomness comes from a splitmix64 hash of integer lattice coordinates,
//! noise is hashed value noise with a quintic fade, and the arithmetic only uses `+ - * /`,
//! `sqrt`, `floor` and comparisons, which IEEE 754 rounds identically on every platform
//! (no `sin`, `cos`, `exp` or `powf`). The same seed and size therefore give byte-identical
//! PNG files on every machine. Every map wraps around at the edges, so the textures tile.
//!
//! Colours are authored directly in sRGB-encoded 8-bit space, which is what the base colour
//! files store; the normal maps use the OpenGL (+Y up) tangent-space convention.

use std::fs;

use std::path::{Path, PathBuf};
use texset_core::rng::{Rng, splitmix64};

use image::codecs::png::{CompressionType, FilterType, PngEncoder};
use image::{ExtendedColorType, ImageEncoder};

/// Errors writing generated textures.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SynthError {
    /// The requested texture size is outside `MIN_SIZE_PX..=MAX_SIZE_PX`.
    #[error("texture size {size} px is outside the supported range {MIN_SIZE_PX}..={MAX_SIZE_PX}")]
    InvalidSize {
        /// The rejected size in pixels.
        size: u32,
    },
    /// Creating a folder or writing, syncing or renaming a file failed.
    #[error("I/O error at {}: {source}", path.display())]
    Io {
        /// The path being created or written.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The PNG encoder failed.
    #[error("PNG encoding failed for {}: {source}", path.display())]
    Encode {
        /// The file being encoded.
        path: PathBuf,
        /// The underlying encoder error.
        #[source]
        source: image::ImageError,
    },
}

/// The names of the generated materials, in order.
pub const MATERIALS: &[&str] = &["bricks", "wood", "metal_plates", "fabric_indigo", "fabric_ochre"];

/// The smallest supported texture size in pixels.
pub const MIN_SIZE_PX: u32 = 16;

/// The largest supported texture size in pixels.
pub const MAX_SIZE_PX: u32 = 2048;

/// Writes every material under `out_dir/<material>/`, creating folders; returns the written file paths sorted.
///
/// The textures are square, `size` × `size` pixels, with `size` in
/// `MIN_SIZE_PX..=MAX_SIZE_PX`. The same `seed` and `size` always give byte-identical files.
/// Each file is written to a temporary file in its folder and then renamed into place.
pub fn write_sample_textures(out_dir: &Path, size: u32, seed: u64) -> Result<Vec<PathBuf>, SynthError> {
    if !(MIN_SIZE_PX..=MAX_SIZE_PX).contains(&size) {
        return Err(SynthError::InvalidSize { size });
    }
    let size_px = size as usize;
    let mut written = Vec::new();

    let bricks = bricks(size_px, material_seed(seed, 1));
    write_standard_set(out_dir, "bricks", &bricks, &mut written)?;
    drop(bricks);

    let wood = wood(size_px, material_seed(seed, 2));
    write_standard_set(out_dir, "wood", &wood, &mut written)?;
    drop(wood);

    let metal = metal_plates(size_px, material_seed(seed, 3));
    write_orm_set(out_dir, "metal_plates", &metal, &mut written)?;
    drop(metal);

    // Both colourways share one weave; only the base colour is recoloured, so every other
    // file is byte-identical between the two.
    let fabric = fabric(size_px, material_seed(seed, 4));
    for (name, colourway) in [("fabric_indigo", &INDIGO), ("fabric_ochre", &OCHRE)] {
        let set = fabric.with_colourway(colourway);
        write_standard_set(out_dir, name, &set, &mut written)?;
    }

    written.sort();
    Ok(written)
}

// ---------------------------------------------------------------------------------------------
// Randomness and noise.
// ---------------------------------------------------------------------------------------------

/// Derives the seed of one material from the caller's seed and a material number.
fn material_seed(seed: u64, material: u64) -> u64 {
    splitmix64(seed ^ splitmix64(material.wrapping_mul(0xA076_1D64_78BD_642F)))
}

/// Hashes a seed and two integer coordinates.
fn hash2(seed: u64, a: i64, b: i64) -> u64 {
    splitmix64(seed ^ splitmix64((a as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ splitmix64(b as u64)))
}

/// Converts a hash to a float uniformly distributed in `[0, 1)`.
fn unit(h: u64) -> f32 {
    (h >> 40) as f32 * (1.0 / 16_777_216.0)
}

/// A uniform float in `[0, 1)` for a seed and two integer coordinates.
fn rand2(seed: u64, a: i64, b: i64) -> f32 {
    unit(hash2(seed, a, b))
}

/// The stream for placing features from `seed` (the one [`Rng`], one state step ahead).
fn feature_rng(seed: u64) -> Rng {
    Rng::from_state(seed.wrapping_add(0x9E37_79B9_7F4A_7C15))
}

/// Uniform floats in a range from the feature stream.
trait UniformRange {
    /// A uniform float in `[lo, hi)`.
    fn range(&mut self, lo: f32, hi: f32) -> f32;
}

impl UniformRange for Rng {
    fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.next_f32()
    }
}

/// Quintic fade curve used by the value noise, with zero first and second derivatives at 0 and 1.
fn fade(t: f32) -> f32 {
    t * t * t * (t * (t * 6.0 - 15.0) + 10.0)
}

/// Tileable value noise in `[0, 1)` at texture coordinates `(u, v)` in `[0, 1)`.
///
/// The lattice has `cells_u` × `cells_v` cells across the tile and wraps around, so the
/// noise tiles seamlessly.
fn value_noise(seed: u64, u: f32, v: f32, cells_u: u32, cells_v: u32) -> f32 {
    let x = u * cells_u as f32;
    let y = v * cells_v as f32;
    let x0 = x.floor();
    let y0 = y.floor();
    let tx = fade(x - x0);
    let ty = fade(y - y0);
    let cu = i64::from(cells_u);
    let cv = i64::from(cells_v);
    let ix0 = (x0 as i64).rem_euclid(cu);
    let iy0 = (y0 as i64).rem_euclid(cv);
    let ix1 = (ix0 + 1) % cu;
    let iy1 = (iy0 + 1) % cv;
    let a = rand2(seed, ix0, iy0);
    let b = rand2(seed, ix1, iy0);
    let c = rand2(seed, ix0, iy1);
    let d = rand2(seed, ix1, iy1);
    lerp(lerp(a, b, tx), lerp(c, d, tx), ty)
}

/// Tileable fractal (fBm) value noise in `[0, 1)`: `octaves` layers, each with twice the
/// lattice cells of the previous one and `gain` times its amplitude.
fn fbm(seed: u64, u: f32, v: f32, cells_u: u32, cells_v: u32, octaves: u32, gain: f32) -> f32 {
    let mut sum = 0.0;
    let mut amplitude = 1.0;
    let mut total = 0.0;
    for octave in 0..octaves {
        let scale = 1_u32 << octave;
        let octave_seed = splitmix64(seed.wrapping_add(u64::from(octave)));
        sum += amplitude * value_noise(octave_seed, u, v, cells_u * scale, cells_v * scale);
        total += amplitude;
        amplitude *= gain;
    }
    sum / total
}

// ---------------------------------------------------------------------------------------------
// Small math helpers.
// ---------------------------------------------------------------------------------------------

/// Linear interpolation from `a` (at `t = 0`) to `b` (at `t = 1`).
fn lerp(a: f32, b: f32, t: f32) -> f32 {
    a + (b - a) * t
}

/// Clamps to `[0, 1]`.
fn clamp01(x: f32) -> f32 {
    x.clamp(0.0, 1.0)
}

/// Hermite smoothstep between `edge0` and `edge1`.
fn smoothstep(edge0: f32, edge1: f32, x: f32) -> f32 {
    let t = clamp01((x - edge0) / (edge1 - edge0));
    t * t * (3.0 - 2.0 * t)
}

/// Distance between two tile coordinates in `[0, 1)` along one wrapping axis.
fn wrap_delta(a: f32, b: f32) -> f32 {
    let d = a - b;
    d - (d + 0.5).floor()
}

/// An sRGB-encoded colour with components in `[0, 1]`.
type Rgb = [f32; 3];

/// Builds a colour from 8-bit sRGB components.
fn rgb8(r: u8, g: u8, b: u8) -> Rgb {
    [f32::from(r) / 255.0, f32::from(g) / 255.0, f32::from(b) / 255.0]
}

/// Component-wise colour interpolation.
fn mix(a: Rgb, b: Rgb, t: f32) -> Rgb {
    [lerp(a[0], b[0], t), lerp(a[1], b[1], t), lerp(a[2], b[2], t)]
}

/// Scales a colour's brightness.
fn scale(c: Rgb, k: f32) -> Rgb {
    [c[0] * k, c[1] * k, c[2] * k]
}

/// Quantises `[0, 1]` to 8 bits with rounding.
fn quantize_u8(x: f32) -> u8 {
    (clamp01(x) * 255.0 + 0.5).floor() as u8
}

/// Quantises `[0, 1]` to 16 bits with rounding.
fn quantize_u16(x: f32) -> u16 {
    (clamp01(x) * 65535.0 + 0.5).floor() as u16
}

// ---------------------------------------------------------------------------------------------
// Scalar fields and the height-derived maps.
// ---------------------------------------------------------------------------------------------

/// A square, wrap-around scalar field stored row-major, row 0 at the top of the image.
#[derive(Clone)]
struct Field {
    /// The side length in pixels.
    size_px: usize,
    /// The `size_px * size_px` values.
    data: Vec<f32>,
}

impl Field {
    /// Fills a field by evaluating `f(u, v)` at every pixel centre, with `u` rightwards and
    /// `v` downwards, both in `[0, 1)`.
    fn from_fn(size_px: usize, mut f: impl FnMut(f32, f32) -> f32) -> Self {
        let inv = 1.0 / size_px as f32;
        let mut data = Vec::with_capacity(size_px * size_px);
        for y in 0..size_px {
            let v = (y as f32 + 0.5) * inv;
            for x in 0..size_px {
                let u = (x as f32 + 0.5) * inv;
                data.push(f(u, v));
            }
        }
        Self { size_px, data }
    }

    /// The value at integer coordinates, wrapping around the edges.
    fn at(&self, x: isize, y: isize) -> f32 {
        let n = self.size_px as isize;
        let xi = x.rem_euclid(n) as usize;
        let yi = y.rem_euclid(n) as usize;
        self.data[yi * self.size_px + xi]
    }

    /// A wrap-around box blur with a `(2 * radius_px + 1)²` kernel, done as two separable
    /// running-sum passes.
    fn box_blur(&self, radius_px: usize) -> Self {
        let n = self.size_px;
        let width = (2 * radius_px + 1) as f64;
        let mut horizontal = vec![0.0_f32; n * n];
        for y in 0..n {
            let row = &self.data[y * n..(y + 1) * n];
            let mut sum: f64 = (0..=2 * radius_px).map(|k| f64::from(row[(k + n * (radius_px / n + 1) - radius_px) % n])).sum();
            for x in 0..n {
                horizontal[y * n + x] = (sum / width) as f32;
                let leaving = row[(x + n * (radius_px / n + 1) - radius_px) % n];
                let entering = row[(x + radius_px + 1) % n];
                sum += f64::from(entering) - f64::from(leaving);
            }
        }
        let mut out = vec![0.0_f32; n * n];
        for x in 0..n {
            let column = |y: usize| horizontal[y * n + x];
            let mut sum: f64 = (0..=2 * radius_px).map(|k| f64::from(column((k + n * (radius_px / n + 1) - radius_px) % n))).sum();
            for y in 0..n {
                out[y * n + x] = (sum / width) as f32;
                let leaving = column((y + n * (radius_px / n + 1) - radius_px) % n);
                let entering = column((y + radius_px + 1) % n);
                sum += f64::from(entering) - f64::from(leaving);
            }
        }
        Self { size_px: n, data: out }
    }
}

/// Derives a tangent-space normal map (OpenGL convention, +Y up) from a height field by
/// central differences, encoded as `n * 0.5 + 0.5` in 8-bit RGB.
///
/// `relief_depth_tile_frac` is the physical depth of the full height range `[0, 1]` as a
/// fraction of the tile width, so the look does not change with the resolution.
fn normal_map(height: &Field, relief_depth_tile_frac: f32) -> Vec<u8> {
    let n = height.size_px;
    // Height units to texels: one full height unit spans this many texels of depth.
    let depth_texels = relief_depth_tile_frac * n as f32;
    let mut out = Vec::with_capacity(n * n * 3);
    for y in 0..n as isize {
        for x in 0..n as isize {
            let dh_dx = (height.at(x + 1, y) - height.at(x - 1, y)) * 0.5 * depth_texels;
            // Image rows grow downwards, so "up" is the previous row.
            let dh_dy_up = (height.at(x, y - 1) - height.at(x, y + 1)) * 0.5 * depth_texels;
            let (nx, ny, nz) = (-dh_dx, -dh_dy_up, 1.0_f32);
            let inv_len = 1.0 / (nx * nx + ny * ny + nz * nz).sqrt();
            for c in [nx, ny, nz] {
                out.push(quantize_u8(c * inv_len * 0.5 + 0.5));
            }
        }
    }
    out
}

/// Derives ambient occlusion from a height field: at several radii, the amount by which each
/// texel lies below its neighbourhood average darkens it.
///
/// The radii are given as fractions of the tile width so the result is resolution independent;
/// `strength` converts the averaged height deficit (in height units) into occlusion.
fn ambient_occlusion(height: &Field, radii_tile_frac: &[f32], strength: f32) -> Field {
    let n = height.size_px;
    let mut occlusion = vec![0.0_f32; n * n];
    for &radius in radii_tile_frac {
        let radius_px = ((radius * n as f32 + 0.5).floor() as usize).clamp(1, n / 2);
        let blurred = height.box_blur(radius_px);
        for (occ, (&avg, &h)) in occlusion.iter_mut().zip(blurred.data.iter().zip(&height.data)) {
            *occ += (avg - h).max(0.0);
        }
    }
    let k = strength / radii_tile_frac.len().max(1) as f32;
    Field { size_px: n, data: occlusion.iter().map(|&o| clamp01(1.0 - k * o)).collect() }
}

// ---------------------------------------------------------------------------------------------
// Material sets.
// ---------------------------------------------------------------------------------------------

/// The maps of one generated material before encoding.
struct MaterialSet {
    /// The height field in `[0, 1]`.
    height: Field,
    /// The 8-bit RGB normal map.
    normal: Vec<u8>,
    /// The ambient occlusion in `[0, 1]`.
    ao: Field,
    /// The roughness in `[0, 1]`.
    roughness: Field,
    /// The metallic map in `[0, 1]`, if meaningful for the material.
    metallic: Option<Field>,
    /// The sRGB-encoded base colour, one colour per pixel.
    basecolor: Vec<Rgb>,
}

/// Builds the height-derived maps shared by every material.
fn derived(height: &Field, relief_depth_tile_frac: f32, ao_strength: f32) -> (Vec<u8>, Field) {
    let normal = normal_map(height, relief_depth_tile_frac);
    let ao = ambient_occlusion(height, &[1.5 / 256.0, 4.0 / 256.0, 10.0 / 256.0], ao_strength);
    (normal, ao)
}

/// Running-bond bricks with mortar joints, per-brick colour variation and surface noise.
fn bricks(size_px: usize, seed: u64) -> MaterialSet {
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
struct Knot {
    /// The plank row the knot belongs to.
    row: usize,
    /// Horizontal position in tile coordinates.
    u: f32,
    /// Vertical position in tile coordinates.
    v: f32,
    /// Radius of the dark core in tile coordinates.
    radius: f32,
}

/// Horizontal wood planks with growth rings, fibre noise, knots and butt joints.
fn wood(size_px: usize, seed: u64) -> MaterialSet {
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
fn metal_plates(size_px: usize, seed: u64) -> MaterialSet {
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
fn scratch_mask(size_px: usize, seed: u64, count: u32) -> Field {
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
struct Colourway {
    /// The colour of the darkest parts of the weave (sRGB).
    dark: [u8; 3],
    /// The colour of the brightest parts of the weave (sRGB).
    light: [u8; 3],
}

/// An indigo, denim-like colourway.
const INDIGO: Colourway = Colourway { dark: [14, 22, 52], light: [112, 134, 184] };

/// An ochre colourway.
const OCHRE: Colourway = Colourway { dark: [78, 46, 8], light: [232, 184, 92] };

/// A woven fabric before it is given a colourway.
struct Fabric {
    /// The height field in `[0, 1]`.
    height: Field,
    /// The 8-bit RGB normal map.
    normal: Vec<u8>,
    /// The ambient occlusion in `[0, 1]`.
    ao: Field,
    /// The roughness in `[0, 1]`.
    roughness: Field,
    /// The colour-independent luminance pattern in `[0, 1]`.
    luminance: Field,
}

impl Fabric {
    /// Builds the material set for one colourway; only the base colour depends on it.
    fn with_colourway(&self, colourway: &Colourway) -> MaterialSet {
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
fn fabric(size_px: usize, seed: u64) -> Fabric {
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

// ---------------------------------------------------------------------------------------------
// Encoding and atomic writing.
// ---------------------------------------------------------------------------------------------

/// Writes basecolor, normal, roughness, ao, height and (if present) metallic maps.
fn write_standard_set(out_dir: &Path, name: &str, set: &MaterialSet, written: &mut Vec<PathBuf>) -> Result<(), SynthError> {
    let dir = create_dir(out_dir, name)?;
    write_common(&dir, name, set, written)?;
    write_gray8(&dir, name, "roughness", &set.roughness, written)?;
    write_gray8(&dir, name, "ao", &set.ao, written)?;
    if let Some(metallic) = &set.metallic {
        write_gray8(&dir, name, "metallic", metallic, written)?;
    }
    Ok(())
}

/// Writes basecolor, normal, height and a packed ORM map (R = occlusion, G = roughness,
/// B = metallic, the glTF convention) instead of separate ao/roughness/metallic maps.
fn write_orm_set(out_dir: &Path, name: &str, set: &MaterialSet, written: &mut Vec<PathBuf>) -> Result<(), SynthError> {
    let dir = create_dir(out_dir, name)?;
    write_common(&dir, name, set, written)?;
    let mut orm = Vec::with_capacity(set.ao.data.len() * 3);
    for (i, (&ao, &rough)) in set.ao.data.iter().zip(&set.roughness.data).enumerate() {
        let metal = set.metallic.as_ref().map_or(0.0, |m| m.data[i]);
        orm.extend([quantize_u8(ao), quantize_u8(rough), quantize_u8(metal)]);
    }
    let path = dir.join(format!("{name}_orm.png"));
    write_png(&path, &orm, set.ao.size_px, ExtendedColorType::Rgb8)?;
    written.push(path);
    Ok(())
}

/// Writes the basecolor, normal and 16-bit height maps.
fn write_common(dir: &Path, name: &str, set: &MaterialSet, written: &mut Vec<PathBuf>) -> Result<(), SynthError> {
    let size_px = set.height.size_px;
    let basecolor: Vec<u8> = set.basecolor.iter().flat_map(|c| c.map(quantize_u8)).collect();
    let path = dir.join(format!("{name}_basecolor.png"));
    write_png(&path, &basecolor, size_px, ExtendedColorType::Rgb8)?;
    written.push(path);

    let path = dir.join(format!("{name}_normal.png"));
    write_png(&path, &set.normal, size_px, ExtendedColorType::Rgb8)?;
    written.push(path);

    // The encoder expects 16-bit samples in native byte order and stores them big-endian.
    let height: Vec<u8> = set.height.data.iter().flat_map(|&h| quantize_u16(h).to_ne_bytes()).collect();
    let path = dir.join(format!("{name}_height.png"));
    write_png(&path, &height, size_px, ExtendedColorType::L16)?;
    written.push(path);
    Ok(())
}

/// Writes an 8-bit grayscale map.
fn write_gray8(dir: &Path, name: &str, map: &str, field: &Field, written: &mut Vec<PathBuf>) -> Result<(), SynthError> {
    let bytes: Vec<u8> = field.data.iter().map(|&x| quantize_u8(x)).collect();
    let path = dir.join(format!("{name}_{map}.png"));
    write_png(&path, &bytes, field.size_px, ExtendedColorType::L8)?;
    written.push(path);
    Ok(())
}

/// Creates `out_dir/name` (and its parents) and returns it.
fn create_dir(out_dir: &Path, name: &str) -> Result<PathBuf, SynthError> {
    let dir = out_dir.join(name);
    fs::create_dir_all(&dir).map_err(|source| SynthError::Io { path: dir.clone(), source })?;
    Ok(dir)
}

/// Encodes a square PNG and writes it atomically ([`texset_core::io::fsutil::write_atomic`]).
fn write_png(path: &Path, bytes: &[u8], size_px: usize, color: ExtendedColorType) -> Result<(), SynthError> {
    let mut encoded = Vec::new();
    PngEncoder::new_with_quality(&mut encoded, CompressionType::Best, FilterType::Adaptive)
        .write_image(bytes, size_px as u32, size_px as u32, color)
        .map_err(|source| SynthError::Encode { path: path.to_path_buf(), source })?;
    texset_core::io::fsutil::write_atomic(path, &encoded).map_err(|source| SynthError::Io { path: path.to_path_buf(), source })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests fail loudly on any error")]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A fresh, unique temporary folder for one test run.
    fn temp_dir(tag: &str) -> PathBuf {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        std::env::temp_dir().join(format!("texset-synth-{tag}-{}-{nanos}-{unique}", std::process::id()))
    }

    /// Reads a file's bytes, panicking with its path on failure.
    fn read(path: &Path) -> Vec<u8> {
        fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
    }

    /// The bundled `sample_textures` are this generator's output at its defaults (256 texels,
    /// seed 7), byte for byte: `texset gen-samples` rebuilds them.
    #[test]
    fn the_bundled_samples_are_this_generators_output() {
        let dir = temp_dir("bundled");
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sample_textures");
        for file in write_sample_textures(&dir, 256, 7).unwrap() {
            let bundled = repo.join(file.strip_prefix(&dir).unwrap());
            assert!(read(&file) == read(&bundled), "{} differs from the generator's output", bundled.display());
        }
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn same_seed_and_size_give_identical_bytes() {
        let (a, b) = (temp_dir("det-a"), temp_dir("det-b"));
        let files_a = write_sample_textures(&a, 48, 7).unwrap();
        let files_b = write_sample_textures(&b, 48, 7).unwrap();
        assert_eq!(files_a.len(), files_b.len());
        for (fa, fb) in files_a.iter().zip(&files_b) {
            assert_eq!(fa.strip_prefix(&a).unwrap(), fb.strip_prefix(&b).unwrap());
            assert!(read(fa) == read(fb), "{} differs between runs", fa.display());
        }
        let other = temp_dir("det-c");
        let files_c = write_sample_textures(&other, 48, 8).unwrap();
        assert!(read(&files_a[0]) != read(&files_c[0]), "a different seed should change the output");
        for dir in [a, b, other] {
            fs::remove_dir_all(dir).unwrap();
        }
    }

    #[test]
    fn writes_expected_files_sorted() {
        let dir = temp_dir("list");
        let files = write_sample_textures(&dir, 16, 1).unwrap();
        let mut sorted = files.clone();
        sorted.sort();
        assert_eq!(files, sorted);
        let names: Vec<String> = files.iter().map(|p| p.strip_prefix(&dir).unwrap().to_string_lossy().replace('\\', "/")).collect();
        for material in MATERIALS {
            for map in ["basecolor", "normal", "height"] {
                assert!(names.contains(&format!("{material}/{material}_{map}.png")), "{material} {map}");
            }
            let packed = *material == "metal_plates";
            for map in ["ao", "roughness"] {
                assert_eq!(names.contains(&format!("{material}/{material}_{map}.png")), !packed);
            }
            assert_eq!(names.contains(&format!("{material}/{material}_orm.png")), packed);
        }
        // No temporary files are left behind.
        for material in MATERIALS {
            for entry in fs::read_dir(dir.join(material)).unwrap() {
                let name = entry.unwrap().file_name().to_string_lossy().into_owned();
                assert!(!name.starts_with('.'), "leftover {name}");
            }
        }
        let height = image::open(dir.join("wood/wood_height.png")).unwrap();
        assert_eq!(height.color(), image::ColorType::L16);
        assert_eq!((height.width(), height.height()), (16, 16));
        let orm = image::open(dir.join("metal_plates/metal_plates_orm.png")).unwrap();
        assert_eq!(orm.color(), image::ColorType::Rgb8);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn colour_variant_pair_shares_everything_but_basecolor() {
        let dir = temp_dir("pair");
        write_sample_textures(&dir, 40, 3).unwrap();
        for map in ["height", "normal", "roughness", "ao"] {
            let a = read(&dir.join(format!("fabric_indigo/fabric_indigo_{map}.png")));
            let b = read(&dir.join(format!("fabric_ochre/fabric_ochre_{map}.png")));
            assert!(a == b, "{map} differs between colourways");
        }
        let a = image::open(dir.join("fabric_indigo/fabric_indigo_basecolor.png")).unwrap().to_rgb8();
        let b = image::open(dir.join("fabric_ochre/fabric_ochre_basecolor.png")).unwrap().to_rgb8();
        assert!(a != b);
        // Same luminance ordering: a brighter indigo texel is never a clearly darker ochre texel.
        let luma = |p: &image::Rgb<u8>| 0.2126 * f32::from(p[0]) + 0.7152 * f32::from(p[1]) + 0.0722 * f32::from(p[2]);
        let (pa, pb): (Vec<_>, Vec<_>) = (a.pixels().map(luma).collect(), b.pixels().map(luma).collect());
        for i in (0..pa.len()).step_by(7) {
            for j in (0..pa.len()).step_by(11) {
                if pa[i] > pa[j] + 3.0 {
                    assert!(pb[i] + 3.0 >= pb[j]);
                }
            }
        }
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn normals_decode_to_unit_length() {
        let dir = temp_dir("normals");
        let files = write_sample_textures(&dir, 64, 11).unwrap();
        let normals: Vec<_> = files.iter().filter(|p| p.to_string_lossy().ends_with("_normal.png")).collect();
        assert_eq!(normals.len(), MATERIALS.len());
        for path in normals {
            let img = image::open(path).unwrap().to_rgb8();
            let mut tilted = 0;
            for p in img.pixels() {
                let d = |c: u8| f32::from(c) / 255.0 * 2.0 - 1.0;
                let (x, y, z) = (d(p[0]), d(p[1]), d(p[2]));
                let len = (x * x + y * y + z * z).sqrt();
                assert!((len - 1.0).abs() <= 2.0 / 255.0, "{}: length {len}", path.display());
                assert!(z > 0.0, "{}: normal points into the surface", path.display());
                tilted += usize::from(z < 0.999);
            }
            assert!(tilted > 0, "{} is flat", path.display());
        }
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn normal_map_follows_opengl_convention() {
        // A single bump in the middle: its right flank faces +X and its upper flank +Y.
        let size_px = 32;
        let height = Field::from_fn(size_px, |u, v| {
            let (du, dv) = (u - 0.5, v - 0.5);
            clamp01(1.0 - (du * du + dv * dv) * 16.0)
        });
        let normal = normal_map(&height, 0.05);
        let texel = |x: usize, y: usize| &normal[(y * size_px + x) * 3..(y * size_px + x) * 3 + 3];
        assert!(texel(20, 16)[0] > 140, "right flank should face +X");
        assert!(texel(12, 16)[0] < 116, "left flank should face -X");
        assert!(texel(16, 12)[1] > 140, "upper flank should face +Y (OpenGL)");
        assert!(texel(16, 20)[1] < 116, "lower flank should face -Y");
    }

    #[test]
    fn noise_tiles_seamlessly() {
        for (cu, cv) in [(3, 5), (16, 16)] {
            let a = value_noise(9, 0.0, 0.3, cu, cv);
            let b = value_noise(9, 1.0, 0.3, cu, cv);
            assert!((a - b).abs() < 1e-5);
            let c = fbm(9, 0.4, 0.0, cu, cv, 4, 0.5);
            let d = fbm(9, 0.4, 1.0, cu, cv, 4, 0.5);
            assert!((c - d).abs() < 1e-5);
        }
    }

    #[test]
    fn sizes_out_of_range_are_rejected() {
        let dir = temp_dir("bad-size");
        for size in [0, 1, 15, 2049, u32::MAX] {
            let err = write_sample_textures(&dir, size, 1).unwrap_err();
            assert!(matches!(err, SynthError::InvalidSize { size: s } if s == size));
        }
        assert!(!dir.exists(), "nothing should be written for an invalid size");
    }

    #[test]
    fn odd_sizes_work() {
        let dir = temp_dir("odd");
        let files = write_sample_textures(&dir, 17, 5).unwrap();
        let img = image::open(&files[0]).unwrap();
        assert_eq!((img.width(), img.height()), (17, 17));
        fs::remove_dir_all(dir).unwrap();
    }
}
