//! Normals and tangents a primitive lacks: flat normals (glTF: "client implementations MUST
//! calculate flat normals"), and `MikkTSpace` tangents (the spec's "SHOULD", through
//! `bevy_mikktspace`, a pure-Rust port that matches the C reference).

use super::mesh::{Geometry, normalise, sub};
use std::collections::HashMap;

/// The primitive unwelded (three vertices per triangle) with each triangle's face normal; the
/// file's tangents are dropped (they belong to normals the file does not have).
pub(super) fn flat_normals(geometry: &Geometry) -> Geometry {
    let corner = |i: &u32| *i as usize;
    let positions: Vec<[f32; 3]> =
        geometry.indices.iter().map(|i| geometry.positions.get(corner(i)).copied().unwrap_or_default()).collect();
    let uvs = geometry.indices.iter().map(|i| geometry.uvs.get(corner(i)).copied().unwrap_or_default()).collect();
    let normals = positions
        .chunks_exact(3)
        .flat_map(|t| {
            let [a, b, c] = [t[0], t[1], t[2]];
            let ab = sub(b, a);
            let ac = sub(c, a);
            let n = normalise([ab[1] * ac[2] - ab[2] * ac[1], ab[2] * ac[0] - ab[0] * ac[2], ab[0] * ac[1] - ab[1] * ac[0]]);
            [n; 3]
        })
        .collect();
    let indices = (0..positions.len() as u32).collect();
    Geometry { positions, normals: Some(normals), tangents: None, uvs, indices }
}

/// The mesh `MikkTSpace` reads, and the tangent it gives each triangle corner.
struct Mikk<'a> {
    positions: &'a [[f32; 3]],
    normals: &'a [[f32; 3]],
    uvs: &'a [[f32; 2]],
    indices: &'a [u32],
    corners: Vec<Option<[f32; 4]>>,
}

impl Mikk<'_> {
    fn vertex(&self, face: usize, vert: usize) -> usize {
        self.indices.get(face * 3 + vert).map_or(usize::MAX, |&i| i as usize)
    }
}

impl bevy_mikktspace::Geometry for Mikk<'_> {
    fn num_faces(&self) -> usize {
        self.indices.len() / 3
    }

    fn num_vertices_of_face(&self, _face: usize) -> usize {
        3
    }

    fn position(&self, face: usize, vert: usize) -> [f32; 3] {
        self.positions.get(self.vertex(face, vert)).copied().unwrap_or_default()
    }

    fn normal(&self, face: usize, vert: usize) -> [f32; 3] {
        self.normals.get(self.vertex(face, vert)).copied().unwrap_or_default()
    }

    fn tex_coord(&self, face: usize, vert: usize) -> [f32; 2] {
        self.uvs.get(self.vertex(face, vert)).copied().unwrap_or_default()
    }

    fn set_tangent(&mut self, tangent_space: Option<bevy_mikktspace::TangentSpace>, face: usize, vert: usize) {
        if let Some(slot) = self.corners.get_mut(face * 3 + vert) {
            *slot = tangent_space.map(|t| t.tangent_encoded());
        }
    }
}

/// A unit tangent perpendicular to `normal` (for a corner `MikkTSpace` leaves without one: a
/// degenerate triangle with no neighbour to borrow from).
fn any_tangent(normal: [f32; 3]) -> [f32; 4] {
    let axis = if normal[0].abs() < 0.9 { [1.0, 0.0, 0.0] } else { [0.0, 1.0, 0.0] };
    let t = normalise(sub(axis, normal.map(|n| n * (axis[0] * normal[0] + axis[1] * normal[1] + axis[2] * normal[2]))));
    [t[0], t[1], t[2], 1.0]
}

/// `geometry` with `MikkTSpace` tangents (its normals must be there). `MikkTSpace` gives a tangent
/// per triangle corner; corners of one vertex with different tangents become separate vertices.
pub(super) fn mikktspace(geometry: Geometry) -> Geometry {
    let Geometry { positions, normals, uvs, indices, .. } = geometry;
    let normals = normals.unwrap_or_default();
    let mut mikk = Mikk { positions: &positions, normals: &normals, uvs: &uvs, indices: &indices, corners: vec![None; indices.len()] };
    // The error type has no variants: generation cannot fail.
    let _ = bevy_mikktspace::generate_tangents(&mut mikk);
    let corners = mikk.corners;
    let mut welded: HashMap<(u32, [u32; 4]), u32> = HashMap::new();
    let mut out =
        Geometry { positions: Vec::new(), normals: None, tangents: None, uvs: Vec::new(), indices: Vec::with_capacity(indices.len()) };
    let (mut out_normals, mut out_tangents) = (Vec::new(), Vec::new());
    for (&vertex, tangent) in indices.iter().zip(corners) {
        let v = vertex as usize;
        let normal = normals.get(v).copied().unwrap_or_default();
        let tangent = tangent.unwrap_or_else(|| any_tangent(normal));
        let next = out.positions.len() as u32;
        let index = *welded.entry((vertex, tangent.map(f32::to_bits))).or_insert(next);
        if index == next {
            out.positions.push(positions.get(v).copied().unwrap_or_default());
            out_normals.push(normal);
            out.uvs.push(uvs.get(v).copied().unwrap_or_default());
            out_tangents.push(tangent);
        }
        out.indices.push(index);
    }
    out.normals = Some(out_normals);
    out.tangents = Some(out_tangents);
    out
}
