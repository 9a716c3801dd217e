//! The `.texset` asset loader: a bundle decoded on load into one [`Image`] per map, a
//! [`StandardMaterial`] per material with those images wired in, and the per-pixel
//! [`TexsetMaterial`] of each material (the bundle's latents and weights as storage buffers and a
//! fragment shader generated from the bundle).

use crate::material::{GeneratedShader, TexsetExtension, TexsetMaterial};
use bevy::asset::uuid::Uuid;
use bevy::asset::{AssetLoader, LoadContext, RenderAssetUsages, io::Reader};
use bevy::image::{CompressedImageFormatSupport, CompressedImageFormats};
use bevy::prelude::*;
use bevy::render::render_resource::{Extent3d, TextureDimension, TextureFormat};
use bevy::render::storage::ShaderBuffer;
use serde::{Deserialize, Serialize};
use texset_core::bundle::{Bundle, MapEntry};
use texset_core::decode::{DecodeLimits, Decoder};
use texset_core::export::bcn::BcFormat;
use texset_core::export::{ImageMips, MapImage, TexelFormat, material_images};
use texset_core::set::{MapKind, NormalConvention};
use texset_shaders::model::words_to_bytes;
use texset_shaders::{GpuModel, GpuModelOptions};

/// A loaded bundle: for every material its maps as images, its decode-on-load
/// [`StandardMaterial`] and its per-pixel [`TexsetMaterial`]. Each is also a labeled asset of
/// the bundle's path (`lib.texset#wood/basecolor`, `lib.texset#wood/material`,
/// `lib.texset#wood/per_pixel`).
#[derive(Asset, TypePath, Debug)]
pub struct TexsetBundle {
    /// The materials, in the bundle's order.
    pub materials: Vec<TexsetBundleMaterial>,
    /// The per-pixel materials' fragment shaders, which [`crate::TexsetPlugin`] adds to
    /// `Assets<Shader>` when the bundle loads.
    pub shaders: Vec<GeneratedShader>,
}

impl TexsetBundle {
    /// The material named `name`.
    #[must_use]
    pub fn material(&self, name: &str) -> Option<&TexsetBundleMaterial> {
        self.materials.iter().find(|m| m.name == name)
    }
}

/// One material of a [`TexsetBundle`].
#[derive(Debug, Clone)]
pub struct TexsetBundleMaterial {
    /// Its name in the bundle.
    pub name: String,
    /// Its maps decoded on load, in the bundle's order: the map's token (`basecolor`, `normal`,
    /// …) and its image (label `name/token`).
    pub maps: Vec<(String, Handle<Image>)>,
    /// The decode-on-load material (label `name/material`): base colour, normal (with its
    /// convention), metallic/roughness and occlusion wired to the images.
    pub standard: Handle<StandardMaterial>,
    /// The per-pixel material (label `name/per_pixel`): the same maps decoded in the fragment
    /// shader at the sample's UV and level of detail; `None` when the settings turn it off.
    pub per_pixel: Option<Handle<TexsetMaterial>>,
}

impl TexsetBundleMaterial {
    /// The image of the map whose token is `token` (`"basecolor"`, `"normal"`, …).
    #[must_use]
    pub fn map(&self, token: &str) -> Option<&Handle<Image>> {
        self.maps.iter().find(|(t, _)| t == token).map(|(_, h)| h)
    }
}

/// The texel format of the decoded images.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TexsetImageFormat {
    /// RGBA8 (three- and four-channel maps; sRGB for colour), RG8 or R8: the decoded values
    /// rounded to 8 bits (`texset_core::decode::unorm8`, as `texset decode` writes 8-bit sources).
    #[default]
    Uncompressed,
    /// Block-compressed by the transcoder `texset transcode` uses: BC7 for colour, BC5 for
    /// normals and two channels, BC4 for one. Where the device has no BC formats (or a map's
    /// level 0 is not a multiple of 4 texels) the map is loaded uncompressed, with a warning.
    Bc,
}

/// Where the images' mip chains come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TexsetMips {
    /// Every mip level decoded from the bundle's latent pyramid when it has one (`texset
    /// compress --mips`); otherwise generated as [`TexsetMips::Generated`].
    #[default]
    Bundle,
    /// Box-filtered from the decoded level 0 (linear light for colour, normals renormalised),
    /// as `texset transcode` does.
    Generated,
    /// Level 0 only.
    None,
}

