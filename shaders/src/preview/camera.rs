//! The preview's camera: a pinhole [`Camera`] (what the shaders and the CPU reference read) and
//! the [`OrbitCamera`] a person drives (orbit, pan, zoom, frame, turntable), world space +Y up.

/// The vertical field of view a new view gets, degrees.
pub const DEFAULT_FOV_Y_DEG: f32 = 45.0;

/// How far a new view stands from what it looks at, in world units (the preview shapes fit in a
/// sphere of radius √2 about the origin).
pub const DEFAULT_DISTANCE: f32 = 3.0;

/// The turntable's speed, degrees a second about +Y.
pub const TURNTABLE_DEG_PER_S: f32 = 20.0;

/// Pitch stays this far inside ±90°, degrees, so "up" stays defined.
const PITCH_LIMIT_DEG: f32 = 89.0;

/// Closest and farthest a view may stand, as multiples of the framed radius.
const ZOOM_RANGE: (f32, f32) = (0.05, 50.0);

/// A pinhole camera: an eye and an orthonormal basis, and the tangent of half its vertical field
/// of view (which [`OrbitCamera::camera`] makes span the image's shorter side). A viewport point `(u, v)` (0..1, y down) looks along
/// `forward + (2u − 1)·tan·aspect·right + (1 − 2v)·tan·up`, normalised.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    /// Where it stands.
    pub eye: [f32; 3],
    /// Unit vector to the right of the image.
    pub right: [f32; 3],
    /// Unit vector up the image.
    pub up: [f32; 3],
    /// Unit vector it looks along.
    pub forward: [f32; 3],
    /// tan(vertical field of view / 2).
    pub tan_half_fov_y: f32,
}

impl Default for Camera {
    /// The camera of [`OrbitCamera::default`] for a square image: at (0, 0, 3) looking down −Z.
    fn default() -> Self {
        OrbitCamera::default().camera(1.0)
    }
}

impl Camera {
    /// The uniform words: eye and tan(fov/2), right, up, forward (each `vec4<f32>`, w unused
    /// but the first's).
    pub(super) fn words(&self) -> [[f32; 4]; 4] {
        let [e, r, u, f] = [self.eye, self.right, self.up, self.forward];
        [[e[0], e[1], e[2], self.tan_half_fov_y], [r[0], r[1], r[2], 0.0], [u[0], u[1], u[2], 0.0], [f[0], f[1], f[2], 0.0]]
    }

    /// The unit direction of the ray through viewport point `uv` (0..1, y down) for an image of
    /// `aspect` = width / height.
    #[must_use]
    pub fn ray_dir(&self, uv: [f32; 2], aspect: f32) -> [f32; 3] {
        let x = (uv[0] * 2.0 - 1.0) * self.tan_half_fov_y * aspect;
        let y = (1.0 - uv[1] * 2.0) * self.tan_half_fov_y;
        let d: [f32; 3] = std::array::from_fn(|k| self.forward[k] + x * self.right[k] + y * self.up[k]);
        normalize(d)
    }
}

/// A camera orbiting a target: what the studio's mouse drives and `texset render --camera` sets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OrbitCamera {
    /// The point it looks at and orbits.
    pub target: [f32; 3],
    /// Angle about +Y from +Z towards +X, radians (0: the eye on +Z).
    pub yaw_rad: f32,
    /// Angle above the horizontal, radians (kept inside ±89°).
    pub pitch_rad: f32,
    /// Distance from the target, world units.
    pub distance: f32,
    /// Vertical field of view, degrees.
    pub fov_y_deg: f32,
}

impl Default for OrbitCamera {
    fn default() -> Self {
        Self { target: [0.0; 3], yaw_rad: 0.0, pitch_rad: 0.0, distance: DEFAULT_DISTANCE, fov_y_deg: DEFAULT_FOV_Y_DEG }
    }
}

