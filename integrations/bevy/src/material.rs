//! The per-pixel material: [`TexsetMaterial`], Bevy's [`StandardMaterial`] extended by the
//! bundle's latents and weights (storage buffers) and a fragment shader generated from the bundle
//! (`texset_material.wgsl` around texset-shaders' decoder functions).

use crate::loader::Roles;
use bevy::asset::uuid::Uuid;
use bevy::asset::uuid_handle;
use bevy::mesh::MeshVertexBufferLayoutRef;
use bevy::pbr::{ExtendedMaterial, MATERIAL_BIND_GROUP_INDEX, MaterialExtension, MaterialExtensionKey, MaterialExtensionPipeline};
use bevy::prelude::*;
use bevy::render::render_resource::{AsBindGroup, RenderPipelineDescriptor, SpecializedMeshPipelineError};
use bevy::render::storage::ShaderBuffer;
use bevy::shader::ShaderRef;
use std::fmt::Write as _;
use std::hash::{Hash as _, Hasher as _};
use texset_shaders::{Bindings, GpuModel};

/// The per-pixel material of one bundle material.
pub type TexsetMaterial = ExtendedMaterial<StandardMaterial, TexsetExtension>;

/// The binding of the latents in the material's bind group (the weights are the next one).
pub const LATENTS_BINDING: u32 = 100;

/// The template the generated shaders fill in.
const MATERIAL_WGSL: &str = include_str!("texset_material.wgsl");

/// The fragment shader [`TexsetExtension::fragment_shader`] names: a stand-in that
/// [`TexsetExtension::specialize`] replaces by the material's generated shader, so one material
/// type serves every bundle. It is never compiled.
pub(crate) const PLACEHOLDER_SHADER: Handle<Shader> = uuid_handle!("6a1e8c0e-3f51-4d84-9b0c-5d0c1b7e2f44");

/// What the placeholder handle holds: a valid shader that says what it is.
pub(crate) const PLACEHOLDER_WGSL: &str = "// texset-bevy: stands in for a bundle's generated fragment shader (TexsetExtension::specialize)\n@fragment\nfn fragment() -> @location(0) vec4<f32> {\n    return vec4<f32>(1.0, 0.0, 1.0, 1.0);\n}\n";

/// The decoder's part of a [`TexsetMaterial`]: the bundle's buffers and the material's shader.
#[derive(Asset, AsBindGroup, Reflect, Debug, Clone)]
#[bind_group_data(TexsetMaterialKey)]
pub struct TexsetExtension {
    /// The bundle's latent grids, bit-packed (texset-shaders' `GpuModel::latent_words`).
    #[storage(100, read_only)]
    pub latents: Handle<ShaderBuffer>,
    /// The decoder's weights (texset-shaders' `GpuModel::mlp_words`).
    #[storage(101, read_only)]
    pub weights: Handle<ShaderBuffer>,
    /// The id of the fragment shader generated for this material (a UUID from its source, so
    /// equal shaders are one asset; [`crate::TexsetPlugin`] adds it to `Assets<Shader>` when the
    /// bundle loads).
    #[reflect(ignore)]
    pub shader: Uuid,
}

/// What a [`TexsetMaterial`]'s pipeline is specialised by: its generated shader.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TexsetMaterialKey {
    shader: Uuid,
}

impl From<&TexsetExtension> for TexsetMaterialKey {
    fn from(extension: &TexsetExtension) -> Self {
        Self { shader: extension.shader }
    }
}

impl MaterialExtension for TexsetExtension {
    fn fragment_shader() -> ShaderRef {
        ShaderRef::Handle(PLACEHOLDER_SHADER)
    }

    fn specialize(
        _pipeline: &MaterialExtensionPipeline,
        descriptor: &mut RenderPipelineDescriptor,
        _layout: &MeshVertexBufferLayoutRef,
        key: MaterialExtensionKey<Self>,
    ) -> Result<(), SpecializedMeshPipelineError> {
        // Only the main pass runs the placeholder; prepass and shadow pipelines keep their own.
        if let Some(fragment) = descriptor.fragment.as_mut()
            && fragment.shader == PLACEHOLDER_SHADER
        {
            fragment.shader = Handle::Uuid(key.bind_group_data.shader, std::marker::PhantomData);
        }
        Ok(())
    }
}