/// How a `.texset` asset is loaded (per asset, with `load_with_settings` or a `.meta` file).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TexsetLoaderSettings {
    /// The images' texel format.
    pub format: TexsetImageFormat,
    /// The images' mip chains.
    pub mips: TexsetMips,
    /// Whether to make the per-pixel materials (their shaders and buffers).
    pub per_pixel: bool,
    /// Most bytes of decoded values (f32) the asset's maps may take, mip chains included: a
    /// bundle that declares more fails to load at once instead of hanging the game. Default
    /// 1 GiB (`DecodeLimits::INTERACTIVE`).
    pub max_decoded_bytes: u64,
    /// Most multiply-adds of the bundle's decoder over those texels. Default 2^40.
    pub max_multiply_adds: u64,
}

impl Default for TexsetLoaderSettings {
    fn default() -> Self {
        let limits = DecodeLimits::INTERACTIVE;
        Self {
            format: TexsetImageFormat::Uncompressed,
            mips: TexsetMips::Bundle,
            per_pixel: true,
            max_decoded_bytes: limits.max_decoded_bytes,
            max_multiply_adds: limits.max_multiply_adds,
        }
    }
}

/// Why a `.texset` asset did not load.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TexsetLoadError {
    /// Reading the asset's bytes failed.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The asset path.
        path: String,
        /// The reader's error.
        source: std::io::Error,
    },
    /// The bytes are not a bundle texset reads (its reader says what is wrong).
    #[error("{path} is not a valid texset bundle: {source}")]
    Bundle {
        /// The asset path.
        path: String,
        /// The bundle reader's error.
        source: texset_core::bundle::BundleError,
    },
    /// Decoding a map failed.
    #[error("cannot decode {path}: {source}")]
    Decode {
        /// The asset path.
        path: String,
        /// The decoder's error.
        source: texset_core::decode::DecodeError,
    },
    /// The bundle's model does not fit the per-pixel shader.
    #[error("{path}: the per-pixel material cannot be made: {source}")]
    Shader {
        /// The asset path.
        path: String,
        /// The generator's error.
        source: texset_shaders::GpuError,
    },
}

/// The `.texset` [`AssetLoader`] ([`crate::TexsetPlugin`] registers it).
#[derive(TypePath)]
pub struct TexsetLoader {
    /// The block-compressed formats the render device samples (none before the renderer is up).
    supported: CompressedImageFormats,
}

impl FromWorld for TexsetLoader {
    fn from_world(world: &mut World) -> Self {
        let supported = world.get_resource::<CompressedImageFormatSupport>().map_or(CompressedImageFormats::NONE, |s| s.0);
        Self { supported }
    }
}

impl AssetLoader for TexsetLoader {
    type Asset = TexsetBundle;
    type Settings = TexsetLoaderSettings;
    type Error = TexsetLoadError;

    async fn load(
        &self,
        reader: &mut dyn Reader,
        settings: &TexsetLoaderSettings,
        load_context: &mut LoadContext<'_>,
    ) -> Result<TexsetBundle, TexsetLoadError> {
        let path = load_context.path().to_string();
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes).await.map_err(|source| TexsetLoadError::Io { path: path.clone(), source })?;
        let bundle = Bundle::from_bytes(&bytes).map_err(|source| TexsetLoadError::Bundle { path: path.clone(), source })?;
        let bc = settings.format == TexsetImageFormat::Bc && self.supported.contains(CompressedImageFormats::BC);
        if settings.format == TexsetImageFormat::Bc && !bc {
            warn!("{path}: the render device has no BC formats; its maps load uncompressed");
        }
        let limits = DecodeLimits { max_decoded_bytes: settings.max_decoded_bytes, max_multiply_adds: settings.max_multiply_adds };
        let decoder = Decoder::with_limits(&bundle, limits).map_err(|source| TexsetLoadError::Decode { path: path.clone(), source })?;
        let per_pixel = if settings.per_pixel { Some(PerPixel::new(&bundle, load_context, &path)?) } else { None };
        let mut materials = Vec::new();
        let mut shaders = Vec::new();
        let mut first_map = 0u32;
        for (index, material) in bundle.manifest.materials.iter().enumerate() {
            let images = material_images(&decoder, index, bc, settings.mips.into())
                .map_err(|source| TexsetLoadError::Decode { path: path.clone(), source })?;
            let mut maps = Vec::new();
            let mut roles = Roles::default();
            for (m, (entry, map)) in material.maps.iter().zip(images.maps).enumerate() {
                let image = bevy_image(map, &format!("{path}#{}/{}", material.name, entry.info.kind.token()));
                let handle = load_context.add_labeled_asset(format!("{}/{}", material.name, entry.info.kind.token()), image);
                roles.note(entry, m as u32 + first_map, m, &handle);
                maps.push((entry.info.kind.token().to_owned(), handle));
            }
            // Bevy reads metallic from blue and roughness from green of one texture (glTF's
            // layout); separate metallic and roughness maps come packed into one.
            if roles.metallic_roughness.is_none()
                && let Some(packed) = images.metallic_roughness
            {
                let image = bevy_image(packed, &format!("{path}#{}/metallic_roughness", material.name));
                roles.metallic_roughness = Some(load_context.add_labeled_asset(format!("{}/metallic_roughness", material.name), image));
            }
            let base = roles.standard_material();
            let standard = load_context.add_labeled_asset(format!("{}/material", material.name), roles.with_textures(base.clone()));
            let per_pixel = match &per_pixel {
                Some(p) => {
                    let shader = GeneratedShader::new(&p.functions, &roles);
                    let handle = p.material(load_context, &material.name, base, shader.id);
                    shaders.push(shader);
                    Some(handle)
                }
                None => None,
            };
            materials.push(TexsetBundleMaterial { name: material.name.clone(), maps, standard, per_pixel });
            first_map += material.maps.len() as u32;
        }
        Ok(TexsetBundle { materials, shaders })
    }

    fn extensions(&self) -> &[&str] {
        &["texset"]
    }
}

