//! What the viewport draws over its image and how the mouse drives it: each side's label, the
//! wipe's divider, the legend of a false-colour view, the notes on scale and compiles; the camera
//! and the divider under the mouse.

use super::{PreviewGpu, Source};
use crate::studio::state::{CameraSettings, PreviewShape, SideSource, ViewSettings};
use eframe::egui;
use texset_shaders::preview::{HEAT_RAMP, Layout, MeshBounds, Shape, ViewMode, heat};

/// Paints the last image into `rect`, with what each side shows, the wipe's divider, the legend
/// of a false-colour view, and the notes on its scale and on a model being prepared.
pub(super) fn paint_image(ui: &mut egui::Ui, gpu: &PreviewGpu, rect: egui::Rect, view: &ViewSettings) {
    if let Some(e) = &gpu.error {
        ui.colored_label(egui::Color32::from_rgb(230, 120, 90), format!("preview: {e}"));
    }
    let font = egui::FontId::proportional(13.0);
    let painter = ui.painter();
    // Labels go where the view is seen (a side panel may cover its edge).
    let seen = rect.intersect(ui.clip_rect());
    let text = |at: egui::Pos2, align: egui::Align2, note: String, colour: egui::Color32| {
        // A dark halo keeps a label legible over a bright background.
        painter.text(at + egui::vec2(1.0, 1.0), align, &note, font.clone(), egui::Color32::from_black_alpha(200));
        painter.text(at, align, note, font.clone(), colour);
    };
    match &gpu.shown {
        Some((shows, scale, image)) => {
            crate::studio::blit::paint(painter, rect, image, crate::studio::blit::BlitSlot::Viewport);
            let label = |side: usize| {
                let source = shows.view.sides[side]?;
                Some(match (source, shows.sources[side]) {
                    (SideSource::Original, Some(Source::Originals(_))) if shows.view.sides[1].is_none() => {
                        "original maps (the decoded material follows the first snapshot)".to_owned()
                    }
                    // The decode-on-load path (decision 051): said, so no one reviews it for what
                    // the shader decodes.
                    (SideSource::Decoded, _) if shows.textures[side] => {
                        "decoded from the bundle's bytes into textures (per pixel, as shipped, once the view rests)".to_owned()
                    }
                    (source, _) => source.name(),
                })
            };
            let white = egui::Color32::WHITE;
            if let Some(left) = label(0) {
                text(rect.left_top() + egui::vec2(6.0, 4.0), egui::Align2::LEFT_TOP, left, white);
            }
            if let Some(right) = label(1) {
                match shows.view.layout {
                    Layout::Beside => text(rect.center_top() + egui::vec2(6.0, 4.0), egui::Align2::LEFT_TOP, right, white),
                    _ => text(seen.right_top() + egui::vec2(-6.0, 4.0), egui::Align2::RIGHT_TOP, right, white),
                }
            }
            let channel = shows.view.lighting.view;
            if channel != ViewMode::Lit {
                let note = format!("{} (unlit; C: next view, M: lit)", channel.name());
                text(seen.center_top() + egui::vec2(0.0, 22.0), egui::Align2::CENTER_TOP, note, egui::Color32::YELLOW);
            }
            if *scale < 1.0 {
                let note = format!("{:.0}% resolution while moving", scale * 100.0);
                text(rect.left_bottom() + egui::vec2(6.0, -4.0), egui::Align2::LEFT_BOTTOM, note, egui::Color32::LIGHT_GRAY);
            }
        }
        // Blitted too: while the preview compiles, an egui rectangle the viewport's size was
        // most of a software GPU's frame (decision 052).
        None => crate::studio::blit::paint(painter, rect, &gpu.placeholder, crate::studio::blit::BlitSlot::Viewport),
    }
    if let Some(x) = divider_x(rect, current_layout(gpu, view)) {
        painter.line_segment([egui::pos2(x, rect.top()), egui::pos2(x, rect.bottom())], egui::Stroke::new(2.0, egui::Color32::WHITE));
        painter.circle_filled(egui::pos2(x, rect.center().y), 7.0, egui::Color32::WHITE);
    }
    if matches!(view.channel, ViewMode::Error | ViewMode::MipLevel) {
        legend(painter, seen, view, &text);
    }
    let probe_pending = gpu.shown.as_ref().zip(gpu.last_view).is_some_and(|((shows, _, _), wanted)| shows.view.probe != wanted.probe);
    let note = if let Some(since) = gpu.waiting_since {
        Some(format!("preparing preview… (compiling the decoder for this GPU, {} s)", since.elapsed().as_secs()))
    } else if probe_pending {
        Some("preparing the view… (the first time, the decoder compiles again for it)".to_owned())
    } else if gpu.block_compressing() {
        Some("block-compressing the maps (BC7/BC5/BC4)…".to_owned())
    } else {
        None
    };
    if let Some(note) = note {
        text(rect.center(), egui::Align2::CENTER_CENTER, note, egui::Color32::WHITE);
    }
}

