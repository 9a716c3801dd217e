//! glTF 2.0 assets (`.gltf` with its files, or `.glb`) as library input: every textured material
//! of the asset becomes a [`Material`], and its meshes come back beside them ([`load_gltf`]).
//!
//! # What is read, and from where
//! The document is parsed and validated by the `gltf` crate; buffers and images are resolved here
//! (never `gltf::import`): a relative URI is percent-decoded, `..` is resolved lexically, and the
//! file it names must canonicalise (symlinks followed) inside the asset's folder, or the asset is
//! refused ([`GltfFault::OutsideFolder`]); a `data:` URI is decoded in memory; a `.glb`'s binary
//! chunk serves the buffer without a URI and images in buffer views. Every size the file claims is
//! checked against the bytes that are there before anything is allocated for it. Images decode
//! through [`crate::set::decode_texture`] (the same limits as a material folder), each image once,
//! images being told apart by resolved file (two image entries naming one file are one image).
//! Any fault refuses the whole asset: nothing is half loaded.
//!
//! # Maps from a material's bindings
//! - `baseColorTexture` → [`MapKind::Basecolor`], as stored, less the alpha channel when
//!   `alphaMode` is `OPAQUE` (glTF ignores it then).
//! - `normalTexture` → [`MapKind::Normal`] (RGB, OpenGL convention as glTF defines), its `scale`
//!   in [`MaterialConstants::normal_scale`].
//! - `metallicRoughnessTexture` and `occlusionTexture` bound to the **same image** → one
//!   [`MapKind::Orm`] (RGB: R occlusion, G roughness, B metallic), stored once.
//! - Otherwise `metallicRoughnessTexture` is split into what glTF reads of it: G →
//!   [`MapKind::Roughness`], and B → [`MapKind::Metallic`] only when `metallicFactor` > 0 (with a
//!   factor of 0 the channel cannot show, as in a roughness-only map bound with `metallicFactor`
//!   0). Its R is never read: glTF takes occlusion only from `occlusionTexture`, so an `arm` map
//!   bound as metallic-roughness alone gives roughness and metallic, no occlusion.
//! - `occlusionTexture` on an image of its own → R as [`MapKind::Ao`].
//! - `emissiveTexture` → [`MapKind::Emissive`] (RGB) only when some `emissiveFactor` component is
//!   above 0 (glTF's default factor is black: the map cannot show otherwise).
//!
//! A gray image gives its one value for R, G and B. A map left out by these rules is listed in
//! the report's `skipped`. Factors, `alphaMode`, `alphaCutoff` and `doubleSided` are kept in
//! [`MaterialConstants`], not baked into the maps.
//!
//! # One UV layout per material
//! A texset material decodes all its maps at one UV, so every binding that gives a map must read
//! the same `TEXCOORD_n` set (after a `KHR_texture_transform` `texCoord` override) through the
//! same `KHR_texture_transform` (none counts as the identity); that set and transform are kept as
//! [`MaterialConstants::uv_set`] and [`MaterialConstants::uv_transform`]. A material whose
//! bindings differ is refused by name ([`IngestError::GltfMaterial`]).
//!
//! # Names
//! A material that a `KHR_materials_variants` variant maps is named after the variant (the first
//! such variant in the file's order), else after its glTF name, else after the asset's file stem.
//! Characters a bundle refuses in names (`/`, `\`, `:`, control characters) become `_`. Names
//! clashing with an earlier material's, in document order, get `_2`, `_3`, ….
//!
//! # Left out
//! A material with no map (no texture bound, or every binding left out) has nothing to compress
//! and is left out with the primitives that use it, as are primitives with no material; each is
//! listed in the report's `skipped`. An asset with no textured material is refused.
//!
//! # Meshes
//! One [`GltfMesh`] per triangle primitive reached from the default scene (else the first scene,
//! else every root node), node transforms applied (normals by the inverse transpose, triangle
//! winding flipped under a mirroring transform); other primitive modes are refused. Normals are
//! the file's, else flat; tangents the file's, else `MikkTSpace`'s (`bevy_mikktspace`, the glTF
//! spec's algorithm), vertices split where `MikkTSpace` gives one vertex two tangents. UVs are the
//! set the primitive's material reads.

mod accessor;
mod material;
mod mesh;
mod source;
mod tangents;
#[cfg(test)]
mod tests;

use crate::set::ingest::{IngestError, IngestReport};
use crate::set::{GltfMesh, Material};

#[cfg(doc)]
use crate::set::{MapKind, MaterialConstants};
use std::path::{Path, PathBuf};

/// The `extensionsRequired` entries texset reads (any other one refuses the asset).
pub(crate) const SUPPORTED_REQUIRED_EXTENSIONS: &[&str] = &["KHR_texture_transform", "KHR_materials_variants"];

/// Largest `.gltf`, `.glb` or `.bin` file read, in bytes.
pub(crate) const MAX_FILE_BYTES: u64 = 2 << 30;

/// Most vertices all of an asset's meshes may hold together (node instances counted each time).
pub(crate) const MAX_ASSET_VERTICES: usize = 1 << 26;

