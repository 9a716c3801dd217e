//! How the preview's shading pass lights: [`Lighting`] (environment or point lights, exposure,
//! tone mapper, rotation, background: the `Lighting` uniform of `preview_shade.wgsl`) and the
//! prepared environment on the GPU ([`EnvironmentTextures`]: the specular cube as a mip chain, the
//! split-sum table, a linear sampler).

use crate::environment::{PreparedEnvironment, ToneMapper};
use crate::{GpuError, check_device_limit, to_u32};

/// Bytes of the `Lighting` uniform (nine SH `vec4`s and four more).
pub(super) const LIGHTING_BYTES: u64 = 13 * 16;

/// What the shading pass shows: the material lit, one of its channels unlit (Substance's
/// "solo", glTF Sample Viewer's debug views), as the G-buffer holds it after un-mapping, or an
/// inspection aid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ViewMode {
    /// Lit.
    #[default]
    Lit,
    /// Base colour, sRGB-encoded for display.
    BaseColor,
    /// The tangent-space normal as a normal map stores it (`n · 0.5 + 0.5`).
    Normal,
    /// Roughness, as stored (grey).
    Roughness,
    /// Metallic, as stored (grey).
    Metallic,
    /// Ambient occlusion, as stored (grey).
    Occlusion,
    /// The height map as stored (grey); the material pass writes it ([`super::Probe::Height`]).
    Height,
    /// Emissive, sRGB-encoded.
    Emissive,
    /// The texture coordinates (fractional part) in red and green.
    Uv,
    /// A UV checker: 8 × 8 coloured cells a tile.
    Checker,
    /// The mip level a pixel reads of the material's largest map, on the heat ramp: mip −1
    /// (magnified) at the bottom, 4 at the top. Shows texel density too: 0 is a texel a pixel.
    MipLevel,
    /// The per-texel error against the original maps on the heat ramp ([`HEAT_RAMP`], its top at
    /// [`Lighting::error_full_scale`]); the material pass writes it ([`super::Probe::Error`]).
    Error,
}

impl ViewMode {
    /// Every view, in the order `C` cycles them (`Lit` first).
    pub const ALL: [Self; 12] = [
        Self::Lit,
        Self::BaseColor,
        Self::Normal,
        Self::Roughness,
        Self::Metallic,
        Self::Occlusion,
        Self::Height,
        Self::Emissive,
        Self::Uv,
        Self::Checker,
        Self::MipLevel,
        Self::Error,
    ];

    /// The id `preview_shade.wgsl` reads (`Lighting::view.x`).
    #[must_use]
    pub fn wgsl_id(self) -> u32 {
        Self::ALL.iter().position(|&v| v == self).unwrap_or(0) as u32
    }

    /// The next view `C` shows.
    #[must_use]
    pub fn next(self) -> Self {
        Self::ALL[(self.wgsl_id() as usize + 1) % Self::ALL.len()]
    }

    /// Its name, lower case.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Lit => "lit",
            Self::BaseColor => "base colour",
            Self::Normal => "normal",
            Self::Roughness => "roughness",
            Self::Metallic => "metallic",
            Self::Occlusion => "occlusion",
            Self::Height => "height",
            Self::Emissive => "emissive",
            Self::Uv => "uv",
            Self::Checker => "uv checker",
            Self::MipLevel => "mip level",
            Self::Error => "error",
        }
    }

    /// What the material pass must write for this view: the error of `error_map` (`None`:
    /// pooled) against the reference `reference_offset` layers on in the side's texture, the
    /// height, or the material.
    #[must_use]
    pub fn probe(self, error_map: Option<texset_core::set::MapKind>, reference_offset: u32) -> super::Probe {
        match self {
            Self::Error => super::Probe::Error { map: error_map, reference_offset },
            Self::Height => super::Probe::Height,
            _ => super::Probe::Material,
        }
    }
}

/// The heat ramp of the error and mip views (`heat` in `preview_shade.wgsl`; keep them in step:
/// the views' GPU-against-CPU test compares them): display colours at 0, ¼, ½, ¾ and 1,
/// linearly between.
pub const HEAT_RAMP: [[f32; 3]; 5] = [[0.05, 0.03, 0.20], [0.10, 0.35, 0.85], [0.15, 0.80, 0.55], [0.95, 0.80, 0.15], [0.85, 0.10, 0.05]];

/// [`HEAT_RAMP`] at `t` (clamped to 0..1).
#[must_use]
pub fn heat(t: f32) -> [f32; 3] {
    let x = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) * 4.0 };
    let i = (x as usize).min(3);
    let f = x - i as f32;
    std::array::from_fn(|c| HEAT_RAMP[i][c] + (HEAT_RAMP[i + 1][c] - HEAT_RAMP[i][c]) * f)
}

