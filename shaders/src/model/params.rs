//! The decoder's `Params` uniform (decode.wgsl's binding 2, read by its entry points), declared
//! once here: what `GpuDecoder` uploads, and the bytes the C API hands an engine that dispatches
//! `cs_decode_map`, `cs_decode_samples` or `fs_decode_map` itself.

use crate::DecodeMode;

/// decode.wgsl's `Params`, member for member: `params_layout_is_the_wgsl_one` compares the
/// layout naga gives the WGSL struct with this one's.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DecodeParams {
    map_index: u32,
    width: u32,
    height: u32,
    channels: u32,
    sample_count: u32,
    /// 0: stored values; 1: un-mapped for shading ([`DecodeMode`]).
    mode: u32,
    /// The level of detail to decode at.
    lod: f32,
    /// Unused: the struct is 32 bytes.
    pad: u32,
}

impl DecodeParams {
    /// Bytes of the uniform buffer.
    pub const BYTES: usize = std::mem::size_of::<Self>();

    /// A whole map (`sample_count` 0) or `sample_count` samples of library-wide map `map_index`
    /// (`GpuModel::first_map` of its material plus its index), `(width, height, channels)` of the
    /// level decoded, at `lod`.
    #[must_use]
    pub fn new(map_index: u32, (width, height, channels): (u32, u32, u32), sample_count: u32, mode: DecodeMode, lod: f32) -> Self {
        let mode = match mode {
            DecodeMode::Stored => 0,
            DecodeMode::Shading => 1,
        };
        Self { map_index, width, height, channels, sample_count, mode, lod, pad: 0 }
    }

    /// The bytes the uniform buffer takes (`#[repr(C)]`: the 4-byte fields in order,
    /// little-endian).
    #[must_use]
    pub fn bytes(&self) -> [u8; Self::BYTES] {
        let words = [self.map_index, self.width, self.height, self.channels, self.sample_count, self.mode, self.lod.to_bits(), self.pad];
        let mut bytes = [0u8; Self::BYTES];
        for (chunk, word) in bytes.chunks_exact_mut(4).zip(words) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        bytes
    }
}

#[cfg(all(test, feature = "export"))]
mod tests {
    use super::DecodeParams;
    use std::mem::offset_of;

    /// `DecodeParams` and decode.wgsl's `Params` agree member for member, offset for offset.
    #[test]
    fn params_layout_is_the_wgsl_one() {
        let source = format!("{}\n{}", texset_core::model::MODEL_WGSL, crate::DECODE_WGSL);
        let module = naga::front::wgsl::parse_str(&source).expect("the decoder template parses");
        let (members, span) = module
            .types
            .iter()
            .find_map(|(_, ty)| match &ty.inner {
                naga::TypeInner::Struct { members, span } if ty.name.as_deref() == Some("Params") => Some((members.clone(), *span)),
                _ => None,
            })
            .expect("decode.wgsl has a Params struct");
        let wgsl: Vec<(String, usize)> = members.iter().map(|m| (m.name.clone().unwrap_or_default(), m.offset as usize)).collect();
        let ours = [
            ("map_index", offset_of!(DecodeParams, map_index)),
            ("width", offset_of!(DecodeParams, width)),
            ("height", offset_of!(DecodeParams, height)),
            ("channels", offset_of!(DecodeParams, channels)),
            ("sample_count", offset_of!(DecodeParams, sample_count)),
            ("mode", offset_of!(DecodeParams, mode)),
            ("lod", offset_of!(DecodeParams, lod)),
            ("pad", offset_of!(DecodeParams, pad)),
        ]
        .map(|(n, o)| (n.to_owned(), o));
        assert_eq!(wgsl, ours);
        assert_eq!(span as usize, DecodeParams::BYTES);
        let bytes = DecodeParams::new(3, (5, 7, 2), 11, crate::DecodeMode::Shading, 1.5).bytes();
        assert_eq!(bytes[offset_of!(DecodeParams, lod)..][..4], 1.5f32.to_le_bytes());
        assert_eq!(bytes[offset_of!(DecodeParams, mode)..][..4], 1u32.to_le_bytes());
    }
}
