//! Ingest: texture folders (materials) into a [`TextureSet`], with every failure a typed error
//! naming the file. Source files are only ever opened for reading.

pub(crate) use super::image_file::{decode_texture, load_texture};
use crate::set::gltf::{GltfFault, is_gltf_path, load_gltf};
use crate::set::naming::parse_map_name;
use crate::set::{MapKind, Material, MaterialConstants, NormalConvention, Texture, TextureSet};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Largest accepted width or height, in texels. Larger images are refused before decoding.
pub(crate) const MAX_DIMENSION: u32 = 16_384;
/// Largest decoded image allocation accepted from one file, in bytes (a decompression-bomb guard).
pub(crate) const MAX_IMAGE_BYTES: u64 = 2 << 30;
/// Largest ratio of decoded bytes to file bytes accepted above [`BOMB_MIN_DECODED_BYTES`].
/// Deflate (PNG, EXR's ZIP) cannot expand data more than about 1032:1, and RLE (TGA, EXR) far
/// less, so a file that claims more is a decompression bomb (a 511-byte PNG claiming 14856x10504
/// 16-bit RGB, found by the ingest fuzz target, asked for 936 MB).
pub(crate) const MAX_EXPANSION: u64 = 2048;
/// Decoded sizes up to this are accepted whatever the file size.
pub(crate) const BOMB_MIN_DECODED_BYTES: u64 = 64 << 20;
/// Name of the optional per-folder configuration file.
pub(crate) const CONFIG_FILE_NAME: &str = "texset.toml";

/// File extensions ingest reads (lower case).
pub const IMAGE_EXTENSIONS: &[&str] = &["png", "jpg", "jpeg", "tga", "exr"];

/// An ingest failure. Every variant names the file or folder.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IngestError {
    /// The file or folder could not be read.
    #[error("cannot read {path:?}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The path is not a folder.
    #[error("{path:?} is not a folder of texture maps")]
    NotAFolder {
        /// The path.
        path: PathBuf,
    },
    /// The folder holds no image whose map kind could be told.
    #[error("no texture maps found in {path:?} (expected files like <name>_basecolor.png){skipped}")]
    EmptyFolder {
        /// The folder.
        path: PathBuf,
        /// What was skipped, as text.
        skipped: String,
    },
    /// The image could not be decoded (corrupt, truncated or unsupported).
    #[error("cannot decode image {path:?}: {message}")]
    Decode {
        /// The file.
        path: PathBuf,
        /// The decoder's message.
        message: String,
    },
    /// The image has zero width or height.
    #[error("image {path:?} has zero size ({width}x{height})")]
    ZeroSize {
        /// The file.
        path: PathBuf,
        /// Width.
        width: u32,
        /// Height.
        height: u32,
    },
    /// The image is larger than [`MAX_DIMENSION`].
    #[error("image {path:?} is {width}x{height}, beyond the limit of {max}x{max} texels")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Width.
        width: u32,
        /// Height.
        height: u32,
        /// The limit.
        max: u32,
    },
    /// The file would decode to far more bytes than it holds ([`MAX_EXPANSION`]).
    #[error(
        "image {path:?} looks like a decompression bomb: {file_bytes} bytes of file claim {width}x{height} texels, {decoded_bytes} bytes decoded (more than {MAX_EXPANSION}x the file)"
    )]
    Bomb {
        /// The file.
        path: PathBuf,
        /// Claimed width.
        width: u32,
        /// Claimed height.
        height: u32,
        /// Bytes the decoded image would take.
        decoded_bytes: u64,
        /// Bytes of the file.
        file_bytes: u64,
    },
    /// The image is smaller than [`MIN_DIMENSION`] on a side and not constant (only a constant
    /// map, every texel one value, may be smaller: it takes the material's resolution).
    #[error(
        "image {path:?} is {width}x{height} and not constant: texset needs at least {min}x{min} texels unless every texel holds the same value (a constant map)"
    )]
    TooSmall {
        /// The file.
        path: PathBuf,
        /// Width.
        width: u32,
        /// Height.
        height: u32,
        /// The limit.
        min: u32,
    },
    /// The image's pixel format is not supported.
    #[error("image {path:?} has an unsupported format: {what}")]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// What is unsupported.
        what: String,
    },
    /// Two files of one folder are the same map kind.
    #[error("two files for map kind '{kind}' in {folder:?}: {first:?} and {second:?}")]
    DuplicateKind {
        /// The folder.
        folder: PathBuf,
        /// The kind.
        kind: MapKind,
        /// The first file.
        first: PathBuf,
        /// The second file.
        second: PathBuf,
    },
    /// `texset.toml` is malformed or names a missing file or unknown kind.
    #[error("bad {path:?}: {message}")]
    Config {
        /// The config file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Two materials of a library have the same name.
    #[error("two materials named '{name}': {first:?} and {second:?}")]
    DuplicateMaterial {
        /// The name.
        name: String,
        /// The first folder.
        first: PathBuf,
        /// The second folder.
        second: PathBuf,
    },
    /// Two materials whose names differ only in case (one output file on macOS and Windows).
    #[error(
        "materials '{name}' ({first:?}) and '{other}' ({second:?}) differ only in case: their files would be one on macOS and Windows; rename one"
    )]
    CaseCollision {
        /// The later material's name.
        name: String,
        /// The earlier one's.
        other: String,
        /// The earlier one's folder.
        first: PathBuf,
        /// The later one's.
        second: PathBuf,
    },
    /// A material name that is no file name on Windows (`set::naming::unportable`).
    #[error(
        "{path:?}: material name '{name}' {why}: its files could not be written on Windows; rename it (or set name = \"...\" in texset.toml)"
    )]
    UnportableName {
        /// The name.
        name: String,
        /// Its folder or asset.
        path: PathBuf,
        /// What is wrong with it.
        why: &'static str,
    },
    /// No folder was given.
    #[error("no texture folders given")]
    NothingGiven,
    /// A glTF asset that cannot be loaded as a whole: malformed, unsafe or unsupported.
    #[error("glTF asset {path:?}: {fault}")]
    Gltf {
        /// The `.gltf` or `.glb` file.
        path: PathBuf,
        /// What is wrong.
        fault: GltfFault,
    },
    /// A glTF material that cannot be one texset material (its maps would need two UV layouts).
    #[error("glTF asset {path:?}, material {material:?} (index {index}): {fault}")]
    GltfMaterial {
        /// The `.gltf` or `.glb` file.
        path: PathBuf,
        /// The material's name in the file (empty when it has none).
        material: String,
        /// Its index in the file's `materials`.
        index: usize,
        /// What is wrong.
        fault: GltfFault,
    },
}

