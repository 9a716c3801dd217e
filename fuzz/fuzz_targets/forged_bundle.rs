//! Structure-aware fuzzing of the bundle format: the input's bytes choose a bundle's shape
//! (`texset_testkit::forge_bundle`: every format version, grids, pyramid, weight format,
//! activation, maps with budgets, float ranges and colour transforms), and the bundle must write,
//! read back to the same bytes, fit the interactive decode budget and decode whole to finite
//! values (`texset_testkit::fuzz::forged_bundle`). Maps stay small, so each input decodes in
//! milliseconds.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = texset_testkit::fuzz::forged_bundle(data);
});
