//! The PBR preview panel: `texset_shaders::preview` drawn inside egui through an `egui_wgpu`
//! paint callback, on the device egui renders with. The decoded material is on the left; with
//! "original beside" the same scene shaded from the original maps is on the right.

use super::session::Session;
use super::state::{PreviewShape, ViewSettings};
use eframe::egui;
use eframe::egui_wgpu::{self, CallbackResources, CallbackTrait, RenderState};
use std::sync::Arc;
use texset_core::bundle::Bundle;
use texset_shaders::preview::{Originals, PreviewRenderer, PreviewUniforms, Shape};

/// Largest side of one preview square, in points.
const MAX_SIDE_POINTS: f32 = 520.0;

/// What the GPU holds now (in egui-wgpu's callback resources).
struct Resources {
    renderer: PreviewRenderer,
    generation: u64,
    originals_of: Option<(usize, usize)>,
    target: Option<Target>,
    /// What the target shows (redrawn only when this changes).
    drawn: Option<Drawn>,
}

/// The offscreen texture the preview is drawn into, registered with egui as an image.
struct Target {
    texture: wgpu::Texture,
    view: wgpu::TextureView,
    id: egui::TextureId,
}

/// Everything a preview image depends on.
#[derive(Clone, Copy, PartialEq)]
struct Drawn {
    uniforms: [PreviewUniforms; 2],
    sides: usize,
    generation: u64,
    originals_of: Option<(usize, usize)>,
    size: [u32; 2],
}

/// The paint callback: its `prepare` draws the preview into the offscreen target with egui's
/// encoder (before egui's own pass, which then shows the target as an image).
struct PreviewCallback {
    drawn: Drawn,
}

impl CallbackTrait for PreviewCallback {
    fn prepare(
        &self,
        _device: &wgpu::Device,
        queue: &wgpu::Queue,
        _screen: &egui_wgpu::ScreenDescriptor,
        encoder: &mut wgpu::CommandEncoder,
        resources: &mut CallbackResources,
    ) -> Vec<wgpu::CommandBuffer> {
        let Some(r) = resources.get_mut::<Resources>() else { return Vec::new() };
        if r.drawn == Some(self.drawn) {
            return Vec::new();
        }
        let Some(target) = &r.target else { return Vec::new() };
        for (side, u) in self.drawn.uniforms.iter().enumerate().take(self.drawn.sides) {
            r.renderer.write_uniforms(queue, side, u);
        }
        r.renderer.encode(encoder, &target.view, self.drawn.size[0], self.drawn.size[1], self.drawn.sides);
        r.drawn = Some(self.drawn);
        Vec::new()
    }

