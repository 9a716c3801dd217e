//! The library: its folders loaded and analysed on background tasks, the results taken in.

use super::{Analysis, Loaded, Message, Problem, Session};
use crate::studio::task::{Task, take_finished};
use std::path::PathBuf;
use std::sync::Arc;
use texset_core::set::{GltfMesh, Material, is_gltf_path, load_gltf, load_material};
use texset_core::{analyse, options::CompressOptions, set::TextureSet};
use texset_shaders::preview::{MeshBounds, mesh_bounds};

/// A library as ingest made it: the materials that loaded and what did not.
#[derive(Clone, Default)]
pub struct LoadedLibrary {
    /// Materials that loaded.
    pub set: Arc<TextureSet>,
    /// Folders and assets that did not load, and what was left out of those that did.
    pub problems: Vec<Problem>,
    /// The glTF assets' triangle meshes, each's `material` an index into `set.materials`.
    pub meshes: Arc<Vec<GltfMesh>>,
    /// Per mesh, the materials (`set.materials` indices) it can wear: its own, then those its
    /// asset's `KHR_materials_variants` variants give it (the shoe wears each colourway).
    pub mesh_materials: Arc<Vec<Vec<usize>>>,
    /// What the viewport frames (`None`: no mesh).
    pub mesh_bounds: Option<MeshBounds>,
}

impl Session {
    /// Loads the settings' folders again (on the task `texset-ingest`), then analyses them (on
    /// `texset-analyse`, once the library is in: the viewport uploads its maps meanwhile).
    pub(super) fn reload(&mut self) {
        self.watch_folders();
        let folders = self.settings.folders.clone();
        self.library.loading = Some(Task::spawn("texset-ingest", Arc::clone(&self.env.repaint), move || load_folders(&folders)));
    }

    /// The options with the bits-per-texel target (fitted to the library in `analyse`).
    fn options_and_target(&self) -> (CompressOptions, Option<f64>) {
        (self.options(), self.settings.bits_per_texel)
    }

    /// Options with the bits-per-texel target applied for this library.
    pub(super) fn fitted_options(&self) -> Result<CompressOptions, String> {
        fit(&self.library.set, (self.options(), self.settings.bits_per_texel))
    }

    /// Re-runs the analyse pass (on the task `texset-analyse`) after a settings change.
    pub(super) fn reanalyse(&mut self) {
        if self.library.set.materials.is_empty() {
            return;
        }
        let set = Arc::clone(&self.library.set);
        let options = self.options_and_target();
        self.library.analysing = Some(Task::spawn("texset-analyse", Arc::clone(&self.env.repaint), move || analyse_library(&set, options)));
    }

    /// Takes in a finished load or analysis.
    pub(super) fn poll_library(&mut self) {
        match take_finished(&mut self.library.loading) {
            Some(Ok(loaded)) => self.take_loaded(loaded),
            Some(Err(died)) => self.report_death(&died),
            None => {}
        }
        match take_finished(&mut self.library.analysing) {
            Some(Ok(analysis)) => self.library.analysis = Some(analysis),
            Some(Err(died)) => {
                self.library.analysis = Some(Err(died.to_string()));
                self.report_death(&died);
            }
            None => {}
        }
    }

    fn take_loaded(&mut self, library: Loaded) {
        let loaded = library.set.materials.len();
        for p in &library.problems {
            self.status.messages.push(Message { is_error: true, text: format!("{}: {}", p.path.display(), p.message) });
        }
        self.library.set = library.set;
        self.library.problems = library.problems;
        self.library.meshes = library.meshes;
        self.library.mesh_materials = library.mesh_materials;
        self.library.mesh_bounds = library.mesh_bounds;
        self.library.analysis = None;
        self.reanalyse();
        self.compare = super::Comparisons::default();
        self.say(false, format!("loaded {loaded} material(s)"));
        self.restore_trained();
        if let Some(changed) = self.hot_reload.fine_tune_after_load.take() {
            self.start_fine_tune(&changed);
        }
    }
}