/// The layout the view asks for now (the divider follows the mouse before the image does).
fn current_layout(gpu: &PreviewGpu, view: &ViewSettings) -> Layout {
    match gpu.last_view.map(|v| v.layout) {
        Some(Layout::Wipe(_)) => Layout::Wipe(view.wipe_split.clamp(0.0, 1.0)),
        Some(layout) => layout,
        None => Layout::One,
    }
}

/// Where a wipe's divider is drawn in `rect` (`None`: no wipe).
fn divider_x(rect: egui::Rect, layout: Layout) -> Option<f32> {
    match layout {
        Layout::Wipe(split) => Some(rect.left() + split * rect.width()),
        Layout::One | Layout::Beside => None,
    }
}

/// The heat ramp as a bar at the bottom right of `rect`, with what its ends mean.
fn legend(painter: &egui::Painter, rect: egui::Rect, view: &ViewSettings, text: &dyn Fn(egui::Pos2, egui::Align2, String, egui::Color32)) {
    let (width, height) = (180.0, 10.0);
    let bar = egui::Rect::from_min_size(rect.right_bottom() + egui::vec2(-width - 12.0, -height - 24.0), egui::vec2(width, height));
    let steps = 36;
    for i in 0..steps {
        let t = (i as f32 + 0.5) / steps as f32;
        let c = heat(t).map(|v| (v.clamp(0.0, 1.0) * 255.0).round() as u8);
        let x0 = bar.left() + bar.width() * i as f32 / steps as f32;
        let cell = egui::Rect::from_min_max(egui::pos2(x0, bar.top()), egui::pos2(x0 + bar.width() / steps as f32 + 0.5, bar.bottom()));
        painter.rect_filled(cell, 0.0, egui::Color32::from_rgb(c[0], c[1], c[2]));
    }
    debug_assert_eq!(HEAT_RAMP.len(), 5);
    let (title, low, high) = if view.channel == ViewMode::Error {
        let full = view.lighting.lighting().error_full_scale;
        let map = view.error_map.map_or_else(|| "every map, pooled".to_owned(), |k| k.to_string());
        (format!("mean |shown - original| a texel, {map}"), "0".to_owned(), format!("{:.1}/255", full * 255.0))
    } else {
        ("mip level read (0: a texel a pixel)".to_owned(), "-1".to_owned(), "4+".to_owned())
    };
    let grey = egui::Color32::LIGHT_GRAY;
    text(bar.left_top() + egui::vec2(0.0, -2.0), egui::Align2::LEFT_BOTTOM, title, grey);
    text(bar.left_bottom() + egui::vec2(0.0, 2.0), egui::Align2::LEFT_TOP, low, grey);
    text(bar.right_bottom() + egui::vec2(0.0, 2.0), egui::Align2::RIGHT_TOP, high, grey);
}

