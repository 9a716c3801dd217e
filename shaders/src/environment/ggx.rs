//! GGX (Trowbridge–Reitz) pieces the prefilter and the split-sum table share: the Hammersley
//! set, half-vector importance sampling, the distribution and the height-correlated Smith
//! visibility. Roughness here is `alpha = perceptual_roughness²`.

/// Point `i` of the `n`-point Hammersley set in [0, 1)²: `(i / n, radical_inverse_base2(i))`.
pub(super) fn hammersley(i: u32, n: u32) -> [f64; 2] {
    [f64::from(i) / f64::from(n.max(1)), f64::from(i.reverse_bits()) / 4_294_967_296.0]
}

/// The half vector (tangent space, +Z the normal) that sample `xi` of the GGX distribution of
/// `alpha` maps to: `φ = 2π ξ₀`, `cos θ = √((1 − ξ₁) / (1 + (α² − 1) ξ₁))`. Its density is
/// `D(h)·(n·h)`.
pub(super) fn sample_half_vector(xi: [f64; 2], alpha: f64) -> [f64; 3] {
    let a2 = alpha * alpha;
    let phi = std::f64::consts::TAU * xi[0];
    let cos_theta = ((1.0 - xi[1]) / (1.0 + (a2 - 1.0) * xi[1])).max(0.0).sqrt().min(1.0);
    let sin_theta = (1.0 - cos_theta * cos_theta).max(0.0).sqrt();
    [sin_theta * phi.cos(), sin_theta * phi.sin(), cos_theta]
}

/// The GGX distribution `D(h) = α² / (π ((α² − 1) (n·h)² + 1)²)`.
pub(super) fn distribution(n_dot_h: f64, alpha: f64) -> f64 {
    let a2 = alpha * alpha;
    let d = (a2 - 1.0) * n_dot_h * n_dot_h + 1.0;
    a2 / (std::f64::consts::PI * d * d)
}

/// The height-correlated Smith visibility `V = G / (4 (n·l)(n·v))`, as glTF-Sample-Viewer's
/// `V_GGX`: `0.5 / (n·l √((n·v)²(1 − α²) + α²) + n·v √((n·l)²(1 − α²) + α²))`.
pub(super) fn visibility_correlated(n_dot_l: f64, n_dot_v: f64, alpha: f64) -> f64 {
    let a2 = alpha * alpha;
    let ggx_v = n_dot_l * (n_dot_v * n_dot_v * (1.0 - a2) + a2).sqrt();
    let ggx_l = n_dot_v * (n_dot_l * n_dot_l * (1.0 - a2) + a2).sqrt();
    let sum = ggx_v + ggx_l;
    if sum > 0.0 { 0.5 / sum } else { 0.0 }
}
