//! Decode on load: every map of a bundle re-encoded to a block-compressed format with a full mip
//! chain, in a KTX2 or DDS file an engine loads today (the "inference on load" path for GPUs that
//! cannot afford per-pixel decoding).
//!
//! Mips are box-filtered from the decoded level 0: colour maps averaged in linear light, normal
//! maps renormalised. Blocks come from [`crate::export::bcn::encode`]; the containers are written here
//! (KTX2 per the Khronos KTX 2.0 specification with a basic data format descriptor; DDS with the
//! DX10 header) and read back by independent readers in the tests.

use crate::bundle::MapEntry;
use crate::decode::DecodedMap;
use crate::export::bcn::{self, BcFormat, Profile};
use crate::set::{ColorSpace, SampleFormat};

/// The container.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Container {
    /// Khronos KTX 2.0.
    Ktx2,
    /// `DirectDraw` Surface with the DX10 header.
    Dds,
}

impl Container {
    /// File extension.
    #[must_use]
    pub fn extension(self) -> &'static str {
        match self {
            Self::Ktx2 => "ktx2",
            Self::Dds => "dds",
        }
    }
}

/// The full mip chain of a decoded map, level 0 first, down to 1x1: each level the 2x2 box
/// average of the one above ([`crate::model::mips::box_chain`]: linear light for sRGB colour, normals
/// renormalised).
#[must_use]
pub fn mip_chain(level0: &DecodedMap, entry: &MapEntry) -> Vec<DecodedMap> {
    let below = crate::model::mips::box_chain(
        &level0.values,
        level0.width,
        level0.height,
        level0.channels,
        entry.info.kind,
        entry.info.color_space,
        &entry.info.channel_ranges,
    );
    std::iter::once(level0.clone())
        .chain(below.into_iter().map(|l| DecodedMap { width: l.width, height: l.height, channels: level0.channels, values: l.values }))
        .collect()
}

/// One encoded mip level.
pub struct EncodedLevel {
    /// Width in texels.
    pub width: u32,
    /// Height in texels.
    pub height: u32,
    /// Blocks in row order.
    pub blocks: Vec<u8>,
}

/// `VkFormat` of a format (sRGB variants where they exist).
#[must_use]
pub fn vk_format(format: BcFormat, srgb: bool) -> u32 {
    match (format, srgb) {
        (BcFormat::Bc1, false) => 131, // VK_FORMAT_BC1_RGB_UNORM_BLOCK
        (BcFormat::Bc1, true) => 132,  // VK_FORMAT_BC1_RGB_SRGB_BLOCK
        (BcFormat::Bc4, _) => 139,     // VK_FORMAT_BC4_UNORM_BLOCK
        (BcFormat::Bc5, _) => 141,     // VK_FORMAT_BC5_UNORM_BLOCK
        (BcFormat::Bc7, false) => 145, // VK_FORMAT_BC7_UNORM_BLOCK
        (BcFormat::Bc7, true) => 146,  // VK_FORMAT_BC7_SRGB_BLOCK
    }
}

/// `DXGI_FORMAT` of a format.
#[must_use]
pub(crate) fn dxgi_format(format: BcFormat, srgb: bool) -> u32 {
    match (format, srgb) {
        (BcFormat::Bc1, false) => 71, // DXGI_FORMAT_BC1_UNORM
        (BcFormat::Bc1, true) => 72,  // DXGI_FORMAT_BC1_UNORM_SRGB
        (BcFormat::Bc4, _) => 80,     // DXGI_FORMAT_BC4_UNORM
        (BcFormat::Bc5, _) => 83,     // DXGI_FORMAT_BC5_UNORM
        (BcFormat::Bc7, false) => 98, // DXGI_FORMAT_BC7_UNORM
        (BcFormat::Bc7, true) => 99,  // DXGI_FORMAT_BC7_UNORM_SRGB
    }
}

