//! `texset export-shader`: the GPU decoder specialised to a bundle as WGSL, GLSL, HLSL or MSL,
//! validated by naga (and glslangValidator where installed).

use anyhow::{Context as _, Result, bail};
use std::path::PathBuf;
use texset_shaders::export::ExternalCheck;
use texset_shaders::{EntryPoint, ExportOptions, ShaderLang};

use super::common::read_bundle;
use texset_core::{io::write_atomic, model::wgsl::MlpPrecision};

// `texset export-shader`.
#[derive(clap::Args)]
pub(super) struct ExportShaderArgs {
    /// The bundle.
    bundle: PathBuf,
    /// Shading language.
    #[arg(long, value_enum)]
    lang: ShaderLang,
    /// Entry point of a GLSL file (GLSL holds one; the other languages hold all).
    #[arg(long, value_enum, default_value_t = EntryPoint::DecodeMap)]
    entry: EntryPoint,
    /// Output file.
    #[arg(short, long)]
    output: PathBuf,
    /// The bind group of the decoder's buffers (an engine's material group, e.g. 3 in Bevy).
    #[arg(long, default_value_t = 0)]
    bind_group: u32,
    /// The binding of `latents`; `mlp` and (without --functions-only) `params`, `output` and
    /// `samples` follow it.
    #[arg(long, default_value_t = 0)]
    first_binding: u32,
    /// Write the decoder's functions and its two buffers only, without entry points, for an
    /// engine's own WGSL shader to include (WGSL only).
    #[arg(long)]
    functions_only: bool,
    /// The decoder MLP's arithmetic: f32 (portable), f16 (needs `SHADER_F16`; not GLSL; within
    /// about one 8-bit step of f32) or int8 (packed int8 dot products, `DP4a`; a quarter of the
    /// weights' bytes; docs/integration.md says what it trades).
    #[arg(long, value_enum, default_value_t = MlpPrecision::F32)]
    precision: MlpPrecision,
}

impl ExportShaderArgs {
    pub(super) fn run(self) -> Result<()> {
        let b = read_bundle(&self.bundle)?;
        let (lang, entry, output) = (self.lang, self.entry, &self.output);
        let options = ExportOptions {
            bind_group: self.bind_group,
            first_binding: self.first_binding,
            functions_only: self.functions_only,
            precision: self.precision,
        };
        let source = texset_shaders::export_shader_with(&b, lang, entry, options)
            .with_context(|| format!("cannot export a shader for {}", self.bundle.display()))?;
        write_atomic(output, source.as_bytes()).with_context(|| format!("cannot write {}", output.display()))?;
        let check = match texset_shaders::export::external_check(output, lang, entry) {
            ExternalCheck::Passed(tool) => format!("naga and {tool} validated it"),
            ExternalCheck::Unavailable(why) => format!("naga validated it ({why})"),
            ExternalCheck::Failed(why) => {
                bail!("{} was written but glslangValidator rejects it (a texset bug):\n{why}", output.display())
            }
        };
        eprintln!("wrote {} ({lang:?}, {} bytes); {check}", output.display(), source.len());
        Ok(())
    }
}
