//! Exports: the trained bundle, a kept run, decoded images, decoder shaders.

use super::Session;
use std::path::Path;
use texset_core::{
    export::{decode_to_folder, write_gltf},
    io::{Overwrite, write_atomic},
    set::is_gltf_path,
};

impl Session {
    pub(super) fn export(&mut self, write: impl FnOnce(&Self) -> Result<String, String>) {
        match write(self) {
            Ok(summary) => self.say(false, summary),
            Err(e) => self.say(true, e),
        }
    }

    pub(super) fn export_run(&self, id: u64, path: &Path) -> Result<String, String> {
        let run = self.run_record(id).ok_or_else(|| format!("no run #{id} in the log"))?;
        let bytes = std::fs::read(&run.bundle).map_err(|e| format!("{}: {e}", run.bundle.display()))?;
        write_atomic(path, &bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(format!("wrote run #{id} to {} ({} bytes)", path.display(), bytes.len()))
    }

    pub(super) fn export_bundle(&self, path: &Path) -> Result<String, String> {
        let trained = self.shown.trained.as_ref().ok_or("nothing to export: train first")?;
        let bytes = trained.bytes.as_ref().ok_or("training has not finished: export waits for the final bundle")?;
        write_atomic(path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        let texels = self.library.set.texel_count().max(1);
        let mut summary =
            format!("wrote {} ({} bytes, {:.3} bits per texel)", path.display(), bytes.len(), bytes.len() as f64 * 8.0 / texels as f64);
        if let Some(scores) = self.current_decoded().and_then(|d| d.scores.as_ref()) {
            summary = format!("{summary}, pooled PSNR {:.2} dB", scores.pooled_psnr_db);
        }
        Ok(summary)
    }

    pub(super) fn export_images(&self, dir: &Path) -> Result<String, String> {
        let trained = self.shown.trained.as_ref().ok_or("nothing to export: train first")?;
        let decoder = texset_core::decode::Decoder::new(&trained.bundle);
        // The folder picked may hold the sources (named as decoded maps are): never replaced.
        let written = decode_to_folder(&decoder, dir, Overwrite::OnlyOurs).map_err(|e| e.to_string())?;
        Ok(format!("wrote {} decoded maps under {}", written.len(), dir.display()))
    }

    /// The glTF asset every material of the library came from, when there is one such asset.
    #[must_use]
    pub fn gltf_asset(&self) -> Option<&Path> {
        let mut sources = self.library.set.materials.iter().map(|m| m.source_dir.as_path());
        let first = sources.next()?;
        (is_gltf_path(first) && sources.all(|s| s == first)).then_some(first)
    }

    pub(super) fn export_gltf(&self, dir: &Path) -> Result<String, String> {
        let trained = self.shown.trained.as_ref().ok_or("nothing to export: train first")?;
        let bytes = trained.bytes.as_ref().ok_or("training has not finished: export waits for the final bundle")?;
        let asset = self.gltf_asset().ok_or("the library did not come from one glTF asset: export the bundle or images instead")?;
        // The folder picked may hold the source asset: nothing texset did not write is replaced.
        let written = write_gltf(asset, bytes, dir, Overwrite::OnlyOurs, None).map_err(|e| e.to_string())?;
        Ok(format!("wrote {} with its bundle and {} other files", written.gltf.display(), written.files.len() - 2))
    }

    pub(super) fn export_shaders(&self, dir: &Path) -> Result<String, String> {
        use texset_shaders::export::{EntryPoint, ShaderLang, export_shader};
        let trained = self.shown.trained.as_ref().ok_or("nothing to export: train first")?;
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut files = 0;
        for lang in [ShaderLang::Wgsl, ShaderLang::Glsl, ShaderLang::Hlsl, ShaderLang::Msl] {
            let entries: &[EntryPoint] = if lang == ShaderLang::Glsl {
                &[EntryPoint::DecodeMap, EntryPoint::DecodeSamples, EntryPoint::Fullscreen, EntryPoint::FragmentDecode]
            } else {
                &[EntryPoint::DecodeMap]
            };
            for &entry in entries {
                let source = export_shader(&trained.bundle, lang, entry).map_err(|e| e.to_string())?;
                let name = if lang == ShaderLang::Glsl {
                    format!("decoder_{}.{}", entry.name(), lang.extension())
                } else {
                    format!("decoder.{}", lang.extension())
                };
                let path = dir.join(name);
                write_atomic(&path, source.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))?;
                files += 1;
            }
        }
        Ok(format!("wrote {files} decoder shaders under {}", dir.display()))
    }
}
