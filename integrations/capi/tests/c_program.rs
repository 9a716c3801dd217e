//! The C API from C (tests/c/check.c, built with address and undefined-behaviour sanitizers against the static
//! library cargo built for this test), compared with texset's Rust decoder byte for byte; its
//! GLSL validated by glslangValidator; the C snippet of docs/integration.md compiled and run.

use std::path::{Path, PathBuf};
use std::process::Command;
use texset_core::{
    bundle::Bundle,
    decode::{Decoder, unorm8, unorm16},
};
use texset_shaders::{
    DecodeMode, EntryPoint, GpuModel, ShaderLang, WORKGROUP_SIDE,
    export::{ExternalCheck, external_check},
    model::{DecodeParams, words_to_bytes},
};

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The pinned bundles of the root workspace's tests: one without and one with a mip chain.
fn pinned(name: &str) -> PathBuf {
    crate_dir().join("../../tests/data/pinned").join(name)
}

/// The static library cargo built beside this test binary (`target/<profile>/deps`).
fn static_library() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("the test binary's folder");
    let lib = deps.join("libtexset_capi.a");
    assert!(lib.is_file(), "{} is missing: cargo builds it with the test (crate-type staticlib)", lib.display());
    lib
}

/// Compiles C (or C++, `cxx`) `sources` against the header and the static library, with
/// address and undefined-behaviour sanitizers on the C side.
fn compile(sources: &[&Path], output: &Path, cxx: bool) {
    let compiler =
        if cxx { std::env::var("CXX").unwrap_or_else(|_| "c++".into()) } else { std::env::var("CC").unwrap_or_else(|_| "cc".into()) };
    let mut command = Command::new(&compiler);
    if cxx {
        command.args(["-x", "c++", "-std=c++17"]);
    } else {
        command.arg("-std=c11");
    }
    command
        .args(["-Wall", "-Wextra", "-Werror", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined"])
        .arg("-I")
        .arg(crate_dir().join("include"))
        .args(sources)
        .args(["-x", "none"])
        .arg(static_library())
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(output);
    let out = command.output().unwrap_or_else(|e| panic!("cannot run {compiler}: {e} (a C compiler is needed: apt-get install gcc)"));
    assert!(out.status.success(), "{compiler} failed:\n{}", String::from_utf8_lossy(&out.stderr));
}

fn run(program: &Path, args: &[&Path]) -> String {
    let out = Command::new(program)
        .args(args)
        // Leaks are errors; UBSan stops at the first report.
        .env("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0:exitcode=86")
        .env("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
        .output()
        .expect("the C program runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{} failed ({}):\n{stdout}\n{}", program.display(), out.status, String::from_utf8_lossy(&out.stderr));
    stdout
}

fn read(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("the C program wrote no {name}: {e}"))
}

/// Where this machine has no glslangValidator: CI installs it (`glslang-tools`), so there it must run.
fn glslang_required() -> bool {
    std::env::var_os("CI").is_some() || std::env::var_os("TEXSET_REQUIRE_GLSLANG").is_some()
}

fn check_bundle(name: &str) {
    let path = pinned(name);
    let work = tempfile::tempdir().expect("a temporary folder");
    let program = work.path().join("check");
    compile(&[&crate_dir().join("tests/c/check.c")], &program, false);
    let out = work.path().join("out");
    std::fs::create_dir(&out).expect("the output folder");
    let stdout = run(&program, &[&path, &out]);
    assert!(stdout.contains("all checks passed"), "{stdout}");

    // Every level of every map, in each format, equals the Rust decoder's.
    let bundle = Bundle::read(&path).expect("the pinned bundle reads");
    let decoder = Decoder::new(&bundle);
    let mut levels = 0;
    for (m, material) in bundle.manifest.materials.iter().enumerate() {
        for (k, map) in material.maps.iter().enumerate() {
            for level in 0..bundle.manifest.map_mip_levels(map) {
                let level_values = decoder.decode_map_level(m, k, level).expect("Rust decodes the level");
                let f32s: Vec<u8> = level_values.values.iter().flat_map(|v| v.to_ne_bytes()).collect();
                let u16s: Vec<u8> = level_values.values.iter().flat_map(|&v| unorm16(v).to_ne_bytes()).collect();
                let u8s: Vec<u8> = level_values.values.iter().map(|&v| unorm8(v)).collect();
                assert!(read(&out, &format!("map_{m}_{k}_{level}.f32")) == f32s, "material {m} map {k} level {level}: f32 differs");
                assert!(read(&out, &format!("map_{m}_{k}_{level}.u16")) == u16s, "material {m} map {k} level {level}: u16 differs");
                assert!(read(&out, &format!("map_{m}_{k}_{level}.u8")) == u8s, "material {m} map {k} level {level}: u8 differs");
                levels += 1;
            }
            for (l, lod) in [0.0f32, 0.5].into_iter().enumerate() {
                let channels = map.info.channels as usize;
                let mut expected = vec![0.0f32; 64 * channels];
                for i in 0..64 {
                    let u = ((i * 37) % 64) as f32 / 64.0 + 0.003;
                    let v = ((i * 11) % 64) as f32 / 64.0 + 0.007;
                    decoder.decode_texel_lod(m, k, u, v, lod, &mut expected[i * channels..][..channels]).expect("Rust decodes the texel");
                }
                let expected: Vec<u8> = expected.iter().flat_map(|v| v.to_ne_bytes()).collect();
                assert!(read(&out, &format!("texels_{m}_{k}_{l}.f32")) == expected, "material {m} map {k}: texels at lod {lod} differ");
            }
        }
    }
    assert!(levels > 0);

    // The GPU decoder's buffers and params are texset-shaders' own.
    let model = GpuModel::new(&bundle).expect("the GPU model");
    assert_eq!(read(&out, "latents.bin"), words_to_bytes(&model.latent_words));
    assert_eq!(read(&out, "mlp.bin"), words_to_bytes(&model.mlp_words));
    let entry = &bundle.manifest.materials[0].maps[0];
    let params =
        DecodeParams::new(model.first_map[0], (entry.info.width, entry.info.height, entry.info.channels), 0, DecodeMode::Stored, 0.0);
    assert_eq!(read(&out, "params_0_0_0.bin"), params.bytes());
    let groups: Vec<u8> = [entry.info.width.div_ceil(WORKGROUP_SIDE * model.block), entry.info.height.div_ceil(WORKGROUP_SIDE), 1]
        .iter()
        .flat_map(|g| g.to_ne_bytes())
        .collect();
    assert_eq!(read(&out, "dispatch_0_0_0.bin"), groups);
    let wgsl = String::from_utf8(read(&out, "decoder.wgsl")).expect("UTF-8");
    assert_eq!(wgsl, texset_shaders::export_shader(&bundle, ShaderLang::Wgsl, EntryPoint::DecodeMap).expect("Rust exports"));

    // glslangValidator accepts both GLSL stages.
    for (file, entry) in [("decode_map.comp", EntryPoint::DecodeMap), ("decode_map.frag", EntryPoint::FragmentDecode)] {
        match external_check(&out.join(file), ShaderLang::Glsl, entry) {
            ExternalCheck::Passed(_) => {}
            ExternalCheck::Failed(log) => panic!("glslangValidator rejected {file}:\n{log}"),
            ExternalCheck::Unavailable(tool) => {
                assert!(!glslang_required(), "{tool} is not installed, and CI needs it (glslang-tools)");
                eprintln!("SKIPPED: {tool} is not installed: the GLSL of the C API is not validated here");
            }
        }
    }
}

#[test]
fn c_decodes_a_bundle_as_rust_does_and_survives_bad_input() {
    check_bundle("fused_plain.texset");
}

#[test]
fn c_decodes_every_mip_level_as_rust_does() {
    check_bundle("fused_mips_learned.texset");
}

/// The header compiles as C++ too (it says `extern "C"`), warning-free.
#[test]
fn the_header_compiles_as_cpp() {
    let work = tempfile::tempdir().expect("a temporary folder");
    let source = work.path().join("main.cpp");
    std::fs::write(&source, "#include \"texset.h\"\nint main() { return texset_version() == TEXSET_VERSION ? 0 : 1; }\n").expect("write");
    let program = work.path().join("cpp");
    compile(&[&source], &program, true);
    run(&program, &[]);
}

/// The C snippet docs/integration.md shows, between its `c` fence after "<!-- capi-snippet -->",
/// compiles and decodes a pinned bundle.
#[test]
fn the_documented_snippet_compiles_and_runs() {
    let doc = std::fs::read_to_string(crate_dir().join("../../docs/integration.md")).expect("docs/integration.md");
    let start = doc.find("<!-- capi-snippet -->").expect("docs/integration.md marks its C snippet");
    let body = &doc[start..];
    let code_start = body.find("```c\n").expect("the snippet's fence") + 5;
    let code_end = code_start + body[code_start..].find("```").expect("the snippet's closing fence");
    let work = tempfile::tempdir().expect("a temporary folder");
    let source = work.path().join("snippet.c");
    std::fs::write(&source, &body[code_start..code_end]).expect("write");
    let program = work.path().join("snippet");
    compile(&[&source], &program, false);
    let stdout = run(&program, &[&pinned("fused_plain.texset")]);
    assert!(stdout.contains("basecolor") || stdout.contains("texels"), "the snippet printed:\n{stdout}");
}
