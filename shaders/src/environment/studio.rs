//! The default environment, made here (no asset ships): a neutral photo studio. A soft grey dome
//! brighter overhead, a dim floor, a large softbox above the camera's left, a tall strip light to
//! the right and a round rim light high behind the subject; grey everywhere (R = G = B, so it
//! casts no hue on the base colours being judged), scaled to a mean radiance of exactly 1 so
//! exposure 0 EV shows albedo as it is. The camera is taken to look along −Z (the image's centre
//! column), the subject's front facing +Z.

use super::{Environment, EnvironmentError, MAX_WIDTH_PX, equirect_uv_to_direction};
use rayon::prelude::*;
use std::path::Path;

/// Width of the default studio environment, texels (half as tall): what the studio's viewport,
/// `texset render` and `texset bench ibl` light by when no environment file is given.
pub const STUDIO_WIDTH_PX: u32 = 1024;

/// A light of the studio: a soft-edged rectangle or disc on the sphere.
struct Light {
    /// Unit direction to its centre.
    centre: [f64; 3],
    /// Its shape.
    shape: Shape,
    /// Radiance inside it, before the environment is scaled to mean 1.
    radiance: f64,
}

/// The outline of a [`Light`].
enum Shape {
    /// A rectangle facing the centre: half-extents as tangents of the half-angles along the
    /// horizontal and the vertical, and the width of the soft edge (same units).
    Rectangle { half_width: f64, half_height: f64, softness: f64 },
    /// A disc: angular radius and soft edge, in radians.
    Disc { radius: f64, softness: f64 },
}

/// The studio's lights.
fn lights() -> [Light; 3] {
    [
        // Key: a large softbox above the camera's left.
        Light {
            centre: normalized([-0.8, 0.9, 1.0]),
            shape: Shape::Rectangle { half_width: 0.45, half_height: 0.3, softness: 0.12 },
            radiance: 9.0,
        },
        // Fill: a tall strip light to the right, at the subject's height.
        Light {
            centre: normalized([1.0, 0.15, 0.35]),
            shape: Shape::Rectangle { half_width: 0.1, half_height: 0.55, softness: 0.05 },
            radiance: 6.0,
        },
        // Rim: a round light high behind the subject.
        Light { centre: normalized([0.25, 0.8, -1.0]), shape: Shape::Disc { radius: 0.22, softness: 0.08 }, radiance: 10.0 },
    ]
}

/// `v` scaled to unit length.
fn normalized(v: [f64; 3]) -> [f64; 3] {
    let length = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    v.map(|c| c / length)
}

/// Hermite smoothstep of `x` between `edge0` and `edge1`.
fn smoothstep(edge0: f64, edge1: f64, x: f64) -> f64 {
    let t = ((x - edge0) / (edge1 - edge0)).clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

/// How much of `light` covers direction `d` (0 to 1).
fn coverage(light: &Light, d: [f64; 3]) -> f64 {
    let c = light.centre;
    let cos_angle = d[0] * c[0] + d[1] * c[1] + d[2] * c[2];
    if cos_angle <= 0.0 {
        return 0.0;
    }
    match light.shape {
        Shape::Disc { radius, softness } => 1.0 - smoothstep(radius - softness, radius + softness, cos_angle.clamp(-1.0, 1.0).acos()),
        Shape::Rectangle { half_width, half_height, softness } => {
            // The light's plane at distance 1 along its centre: horizontal axis ⟂ centre and +Y.
            let right = normalized([-c[2], 0.0, c[0]]);
            let up = [c[1] * right[2] - c[2] * right[1], c[2] * right[0] - c[0] * right[2], c[0] * right[1] - c[1] * right[0]];
            let p = d.map(|v| v / cos_angle);
            let x = p[0] * right[0] + p[1] * right[1] + p[2] * right[2];
            let y = p[0] * up[0] + p[1] * up[1] + p[2] * up[2];
            let inside = |value: f64, half: f64| 1.0 - smoothstep(half - softness, half + softness, value.abs());
            inside(x, half_width) * inside(y, half_height)
        }
    }
}

/// The studio's radiance towards unit direction `d`, before scaling.
fn radiance(lights: &[Light], d: [f64; 3]) -> f64 {
    let y = d[1];
    // A grey dome, brighter overhead, meeting a dim floor over a few degrees at the horizon.
    let dome = 0.5 + 0.5 * y.max(0.0);
    let floor = 0.2;
    let horizon = smoothstep(-0.04, 0.04, y);
    let base = floor + (dome - floor) * horizon;
    lights.iter().fold(base, |sum, light| sum + light.radiance * coverage(light, d))
}

impl Environment {
    /// The environment file at `path` ([`Environment::load`]: an error names the file), else
    /// (`None`) the studio [`STUDIO_WIDTH_PX`] wide.
    pub fn load_or_studio(path: Option<&Path>) -> Result<Self, EnvironmentError> {
        path.map_or_else(|| Ok(Self::studio(STUDIO_WIDTH_PX)), Self::load)
    }

    /// The default environment: a neutral studio (see the module's description), `width_px`
    /// wide (clamped to 4 to [`MAX_WIDTH_PX`]) and half as tall, deterministic, grey
    /// (R = G = B), with a mean radiance of 1.
    #[must_use]
    pub fn studio(width_px: u32) -> Self {
        let width_px = width_px.clamp(4, MAX_WIDTH_PX);
        let height_px = width_px / 2;
        let (w, h) = (width_px as usize, height_px as usize);
        let lights = lights();
        let values: Vec<f64> = (0..w * h)
            .into_par_iter()
            .map(|i| {
                let uv = [((i % w) as f32 + 0.5) / width_px as f32, ((i / w) as f32 + 0.5) / height_px as f32];
                radiance(&lights, equirect_uv_to_direction(uv).map(f64::from))
            })
            .collect();
        // The solid-angle weighted mean, summed in order (the same bits on any thread count).
        let rows = super::sh::row_solid_angles(height_px);
        let mut total = 0.0f64;
        for (row, weight) in values.chunks_exact(w).zip(&rows) {
            total += row.iter().sum::<f64>() * weight / w as f64;
        }
        let scale = 4.0 * std::f64::consts::PI / total;
        let texels = values.iter().map(|v| [(v * scale) as f32; 3]).collect();
        Self { width_px, height_px, texels, replaced_values: 0 }
    }
}
