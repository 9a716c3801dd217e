//! The set: a library of materials, each a set of maps (textures), in memory; how maps are named
//! ([`naming`]) and how their texels are stored (sRGB, normals); and reading folders of image files and glTF 2.0 assets into it ([`ingest`],
//! [`gltf`]).

#[cfg(feature = "ingest")]
pub(crate) mod gltf;
#[cfg(feature = "ingest")]
mod image_file;
#[cfg(feature = "ingest")]
pub(crate) mod ingest;
pub(crate) mod limits;
mod mesh;
pub(crate) mod naming;
mod texel;

#[cfg(feature = "ingest")]
pub use gltf::{GltfAsset, GltfFault, GltfVariant, is_gltf_path, load_gltf};
#[cfg(feature = "ingest")]
pub use image_file::decode_texture;
#[cfg(feature = "train")]
pub(crate) use image_file::encode_gray_exr;
#[cfg(feature = "ingest")]
pub use ingest::{IMAGE_EXTENSIONS, IngestError, IngestReport, load_library, load_material};
pub use mesh::GltfMesh;
pub use naming::check_name;
pub use texel::linear_to_srgb;
pub(crate) use texel::{renormalise_stored_normal, srgb_to_linear};

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What a map means. Decides its colour space and how it is named on decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MapKind {
    /// Base colour / albedo (sRGB).
    Basecolor,
    /// Tangent-space normal map (encoded `n * 0.5 + 0.5`).
    Normal,
    /// Roughness (linear).
    Roughness,
    /// Metallic (linear).
    Metallic,
    /// Ambient occlusion (linear).
    Ao,
    /// Height / displacement (linear).
    Height,
    /// Emissive colour (sRGB).
    Emissive,
    /// Opacity / alpha (linear).
    Opacity,
    /// Packed occlusion / roughness / metallic, glTF layout: R = occlusion, G = roughness, B = metallic.
    Orm,
}

impl MapKind {
    /// Every kind, in canonical order.
    pub const ALL: [MapKind; 9] = [
        MapKind::Basecolor,
        MapKind::Normal,
        MapKind::Roughness,
        MapKind::Metallic,
        MapKind::Ao,
        MapKind::Height,
        MapKind::Emissive,
        MapKind::Opacity,
        MapKind::Orm,
    ];

    /// The canonical file-name token (`<material>_<token>.png` on decode).
    #[must_use]
    pub fn token(self) -> &'static str {
        match self {
            MapKind::Basecolor => "basecolor",
            MapKind::Normal => "normal",
            MapKind::Roughness => "roughness",
            MapKind::Metallic => "metallic",
            MapKind::Ao => "ao",
            MapKind::Height => "height",
            MapKind::Emissive => "emissive",
            MapKind::Opacity => "opacity",
            MapKind::Orm => "orm",
        }
    }

    /// Parses a canonical token (as written by [`MapKind::token`]) or any alias accepted in file names.
    #[must_use]
    pub fn from_token(token: &str) -> Option<Self> {
        crate::set::naming::kind_from_token(&token.to_ascii_lowercase())
    }

    /// Colour maps are stored sRGB-encoded; everything else is linear data.
    #[must_use]
    pub fn color_space(self) -> ColorSpace {
        match self {
            MapKind::Basecolor | MapKind::Emissive => ColorSpace::Srgb,
            _ => ColorSpace::Linear,
        }
    }
}

impl std::fmt::Display for MapKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.token())
    }
}

/// How the stored values of a map are encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ColorSpace {
    /// sRGB transfer function (colour maps).
    Srgb,
    /// Linear data.
    Linear,
}

/// Tangent-space normal map convention (direction of +Y / green).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NormalConvention {
    /// Green points up (+Y): OpenGL, glTF, Blender.
    #[default]
    OpenGl,
    /// Green points down (−Y): DirectX, Unreal.
    DirectX,
}

/// How a decoded map is written back: PNG sample format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SampleFormat {
    /// 8 bits per channel.
    U8,
    /// 16 bits per channel.
    U16,
    /// 32-bit float (EXR sources); written as 16-bit PNG on decode with the stored range.
    F32,
}

