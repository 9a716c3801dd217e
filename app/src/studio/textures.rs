//! egui textures of the maps on screen (GPU resources, rebuilt on demand, never persisted).

use eframe::egui::{self, ColorImage, TextureHandle, TextureId, TextureOptions};
use std::collections::HashMap;
use texset_core::{
    decode::{DecodedMap, unorm8},
    set::Texture,
};

/// Textures keyed by (material, map) and what they show.
#[derive(Default)]
pub struct Textures {
    original: HashMap<(usize, usize), (usize, TextureHandle)>,
    decoded: HashMap<(usize, usize), (u64, TextureHandle)>,
    difference: HashMap<(usize, usize), (u64, u32, TextureHandle)>,
    /// Decoded maps of experiment-log runs (A/B), by (material, map, run id).
    runs: HashMap<(usize, usize, u64), TextureHandle>,
    library_id: usize,
}

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

/// Nearest filtering: zooming in shows single texels.
const OPTIONS: TextureOptions = TextureOptions::NEAREST;

impl Textures {
    /// Forgets every texture (the library changed); `library_id` tells libraries apart.
    pub fn reset_if_library_changed(&mut self, library_id: usize) {
        if library_id != self.library_id {
            *self = Self { library_id, ..Self::default() };
        }
    }

    /// The original map.
    pub fn original(&mut self, ctx: &egui::Context, material: usize, map: usize, texture: &Texture) -> TextureId {
        let library_id = self.library_id;
        let entry = self.original.entry((material, map));
        let (_, handle) = entry.or_insert_with(|| {
            (
                library_id,
                ctx.load_texture(
                    format!("original {material}/{map}"),
                    to_color_image(&texture.texels, texture.info.width, texture.info.height, texture.info.channels),
                    OPTIONS,
                ),
            )
        });
        handle.id()
    }

    /// A decoded map (`values` laid out as `map`'s; `generation` tells versions apart).
    pub fn decoded(&mut self, ctx: &egui::Context, key: (usize, usize), generation: u64, map: MapRef<'_>) -> TextureId {
        match self.decoded.get(&key) {
            Some((g, handle)) if *g == generation => handle.id(),
            _ => {
                let handle = ctx.load_texture(
                    format!("decoded {}/{}", key.0, key.1),
                    to_color_image(map.values, map.width, map.height, map.channels),
                    OPTIONS,
                );
                let id = handle.id();
                self.decoded.insert(key, (generation, handle));
                id
            }
        }
    }

    /// A decoded map of run `id` of the experiment log (runs never change).
    pub fn run(&mut self, ctx: &egui::Context, key: (usize, usize), id: u64, map: MapRef<'_>) -> TextureId {
        self.runs
            .entry((key.0, key.1, id))
            .or_insert_with(|| {
                ctx.load_texture(
                    format!("run {id} {}/{}", key.0, key.1),
                    to_color_image(map.values, map.width, map.height, map.channels),
                    OPTIONS,
                )
            })
            .id()
    }

    /// |decoded − original| × gain, per channel.
    pub fn difference(
        &mut self,
        ctx: &egui::Context,
        key: (usize, usize),
        generation: u64,
        gain: f32,
        texture: &Texture,
        map: MapRef<'_>,
    ) -> TextureId {
        let gain_key = gain.to_bits();
        match self.difference.get(&key) {
            Some((g, k, handle)) if *g == generation && *k == gain_key => handle.id(),
            _ => {
                let values: Vec<f32> = texture.texels.iter().zip(map.values).map(|(a, b)| ((b - a).abs() * gain).min(1.0)).collect();
                let image = to_color_image(&values, texture.info.width, texture.info.height, texture.info.channels.min(map.channels));
                let handle = ctx.load_texture(format!("difference {}/{}", key.0, key.1), image, OPTIONS);
                let id = handle.id();
                self.difference.insert(key, (generation, gain_key, handle));
                id
            }
        }
    }
}

/// Stored values in `[0, 1]` as an opaque display image: 1 channel grey, 2 as red/green, 3–4 as
/// RGB (alpha is a map of its own meaning, not shown as transparency). Values are shown as stored:
/// colour maps in sRGB look right, data maps show their raw values.
#[must_use]
pub fn to_color_image(values: &[f32], width: u32, height: u32, channels: u32) -> ColorImage {
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
    ColorImage::from_rgba_unmultiplied([width as usize, height as usize], &rgba)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_images_map_channels() {
        let grey = to_color_image(&[0.0, 1.0], 2, 1, 1);
        assert_eq!(grey.pixels[1], egui::Color32::from_rgb(255, 255, 255));
        let two = to_color_image(&[1.0, 0.5], 1, 1, 2);
        assert_eq!(two.pixels[0], egui::Color32::from_rgb(255, 128, 0));
        let four = to_color_image(&[0.0, 0.0, 1.0, 0.0], 1, 1, 4);
        assert_eq!(four.pixels[0], egui::Color32::from_rgb(0, 0, 255));
    }
}
