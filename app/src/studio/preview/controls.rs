//! The viewport's controls above it: the surface and camera, what the two sides compare, the
//! view (lit, a channel, an inspection aid, the error), and the lighting.

use super::super::session::Session;
use super::super::state::{
    BackgroundSetting, Command, MAX_EXPOSURE_EV, MIN_ERROR_FULL_SCALE, PreviewShape, SideSource, ToneMapperSetting, ViewSettings,
};
use eframe::egui;
use texset_shaders::preview::{MeshBounds, ViewMode};

/// The controls (the image itself is drawn by the module above).
pub(super) fn preview_controls_ui(
    ui: &mut egui::Ui,
    session: &Session,
    view: &mut ViewSettings,
    asset: Option<MeshBounds>,
    commands: &mut Vec<Command>,
) {
    ui.horizontal_wrapped(|ui| {
        if asset.is_some() {
            ui.selectable_value(&mut view.shape, PreviewShape::Asset, "asset").on_hover_text("the glTF asset's meshes");
        }
        ui.selectable_value(&mut view.shape, PreviewShape::Sphere, "sphere");
        ui.selectable_value(&mut view.shape, PreviewShape::Plane, "plane");
        ui.selectable_value(&mut view.shape, PreviewShape::Cube, "cube");
        ui.separator();
        ui.checkbox(&mut view.turntable, "turntable").on_hover_text("T: the camera turns about the vertical at 20°/s");
        if ui.button("frame").on_hover_text("F (or double-click the view); drag: orbit, right/Shift-drag: pan, wheel: zoom").clicked() {
            super::frame_view(view, asset);
        }
        if ui.button("reset").on_hover_text("R: the camera where a new view starts").clicked() {
            view.camera = super::super::state::CameraSettings::default();
        }
        ui.separator();
        egui::ComboBox::from_id_salt("channel view")
            .selected_text(view.channel.name())
            .show_ui(ui, |ui| {
                for mode in ViewMode::ALL {
                    ui.selectable_value(&mut view.channel, mode, mode.name());
                }
            })
            .response
            .on_hover_text("C: the next view; M: lit");
        if view.channel == ViewMode::Error {
            error_controls_ui(ui, session, view);
        }
    });
    ui.horizontal_wrapped(|ui| compare_controls_ui(ui, session, view));
    ui.horizontal_wrapped(|ui| lighting_controls_ui(ui, session, view, commands));
}

/// What the two sides show, and how they share the view.
fn compare_controls_ui(ui: &mut egui::Ui, session: &Session, view: &mut ViewSettings) {
    ui.checkbox(&mut view.compare, "compare").on_hover_text("two sides through one camera; X swaps them");
    if !view.compare {
        return;
    }
    if let Some([a, b]) = view.ab {
        ui.label(format!("runs #{a} | #{b} (from the runs panel's A/B)"));
        if ui.small_button("clear").clicked() {
            view.ab = None;
        }
    } else {
        let mut choices = vec![SideSource::Original, SideSource::Decoded, SideSource::Bcn];
        choices.extend(session.compare.loaded_runs.keys().map(|&id| SideSource::Run(id)));
        for (side, salt) in [(0, "left side"), (1, "right side")] {
            let current = view.compare_sides[side];
            egui::ComboBox::from_id_salt(salt).selected_text(short_name(current)).show_ui(ui, |ui| {
                for &choice in &choices {
                    ui.selectable_value(&mut view.compare_sides[side], choice, short_name(choice)).on_hover_text(choice.name());
                }
            });
            if side == 0 && ui.small_button("swap").on_hover_text("X: swap the sides").clicked() {
                view.compare_sides.swap(0, 1);
            }
        }
    }
    ui.selectable_value(&mut view.wipe, true, "wipe").on_hover_text("one view, a divider to drag across it");
    ui.selectable_value(&mut view.wipe, false, "beside");
}

/// A side's name in a combo box.
fn short_name(source: SideSource) -> String {
    match source {
        SideSource::Original => "original".to_owned(),
        SideSource::Decoded => "decoded".to_owned(),
        SideSource::Bcn => "BCn".to_owned(),
        SideSource::Run(id) => format!("run #{id}"),
    }
}