    fn paint(&self, _info: egui::PaintCallbackInfo, _pass: &mut wgpu::RenderPass<'static>, _resources: &CallbackResources) {}
}

/// Makes sure the GPU has the bundle, the material's originals and a target of `size`; returns
/// the target's egui texture.
fn sync_resources(
    render_state: &RenderState,
    session: &Session,
    bundle: &Arc<Bundle>,
    generation: u64,
    material: usize,
    size: [u32; 2],
) -> Result<(egui::TextureId, Option<(usize, usize)>), String> {
    let mut renderer_guard = render_state.renderer.write();
    let device = &render_state.device;
    if renderer_guard.callback_resources.get::<Resources>().is_none() {
        let renderer = PreviewRenderer::new(device, bundle, TARGET_FORMAT).map_err(|e| e.to_string())?;
        renderer_guard.callback_resources.insert(Resources { renderer, generation, originals_of: None, target: None, drawn: None });
    }
    // The target: (re)created when the size changes, and registered with egui.
    let current = renderer_guard.callback_resources.get::<Resources>().and_then(|r| r.target.as_ref().map(|t| (t.texture.size(), t.id)));
    let id = match current {
        Some((extent, id)) if [extent.width, extent.height] == size => id,
        other => {
            let texture = device.create_texture(&wgpu::TextureDescriptor {
                label: Some("texset preview image"),
                size: wgpu::Extent3d { width: size[0], height: size[1], depth_or_array_layers: 1 },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: TARGET_FORMAT,
                usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING,
                view_formats: &[],
            });
            let view = texture.create_view(&wgpu::TextureViewDescriptor::default());
            let id = match other {
                Some((_, id)) => {
                    renderer_guard.update_egui_texture_from_wgpu_texture(device, &view, wgpu::FilterMode::Linear, id);
                    id
                }
                None => renderer_guard.register_native_texture(device, &view, wgpu::FilterMode::Linear),
            };
            if let Some(r) = renderer_guard.callback_resources.get_mut::<Resources>() {
                r.target = Some(Target { texture, view, id });
                r.drawn = None;
            }
            id
        }
    };
    let Some(r) = renderer_guard.callback_resources.get_mut::<Resources>() else { return Ok((id, None)) };
    if r.generation != generation {
        r.renderer.set_bundle(device, bundle).map_err(|e| e.to_string())?;
        r.generation = generation;
        r.drawn = None;
    }
    let library_id = Arc::as_ptr(&session.library.set) as usize;
    if r.originals_of != Some((library_id, material))
        && let Some(m) = session.library.set.materials.get(material)
    {
        // Manifest order is the set's order (pack writes maps as ingest sorted them).
        let maps: Vec<(u32, u32, u32, &[f32])> = m.textures.iter().map(|t| (t.width, t.height, t.channels, t.texels.as_slice())).collect();
        r.renderer.set_originals(device, &render_state.queue, &Originals::from_maps(&maps)).map_err(|e| e.to_string())?;
        r.originals_of = Some((library_id, material));
    }
    Ok((id, r.originals_of))
}

/// egui shows native textures of this format, as sRGB-encoded values.
const TARGET_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;

/// The preview panel.
pub fn preview_ui(ui: &mut egui::Ui, session: &Session, view: &mut ViewSettings, render_state: Option<&RenderState>) {
    super::panels::preview_controls_ui(ui, view);
    let Some(render_state) = render_state else {
        ui.label("The PBR preview needs the wgpu renderer; this window has none.");
        return;
    };
    let Some(trained) = &session.trained else {
        ui.label("Train (or wait for the first snapshot) to see the material lit.");
        return;
    };
    if view.material >= trained.bundle.manifest.materials.len() {
        return;
    }
    if view.lights_orbit {
        let dt = ui.input(|i| i.stable_dt).min(0.1);
        view.light_angle = (view.light_angle + dt * view.light_speed).rem_euclid(std::f32::consts::TAU);
        ui.ctx().request_repaint();
    }
    let sides = if view.show_original { 2 } else { 1 };
    // Every pixel runs the decoder's MLP: cap the drawn area, and draw at half resolution on a
    // software GPU (which then redraws about once a second while the lights orbit).
    let available = ui.available_size().min(ui.clip_rect().size()).max(egui::Vec2::splat(64.0));
    let side = (available.x / sides as f32).min(available.y).min(MAX_SIDE_POINTS);
    let (rect, _) = ui.allocate_exact_size(egui::vec2(side * sides as f32, side), egui::Sense::hover());
    let software = render_state.adapter.get_info().device_type == wgpu::DeviceType::Cpu;
    let scale = ui.ctx().pixels_per_point() * if software { 0.5 } else { 1.0 };
    let size = [((rect.width() * scale).round() as u32).max(sides as u32), ((rect.height() * scale).round() as u32).max(1)];
    let (texture, originals_of) = match sync_resources(render_state, session, &trained.bundle, trained.generation, view.material, size) {
        Ok(t) => t,
        Err(e) => {
            ui.colored_label(egui::Color32::from_rgb(230, 120, 90), format!("preview: {e}"));
            return;
        }
    };
    let shape = match view.shape {
        PreviewShape::Sphere => Shape::Sphere,
        PreviewShape::Plane => Shape::Plane,
        PreviewShape::Cube => Shape::Cube,
    };
    let mut base = PreviewUniforms::new(&trained.bundle.manifest, view.material, view.light_angle, view.light_intensity, shape, 1.0)
        .with_srgb_encoding(true);
    if trained.bundle.manifest.mip_levels > 1 {
        // Each side is a square of `size[1]` pixels: filter by level of detail so a shape that
        // shows the texture smaller than its texels does not shimmer.
        base = base.with_lod_filter(size[1] as f32);
    }
    let drawn = Drawn { uniforms: [base, base.with_originals(true)], sides, generation: trained.generation, originals_of, size };
    ui.painter().add(egui_wgpu::Callback::new_paint_callback(rect, PreviewCallback { drawn }));
    ui.painter().image(texture, rect, egui::Rect::from_min_max(egui::pos2(0.0, 0.0), egui::pos2(1.0, 1.0)), egui::Color32::WHITE);
    let font = egui::FontId::proportional(13.0);
    ui.painter().text(
        rect.left_top() + egui::vec2(6.0, 4.0),
        egui::Align2::LEFT_TOP,
        "decoded in the shader",
        font.clone(),
        egui::Color32::WHITE,
    );
    if sides == 2 {
        ui.painter().text(rect.center_top() + egui::vec2(6.0, 4.0), egui::Align2::LEFT_TOP, "original maps", font, egui::Color32::WHITE);
    }
}
