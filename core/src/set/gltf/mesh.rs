//! An asset's triangle primitives in world space: the scene's node tree walked once, each
//! primitive read, transformed, given flat normals or `MikkTSpace` tangents where the file has none.

use super::accessor::{read_indices, read_vectors};
use super::source::LoadedAsset;
use super::tangents::{flat_normals, mikktspace};
use super::{GltfFault, GltfMesh, MAX_ASSET_VERTICES};
use crate::set::ingest::{IngestReport, Skipped};
use gltf::Semantic;

/// A column-major 4×4 matrix (`m[column][row]`), glTF's layout.
type Matrix = [[f32; 4]; 4];

const IDENTITY: Matrix = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]];

/// An asset's meshes and the variant mappings of each.
#[derive(Default)]
pub(super) struct LoadedMeshes {
    /// One per primitive instance, in traversal order.
    pub(super) meshes: Vec<GltfMesh>,
    /// `(variant, mesh, material)`: indices into the variants, `meshes` and the kept materials.
    pub(super) variant_materials: Vec<(usize, usize, usize)>,
    /// Vertices (or, before unwelding, corners) read so far, against [`MAX_ASSET_VERTICES`].
    vertex_total: usize,
}

/// A primitive's vertex data as the file has it (normals and tangents optional).
pub(super) struct Geometry {
    pub(super) positions: Vec<[f32; 3]>,
    pub(super) normals: Option<Vec<[f32; 3]>>,
    pub(super) tangents: Option<Vec<[f32; 4]>>,
    pub(super) uvs: Vec<[f32; 2]>,
    pub(super) indices: Vec<u32>,
}

/// What every primitive is read against.
struct Context<'a> {
    asset: &'a LoadedAsset,
    /// Per glTF material, its index among the kept materials.
    library_index: &'a [Option<usize>],
    /// Per kept material, the UV set its maps read.
    uv_sets: &'a [u32],
}

/// Walks the default scene (else the first, else every root node) once, reading every triangle
/// primitive whose material was kept. A node reached twice is refused (the hierarchy must be a
/// tree); primitives without a kept material are listed in `report.skipped`.
pub(super) fn load_meshes(
    asset: &LoadedAsset,
    library_index: &[Option<usize>],
    uv_sets: &[u32],
    report: &mut IngestReport,
) -> Result<LoadedMeshes, GltfFault> {
    let document = &asset.document;
    let roots: Vec<gltf::Node<'_>> = match document.default_scene().or_else(|| document.scenes().next()) {
        Some(scene) => scene.nodes().collect(),
        None => root_nodes(document),
    };
    let context = Context { asset, library_index, uv_sets };
    let mut visited = vec![false; document.nodes().len()];
    let mut stack: Vec<(gltf::Node<'_>, Matrix)> = roots.into_iter().rev().map(|node| (node, IDENTITY)).collect();
    let mut out = LoadedMeshes::default();
    while let Some((node, parent)) = stack.pop() {
        match visited.get_mut(node.index()) {
            Some(seen) if !*seen => *seen = true,
            _ => return Err(GltfFault::NodeGraph { node: node.index() }),
        }
        let world = multiply(&parent, &node.transform().matrix());
        if let Some(mesh) = node.mesh() {
            emit_mesh(&context, &node, &mesh, &world, &mut out, report)?;
        }
        let children: Vec<gltf::Node<'_>> = node.children().collect();
        stack.extend(children.into_iter().rev().map(|child| (child, world)));
    }
    Ok(out)
}

/// The nodes no node lists as a child.
fn root_nodes(document: &gltf::Document) -> Vec<gltf::Node<'_>> {
    let mut is_child = vec![false; document.nodes().len()];
    for child in document.nodes().flat_map(|node| node.children()) {
        if let Some(flag) = is_child.get_mut(child.index()) {
            *flag = true;
        }
    }
    document.nodes().filter(|node| !is_child.get(node.index()).copied().unwrap_or(true)).collect()
}

