//! `texset export-shader`: the decoder specialised to one bundle, as WGSL, or translated by naga
//! to GLSL, HLSL or MSL, and validated.
//!
//! Every output is checked before it is returned: the specialised WGSL is parsed and validated by
//! naga (the IR every translation starts from), WGSL and GLSL outputs are parsed back by naga's
//! own front ends and validated again, and [`external_check`] runs `glslangValidator` on GLSL
//! when it is installed.

use crate::GpuError;
use crate::model::{Bindings, GpuModel, GpuModelOptions};
use texset_core::{bundle::Bundle, model::wgsl::MlpPrecision};

/// A shading language the decoder can be exported to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ShaderLang {
    /// WebGPU Shading Language (the source; all entry points).
    Wgsl,
    /// GLSL 4.50 core (one entry point per file, as GLSL requires).
    Glsl,
    /// HLSL shader model 5.1 (all entry points).
    Hlsl,
    /// Metal Shading Language 2.1 (all entry points).
    Msl,
}

impl ShaderLang {
    /// The usual file extension.
    #[must_use]
    pub fn extension(self) -> &'static str {
        match self {
            Self::Wgsl => "wgsl",
            Self::Glsl => "glsl",
            Self::Hlsl => "hlsl",
            Self::Msl => "metal",
        }
    }
}

/// An entry point of the decoder (GLSL files hold one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum EntryPoint {
    /// `cs_decode_map`: decode a whole map, one invocation per texel.
    #[cfg_attr(feature = "clap", value(name = "cs_decode_map"))]
    DecodeMap,
    /// `cs_decode_samples`: decode a list of (u, v) samples.
    #[cfg_attr(feature = "clap", value(name = "cs_decode_samples"))]
    DecodeSamples,
    /// `vs_fullscreen`: the full-screen triangle for `fs_decode_map`.
    #[cfg_attr(feature = "clap", value(name = "vs_fullscreen"))]
    Fullscreen,
    /// `fs_decode_map`: decode per pixel in a fragment shader.
    #[cfg_attr(feature = "clap", value(name = "fs_decode_map"))]
    FragmentDecode,
}

impl EntryPoint {
    /// Every entry point.
    pub const ALL: [Self; 4] = [Self::DecodeMap, Self::DecodeSamples, Self::Fullscreen, Self::FragmentDecode];

    /// Its name in the WGSL.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::DecodeMap => "cs_decode_map",
            Self::DecodeSamples => "cs_decode_samples",
            Self::Fullscreen => "vs_fullscreen",
            Self::FragmentDecode => "fs_decode_map",
        }
    }

    fn stage(self) -> naga::ShaderStage {
        match self {
            Self::DecodeMap | Self::DecodeSamples => naga::ShaderStage::Compute,
            Self::Fullscreen => naga::ShaderStage::Vertex,
            Self::FragmentDecode => naga::ShaderStage::Fragment,
        }
    }

    /// The stage name `glslangValidator -S` takes.
    #[must_use]
    pub fn glslang_stage(self) -> &'static str {
        match self.stage() {
            naga::ShaderStage::Vertex => "vert",
            naga::ShaderStage::Fragment => "frag",
            _ => "comp",
        }
    }
}

/// Why a shader could not be exported.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The bundle does not fit the shader.
    #[error(transparent)]
    Model(#[from] GpuError),
    /// `functions_only` was asked of a language other than WGSL.
    #[error("the functions-only form is WGSL (for an engine's own shader to include), not {0:?}")]
    FunctionsOnlyLang(ShaderLang),
    /// `f16` was asked of GLSL, which naga writes without 16-bit floats.
    #[error("f16 precision is not available in GLSL (naga's GLSL back end has no 16-bit float type); export it in f32")]
    F16Glsl,
    /// naga rejected the generated or translated shader (a texset bug: please report it).
    #[error("{stage}: {message}")]
    Naga {
        /// Which step failed.
        stage: &'static str,
        /// naga's message.
        message: String,
    },
}

fn naga_error(stage: &'static str) -> impl Fn(String) -> ExportError {
    move |message| ExportError::Naga { stage, message }
}