impl SampleFormat {
    /// Bits per channel in the source file.
    #[must_use]
    pub fn bits(self) -> u32 {
        match self {
            SampleFormat::U8 => 8,
            SampleFormat::U16 => 16,
            SampleFormat::F32 => 32,
        }
    }
}

/// What a map is, apart from its texels: its meaning, size, channels and how its values are
/// stored. A texture in memory ([`Texture`]) and a bundle's map entry
/// (`bundle::MapEntry`, flattened into the manifest's JSON) each hold one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MapInfo {
    /// What the map means.
    pub kind: MapKind,
    /// Width in texels (at mip 0).
    pub width: u32,
    /// Height in texels (at mip 0).
    pub height: u32,
    /// Number of channels (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA).
    pub channels: u32,
    /// Sample format of the source file (decode writes the same).
    pub sample_format: SampleFormat,
    /// Colour space of the stored values.
    pub color_space: ColorSpace,
    /// Normal-map convention (meaningful for [`MapKind::Normal`] only).
    pub normal_convention: NormalConvention,
    /// Per channel `[low, high]`: stored value = `low + (high - low) * t` for the model's `t` in
    /// `[0, 1]`. `[0, 1]` for integer formats; the data range for float (EXR) sources.
    pub channel_ranges: Vec<[f32; 2]>,
}

impl MapInfo {
    /// Number of texels (`width * height`).
    #[must_use]
    pub fn texel_count(&self) -> usize {
        self.width as usize * self.height as usize
    }

    /// Channel `c`'s value at its scale for the model's `t` (stored, in `[0, 1]`):
    /// `low + (high − low) · t` through the channel's range (`[0, 1]` where it has none).
    #[must_use]
    pub fn scaled(&self, c: usize, t: f32) -> f32 {
        let [low, high] = self.channel_ranges.get(c).copied().unwrap_or([0.0, 1.0]);
        low + (high - low) * t
    }

    /// The inverse of [`MapInfo::scaled`]: the stored `t` of channel `c`'s value `v` at its scale
    /// (a range of zero width read as the smallest positive one).
    #[must_use]
    pub fn unscaled(&self, c: usize, v: f32) -> f32 {
        let [low, high] = self.channel_ranges.get(c).copied().unwrap_or([0.0, 1.0]);
        (v - low) / (high - low).max(f32::MIN_POSITIVE)
    }
}

/// One map (texture) of a material, decoded into normalised floats.
#[derive(Clone, Debug)]
pub struct Texture {
    /// What the map is: kind, size, channels, storage.
    pub info: MapInfo,
    /// Where it was read from (for messages and reports).
    pub source_path: PathBuf,
    /// `width * height * channels` values in `[0, 1]`, interleaved `[y][x][c]`.
    pub texels: Vec<f32>,
}

impl Texture {
    /// Number of texels (`width * height`).
    #[must_use]
    pub fn texel_count(&self) -> usize {
        self.info.texel_count()
    }

    /// A normal map's texels with every normal renormalised to unit length, in the stored
    /// encoding (`n · 0.5 + 0.5` through the channel ranges; other channels as they are). A
    /// zero-length normal stays as it is. Maps of another kind or under 3 channels: a copy.
    #[must_use]
    pub fn unit_normal_texels(&self) -> Vec<f32> {
        let mut texels = self.texels.clone();
        let ch = self.info.channels as usize;
        if self.info.kind != MapKind::Normal || ch < 3 {
            return texels;
        }
        for texel in texels.chunks_exact_mut(ch) {
            renormalise_stored_normal(texel, &self.info.channel_ranges);
        }
        texels
    }

