//! `export_shader` gives WGSL, GLSL, HLSL and MSL for a bundle, each validated by naga (and the
//! GLSL by glslangValidator where it is installed, as in CI).
#![allow(clippy::unwrap_used)]

use texset_core::model::{Activation, MAX_MLP_WIDTH};
use texset_shaders::export::{ExternalCheck, external_check};
use texset_shaders::{EntryPoint, ExportOptions, GpuError, GpuModel, ShaderLang, export_shader, export_shader_with};
use texset_testkit::{tiny_bundle, tiny_bundle_with_activation, tiny_bundle_with_widths};

#[test]
fn every_language_exports_and_validates() {
    let dir = tempfile::tempdir().unwrap();
    let mut external = Vec::new();
    // A ReLU decoder, and an HGELUClamp one (its functions in every language).
    for bundle in [tiny_bundle(), tiny_bundle_with_activation(Activation::Hgelu)] {
        let hgelu = bundle.manifest.activation() == Activation::Hgelu;
        for lang in [ShaderLang::Wgsl, ShaderLang::Glsl, ShaderLang::Hlsl, ShaderLang::Msl] {
            // GLSL holds one entry point per file: export each.
            let entries: &[EntryPoint] = if lang == ShaderLang::Glsl { &EntryPoint::ALL } else { &[EntryPoint::DecodeMap] };
            for &entry in entries {
                let source = export_shader(&bundle, lang, entry).unwrap_or_else(|e| panic!("{lang:?} {}: {e}", entry.name()));
                // (The full-screen vertex shader alone does not decode.)
                if entry != EntryPoint::Fullscreen {
                    assert!(source.contains("decode_texel"), "{lang:?} export lacks the decode function");
                    assert_eq!(source.contains("mlp_hgelu4_f32"), hgelu, "{lang:?}: the activation's function");
                }
                // The bundle's shapes are baked in: grid 1 is 5 cells wide and 3-bit.
                if lang == ShaderLang::Wgsl {
                    assert!(source.contains("const GRID_WIDTH = array<u32, 2>(9u, 5u);"), "{source}");
                    // Grid 1's cells are records of 2 channels x 3 bits, cut out with a 3-bit mask.
                    assert!(source.contains("let bit1_0 = corners1.cells[0u] * 6u;") && source.contains(") & 7u)"), "{source}");
                    texset_shaders::export::validate_wgsl(&source).unwrap();
                }
                let path =
                    dir.path().join(format!("decoder_{}_{}.{}", entry.name(), bundle.manifest.activation().name(), lang.extension()));
                std::fs::write(&path, &source).unwrap();
                match external_check(&path, lang, entry) {
                    ExternalCheck::Failed(why) => panic!("{lang:?} {}: glslangValidator rejected it:\n{why}\n{source}", entry.name()),
                    outcome => external.push(format!("{lang:?} {}: {outcome:?}", entry.name())),
                }
            }
        }
    }
    for line in &external {
        println!("{line}");
    }
    let ran = external.iter().filter(|l| l.contains("Passed")).count();
    if ran == 0 {
        println!("SKIPPED (partly): glslangValidator is not installed; GLSL was checked by naga only");
    }
}

#[test]
fn oversized_model_is_a_clear_error() {
    let mut bundle = tiny_bundle();
    bundle.manifest.pe_frequencies = 200;
    let error = export_shader(&bundle, ShaderLang::Wgsl, EntryPoint::DecodeMap).unwrap_err().to_string();
    assert!(error.contains("MLP width"), "{error}");
}