/// A glTF 2.0 asset read by [`load_gltf`].
#[derive(Clone, Debug)]
pub struct GltfAsset {
    /// Its textured materials, in document order, named uniquely (the module doc says how).
    pub materials: Vec<Material>,
    /// One per triangle primitive instance reached from the scene, in traversal order.
    pub meshes: Vec<GltfMesh>,
    /// The `KHR_materials_variants` variants, in document order (empty without the extension).
    pub variants: Vec<GltfVariant>,
    /// The distinct image sources decoded (files by canonical path; embedded images as
    /// `<asset>#image<N>`), in first-use order: each is decoded once however often it is bound.
    pub image_sources: Vec<PathBuf>,
    /// The maps read, constants resized, and what was left out (bindings, materials, primitives).
    pub report: IngestReport,
}

/// A `KHR_materials_variants` variant: a name and the materials it puts on meshes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GltfVariant {
    /// The variant's name.
    pub name: String,
    /// `(mesh, material)`: [`GltfAsset::meshes`] index and the [`GltfAsset::materials`] index
    /// the variant gives it, for every mesh the variant maps.
    pub mesh_materials: Vec<(usize, usize)>,
}

/// What is wrong with a glTF asset (inside [`IngestError::Gltf`] and
/// [`IngestError::GltfMaterial`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GltfFault {
    /// The `.glb` container is malformed.
    #[error("not a valid GLB container: {0}")]
    Container(String),
    /// The JSON does not parse as glTF.
    #[error("not valid glTF JSON: {0}")]
    Json(String),
    /// The document fails glTF validation (indices out of range, missing required fields, …).
    #[error("fails glTF validation: {0}")]
    Invalid(String),
    /// `extensionsRequired` names an extension texset does not read.
    #[error("requires extension {name:?}, which texset does not read (it reads {SUPPORTED_REQUIRED_EXTENSIONS:?})")]
    RequiredExtension {
        /// The extension.
        name: String,
    },
    /// A URI names something outside the asset's folder (`..`, an absolute path, another scheme,
    /// or a link out of it): nothing outside the folder is read.
    #[error("URI {uri:?} points outside the asset's folder; only files inside it are read")]
    OutsideFolder {
        /// The URI as written.
        uri: String,
    },
    /// A URI that cannot be decoded (bad percent-encoding or base64).
    #[error("URI {uri:?} {reason}")]
    BadUri {
        /// The URI as written (cut after 60 characters).
        uri: String,
        /// What is wrong.
        reason: String,
    },
    /// A buffer or image file that cannot be read (missing, not a regular file, too large).
    #[error("cannot read {uri:?} ({path:?}): {source}")]
    MissingFile {
        /// The URI as written.
        uri: String,
        /// The path it resolves to.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A buffer claims more bytes than its source holds.
    #[error("buffer {buffer} claims {claimed_bytes} bytes but its data holds {available_bytes}")]
    BufferTooShort {
        /// The buffer's index.
        buffer: usize,
        /// Its `byteLength`.
        claimed_bytes: u64,
        /// What the file, data URI or GLB chunk holds.
        available_bytes: u64,
    },
    /// A buffer without a URI in a file that has no GLB binary chunk.
    #[error("buffer {buffer} has no URI and the file has no GLB binary chunk")]
    MissingBinChunk {
        /// The buffer's index.
        buffer: usize,
    },
    /// A buffer view reaches past the end of its buffer.
    #[error("buffer view {view} ends at byte {end_bytes} of buffer {buffer}, which holds {buffer_bytes}")]
    ViewOutOfRange {
        /// The view's index.
        view: usize,
        /// Where it ends (offset + length).
        end_bytes: u64,
        /// Its buffer's index.
        buffer: usize,
        /// The buffer's `byteLength`.
        buffer_bytes: u64,
    },
    /// An accessor reaches past the end of its buffer view.
    #[error("accessor {accessor} ends at byte {end_bytes} of buffer view {view}, which holds {view_bytes}")]
    AccessorOutOfRange {
        /// The accessor's index.
        accessor: usize,
        /// Its buffer view's index.
        view: usize,
        /// Where its last element ends, in the view.
        end_bytes: u64,
        /// The view's `byteLength`.
        view_bytes: u64,
    },
    /// An accessor that cannot serve its use (wrong type, bad stride, index out of range).
    #[error("accessor {accessor}: {reason}")]
    Accessor {
        /// The accessor's index.
        accessor: usize,
        /// What is wrong.
        reason: String,
    },
    /// A primitive that does not draw triangles.
    #[error("mesh {mesh:?} primitive {primitive} draws {mode}; texset reads triangles only")]
    NotTriangles {
        /// The mesh's name (or index).
        mesh: String,
        /// The primitive's index in the mesh.
        primitive: usize,
        /// Its mode.
        mode: String,
    },
    /// A primitive that cannot be read (missing positions or UVs, inconsistent counts).
    #[error("mesh {mesh:?} primitive {primitive}: {reason}")]
    Primitive {
        /// The mesh's name (or index).
        mesh: String,
        /// The primitive's index in the mesh.
        primitive: usize,
        /// What is wrong.
        reason: String,
    },
    /// The node hierarchy is not a tree.
    #[error("node {node} is reached twice from the scene (two parents or a cycle)")]
    NodeGraph {
        /// The node's index.
        node: usize,
    },
    /// A `KHR_materials_variants` mapping names a variant or material that does not exist.
    #[error("KHR_materials_variants: {0}")]
    Variant(String),
    /// More than the asset limits allow.
    #[error("too large: {0}")]
    TooLarge(String),
    /// The asset has no material with a map.
    #[error("no material binds a texture, so there is nothing to compress")]
    NoTexturedMaterial,
    /// A material's bindings read different UV sets.
    #[error("its textures read different UV sets ({bindings}), but a texset material decodes all its maps at one UV")]
    TexCoordsDiffer {
        /// Each binding and its set.
        bindings: String,
    },
    /// A material's bindings have different `KHR_texture_transform`s.
    #[error("its textures have different KHR_texture_transform ({bindings}), but a texset material decodes all its maps at one UV")]
    TransformsDiffer {
        /// Each binding and its transform.
        bindings: String,
    },
}

