//! The BC codec engines ship textures in (BC1/BC4/BC5/BC7 with `block_compression`, a Rust port
//! of Intel's ISPC encoders, and its decoders): the blocks that `transcode` writes into KTX2/DDS
//! and that the baselines of [`crate::eval::bcn`] score.

use crate::set::MapKind;
use block_compression::{BC7Settings, CompressionVariant};
use serde::Serialize;

/// A block-compression format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum BcFormat {
    /// RGB, 4 bits per texel.
    Bc1,
    /// One channel, 4 bits per texel.
    Bc4,
    /// Two channels, 8 bits per texel (normal maps: x and y, z rebuilt).
    Bc5,
    /// RGB(A), 8 bits per texel, the best-quality LDR format.
    Bc7,
}

impl BcFormat {
    /// Bytes of one 4×4 block.
    #[must_use]
    pub fn block_bytes(self) -> usize {
        match self {
            Self::Bc1 | Self::Bc4 => 8,
            Self::Bc5 | Self::Bc7 => 16,
        }
    }

    /// Storage cost: a block's bits over its 16 texels.
    #[must_use]
    pub fn bits_per_texel(self) -> f64 {
        (self.block_bytes() * 8) as f64 / 16.0
    }

    /// What engines use for a map of this kind and channel count: BC5 for normals (z rebuilt),
    /// BC4 for one channel, BC5 for two, BC7 for colour and packed maps.
    #[must_use]
    pub fn for_map(kind: MapKind, channels: u32) -> Self {
        match (kind, channels) {
            (MapKind::Normal, 3..) | (_, 2) => Self::Bc5,
            (_, 1) => Self::Bc4,
            _ => Self::Bc7,
        }
    }
}

/// Which formats the maps of a set get, as an engine would ship them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Profile {
    /// High quality: BC7 for colour and packed maps, BC5 for normals and two channels, BC4 for one.
    High,
    /// Low: BC1 for colour, packed and normal maps, BC5 for two channels, BC4 for one.
    Low,
}

impl Profile {
    /// The format a map of this kind and channel count gets.
    #[must_use]
    pub fn format(self, kind: MapKind, channels: u32) -> BcFormat {
        match (self, channels) {
            (Self::High, _) => BcFormat::for_map(kind, channels),
            (Self::Low, 1) => BcFormat::Bc4,
            (Self::Low, 2) => BcFormat::Bc5,
            (Self::Low, _) => BcFormat::Bc1,
        }
    }
}

fn variant(format: BcFormat, channels: u32) -> CompressionVariant {
    match format {
        BcFormat::Bc1 => CompressionVariant::BC1,
        BcFormat::Bc4 => CompressionVariant::BC4,
        BcFormat::Bc5 => CompressionVariant::BC5,
        BcFormat::Bc7 => CompressionVariant::BC7(if channels == 4 { BC7Settings::alpha_basic() } else { BC7Settings::opaque_basic() }),
    }
}

/// Block-compresses `texels` (`[y][x][c]`, `channels` per texel, in `[0, 1]`) of a `width` x
/// `height` image with `format`: the blocks in row order, as GPUs and KTX2/DDS files hold them.
/// Sizes that are not multiples of 4 are padded by repeating the edge.
#[must_use]
pub fn encode(width: u32, height: u32, channels: u32, texels: &[f32], format: BcFormat) -> Vec<u8> {
    let (w, h, c) = (width as usize, height as usize, channels as usize);
    // Blocks are 4×4. The encoder reads RGBA8 for every format (BC4 uses R, BC5 R and G).
    let (pw, ph) = (w.div_ceil(4) * 4, h.div_ceil(4) * 4);
    let byte = crate::decode::unorm8;
    let mut rgba = vec![0u8; pw * ph * 4];
    for y in 0..ph {
        for x in 0..pw {
            let src = &texels[(y.min(h - 1) * w + x.min(w - 1)) * c..][..c];
            let dst = &mut rgba[(y * pw + x) * 4..][..4];
            match c {
                1 => dst.copy_from_slice(&[byte(src[0]), byte(src[0]), byte(src[0]), 255]),
                2 => dst.copy_from_slice(&[byte(src[0]), byte(src[1]), 0, 255]),
                3 => dst.copy_from_slice(&[byte(src[0]), byte(src[1]), byte(src[2]), 255]),
                _ => dst.copy_from_slice(&[byte(src[0]), byte(src[1]), byte(src[2]), byte(src[3])]),
            }
        }
    }
    let variant = variant(format, channels);
    let (pw32, ph32) = (pw as u32, ph as u32);
    let mut blocks = vec![0u8; variant.blocks_byte_size(pw32, ph32)];
    block_compression::encode::compress_rgba8(variant, &rgba, &mut blocks, pw32, ph32, pw32 * 4);
    blocks
}

/// Decodes blocks made by [`encode`] back to `channels` values per texel in `[0, 1]` (BC5 normal
/// maps get z rebuilt from x and y).
#[must_use]
pub fn decode(blocks: &[u8], width: u32, height: u32, channels: u32, kind: MapKind, format: BcFormat) -> Vec<f32> {
    let (w, h, c) = (width as usize, height as usize, channels as usize);
    let (pw, ph) = (w.div_ceil(4) * 4, h.div_ceil(4) * 4);
    let mut decoded = vec![0u8; pw * ph * 4];
    block_compression::decode::decompress_blocks_as_rgba8(variant(format, channels), pw as u32, ph as u32, blocks, &mut decoded);
    let mut values = Vec::with_capacity(w * h * c);
    for y in 0..h {
        for x in 0..w {
            let p = &decoded[(y * pw + x) * 4..][..4];
            let unit = |b: u8| f32::from(b) / 255.0;
            for k in 0..c {
                let v = match (format, k) {
                    (BcFormat::Bc5, 2) if kind == MapKind::Normal => {
                        let (nx, ny) = (unit(p[0]) * 2.0 - 1.0, unit(p[1]) * 2.0 - 1.0);
                        (1.0 - nx * nx - ny * ny).max(0.0).sqrt() * 0.5 + 0.5
                    }
                    (BcFormat::Bc4, _) => unit(p[0]),
                    (BcFormat::Bc5, k) => unit(p[k.min(1)]),
                    (_, 3) if c == 4 => unit(p[3]),
                    _ if c == 1 => unit(p[0]),
                    (_, k) => unit(p[k.min(2)]),
                };
                values.push(v);
            }
        }
    }
    values
}
