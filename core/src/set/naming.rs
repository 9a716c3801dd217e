//! Map kinds from file names: the conventions of Substance, Poly Haven, ambientCG and glTF exports.

use crate::set::MapKind;
#[cfg(feature = "ingest")]
use crate::set::NormalConvention;

/// Checks that a material name is safe as a single path component (decode writes
/// `<dir>/<name>/<name>_<map>.png`): non-empty, at most 255 bytes, no separators, NUL or control
/// characters, not `.` or `..`.
pub fn check_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() || name.len() > super::limits::MAX_NAME_BYTES {
        return Err("must be 1 to 255 bytes long");
    }
    if name == "." || name == ".." {
        return Err("must not be '.' or '..'");
    }
    if name.chars().any(|c| c == '/' || c == '\\' || c == ':' || c.is_control()) {
        return Err("must not contain '/', '\\', ':' or control characters");
    }
    Ok(())
}

/// What a file name says about a map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg(feature = "ingest")]
pub(crate) struct NameInfo {
    /// The map kind.
    pub kind: MapKind,
    /// The normal convention the name states (`nor_dx`, `NormalDX`), if any.
    pub normal_convention: Option<NormalConvention>,
}

/// Maps one lower-case token (or two tokens joined without separator) to a kind.
#[must_use]
pub(crate) fn kind_from_token(token: &str) -> Option<MapKind> {
    Some(match token {
        "basecolor" | "basecolour" | "albedo" | "diffuse" | "diff" | "color" | "colour" | "col" => MapKind::Basecolor,
        "normal" | "normals" | "nrm" | "nor" | "normalgl" | "normaldx" | "norgl" | "nordx" | "normalmap" => MapKind::Normal,
        "roughness" | "rough" => MapKind::Roughness,
        "metallic" | "metalness" | "metal" => MapKind::Metallic,
        "ao" | "occlusion" | "ambientocclusion" => MapKind::Ao,
        "height" | "displacement" | "disp" | "heightmap" => MapKind::Height,
        "emissive" | "emission" => MapKind::Emissive,
        "opacity" | "alpha" => MapKind::Opacity,
        "orm"
        | "arm"
        | "metallicroughness"
        | "occlusionroughnessmetallic"
        | "occlusionroughnessmetalness"
        | "occlusionrougnessmetalness" => MapKind::Orm,
        _ => return None,
    })
}

#[cfg(feature = "ingest")]
fn convention_from_token(token: &str) -> Option<NormalConvention> {
    match token {
        "gl" | "normalgl" | "norgl" | "opengl" => Some(NormalConvention::OpenGl),
        "dx" | "normaldx" | "nordx" | "directx" => Some(NormalConvention::DirectX),
        _ => None,
    }
}

/// A trailing token that names a resolution or file variant rather than a map (`1k`, `2048`, `png`).
#[cfg(feature = "ingest")]
fn is_noise_token(token: &str) -> bool {
    let digits = token.trim_end_matches('k');
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        || matches!(token, "png" | "jpg" | "jpeg" | "exr" | "tga" | "map" | "tex" | "texture")
}

