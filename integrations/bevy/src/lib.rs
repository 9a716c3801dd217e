//! texset bundles in Bevy.
//!
//! [`TexsetPlugin`] registers an asset loader for `.texset` bundles (one [`TexsetBundle`] per
//! file) and the per-pixel [`TexsetMaterial`]. A bundle loads as:
//! - one [`Image`] per map, decoded on load by texset's CPU reference decoder (labels
//!   `material/map`, e.g. `lib.texset#wood/basecolor`), uncompressed or block-compressed
//!   ([`TexsetLoaderSettings`]);
//! - a [`StandardMaterial`] per material with those images wired in (`lib.texset#wood/material`);
//! - a [`TexsetMaterial`] per material (`lib.texset#wood/per_pixel`): the same lighting with the
//!   maps decoded per pixel in the fragment shader from the bundle's latents and weights, at the
//!   sample's UV and level of detail. Its shader is generated from the bundle by texset-shaders'
//!   generator, the one `texset export-shader` uses.
//!
//! A glTF written by texset (`texset compress ASSET.gltf -o DIR/`) loads as any glTF; its meshes
//! then get the per-pixel material of the bundle its `TEXSET_neural_texture` extension names
//! ([`TexsetGltf`], [`TexsetGltfMaterial`]).
//!
//! ```no_run
//! use bevy::prelude::*;
//! use texset_bevy::TexsetPlugin;
//!
//! fn setup(mut commands: Commands, assets: Res<AssetServer>, mut meshes: ResMut<Assets<Mesh>>) {
//!     // Decoded on load: a StandardMaterial.
//!     let wood: Handle<StandardMaterial> = assets.load("sample_library.texset#wood/material");
//!     commands.spawn((Mesh3d(meshes.add(Sphere::new(1.0).mesh().uv(64, 32).with_generated_tangents().unwrap())), MeshMaterial3d(wood)));
//!     // Decoded per pixel: a TexsetMaterial.
//!     let fabric: Handle<texset_bevy::TexsetMaterial> = assets.load("sample_library.texset#fabric_indigo/per_pixel");
//!     commands.spawn((Mesh3d(meshes.add(Plane3d::default().mesh().size(4.0, 4.0))), MeshMaterial3d(fabric)));
//! }
//!
//! App::new().add_plugins((DefaultPlugins, TexsetPlugin)).add_systems(Startup, setup).run();
//! ```

mod gltf;
mod loader;
mod material;

pub use gltf::{GLTF_EXTENSION, TexsetGltf, TexsetGltfMaterial, TexsetGltfSwapped};
pub use loader::{TexsetBundle, TexsetBundleMaterial, TexsetImageFormat, TexsetLoadError, TexsetLoader, TexsetLoaderSettings, TexsetMips};
pub use material::{GeneratedShader, LATENTS_BINDING, TexsetExtension, TexsetMaterial, TexsetMaterialKey};

use bevy::pbr::MaterialPlugin;
use bevy::prelude::*;

/// The Bevy version this crate is built and tested against.
pub const BEVY_VERSION: &str = "0.19.1";

/// Registers the `.texset` loader and the per-pixel material. Add it after `DefaultPlugins`.
pub struct TexsetPlugin;

impl Plugin for TexsetPlugin {
    fn build(&self, app: &mut App) {
        app.init_asset::<TexsetBundle>()
            .add_plugins(MaterialPlugin::<TexsetMaterial>::default())
            .init_resource::<TexsetGltf>()
            .register_type::<TexsetGltfMaterial>()
            .register_type::<TexsetGltfSwapped>()
            .add_systems(PreUpdate, add_generated_shaders)
            .add_systems(Update, gltf::swap_gltf_materials);
        // A glTF written by texset: its meshes are marked as they spawn (after Bevy's PBR
        // handler has given them the fallback material), the swap happens once the bundle is in.
        if let Some(handlers) = app.world().get_resource::<bevy::gltf::extensions::GltfExtensionHandlers>() {
            handlers.0.write_blocking().push(Box::new(gltf::TexsetGltfHandler));
        } else {
            warn!("texset-bevy: no glTF plugin (add TexsetPlugin after DefaultPlugins): texset glTF assets keep their fallbacks");
        }
        let placeholder = Shader::from_wgsl(material::PLACEHOLDER_WGSL, "texset://placeholder.wgsl");
        if let Err(e) = app.world_mut().resource_mut::<Assets<Shader>>().insert(material::PLACEHOLDER_SHADER.id(), placeholder) {
            error!("texset-bevy: cannot register the placeholder shader: {e}");
        }
    }

    fn finish(&self, app: &mut App) {
        // After the renderer is up: the loader asks it which block-compressed formats it has.
        app.init_asset_loader::<TexsetLoader>();
    }
}

/// Adds a loaded bundle's generated fragment shaders to `Assets<Shader>` under their ids (which
/// the per-pixel materials' pipelines are specialised by).
fn add_generated_shaders(
    mut events: MessageReader<AssetEvent<TexsetBundle>>,
    bundles: Res<Assets<TexsetBundle>>,
    mut shaders: ResMut<Assets<Shader>>,
) {
    for event in events.read() {
        if let AssetEvent::Added { id } | AssetEvent::Modified { id } = event
            && let Some(bundle) = bundles.get(*id)
        {
            for generated in &bundle.shaders {
                if let Err(e) = shaders.insert(generated.id, generated.shader()) {
                    error!("texset-bevy: cannot add a generated shader: {e}");
                }
            }
        }
    }
}
