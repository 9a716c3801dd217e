//! The batched whole-map decoder (`Decoder::decode_map_level`, SIMD kernels) against the scalar
//! reference (`Decoder::decode_texel_lod`, one texel at a time), texel by texel, on every map of
//! the hand-built bundles: budgets, colour spaces, colour transforms, a DirectX normal map, a
//! float-range map, hidden widths that leave row-block tails, and every level of a mip chain.

use texset_core::decode::Decoder;
use texset_testkit::{tiny_bundle, tiny_bundle_with_grouped_mips, tiny_bundle_with_mips, tiny_bundle_with_widths};

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
    ] {
        let worst = max_difference(&Decoder::new(&bundle));
        assert!(worst <= TOLERANCE, "{name}: batched decode differs from the reference by {worst}");
    }
}
