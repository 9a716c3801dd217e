//! Images an engine uploads, made from a bundle with no engine in sight: every map of a material
//! decoded with a mip chain, in an uncompressed or BC texel format, and the packed
//! metallic/roughness image glTF-style PBR reads. texset-bevy's loader is this plus handles; being
//! free of Bevy, it is what the `bundle_images` fuzz target feeds ([`bundle_images`]).

use crate::bundle::{Bundle, BundleError, MapEntry};
use crate::decode::{DecodeError, DecodeLimits, DecodedMap, Decoder, unorm8};
use crate::export::bcn::{BcFormat, Profile};
use crate::export::{mip_chain, transcode_chain};
use crate::set::{ColorSpace, MapKind, SampleFormat, srgb_to_linear};

/// Where the images' mip chains come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ImageMips {
    /// Every level decoded from the bundle's latent pyramid when it stores one; otherwise as
    /// [`ImageMips::Generated`].
    #[default]
    Bundle,
    /// Box-filtered from the decoded level 0 ([`mip_chain`]: linear light for colour, normals
    /// renormalised), as `texset transcode` does.
    Generated,
    /// Level 0 only.
    None,
}

/// The texel format of a [`MapImage`] (each names the wgpu/Vulkan format of the same name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TexelFormat {
    /// One 8-bit unorm channel.
    R8Unorm,
    /// Two 8-bit unorm channels.
    Rg8Unorm,
    /// RGBA, 8-bit unorm (three-channel maps with alpha 255).
    Rgba8Unorm,
    /// RGBA, 8-bit sRGB colour and linear alpha.
    Rgba8UnormSrgb,
    /// One half-float channel: a float map at its scale.
    R16Float,
    /// Two half-float channels.
    Rg16Float,
    /// RGBA half floats (three-channel maps with alpha 1).
    Rgba16Float,
    /// BC blocks ([`transcode_chain`]).
    Bc {
        /// The block format.
        format: BcFormat,
        /// Whether it is the sRGB variant.
        srgb: bool,
    },
}

/// One map's image: its mip chain, level 0 first, in one buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct MapImage {
    /// Level 0's width in texels.
    pub width: u32,
    /// Level 0's height in texels.
    pub height: u32,
    /// Mip levels in `data`.
    pub mip_levels: u32,
    /// The texel format.
    pub format: TexelFormat,
    /// Every level's texels (or blocks), level 0 first.
    pub data: Vec<u8>,
    /// Why the image is not what was asked for (BC asked, but level 0 is not a multiple of 4).
    pub note: Option<String>,
}

/// The images of one material.
#[derive(Clone, Debug, PartialEq)]
pub struct MaterialImages {
    /// One per map, in the manifest's order.
    pub maps: Vec<MapImage>,
    /// The first roughness map (green) and first metallic map (blue) packed into one image, as
    /// glTF's `metallicRoughnessTexture` reads them (red and alpha 1), for a material that has
    /// either but no ORM map.
    pub metallic_roughness: Option<MapImage>,
}