fn push_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn push_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// A KTX 2.0 file of `levels` (level 0 first): header, level index, a basic data format
/// descriptor (BC colour model, BT.709 primaries, sRGB or linear transfer), a `KTXwriter` entry,
/// and the level data stored smallest first, each level aligned to its block size.
#[must_use]
pub fn ktx2_bytes(format: BcFormat, srgb: bool, levels: &[EncodedLevel]) -> Vec<u8> {
    let (width, height) = levels.first().map_or((0, 0), |l| (l.width, l.height));
    // Data format descriptor: one sample per 64-bit half of the block (BC5: red, green).
    let (model, samples): (u8, &[(u16, u8, u8)]) = match format {
        BcFormat::Bc1 => (128, &[(0, 63, 0)]),
        BcFormat::Bc4 => (131, &[(0, 63, 0)]),
        BcFormat::Bc5 => (132, &[(0, 63, 0), (64, 63, 1)]),
        BcFormat::Bc7 => (134, &[(0, 127, 0)]),
    };
    let block_size = 24 + 16 * samples.len();
    let mut dfd = Vec::new();
    push_u32(&mut dfd, (4 + block_size) as u32);
    push_u32(&mut dfd, 0); // vendor 0 (Khronos), descriptor type 0 (basic)
    dfd.extend_from_slice(&2u16.to_le_bytes()); // version 1.3 of the data format spec
    dfd.extend_from_slice(&(block_size as u16).to_le_bytes());
    dfd.extend_from_slice(&[model, 1, if srgb { 2 } else { 1 }, 0]); // model, BT.709, transfer, straight alpha
    dfd.extend_from_slice(&[3, 3, 0, 0]); // 4x4x1x1 blocks
    dfd.extend_from_slice(&[format.block_bytes() as u8, 0, 0, 0, 0, 0, 0, 0]);
    for &(bit_offset, bit_length, channel) in samples {
        dfd.extend_from_slice(&bit_offset.to_le_bytes());
        dfd.extend_from_slice(&[bit_length, channel, 0, 0, 0, 0]);
        push_u32(&mut dfd, 0);
        push_u32(&mut dfd, u32::MAX);
    }
    let mut kvd = Vec::new();
    let entry = format!("KTXwriter\0texset {}\0", env!("CARGO_PKG_VERSION"));
    push_u32(&mut kvd, entry.len() as u32);
    kvd.extend_from_slice(entry.as_bytes());
    while kvd.len() % 4 != 0 {
        kvd.push(0);
    }

    let level_count = levels.len();
    let dfd_offset = 80 + 24 * level_count;
    let kvd_offset = dfd_offset + dfd.len();
    let align = format.block_bytes();
    // Level data, smallest level first.
    let mut offsets = vec![0usize; level_count];
    let mut at = kvd_offset + kvd.len();
    for i in (0..level_count).rev() {
        at = at.next_multiple_of(align);
        offsets[i] = at;
        at += levels[i].blocks.len();
    }

    let mut out = Vec::with_capacity(at);
    out.extend_from_slice(&[0xAB, b'K', b'T', b'X', b' ', b'2', b'0', 0xBB, b'\r', b'\n', 0x1A, b'\n']);
    for v in [vk_format(format, srgb), 1, width, height, 0, 0, 1, level_count as u32, 0] {
        push_u32(&mut out, v);
    }
    for v in [dfd_offset as u32, dfd.len() as u32, kvd_offset as u32, kvd.len() as u32] {
        push_u32(&mut out, v);
    }
    push_u64(&mut out, 0); // no supercompression global data
    push_u64(&mut out, 0);
    for (level, offset) in levels.iter().zip(&offsets) {
        push_u64(&mut out, *offset as u64);
        push_u64(&mut out, level.blocks.len() as u64);
        push_u64(&mut out, level.blocks.len() as u64);
    }
    out.extend_from_slice(&dfd);
    out.extend_from_slice(&kvd);
    for i in (0..level_count).rev() {
        out.resize(offsets[i], 0);
        out.extend_from_slice(&levels[i].blocks);
    }
    out
}

