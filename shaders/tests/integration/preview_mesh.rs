//! The surface pass's mesh raster: a finely tessellated sphere, drawn as a glTF mesh, gives the
//! image of the ray-cast unit sphere (whose passes the other preview tests hold to the one-pass
//! shader and the CPU reference), decoded and from the originals, with and without the LOD
//! filter; depth keeps a sphere behind hidden whatever the draw order; a mesh of another
//! material is drawn in clay.
#![allow(clippy::unwrap_used)]

use super::preview_deferred::originals_of;
use std::f32::consts::PI;
use texset_core::set::GltfMesh;
use texset_shaders::preview::{
    GpuMesh, MaterialRenderer, PreparedMaterial, PreviewUniforms, ShadePass, Shape, SurfacePass, mesh_bounds, render_deferred,
};
use texset_testkit::{tiny_bundle, tiny_bundle_with_mips};

/// A UV sphere of `radius` about `center` with the ray-cast sphere's parametrisation: u round +Y
/// from the seam at the back (u = atan2(x, z) / 2π + 0.5), v from the north pole down, tangent
/// along +u with bitangent sign +1. `rings` × `segments` quads, counter-clockwise seen from outside.
fn uv_sphere(rings: u32, segments: u32, center: [f32; 3], radius: f32) -> GltfMesh {
    let mut mesh =
        GltfMesh { name: "sphere".into(), material: 0, positions: vec![], normals: vec![], tangents: vec![], uvs: vec![], indices: vec![] };
    for r in 0..=rings {
        let v = r as f32 / rings as f32;
        let theta = v * PI;
        for s in 0..=segments {
            let u = s as f32 / segments as f32;
            let phi = (u - 0.5) * 2.0 * PI;
            let n = [theta.sin() * phi.sin(), theta.cos(), theta.sin() * phi.cos()];
            mesh.positions.push(std::array::from_fn(|k| center[k] + radius * n[k]));
            mesh.normals.push(n);
            mesh.tangents.push([phi.cos(), 0.0, -phi.sin(), 1.0]);
            mesh.uvs.push([u, v]);
        }
    }
    let row = segments + 1;
    for r in 0..rings {
        for s in 0..segments {
            let (a, b) = (r * row + s, r * row + s + 1);
            let (c, d) = (a + row, b + row);
            // Seen from outside, +u runs right and +v down: a b / c d, counter-clockwise.
            mesh.indices.extend_from_slice(&[a, c, b, b, c, d]);
        }
    }
    mesh
}

/// Mean |a − b| and the share of values further apart than 2/255.
fn difference(a: &[f32], b: &[f32]) -> (f32, f32) {
    let mean = a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum::<f32>() / a.len() as f32;
    let far = a.iter().zip(b).filter(|(x, y)| (*x - *y).abs() > 2.0 / 255.0).count() as f32 / a.len() as f32;
    (mean, far)
}

#[test]
fn a_tessellated_sphere_drawn_as_a_mesh_gives_the_ray_cast_spheres_image() {
    let name = "a_tessellated_sphere_drawn_as_a_mesh_gives_the_ray_cast_spheres_image";
    let Some((_, device, queue)) = super::rendering_gpu_or_skip(name) else {
        return;
    };
    let size = [96, 96];
    let shade = ShadePass::new(&device, wgpu::TextureFormat::Rgba32Float);
    let surface = SurfacePass::new(&device);
    let sphere = uv_sphere(96, 192, [0.0; 3], 1.0);
    let bounds = mesh_bounds(std::slice::from_ref(&sphere)).unwrap();
    assert!(bounds.center.iter().all(|c| c.abs() < 1e-5) && (bounds.radius - 1.0).abs() < 1e-5, "{bounds:?}");
    let mesh = GpuMesh::new(&device, std::slice::from_ref(&sphere), &[]).unwrap();
    let mut checked = 0;
    for (bundle, lod_filter) in [(tiny_bundle(), false), (tiny_bundle_with_mips(3), true)] {
        let mut material = MaterialRenderer::from_prepared(&device, PreparedMaterial::new(&device, &bundle, None).unwrap());
        material.set_originals(&device, &queue, &originals_of(&bundle, 0)).unwrap();
        for from_originals in [true, false] {
            let mut u = PreviewUniforms::new(&bundle.manifest, 0, 0.7, 3.0, Shape::Sphere, 1.0)
                .with_srgb_encoding(true)
                .with_originals(from_originals)
                .with_surface(0.01, size[1]);
            if lod_filter {
                u = u.with_lod_filter(size[1] as f32);
            }
            material.write_uniforms(&queue, 0, &u);
            surface.write_uniforms(&queue, 0, &u);
            shade.write_uniforms(&queue, 0, &u);
            let render = |mesh: Option<&GpuMesh>| render_deferred(&device, &queue, &material, (&surface, &shade), mesh, size).unwrap();
            let want = render(None);
            let got = render(Some(&mesh));
            let (mean, far) = difference(&want, &got);
            println!("originals {from_originals} lod {lod_filter}: mean |mesh - ray cast| {mean:.2e}, {:.2} % beyond 2/255", far * 100.0);
            assert!(want.iter().any(|&x| x > 0.05), "the image is blank");
            assert!(mean <= 1e-3 && far <= 0.01, "the mesh's image is not the sphere's: mean {mean}, {far} beyond 2/255");
            checked += 1;
        }
    }
    assert_eq!(checked, 4);

    // Depth: a sphere behind the first, drawn after it, stays hidden; one in front shows.
    let bundle = tiny_bundle();
    let mut material = MaterialRenderer::from_prepared(&device, PreparedMaterial::new(&device, &bundle, None).unwrap());
    material.set_originals(&device, &queue, &originals_of(&bundle, 0)).unwrap();
    let u = PreviewUniforms::new(&bundle.manifest, 0, 0.7, 3.0, Shape::Sphere, 1.0).with_srgb_encoding(true).with_originals(true);
    material.write_uniforms(&queue, 0, &u);
    surface.write_uniforms(&queue, 0, &u);
    shade.write_uniforms(&queue, 0, &u);
    let render = |mesh: &GpuMesh| render_deferred(&device, &queue, &material, (&surface, &shade), Some(mesh), size).unwrap();
    let alone = render(&mesh);
    let behind = GpuMesh::new(&device, &[sphere.clone(), uv_sphere(24, 48, [0.0, 0.0, -2.0], 0.5)], &[]).unwrap();
    assert_eq!(render(&behind), alone, "a sphere behind the first shows through it");
    let in_front = GpuMesh::new(&device, &[sphere.clone(), uv_sphere(24, 48, [0.0, 0.0, 1.5], 0.3)], &[]).unwrap();
    let (mean, _) = difference(&render(&in_front), &alone);
    assert!(mean > 1e-3, "a sphere in front of the first is hidden ({mean})");

    // Another material's mesh is clay: grey (R = G = B) wherever it covers.
    mesh.show(&queue, &[false]);
    let clay = render(&mesh);
    let centre = ((size[1] / 2 * size[0] + size[0] / 2) * 4) as usize;
    let [r, g, b] = [clay[centre], clay[centre + 1], clay[centre + 2]];
    assert!((r - g).abs() < 1e-4 && (g - b).abs() < 1e-4 && r > 0.05, "clay is not grey: {r} {g} {b}");
    assert_ne!(clay, alone, "the mesh shows its material though marked as another's");
}