impl From<TexsetMips> for ImageMips {
    fn from(mips: TexsetMips) -> Self {
        match mips {
            TexsetMips::Bundle => Self::Bundle,
            TexsetMips::Generated => Self::Generated,
            TexsetMips::None => Self::None,
        }
    }
}

/// A map's image as texset-core made it ([`material_images`]), as a Bevy [`Image`] (trilinear,
/// clamped to the edge, as the decoder's latent fetch is). `name` labels its warning.
fn bevy_image(map: MapImage, name: &str) -> Image {
    if let Some(note) = &map.note {
        warn!("{name}: {note}");
    }
    let format = match map.format {
        TexelFormat::R8Unorm => TextureFormat::R8Unorm,
        TexelFormat::Rg8Unorm => TextureFormat::Rg8Unorm,
        TexelFormat::Rgba8Unorm => TextureFormat::Rgba8Unorm,
        TexelFormat::Rgba8UnormSrgb => TextureFormat::Rgba8UnormSrgb,
        TexelFormat::R16Float => TextureFormat::R16Float,
        TexelFormat::Rg16Float => TextureFormat::Rg16Float,
        TexelFormat::Rgba16Float => TextureFormat::Rgba16Float,
        TexelFormat::Bc { format, srgb } => bc_format(format, srgb),
    };
    let size = Extent3d { width: map.width, height: map.height, depth_or_array_layers: 1 };
    let mut image = Image::new_uninit(size, TextureDimension::D2, format, RenderAssetUsages::default());
    image.data = Some(map.data);
    image.texture_descriptor.mip_level_count = map.mip_levels;
    let mut sampler = bevy::image::ImageSamplerDescriptor::linear();
    sampler.address_mode_u = bevy::image::ImageAddressMode::ClampToEdge;
    sampler.address_mode_v = bevy::image::ImageAddressMode::ClampToEdge;
    image.sampler = bevy::image::ImageSampler::Descriptor(sampler);
    image
}

fn bc_format(format: BcFormat, srgb: bool) -> TextureFormat {
    match (format, srgb) {
        (BcFormat::Bc1, false) => TextureFormat::Bc1RgbaUnorm,
        (BcFormat::Bc1, true) => TextureFormat::Bc1RgbaUnormSrgb,
        (BcFormat::Bc4, _) => TextureFormat::Bc4RUnorm,
        (BcFormat::Bc5, _) => TextureFormat::Bc5RgUnorm,
        (BcFormat::Bc7, false) => TextureFormat::Bc7RgbaUnorm,
        (BcFormat::Bc7, true) => TextureFormat::Bc7RgbaUnormSrgb,
    }
}

/// Which map of a material plays which part of a PBR material (library map indices and the
/// images).
#[derive(Default)]
pub(crate) struct Roles {
    pub(crate) base_color: Option<(u32, Handle<Image>)>,
    pub(crate) normal: Option<(u32, Handle<Image>, NormalConvention)>,
    /// Library and material-local index.
    pub(crate) roughness: Option<(u32, usize)>,
    /// Library and material-local index.
    pub(crate) metallic: Option<(u32, usize)>,
    pub(crate) occlusion: Option<(u32, Handle<Image>)>,
    pub(crate) emissive: Option<(u32, Handle<Image>)>,
    /// A packed occlusion/roughness/metallic map (glTF layout), or the packed image the loader
    /// made of separate roughness and metallic maps.
    pub(crate) metallic_roughness: Option<Handle<Image>>,
    /// An ORM map's library index.
    pub(crate) orm: Option<u32>,
}

