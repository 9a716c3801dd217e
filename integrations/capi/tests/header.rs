//! include/texset.h is what cbindgen writes from this crate: a change to the API without the
//! header's fails here (and so in CI, scripts/capi-check.sh).

use std::path::Path;

#[test]
fn the_committed_header_is_what_cbindgen_writes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml reads");
    let bindings = cbindgen::Builder::new().with_crate(dir).with_config(config).generate().expect("cbindgen parses the crate");
    let mut written = Vec::new();
    bindings.write(&mut written);
    let path = dir.join("include/texset.h");
    if std::env::var_os("TEXSET_BLESS").is_some() {
        std::fs::write(&path, &written).expect("include/texset.h is writable");
        return;
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == written,
        "include/texset.h differs from what cbindgen writes from the crate: run `TEXSET_BLESS=1 cargo test --test header` \
         in integrations/capi and commit the header"
    );
}