/// A DDS file of `levels` (level 0 first, stored largest first) with the DX10 header.
#[must_use]
pub fn dds_bytes(format: BcFormat, srgb: bool, levels: &[EncodedLevel]) -> Vec<u8> {
    const CAPS: u32 = 0x1;
    const HEIGHT: u32 = 0x2;
    const WIDTH: u32 = 0x4;
    const PIXELFORMAT: u32 = 0x1000;
    const MIPMAPCOUNT: u32 = 0x2_0000;
    const LINEARSIZE: u32 = 0x8_0000;
    let (width, height) = levels.first().map_or((0, 0), |l| (l.width, l.height));
    let mut out = b"DDS ".to_vec();
    push_u32(&mut out, 124);
    push_u32(&mut out, CAPS | HEIGHT | WIDTH | PIXELFORMAT | MIPMAPCOUNT | LINEARSIZE);
    push_u32(&mut out, height);
    push_u32(&mut out, width);
    push_u32(&mut out, levels.first().map_or(0, |l| l.blocks.len() as u32)); // linear size of level 0
    push_u32(&mut out, 0); // depth
    push_u32(&mut out, levels.len() as u32);
    for _ in 0..11 {
        push_u32(&mut out, 0);
    }
    // DDS_PIXELFORMAT: FOURCC "DX10".
    push_u32(&mut out, 32);
    push_u32(&mut out, 0x4); // DDPF_FOURCC
    out.extend_from_slice(b"DX10");
    for _ in 0..5 {
        push_u32(&mut out, 0);
    }
    push_u32(&mut out, 0x1000 | 0x40_0000 | 0x8); // DDSCAPS_TEXTURE | MIPMAP | COMPLEX
    for _ in 0..4 {
        push_u32(&mut out, 0);
    }
    // DDS_HEADER_DXT10.
    push_u32(&mut out, dxgi_format(format, srgb));
    push_u32(&mut out, 3); // D3D10_RESOURCE_DIMENSION_TEXTURE2D
    push_u32(&mut out, 0);
    push_u32(&mut out, 1); // array size
    push_u32(&mut out, 0);
    for level in levels {
        out.extend_from_slice(&level.blocks);
    }
    out
}

/// A map ready to write: its format and levels.
pub struct TranscodedMap {
    /// The format.
    pub format: BcFormat,
    /// sRGB format.
    pub srgb: bool,
    /// Levels, level 0 first.
    pub levels: Vec<EncodedLevel>,
}

/// Block-compresses a whole mip chain, level 0 first (from [`mip_chain`], or every level decoded
/// from a bundle that stores its own mip chain). `chain` must not be empty. What the compression
/// cost is the caller's to measure ([`bcn::decode`] the blocks): a loader need not pay for it.
///
/// A float map's values are written at its scale (its channel ranges applied): check it with
/// [`block_compressible`] first, since BC blocks hold only `[0, 1]`.
#[must_use]
pub fn transcode_chain(chain: &[DecodedMap], entry: &MapEntry, profile: Profile) -> TranscodedMap {
    let channels = chain.first().map_or(entry.info.channels, |l| l.channels);
    let format = profile.format(entry.info.kind, channels);
    let srgb = entry.info.color_space == ColorSpace::Srgb && matches!(format, BcFormat::Bc1 | BcFormat::Bc7);
    let scaled = |l: &DecodedMap| -> Vec<f32> {
        let ch = l.channels.max(1) as usize;
        l.values.iter().enumerate().map(|(i, &t)| entry.info.scaled(i % ch, t)).collect()
    };
    let levels: Vec<EncodedLevel> = chain
        .iter()
        .map(|l| {
            let blocks = if entry.info.sample_format == SampleFormat::F32 {
                bcn::encode(l.width, l.height, l.channels, &scaled(l), format)
            } else {
                bcn::encode(l.width, l.height, l.channels, &l.values, format)
            };
            EncodedLevel { width: l.width, height: l.height, blocks }
        })
        .collect();
    TranscodedMap { format, srgb, levels }
}