impl Roles {
    /// Notes map `entry` (library index `global`, `local` in its material) with its image; the
    /// first map of each kind plays the part.
    fn note(&mut self, entry: &MapEntry, global: u32, local: usize, image: &Handle<Image>) {
        match entry.info.kind {
            MapKind::Basecolor if self.base_color.is_none() => self.base_color = Some((global, image.clone())),
            MapKind::Normal if self.normal.is_none() => self.normal = Some((global, image.clone(), entry.info.normal_convention)),
            MapKind::Roughness if self.roughness.is_none() => self.roughness = Some((global, local)),
            MapKind::Metallic if self.metallic.is_none() => self.metallic = Some((global, local)),
            MapKind::Ao if self.occlusion.is_none() => self.occlusion = Some((global, image.clone())),
            MapKind::Emissive if self.emissive.is_none() => self.emissive = Some((global, image.clone())),
            MapKind::Orm if self.orm.is_none() => {
                self.orm = Some(global);
                self.metallic_roughness = Some(image.clone());
                if self.occlusion.is_none() {
                    self.occlusion = Some((global, image.clone()));
                }
            }
            _ => {}
        }
    }

    /// The material without textures: the factors both paths share (metallic 0 where the
    /// material has no metallic map, as glTF's default of a texture-less metal factor of 1 would
    /// make every material metal).
    fn standard_material(&self) -> StandardMaterial {
        let has_metallic = self.metallic.is_some() || self.orm.is_some();
        StandardMaterial {
            base_color: Color::WHITE,
            perceptual_roughness: 1.0,
            metallic: if has_metallic { 1.0 } else { 0.0 },
            flip_normal_map_y: matches!(self.normal, Some((_, _, NormalConvention::DirectX))),
            emissive: if self.emissive.is_some() { LinearRgba::WHITE } else { LinearRgba::BLACK },
            ..default()
        }
    }

    /// `base` with the decoded images as its textures (the decode-on-load material).
    fn with_textures(&self, base: StandardMaterial) -> StandardMaterial {
        StandardMaterial {
            base_color_texture: self.base_color.as_ref().map(|(_, h)| h.clone()),
            normal_map_texture: self.normal.as_ref().map(|(_, h, _)| h.clone()),
            metallic_roughness_texture: self.metallic_roughness.clone(),
            occlusion_texture: self.occlusion.as_ref().map(|(_, h)| h.clone()),
            emissive_texture: self.emissive.as_ref().map(|(_, h)| h.clone()),
            ..base
        }
    }
}

/// What the per-pixel materials of one bundle share: its buffers and decoder functions.
struct PerPixel {
    latents: Handle<ShaderBuffer>,
    weights: Handle<ShaderBuffer>,
    functions: String,
}

impl PerPixel {
    fn new(bundle: &Bundle, load_context: &mut LoadContext<'_>, path: &str) -> Result<Self, TexsetLoadError> {
        // Weights in a storage buffer whatever their size: one binding layout for every bundle.
        let options = GpuModelOptions { max_uniform_bytes: 0, ..GpuModelOptions::default() };
        let model = GpuModel::with_options(bundle, options).map_err(|source| TexsetLoadError::Shader { path: path.to_owned(), source })?;
        let latents = load_context
            .add_labeled_asset("latents".to_owned(), ShaderBuffer::new(&words_to_bytes(&model.latent_words), RenderAssetUsages::default()));
        let weights = load_context
            .add_labeled_asset("weights".to_owned(), ShaderBuffer::new(&words_to_bytes(&model.mlp_words), RenderAssetUsages::default()));
        Ok(Self { latents, weights, functions: crate::material::decoder_functions(&model) })
    }

    /// The per-pixel material of material `name`: `base` extended by the decoder and `shader`.
    fn material(&self, load_context: &mut LoadContext<'_>, name: &str, base: StandardMaterial, shader: Uuid) -> Handle<TexsetMaterial> {
        let extension = TexsetExtension { latents: self.latents.clone(), weights: self.weights.clone(), shader };
        load_context.add_labeled_asset(format!("{name}/per_pixel"), TexsetMaterial { base, extension })
    }
}