/// A file that was looked at and left out, with the reason in plain words.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Skipped {
    /// The file.
    pub path: PathBuf,
    /// Why it was left out.
    pub reason: String,
}

/// A constant map given its material's resolution ([`MIN_DIMENSION`] explains why).
#[derive(Clone, Debug, serde::Serialize)]
pub struct ConstantMap {
    /// The file.
    pub path: PathBuf,
    /// Its size in the file, `[width, height]`.
    pub file_size: [u32; 2],
    /// The size it was given (the material's resolution), `[width, height]`.
    pub size: [u32; 2],
}

/// What ingest did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct IngestReport {
    /// Files left out (unknown map kind, not an image, ignored by config).
    pub skipped: Vec<Skipped>,
    /// Constant maps smaller than their material, given its resolution.
    pub constants: Vec<ConstantMap>,
    /// Maps read: `material/kind` with resolution and format.
    pub maps: Vec<String>,
}

/// Optional `texset.toml` in a material folder.
///
/// ```toml
/// name = "oak_floor"                 # material name (default: folder name)
/// normal = "directx"                 # normal convention: "opengl" (default) or "directx"
/// ignore = ["preview.png"]          # files to leave out
/// [maps]                             # explicit kinds, overriding the file names
/// "T_Oak_D.png" = "basecolor"
/// "T_Oak_MRA.png" = "orm"
/// ```
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FolderConfig {
    name: Option<String>,
    normal: Option<String>,
    #[serde(default)]
    ignore: Vec<String>,
    #[serde(default)]
    maps: BTreeMap<String, String>,
}

/// Largest `texset.toml` read, in bytes.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

fn read_config(dir: &Path) -> Result<Option<FolderConfig>, IngestError> {
    let path = dir.join(CONFIG_FILE_NAME);
    let text = match crate::io::read_regular_text(&path, MAX_CONFIG_BYTES) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(IngestError::Io { path, source }),
    };
    toml::from_str(&text).map(Some).map_err(|e| {
        // One line: the message and where, not toml's multi-line snippet.
        let line = e.span().map_or(0, |span| text[..span.start.min(text.len())].matches('\n').count() + 1);
        IngestError::Config { path, message: format!("line {line}: {}", e.message().replace('\n', " ")) }
    })
}