/// Loads each material folder and glTF asset (`.gltf`, `.glb`) on its own: one that fails is a
/// problem listed, not a failed library. An asset's materials come with its meshes; a material
/// whose name is taken is left out, and so are the meshes that use it.
#[must_use]
pub fn load_folders(paths: &[PathBuf]) -> LoadedLibrary {
    let mut set = TextureSet::default();
    let mut problems = Vec::new();
    let mut meshes = Vec::new();
    let mut mesh_materials = Vec::new();
    for path in paths {
        let mut report = texset_core::set::IngestReport::default();
        let (materials, asset_meshes, variants) = if is_gltf_path(path) {
            match load_gltf(path) {
                Ok(asset) => {
                    report = asset.report;
                    (asset.materials, asset.meshes, asset.variants)
                }
                Err(e) => {
                    problems.push(Problem { path: path.clone(), message: e.to_string() });
                    (Vec::new(), Vec::new(), Vec::new())
                }
            }
        } else {
            match load_material(path, &mut report) {
                Ok(material) => (vec![material], Vec::new(), Vec::new()),
                Err(e) => {
                    problems.push(Problem { path: path.clone(), message: e.to_string() });
                    (Vec::new(), Vec::new(), Vec::new())
                }
            }
        };
        let index = add_materials(&mut set, materials, path, &mut problems);
        let library_material = |m: usize| index.get(m).copied().flatten();
        for (i, mut mesh) in asset_meshes.into_iter().enumerate() {
            let Some(material) = library_material(mesh.material) else { continue };
            mesh.material = material;
            let mut wears = vec![material];
            let given = variants.iter().flat_map(|v| &v.mesh_materials).filter(|&&(m, _)| m == i).filter_map(|&(_, w)| library_material(w));
            for w in given {
                if !wears.contains(&w) {
                    wears.push(w);
                }
            }
            meshes.push(mesh);
            mesh_materials.push(wears);
        }
        problems.extend(report.skipped.into_iter().map(|s| Problem { path: s.path, message: format!("left out: {}", s.reason) }));
    }
    let mesh_bounds = mesh_bounds(&meshes);
    LoadedLibrary { set: Arc::new(set), problems, meshes: Arc::new(meshes), mesh_materials: Arc::new(mesh_materials), mesh_bounds }
}

/// Adds `materials` (read from `path`) to `set`, leaving out, as a problem, each whose name is
/// taken. Returns, per material given, its index in `set` (`None`: left out).
fn add_materials(
    set: &mut TextureSet,
    materials: Vec<Material>,
    path: &std::path::Path,
    problems: &mut Vec<Problem>,
) -> Vec<Option<usize>> {
    materials
        .into_iter()
        .map(|material| {
            if set.materials.iter().any(|m| m.name == material.name) {
                let message = format!(
                    "a material named '{}' is already loaded; rename one (a folder's texset.toml `name`, or the glTF material)",
                    material.name
                );
                problems.push(Problem { path: path.to_path_buf(), message });
                return None;
            }
            set.materials.push(material);
            Some(set.materials.len() - 1)
        })
        .collect()
}

/// The analyse pass for the studio's budget panel (bits-per-texel target applied first).
fn analyse_library(set: &TextureSet, options: (CompressOptions, Option<f64>)) -> Result<Analysis, String> {
    let options = fit(set, options)?;
    analyse(set, &options).map(|(layout, report)| Analysis { layout, report }).map_err(|e| e.to_string())
}

/// `options` with the bits-per-texel target (if any) fitted to `set`.
fn fit(set: &TextureSet, (mut options, bpp): (CompressOptions, Option<f64>)) -> Result<CompressOptions, String> {
    if let Some(bpp) = bpp {
        options.fit_bits_per_texel_for(bpp, set).map_err(|e| format!("{bpp} bits per texel: {e}"))?;
    }
    Ok(options)
}
