//! The batched whole-map decoder (`Decoder::decode_map_level`, SIMD kernels) against the scalar
//! reference (`Decoder::decode_texel_lod`, one texel at a time), texel by texel, on every map of
//! the hand-built bundles: budgets, colour spaces, colour transforms, a DirectX normal map, a
//! float-range map, hidden widths that leave row-block tails, and every level of a mip chain.

#![allow(clippy::unwrap_used)]

use texset_core::decode::Decoder;
use texset_testkit::{
    tiny_bundle, tiny_bundle_with_four_grids, tiny_bundle_with_grouped_mips, tiny_bundle_with_mips, tiny_bundle_with_widths,
};

/// Tolerance on normalised `[0, 1]` values: the batched path's features are bit-identical to the
/// reference's and its MLP differs only in rounding (one fused multiply-add per term instead of a
/// multiply and an add), a few ulps per layer of sums of tens of terms.
const TOLERANCE: f32 = 1e-5;

fn max_difference(decoder: &Decoder) -> f32 {
    let mut worst = 0.0f32;
    for (material, entry) in decoder.manifest().materials.iter().enumerate() {
        for map in 0..entry.maps.len() {
            let levels = decoder.map_mip_levels(material, map).expect("map exists");
            for level in 0..levels {
                let fast = decoder.decode_map_level(material, map, level).expect("decodes");
                let (w, h, ch) = (fast.width as usize, fast.height as usize, fast.channels as usize);
                let mut texel = [0.0f32; 4];
                for y in 0..h {
                    for x in 0..w {
                        let (u, v) = ((x as f32 + 0.5) / w as f32, (y as f32 + 0.5) / h as f32);
                        decoder.decode_texel_lod(material, map, u, v, level as f32, &mut texel).expect("decodes");
                        for (fast, reference) in fast.values[(y * w + x) * ch..(y * w + x + 1) * ch].iter().zip(texel) {
                            worst = worst.max((fast - reference).abs());
                        }
                    }
                }
            }
        }
    }
    worst
}

#[test]
fn batched_decode_matches_the_reference() {
    for (name, bundle) in [
        ("tiny", tiny_bundle()),
        ("mips", tiny_bundle_with_mips(3)),
        ("mips in groups of 2", tiny_bundle_with_grouped_mips(4, 2)),
        ("widths 64-48-32", tiny_bundle_with_widths(&[64, 48, 32])),
        ("widths 7-5", tiny_bundle_with_widths(&[7, 5])),
        ("four grids", tiny_bundle_with_four_grids(1)),
        ("four grids, mips", tiny_bundle_with_four_grids(3)),
    ] {
        let worst = max_difference(&Decoder::new(&bundle));
        assert!(worst <= TOLERANCE, "{name}: batched decode differs from the reference by {worst}");
    }
}

/// Maps decoded in bands of rows (`Decoder::decode_material_bands`, what `texset decode` streams)
/// are the whole maps, bit for bit, whatever the band: one texel, bands that do not divide a map,
/// and one band for all; each map's bands come top first, in order.
#[test]
fn maps_decoded_in_bands_are_the_whole_maps() {
    for bundle in [tiny_bundle(), tiny_bundle_with_mips(3), tiny_bundle_with_widths(&[7, 5])] {
        let decoder = Decoder::new(&bundle);
        for material in 0..bundle.manifest.materials.len() {
            let whole = decoder.decode_material(material).unwrap();
            for band_texels in [1, 13, 50, usize::MAX] {
                let mut joined: Vec<Vec<f32>> = vec![Vec::new(); whole.len()];
                let mut next_row = vec![0u32; whole.len()];
                decoder
                    .decode_material_bands(material, 0, band_texels, |map, first_row, band| {
                        assert_eq!(first_row, next_row[map], "map {map}: bands out of order");
                        assert_eq!((band.width, band.channels), (whole[map].width, whole[map].channels));
                        next_row[map] += band.height;
                        joined[map].extend_from_slice(&band.values);
                        Ok::<(), texset_core::decode::DecodeError>(())
                    })
                    .unwrap();
                for (map, (joined, whole)) in joined.iter().zip(&whole).enumerate() {
                    assert_eq!(next_row[map], whole.height, "map {map}, bands of {band_texels}");
                    assert!(joined == &whole.values, "map {map}, bands of {band_texels}: values differ");
                }
            }
        }
    }
}

/// `decode_to_folder` writes PNG maps band by band and float maps whole: the files are the bytes
/// that encoding the whole maps gives (`write_folder` with whole maps), PNG (8 bit) and EXR.
#[test]
fn maps_written_in_bands_are_the_bytes_of_the_whole_maps() {
    use texset_core::{export::write_folder, internal_tests::decode_to_folder_in_bands, io::Overwrite};
    let bundle = tiny_bundle();
    let decoder = Decoder::new(&bundle);
    let dir = tempfile::tempdir().unwrap();
    let (bands, whole) = (dir.path().join("bands"), dir.path().join("whole"));
    let written = decode_to_folder_in_bands(&decoder, &bands, Overwrite::OnlyOurs, 20).unwrap();
    write_folder(decoder.manifest(), &whole, Overwrite::OnlyOurs, |m| Ok(decoder.decode_material(m)?)).unwrap();
    assert_eq!(written.len(), 5);
    assert!(written.iter().any(|p| p.extension().is_some_and(|e| e == "exr")));
    for path in &written {
        let relative = path.strip_prefix(&bands).unwrap();
        assert!(std::fs::read(path).unwrap() == std::fs::read(whole.join(relative)).unwrap(), "{}", relative.display());
    }
}