/// Whether `path` names a glTF asset (`.gltf` or `.glb`, any case) rather than a material folder.
#[must_use]
pub fn is_gltf_path(path: &Path) -> bool {
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or_default();
    (extension.eq_ignore_ascii_case("gltf") || extension.eq_ignore_ascii_case("glb")) && !path.is_dir()
}

/// Loads a glTF 2.0 asset: its textured materials, its triangle meshes in world space and its
/// variants.
///
/// Maps: base colour → basecolor (alpha dropped under `OPAQUE`); normal → normal; metallic-
/// roughness and occlusion on one image → one ORM map; otherwise metallic-roughness G →
/// roughness, B → metallic only when `metallicFactor` > 0, occlusion R → AO; emissive → emissive
/// only when `emissiveFactor` is not black. Factors, alpha and sidedness, and the one UV set and
/// `KHR_texture_transform` all of a material's maps must share, are [`MaterialConstants`]. A
/// material a variant maps is named after the variant; clashing names get `_2`, `_3`, ….
/// Untextured materials, and the primitives that use them, are left out (listed in the report). Every fault is an [`IngestError`] naming the file
/// ([`IngestError::Gltf`]) or the material ([`IngestError::GltfMaterial`]); nothing outside the
/// asset's folder is read.
pub fn load_gltf(path: &Path) -> Result<GltfAsset, IngestError> {
    load_gltf_with_source(path).map(|(asset, _)| asset)
}

/// What the glTF writer (`export::write_gltf`) needs of the asset a library came from, beside
/// [`GltfAsset`]: the JSON as the file holds it, its buffers' bytes, and which library material
/// each glTF material became.
#[cfg_attr(not(feature = "train"), allow(dead_code))] // The writer needs the trainer's PNG encoder.
pub(crate) struct GltfSource {
    /// The document's JSON.
    pub(crate) json: serde_json::Value,
    /// Each buffer's bytes (a `.glb`'s binary chunk for its buffer without a URI).
    pub(crate) buffers: Vec<Vec<u8>>,
    /// Per glTF material, its index in [`GltfAsset::materials`] (`None`: left out, no map).
    pub(crate) library_index: Vec<Option<usize>>,
    /// The file stem.
    pub(crate) stem: String,
}

/// [`load_gltf`], and what the glTF writer needs of the source.
pub(crate) fn load_gltf_with_source(path: &Path) -> Result<(GltfAsset, GltfSource), IngestError> {
    let fault = |fault: GltfFault| IngestError::Gltf { path: path.to_path_buf(), fault };
    let loaded = source::read_asset(path)?;
    let mut report = IngestReport::default();
    let materials = material::load_materials(&loaded, &mut report)?;
    if materials.materials.is_empty() {
        return Err(fault(GltfFault::NoTexturedMaterial));
    }
    let uv_sets: Vec<u32> = materials.materials.iter().map(|m| m.constants.uv_set).collect();
    let meshes = mesh::load_meshes(&loaded, &materials.library_index, &uv_sets, &mut report).map_err(fault)?;
    let variants = loaded
        .variant_names
        .iter()
        .enumerate()
        .map(|(v, name)| GltfVariant {
            name: name.clone(),
            mesh_materials: meshes.variant_materials.iter().filter(|m| m.0 == v).map(|&(_, mesh, material)| (mesh, material)).collect(),
        })
        .collect();
    let json = serde_json::from_slice(&loaded.json).map_err(|e| fault(GltfFault::Json(e.to_string())))?;
    let source = GltfSource { json, buffers: loaded.buffers, library_index: materials.library_index, stem: loaded.stem };
    let asset =
        GltfAsset { materials: materials.materials, meshes: meshes.meshes, variants, image_sources: materials.image_sources, report };
    Ok((asset, source))
}
