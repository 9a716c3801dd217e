//! Fuzzes the bundle reader: any bytes must give a bundle or a `BundleError`, never a panic, a
//! hang or an allocation the file's own size does not justify. A bundle that parses is decoded at
//! a texel of every map, so the decoder runs on whatever the reader accepts.
//! (Fuzz builds skip checksums, `cfg(fuzzing)`, so the fuzzer gets past them.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use texset_core::{bundle::Bundle, decode::Decoder};

fuzz_target!(|data: &[u8]| {
    let Ok(bundle) = Bundle::from_bytes(data) else {
        return;
    };
    let decoder = Decoder::new(&bundle);
    let mut out = [0.0_f32; 4];
    for (m, material) in decoder.manifest().materials.iter().enumerate() {
        for map in 0..material.maps.len() {
            let _ = decoder.decode_texel(m, map, 0.999, 0.001, &mut out);
        }
    }
});
