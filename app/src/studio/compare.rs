//! The compare view: original against decoded (or block-compressed, or another run), split, with
//! synced zoom and pan down to single texels, a difference view with gain, a texel inspector and
//! the map's scores. Reads the session, pushes [`Command`]s; the view settings are edited in place.

use super::blit::{self, BlitSlot};
use super::session::Session;
use super::state::{Command, ViewSettings};
use super::textures::{Image, MapRef, Textures};
use eframe::egui::{self, Color32, Pos2, Rect, RichText, Sense, Vec2};
use texset_core::{
    decode::DecodedMap,
    eval::bcn::BcRoundTrip,
    set::{Material, Texture},
};

/// Two runs of the experiment log, A and B, each with its id and this map's decode.
type AbPair<'a> = ((u64, &'a DecodedMap), (u64, &'a DecodedMap));

/// What the two sides of the split show.
struct Sides<'a> {
    /// A/B runs instead of original and decoded.
    ab: Option<AbPair<'a>>,
    /// The left image.
    left: Image,
    /// The right side's map and its texture key (generation), when there is one yet.
    right_map: Option<(u64, MapRef<'a>)>,
    /// The right image (the map, or its difference from the original).
    right: Option<Image>,
}

/// The view's geometry: where the image lies and at what scale.
struct Frame {
    rect: Rect,
    size: Vec2,
    scale: f32,
}

/// Original vs decoded, split, with synced zoom/pan to single texels, a difference view with gain,
/// a pixel inspector and the map's scores.
pub fn compare_ui(ui: &mut egui::Ui, session: &Session, textures: &mut Textures, view: &mut ViewSettings, commands: &mut Vec<Command>) {
    let set = &session.library.set;
    let Some(texture) = set.materials.get(view.material).and_then(|m| m.textures.get(view.map)) else {
        ui.label("Select a map in the library.");
        return;
    };
    let material = &set.materials[view.material];
    toolbar_ui(ui, session, view, material, texture);
    let bcn = session.compare.bcn.get(&(view.material, view.map)).map(AsRef::as_ref);
    if view.bcn {
        bcn_line_ui(ui, session, view, material, texture, bcn, commands);
    }
    let sides = sides(ui, session, textures, view, texture, bcn);
    let available = ui.available_size() - Vec2::new(0.0, 22.0);
    let (rect, response) = ui.allocate_exact_size(available.max(Vec2::splat(32.0)), Sense::click_and_drag());
    let frame = navigate(ui, &response, rect, view, Vec2::new(texture.info.width as f32, texture.info.height as f32));
    paint_sides(ui, &frame, view, &sides, bcn);
    let hovered = response.hover_pos().map(|p| uv_at(frame.rect, view.center_uv, frame.size, frame.scale, p));
    ui.label(RichText::new(inspector_line(hovered, &frame, view, texture, sides.right_map.as_ref())).monospace());
}

/// The map's name, the view's switches and zoom buttons, and its scores.
fn toolbar_ui(ui: &mut egui::Ui, session: &Session, view: &mut ViewSettings, material: &Material, texture: &Texture) {
    ui.horizontal_wrapped(|ui| {
        ui.label(format!("{} / {}", material.name, texture.info.kind.token()));
        ui.add(egui::Slider::new(&mut view.split, 0.0..=1.0).text("split"));
        ui.checkbox(&mut view.bcn, "BCn").on_hover_text(
            "Show the map block-compressed as engines ship it today (BC7 colour, BC5 normals, BC4 one channel) instead of the neural decode",
        );
        ui.checkbox(&mut view.difference, "difference");
        ui.add_enabled(view.difference, egui::Slider::new(&mut view.difference_gain, 1.0..=64.0).logarithmic(true).text("gain"));
        if ui.button("fit").clicked() {
            view.zoom = 0.0;
            view.center_uv = [0.5, 0.5];
        }
        if ui.button("1:1").clicked() {
            view.zoom = 1.0;
        }
        if let Some(score) = map_score(session, material, texture) {
            // Snapshots during training are scored by PSNR only: SSIM comes with the final bundle.
            let text = if score.ssim.is_finite() {
                format!("{:.2} dB · SSIM {:.4}", score.psnr_db, score.ssim)
            } else {
                format!("{:.2} dB (SSIM after training)", score.psnr_db)
            };
            ui.label(RichText::new(text).strong());
        }
    });
}

/// The latest decode's score of this map.
fn map_score<'s>(session: &'s Session, material: &Material, texture: &Texture) -> Option<&'s texset_core::eval::MapScore> {
    let scores = session.shown.decoded.as_ref()?.scores.as_ref()?;
    scores.maps.iter().find(|m| m.material == material.name && m.map == texture.info.kind.token())
}

