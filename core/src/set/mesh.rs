//! A triangle mesh as the viewport draws it: plain data, with no glTF reader behind it, so a
//! renderer that is built without ingest (`texset-shaders`) takes it too.

#[cfg(doc)]
use super::MaterialConstants;

/// One triangle primitive of a glTF mesh, in the asset's world space (node transforms applied).
#[derive(Clone, Debug, PartialEq)]
pub struct GltfMesh {
    /// The node's name, else the mesh's, else `node<N>`; `.<P>` added for primitive P of a mesh
    /// of several.
    pub name: String,
    /// Index into `GltfAsset::materials` (the library's materials for this asset).
    pub material: usize,
    /// Vertex positions.
    pub positions: Vec<[f32; 3]>,
    /// Unit vertex normals.
    pub normals: Vec<[f32; 3]>,
    /// Unit tangents with the bitangent sign in `w` (glTF's convention).
    pub tangents: Vec<[f32; 4]>,
    /// UVs of the set the material reads ([`MaterialConstants::uv_set`]).
    pub uvs: Vec<[f32; 2]>,
    /// Three indices per triangle, counter-clockwise front faces.
    pub indices: Vec<u32>,
}
