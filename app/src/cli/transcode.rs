//! `texset transcode`: decode every map, build mips, block-compress and write what engines load
//! today (KTX2, DDS or PNG), reading every KTX2 file back with an independent reader.

use anyhow::{Context as _, Result, bail};
use std::path::PathBuf;
use texset::decode::MaterialDecoder;

use super::common::read_bundle;
use texset_core::{
    eval::psnr,
    export::{bcn::decode, write_folder},
    io::{Overwrite, Written, write_atomic},
    set::{SampleFormat, load_library},
};

// `texset transcode`.
#[derive(clap::Args)]
pub(super) struct TranscodeArgs {
    /// The bundle.
    bundle: PathBuf,
    /// Output folder: `<material>/<material>_<map>.<ktx2|dds|png>`.
    #[arg(short, long)]
    output: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = TranscodeFormat::Ktx2)]
    format: TranscodeFormat,
    /// Decode with the WGSL decoder on a GPU adapter (falls back to the CPU with a warning).
    #[arg(long)]
    gpu: bool,
    /// The original material folders: also report each map's PSNR against them.
    #[arg(long, num_args = 1..)]
    originals: Vec<PathBuf>,
    /// Replace files in the output folder that texset did not write (by default a transcode
    /// refuses to: sources are named as its outputs are).
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    limits: super::common::DecodeLimitArgs,
}

/// `--format` values: a block-compression profile in a container, or PNG. No engine enum
/// mirrors this choice (it is a (profile, container) pair, or neither), so it lives here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum TranscodeFormat {
    Ktx2,
    Bc7,
    Bc1,
    Dds,
    Png,
}

impl TranscodeArgs {
    pub(super) fn run(self) -> Result<()> {
        let overwrite = if self.force { Overwrite::Any } else { Overwrite::OnlyOurs };
        transcode(&self, overwrite)
    }
}