/// The block-compressed map's rate and PSNR beside the neural one's; asks for the block
/// compression when it is not there yet.
fn bcn_line_ui(
    ui: &mut egui::Ui,
    session: &Session,
    view: &ViewSettings,
    material: &Material,
    texture: &Texture,
    bcn: Option<&BcRoundTrip>,
    commands: &mut Vec<Command>,
) {
    let Some(b) = bcn else {
        commands.push(Command::ComputeBcn(view.material, view.map));
        ui.label("block-compressing...");
        return;
    };
    let bundle_bpt = session
        .shown
        .trained
        .as_ref()
        .and_then(|t| t.bytes.as_ref())
        .map(|b| b.len() as f64 * 8.0 / session.library.set.texel_count().max(1) as f64);
    let mut line = format!("{:?}: {:.0} bits/texel, {:.2} dB", b.format, b.bits_per_texel, b.psnr_db);
    if let (Some(n), Some(bpt)) = (map_score(session, material, texture), bundle_bpt) {
        line = format!("{line} | neural: {bpt:.2} bits/texel for the whole library, this map {:.2} dB", n.psnr_db);
    }
    ui.label(line);
}

/// The images of both sides: original or run A on the left; decoded, `BCn`, run B or a difference
/// on the right.
fn sides<'a>(
    ui: &mut egui::Ui,
    session: &'a Session,
    textures: &mut Textures,
    view: &ViewSettings,
    texture: &Texture,
    bcn: Option<&'a BcRoundTrip>,
) -> Sides<'a> {
    let key = (view.material, view.map);
    // A/B: two runs of the experiment log instead of original and decoded.
    let ab = view.ab.and_then(|[a, b]| {
        let map_of = |id: u64| session.compare.loaded_runs.get(&id).and_then(|r| r.maps.get(key.0)?.get(key.1)).map(|m| (id, m));
        Some((map_of(a)?, map_of(b)?))
    });
    if view.ab.is_some() && ab.is_none() {
        ui.label("loading the A/B runs…");
    }
    let left = match ab {
        Some(((a, map), _)) => textures.run(key, a, MapRef::from(map)),
        None => textures.original(view.material, view.map, texture),
    };
    let decoded = session.shown.decoded.as_ref().and_then(|d| d.maps.get(view.material)?.get(view.map).map(|m| (d.generation, m)));
    // BCn results of a library never change: generation u64::MAX keys them apart from decodes.
    let right_map = if let Some((_, (b, map))) = ab {
        // Generations count up from 1 and BCn takes u64::MAX: runs key below that.
        Some((u64::MAX - 1 - b, MapRef::from(map)))
    } else if view.bcn {
        bcn.map(|b| {
            (
                u64::MAX,
                MapRef { width: texture.info.width, height: texture.info.height, channels: texture.info.channels, values: &b.values },
            )
        })
    } else {
        decoded.map(|(generation, map)| (generation, MapRef::from(map)))
    };
    let right = right_map.map(|(generation, map)| match ab {
        _ if view.difference => textures.difference(key, generation, view.difference_gain, texture, map),
        Some((_, (b, _))) => textures.run(key, b, map),
        None => textures.decoded(key, generation, map),
    });
    Sides { ab, left, right_map, right }
}

/// Zoom around the cursor with the wheel, pan by dragging: the view's geometry after this frame's
/// input.
fn navigate(ui: &egui::Ui, response: &egui::Response, rect: Rect, view: &mut ViewSettings, size: Vec2) -> Frame {
    let fit = (rect.width() / size.x).min(rect.height() / size.y);
    let mut scale = if view.zoom > 0.0 { view.zoom } else { fit };
    if response.hovered() {
        let scroll = ui.input(|i| i.smooth_scroll_delta.y);
        if scroll != 0.0 {
            let cursor = response.hover_pos().unwrap_or(rect.center());
            let before = uv_at(rect, view.center_uv, size, scale, cursor);
            scale = (scale * (scroll / 200.0).exp()).clamp(fit.min(1.0) * 0.5, 64.0);
            view.zoom = scale;
            let after = uv_at(rect, view.center_uv, size, scale, cursor);
            view.center_uv = [view.center_uv[0] + before.x - after.x, view.center_uv[1] + before.y - after.y];
        }
    }
    if response.dragged() {
        let delta = response.drag_delta();
        view.center_uv[0] -= delta.x / (scale * size.x);
        view.center_uv[1] -= delta.y / (scale * size.y);
    }
    Frame { rect, size, scale }
}

