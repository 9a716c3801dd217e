//! `texset render`: the studio's viewport, headless (`texset::render`), written as a PNG.

use anyhow::{Result, bail};
use std::path::PathBuf;
use texset::render::{RenderRequest, render};
use texset_core::io::write_atomic;
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
    /// Lit, or one channel unlit, as the decoded (or original) maps hold it.
    #[arg(long, value_enum, default_value_t = ViewArg::Lit)]
    view: ViewArg,
    /// The camera: yaw and pitch in degrees about what it frames, and (optionally) its distance
    /// as a multiple of the framing one, e.g. `30,15` or `30,15,0.5`.
    #[arg(long, default_value = "30,15", allow_hyphen_values = true)]
    camera: String,
    /// Image size, `WIDTHxHEIGHT` pixels.
    #[arg(long, default_value = "1024x768")]
    size: String,
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
    Emissive,
    Uv,
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
                ViewArg::Emissive => ViewMode::Emissive,
                ViewArg::Uv => ViewMode::Uv,
            },
        };
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
            camera,
            size,
        };
        let image = render(&request)?;
        let mut png = Vec::new();
        image::ImageEncoder::write_image(
            image::codecs::png::PngEncoder::new(&mut png),
            &image.rgba,
            image.size[0],
            image.size[1],
            image::ExtendedColorType::Rgba8,
        )?;
        write_atomic(&self.output, &png)?;
        eprintln!("wrote {} ({}x{}): {}", self.output.display(), image.size[0], image.size[1], image.description);
        Ok(())
    }
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
}