fn parse_convention(text: &str, config_path: &Path) -> Result<NormalConvention, IngestError> {
    match text.to_ascii_lowercase().as_str() {
        "opengl" | "gl" | "+y" => Ok(NormalConvention::OpenGl),
        "directx" | "dx" | "-y" => Ok(NormalConvention::DirectX),
        other => Err(IngestError::Config {
            path: config_path.to_path_buf(),
            message: format!("normal = \"{other}\": expected \"opengl\" or \"directx\""),
        }),
    }
}

/// Loads several material folders and glTF 2.0 assets (a `.gltf` or `.glb` path: every textured
/// material of it, as [`crate::set::load_gltf`] reads it; its meshes are left out) as one library, in the
/// order given. Material names must be unique across the library.
pub fn load_library(paths: &[PathBuf]) -> Result<(TextureSet, IngestReport), IngestError> {
    if paths.is_empty() {
        return Err(IngestError::NothingGiven);
    }
    let mut set = TextureSet::default();
    let mut report = IngestReport::default();
    for path in paths {
        let materials = if is_gltf_path(path) {
            let asset = load_gltf(path)?;
            report.skipped.extend(asset.report.skipped);
            report.constants.extend(asset.report.constants);
            report.maps.extend(asset.report.maps);
            asset.materials
        } else {
            vec![load_material(path, &mut report)?]
        };
        for material in materials {
            if let Some(why) = crate::set::naming::unportable(&material.name) {
                return Err(IngestError::UnportableName { name: material.name, path: material.source_dir, why });
            }
            if let Some(other) = set.materials.iter().find(|m| m.name.to_lowercase() == material.name.to_lowercase()) {
                let (first, second) = (other.source_dir.clone(), material.source_dir.clone());
                if other.name == material.name {
                    return Err(IngestError::DuplicateMaterial { name: material.name, first, second });
                }
                return Err(IngestError::CaseCollision { name: material.name, other: other.name.clone(), first, second });
            }
            set.materials.push(material);
        }
    }
    Ok((set, report))
}

/// The maps a folder holds, by kind: each file and the normal convention its name gives.
type ChosenMaps = BTreeMap<MapKind, (PathBuf, Option<NormalConvention>)>;

/// What ingest reads of a material folder, found before any image is decoded.
struct FolderPlan {
    name: String,
    /// The folder's `texset.toml`, when it has one (what the batch cache keys).
    #[cfg_attr(not(feature = "train"), allow(dead_code))]
    config: Option<PathBuf>,
    folder_convention: Option<NormalConvention>,
    chosen: ChosenMaps,
    skipped: Vec<Skipped>,
}

/// Reads folder `dir`'s `texset.toml` and chooses its map files.
fn plan_folder(dir: &Path) -> Result<FolderPlan, IngestError> {
    let meta = std::fs::metadata(dir).map_err(|source| IngestError::Io { path: dir.to_path_buf(), source })?;
    if !meta.is_dir() {
        return Err(IngestError::NotAFolder { path: dir.to_path_buf() });
    }
    let config = read_config(dir)?;
    let config_file = config.is_some().then(|| dir.join(CONFIG_FILE_NAME));
    let config = config.unwrap_or_default();
    let config_path = dir.join(CONFIG_FILE_NAME);
    let folder_convention = config.normal.as_deref().map(|t| parse_convention(t, &config_path)).transpose()?;
    for file in config.maps.keys() {
        if !dir.join(file).is_file() {
            return Err(IngestError::Config {
                path: config_path.clone(),
                message: format!("[maps] names \"{file}\", which is not a file in the folder"),
            });
        }
    }
    let (chosen, skipped) = choose_maps(dir, &config, &config_path)?;
    if chosen.is_empty() {
        return Err(IngestError::EmptyFolder { path: dir.to_path_buf(), skipped: skipped_summary(&skipped) });
    }
    let name = material_name(dir, &config, config_path)?;
    Ok(FolderPlan { name, config: config_file, folder_convention, chosen, skipped })
}

/// The files ingest reads of folder `dir` (`texset.toml` first, then each map's, in kind order),
/// the material's name and its maps' kinds, without decoding an image: a batch cache's key.
#[cfg(feature = "train")]
pub(crate) fn material_files(dir: &Path) -> Result<(String, Vec<PathBuf>, Vec<MapKind>), IngestError> {
    let plan = plan_folder(dir)?;
    let files = plan.config.into_iter().chain(plan.chosen.values().map(|(path, _)| path.clone())).collect();
    Ok((plan.name, files, plan.chosen.keys().copied().collect()))
}