/// Both sides, the split line and the sides' labels.
fn paint_sides(ui: &egui::Ui, frame: &Frame, view: &ViewSettings, sides: &Sides<'_>, bcn: Option<&BcRoundTrip>) {
    let rect = frame.rect;
    let painter = ui.painter_at(rect);
    let split_x = rect.left() + view.split * rect.width();
    let left = Rect::from_min_max(rect.min, Pos2::new(split_x, rect.bottom()));
    let right = Rect::from_min_max(Pos2::new(split_x, rect.top()), rect.max);
    paint_window(&painter, left, frame, view.center_uv, Some(&sides.left), BlitSlot::CompareLeft);
    paint_window(&painter, right, frame, view.center_uv, sides.right.as_ref(), BlitSlot::CompareRight);
    if sides.right.is_none() {
        painter.text(right.center(), egui::Align2::CENTER_CENTER, "not trained yet", egui::FontId::proportional(16.0), Color32::GRAY);
    }
    painter.vline(split_x, rect.y_range(), egui::Stroke::new(1.5, Color32::WHITE));
    let left_label = sides.ab.map_or_else(|| "original".to_owned(), |((a, _), _)| format!("A: run #{a}"));
    let right_label = match (view.bcn, view.difference) {
        _ if sides.ab.is_some() => {
            let b = sides.ab.map_or(0, |(_, (b, _))| b);
            if view.difference { format!("|B - original| × gain (run #{b})") } else { format!("B: run #{b}") }
        }
        (false, false) => "decoded".to_owned(),
        (false, true) => "|decoded - original| × gain".to_owned(),
        (true, false) => bcn.map_or("BCn".to_owned(), |b| format!("{:?}", b.format)),
        (true, true) => "|BCn - original| × gain".to_owned(),
    };
    let font = egui::FontId::proportional(13.0);
    painter.text(rect.left_top() + Vec2::new(6.0, 4.0), egui::Align2::LEFT_TOP, left_label, font.clone(), Color32::WHITE);
    painter.text(rect.right_top() + Vec2::new(-6.0, 4.0), egui::Align2::RIGHT_TOP, right_label, font, Color32::WHITE);
}

/// The texel under the cursor, original and right side, or how to use the view.
fn inspector_line(
    hovered: Option<Vec2>,
    frame: &Frame,
    view: &ViewSettings,
    texture: &Texture,
    right_map: Option<&(u64, MapRef<'_>)>,
) -> String {
    let size = frame.size;
    match hovered {
        Some(uv) if (0.0..1.0).contains(&uv.x) && (0.0..1.0).contains(&uv.y) => {
            let (x, y) = ((uv.x * size.x) as u32, (uv.y * size.y) as u32);
            let original: Vec<String> = (0..texture.info.channels).map(|c| format!("{:.3}", texture.value(x, y, c))).collect();
            let right_values = right_map.map(|(_, m)| {
                let i = (y as usize * m.width as usize + x as usize) * m.channels as usize;
                m.values
                    .get(i..i + m.channels as usize)
                    .map(|v| v.iter().map(|v| format!("{v:.3}")).collect::<Vec<_>>().join(", "))
                    .unwrap_or_default()
            });
            let side = if view.bcn { "BCn" } else { "decoded" };
            format!("texel ({x}, {y}) · original [{}] · {side} [{}]", original.join(", "), right_values.unwrap_or_else(|| "-".into()))
        }
        _ => "hover the image to inspect texels · wheel zooms · drag pans".to_owned(),
    }
}

/// UV under a screen point for a view centred on `center_uv` at `scale` screen px per texel.
fn uv_at(rect: Rect, center_uv: [f32; 2], size: Vec2, scale: f32, point: Pos2) -> Vec2 {
    let d = point - rect.center();
    Vec2::new(center_uv[0] + d.x / (scale * size.x), center_uv[1] + d.y / (scale * size.y))
}

/// Paints the part of the image that falls inside `clip` (a part of the view `frame.rect`), and
/// the view's background around it (all of `clip` without a texture). The background is painted
/// only where the image is not: on a software GPU every pixel painted twice costs frame time.
fn paint_window(painter: &egui::Painter, clip: Rect, frame: &Frame, center_uv: [f32; 2], texture: Option<&Image>, slot: BlitSlot) {
    let (rect, size, scale) = (frame.rect, frame.size, frame.scale);
    let background = Color32::from_gray(24);
    let image_min = rect.center() - Vec2::new(center_uv[0] * size.x * scale, center_uv[1] * size.y * scale);
    let image = Rect::from_min_size(image_min, size * scale);
    let shown = image.intersect(clip);
    let Some(texture) = texture.filter(|_| shown.width() > 0.0 && shown.height() > 0.0) else {
        painter.rect_filled(clip, 0.0, background);
        return;
    };
    // The strips of `clip` above, below, left and right of the image.
    let strips = [
        Rect::from_min_max(clip.min, Pos2::new(clip.right(), shown.top())),
        Rect::from_min_max(Pos2::new(clip.left(), shown.bottom()), clip.max),
        Rect::from_min_max(Pos2::new(clip.left(), shown.top()), Pos2::new(shown.left(), shown.bottom())),
        Rect::from_min_max(Pos2::new(shown.right(), shown.top()), Pos2::new(clip.right(), shown.bottom())),
    ];
    for strip in strips.into_iter().filter(|s| s.width() > 0.0 && s.height() > 0.0) {
        painter.rect_filled(strip, 0.0, background);
    }
    let uv = Rect::from_min_max(
        Pos2::new((shown.left() - image.left()) / image.width(), (shown.top() - image.top()) / image.height()),
        Pos2::new((shown.right() - image.left()) / image.width(), (shown.bottom() - image.top()) / image.height()),
    );
    // Drawn by a blit of its own: an egui image is a software GPU's slow path (decision 052).
    blit::paint_part(painter, shown, uv, texture, slot);
}
