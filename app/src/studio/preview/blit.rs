//! The viewport's image drawn through an egui paint callback by [`ImageBlit`]: an opaque
//! rectangle that a software GPU draws on its fast path, where egui's own image (tinted,
//! blended) is its slow path (decision 052).

use eframe::egui;
use eframe::egui_wgpu::{self, CallbackResources, CallbackTrait, RenderState, ScreenDescriptor};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use texset_shaders::blit::ImageBlit;

/// An image the viewport shows: 8-bit RGBA rows, sRGB-encoded, as the render thread made them.
pub(crate) struct ShownImage {
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
    pub(crate) fn new(size: [u32; 2], rgba: Vec<u8>, bilinear: bool) -> Result<Self, String> {
        let expected = u64::from(size[0]) * u64::from(size[1]) * 4;
        if size.contains(&0) || rgba.len() as u64 != expected {
            return Err(format!("a {}x{} image came with {} bytes, not {expected}", size[0], size[1], rgba.len()));
        }
        Ok(Self { generation: next_generation(), size, rgba, bilinear })
    }

    /// One dark grey pixel: the viewport before its first image.
    pub(crate) fn placeholder() -> Self {
        Self { generation: next_generation(), size: [1, 1], rgba: vec![20, 20, 20, 255], bilinear: false }
    }
}

/// A generation no image in the process had.
fn next_generation() -> u64 {
    static GENERATIONS: AtomicU64 = AtomicU64::new(0);
    GENERATIONS.fetch_add(1, Ordering::Relaxed) + 1
}

/// The blit and what it holds, in egui's renderer ([`install`]).
struct BlitResource {
    blit: ImageBlit,
    /// The image uploaded last.
    generation: Option<u64>,
}

/// Makes the blit's pipeline on the studio's device, for the surface's format.
pub(crate) fn install(render_state: &RenderState) {
    let blit = ImageBlit::new(&render_state.device, render_state.target_format);
    render_state.renderer.write().callback_resources.insert(BlitResource { blit, generation: None });
}

/// Paints `image` over `rect` (its part on the screen: egui clips the callback's viewport to the
/// screen, and its scissor to the clip rectangle).
pub(crate) fn paint(painter: &egui::Painter, rect: egui::Rect, image: &Arc<ShownImage>) {
    let screen = painter.ctx().viewport_rect();
    let on_screen = rect.intersect(screen);
    if !on_screen.is_positive() {
        return;
    }
    let uv = |p: egui::Pos2| [(p.x - rect.min.x) / rect.width(), (p.y - rect.min.y) / rect.height()];
    let callback = ViewportImage { image: Arc::clone(image), uv_min: uv(on_screen.min), uv_max: uv(on_screen.max) };
    painter.add(egui_wgpu::Callback::new_paint_callback(on_screen, callback));
}

/// One frame's draw of the image.
struct ViewportImage {
    image: Arc<ShownImage>,
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
        if resource.generation != Some(self.image.generation) {
            let image = &self.image;
            // `ShownImage::new` checked the bytes against the size, which is all `upload` checks.
            if let Err(e) = resource.blit.upload(device, queue, image.size, &image.rgba, image.bilinear) {
                eprintln!("texset: viewport image {}: {e}", image.generation);
            }
            resource.generation = Some(image.generation);
        }
        resource.blit.set_uv(queue, self.uv_min, self.uv_max);
        Vec::new()
    }

    fn paint(&self, _info: egui::PaintCallbackInfo, pass: &mut wgpu::RenderPass<'static>, resources: &CallbackResources) {
        if let Some(resource) = resources.get::<BlitResource>() {
            resource.blit.draw(pass);
        }
    }
}
