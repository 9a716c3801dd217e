//! The sample library in Bevy: one sphere per material on a wooden floor, under two moving
//! lights. Space switches every mesh between the decode-on-load `StandardMaterial` and the
//! per-pixel `TexsetMaterial` (the window's title says which is on). Escape quits.
//!
//! `cargo run --example bevy_material` (in integrations/bevy). On a software Vulkan driver
//! (lavapipe) the first switch to per-pixel compiles one shader per material, which takes minutes.
//! `TEXSET_BEVY_EXIT_AFTER_SECS=N` closes it after N seconds (CI runs it so under Xvfb).

use bevy::prelude::*;
use std::time::Duration;
use texset_bevy::{TexsetBundle, TexsetMaterial, TexsetPlugin};

fn main() {
    let mut app = App::new();
    app.add_plugins((
        DefaultPlugins.set(WindowPlugin {
            primary_window: Some(Window { title: title(Mode::OnLoad), resolution: (1280, 720).into(), ..default() }),
            ..default()
        }),
        TexsetPlugin,
    ))
    .insert_resource(Mode::OnLoad)
    .add_systems(Startup, setup)
    .add_systems(Update, (spawn_when_loaded, move_lights, switch_mode, quit_on_escape));
    if let Some(secs) = std::env::var("TEXSET_BEVY_EXIT_AFTER_SECS").ok().and_then(|s| s.parse::<f64>().ok()) {
        app.insert_resource(ExitAfter(Duration::from_secs_f64(secs))).add_systems(Update, exit_after);
    }
    app.run();
}

/// Which material every mesh shows.
#[derive(Resource, Clone, Copy, PartialEq, Eq)]
enum Mode {
    OnLoad,
    PerPixel,
}

fn title(mode: Mode) -> String {
    match mode {
        Mode::OnLoad => "texset in Bevy: decoded on load (Space: per pixel)".to_owned(),
        Mode::PerPixel => "texset in Bevy: decoded per pixel (Space: on load)".to_owned(),
    }
}

#[derive(Resource)]
struct Library(Handle<TexsetBundle>);

/// A mesh showing material `index` of the library.
#[derive(Component)]
struct Shows(usize);

#[derive(Component)]
struct Orbit {
    radius: f32,
    speed: f32,
    height: f32,
}

#[derive(Resource)]
struct ExitAfter(Duration);

fn setup(mut commands: Commands, assets: Res<AssetServer>) {
    commands.insert_resource(Library(assets.load("sample_library.texset")));
    commands.spawn((Camera3d::default(), Transform::from_xyz(0.0, 3.0, 7.5).looking_at(Vec3::new(0.0, 0.6, 0.0), Vec3::Y)));
    for (i, color) in [Color::srgb(1.0, 0.85, 0.7), Color::srgb(0.7, 0.8, 1.0)].into_iter().enumerate() {
        commands.spawn((
            PointLight { color, intensity: 600_000.0, range: 30.0, shadow_maps_enabled: true, ..default() },
            Transform::default(),
            Orbit { radius: 4.0 + i as f32, speed: if i == 0 { 0.6 } else { -0.4 }, height: 3.0 + i as f32 },
        ));
    }
}

/// Spawns the spheres and the floor once the bundle is in.
fn spawn_when_loaded(
    mut commands: Commands,
    library: Res<Library>,
    bundles: Res<Assets<TexsetBundle>>,
    mut meshes: ResMut<Assets<Mesh>>,
    shown: Query<(), With<Shows>>,
) {
    let Some(bundle) = bundles.get(&library.0) else { return };
    if !shown.is_empty() {
        return;
    }
    let Ok(sphere) = Sphere::new(0.7).mesh().uv(64, 32).with_generated_tangents() else { return };
    let sphere = meshes.add(sphere);
    let count = bundle.materials.len();
    for (i, material) in bundle.materials.iter().enumerate() {
        let x = (i as f32 - (count as f32 - 1.0) / 2.0) * 1.7;
        commands.spawn((Mesh3d(sphere.clone()), MeshMaterial3d(material.standard.clone()), Transform::from_xyz(x, 0.7, 0.0), Shows(i)));
    }
    let floor = bundle.materials.iter().position(|m| m.name == "wood").unwrap_or(0);
    if let Ok(plane) = Mesh::from(Plane3d::default().mesh().size(10.0, 6.0)).with_generated_tangents() {
        commands.spawn((Mesh3d(meshes.add(plane)), MeshMaterial3d(bundle.materials[floor].standard.clone()), Shows(floor)));
    }
    info!("texset in Bevy: {count} materials shown, decoded on load (Space: per pixel)");
}

fn move_lights(time: Res<Time>, mut lights: Query<(&mut Transform, &Orbit)>) {
    for (mut transform, orbit) in &mut lights {
        let angle = time.elapsed_secs() * orbit.speed;
        transform.translation = Vec3::new(orbit.radius * angle.cos(), orbit.height, orbit.radius * angle.sin());
    }
}

/// Space: every mesh to the other material.
fn switch_mode(
    mut commands: Commands,
    keys: Res<ButtonInput<KeyCode>>,
    mut mode: ResMut<Mode>,
    library: Res<Library>,
    bundles: Res<Assets<TexsetBundle>>,
    meshes: Query<(Entity, &Shows)>,
    mut windows: Query<&mut Window>,
) {
    if !keys.just_pressed(KeyCode::Space) {
        return;
    }
    let Some(bundle) = bundles.get(&library.0) else { return };
    *mode = if *mode == Mode::OnLoad { Mode::PerPixel } else { Mode::OnLoad };
    for (entity, shows) in &meshes {
        let material = &bundle.materials[shows.0];
        let mut entity = commands.entity(entity);
        match (*mode, &material.per_pixel) {
            (Mode::PerPixel, Some(per_pixel)) => {
                entity.remove::<MeshMaterial3d<StandardMaterial>>().insert(MeshMaterial3d::<TexsetMaterial>(per_pixel.clone()));
            }
            _ => {
                entity.remove::<MeshMaterial3d<TexsetMaterial>>().insert(MeshMaterial3d(material.standard.clone()));
            }
        }
    }
    for mut window in &mut windows {
        window.title = title(*mode);
    }
    info!("{}", title(*mode));
}

/// Escape: quit (CI presses it once its checks have passed, instead of waiting out
/// `TEXSET_BEVY_EXIT_AFTER_SECS`).
fn quit_on_escape(keys: Res<ButtonInput<KeyCode>>, mut exit: MessageWriter<AppExit>) {
    if keys.just_pressed(KeyCode::Escape) {
        info!("Escape: quitting");
        exit.write(AppExit::Success);
    }
}

/// Wall-clock seconds: a frame stalled by a shader compile (minutes on lavapipe) counts in full,
/// where the virtual clock takes at most a quarter of a second of it.
fn exit_after(time: Res<Time<Real>>, limit: Res<ExitAfter>, mut exit: MessageWriter<AppExit>) {
    if time.elapsed() >= limit.0 {
        exit.write(AppExit::Success);
    }
}
