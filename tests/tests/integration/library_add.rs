//! Adding a material to a trained library: only the new latents and adapter train, and every
//! existing material decodes to the same bytes as before.
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::PathBuf;
use texset_core::{
    Cancel, NoProgress,
    bundle::Bundle,
    compress,
    decode::Decoder,
    drivers::{AddOptions, add_materials},
    eval::evaluate,
    export::encode_png,
    options::{CompressOptions, ScheduleConfig},
    set::{MapKind, Material, MaterialConstants, TextureSet},
};

fn material(name: &str, size: u32, phase: f32, tint: f32) -> Material {
    let s = size as f32;
    let base = texset_testkit::texture(MapKind::Basecolor, size, size, 3, move |x, y, c| {
        let (u, v) = (x as f32 / s, y as f32 / s);
        (0.4 + 0.25 * (u * 7.0 + phase).sin() * (v * 5.0 - phase).cos()) * (1.0 + tint * (c as f32 - 1.0))
    });
    let rough = texset_testkit::texture(MapKind::Roughness, size, size, 1, move |x, y, _| {
        let (u, v) = (x as f32 / s, y as f32 / s);
        0.5 + 0.3 * (u * 4.0 - v * 6.0 + phase).sin()
    });
    Material { name: name.into(), source_dir: PathBuf::from(name), textures: vec![base, rough], constants: MaterialConstants::default() }
}

/// Every map of a material as PNG bytes, as `texset decode` writes them.
fn pngs(bundle: &Bundle, material: usize) -> Vec<Vec<u8>> {
    let decoder = Decoder::new(bundle);
    let entries = &bundle.manifest.materials[material].maps;
    decoder.decode_material(material).unwrap().iter().zip(entries).map(|(map, entry)| encode_png(map, entry).unwrap()).collect()
}

#[test]
fn adding_a_material_trains_only_its_adapter_and_leaves_the_library_byte_identical() {
    let library = TextureSet { materials: vec![material("red", 32, 0.0, 0.4), material("blue", 32, 0.0, -0.4)] };
    let options =
        CompressOptions { schedule: ScheduleConfig { steps: 300, batch_texels: 2048, ..Default::default() }, ..CompressOptions::default() };
    let trained = compress(&library, &options, &NoProgress, &Cancel::new()).unwrap();
    let before: Vec<Vec<Vec<u8>>> = (0..2).map(|m| pngs(&trained.bundle, m)).collect();

    let extra = TextureSet { materials: vec![material("green", 32, 1.3, 0.1)] };
    let add = AddOptions {
        train: CompressOptions { schedule: ScheduleConfig { steps: 100, ..options.schedule.clone() }, ..options.clone() },
        adapter_channels: None,
        read_shared: false,
    };
    let grown = add_materials(&trained.bundle, &extra, &add, &NoProgress, &Cancel::new()).unwrap();
    let r = &grown.report;
    assert_eq!((r.materials_before, r.materials_added), (2, 1));
    // The default adapter: each grid's channels over the material count (12/2, 16/2).
    assert_eq!(r.adapter_channels, vec![6, 8]);
    assert!(r.trained_parameters * 2 < r.total_parameters, "{} of {}", r.trained_parameters, r.total_parameters);

    // The grown bundle round-trips, and the old materials decode to the same PNG bytes.
    let read = Bundle::from_bytes(&grown.bundle_bytes).unwrap();
    assert_eq!(read.manifest.materials.len(), 3);
    for (m, old_pngs) in before.iter().enumerate() {
        assert_eq!(&pngs(&read, m), old_pngs, "material {m} changed");
    }
    // Not only the PNGs: every decoded float is the same.
    let (old, new) = (Decoder::new(&trained.bundle), Decoder::new(&read));
    for m in 0..2 {
        assert_eq!(old.decode_material(m).unwrap(), new.decode_material(m).unwrap());
    }

    // The new material learned something real.
    let eval = evaluate(&extra, &new, false).unwrap();
    assert!(eval.pooled_psnr_db > 28.0, "{:?}", eval.maps);
    // Training it alone would take the full budget of steps; the adapter ran a third of them.
    assert_eq!(r.train.steps_run, 100);
    // By default the new maps read only their own channels; on request the library's too, and
    // the library still decodes to the same bytes.
    let own = &read.manifest.materials[2].maps[0].latent_channels;
    assert_eq!(own.len(), 14);
    let add_shared = AddOptions { read_shared: true, ..add };
    let grown = add_materials(&trained.bundle, &extra, &add_shared, &NoProgress, &Cancel::new()).unwrap();
    let read = Bundle::from_bytes(&grown.bundle_bytes).unwrap();
    assert_eq!(read.manifest.materials[2].maps[0].latent_channels.len(), 14 + 28);
    for (m, old_pngs) in before.iter().enumerate() {
        assert_eq!(&pngs(&read, m), old_pngs, "material {m} changed (reading shared channels)");
    }
}

#[test]
fn a_material_name_already_in_the_library_is_refused() {
    let library = TextureSet { materials: vec![material("red", 16, 0.0, 0.4)] };
    let options =
        CompressOptions { schedule: ScheduleConfig { steps: 2, batch_texels: 256, ..Default::default() }, ..CompressOptions::default() };
    let trained = compress(&library, &options, &NoProgress, &Cancel::new()).unwrap();
    let again = TextureSet { materials: vec![material("red", 16, 1.0, 0.0)] };
    let add = AddOptions { train: options, adapter_channels: None, read_shared: false };
    let error = add_materials(&trained.bundle, &again, &add, &NoProgress, &Cancel::new()).unwrap_err().to_string();
    assert!(error.contains("already has a material named 'red'"), "{error}");
}