/// Adds every kept triangle primitive of `mesh`, instanced at `node` with transform `world`.
fn emit_mesh(
    context: &Context<'_>,
    node: &gltf::Node<'_>,
    mesh: &gltf::Mesh<'_>,
    world: &Matrix,
    out: &mut LoadedMeshes,
    report: &mut IngestReport,
) -> Result<(), GltfFault> {
    let mesh_name = mesh.name().map_or_else(|| format!("mesh {}", mesh.index()), str::to_owned);
    let base = node.name().or(mesh.name()).map_or_else(|| format!("node{}", node.index()), str::to_owned);
    let several = mesh.primitives().len() > 1;
    for primitive in mesh.primitives() {
        let index = primitive.index();
        let mode = primitive.mode();
        if mode != gltf::mesh::Mode::Triangles {
            return Err(GltfFault::NotTriangles { mesh: mesh_name, primitive: index, mode: format!("{mode:?}") });
        }
        let kept = primitive.material().index().and_then(|m| context.library_index.get(m).copied().flatten());
        let Some(material) = kept else {
            let reason = format!("mesh {mesh_name:?} primitive {index}: its material has no map (or it has none); left out");
            report.skipped.push(Skipped { path: context.asset.path.clone(), reason });
            continue;
        };
        let uv_set = context.uv_sets.get(material).copied().unwrap_or_default();
        let geometry = read_primitive(context.asset, &primitive, uv_set, &mesh_name)?;
        // Unwelding for flat normals can make a vertex of every index: count the larger.
        out.vertex_total = out.vertex_total.saturating_add(geometry.indices.len().max(geometry.positions.len()));
        if out.vertex_total > MAX_ASSET_VERTICES {
            return Err(GltfFault::TooLarge(format!("meshes of more than {MAX_ASSET_VERTICES} vertices in all")));
        }
        let name = if several { format!("{base}.{index}") } else { base.clone() };
        let mesh_index = out.meshes.len();
        for mapping in primitive.mappings() {
            let Some(mapped) = mapping.material().index().and_then(|m| context.library_index.get(m).copied().flatten()) else { continue };
            out.variant_materials.extend(mapping.variants().iter().map(|&v| (v as usize, mesh_index, mapped)));
        }
        out.meshes.push(bake(geometry, world, name, material));
    }
    Ok(())
}

/// A primitive's vertex data, every count and index checked.
fn read_primitive(asset: &LoadedAsset, primitive: &gltf::Primitive<'_>, uv_set: u32, mesh_name: &str) -> Result<Geometry, GltfFault> {
    let fault = |reason: String| GltfFault::Primitive { mesh: mesh_name.to_owned(), primitive: primitive.index(), reason };
    let positions_accessor = primitive.get(&Semantic::Positions).ok_or_else(|| fault("has no POSITION attribute".into()))?;
    let positions = read_vectors::<3>(asset, &positions_accessor, "POSITION")?;
    let n = positions.len();
    let normals = primitive.get(&Semantic::Normals).map(|a| read_vectors::<3>(asset, &a, "NORMAL")).transpose()?;
    // glTF tangents are defined against the file's normals: without normals they are recomputed.
    let tangents = match normals {
        Some(_) => primitive.get(&Semantic::Tangents).map(|a| read_vectors::<4>(asset, &a, "TANGENT")).transpose()?,
        None => None,
    };
    let uv_accessor = primitive
        .get(&Semantic::TexCoords(uv_set))
        .ok_or_else(|| fault(format!("has no TEXCOORD_{uv_set}, which its material's maps read")))?;
    let uvs = read_vectors::<2>(asset, &uv_accessor, &format!("TEXCOORD_{uv_set}"))?;
    let counts = [("NORMAL", normals.as_ref().map(Vec::len)), ("TANGENT", tangents.as_ref().map(Vec::len)), ("TEXCOORD", Some(uvs.len()))];
    for (what, count) in counts {
        if let Some(count) = count.filter(|&c| c != n) {
            return Err(fault(format!("{what} has {count} elements and POSITION {n}")));
        }
    }
    let indices = match primitive.indices() {
        Some(accessor) => read_indices(asset, &accessor)?,
        None => (0..n as u32).collect(),
    };
    if indices.len() % 3 != 0 {
        return Err(fault(format!("{} indices are not whole triangles", indices.len())));
    }
    if let Some(bad) = indices.iter().find(|&&i| i as usize >= n) {
        return Err(fault(format!("index {bad} is beyond its {n} vertices")));
    }
    Ok(Geometry { positions, normals, tangents, uvs, indices })
}