/// Whether a map's values fit BC blocks, which hold `[0, 1]`: every 8- and 16-bit map does; a
/// float map does when each channel's range lies within `[0, 1]` (its values are then written at
/// their scale). The error says which range does not (a height in metres, HDR emissive), for the
/// caller to name the map: such a map is decoded to EXR instead (`texset decode`).
pub fn block_compressible(entry: &MapEntry) -> Result<(), String> {
    if entry.info.sample_format != SampleFormat::F32 {
        return Ok(());
    }
    match entry.info.channel_ranges.iter().enumerate().find(|(_, [low, high])| *low < 0.0 || *high > 1.0) {
        Some((c, [low, high])) => {
            Err(format!("a float map whose channel {c} spans {low}..{high}, which BC blocks (0..1) cannot hold; decode it to EXR instead"))
        }
        None => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests fail loudly on any error")]
mod tests {
    use super::*;
    use crate::set::MapKind;

    fn entry(kind: MapKind, channels: u32, color_space: ColorSpace) -> MapEntry {
        let mut entry = MapEntry::for_test(kind, channels, (8, 6));
        entry.info.color_space = color_space;
        entry
    }

    #[test]
    fn mip_chains_go_to_1x1_and_keep_constants_and_unit_normals() {
        let flat = DecodedMap { width: 8, height: 6, channels: 3, values: vec![0.3; 8 * 6 * 3] };
        let chain = mip_chain(&flat, &entry(MapKind::Basecolor, 3, ColorSpace::Srgb));
        let sizes: Vec<(u32, u32)> = chain.iter().map(|l| (l.width, l.height)).collect();
        assert_eq!(sizes, vec![(8, 6), (4, 3), (2, 1), (1, 1)]);
        for l in &chain {
            assert!(l.values.iter().all(|v| (v - 0.3).abs() < 1e-5), "a constant map changed in its mips");
        }
        // Two opposite tilts average to a short vector; the mip renormalises it.
        let mut values = Vec::new();
        for i in 0..4 {
            let nx: f32 = if i % 2 == 0 { 0.6 } else { -0.6 };
            values.extend_from_slice(&[nx * 0.5 + 0.5, 0.5, 0.8 * 0.5 + 0.5]);
        }
        let normals = DecodedMap { width: 2, height: 2, channels: 3, values };
        let chain = mip_chain(&normals, &entry(MapKind::Normal, 3, ColorSpace::Linear));
        let n: Vec<f32> = chain[1].values.iter().map(|t| t * 2.0 - 1.0).collect();
        assert!((n[0].abs()) < 1e-5 && (n[2] - 1.0).abs() < 1e-5, "{n:?}");
    }

    /// A float map is block-compressed at its scale when its range fits `[0, 1]`, and refused
    /// (by [`block_compressible`]) when it does not, instead of its stored `[0, 1]` values being
    /// written as if they were its values (issue 67: ranges were dropped).
    #[test]
    fn float_maps_are_transcoded_at_their_scale_or_refused() {
        let stored = DecodedMap { width: 8, height: 8, channels: 1, values: (0..64).map(|i| i as f32 / 63.0).collect() };
        let mut height = entry(MapKind::Height, 1, ColorSpace::Linear);
        height.info.sample_format = SampleFormat::F32;
        height.info.channel_ranges = vec![[0.25, 0.75]];
        assert!(block_compressible(&height).is_ok());
        let t = transcode_chain(std::slice::from_ref(&stored), &height, Profile::High);
        let back = bcn::decode(&t.levels[0].blocks, 8, 8, 1, MapKind::Height, t.format);
        for (b, s) in back.iter().zip(&stored.values) {
            assert!((b - (0.25 + 0.5 * s)).abs() < 0.02, "{b} for stored {s}");
        }
        height.info.channel_ranges = vec![[-0.5, 2.5]];
        let why = block_compressible(&height).unwrap_err();
        assert!(why.contains("-0.5..2.5"), "{why}");
        assert!(block_compressible(&entry(MapKind::Height, 1, ColorSpace::Linear)).is_ok());
    }
}