/// Lower-case tokens of a file stem, split on `_`, `-`, `.`, space and camelCase boundaries
/// (`baseColor` → `base`, `color`).
#[cfg(feature = "ingest")]
fn tokens(stem: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for ch in stem.chars() {
        if matches!(ch, '_' | '-' | '.' | ' ') {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if ch.is_ascii_uppercase() && previous_lower && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        previous_lower = ch.is_ascii_lowercase() || ch.is_ascii_digit();
        current.push(ch.to_ascii_lowercase());
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Tells the map kind from a file stem (`wall_nor_gl_1k` → normal, OpenGL), or `None` when the
/// name does not say. Looks at the last tokens only, longest match first, ignoring trailing
/// resolution tokens.
#[must_use]
#[cfg(feature = "ingest")]
pub(crate) fn parse_map_name(stem: &str) -> Option<NameInfo> {
    let mut toks = tokens(stem);
    while toks.last().is_some_and(|t| is_noise_token(t)) {
        toks.pop();
    }
    let n = toks.len();
    // Up to four trailing tokens joined: `occlusion_roughness_metallic`, `ambient_occlusion`,
    // `base_color`, `nor_gl`.
    for take in (1..=n.min(4)).rev() {
        let joined: String = toks[n - take..].concat();
        if let Some(kind) = kind_from_token(&joined) {
            let normal_convention = if kind == MapKind::Normal { convention_from_token(&joined) } else { None };
            return Some(NameInfo { kind, normal_convention });
        }
        // `nor_gl`, `normal_dx`: a convention suffix after a normal token.
        if take == 2
            && let (Some(MapKind::Normal), Some(conv)) = (kind_from_token(&toks[n - 2]), convention_from_token(&toks[n - 1]))
        {
            return Some(NameInfo { kind: MapKind::Normal, normal_convention: Some(conv) });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(stem: &str) -> Option<MapKind> {
        parse_map_name(stem).map(|i| i.kind)
    }

    #[test]
    fn common_conventions() {
        assert_eq!(kind("tea_set_01_diff_1k"), Some(MapKind::Basecolor));
        assert_eq!(kind("tea_set_01_arm_1k"), Some(MapKind::Orm));
        assert_eq!(kind("Bricks059_1K-PNG_Color"), Some(MapKind::Basecolor));
        assert_eq!(kind("Bricks059_1K-PNG_AmbientOcclusion"), Some(MapKind::Ao));
        assert_eq!(kind("Bricks059_1K-PNG_Displacement"), Some(MapKind::Height));
        assert_eq!(kind("Bricks059_1K-PNG_Metalness"), Some(MapKind::Metallic));
        assert_eq!(kind("Shoe_baseColor"), Some(MapKind::Basecolor));
        assert_eq!(kind("Shoe_metallicRoughness"), Some(MapKind::Orm));
        assert_eq!(kind("occlusionRougnessMetalness"), Some(MapKind::Orm));
        assert_eq!(kind("wall_base_color"), Some(MapKind::Basecolor));
        assert_eq!(kind("wall_albedo"), Some(MapKind::Basecolor));
        assert_eq!(kind("x_rough"), Some(MapKind::Roughness));
        assert_eq!(kind("x_Emission"), Some(MapKind::Emissive));
        assert_eq!(kind("x_alpha"), Some(MapKind::Opacity));
        assert_eq!(kind("x_preview"), None);
        assert_eq!(kind("readme"), None);
    }

    #[test]
    fn normal_conventions() {
        let gl = parse_map_name("rock_nor_gl_2k").expect("normal");
        assert_eq!(gl.kind, MapKind::Normal);
        assert_eq!(gl.normal_convention, Some(NormalConvention::OpenGl));
        let dx = parse_map_name("rock_nor_dx_2k").expect("normal");
        assert_eq!(dx.normal_convention, Some(NormalConvention::DirectX));
        let dx2 = parse_map_name("Rock_1K_NormalDX").expect("normal");
        assert_eq!(dx2.normal_convention, Some(NormalConvention::DirectX));
        let plain = parse_map_name("rock_normal").expect("normal");
        assert_eq!(plain.normal_convention, None);
    }
}

/// Why `name` cannot be a file name on Windows (`None`: it can): a reserved device name (`CON`,
/// `PRN`, `AUX`, `NUL`, `COM0`–`COM9`, `LPT0`–`LPT9`, in any case and with any extension), a
/// trailing dot or space, or one of `<>"|?*`. Bundles and decoded maps are named after their
/// material, so a library that must build on every platform refuses these at compress time.
#[must_use]
#[cfg(feature = "ingest")]
pub(crate) fn unportable(name: &str) -> Option<&'static str> {
    if name.chars().any(|c| matches!(c, '<' | '>' | '"' | '|' | '?' | '*')) {
        return Some("holds one of < > \" | ? *");
    }
    if name.ends_with('.') || name.ends_with(' ') {
        return Some("ends in a dot or a space");
    }
    let stem = name.split('.').next().unwrap_or(name).trim_end().to_ascii_uppercase();
    let device = matches!(stem.as_str(), "CON" | "PRN" | "AUX" | "NUL")
        || (stem.len() == 4 && (stem.starts_with("COM") || stem.starts_with("LPT")) && stem.as_bytes()[3].is_ascii_digit());
    device.then_some("is a device name Windows reserves")
}

#[cfg(all(test, feature = "ingest"))]
mod portable_tests {
    use super::unportable;

    #[test]
    fn windows_reserved_names_are_unportable() {
        for bad in ["CON", "con", "Nul.png", "com1", "LPT9.tar.gz", "aux ", "wood.", "a<b", "what?", "x|y", "star*"] {
            assert!(unportable(bad).is_some(), "{bad}");
        }
        for good in ["wood", "console", "comb", "COM10", "lpt", "nul_map", "painted_wooden_cabinet", "a.b"] {
            assert_eq!(unportable(good), None, "{good}");
        }
    }
}
