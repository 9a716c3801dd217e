//! Fuzzes texset-bevy's loader without Bevy: the first byte picks the mips and BC or not, the rest
//! is a bundle's bytes, and `texset_core::export::bundle_images` must give images whose data is
//! the size their format says, or an error (`texset_testkit::fuzz::bundle_images`). Seed it with
//! forged bundles (a selector byte, then a bundle's bytes).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    texset_testkit::fuzz::bundle_images(data);
});