/// The error view's top of the ramp by default: a mean error of 5 % of the stored range.
pub const DEFAULT_ERROR_FULL_SCALE: f32 = 0.05;

/// What a channel view shows off the surface: a dark linear grey.
pub(super) const CHANNEL_BACKGROUND: f32 = 0.1;

/// What a pixel off the surface shows when the environment lights.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Background {
    /// The environment itself, sharp.
    Environment,
    /// The environment blurred (the specular cube at a rough level).
    Blurred,
    /// A solid linear colour.
    Solid([f32; 3]),
}

/// How the shading pass lights: by an environment (split-sum IBL, with the point lights added
/// or not), exposed and tone mapped; or by the two point lights alone, as the one-pass preview
/// does (Reinhard).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lighting {
    /// Light by the environment set on the pass (false: the point lights alone).
    pub environment: bool,
    /// With the environment, add the two point lights of the preview's uniforms.
    pub point_lights: bool,
    /// Exposure, EV (the radiance is multiplied by 2^EV before tone mapping).
    pub exposure_ev: f32,
    /// The tone mapper.
    pub tone_mapper: ToneMapper,
    /// The environment's rotation about +Y, radians.
    pub rotation_rad: f32,
    /// What pixels off the surface show.
    pub background: Background,
    /// Lit, or one channel unlit.
    pub view: ViewMode,
    /// The error that reads as the top of the heat ramp in [`ViewMode::Error`] (stored values,
    /// 0..1).
    pub error_full_scale: f32,
}

impl Default for Lighting {
    /// The glTF Sample Viewer's defaults: the environment, Khronos PBR Neutral, exposure 0 EV,
    /// the environment blurred behind.
    fn default() -> Self {
        Self {
            environment: true,
            point_lights: false,
            exposure_ev: 0.0,
            tone_mapper: ToneMapper::PbrNeutral,
            rotation_rad: 0.0,
            background: Background::Blurred,
            view: ViewMode::Lit,
            error_full_scale: DEFAULT_ERROR_FULL_SCALE,
        }
    }
}

impl Lighting {
    /// The point lights alone, Reinhard: what the one-pass preview draws.
    #[must_use]
    pub fn point_lights_only() -> Self {
        Self { environment: false, point_lights: true, ..Self::default() }
    }

    /// The uniform's bytes for `environment` (without one set, the pass lights by the point
    /// lights alone whatever `self` asks).
    pub(super) fn bytes(&self, environment: &EnvironmentTextures) -> Vec<u8> {
        let mut words: Vec<f32> = Vec::with_capacity(48);
        for c in environment.irradiance_sh {
            words.extend_from_slice(&[c[0], c[1], c[2], 0.0]);
        }
        let by_environment = self.environment && environment.levels > 0;
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        words.extend_from_slice(&[flag(by_environment), flag(self.point_lights), self.exposure_ev, self.tone_mapper.wgsl_id() as f32]);
        let last_level = environment.levels.saturating_sub(1) as f32;
        let (background, solid) = match self.background {
            Background::Environment => (0.0, [0.0; 3]),
            Background::Blurred => (1.0, [0.0; 3]),
            Background::Solid(c) => (2.0, c),
        };
        let (sin, cos) = self.rotation_rad.sin_cos();
        words.extend_from_slice(&[cos, sin, last_level, background]);
        words.extend_from_slice(&[solid[0], solid[1], solid[2], blurred_level(last_level)]);
        words.extend_from_slice(&[self.view.wgsl_id() as f32, CHANNEL_BACKGROUND, self.error_full_scale, 0.0]);
        debug_assert_eq!(words.len() * 4, LIGHTING_BYTES as usize);
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }
}

/// The mip level the blurred background reads: about roughness 0.5.
pub(super) fn blurred_level(last_level: f32) -> f32 {
    last_level * 0.5
}

/// A prepared environment on one device: the specular cube (`Rgba16Float`, a mip per level), the
/// split-sum table (`Rgba16Float`, A and B in red and green) and the linear sampler both read.
pub struct EnvironmentTextures {
    pub(super) specular: wgpu::TextureView,
    pub(super) brdf: wgpu::TextureView,
    pub(super) sampler: wgpu::Sampler,
    /// The environment's irradiance/π coefficients.
    irradiance_sh: [[f32; 3]; 9],
    /// Mip levels of the specular cube (0: no environment).
    levels: usize,
}