/// A drag that starts near the wipe's divider moves it; true while it does (the camera then
/// stays).
pub(super) fn divider_input(ui: &egui::Ui, rect: egui::Rect, layout: Layout, view: &mut ViewSettings) -> bool {
    let Some(x) = divider_x(rect, layout) else { return false };
    let grip = egui::Rect::from_min_max(egui::pos2(x - 8.0, rect.top()), egui::pos2(x + 8.0, rect.bottom()));
    let response = ui
        .interact(grip, ui.make_persistent_id("texset wipe divider"), egui::Sense::drag())
        .on_hover_cursor(egui::CursorIcon::ResizeHorizontal);
    if response.dragged() {
        if let Some(pointer) = response.interact_pointer_pos() {
            view.wipe_split = ((pointer.x - rect.left()) / rect.width().max(1.0)).clamp(0.0, 1.0);
        }
        return true;
    }
    response.hovered()
}

/// The mouse on the viewport `rect` (laid out as `layout`) drives the camera: a drag orbits it
/// (across one view's width: half a turn), a right, middle or Shift drag pans, the wheel zooms, a
/// double click frames the view.
pub(super) fn camera_input(
    ui: &egui::Ui,
    response: &egui::Response,
    rect: egui::Rect,
    layout: Layout,
    view: &mut ViewSettings,
    asset: Option<MeshBounds>,
) {
    let mut orbit = view.camera.orbit();
    let before = orbit;
    let height = rect.height().max(1.0);
    let width = (rect.width() / if layout == Layout::Beside { 2.0 } else { 1.0 }).max(1.0);
    let delta = response.drag_delta();

    let shift = ui.input(|i| i.modifiers.shift);
    if response.dragged_by(egui::PointerButton::Secondary)
        || response.dragged_by(egui::PointerButton::Middle)
        || (shift && response.dragged_by(egui::PointerButton::Primary))
    {
        orbit.pan(-delta.x / height, delta.y / height);
    } else if response.dragged_by(egui::PointerButton::Primary) {
        let pi = std::f32::consts::PI;
        orbit.orbit(-delta.x / width * pi, delta.y / height * pi);
    }
    if response.hovered() {
        let scroll = ui.input(|i| i.smooth_scroll_delta.y);
        if scroll != 0.0 {
            orbit.zoom((-scroll * 0.002).exp(), framed_radius(view.shape, asset));
        }
    }
    if orbit != before {
        view.camera = CameraSettings::from_orbit(&orbit);
    }
    if response.double_clicked() {
        frame_view(view, asset);
    }
}

/// The mesh pass's near plane as a fraction of the framed radius: the camera comes no closer than
/// 0.05 of it (`OrbitCamera::zoom`), and reversed depth keeps precision far beyond.
pub(super) const NEAR_PLANE_OF_RADIUS: f32 = 1e-3;

/// The radius of the sphere that holds `shape` (about the origin, or the asset's `bounds`).
pub(super) fn framed_radius(shape: PreviewShape, asset: Option<MeshBounds>) -> f32 {
    match (shape, asset) {
        (PreviewShape::Asset, Some(bounds)) if bounds.radius > 0.0 => bounds.radius,
        (PreviewShape::Sphere | PreviewShape::Asset, _) => Shape::Sphere.bounding_radius(),
        (PreviewShape::Plane, _) => Shape::Plane.bounding_radius(),
        (PreviewShape::Cube, _) => Shape::Cube.bounding_radius(),
    }
}

/// Frames what the view shows (F, or a double click): the camera keeps its direction and looks
/// at it (the asset where the library has one, given by its `asset` bounds) from where it fills
/// the image's height.
pub fn frame_view(view: &mut ViewSettings, asset: Option<MeshBounds>) {
    let mut orbit = view.camera.orbit();
    let center = match (view.shape, asset) {
        (PreviewShape::Asset, Some(bounds)) => bounds.center,
        _ => [0.0; 3],
    };
    orbit.frame(center, framed_radius(view.shape, asset));
    view.camera = CameraSettings::from_orbit(&orbit);
}