/// `a · b`.
fn multiply(a: &Matrix, b: &Matrix) -> Matrix {
    let mut out = [[0.0; 4]; 4];
    for (column, out_column) in out.iter_mut().enumerate() {
        for (row, value) in out_column.iter_mut().enumerate() {
            *value = (0..4).map(|k| a[k][row] * b[column][k]).sum();
        }
    }
    out
}

fn cross(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

pub(super) fn sub(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

/// `v` at unit length (a zero vector as it is).
pub(super) fn normalise(v: [f32; 3]) -> [f32; 3] {
    let length = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    if length > 0.0 { [v[0] / length, v[1] / length, v[2] / length] } else { v }
}

/// Sum of `columns[i] · v[i]`.
fn combine(columns: &[[f32; 3]; 3], v: [f32; 3]) -> [f32; 3] {
    let mut out = [0.0; 3];
    for (column, &weight) in columns.iter().zip(&v) {
        for (o, c) in out.iter_mut().zip(column) {
            *o += c * weight;
        }
    }
    out
}

/// The primitive in world space as a [`GltfMesh`]: positions by `world`; normals by its
/// inverse transpose; tangents by its linear part, `w` negated under a mirroring transform
/// (whose triangles are rewound to stay counter-clockwise); flat normals where the file has
/// none, `MikkTSpace` tangents where it has none.
fn bake(mut geometry: Geometry, world: &Matrix, name: String, material: usize) -> GltfMesh {
    let linear =
        [[world[0][0], world[0][1], world[0][2]], [world[1][0], world[1][1], world[1][2]], [world[2][0], world[2][1], world[2][2]]];
    let translation = [world[3][0], world[3][1], world[3][2]];
    let [c0, c1, c2] = linear;
    let cofactor = [cross(c1, c2), cross(c2, c0), cross(c0, c1)];
    let determinant: f32 = c0.iter().zip(&cofactor[0]).map(|(a, b)| a * b).sum();
    let mirror = determinant < 0.0;
    for p in &mut geometry.positions {
        let moved = combine(&linear, *p);
        *p = [moved[0] + translation[0], moved[1] + translation[1], moved[2] + translation[2]];
    }
    for n in geometry.normals.iter_mut().flatten() {
        // The cofactor matrix is the inverse transpose times the determinant: its sign matters.
        let turned = combine(&cofactor, *n);
        *n = normalise(if mirror { [-turned[0], -turned[1], -turned[2]] } else { turned });
    }
    for t in geometry.tangents.iter_mut().flatten() {
        let turned = normalise(combine(&linear, [t[0], t[1], t[2]]));
        *t = [turned[0], turned[1], turned[2], if mirror { -t[3] } else { t[3] }];
    }
    if mirror {
        for triangle in geometry.indices.chunks_exact_mut(3) {
            triangle.swap(1, 2);
        }
    }
    if geometry.normals.is_none() {
        geometry = flat_normals(&geometry);
    }
    if geometry.tangents.is_none() {
        geometry = mikktspace(geometry);
    }
    let Geometry { positions, normals, tangents, uvs, indices } = geometry;
    GltfMesh { name, material, positions, normals: normals.unwrap_or_default(), tangents: tangents.unwrap_or_default(), uvs, indices }
}