    /// The map's value per channel when it is constant: every texel equal per channel, exactly
    /// or within one step of an 8- or 16-bit source (a float source must be exact). The value is
    /// the channel's mean (exactly the texel value when all are equal). `None` when the map varies.
    #[must_use]
    pub fn constant_value(&self) -> Option<Vec<f32>> {
        let ch = self.info.channels as usize;
        if ch == 0 || self.texels.is_empty() || !self.texels.len().is_multiple_of(ch) {
            return None;
        }
        // One step of the source's quantisation, in normalised units (a hair over it, so values
        // one level apart pass whatever the rounding of `level / 255`).
        let step = match self.info.sample_format {
            SampleFormat::U8 => 1.0 / 255.0 + 1e-6,
            SampleFormat::U16 => 1.0 / 65535.0 + 1e-9,
            SampleFormat::F32 => 0.0,
        };
        (0..ch)
            .map(|c| {
                let (mut lo, mut hi, mut sum) = (f32::INFINITY, f32::NEG_INFINITY, 0.0f64);
                for &v in self.texels.iter().skip(c).step_by(ch) {
                    lo = lo.min(v);
                    hi = hi.max(v);
                    sum += f64::from(v);
                }
                let count = (self.texels.len() / ch) as f64;
                // When every value is equal the mean is that value exactly: the f64 sum of up to
                // 2^28 copies of a 24-bit mantissa is exact, and so is its division by the count.
                (hi - lo <= step).then(|| (sum / count) as f32)
            })
            .collect()
    }

    /// Normalised value of channel `c` at texel `(x, y)`.
    #[must_use]
    pub fn value(&self, x: u32, y: u32, c: u32) -> f32 {
        let i = (y as usize * self.info.width as usize + x as usize) * self.info.channels as usize + c as usize;
        self.texels.get(i).copied().unwrap_or(0.0)
    }
}

/// How a material's alpha is read (glTF's `alphaMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AlphaMode {
    /// Alpha is ignored: fully opaque (the default).
    #[default]
    Opaque,
    /// Alpha below [`MaterialConstants::alpha_cutoff`] is fully transparent, the rest opaque.
    Mask,
    /// Alpha blends the surface over what is behind it.
    Blend,
}

/// A UV transform every map of a material is sampled through (glTF's `KHR_texture_transform`):
/// `uv' = translate(offset) · rotate(rotation_rad) · scale(scale) · uv`, in the extension's
/// conventions. The default is the identity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UvTransform {
    /// Added after rotation and scale, in UV units. Default `[0, 0]`.
    pub offset: [f32; 2],
    /// Counter-clockwise rotation of the UVs, in radians. Default 0.
    pub rotation_rad: f32,
    /// Multiplies the UVs first. Default `[1, 1]`.
    pub scale: [f32; 2],
}

impl Default for UvTransform {
    fn default() -> Self {
        Self { offset: [0.0, 0.0], rotation_rad: 0.0, scale: [1.0, 1.0] }
    }
}

impl UvTransform {
    /// Whether this is the identity (no transform).
    #[must_use]
    pub fn is_identity(&self) -> bool {
        *self == Self::default()
    }

    /// `uv` transformed: scaled, rotated, then offset, as the extension's matrix
    /// `translation · rotation · scale` with its rotation `mat3(cos, sin, 0, −sin, cos, 0, 0, 0, 1)`
    /// (GLSL's column-major order).
    #[must_use]
    pub fn apply(&self, uv: [f32; 2]) -> [f32; 2] {
        let (sin, cos) = self.rotation_rad.sin_cos();
        let [x, y] = [uv[0] * self.scale[0], uv[1] * self.scale[1]];
        [cos * x - sin * y + self.offset[0], sin * x + cos * y + self.offset[1]]
    }
}

/// What a material says besides its maps: the glTF 2.0 factors and render state, kept as
/// constants (never baked into the maps). [`Default`] is glTF's default for every field, which is
/// what a material folder gets. Note glTF's `emissive_factor` default is black: a renderer that
/// applies these constants to a folder's emissive map must treat the folder's default as unset.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MaterialConstants {
    /// Multiplies the base colour map (linear RGBA). Default `[1, 1, 1, 1]`.
    pub base_color_factor: [f32; 4],
    /// Multiplies the metallic map (or the ORM map's B). Default 1.
    pub metallic_factor: f32,
    /// Multiplies the roughness map (or the ORM map's G). Default 1.
    pub roughness_factor: f32,
    /// Multiplies the emissive map (linear RGB). Default `[0, 0, 0]`.
    pub emissive_factor: [f32; 3],
    /// How strongly the occlusion map (or the ORM map's R) applies, 0 to 1. Default 1.
    pub occlusion_strength: f32,
    /// Scales the normal map's X and Y. Default 1.
    pub normal_scale: f32,
    /// How alpha is read. Default [`AlphaMode::Opaque`].
    pub alpha_mode: AlphaMode,
    /// The alpha below which a [`AlphaMode::Mask`] surface is cut away. Default 0.5.
    pub alpha_cutoff: f32,
    /// Whether back faces are drawn (and lit with the flipped normal). Default false.
    pub double_sided: bool,
    /// The mesh UV set (`TEXCOORD_n`) every map is sampled with. Default 0.
    pub uv_set: u32,
    /// The UV transform every map is sampled through. Default: the identity.
    pub uv_transform: UvTransform,
}

