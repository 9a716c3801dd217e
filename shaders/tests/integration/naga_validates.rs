//! Every WGSL file of the crate (src/ and examples/) parses with naga's WGSL frontend and passes naga's validator
//! (decode.wgsl with texset-core's bilinear.wgsl before it, as the decoder builds it).

use std::path::{Path, PathBuf};

fn wgsl_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display())).path();
        if path.is_dir() {
            wgsl_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "wgsl") {
            out.push(path);
        }
    }
}

#[test]
fn naga_validates_every_wgsl() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "examples"] {
        wgsl_files(&root.join(dir), &mut files);
    }
    files.sort();
    assert!(
        files.iter().any(|f| f.ends_with("src/decode.wgsl")) && files.iter().any(|f| f.ends_with("examples/lit_quad.wgsl")),
        "{files:?}"
    );
    for file in &files {
        let name = file.display();
        let mut source = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{name}: {e}"));
        // A file that extends others (`// texset:append-to decode.wgsl preview_scene.wgsl`) is
        // validated appended to them, in that order.
        let mut paths = vec![file.clone()];
        if let Some(bases) = source.lines().next().and_then(|l| l.strip_prefix("// texset:append-to ")) {
            let bases: Vec<PathBuf> = bases.split_whitespace().map(|b| file.with_file_name(b)).collect();
            let base_sources: Vec<String> =
                bases.iter().map(|b| std::fs::read_to_string(b).unwrap_or_else(|e| panic!("{}: {e}", b.display()))).collect();
            source = format!("{}\n{source}", base_sources.join("\n"));
            paths.extend(bases);
        }
        // decode.wgsl (and what extends it) reads grids with texset-core's bilinear.wgsl, which
        // `GpuModel::wgsl` prepends.
        if paths.iter().any(|p| p.ends_with("src/decode.wgsl")) {
            source = format!("{}\n{source}", texset_core::model::MODEL_WGSL);
        }
        let module =
            naga::front::wgsl::parse_str(&source).unwrap_or_else(|e| panic!("{name}: WGSL parse error:\n{}", e.emit_to_string(&source)));
        let mut validator = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::default());
        if let Err(e) = validator.validate(&module) {
            panic!("{name}: naga validation error:\n{}", e.emit_to_string(&source));
        }
        println!("validated {name}");
    }
}
