//! A glTF asset written by texset (`texset compress ASSET.gltf -o DIR/`): its textures are PNG
//! fallbacks decoded from the bundle beside it, and each names its bundle and library material in
//! the `TEXSET_neural_texture` extension (docs/gltf-extension.md).
//!
//! Bevy's glTF loader shows the fallbacks as they are. [`TexsetPlugin`](crate::TexsetPlugin)
//! also registers a glTF extension handler that marks each mesh whose material carries the
//! extension ([`TexsetGltfMaterial`]: the bundle, loaded beside the glTF, and the material's name
//! in it); once the bundle is in, [`swap_gltf_materials`] gives the mesh the bundle's per-pixel
//! material with the glTF material's own factors, alpha and sidedness, and marks it
//! [`TexsetGltfSwapped`]. [`TexsetGltf::per_pixel`] `false` keeps the fallbacks.

use crate::{TexsetBundle, TexsetMaterial};
use bevy::asset::AssetPath;
use bevy::ecs::world::EntityWorldMut;
use bevy::gltf::extensions::{ErasedGltfExtensionHandler, GltfExtensionHandler};
use bevy::gltf::gltf;
use bevy::prelude::*;
use std::collections::HashMap;

/// The extension a texset glTF's textures carry.
pub const GLTF_EXTENSION: &str = "TEXSET_neural_texture";

/// Whether meshes of texset glTF assets get the per-pixel material (default) or keep the PNG
/// fallbacks (the bundle decoded, as any glTF viewer shows them).
#[derive(Resource, Clone, Copy, Debug)]
pub struct TexsetGltf {
    /// Swap the fallbacks for the bundle's per-pixel material.
    pub per_pixel: bool,
}

impl Default for TexsetGltf {
    fn default() -> Self {
        Self { per_pixel: true }
    }
}

/// On a mesh of a texset glTF: the bundle its material names and the material's name there.
/// (Reflected: Bevy copies a glTF scene's components into the world by reflection.)
#[derive(Component, Reflect, Clone, Debug)]
#[reflect(Component, Clone)]
pub struct TexsetGltfMaterial {
    /// The bundle, loaded from the extension's URI beside the glTF.
    pub bundle: Handle<TexsetBundle>,
    /// The library material's name in the bundle.
    pub material: String,
}

/// On a mesh whose fallback material was swapped for the per-pixel one.
#[derive(Component, Reflect, Clone, Copy, Debug)]
#[reflect(Component, Clone)]
pub struct TexsetGltfSwapped;

/// The extension object of one of `material`'s textures: `(bundle URI, material name)`.
fn reference(material: &gltf::Material<'_>) -> Option<(String, String)> {
    let pbr = material.pbr_metallic_roughness();
    let textures = [
        pbr.base_color_texture().map(|t| t.texture()),
        pbr.metallic_roughness_texture().map(|t| t.texture()),
        material.normal_texture().map(|t| t.texture()),
        material.occlusion_texture().map(|t| t.texture()),
        material.emissive_texture().map(|t| t.texture()),
    ];
    textures.into_iter().flatten().find_map(|texture| {
        let value = texture.extension_value(GLTF_EXTENSION)?;
        Some((value.get("bundle")?.as_str()?.to_owned(), value.get("material")?.as_str()?.to_owned()))
    })
}

/// Marks each mesh whose material names a bundle ([`TexsetGltfMaterial`]), loading the bundle
/// beside the glTF.
#[derive(Clone, Default)]
pub(crate) struct TexsetGltfHandler;

impl GltfExtensionHandler for TexsetGltfHandler {
    fn dyn_clone(&self) -> Box<dyn ErasedGltfExtensionHandler> {
        Box::new(self.clone())
    }

    fn on_spawn_mesh_and_material(
        &mut self,
        load_context: &mut bevy::asset::LoadContext<'_>,
        _primitive: &gltf::Primitive<'_>,
        _mesh: &gltf::Mesh<'_>,
        material: &gltf::Material<'_>,
        entity: &mut EntityWorldMut<'_>,
        _material_label: &str,
    ) {
        let Some((uri, name)) = reference(material) else { return };
        // The URI is relative to the glTF, as its images' are.
        let Ok(relative) = AssetPath::try_parse(&uri) else {
            warn!("texset-bevy: {}: the bundle URI {uri:?} is not an asset path; its meshes keep the fallbacks", load_context.path());
            return;
        };
        let path = load_context.path().resolve_embed(&relative);
        let bundle = load_context.load::<TexsetBundle>(path);
        entity.insert(TexsetGltfMaterial { bundle, material: name });
    }
}

/// The glTF material as the per-pixel material's base: its factors, alpha and sidedness, no
/// textures (the per-pixel shader decodes the maps and multiplies them by the factors).
fn untextured(material: &StandardMaterial) -> StandardMaterial {
    StandardMaterial {
        base_color_texture: None,
        emissive_texture: None,
        metallic_roughness_texture: None,
        normal_map_texture: None,
        occlusion_texture: None,
        ..material.clone()
    }
}

/// Gives each marked mesh whose bundle has loaded its per-pixel material (one per glTF material
/// and bundle material, shared by the meshes that wear it).
#[allow(clippy::type_complexity, reason = "a Bevy query")]
pub(crate) fn swap_gltf_materials(
    mut commands: Commands,
    settings: Res<TexsetGltf>,
    marked: Query<(Entity, &TexsetGltfMaterial, &MeshMaterial3d<StandardMaterial>), Without<TexsetGltfSwapped>>,
    bundles: Res<Assets<TexsetBundle>>,
    standard: Res<Assets<StandardMaterial>>,
    mut texset: ResMut<Assets<TexsetMaterial>>,
    mut made: Local<HashMap<(AssetId<StandardMaterial>, AssetId<TexsetMaterial>), Handle<TexsetMaterial>>>,
) {
    if !settings.per_pixel {
        return;
    }
    for (entity, mark, fallback) in &marked {
        let Some(bundle) = bundles.get(&mark.bundle) else { continue };
        let Some(per_pixel) = bundle.material(&mark.material).and_then(|m| m.per_pixel.clone()) else {
            warn_once!("texset-bevy: the bundle has no per-pixel material '{}': its glTF keeps the fallbacks", mark.material);
            continue;
        };
        let key = (fallback.id(), per_pixel.id());
        let handle = if let Some(handle) = made.get(&key) {
            handle.clone()
        } else {
            let (Some(gltf_material), Some(decoder)) = (standard.get(&fallback.0), texset.get(&per_pixel)) else { continue };
            let material = TexsetMaterial { base: untextured(gltf_material), extension: decoder.extension.clone() };
            let handle = texset.add(material);
            made.insert(key, handle.clone());
            handle
        };
        commands.entity(entity).remove::<MeshMaterial3d<StandardMaterial>>().insert((MeshMaterial3d(handle), TexsetGltfSwapped));
    }
}
