//! `texset render`: the studio's viewport, headless (`texset::render`), written as a PNG.

use anyhow::{Result, bail};
use std::path::PathBuf;
use texset::render::{RenderRequest, RenderSide, render};
use texset_core::{io::write_atomic, set::MapKind};
use texset_shaders::environment::ToneMapper;
use texset_shaders::preview::{Background, Lighting, Shape, ViewMode};

// `texset render`.
#[derive(clap::Args)]
pub(super) struct RenderArgs {
    /// A glTF 2.0 asset (`.gltf`, `.glb`: drawn on its meshes) or a material folder (on a shape).
    asset: PathBuf,
    /// A bundle of the asset's library: its material decoded in the shader (default: the original
    /// maps).
    #[arg(long)]
    bundle: Option<PathBuf>,
    /// The material shown, by name (default: the first). Meshes of other materials are clay.
    #[arg(long)]
    material: Option<String>,
    /// Draw on a shape instead of the asset's meshes.
    #[arg(long, value_enum)]
    shape: Option<ShapeArg>,
    /// An equirectangular `.hdr` or `.exr` environment (default: the procedural studio).
    #[arg(long)]
    env: Option<PathBuf>,
    /// Exposure, EV.
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    exposure: f32,
    /// The tone mapper.
    #[arg(long, value_enum, default_value_t = ToneMapArg::PbrNeutral)]
    tonemap: ToneMapArg,
    /// What shows behind the asset.
    #[arg(long, value_enum, default_value_t = BackgroundArg::Blurred)]
    background: BackgroundArg,
    /// The environment's rotation about the vertical, degrees.
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    rotation: f32,
    /// Add the two point lights to the environment's light.
    #[arg(long)]
    point_lights: bool,
    /// Lit, one channel unlit as the decoded (or original) maps hold it, an inspection aid (uv,
    /// checker, mip), or the per-texel error against the original maps on a heat ramp.
    #[arg(long, value_enum, default_value_t = ViewArg::Lit)]
    view: ViewArg,
    /// The error view's map, by kind (`basecolor`, `normal`, `orm`, …; default: every map,
    /// pooled).
    #[arg(long)]
    error_map: Option<String>,
    /// The error view's top of the ramp: the mean |shown − original| a texel (stored values,
    /// 0..1) that reads as red.
    #[arg(long, default_value_t = texset_shaders::preview::DEFAULT_ERROR_FULL_SCALE)]
    error_scale: f32,
    /// Compare two sides through one camera as a wipe, `LEFT,RIGHT` of `original`, `decoded`
    /// (needs --bundle) and `bcn` (the maps block-compressed as engines ship them), e.g.
    /// `decoded,original`.
    #[arg(long)]
    ab: Option<String>,
    /// Where the wipe divides the image, a fraction of its width from the left.
    #[arg(long, default_value_t = 0.5)]
    split: f32,
    /// Instead of the wipe, FLIP (NVIDIA's perceptual difference) of its right side against its
    /// left, each drawn whole, as shown: black where they look the same, yellow where most
    /// different (magma). Needs --ab; the mean is printed.
    #[arg(long, requires = "ab")]
    flip: bool,
    /// Draw a turntable of N frames (the camera turns a full circle about the vertical), written
    /// as OUT with `_000`, `_001`, … before its extension.
    #[arg(long, value_name = "N")]
    turntable: Option<u32>,
    /// The camera: yaw and pitch in degrees about what it frames, and (optionally) its distance
    /// as a multiple of the framing one, e.g. `30,15` or `30,15,0.5`.
    #[arg(long, default_value = "30,15", allow_hyphen_values = true)]
    camera: String,
    /// Image size, `WIDTHxHEIGHT` pixels.
    #[arg(long, default_value = "1024x768")]
    size: String,
    /// Time the frame on the GPU: after drawing the image written, draw it N times again, each
    /// pass timed by timestamp queries (the adapter must have them), and print the GPU time per
    /// frame and per pass (surface, material, shading): median, fastest and slowest.
    #[arg(long, value_name = "N", conflicts_with = "flip")]
    gpu_time: Option<u32>,
    /// The PNG written (atomically).
    #[arg(short, long)]
    output: PathBuf,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ShapeArg {
    Sphere,
    Plane,
    Cube,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ToneMapArg {
    PbrNeutral,
    Agx,
    Aces,
    None,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ViewArg {
    Lit,
    Basecolor,
    Normal,
    Roughness,
    Metallic,
    Ao,
    Height,
    Emissive,
    Uv,
    Checker,
    Mip,
    Error,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum BackgroundArg {
    Environment,
    Blurred,
    Grey,
}

impl RenderArgs {
    pub(super) fn run(self) -> Result<()> {
        let size = parse_size(&self.size)?;
        let camera = parse_camera(&self.camera)?;
        let lighting = Lighting {
            environment: true,
            point_lights: self.point_lights,
            exposure_ev: self.exposure,
            tone_mapper: match self.tonemap {
                ToneMapArg::PbrNeutral => ToneMapper::PbrNeutral,
                ToneMapArg::Agx => ToneMapper::Agx,
                ToneMapArg::Aces => ToneMapper::AcesHill,
                ToneMapArg::None => ToneMapper::None,
            },
            rotation_rad: self.rotation.to_radians(),
            background: match self.background {
                BackgroundArg::Environment => Background::Environment,
                BackgroundArg::Blurred => Background::Blurred,
                BackgroundArg::Grey => Background::Solid([0.18; 3]),
            },
            view: match self.view {
                ViewArg::Lit => ViewMode::Lit,
                ViewArg::Basecolor => ViewMode::BaseColor,
                ViewArg::Normal => ViewMode::Normal,
                ViewArg::Roughness => ViewMode::Roughness,
                ViewArg::Metallic => ViewMode::Metallic,
                ViewArg::Ao => ViewMode::Occlusion,
                ViewArg::Height => ViewMode::Height,
                ViewArg::Emissive => ViewMode::Emissive,
                ViewArg::Uv => ViewMode::Uv,
                ViewArg::Checker => ViewMode::Checker,
                ViewArg::Mip => ViewMode::MipLevel,
                ViewArg::Error => ViewMode::Error,
            },
            error_full_scale: if self.error_scale.is_finite() && self.error_scale > 0.0 {
                self.error_scale
            } else {
                bail!("--error-scale {}: a mean error above 0 (stored values, 0..1)", self.error_scale)
            },
        };
        let error_map = self.error_map.as_deref().map(parse_map_kind).transpose()?;
        let ab = self.ab.as_deref().map(parse_sides).transpose()?.map(|sides| (sides, self.split));
        if !(0.0..=1.0).contains(&self.split) {
            bail!("--split {}: a fraction of the width, 0 to 1", self.split);
        }
        let request = RenderRequest {
            asset: self.asset,
            bundle: self.bundle,
            material: self.material,
            shape: self.shape.map(|s| match s {
                ShapeArg::Sphere => Shape::Sphere,
                ShapeArg::Plane => Shape::Plane,
                ShapeArg::Cube => Shape::Cube,
            }),
            environment: self.env,
            lighting,
            error_map,
            ab,
            camera,
            frames: self.turntable.unwrap_or(1),
            size,
            flip: self.flip,
            gpu_time: self.gpu_time,
        };
        let image = render(&request)?;
        if let Some(report) = gpu_time_report(&image.gpu_times) {
            eprintln!("GPU time at {}x{} on {}: {report}", image.size[0], image.size[1], image.adapter);
        }
        for (i, rgba) in image.frames.iter().enumerate() {
            let path = if self.turntable.is_some() { frame_path(&self.output, i) } else { self.output.clone() };
            let mut png = Vec::new();
            image::ImageEncoder::write_image(
                image::codecs::png::PngEncoder::new(&mut png),
                rgba,
                image.size[0],
                image.size[1],
                image::ExtendedColorType::Rgba8,
            )?;
            write_atomic(&path, &png)?;
            eprintln!("wrote {} ({}x{}): {}", path.display(), image.size[0], image.size[1], image.description);
        }
        Ok(())
    }
}

/// The GPU time of the timed drawings, in words (`None`: none timed): the frame's median, fastest
/// and slowest, then each pass's median.
fn gpu_time_report(times: &[texset_shaders::preview::PassTimes]) -> Option<String> {
    if times.is_empty() {
        return None;
    }
    let frame: Vec<f64> = times.iter().map(|t| t.frame_ms).collect();
    let (fastest, slowest) = frame.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &ms| (lo.min(ms), hi.max(ms)));
    let passes: Vec<String> = texset_shaders::preview::PASSES
        .iter()
        .enumerate()
        .map(|(i, name)| format!("{name} {:.3}", super::bench::median(times.iter().map(|t| t.pass_ms[i]).collect())))
        .collect();
    Some(format!(
        "frame {:.3} ms median of {} (fastest {fastest:.3}, slowest {slowest:.3}); passes, medians: {} ms",
        super::bench::median(frame),
        times.len(),
        passes.join(", ")
    ))
}

/// Frame `i` of a turntable written to `output`: `_000` and so on before its extension.
fn frame_path(output: &std::path::Path, i: usize) -> PathBuf {
    let stem = output.file_stem().map_or_else(|| "frame".into(), |s| s.to_string_lossy().into_owned());
    let name = match output.extension() {
        Some(ext) => format!("{stem}_{i:03}.{}", ext.to_string_lossy()),
        None => format!("{stem}_{i:03}"),
    };
    output.with_file_name(name)
}

/// `LEFT,RIGHT` sides of a wipe.
fn parse_sides(text: &str) -> Result<[RenderSide; 2]> {
    let side = |s: &str| match s.trim() {
        "original" => Some(RenderSide::Original),
        "decoded" => Some(RenderSide::Decoded),
        "bcn" => Some(RenderSide::Bcn),
        _ => None,
    };
    match text.split_once(',').and_then(|(l, r)| Some([side(l)?, side(r)?])) {
        Some(sides) => Ok(sides),
        None => bail!("--ab {text:?}: expected LEFT,RIGHT of original, decoded and bcn, e.g. decoded,original"),
    }
}

/// A map kind by the name texset gives it (`basecolor`, `normal`, …).
fn parse_map_kind(text: &str) -> Result<MapKind> {
    if let Some(kind) = MapKind::ALL.into_iter().find(|k| k.to_string().eq_ignore_ascii_case(text.trim())) {
        return Ok(kind);
    }
    let names: Vec<String> = MapKind::ALL.iter().map(ToString::to_string).collect();
    bail!("--error-map {text:?}: not a map kind (one of {})", names.join(", "))
}

/// `WIDTHxHEIGHT`.
fn parse_size(text: &str) -> Result<[u32; 2]> {
    let parsed = text.split_once(['x', 'X']).and_then(|(w, h)| Some([w.trim().parse().ok()?, h.trim().parse().ok()?]));
    match parsed {
        Some(size) => Ok(size),
        None => bail!("--size {text:?}: expected WIDTHxHEIGHT, e.g. 1024x768"),
    }
}

/// `YAW,PITCH[,DISTANCE]`.
fn parse_camera(text: &str) -> Result<[f32; 3]> {
    let values: Option<Vec<f32>> = text.split(',').map(|v| v.trim().parse().ok().filter(|x: &f32| x.is_finite())).collect();
    match values.as_deref() {
        Some(&[yaw, pitch]) => Ok([yaw, pitch, 1.0]),
        Some(&[yaw, pitch, distance]) if distance > 0.0 => Ok([yaw, pitch, distance]),
        _ => bail!("--camera {text:?}: expected YAW,PITCH or YAW,PITCH,DISTANCE (degrees; distance > 0), e.g. 30,15"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::float_cmp)]
    use super::*;

    #[test]
    fn sizes_and_cameras_parse_or_are_refused_by_name() {
        assert_eq!(parse_size("640x480").unwrap(), [640, 480]);
        assert!(parse_size("640").unwrap_err().to_string().contains("WIDTHxHEIGHT"));
        assert_eq!(parse_camera("30,-15").unwrap(), [30.0, -15.0, 1.0]);
        assert_eq!(parse_camera("0,0,0.5").unwrap(), [0.0, 0.0, 0.5]);
        for bad in ["30", "a,b", "1,2,0", "1,2,3,4", "nan,1"] {
            assert!(parse_camera(bad).unwrap_err().to_string().contains("--camera"), "{bad}");
        }
    }

    #[test]
    fn sides_map_kinds_and_frame_names_parse_or_are_refused_by_name() {
        assert_eq!(parse_sides("decoded, bcn").unwrap(), [RenderSide::Decoded, RenderSide::Bcn]);
        for bad in ["decoded", "decoded,run", ","] {
            assert!(parse_sides(bad).unwrap_err().to_string().contains("--ab"), "{bad}");
        }
        assert_eq!(parse_map_kind("Normal").unwrap(), MapKind::Normal);
        assert!(parse_map_kind("albedo2").unwrap_err().to_string().contains("basecolor"));
        assert_eq!(frame_path(std::path::Path::new("/tmp/shoe.png"), 7), PathBuf::from("/tmp/shoe_007.png"));
        assert_eq!(frame_path(std::path::Path::new("shoe"), 12), PathBuf::from("shoe_012"));
    }

    #[test]
    fn gpu_time_reports_the_frames_median_extremes_and_each_pass() {
        use texset_shaders::preview::PassTimes;
        assert_eq!(gpu_time_report(&[]), None);
        let times = [2.0, 6.0, 4.0].map(|ms| PassTimes { pass_ms: [ms / 4.0, ms / 2.0, ms / 8.0], frame_ms: ms });
        assert_eq!(
            gpu_time_report(&times).unwrap(),
            "frame 4.000 ms median of 3 (fastest 2.000, slowest 6.000); passes, medians: surface 1.000, material 2.000, shading 0.500 ms"
        );
    }
}