/// Why [`bundle_images`] made no images.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImagesError {
    /// The bytes are not a bundle this reader takes.
    #[error(transparent)]
    Bundle(#[from] BundleError),
    /// The bundle is over the decode limits, or a map does not decode.
    #[error(transparent)]
    Decode(#[from] DecodeError),
}

/// Every material's images from a bundle's bytes, within `limits`: what a loader does between
/// reading an asset and handing images to the renderer.
pub fn bundle_images(
    bytes: &[u8],
    limits: DecodeLimits,
    block_compressed: bool,
    mips: ImageMips,
) -> Result<Vec<MaterialImages>, ImagesError> {
    let bundle = Bundle::from_bytes(bytes)?;
    let decoder = Decoder::with_limits(&bundle, limits)?;
    (0..bundle.manifest.materials.len()).map(|m| Ok(material_images(&decoder, m, block_compressed, mips)?)).collect()
}

/// The images of material `material`: each map's chain as `mips` asks, block-compressed when
/// `block_compressed` (and level 0 is a multiple of 4 texels; a float map stays half-float at its
/// scale, as BC holds only 0..1), else 8-bit (half-float for float maps).
pub fn material_images(decoder: &Decoder, material: usize, block_compressed: bool, mips: ImageMips) -> Result<MaterialImages, DecodeError> {
    let entries = &decoder.manifest().materials.get(material).ok_or(DecodeError::NoMaterial(material))?.maps;
    let mut maps = Vec::with_capacity(entries.len());
    let mut level0 = Vec::with_capacity(entries.len());
    for (m, entry) in entries.iter().enumerate() {
        let chain = decode_chain(decoder, material, m, mips)?;
        maps.push(map_image(&chain, entry, block_compressed));
        level0.push(chain.into_iter().next());
    }
    let first = |kind: MapKind| entries.iter().position(|e| e.info.kind == kind);
    let metallic_roughness = if first(MapKind::Orm).is_some() {
        None
    } else {
        pack_metallic_roughness(entries, &level0, first(MapKind::Roughness), first(MapKind::Metallic), mips, block_compressed)
    };
    Ok(MaterialImages { maps, metallic_roughness })
}

/// The mip chain of map `map` of material `material`, level 0 first, as `mips` asks.
fn decode_chain(decoder: &Decoder, material: usize, map: usize, mips: ImageMips) -> Result<Vec<DecodedMap>, DecodeError> {
    let level0 = decoder.decode_map(material, map)?;
    let entry = &decoder.manifest().materials[material].maps[map];
    match mips {
        ImageMips::None => Ok(vec![level0]),
        ImageMips::Bundle if decoder.manifest().mip_levels > 1 => {
            let levels = decoder.map_mip_levels(material, map)?;
            let mut chain = vec![level0];
            for level in 1..levels {
                chain.push(decoder.decode_map_level(material, map, level)?);
            }
            Ok(chain)
        }
        ImageMips::Bundle | ImageMips::Generated => Ok(mip_chain(&level0, entry)),
    }
}

/// A decoded value of channel `c` as the image holds it: a float map's at its scale (its range
/// applied; sRGB colour made linear, as a float texture is sampled), any other as stored.
fn image_value(entry: &MapEntry, c: usize, stored: f32) -> f32 {
    if entry.info.sample_format != SampleFormat::F32 {
        return stored;
    }
    let v = entry.info.scaled(c, stored);
    if entry.info.color_space == ColorSpace::Srgb && c < 3 { srgb_to_linear(v) } else { v }
}

/// The texels of a decoded level with `out_channels` channels, 8-bit unorm or (`half`) half
/// floats; missing channels opaque (alpha 255 or 1).
fn level_bytes(level: &DecodedMap, entry: &MapEntry, out_channels: usize, half: bool) -> Vec<u8> {
    let channels = (level.channels as usize).max(1);
    let mut bytes = Vec::with_capacity(level.values.len() / channels * out_channels * if half { 2 } else { 1 });
    for texel in level.values.chunks_exact(channels) {
        for c in 0..out_channels {
            match (texel.get(c), half) {
                (Some(&v), true) => bytes.extend_from_slice(&half::f16::from_f32(image_value(entry, c, v)).to_le_bytes()),
                (Some(&v), false) => bytes.push(unorm8(v)),
                (None, true) => bytes.extend_from_slice(&half::f16::ONE.to_le_bytes()),
                (None, false) => bytes.push(255),
            }
        }
    }
    bytes
}

/// The image of one decoded map: its whole chain in the asked format.
#[must_use]
pub fn map_image(chain: &[DecodedMap], entry: &MapEntry, block_compressed: bool) -> MapImage {
    let Some(level0) = chain.first() else {
        return MapImage { width: 0, height: 0, mip_levels: 0, format: TexelFormat::R8Unorm, data: Vec::new(), note: None };
    };
    let image =
        |format, data, note| MapImage { width: level0.width, height: level0.height, mip_levels: chain.len() as u32, format, data, note };
    let float = entry.info.sample_format == SampleFormat::F32;
    let mut note = None;
    if block_compressed && !float {
        if level0.width % 4 == 0 && level0.height % 4 == 0 {
            let encoded = transcode_chain(chain, entry, Profile::High);
            let data: Vec<u8> = encoded.levels.iter().flat_map(|l| l.blocks.iter().copied()).collect();
            return image(TexelFormat::Bc { format: encoded.format, srgb: encoded.srgb }, data, None);
        }
        note = Some(format!("{}x{} texels is not a multiple of 4; loaded uncompressed", level0.width, level0.height));
    }
    let (format, channels) = match (level0.channels, float) {
        (1, false) => (TexelFormat::R8Unorm, 1),
        (2, false) => (TexelFormat::Rg8Unorm, 2),
        (_, false) if entry.info.color_space == ColorSpace::Srgb => (TexelFormat::Rgba8UnormSrgb, 4),
        (_, false) => (TexelFormat::Rgba8Unorm, 4),
        (1, true) => (TexelFormat::R16Float, 1),
        (2, true) => (TexelFormat::Rg16Float, 2),
        (_, true) => (TexelFormat::Rgba16Float, 4),
    };
    let data: Vec<u8> = chain.iter().flat_map(|l| level_bytes(l, entry, channels, float)).collect();
    image(format, data, note)
}

/// The roughness (green) and metallic (blue) maps of a material packed into one image; red and
/// alpha 1. A float map's values at its scale, clamped to 0..1.
fn pack_metallic_roughness(
    entries: &[MapEntry],
    level0: &[Option<DecodedMap>],
    rough: Option<usize>,
    metal: Option<usize>,
    mips: ImageMips,
    block_compressed: bool,
) -> Option<MapImage> {
    let size_from = rough.or(metal).and_then(|m| level0.get(m)).and_then(Option::as_ref)?;
    let (width, height) = (size_from.width, size_from.height);
    let channel = |m: Option<usize>| -> Option<(&DecodedMap, &MapEntry)> {
        let m = m?;
        let map = level0.get(m).and_then(Option::as_ref).filter(|d| d.width == width && d.height == height)?;
        Some((map, entries.get(m)?))
    };
    let (r_map, m_map) = (channel(rough), channel(metal));
    let value = |d: Option<(&DecodedMap, &MapEntry)>, i: usize| {
        d.map_or(1.0, |(d, e)| image_value(e, 0, d.values[i * d.channels as usize]).clamp(0.0, 1.0))
    };
    let mut values = Vec::with_capacity(width as usize * height as usize * 4);
    for i in 0..width as usize * height as usize {
        values.extend([1.0, value(r_map, i), value(m_map, i), 1.0]);
    }
    let packed = DecodedMap { width, height, channels: 4, values };
    // The packed map's chain as a linear four-channel map's.
    let mut entry = entries[rough.or(metal).unwrap_or(0)].clone();
    entry.info.kind = MapKind::Orm;
    entry.info.channels = 4;
    entry.info.color_space = ColorSpace::Linear;
    entry.info.sample_format = SampleFormat::U8;
    entry.info.channel_ranges = vec![[0.0, 1.0]; 4];
    let chain = match mips {
        ImageMips::None => vec![packed],
        _ => mip_chain(&packed, &entry),
    };
    Some(map_image(&chain, &entry, block_compressed))
}