/// Parses and validates WGSL with naga.
pub fn validate_wgsl(source: &str) -> Result<(naga::Module, naga::valid::ModuleInfo), ExportError> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| naga_error("parsing the WGSL")(e.emit_to_string(source)))?;
    let info = validator().validate(&module).map_err(|e| naga_error("validating the WGSL")(e.emit_to_string(source)))?;
    Ok((module, info))
}

/// naga's validator with `f16` allowed (the decoder's `MlpPrecision::F16`).
fn validator() -> naga::valid::Validator {
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::default() | naga::valid::Capabilities::SHADER_FLOAT16,
    )
}

/// Where an exported shader binds its buffers, and whether it holds the entry points.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExportOptions {
    /// The bind group of every buffer (0: `GpuDecoder`'s).
    pub bind_group: u32,
    /// The binding of `latents`; `mlp` is the next one, and in the whole shader `params`,
    /// `output` and `samples` the three after it (0: `GpuDecoder`'s).
    pub first_binding: u32,
    /// The decoder's functions alone ([`GpuModel::functions_wgsl`]: `decode_texel_lod`,
    /// `decode_texel_linear_lod`, `lod_from_derivatives`, …) with `latents` and `mlp`, for an
    /// engine's own shader to include. WGSL only.
    pub functions_only: bool,
    /// The MLP's arithmetic: `f32` (the default: portable), `f16` (the module then begins with
    /// `enable f16;` and needs a device with `SHADER_F16`; WGSL, HLSL at shader model 6.2 and
    /// MSL; not GLSL) or `int8` (packed int8 dot products, every language: HLSL at shader model
    /// 6.4, `dot4add_i8packed`). docs/integration.md says what they trade.
    pub precision: MlpPrecision,
}

/// The decoder specialised to `bundle`, in `lang`, validated as the module docs say. `entry`
/// picks the entry point of a GLSL file (other languages hold all of them).
pub fn export_shader(bundle: &Bundle, lang: ShaderLang, entry: EntryPoint) -> Result<String, ExportError> {
    export_shader_with(bundle, lang, entry, ExportOptions::default())
}

/// [`export_shader`] with the bindings and form of `options`.
pub fn export_shader_with(bundle: &Bundle, lang: ShaderLang, entry: EntryPoint, options: ExportOptions) -> Result<String, ExportError> {
    if options.precision == MlpPrecision::F16 && lang == ShaderLang::Glsl {
        return Err(ExportError::F16Glsl);
    }
    let model = GpuModel::with_options(bundle, GpuModelOptions { precision: options.precision, ..GpuModelOptions::default() })?;
    let bindings = Bindings { group: options.bind_group, first: options.first_binding };
    if options.functions_only {
        if lang != ShaderLang::Wgsl {
            return Err(ExportError::FunctionsOnlyLang(lang));
        }
        let wgsl = model.functions_wgsl(bindings);
        validate_wgsl(&wgsl)?;
        return Ok(wgsl);
    }
    translate_bound(&model.wgsl_bound(bindings), lang, entry, bindings)
}

/// Translates (specialised) decoder WGSL to `lang` and validates the result.
pub fn translate(wgsl: &str, lang: ShaderLang, entry: EntryPoint) -> Result<String, ExportError> {
    translate_bound(wgsl, lang, entry, Bindings::default())
}