impl Default for MaterialConstants {
    fn default() -> Self {
        Self {
            base_color_factor: [1.0; 4],
            metallic_factor: 1.0,
            roughness_factor: 1.0,
            emissive_factor: [0.0; 3],
            occlusion_strength: 1.0,
            normal_scale: 1.0,
            alpha_mode: AlphaMode::Opaque,
            alpha_cutoff: 0.5,
            double_sided: false,
            uv_set: 0,
            uv_transform: UvTransform::default(),
        }
    }
}

/// A material: a named set of maps that share one UV layout.
#[derive(Clone, Debug)]
pub struct Material {
    /// Material name (the folder name; for a glTF asset, its variant's, its own or the file's,
    /// made unique: `load_gltf` says how).
    pub name: String,
    /// Where it was read from: the folder, or the glTF asset file.
    pub source_dir: PathBuf,
    /// Its maps, sorted by kind.
    pub textures: Vec<Texture>,
    /// Its factors and render state (glTF's; a folder gets [`MaterialConstants::default`]).
    pub constants: MaterialConstants,
}

impl Material {
    /// The material's texel count: that of its largest map (the denominator of bits per texel).
    #[must_use]
    pub fn texel_count(&self) -> usize {
        self.textures.iter().map(Texture::texel_count).max().unwrap_or(0)
    }
}

/// A library: one or more materials compressed together into one bundle.
#[derive(Clone, Debug, Default)]
pub struct TextureSet {
    /// The materials, in the order given.
    pub materials: Vec<Material>,
}

impl TextureSet {
    /// Sum of the materials' texel counts (denominator of bits per texel).
    #[must_use]
    pub fn texel_count(&self) -> usize {
        self.materials.iter().map(Material::texel_count).sum()
    }

    /// Width and height of the largest map (at least 1×1): the extent the latent grids cover.
    #[must_use]
    pub fn max_extent(&self) -> (u32, u32) {
        let width = self.textures().map(|(_, _, t)| t.info.width).max().unwrap_or(1);
        let height = self.textures().map(|(_, _, t)| t.info.height).max().unwrap_or(1);
        (width, height)
    }

    /// Every texture with its (material, map) index, in library order.
    pub fn textures(&self) -> impl Iterator<Item = (usize, usize, &Texture)> {
        self.materials.iter().enumerate().flat_map(|(m, mat)| mat.textures.iter().enumerate().map(move |(t, tex)| (m, t, tex)))
    }

    /// Total output channels over all textures (the MLP's output width).
    #[must_use]
    pub fn output_channels(&self) -> usize {
        self.textures().map(|(_, _, t)| t.info.channels as usize).sum()
    }
}

/// Small sets the engine's unit tests build.
#[cfg(test)]
pub(crate) mod test_sets {
    use super::{ColorSpace, MapInfo, MapKind, Material, NormalConvention, SampleFormat, Texture, TextureSet};
    use std::path::PathBuf;

    /// One material `m` with one 8-bit sRGB colour map of `width × height` texels, `texels`
    /// interleaved RGB.
    pub(crate) fn one_colour_map(width: u32, height: u32, texels: Vec<f32>) -> TextureSet {
        let info = MapInfo {
            kind: MapKind::Basecolor,
            width,
            height,
            channels: 3,
            sample_format: SampleFormat::U8,
            color_space: ColorSpace::Srgb,
            normal_convention: NormalConvention::OpenGl,
            channel_ranges: vec![[0.0, 1.0]; 3],
        };
        let texture = Texture { info, source_path: PathBuf::from("m/basecolor.png"), texels };
        TextureSet {
            materials: vec![Material {
                name: "m".into(),
                source_dir: PathBuf::from("m"),
                textures: vec![texture],
                constants: super::MaterialConstants::default(),
            }],
        }
    }
}