impl OrbitCamera {
    /// The pinhole camera it gives for an image of `aspect` = width / height: the field of view
    /// spans the image's shorter side, so what [`Self::frame`] fits stays in a portrait image too.
    #[must_use]
    pub fn camera(&self, aspect: f32) -> Camera {
        let pitch = self.pitch_rad.clamp(-PITCH_LIMIT_DEG.to_radians(), PITCH_LIMIT_DEG.to_radians());
        let offset = [self.yaw_rad.sin() * pitch.cos(), pitch.sin(), self.yaw_rad.cos() * pitch.cos()];
        let distance = if self.distance.is_finite() && self.distance > 0.0 { self.distance } else { DEFAULT_DISTANCE };
        let eye: [f32; 3] = std::array::from_fn(|k| self.target[k] + offset[k] * distance);
        let forward = normalize([-offset[0], -offset[1], -offset[2]]);
        // Right of the image: forward × +Y, which the pitch limit keeps away from zero.
        let right = normalize([-forward[2], 0.0, forward[0]]);
        let up = cross(right, forward);
        let fov = self.fov_y_deg.clamp(1.0, 170.0);
        let portrait = if aspect.is_finite() && aspect > 0.0 { aspect.min(1.0) } else { 1.0 };
        Camera { eye, right, up, forward, tan_half_fov_y: (fov.to_radians() * 0.5).tan() / portrait }
    }

    /// Orbits by `yaw_rad` about +Y and `pitch_rad` up (the pitch kept inside ±89°).
    pub fn orbit(&mut self, yaw_rad: f32, pitch_rad: f32) {
        let limit = PITCH_LIMIT_DEG.to_radians();
        self.yaw_rad = (self.yaw_rad + yaw_rad).rem_euclid(std::f32::consts::TAU);
        self.pitch_rad = (self.pitch_rad + pitch_rad).clamp(-limit, limit);
    }

    /// Moves the target (and the eye with it) by `right` and `up` image heights at the target's
    /// distance: a drag across the whole image height pans by what it shows there.
    pub fn pan(&mut self, right: f32, up: f32) {
        let camera = self.camera(1.0);
        let height = 2.0 * self.distance * camera.tan_half_fov_y;
        for k in 0..3 {
            self.target[k] += (camera.right[k] * right + camera.up[k] * up) * height;
        }
    }

    /// Moves towards the target by `factor` (below 1: closer), kept within a range of
    /// `framed_radius` (what [`Self::frame`] last fitted; 1 for the shapes).
    pub fn zoom(&mut self, factor: f32, framed_radius: f32) {
        let radius = if framed_radius.is_finite() && framed_radius > 0.0 { framed_radius } else { 1.0 };
        let factor = if factor.is_finite() && factor > 0.0 { factor } else { 1.0 };
        self.distance = (self.distance * factor).clamp(ZOOM_RANGE.0 * radius, ZOOM_RANGE.1 * radius);
    }

    /// Looks at a sphere of `radius` about `center` from the current direction, from the distance
    /// at which it fills the image's height with a tenth to spare.
    pub fn frame(&mut self, center: [f32; 3], radius: f32) {
        let radius = if radius.is_finite() && radius > 0.0 { radius } else { 1.0 };
        let half_fov = (self.fov_y_deg.clamp(1.0, 170.0) * 0.5).to_radians();
        self.target = center;
        self.distance = 1.1 * radius / half_fov.sin();
    }

    /// Turns the turntable by `seconds` at [`TURNTABLE_DEG_PER_S`].
    pub fn turn(&mut self, seconds: f32) {
        if seconds.is_finite() {
            self.orbit(TURNTABLE_DEG_PER_S.to_radians() * seconds, 0.0);
        }
    }
}

