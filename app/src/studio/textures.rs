//! Display images of the maps on screen (8-bit RGBA, drawn by [`super::blit`]; rebuilt on demand,
//! never persisted).

use super::blit::ShownImage;
use std::collections::HashMap;
use std::sync::Arc;
use texset_core::{
    decode::{DecodedMap, unorm8},
    set::Texture,
};

/// Images keyed by (material, map) and what they show.
#[derive(Default)]
pub struct Textures {
    original: HashMap<(usize, usize), Image>,
    decoded: HashMap<(usize, usize), (u64, Image)>,
    difference: HashMap<(usize, usize), (u64, u32, Image)>,
    /// Decoded maps of experiment-log runs (A/B), by (material, map, run id).
    runs: HashMap<(usize, usize, u64), Image>,
    library_id: usize,
}

/// An image of a map, as the blit draws it.
pub type Image = Arc<ShownImage>;

/// Values of a map as decoded (neural or BCn): width, height, channels, `[y][x][c]` values.
#[derive(Clone, Copy)]
pub struct MapRef<'a> {
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
    /// Channels.
    pub channels: u32,
    /// Values in `[0, 1]`.
    pub values: &'a [f32],
}

impl<'a> From<&'a DecodedMap> for MapRef<'a> {
    fn from(m: &'a DecodedMap) -> Self {
        Self { width: m.width, height: m.height, channels: m.channels, values: &m.values }
    }
}

/// A display image of `values` (see [`to_rgba8`]), sampled nearest: zooming in shows single
/// texels.
fn image(values: &[f32], width: u32, height: u32, channels: u32) -> Image {
    // `to_rgba8` makes exactly width × height texels; a map of no texels shows one black one.
    let (size, rgba) =
        if width == 0 || height == 0 { ([1, 1], vec![0, 0, 0, 255]) } else { ([width, height], to_rgba8(values, width, height, channels)) };
    Arc::new(ShownImage::new(size, rgba, false).unwrap_or_else(|_| ShownImage::placeholder()))
}

impl Textures {
    /// Forgets every texture (the library changed); `library_id` tells libraries apart.
    pub fn reset_if_library_changed(&mut self, library_id: usize) {
        if library_id != self.library_id {
            *self = Self { library_id, ..Self::default() };
        }
    }

    /// The original map.
    pub fn original(&mut self, material: usize, map: usize, texture: &Texture) -> Image {
        let info = &texture.info;
        Arc::clone(self.original.entry((material, map)).or_insert_with(|| image(&texture.texels, info.width, info.height, info.channels)))
    }

    /// A decoded map (`values` laid out as `map`'s; `generation` tells versions apart).
    pub fn decoded(&mut self, key: (usize, usize), generation: u64, map: MapRef<'_>) -> Image {
        match self.decoded.get(&key) {
            Some((g, shown)) if *g == generation => Arc::clone(shown),
            _ => {
                let shown = image(map.values, map.width, map.height, map.channels);
                self.decoded.insert(key, (generation, Arc::clone(&shown)));
                shown
            }
        }
    }

    /// A decoded map of run `id` of the experiment log (runs never change).
    pub fn run(&mut self, key: (usize, usize), id: u64, map: MapRef<'_>) -> Image {
        Arc::clone(self.runs.entry((key.0, key.1, id)).or_insert_with(|| image(map.values, map.width, map.height, map.channels)))
    }

    /// |decoded − original| × gain, per channel.
    pub fn difference(&mut self, key: (usize, usize), generation: u64, gain: f32, texture: &Texture, map: MapRef<'_>) -> Image {
        let gain_key = gain.to_bits();
        match self.difference.get(&key) {
            Some((g, k, shown)) if *g == generation && *k == gain_key => Arc::clone(shown),
            _ => {
                let values: Vec<f32> = texture.texels.iter().zip(map.values).map(|(a, b)| ((b - a).abs() * gain).min(1.0)).collect();
                let shown = image(&values, texture.info.width, texture.info.height, texture.info.channels.min(map.channels));
                self.difference.insert(key, (generation, gain_key, Arc::clone(&shown)));
                shown
            }
        }
    }
}

/// Stored values in `[0, 1]` as an opaque display image: 1 channel grey, 2 as red/green, 3–4 as
/// RGB (alpha is a map of its own meaning, not shown as transparency). Values are shown as stored:
/// colour maps in sRGB look right, data maps show their raw values.
#[must_use]
pub fn to_rgba8(values: &[f32], width: u32, height: u32, channels: u32) -> Vec<u8> {
    let channels = channels.max(1) as usize;
    let byte = unorm8;
    let mut rgba = Vec::with_capacity(width as usize * height as usize * 4);
    for texel in values.chunks_exact(channels).take(width as usize * height as usize) {
        let (r, g, b) = match channels {
            1 => (texel[0], texel[0], texel[0]),
            2 => (texel[0], texel[1], 0.0),
            _ => (texel[0], texel[1], texel[2]),
        };
        rgba.extend_from_slice(&[byte(r), byte(g), byte(b), 255]);
    }
    rgba.resize(width as usize * height as usize * 4, 255);
    rgba
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_images_map_channels() {
        let grey = to_rgba8(&[0.0, 1.0], 2, 1, 1);
        assert_eq!(grey[4..], [255, 255, 255, 255]);
        let two = to_rgba8(&[1.0, 0.5], 1, 1, 2);
        assert_eq!(two, [255, 128, 0, 255]);
        let four = to_rgba8(&[0.0, 0.0, 1.0, 0.0], 1, 1, 4);
        assert_eq!(four, [0, 0, 255, 255]);
        // A map whose values stop short is padded opaque, never shorter than its size.
        assert_eq!(to_rgba8(&[0.5], 2, 1, 1).len(), 8);
    }
}
