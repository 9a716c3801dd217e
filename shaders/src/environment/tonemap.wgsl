// Tone mapping: linear scene RGB in, linear display RGB in [0, 1] out (encode as sRGB after).
// The CPU twin is shaders/src/environment/tonemap.rs (`TONEMAP_WGSL`): the same functions under
// the same names, in the same order of operations; the ids below are `ToneMapper::wgsl_id`.
// Sources: Khronos PBR Neutral (KhronosGroup/ToneMapping, PBR_Neutral), minimal AgX (B. Wrensch
// after T. Sobotka's AgX), ACES fitted by Stephen Hill (BakingLab).

const TONEMAP_PBR_NEUTRAL: u32 = 0u;
const TONEMAP_AGX: u32 = 1u;
const TONEMAP_ACES_HILL: u32 = 2u;
const TONEMAP_NONE: u32 = 3u;

// Khronos PBR Neutral: the start of highlight compression and the desaturation speed.
const PBR_NEUTRAL_START_COMPRESSION: f32 = 0.76;
const PBR_NEUTRAL_DESATURATION: f32 = 0.15;
// Minimal AgX: the log2 range mapped to [0, 1].
const AGX_MIN_EV: f32 = -12.47393;
const AGX_MAX_EV: f32 = 4.026069;

fn tonemap_pbr_neutral(color_in: vec3<f32>) -> vec3<f32> {
    var color = max(color_in, vec3<f32>(0.0));
    let x = min(color.r, min(color.g, color.b));
    var offset = 0.04;
    if x < 0.08 {
        offset = x - 6.25 * x * x;
    }
    color = color - offset;
    let peak = max(color.r, max(color.g, color.b));
    if peak < PBR_NEUTRAL_START_COMPRESSION {
        return clamp(color, vec3<f32>(0.0), vec3<f32>(1.0));
    }
    let d = 1.0 - PBR_NEUTRAL_START_COMPRESSION;
    let new_peak = 1.0 - d * d / (peak + d - PBR_NEUTRAL_START_COMPRESSION);
    color = color * (new_peak / peak);
    let g = 1.0 - 1.0 / (PBR_NEUTRAL_DESATURATION * (peak - new_peak) + 1.0);
    return clamp(mix(color, vec3<f32>(new_peak), g), vec3<f32>(0.0), vec3<f32>(1.0));
}

// The sigmoid 15.5x^6 - 40.14x^5 + 31.96x^4 - 6.868x^3 + 0.4298x^2 + 0.1191x - 0.00232, in
// Horner form: the monomial sum cancels terms up to 40 into a value near 1, and lost up to 1e-5
// to rounding that the CPU and GPU round differently.
fn agx_contrast(x: vec3<f32>) -> vec3<f32> {
    return (((((15.5 * x - 40.14) * x + 31.96) * x - 6.868) * x + 0.4298) * x + 0.1191) * x - 0.00232;
}

fn tonemap_agx(color_in: vec3<f32>) -> vec3<f32> {
    // Columns (the CPU twin writes the same matrices as rows).
    let inset = mat3x3<f32>(
        vec3<f32>(0.842479062253094, 0.0423282422610123, 0.0423756549057051),
        vec3<f32>(0.0784335999999992, 0.878468636469772, 0.0784336),
        vec3<f32>(0.0792237451477643, 0.0791661274605434, 0.879142973793104),
    );
    let outset = mat3x3<f32>(
        vec3<f32>(1.19687900512017, -0.0528968517574562, -0.0529716355144438),
        vec3<f32>(-0.0980208811401368, 1.15190312990417, -0.0980434501171241),
        vec3<f32>(-0.0990297440797205, -0.0989611768448433, 1.15107367264116),
    );
    var v = inset * max(color_in, vec3<f32>(0.0));
    v = clamp(log2(max(v, vec3<f32>(1e-10))), vec3<f32>(AGX_MIN_EV), vec3<f32>(AGX_MAX_EV));
    v = (v - AGX_MIN_EV) / (AGX_MAX_EV - AGX_MIN_EV);
    v = agx_contrast(v);
    v = outset * v;
    return pow(clamp(v, vec3<f32>(0.0), vec3<f32>(1.0)), vec3<f32>(2.2));
}

fn rrt_and_odt_fit(v: vec3<f32>) -> vec3<f32> {
    let a = v * (v + 0.0245786) - 0.000090537;
    let b = v * (0.983729 * v + 0.4329510) + 0.238081;
    return a / b;
}

fn tonemap_aces_hill(color_in: vec3<f32>) -> vec3<f32> {
    // Columns: sRGB -> XYZ -> D65 to D60 -> AP1 -> RRT_SAT, and ODT_SAT -> XYZ -> D60 to D65 -> sRGB.
    let aces_in = mat3x3<f32>(
        vec3<f32>(0.59719, 0.07600, 0.02840),
        vec3<f32>(0.35458, 0.90834, 0.13383),
        vec3<f32>(0.04823, 0.01566, 0.83777),
    );
    let aces_out = mat3x3<f32>(
        vec3<f32>(1.60475, -0.10208, -0.00327),
        vec3<f32>(-0.53108, 1.10813, -0.07276),
        vec3<f32>(-0.07367, -0.00605, 1.07602),
    );
    var v = aces_in * max(color_in, vec3<f32>(0.0));
    v = rrt_and_odt_fit(v);
    v = aces_out * v;
    return clamp(v, vec3<f32>(0.0), vec3<f32>(1.0));
}

fn tonemap_none(color_in: vec3<f32>) -> vec3<f32> {
    return clamp(color_in, vec3<f32>(0.0), vec3<f32>(1.0));
}

// `linear` scaled by 2^exposure_ev, then the tone mapper `mapper` (a TONEMAP_* id; others read as
// PBR Neutral).
fn tonemap(linear: vec3<f32>, mapper: u32, exposure_ev: f32) -> vec3<f32> {
    let color = linear * exp2(exposure_ev);
    switch mapper {
        case TONEMAP_AGX: {
            return tonemap_agx(color);
        }
        case TONEMAP_ACES_HILL: {
            return tonemap_aces_hill(color);
        }
        case TONEMAP_NONE: {
            return tonemap_none(color);
        }
        default: {
            return tonemap_pbr_neutral(color);
        }
    }
}