fn cross(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

fn normalize(a: [f32; 3]) -> [f32; 3] {
    let length = (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt();
    if length > 0.0 { [a[0] / length, a[1] / length, a[2] / length] } else { [0.0, 0.0, -1.0] }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::float_cmp)]
    use super::*;

    fn close(a: [f32; 3], b: [f32; 3]) -> bool {
        (0..3).all(|k| (a[k] - b[k]).abs() < 1e-5)
    }

    #[test]
    fn the_default_view_looks_down_minus_z_from_three_units() {
        let c = Camera::default();
        assert!(close(c.eye, [0.0, 0.0, 3.0]) && close(c.forward, [0.0, 0.0, -1.0]));
        assert!(close(c.right, [1.0, 0.0, 0.0]) && close(c.up, [0.0, 1.0, 0.0]));
        assert!((c.tan_half_fov_y - 22.5f32.to_radians().tan()).abs() < 1e-6);
        // The centre ray is forward; the top edge is tan(fov/2) up.
        assert!(close(c.ray_dir([0.5, 0.5], 1.0), c.forward));
        let top = c.ray_dir([0.5, 0.0], 1.0);
        assert!((top[1] / -top[2] - c.tan_half_fov_y).abs() < 1e-6);
    }

    #[test]
    fn orbiting_keeps_the_target_centred_and_the_basis_orthonormal() {
        let mut orbit = OrbitCamera { target: [0.5, -0.2, 1.0], ..OrbitCamera::default() };
        for (yaw, pitch) in [(0.3, 0.2), (2.0, -0.7), (-5.0, 3.0), (1.0, -3.0)] {
            orbit.orbit(yaw, pitch);
            let c = orbit.camera(1.0);
            let to_target = normalize(std::array::from_fn(|k| orbit.target[k] - c.eye[k]));
            assert!(close(to_target, c.forward), "{orbit:?}");
            let dot = |a: [f32; 3], b: [f32; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
            assert!(dot(c.right, c.up).abs() < 1e-5 && dot(c.right, c.forward).abs() < 1e-5 && dot(c.up, c.forward).abs() < 1e-5);
            assert!(c.up[1] > 0.0, "up stays up: {c:?}");
            assert!(orbit.pitch_rad.abs() <= 89f32.to_radians() + 1e-6);
        }
    }

    #[test]
    fn framing_fits_the_sphere_and_zoom_and_pan_stay_bounded() {
        let mut orbit = OrbitCamera::default();
        orbit.frame([1.0, 2.0, 3.0], 10.0);
        assert_eq!(orbit.target, [1.0, 2.0, 3.0]);
        // The sphere's silhouette is inside the image: its angular radius below half the fov.
        let angular = (10.0 / orbit.distance).asin();
        assert!(angular < 22.5f32.to_radians() && angular > 0.85 * 22.5f32.to_radians(), "{angular}");
        orbit.zoom(1e-9, 10.0);
        assert_eq!(orbit.distance, 0.5);
        orbit.zoom(f32::NAN, 10.0);
        assert_eq!(orbit.distance, 0.5);
        orbit.zoom(1e9, 10.0);
        assert_eq!(orbit.distance, 500.0);
        // A pan of one image height moves the target by what the image shows at its distance.
        let mut panned = OrbitCamera::default();
        panned.pan(0.0, 1.0);
        assert!(close(panned.target, [0.0, 2.0 * 3.0 * 22.5f32.to_radians().tan(), 0.0]));
        // In a portrait image the field of view spans the width.
        let tall = OrbitCamera::default().camera(0.5);
        assert!((tall.tan_half_fov_y * 0.5 - 22.5f32.to_radians().tan()).abs() < 1e-6);
        assert_eq!(OrbitCamera::default().camera(2.0).tan_half_fov_y, OrbitCamera::default().camera(1.0).tan_half_fov_y);
        // A turntable second is 20 degrees of yaw.
        let mut turned = OrbitCamera::default();
        turned.turn(1.0);
        assert!((turned.yaw_rad - 20f32.to_radians()).abs() < 1e-6);
    }
}