/// `texset transcode`: decode, build mips, block-compress, write KTX2/DDS (atomic), read every
/// KTX2 file back with the `ktx2` crate, and report PSNR per map.
fn transcode(args: &TranscodeArgs, overwrite: Overwrite) -> Result<()> {
    use texset_core::export::{Container, bcn::Profile, block_compressible, dds_bytes, ktx2_bytes, transcode_chain, vk_format};
    let (bundle, output, format, gpu, originals) =
        (args.bundle.as_path(), args.output.as_path(), args.format, args.gpu, args.originals.as_slice());
    let b = read_bundle(bundle)?;
    let mut decoder = MaterialDecoder::new(&b, gpu, args.limits.limits()).with_context(|| format!("cannot decode {}", bundle.display()))?;
    if format == TranscodeFormat::Png {
        let written = write_folder(&b.manifest, output, overwrite, |m| Ok(decoder.decode_material(m)?))?;
        eprintln!("wrote {} maps under {}", written.len(), output.display());
        return Ok(());
    }
    let (profile, container) = match format {
        TranscodeFormat::Bc1 => (Profile::Low, Container::Ktx2),
        TranscodeFormat::Dds => (Profile::High, Container::Dds),
        _ => (Profile::High, Container::Ktx2),
    };
    let originals = if originals.is_empty() { None } else { Some(load_library(originals)?.0) };
    let path_of =
        |material: &str, kind: &dyn std::fmt::Display| output.join(material).join(format!("{material}_{kind}.{}", container.extension()));
    let mut record = Written::open(output)?;
    let targets: Vec<PathBuf> = b.manifest.materials.iter().flat_map(|m| m.maps.iter().map(|e| path_of(&m.name, &e.info.kind))).collect();
    record.check(targets.iter().map(PathBuf::as_path), overwrite)?;
    for material in &b.manifest.materials {
        for entry in &material.maps {
            if let Err(why) = block_compressible(entry) {
                bail!("cannot transcode {}/{} of {}: {why}", material.name, entry.info.kind, bundle.display());
            }
        }
    }
    let (mut total_bytes, mut texels) = (0u64, 0u64);
    for (m, material) in b.manifest.materials.iter().enumerate() {
        let folder = output.join(&material.name);
        std::fs::create_dir_all(&folder).with_context(|| format!("cannot create {}", folder.display()))?;
        let chains = decoder.decode_material_chains(m)?;
        for (entry, chain) in material.maps.iter().zip(&chains) {
            let Some(map) = chain.first() else { bail!("no level 0 decoded for {}/{} (a texset bug)", material.name, entry.info.kind) };
            let t = transcode_chain(chain, entry, profile);
            let bytes = match container {
                Container::Ktx2 => ktx2_bytes(t.format, t.srgb, &t.levels),
                Container::Dds => dds_bytes(t.format, t.srgb, &t.levels),
            };
            let path = path_of(&material.name, &entry.info.kind);
            write_atomic(&path, &bytes).with_context(|| format!("cannot write {}", path.display()))?;
            record.add(&path);
            if container == Container::Ktx2 {
                // Read it back with an independent reader: header, descriptor and every level.
                let reader = ktx2::Reader::new(&bytes[..]).map_err(|e| anyhow::anyhow!("{} does not validate: {e:?}", path.display()))?;
                let header = reader.header();
                let levels_match = reader.levels().zip(&t.levels).all(|(read, ours)| read.data == ours.blocks.as_slice());
                let format_matches = header.format.map(|f| f.value()) == Some(vk_format(t.format, t.srgb));
                if !(format_matches
                    && header.pixel_width == map.width
                    && header.pixel_height == map.height
                    && header.level_count as usize == t.levels.len()
                    && levels_match
                    && reader.basic_dfd().is_some())
                {
                    bail!("{} does not read back as written (a texset bug)", path.display());
                }
            }
            let Some(level0) = t.levels.first() else {
                bail!("no level 0 encoded for {}/{} (a texset bug)", material.name, entry.info.kind)
            };
            let mut back = decode(&level0.blocks, map.width, map.height, map.channels, entry.info.kind, t.format);
            if entry.info.sample_format == SampleFormat::F32 {
                // A float map's blocks hold it at its scale: compared as stored, as the rest.
                let ch = map.channels.max(1) as usize;
                for (i, v) in back.iter_mut().enumerate() {
                    *v = entry.info.unscaled(i % ch, *v);
                }
            }
            let against_original = originals.as_ref().and_then(|set| {
                let source =
                    set.materials.iter().find(|s| s.name == material.name)?.textures.iter().find(|t| t.info.kind == entry.info.kind)?;
                (source.texels.len() == back.len()).then(|| psnr(&source.texels, &back))
            });
            eprintln!(
                "  {}: {:?}{} {}x{}, {} mips ({}), {} bytes; level 0 {:.2} dB against the bundle's decode{}",
                path.display(),
                t.format,
                if t.srgb { " sRGB" } else { "" },
                map.width,
                map.height,
                t.levels.len(),
                if b.manifest.mip_levels > 1 { "decoded from the bundle's mip chain" } else { "box-filtered from level 0" },
                bytes.len(),
                psnr(&map.values, &back),
                against_original.map_or_else(String::new, |p| format!(", {p:.2} dB against the original"))
            );
            total_bytes += bytes.len() as u64;
            texels += u64::from(map.width) * u64::from(map.height);
        }
        // After each material: a run killed later leaves the materials before recorded.
        record.save()?;
    }
    eprintln!(
        "wrote {} bytes of {} files under {} ({:.2} bits per level-0 texel, mips included){}",
        total_bytes,
        container.extension(),
        output.display(),
        total_bytes as f64 * 8.0 / texels.max(1) as f64,
        if container == Container::Ktx2 { "; every file read back and checked with the ktx2 crate" } else { "" }
    );
    Ok(())
}