/// The bundle's decoder functions, bound in the material's group at [`LATENTS_BINDING`] and the
/// next one.
pub(crate) fn decoder_functions(model: &GpuModel) -> String {
    model.functions_wgsl(Bindings { group: MATERIAL_BIND_GROUP_INDEX as u32, first: LATENTS_BINDING })
}

/// A generated fragment shader and the id it goes by.
#[derive(Clone, Debug)]
pub struct GeneratedShader {
    /// Its id in `Assets<Shader>` (a hash of the source).
    pub id: Uuid,
    /// The WGSL.
    pub source: String,
}

impl GeneratedShader {
    /// The fragment shader of one material: the template with the material's slots (which maps
    /// it decodes and which channel plays which part) and the bundle's decoder functions.
    pub(crate) fn new(functions: &str, roles: &Roles) -> Self {
        let source = material_wgsl(functions, roles);
        let half = |seed: u64| {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            seed.hash(&mut hasher);
            source.hash(&mut hasher);
            hasher.finish()
        };
        Self { id: Uuid::from_u64_pair(half(0x7465_7873_6574), half(0x6265_7679)), source }
    }

    /// The shader asset.
    #[must_use]
    pub fn shader(&self) -> Shader {
        Shader::from_wgsl(self.source.clone(), format!("texset://{}.wgsl", self.id))
    }
}

/// The source of [`material_shader`].
pub(crate) fn material_wgsl(functions: &str, roles: &Roles) -> String {
    let mut slots: Vec<u32> = Vec::new();
    let mut slot_of = |map: Option<u32>| -> Option<usize> {
        let map = map?;
        Some(slots.iter().position(|&m| m == map).unwrap_or_else(|| {
            slots.push(map);
            slots.len() - 1
        }))
    };
    let base_color = slot_of(roles.base_color.as_ref().map(|(m, _)| *m));
    let normal = slot_of(roles.normal.as_ref().map(|(m, _, _)| *m));
    // Roughness and metallic from their own maps (channel 0), else from a packed ORM map's green
    // and blue; occlusion from its own map, else the ORM map's red.
    let (roughness, roughness_channel) = match (roles.roughness, roles.orm) {
        (Some((m, _)), _) => (slot_of(Some(m)), 0),
        (None, orm) => (slot_of(orm), 1),
    };
    let (metallic, metallic_channel) = match (roles.metallic, roles.orm) {
        (Some((m, _)), _) => (slot_of(Some(m)), 0),
        (None, orm) => (slot_of(orm), 2),
    };
    let occlusion = slot_of(roles.occlusion.as_ref().map(|(m, _)| *m));
    let emissive = slot_of(roles.emissive.as_ref().map(|(m, _)| *m));
    // A material with none of these still needs an array of one (never read).
    if slots.is_empty() {
        slots.push(0);
    }
    let mut constants = String::from(
        "// The maps this material decodes (library map indices), and per part whether the material has\n// it and its slot (0 where it has not: an index out of range is an error even in a branch not taken).\n",
    );
    let _ = writeln!(constants, "const SLOT_COUNT: u32 = {}u;", slots.len());
    let maps: Vec<String> = slots.iter().map(|m| format!("{m}u")).collect();
    let _ = writeln!(constants, "const SLOT_MAP = array<u32, {}>({});", slots.len(), maps.join(", "));
    for (name, slot) in [
        ("BASE_COLOR", base_color),
        ("NORMAL", normal),
        ("ROUGHNESS", roughness),
        ("METALLIC", metallic),
        ("OCCLUSION", occlusion),
        ("EMISSIVE", emissive),
    ] {
        let _ = writeln!(constants, "const HAS_{name}: bool = {};\nconst {name}_SLOT: u32 = {}u;", slot.is_some(), slot.unwrap_or(0));
    }
    let _ = writeln!(constants, "const ROUGHNESS_CHANNEL: u32 = {roughness_channel}u;\nconst METALLIC_CHANNEL: u32 = {metallic_channel}u;");
    let _ = writeln!(constants, "const OCCLUSION_CHANNEL: u32 = 0u;");
    MATERIAL_WGSL.replacen("// texset:material\n", &constants, 1).replacen("// texset:decoder\n", functions, 1)
}