/// Loads one material folder. Files whose map kind cannot be told are added to `report.skipped`.
pub fn load_material(dir: &Path, report: &mut IngestReport) -> Result<Material, IngestError> {
    let FolderPlan { name, folder_convention, chosen, skipped, .. } = plan_folder(dir)?;
    report.skipped.extend(skipped);
    let mut textures = Vec::with_capacity(chosen.len());
    for (kind, (path, name_convention)) in chosen {
        let convention = folder_convention.or(name_convention).unwrap_or_default();
        textures.push(load_texture(&path, kind, convention)?);
    }
    let resized = resize_constant_maps(&mut textures)?;
    report_maps(&name, &textures, &resized, report);
    Ok(Material { name, source_dir: dir.to_path_buf(), textures, constants: MaterialConstants::default() })
}

/// The map files of folder `dir`, in name order, each kind from `config`'s `[maps]` or the file
/// name, and the files left out (not an image, ignored, kind unknown). Two files of one kind are
/// an error.
fn choose_maps(dir: &Path, config: &FolderConfig, config_path: &Path) -> Result<(ChosenMaps, Vec<Skipped>), IngestError> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|source| IngestError::Io { path: dir.to_path_buf(), source })?
        .map(|e| e.map(|e| e.path()).map_err(|source| IngestError::Io { path: dir.to_path_buf(), source }))
        .collect::<Result<_, _>>()?;
    entries.sort();

    let mut chosen = ChosenMaps::new();
    let mut skipped = Vec::new();
    for path in entries {
        let Some(file_name) = path.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
            skipped.push(Skipped { path, reason: "file name is not valid UTF-8".into() });
            continue;
        };
        if file_name == CONFIG_FILE_NAME {
            continue;
        }
        if path.is_dir() {
            if path.extension().is_some_and(|e| IMAGE_EXTENSIONS.iter().any(|x| e.eq_ignore_ascii_case(x))) {
                skipped.push(Skipped { path, reason: "a folder, not an image file".into() });
            }
            continue;
        }
        if config.ignore.iter().any(|i| i == &file_name) {
            skipped.push(Skipped { path, reason: "ignored by texset.toml".into() });
            continue;
        }
        let extension = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        if !extension.as_deref().is_some_and(|e| IMAGE_EXTENSIONS.contains(&e)) {
            skipped.push(Skipped { path, reason: "not a supported image (png, jpg, tga, exr)".into() });
            continue;
        }
        let (kind, convention) = if let Some(kind_text) = config.maps.get(&file_name) {
            let kind = MapKind::from_token(kind_text).ok_or_else(|| IngestError::Config {
                path: config_path.to_path_buf(),
                message: format!("unknown map kind \"{kind_text}\" for \"{file_name}\""),
            })?;
            (kind, None)
        } else {
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
            if let Some(info) = parse_map_name(stem) {
                (info.kind, info.normal_convention)
            } else {
                skipped.push(Skipped { path, reason: "map kind cannot be told from the name (name it in texset.toml [maps])".into() });
                continue;
            }
        };
        if let Some((first, _)) = chosen.get(&kind) {
            return Err(IngestError::DuplicateKind { folder: dir.to_path_buf(), kind, first: first.clone(), second: path });
        }
        chosen.insert(kind, (path, convention));
    }
    Ok((chosen, skipped))
}