impl EnvironmentTextures {
    /// Uploads `environment`.
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue, environment: &PreparedEnvironment) -> Result<Self, GpuError> {
        let levels = environment.specular_levels();
        let size = levels.first().map_or(1, crate::environment::CubeLevel::face_size_px);
        check_device_limit("the environment's cube face", u64::from(size), u64::from(device.limits().max_texture_dimension_2d))?;
        let specular = device.create_texture(&wgpu::TextureDescriptor {
            label: Some("texset preview environment (specular)"),
            size: wgpu::Extent3d { width: size, height: size, depth_or_array_layers: 6 },
            mip_level_count: to_u32("environment levels", levels.len().max(1))?,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: wgpu::TextureFormat::Rgba16Float,
            usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
            view_formats: &[],
        });
        for (mip, level) in levels.iter().enumerate() {
            let side = level.face_size_px();
            let face_texels = side as usize * side as usize;
            for (face, texels) in level.texels().chunks_exact(face_texels.max(1)).enumerate().take(6) {
                let rgba: Vec<[f32; 4]> = texels.iter().map(|t| [t[0], t[1], t[2], 1.0]).collect();
                write_f16(queue, &specular, to_u32("environment level", mip)?, to_u32("cube face", face)?, [side, side], &rgba);
            }
        }
        let table = environment.brdf_table();
        let brdf = device.create_texture(&wgpu::TextureDescriptor {
            label: Some("texset preview environment (split-sum table)"),
            size: wgpu::Extent3d { width: table.size_px(), height: table.size_px(), depth_or_array_layers: 1 },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: wgpu::TextureFormat::Rgba16Float,
            usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
            view_formats: &[],
        });
        let rgba: Vec<[f32; 4]> = table.texels().iter().map(|t| [t[0], t[1], 0.0, 1.0]).collect();
        write_f16(queue, &brdf, 0, 0, [table.size_px(), table.size_px()], &rgba);
        Ok(Self {
            specular: specular
                .create_view(&wgpu::TextureViewDescriptor { dimension: Some(wgpu::TextureViewDimension::Cube), ..Default::default() }),
            brdf: brdf.create_view(&wgpu::TextureViewDescriptor::default()),
            sampler: sampler(device),
            irradiance_sh: *environment.irradiance_sh(),
            levels: levels.len(),
        })
    }

    /// A black environment of one texel, bound until one is set (it lights nothing: the pass
    /// lights by the point lights alone then).
    #[must_use]
    pub fn none(device: &wgpu::Device) -> Self {
        let texture = |label: &str, layers: u32| {
            device.create_texture(&wgpu::TextureDescriptor {
                label: Some(label),
                size: wgpu::Extent3d { width: 1, height: 1, depth_or_array_layers: layers },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: wgpu::TextureFormat::Rgba16Float,
                usage: wgpu::TextureUsages::TEXTURE_BINDING,
                view_formats: &[],
            })
        };
        Self {
            specular: texture("texset preview environment (none)", 6)
                .create_view(&wgpu::TextureViewDescriptor { dimension: Some(wgpu::TextureViewDimension::Cube), ..Default::default() }),
            brdf: texture("texset preview split-sum table (none)", 1).create_view(&wgpu::TextureViewDescriptor::default()),
            sampler: sampler(device),
            irradiance_sh: [[0.0; 3]; 9],
            levels: 0,
        }
    }
}

/// Linear in and between mips, clamped at the edges (the split-sum table's entries are read
/// between their centres, as `BrdfTable::sample` does).
fn sampler(device: &wgpu::Device) -> wgpu::Sampler {
    device.create_sampler(&wgpu::SamplerDescriptor {
        label: Some("texset preview environment sampler"),
        address_mode_u: wgpu::AddressMode::ClampToEdge,
        address_mode_v: wgpu::AddressMode::ClampToEdge,
        address_mode_w: wgpu::AddressMode::ClampToEdge,
        mag_filter: wgpu::FilterMode::Linear,
        min_filter: wgpu::FilterMode::Linear,
        mipmap_filter: wgpu::MipmapFilterMode::Linear,
        ..Default::default()
    })
}

/// Writes `texels` (RGBA f32, rows top to bottom) as half floats into `layer` of `mip` of `texture`.
fn write_f16(queue: &wgpu::Queue, texture: &wgpu::Texture, mip: u32, layer: u32, size: [u32; 2], texels: &[[f32; 4]]) {
    let bytes: Vec<u8> = texels.iter().flatten().flat_map(|&v| half::f16::from_f32(v).to_le_bytes()).collect();
    queue.write_texture(
        wgpu::TexelCopyTextureInfo {
            texture,
            mip_level: mip,
            origin: wgpu::Origin3d { x: 0, y: 0, z: layer },
            aspect: wgpu::TextureAspect::All,
        },
        &bytes,
        wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(size[0] * 8), rows_per_image: Some(size[1]) },
        wgpu::Extent3d { width: size[0], height: size[1], depth_or_array_layers: 1 },
    );
}
