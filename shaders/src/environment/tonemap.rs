//! Tone mapping on the CPU, the twin of `tonemap.wgsl` ([`TONEMAP_WGSL`]): the same functions
//! under the same names in the same order of operations, linear scene RGB in, linear display RGB
//! in [0, 1] out (encode as sRGB after). Exposure scales the input by `2^exposure_ev` first.
//!
//! - Khronos PBR Neutral (the default: it keeps base colours as they are up to 0.8 − 0.04 and has
//!   no hue shifts; KhronosGroup/ToneMapping, `PBR_Neutral`);
//! - `AgX`, the minimal real-time `AgX` (B. Wrensch after T. Sobotka): inset matrix, log2 clamped to
//!   [−12.47393, 4.026069] EV, a 6th-order sigmoid, outset matrix, then `^2.2` to linear;
//! - ACES fitted by Stephen Hill (`BakingLab`), without the 1/0.6 exposure some viewers add
//!   (+0.737 EV gives that look);
//! - none: clamped to [0, 1].

/// The WGSL twin: `fn tonemap(linear: vec3<f32>, mapper: u32, exposure_ev: f32) -> vec3<f32>`,
/// the four `tonemap_*` functions and the `TONEMAP_*` ids ([`ToneMapper::wgsl_id`]). Append it to
/// a shader that tone maps.
pub const TONEMAP_WGSL: &str = include_str!("tonemap.wgsl");

/// Khronos PBR Neutral: where highlight compression starts (0.8 − 0.04).
const PBR_NEUTRAL_START_COMPRESSION: f32 = 0.76;
/// Khronos PBR Neutral: how fast compressed highlights desaturate.
const PBR_NEUTRAL_DESATURATION: f32 = 0.15;
/// Minimal `AgX`: the log2 exposure mapped to 0.
const AGX_MIN_EV: f32 = -12.47393;
/// Minimal `AgX`: the log2 exposure mapped to 1.
const AGX_MAX_EV: f32 = 4.026_069;
/// Minimal `AgX`'s inset matrix (rows; the WGSL writes its columns).
#[allow(clippy::excessive_precision, clippy::unreadable_literal, reason = "the published digits, to check against the source")]
const AGX_INSET: [[f32; 3]; 3] = [
    [0.842479062253094, 0.0784335999999992, 0.0792237451477643],
    [0.0423282422610123, 0.878468636469772, 0.0791661274605434],
    [0.0423756549057051, 0.0784336, 0.879142973793104],
];
/// Minimal `AgX`'s outset matrix (rows).
#[allow(clippy::excessive_precision, clippy::unreadable_literal, reason = "the published digits, to check against the source")]
const AGX_OUTSET: [[f32; 3]; 3] = [
    [1.19687900512017, -0.0980208811401368, -0.0990297440797205],
    [-0.0528968517574562, 1.15190312990417, -0.0989611768448433],
    [-0.0529716355144438, -0.0980434501171241, 1.15107367264116],
];
/// ACES (Hill): sRGB → XYZ → D65 to D60 → AP1 → `RRT_SAT` (rows).
const ACES_IN: [[f32; 3]; 3] = [[0.59719, 0.35458, 0.04823], [0.07600, 0.90834, 0.01566], [0.02840, 0.13383, 0.83777]];
/// ACES (Hill): `ODT_SAT` → XYZ → D60 to D65 → sRGB (rows).
const ACES_OUT: [[f32; 3]; 3] = [[1.60475, -0.53108, -0.07367], [-0.10208, 1.10813, -0.00605], [-0.00327, -0.07276, 1.07602]];

/// A display transform.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ToneMapper {
    /// Khronos PBR Neutral (the default).
    #[default]
    PbrNeutral,
    /// Minimal `AgX`.
    Agx,
    /// ACES fitted by Stephen Hill.
    AcesHill,
    /// None: clamped to [0, 1].
    None,
}

impl ToneMapper {
    /// Every tone mapper, in id order.
    pub const ALL: [Self; 4] = [Self::PbrNeutral, Self::Agx, Self::AcesHill, Self::None];

    /// The id `tonemap` in [`TONEMAP_WGSL`] takes (its `TONEMAP_*` constants).
    #[must_use]
    pub fn wgsl_id(self) -> u32 {
        match self {
            Self::PbrNeutral => 0,
            Self::Agx => 1,
            Self::AcesHill => 2,
            Self::None => 3,
        }
    }

    /// The name of its `TONEMAP_*` constant in [`TONEMAP_WGSL`].
    #[must_use]
    pub fn wgsl_name(self) -> &'static str {
        match self {
            Self::PbrNeutral => "TONEMAP_PBR_NEUTRAL",
            Self::Agx => "TONEMAP_AGX",
            Self::AcesHill => "TONEMAP_ACES_HILL",
            Self::None => "TONEMAP_NONE",
        }
    }
}

