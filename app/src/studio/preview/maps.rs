//! What a preview renderer's texture holds: the maps its side shows, then the originals (the
//! error view's reference). A decoded side's texture leads with the session's CPU decode of the
//! bundle, which the side reads while the view moves (decision 051).

use super::MapsKey;
use std::sync::Arc;
use texset_core::decode::DecodedMap;
use texset_core::eval::bcn::BcRoundTrip;
use texset_core::set::TextureSet;
use texset_shaders::preview::Originals;

/// What renderer `slot`'s texture holds: the maps of `key` (the library's originals, after the
/// block-compressed maps or, for a decoded side, the session's decoded maps of generation `lead`
/// once they are there) and where the originals start.
pub(super) struct SlotMaps {
    pub(super) key: MapsKey,
    pub(super) set: Arc<TextureSet>,
    pub(super) bcn: Option<Vec<Arc<BcRoundTrip>>>,
    /// The generation of the decoded maps that lead the texture (`None`: none do).
    pub(super) lead: Option<u64>,
    /// The texture's maps, kept for a renderer made anew.
    pub(super) uploaded: Arc<Originals>,
}

impl SlotMaps {
    /// Where the originals start in the texture (the error view's reference).
    pub(super) fn reference_offset(&self) -> u32 {
        let leads = self.key.bcn || self.lead.is_some();
        if leads { self.set.materials.get(self.key.material).map_or(0, |m| m.textures.len() as u32) } else { 0 }
    }
}

/// The decoded maps of `material` in `decoded`, where they match its originals map for map.
pub(super) fn decoded_maps_of<'a>(set: &TextureSet, material: usize, decoded: &'a [Vec<DecodedMap>]) -> Option<&'a [DecodedMap]> {
    let originals = set.materials.get(material)?.textures.iter().map(|t| (t.info.width, t.info.height, t.info.channels));
    let maps = decoded.get(material)?;
    fits(originals, maps).then_some(maps.as_slice())
}

/// Whether `decoded` are maps of the sizes and channels `originals` lists, one for one: decoded
/// maps of another library (a decode that finished after it was replaced) never lead a texture.
fn fits(originals: impl ExactSizeIterator<Item = (u32, u32, u32)>, decoded: &[DecodedMap]) -> bool {
    originals.len() == decoded.len() && originals.zip(decoded).all(|(o, d)| o == (d.width, d.height, d.channels))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(width: u32, height: u32, channels: u32) -> DecodedMap {
        DecodedMap { width, height, channels, values: vec![0.5; (width * height * channels) as usize] }
    }

    #[test]
    fn decoded_maps_lead_a_texture_only_where_they_match_the_originals() {
        let originals = [(4, 4, 3), (4, 4, 1)];
        assert!(fits(originals.into_iter(), &[map(4, 4, 3), map(4, 4, 1)]));
        // Another library's: a map fewer, another size, other channels.
        assert!(!fits(originals.into_iter(), &[map(4, 4, 3)]));
        assert!(!fits(originals.into_iter(), &[map(4, 4, 3), map(8, 4, 1)]));
        assert!(!fits(originals.into_iter(), &[map(4, 4, 3), map(4, 4, 2)]));
    }
}
