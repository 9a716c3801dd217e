//! The specular cube's faces: the direction of each face texel, and the bilinear lookup the CPU
//! reference renderer does where the GPU samples the uploaded cube.

/// The cube's faces in the order they are stored (and uploaded as array layers): +X, −X, +Y, −Y,
/// +Z, −Z, the order of wgpu's (Vulkan's, D3D's) cube textures.
pub const CUBE_FACES: [&str; 6] = ["+X", "-X", "+Y", "-Y", "+Z", "-Z"];

/// The unit direction through point `uv` of cube face `face` (0 to 5 in [`CUBE_FACES`]' order;
/// `uv` in [0, 1]², texel `(x, y)` of a `size`-texel face centred at `((x + 0.5) / size,
/// (y + 0.5) / size)`, row 0 at the top). With `s = 2u − 1`, `t = 2v − 1`, the face's point is
/// +X: `(1, −t, −s)`, −X: `(−1, −t, s)`, +Y: `(s, 1, t)`, −Y: `(s, −1, −t)`, +Z: `(s, −t, 1)`,
/// −Z: `(−s, −t, −1)`, the cube-map convention of Vulkan, D3D and wgpu: a shader's
/// `textureSample(cube, sampler, dir)` reads the texel this maps to `dir` ([`cube_face_uv`] is
/// its inverse). A face index above 5 reads as −Z.
#[must_use]
pub fn cube_direction(face: usize, uv: [f32; 2]) -> [f32; 3] {
    let s = 2.0 * uv[0] - 1.0;
    let t = 2.0 * uv[1] - 1.0;
    let d = match face {
        0 => [1.0, -t, -s],
        1 => [-1.0, -t, s],
        2 => [s, 1.0, t],
        3 => [s, -1.0, -t],
        4 => [s, -t, 1.0],
        _ => [-s, -t, -1.0],
    };
    normalize(d)
}

/// The face `dir` (any length but zero) leaves the cube through and the point's `uv` in it (the
/// inverse of [`cube_direction`]; ties between axes go to X, then Y).
#[must_use]
pub fn cube_face_uv(dir: [f32; 3]) -> (usize, [f32; 2]) {
    let [x, y, z] = dir;
    let (ax, ay, az) = (x.abs(), y.abs(), z.abs());
    let (face, s, t, major) = if ax >= ay && ax >= az {
        if x >= 0.0 { (0, -z, -y, ax) } else { (1, z, -y, ax) }
    } else if ay >= az {
        if y >= 0.0 { (2, x, z, ay) } else { (3, x, -z, ay) }
    } else if z >= 0.0 {
        (4, x, -y, az)
    } else {
        (5, -x, -y, az)
    };
    if major <= 0.0 || !major.is_finite() {
        return (4, [0.5, 0.5]);
    }
    (face, [0.5 * (s / major + 1.0), 0.5 * (t / major + 1.0)])
}

/// `v` scaled to unit length (`v` itself when it has none).
pub(super) fn normalize(v: [f32; 3]) -> [f32; 3] {
    let length = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    if length > 0.0 { v.map(|c| c / length) } else { v }
}

/// One level of the specular cube: six square faces of `face_size_px` texels a side, filtered for
/// `roughness`. Texel `(x, y)` of face `f` ([`CUBE_FACES`]' order) is
/// `texels()[(f · face_size_px + y) · face_size_px + x]`, linear RGB; its direction is
/// [`cube_direction`]`(f, ((x + 0.5) / face_size_px, (y + 0.5) / face_size_px))`. Uploaded as a
/// cube texture's mip level, the faces are its six array layers in order.
#[derive(Clone, Debug, PartialEq)]
pub struct CubeLevel {
    pub(super) face_size_px: u32,
    pub(super) roughness: f32,
    pub(super) texels: Vec<[f32; 3]>,
}

impl CubeLevel {
    /// Side of each face in texels.
    #[must_use]
    pub fn face_size_px(&self) -> u32 {
        self.face_size_px
    }

    /// The perceptual roughness this level is filtered for.
    #[must_use]
    pub fn roughness(&self) -> f32 {
        self.roughness
    }

    /// The six faces' texels, face after face, rows top to bottom.
    #[must_use]
    pub fn texels(&self) -> &[[f32; 3]] {
        &self.texels
    }

    /// The radiance towards `dir`: bilinear between the texel centres of the face `dir` leaves
    /// through, clamped at the face's edge texels.
    #[must_use]
    pub fn sample(&self, dir: [f32; 3]) -> [f32; 3] {
        let (face, uv) = cube_face_uv(dir);
        let size = self.face_size_px as usize;
        let last = size.saturating_sub(1) as f32;
        let x = (uv[0] * self.face_size_px as f32 - 0.5).clamp(0.0, last);
        let y = (uv[1] * self.face_size_px as f32 - 0.5).clamp(0.0, last);
        let (x0, y0) = (x.floor(), y.floor());
        let (tx, ty) = (x - x0, y - y0);
        let (x0, y0) = (x0 as usize, y0 as usize);
        let (x1, y1) = ((x0 + 1).min(size.saturating_sub(1)), (y0 + 1).min(size.saturating_sub(1)));
        let at = |x: usize, y: usize| self.texels.get((face * size + y) * size + x).copied().unwrap_or_default();
        let (a, b, c, d) = (at(x0, y0), at(x1, y0), at(x0, y1), at(x1, y1));
        std::array::from_fn(|i| {
            let top = a[i] + (b[i] - a[i]) * tx;
            let bottom = c[i] + (d[i] - c[i]) * tx;
            top + (bottom - top) * ty
        })
    }

    /// The mean radiance over the sphere, each texel weighted by the solid angle it covers.
    #[must_use]
    pub fn mean_radiance(&self) -> [f32; 3] {
        let size = self.face_size_px as usize;
        let mut sum = [0.0f64; 3];
        let mut total = 0.0f64;
        for (i, texel) in self.texels.iter().enumerate() {
            let weight = texel_solid_angle(self.face_size_px, i % size, (i / size) % size);
            total += weight;
            for (s, v) in sum.iter_mut().zip(texel) {
                *s += f64::from(*v) * weight;
            }
        }
        if total <= 0.0 {
            return [0.0; 3];
        }
        sum.map(|s| (s / total) as f32)
    }
}

/// The solid angle (steradians) of texel `(x, y)` of a `face_size_px`-texel face:
/// `dA / (1 + s² + t²)^{3/2}` at its centre, `dA = (2 / face_size_px)²`.
pub(super) fn texel_solid_angle(face_size_px: u32, x: usize, y: usize) -> f64 {
    let size = f64::from(face_size_px);
    let s = 2.0 * (x as f64 + 0.5) / size - 1.0;
    let t = 2.0 * (y as f64 + 0.5) / size - 1.0;
    let area = (2.0 / size) * (2.0 / size);
    area / (1.0 + s * s + t * t).powf(1.5)
}
