//! The studio's large images (the viewport's, Compare's sides) drawn through an egui paint
//! callback by [`ImageBlit`]: an opaque rectangle that a software GPU draws on its fast path,
//! where egui's own image (tinted, blended) is its slow path (decision 052).

use eframe::egui;
use eframe::egui_wgpu::{self, CallbackResources, CallbackTrait, RenderState, ScreenDescriptor};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use texset_shaders::blit::ImageBlit;

/// An image on screen: 8-bit RGBA rows, sRGB-encoded (the render thread's, or a map's).
pub struct ShownImage {
    /// Distinct for each image in the process (the callback uploads an image once).
    generation: u64,
    /// Width and height, pixels.
    size: [u32; 2],
    /// Tightly packed rows.
    rgba: Vec<u8>,
    /// Sampled bilinear (an image at a fraction of the view's side) or nearest (1:1).
    bilinear: bool,
}

impl ShownImage {
    /// `rgba` of `size`, or why it is not one.
    pub fn new(size: [u32; 2], rgba: Vec<u8>, bilinear: bool) -> Result<Self, String> {
        let expected = u64::from(size[0]) * u64::from(size[1]) * 4;
        if size.contains(&0) || rgba.len() as u64 != expected {
            return Err(format!("a {}x{} image came with {} bytes, not {expected}", size[0], size[1], rgba.len()));
        }
        Ok(Self { generation: next_generation(), size, rgba, bilinear })
    }

    /// One dark grey pixel: the viewport before its first image.
    #[must_use]
    pub fn placeholder() -> Self {
        Self { generation: next_generation(), size: [1, 1], rgba: vec![20, 20, 20, 255], bilinear: false }
    }
}

/// A generation no image in the process had.
fn next_generation() -> u64 {
    static GENERATIONS: AtomicU64 = AtomicU64::new(0);
    GENERATIONS.fetch_add(1, Ordering::Relaxed) + 1
}

/// Where an image is drawn: each place keeps its own texture and parameters, so the images of
/// one frame (the viewport, or Compare's two sides) do not overwrite each other's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum BlitSlot {
    /// The PBR viewport.
    Viewport,
    /// Compare's left side.
    CompareLeft,
    /// Compare's right side.
    CompareRight,
}

/// The blits and what they hold, in egui's renderer ([`install`]).
struct BlitResource {
    target_format: wgpu::TextureFormat,
    /// Each slot's blit and the image it uploaded last.
    slots: HashMap<BlitSlot, (ImageBlit, u64)>,
}

/// Makes the blits' home in egui's renderer, for the surface's format (each slot's pipeline is
/// made on its first image).
pub(crate) fn install(render_state: &RenderState) {
    let resource = BlitResource { target_format: render_state.target_format, slots: HashMap::new() };
    render_state.renderer.write().callback_resources.insert(resource);
}

/// Paints `image` over `rect` in `slot`.
pub(crate) fn paint(painter: &egui::Painter, rect: egui::Rect, image: &Arc<ShownImage>, slot: BlitSlot) {
    let whole = egui::Rect::from_min_max(egui::pos2(0.0, 0.0), egui::pos2(1.0, 1.0));
    paint_part(painter, rect, whole, image, slot);
}

/// Paints the part `uv` of `image` over `rect` in `slot` (only what is on the screen: egui clips
/// the callback's viewport to the screen, and its scissor to the painter's clip rectangle).
pub(crate) fn paint_part(painter: &egui::Painter, rect: egui::Rect, uv: egui::Rect, image: &Arc<ShownImage>, slot: BlitSlot) {
    let on_screen = rect.intersect(painter.ctx().viewport_rect());
    if !on_screen.is_positive() {
        return;
    }
    let at = |p: egui::Pos2| {
        let t = (p - rect.min) / rect.size();
        [uv.min.x + t.x * uv.width(), uv.min.y + t.y * uv.height()]
    };
    let callback = ViewportImage { image: Arc::clone(image), slot, uv_min: at(on_screen.min), uv_max: at(on_screen.max) };
    painter.add(egui_wgpu::Callback::new_paint_callback(on_screen, callback));
}

/// One frame's draw of an image.
struct ViewportImage {
    image: Arc<ShownImage>,
    slot: BlitSlot,
    uv_min: [f32; 2],
    uv_max: [f32; 2],
}

impl CallbackTrait for ViewportImage {
    fn prepare(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        _screen: &ScreenDescriptor,
        _encoder: &mut wgpu::CommandEncoder,
        resources: &mut CallbackResources,
    ) -> Vec<wgpu::CommandBuffer> {
        let Some(resource) = resources.get_mut::<BlitResource>() else { return Vec::new() };
        let format = resource.target_format;
        let (blit, uploaded) = resource.slots.entry(self.slot).or_insert_with(|| (ImageBlit::new(device, format), 0));
        if *uploaded != self.image.generation {
            let image = &self.image;
            // `ShownImage::new` checked the bytes against the size; what `upload` refuses beyond
            // that (a side over the device's limit) is said here, and the slot keeps its last image.
            if let Err(e) = blit.upload(device, queue, image.size, &image.rgba, image.bilinear) {
                eprintln!("texset: image {}: {e}", image.generation);
            }
            *uploaded = image.generation;
        }
        blit.set_uv(queue, self.uv_min, self.uv_max);
        Vec::new()
    }

    fn paint(&self, _info: egui::PaintCallbackInfo, pass: &mut wgpu::RenderPass<'static>, resources: &CallbackResources) {
        if let Some((blit, _)) = resources.get::<BlitResource>().and_then(|r| r.slots.get(&self.slot)) {
            blit.draw(pass);
        }
    }
}
