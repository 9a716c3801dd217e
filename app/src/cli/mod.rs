//! The command line: one module per subcommand, each an argument struct with a `run`. The groups
//! several commands share (`--json`, the report flags, the engine options) are flattened in from
//! `common` and `options`; the option enums are texset-core's and texset-shaders' own (their `clap`
//! feature), so the values a flag takes are the engine's.

mod add;
mod bench;
mod common;
mod compress;
mod decode;
mod eval;
mod export_shader;
mod gen_samples;
mod inspect;
mod options;
mod render;
mod search;
mod studio;
mod transcode;

use anyhow::Result;

/// An error that ends the process with an exit code of its own, for a caller that acts on it (a
/// batch scheduler's retry policy: docs/scale.md); every other error exits with 1.
#[derive(Debug)]
pub(crate) struct Exit {
    /// The process exit code.
    pub code: i32,
    message: String,
}

impl Exit {
    /// An error that exits with `code`.
    pub(crate) fn new(code: i32, message: impl Into<String>) -> Self {
        Self { code, message: message.into() }
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Exit {}

#[derive(clap::Parser)]
#[command(name = "texset", version, about = "Neural compression of material texture sets")]
pub(crate) struct Cli {
    /// No subcommand: open the studio with `sample_textures` (or the last session's library).
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(clap::Subcommand)]
// Parsed once per run: the size of the `compress` variant costs nothing.
#[allow(clippy::large_enum_variant)]
enum Command {
    /// Open the studio window with these material folders (none: the last session's library).
    Studio(studio::StudioArgs),
    /// Compress material folders (one library) into a bundle; with `--batch`, every material
    /// folder of a library directory into its own bundle.
    Compress(compress::CompressArgs),
    /// Add materials to a trained library: only their own latents and a small adapter (new
    /// first-layer columns and output rows) train; the library's materials decode exactly as before.
    Add(add::AddArgs),
    /// Decode every map of a bundle to PNGs: `<material>/<material>_<map>.png`.
    Decode(decode::DecodeArgs),
    /// Decode every map and re-encode it with a full mip chain to what engines load today:
    /// `ktx2`/`bc7` (BC7 colour, BC5 normals, BC4 single channel) or `bc1` (BC1 colour and
    /// normals) in KTX2 files, `dds` (as `ktx2`, in DDS files), or `png`.
    Transcode(transcode::TranscodeArgs),
    /// Write the GPU decoder specialised to a bundle as WGSL, GLSL, HLSL or MSL (validated).
    ExportShader(export_shader::ExportShaderArgs),
    /// Show what a bundle holds.
    Inspect(inspect::InspectArgs),
    /// Score a bundle against the original folders (PSNR, SSIM per map).
    Eval(eval::EvalArgs),
    /// Draw a material of a glTF asset or folder as the studio's viewport does (lit by an
    /// environment; decoded from a bundle or the original maps) into a PNG.
    Render(render::RenderArgs),
    /// Measure throughput, frame time, rate–distortion, settings compared or memory under load.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Write the procedural sample materials (bricks, wood, metal plates, two fabric colourways).
    GenSamples(gen_samples::GenSamplesArgs),
}

impl Cli {
    /// Whether this run opens a window: the studio (also with no subcommand) and `bench ui`.
    #[must_use]
    pub(crate) fn opens_a_window(&self) -> bool {
        matches!(self.command, None | Some(Command::Studio(_) | Command::Bench(bench::BenchCommand::Ui(_))))
    }
}

/// Runs what the command line asks for.
pub(crate) fn run(cli: Cli) -> Result<()> {
    let Some(command) = cli.command else {
        return texset::studio::run(common::sample_folders(), None, None);
    };
    match command {
        Command::Studio(args) => args.run(),
        Command::Compress(args) => args.run(),
        Command::Add(args) => args.run(),
        Command::Decode(args) => args.run(),
        Command::Transcode(args) => args.run(),
        Command::ExportShader(args) => args.run(),
        Command::Inspect(args) => args.run(),
        Command::Eval(args) => args.run(),
        Command::Render(args) => args.run(),
        Command::Bench(command) => command.run(),
        Command::GenSamples(args) => args.run(),
    }
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory as _;

    /// clap's own consistency checks: every `requires`, `conflicts_with` and group names an
    /// argument that exists (across the flattened groups too), no two flags share a name.
    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}
