//! `texset export-shader`: the GPU decoder specialised to a bundle as WGSL, GLSL, HLSL or MSL,
//! validated by naga (and glslangValidator where installed).

use anyhow::{Context as _, Result, bail};
use std::path::PathBuf;
use texset_shaders::export::ExternalCheck;
use texset_shaders::{EntryPoint, ShaderLang};

use super::common::read_bundle;
use texset_core::io::write_atomic;

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
}

impl ExportShaderArgs {
    pub(super) fn run(self) -> Result<()> {
        let b = read_bundle(&self.bundle)?;
        let (lang, entry, output) = (self.lang, self.entry, &self.output);
        let source = texset_shaders::export_shader(&b, lang, entry)
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
