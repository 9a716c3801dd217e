//! Fuzzes a material folder's `texset.toml`: any bytes there load the folder or give an error
//! that names the file (`texset_testkit::fuzz::folder_config`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    texset_testkit::fuzz::folder_config(data);
});