/// The widest decoder training accepts (`MAX_MLP_WIDTH`, the limit `texset compress --decoder`
/// checks) is one the GPU decoder lays out and every language exports; one value wider is refused.
#[test]
fn the_widest_decoder_training_accepts_exports_and_a_wider_one_is_refused() {
    let widest = MAX_MLP_WIDTH as u32;
    let bundle = tiny_bundle_with_widths(&[widest, widest]);
    let model = GpuModel::new(&bundle).unwrap();
    assert!(model.constants.contains(&format!("const MAX_WIDTH: u32 = {widest}u;")), "{}", model.constants);
    for lang in [ShaderLang::Wgsl, ShaderLang::Glsl, ShaderLang::Hlsl, ShaderLang::Msl] {
        // Each export is validated by naga on the way out.
        export_shader(&bundle, lang, EntryPoint::DecodeMap).unwrap_or_else(|e| panic!("{lang:?}: {e}"));
    }
    let wider = tiny_bundle_with_widths(&[widest + 1]);
    match GpuModel::new(&wider).map(|_| ()) {
        Err(GpuError::ModelTooLarge { got, limit, .. }) => assert_eq!((got, limit), (MAX_MLP_WIDTH + 1, MAX_MLP_WIDTH)),
        other => panic!("a decoder wider than MAX_MLP_WIDTH was not refused: {other:?}"),
    }
}

/// An engine binds the decoder in its own group and bindings (`--bind-group`, `--first-binding`):
/// every language exports and validates with them, and the buffers are where they were asked to be.
#[test]
fn bind_group_and_bindings_move_every_buffer() {
    let bundle = tiny_bundle();
    let options = ExportOptions { bind_group: 3, first_binding: 100, functions_only: false, ..ExportOptions::default() };
    for lang in [ShaderLang::Wgsl, ShaderLang::Glsl, ShaderLang::Hlsl, ShaderLang::Msl] {
        let source = export_shader_with(&bundle, lang, EntryPoint::DecodeMap, options).unwrap_or_else(|e| panic!("{lang:?}: {e}"));
        if lang == ShaderLang::Wgsl {
            for (binding, name) in ["latents", "mlp", "params", "output", "samples"].iter().enumerate() {
                let declared = format!("@group(3) @binding({}) var", 100 + binding);
                let line = source.lines().find(|l| l.contains(&declared)).unwrap_or_else(|| panic!("no {declared}:\n{source}"));
                assert!(line.contains(&format!(" {name}:")), "{line}");
            }
            assert!(!source.contains("@group(0)"), "a buffer stayed in group 0");
        }
    }
}

/// The functions-only form is what an engine's material shader includes: the decode functions and
/// the two buffers they read, no entry points and no `GpuDecoder` bindings. It validates alone,
/// and with a fragment shader of the engine's that calls it.
#[test]
fn functions_only_form_is_the_decoder_without_entry_points() {
    let bundle = tiny_bundle();
    let options = ExportOptions { bind_group: 3, first_binding: 100, functions_only: true, ..ExportOptions::default() };
    let source = export_shader_with(&bundle, ShaderLang::Wgsl, EntryPoint::DecodeMap, options).unwrap();
    for absent in ["@compute", "@fragment", "@vertex", "var<uniform> params", " output:", " samples:", "@group(0)"] {
        assert!(!source.contains(absent), "the functions-only form holds {absent:?}");
    }
    for present in ["fn decode_texel_lod(", "fn decode_texel_linear_lod(", "fn lod_from_derivatives(", "fn unmap_texel("] {
        assert!(source.contains(present), "the functions-only form lacks {present:?}");
    }
    assert!(source.contains("@group(3) @binding(100) var<storage, read> latents"), "{source}");
    assert!(source.contains("@group(3) @binding(101) var<"), "{source}");
    let material = format!(
        "{source}\n@fragment\nfn fs_material(@location(0) uv: vec2<f32>) -> @location(0) vec4<f32> {{\n    let lod = lod_from_derivatives(uv, vec2<f32>(f32(MAP_WIDTH[0]), f32(MAP_HEIGHT[0])));\n    return decode_texel_linear_lod(0u, uv, lod);\n}}\n"
    );
    texset_shaders::export::validate_wgsl(&material).unwrap();
    // The form is WGSL: GLSL, HLSL and MSL get a clear refusal.
    let error = export_shader_with(&bundle, ShaderLang::Glsl, EntryPoint::DecodeMap, options).unwrap_err().to_string();
    assert!(error.contains("functions-only form is WGSL"), "{error}");
}