/// [`translate`] for a decoder bound as `bindings` says.
fn translate_bound(wgsl: &str, lang: ShaderLang, entry: EntryPoint, bindings: Bindings) -> Result<String, ExportError> {
    let (module, info) = validate_wgsl(wgsl)?;
    match lang {
        ShaderLang::Wgsl => Ok(wgsl.to_owned()),
        ShaderLang::Glsl => {
            let mut binding_map = naga::back::glsl::BindingMap::default();
            for binding in 0..crate::model::ALL_BUFFERS as u8 {
                binding_map.insert(naga::ResourceBinding { group: bindings.group, binding: bindings.first + u32::from(binding) }, binding);
            }
            let options = naga::back::glsl::Options {
                version: naga::back::glsl::Version::Desktop(450),
                writer_flags: naga::back::glsl::WriterFlags::empty(),
                binding_map,
                zero_initialize_workgroup_memory: true,
            };
            let pipeline =
                naga::back::glsl::PipelineOptions { shader_stage: entry.stage(), entry_point: entry.name().to_owned(), multiview: None };
            let mut out = String::new();
            let mut writer =
                naga::back::glsl::Writer::new(&mut out, &module, &info, &options, &pipeline, naga::proc::BoundsCheckPolicies::default())
                    .map_err(|e| naga_error("translating to GLSL")(e.to_string()))?;
            writer.write().map_err(|e| naga_error("translating to GLSL")(e.to_string()))?;
            // Round trip: naga's GLSL front end must read it back into a valid module. That front
            // end speaks Vulkan GLSL, which names OpenGL's `gl_VertexID` `gl_VertexIndex`.
            let vulkan_glsl = out.replace("gl_VertexID", "gl_VertexIndex");
            let back = naga::front::glsl::Frontend::default()
                .parse(&naga::front::glsl::Options::from(entry.stage()), &vulkan_glsl)
                .map_err(|e| naga_error("parsing the GLSL back")(e.emit_to_string(&out)))?;
            validator().validate(&back).map_err(|e| naga_error("validating the GLSL read back")(e.emit_to_string(&out)))?;
            Ok(out)
        }
        ShaderLang::Hlsl => {
            // 16-bit floats need shader model 6.2 (DXC's `-enable-16bit-types`); packed int8 dot
            // products are `dot4add_i8packed` from 6.4 (naga writes a polyfill below it).
            let shader_model = if wgsl.starts_with(MlpPrecision::F16.enable()) {
                naga::back::hlsl::ShaderModel::V6_2
            } else if wgsl.starts_with(MlpPrecision::Int8.enable()) {
                naga::back::hlsl::ShaderModel::V6_4
            } else {
                naga::back::hlsl::ShaderModel::V5_1
            };
            let options = naga::back::hlsl::Options { shader_model, ..naga::back::hlsl::Options::default() };
            let pipeline = naga::back::hlsl::PipelineOptions::default();
            let mut out = String::new();
            naga::back::hlsl::Writer::new(&mut out, &options, &pipeline)
                .write(&module, &info, None)
                .map_err(|e| naga_error("translating to HLSL")(e.to_string()))?;
            Ok(out)
        }
        ShaderLang::Msl => {
            let options = naga::back::msl::Options { lang_version: (2, 1), ..naga::back::msl::Options::default() };
            let pipeline = naga::back::msl::PipelineOptions::default();
            let (out, _) = naga::back::msl::write_string(&module, &info, &options, &pipeline)
                .map_err(|e| naga_error("translating to MSL")(e.to_string()))?;
            Ok(out)
        }
    }
}

/// What an external validator said of an exported shader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExternalCheck {
    /// The tool accepted it.
    Passed(String),
    /// The tool rejected it (its output).
    Failed(String),
    /// No tool for this language is installed here (which one was looked for).
    Unavailable(String),
}

/// Runs `glslangValidator` on a GLSL export. Other languages get [`ExternalCheck::Unavailable`]:
/// naga's IR validation is their check. No Metal or DXC compiler exists for Linux in Debian, and
/// glslang's own HLSL front end rejects naga's zero-initialised arrays (`(float[N])0`), which
/// FXC and DXC accept. `path` is the written file.
#[must_use]
pub fn external_check(path: &std::path::Path, lang: ShaderLang, entry: EntryPoint) -> ExternalCheck {
    let tool = "glslangValidator";
    if lang != ShaderLang::Glsl {
        return ExternalCheck::Unavailable(format!("no external validator for {lang:?} here; naga validated the IR it was written from"));
    }
    let mut command = std::process::Command::new(tool);
    command.args(["-S", entry.glslang_stage()]);
    command.arg(path);
    match command.output() {
        Err(e) => ExternalCheck::Unavailable(format!("{tool}: {e}")),
        Ok(out) if out.status.success() => ExternalCheck::Passed(format!("{tool} {}", entry.glslang_stage())),
        Ok(out) => ExternalCheck::Failed(format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))),
    }
}