/// The error view's map (or pooled) and the top of its ramp.
fn error_controls_ui(ui: &mut egui::Ui, session: &Session, view: &mut ViewSettings) {
    let kinds: Vec<_> =
        session.library.set.materials.get(view.material).map(|m| m.textures.iter().map(|t| t.info.kind).collect()).unwrap_or_default();
    let name = |map: Option<texset_core::set::MapKind>| map.map_or_else(|| "every map, pooled".to_owned(), |k| k.to_string());
    egui::ComboBox::from_id_salt("error map").selected_text(name(view.error_map)).show_ui(ui, |ui| {
        ui.selectable_value(&mut view.error_map, None, name(None));
        for kind in kinds {
            ui.selectable_value(&mut view.error_map, Some(kind), name(Some(kind)));
        }
    });
    let scale = &mut view.lighting.error_full_scale;
    ui.add(egui::Slider::new(scale, MIN_ERROR_FULL_SCALE..=0.5).logarithmic(true).text("top of the ramp"))
        .on_hover_text("the mean |shown - original| per texel (stored values, 0..1) that reads as red");
}

/// The viewport's lighting: the environment (which, exposure, rotation, tone mapper, background)
/// and the point lights.
fn lighting_controls_ui(ui: &mut egui::Ui, session: &Session, view: &mut ViewSettings, commands: &mut Vec<Command>) {
    let lighting = &mut view.lighting;

    ui.checkbox(&mut lighting.environment, "environment")
        .on_hover_text("image-based lighting; drop an .hdr or .exr on the window, or File > Open HDR environment…");
    if lighting.environment {
        let name = session.environment.prepared.as_ref().map_or_else(|| "preparing…".to_owned(), |(source, _)| source.name());
        ui.label(name);
        if session.settings.environment.is_some() && ui.small_button("studio").on_hover_text("the procedural studio").clicked() {
            commands.push(Command::SetEnvironment(None));
        }
        ui.add(egui::Slider::new(&mut lighting.exposure_ev, -MAX_EXPOSURE_EV..=MAX_EXPOSURE_EV).step_by(0.1).text("EV"));
        ui.add(egui::Slider::new(&mut lighting.rotation_deg, 0.0..=360.0).text("rotation °"));
        egui::ComboBox::from_id_salt("tone mapper")
            .selected_text(match lighting.tone_mapper {
                ToneMapperSetting::PbrNeutral => "PBR Neutral",
                ToneMapperSetting::Agx => "AgX",
                ToneMapperSetting::Aces => "ACES",
                ToneMapperSetting::None => "no tone map",
            })
            .show_ui(ui, |ui| {
                ui.selectable_value(&mut lighting.tone_mapper, ToneMapperSetting::PbrNeutral, "PBR Neutral");
                ui.selectable_value(&mut lighting.tone_mapper, ToneMapperSetting::Agx, "AgX");
                ui.selectable_value(&mut lighting.tone_mapper, ToneMapperSetting::Aces, "ACES");
                ui.selectable_value(&mut lighting.tone_mapper, ToneMapperSetting::None, "no tone map");
            });
        egui::ComboBox::from_id_salt("background")
            .selected_text(match lighting.background {
                BackgroundSetting::Environment => "environment behind",
                BackgroundSetting::Blurred => "blurred behind",
                BackgroundSetting::Solid => "grey behind",
            })
            .show_ui(ui, |ui| {
                ui.selectable_value(&mut lighting.background, BackgroundSetting::Environment, "environment behind");
                ui.selectable_value(&mut lighting.background, BackgroundSetting::Blurred, "blurred behind");
                ui.selectable_value(&mut lighting.background, BackgroundSetting::Solid, "grey behind");
            });
        ui.checkbox(&mut lighting.point_lights, "+ point lights");
    }
    if !lighting.environment || lighting.point_lights {
        ui.separator();
        ui.checkbox(&mut view.lights_orbit, "lights orbit");
        ui.add(egui::Slider::new(&mut view.light_speed, 0.0..=3.0).text("speed"));
        ui.add(egui::Slider::new(&mut view.light_intensity, 0.0..=10.0).text("intensity"));
        ui.add(egui::Slider::new(&mut view.light_angle, 0.0..=std::f32::consts::TAU).text("angle"));
    }
}