/// `--precision f16`: WGSL, HLSL (shader model 6.2) and MSL export and validate in 16-bit floats;
/// GLSL is refused with the reason.
#[test]
fn f16_exports_where_the_language_has_it_and_glsl_says_why_not() {
    use texset_core::model::wgsl::MlpPrecision;
    let bundle = tiny_bundle();
    let options = ExportOptions { precision: MlpPrecision::F16, ..ExportOptions::default() };
    let wgsl = export_shader_with(&bundle, ShaderLang::Wgsl, EntryPoint::DecodeMap, options).unwrap();
    assert!(wgsl.starts_with("enable f16;") && wgsl.contains("vec4<f16>"), "{wgsl}");
    let hlsl = export_shader_with(&bundle, ShaderLang::Hlsl, EntryPoint::DecodeMap, options).unwrap();
    assert!(hlsl.contains("half"), "{hlsl}");
    let msl = export_shader_with(&bundle, ShaderLang::Msl, EntryPoint::DecodeMap, options).unwrap();
    assert!(msl.contains("half"), "{msl}");
    let functions =
        export_shader_with(&bundle, ShaderLang::Wgsl, EntryPoint::DecodeMap, ExportOptions { functions_only: true, ..options }).unwrap();
    assert!(functions.starts_with("enable f16;"), "{functions}");
    let error = export_shader_with(&bundle, ShaderLang::Glsl, EntryPoint::DecodeMap, options).unwrap_err().to_string();
    assert!(error.contains("f16") && error.contains("GLSL"), "{error}");
    // The default stays portable: no f16 anywhere.
    let portable = export_shader(&bundle, ShaderLang::Wgsl, EntryPoint::DecodeMap).unwrap();
    assert!(!portable.contains("f16"), "the default export uses f16");
}

/// `--precision int8`: every language exports and validates with packed int8 dot products (HLSL
/// at shader model 6.4's `dot4add_i8packed`), the WGSL with its `requires` directive, the
/// weights a `vec4<u32>` array.
#[test]
fn int8_exports_in_every_language() {
    use texset_core::model::wgsl::MlpPrecision;
    let bundle = tiny_bundle();
    let options = ExportOptions { precision: MlpPrecision::Int8, ..ExportOptions::default() };
    let wgsl = export_shader_with(&bundle, ShaderLang::Wgsl, EntryPoint::DecodeMap, options).unwrap();
    assert!(wgsl.starts_with(MlpPrecision::Int8.enable()) && wgsl.contains("dot4I8Packed(") && wgsl.contains("array<vec4<u32>"), "{wgsl}");
    let hlsl = export_shader_with(&bundle, ShaderLang::Hlsl, EntryPoint::DecodeMap, options).unwrap();
    assert!(hlsl.contains("dot4add_i8packed"), "{hlsl}");
    let msl = export_shader_with(&bundle, ShaderLang::Msl, EntryPoint::DecodeMap, options).unwrap();
    assert!(msl.contains("char4"), "{msl}");
    // GLSL has no packed dot product: naga writes it out byte by byte, and glslang must take it.
    let dir = tempfile::tempdir().unwrap();
    for entry in [EntryPoint::DecodeMap, EntryPoint::DecodeSamples, EntryPoint::FragmentDecode] {
        let glsl = export_shader_with(&bundle, ShaderLang::Glsl, entry, options).unwrap();
        let path = dir.path().join(format!("{}.{}", entry.name(), entry.glslang_stage()));
        std::fs::write(&path, &glsl).unwrap();
        match external_check(&path, ShaderLang::Glsl, entry) {
            ExternalCheck::Failed(why) => panic!("glslang rejects the int8 GLSL of {}: {why}", entry.name()),
            other => println!("int8 GLSL {}: {other:?}", entry.name()),
        }
    }
    let functions =
        export_shader_with(&bundle, ShaderLang::Wgsl, EntryPoint::DecodeMap, ExportOptions { functions_only: true, ..options }).unwrap();
    assert!(functions.starts_with(MlpPrecision::Int8.enable()), "{functions}");
    // The default stays f32.
    let portable = export_shader(&bundle, ShaderLang::Wgsl, EntryPoint::DecodeMap).unwrap();
    assert!(!portable.contains("dot4I8Packed"), "the default export uses int8");
}