/// `linear` scaled by `2^exposure_ev`, then `mapper`: linear display RGB in [0, 1].
#[must_use]
pub fn tonemap(linear: [f32; 3], mapper: ToneMapper, exposure_ev: f32) -> [f32; 3] {
    let scale = exposure_ev.exp2();
    let color = linear.map(|c| c * scale);
    match mapper {
        ToneMapper::PbrNeutral => tonemap_pbr_neutral(color),
        ToneMapper::Agx => tonemap_agx(color),
        ToneMapper::AcesHill => tonemap_aces_hill(color),
        ToneMapper::None => tonemap_none(color),
    }
}

/// Khronos PBR Neutral of `color_in` (negative channels read as 0).
#[must_use]
pub fn tonemap_pbr_neutral(color_in: [f32; 3]) -> [f32; 3] {
    let mut color = color_in.map(|c| c.max(0.0));
    let x = color[0].min(color[1].min(color[2]));
    let offset = if x < 0.08 { x - 6.25 * x * x } else { 0.04 };
    color = color.map(|c| c - offset);
    let peak = color[0].max(color[1].max(color[2]));
    if peak < PBR_NEUTRAL_START_COMPRESSION {
        return clamp01(color);
    }
    let d = 1.0 - PBR_NEUTRAL_START_COMPRESSION;
    let new_peak = 1.0 - d * d / (peak + d - PBR_NEUTRAL_START_COMPRESSION);
    color = color.map(|c| c * (new_peak / peak));
    let g = 1.0 - 1.0 / (PBR_NEUTRAL_DESATURATION * (peak - new_peak) + 1.0);
    clamp01(color.map(|c| mix(c, new_peak, g)))
}

/// Minimal `AgX`'s sigmoid, `15.5x⁶ − 40.14x⁵ + 31.96x⁴ − 6.868x³ + 0.4298x² + 0.1191x − 0.00232`,
/// in Horner form (the monomial sum cancels terms up to 40 into a value near 1 and lost up to
/// 1e-5 to rounding, which the CPU and a GPU do differently).
fn agx_contrast(x: f32) -> f32 {
    (((((15.5 * x - 40.14) * x + 31.96) * x - 6.868) * x + 0.4298) * x + 0.1191) * x - 0.00232
}

/// Minimal `AgX` of `color_in` (negative channels read as 0).
#[must_use]
pub fn tonemap_agx(color_in: [f32; 3]) -> [f32; 3] {
    let v = mul(&AGX_INSET, color_in.map(|c| c.max(0.0)));
    let v = v.map(|c| {
        let ev = c.max(1e-10).log2().clamp(AGX_MIN_EV, AGX_MAX_EV);
        agx_contrast((ev - AGX_MIN_EV) / (AGX_MAX_EV - AGX_MIN_EV))
    });
    mul(&AGX_OUTSET, v).map(|c| c.clamp(0.0, 1.0).powf(2.2))
}

/// The RRT and ODT fit of ACES (Hill): `(v(v + 0.0245786) − 0.000090537) / (v(0.983729v +
/// 0.4329510) + 0.238081)`.
fn rrt_and_odt_fit(v: f32) -> f32 {
    let a = v * (v + 0.024_578_6) - 0.000_090_537;
    let b = v * (0.983_729 * v + 0.432_951) + 0.238_081;
    a / b
}

/// ACES fitted by Stephen Hill, of `color_in` (negative channels read as 0).
#[must_use]
pub fn tonemap_aces_hill(color_in: [f32; 3]) -> [f32; 3] {
    let v = mul(&ACES_IN, color_in.map(|c| c.max(0.0))).map(rrt_and_odt_fit);
    clamp01(mul(&ACES_OUT, v))
}

/// No tone mapping: `color_in` clamped to [0, 1].
#[must_use]
pub fn tonemap_none(color_in: [f32; 3]) -> [f32; 3] {
    clamp01(color_in)
}

/// `m · v` for a matrix given as rows, each row summed left to right (as WGSL's column-major
/// `M * v` sums its columns).
fn mul(m: &[[f32; 3]; 3], v: [f32; 3]) -> [f32; 3] {
    m.map(|row| row[0] * v[0] + row[1] * v[1] + row[2] * v[2])
}

/// WGSL's `mix(a, b, t)`: `a·(1 − t) + b·t`.
fn mix(a: f32, b: f32, t: f32) -> f32 {
    a * (1.0 - t) + b * t
}

/// Each channel clamped to [0, 1].
fn clamp01(c: [f32; 3]) -> [f32; 3] {
    c.map(|v| v.clamp(0.0, 1.0))
}