/// The files left out, as the tail of [`IngestError::EmptyFolder`]'s message (empty for none).
fn skipped_summary(skipped: &[Skipped]) -> String {
    if skipped.is_empty() {
        return String::new();
    }
    format!(
        "; skipped: {}",
        skipped
            .iter()
            .map(|s| format!("{} ({})", s.path.file_name().unwrap_or_default().display(), s.reason))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The material's name: `config`'s, else the folder's (the one `dir` resolves to when it has no
/// name of its own); refused when it is not a safe file name.
fn material_name(dir: &Path, config: &FolderConfig, config_path: PathBuf) -> Result<String, IngestError> {
    let name = match (&config.name, dir.file_name()) {
        (Some(name), _) => name.clone(),
        (None, Some(folder)) => folder.to_str().map(str::to_owned).ok_or_else(|| IngestError::Config {
            path: config_path.clone(),
            message: "the folder's name is not valid UTF-8, so it cannot name the material: set name = \"...\" in texset.toml".into(),
        })?,
        (None, None) => {
            // `dir` ends in `..` or is a root: name the material after the folder it resolves to.
            let resolved = std::fs::canonicalize(dir).map_err(|source| IngestError::Io { path: dir.to_path_buf(), source })?;
            resolved.file_name().and_then(|n| n.to_str()).map_or_else(|| "material".to_owned(), str::to_owned)
        }
    };
    if let Err(why) = super::check_name(&name) {
        return Err(IngestError::Config { path: config_path, message: format!("material name {name:?} {why}") });
    }
    Ok(name)
}

/// Adds the maps of material `name` to `report.maps`, and those given the material's resolution
/// (`resized`: per texture, its size in the file) to `report.constants`.
pub(crate) fn report_maps(name: &str, textures: &[Texture], resized: &[Option<(u32, u32)>], report: &mut IngestReport) {
    for (i, texture) in textures.iter().enumerate() {
        let constant = match resized.get(i).copied().flatten() {
            Some((width, height)) => {
                report.constants.push(ConstantMap {
                    path: texture.source_path.clone(),
                    file_size: [width, height],
                    size: [texture.info.width, texture.info.height],
                });
                format!(", constant ({width}x{height} in the file)")
            }
            None => String::new(),
        };
        report.maps.push(format!(
            "{name}/{}: {}x{} {}ch {}-bit{constant} ({})",
            texture.info.kind,
            texture.info.width,
            texture.info.height,
            texture.info.channels,
            texture.info.sample_format.bits(),
            texture.source_path.display()
        ));
    }
}

/// Smallest width or height, in texels, of a map that varies. A constant map (every texel one
/// value per channel, see [`Texture::constant_value`]) may be smaller, down to 1×1: glTF exports
/// and asset packs write constants as 1×1 or 4×4 maps. [`load_material`] gives it the material's
/// resolution (see [`material_resolution`]); a map that varies below this size is refused
/// ([`IngestError::TooSmall`]).
pub(crate) const MIN_DIMENSION: u32 = 4;

/// The resolution of a material's maps, `(width, height)`: that of its largest map by texel
/// count (the first in kind order on a tie) among those at least [`MIN_DIMENSION`] on both
/// sides. A material of only smaller (constant) maps takes the largest of them, widened to
/// [`MIN_DIMENSION`] on each side: every map texset stores is at least 4×4. `None` for no maps.
#[must_use]
pub(crate) fn material_resolution(textures: &[Texture]) -> Option<(u32, u32)> {
    fn largest<'a>(maps: impl Iterator<Item = &'a Texture>) -> Option<(u32, u32)> {
        // Strictly more texels replaces the best so far: the first in kind order wins a tie.
        let best = maps.fold(None, |best: Option<&Texture>, t| match best {
            Some(b) if b.texel_count() >= t.texel_count() => Some(b),
            _ => Some(t),
        });
        best.map(|t| (t.info.width, t.info.height))
    }
    let full = largest(textures.iter().filter(|t| t.info.width >= MIN_DIMENSION && t.info.height >= MIN_DIMENSION));
    full.or_else(|| largest(textures.iter()).map(|(w, h)| (w.max(MIN_DIMENSION), h.max(MIN_DIMENSION))))
}

/// Gives every constant map with fewer texels than the material's resolution
/// ([`material_resolution`]), and every map under [`MIN_DIMENSION`] on a side (constant, or
/// [`texture_from_image`] refused it), that resolution, filled with its value
/// ([`Texture::constant_value`]): a constant decodes, exports and compares at the size of the
/// material's other maps, and the analyse pass finds it flat (no latent channels). Maps that vary
/// keep their own size. Returns, per texture, the file's size when it was resized.
pub(crate) fn resize_constant_maps(textures: &mut [Texture]) -> Result<Vec<Option<(u32, u32)>>, IngestError> {
    let Some((width, height)) = material_resolution(textures) else { return Ok(Vec::new()) };
    let target_texels = width as usize * height as usize;
    let mut resized = Vec::with_capacity(textures.len());
    for texture in textures.iter_mut() {
        // A map under the minimum is resized whatever its texel count (a 2×64 strip included).
        let small = texture.info.width < MIN_DIMENSION || texture.info.height < MIN_DIMENSION;
        let value = if small || texture.texel_count() < target_texels { texture.constant_value() } else { None };
        let Some(value) = value else {
            resized.push(None);
            continue;
        };
        let values = u64::from(width) * u64::from(height) * u64::from(texture.info.channels);
        if values > super::limits::MAX_MAP_VALUES {
            return Err(IngestError::Unsupported {
                path: texture.source_path.clone(),
                what: format!(
                    "constant map that would take the material's {width}x{height} with {} channels: {values} values, beyond the limit of {}",
                    texture.info.channels,
                    super::limits::MAX_MAP_VALUES
                ),
            });
        }
        resized.push(Some((texture.info.width, texture.info.height)));
        texture.texels = value.repeat(target_texels);
        texture.info.width = width;
        texture.info.height = height;
    }
    Ok(resized)
}
