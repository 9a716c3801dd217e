//! glTF out: an asset compressed from glTF, written back as glTF with the bundle beside it.
//!
//! [`write_gltf`] writes into a folder `<stem>.gltf`, its buffers (`<stem>.bin`, or
//! `<stem>_<i>.bin` for several; `data:` URIs stay inline), the bundle `<stem>.texset`, and one
//! PNG per texture the materials bind (`textures/`), decoded from the bundle, so that any viewer
//! shows what ships. Each texture names its neural source in the vendor extension
//! `TEXSET_neural_texture` (listed in `extensionsUsed` only; docs/gltf-extension.md specifies it):
//! the bundle's URI, the library material, and per channel of the PNG the map and channel it
//! comes from. Everything else of the document (meshes, nodes, samplers, factors,
//! `KHR_texture_transform`, `KHR_materials_variants`) is kept as the file had it. Asked for, each
//! texture also gets a block-compressed copy with its mip chain (`textures/<stem>.ktx2` or
//! `.dds`, as `texset transcode` writes them), named from the extension only: core glTF allows
//! only PNG and JPEG as a `source`.
//!
//! The PNGs follow the importer's rules backwards (`set::gltf`), so re-importing the written asset
//! gives the same library: base colour, normal and emissive maps as they are; an ORM map for
//! `metallicRoughnessTexture` and `occlusionTexture` when both bound one image; otherwise G =
//! roughness and B = metallic (0 where the material has none: its `metallicFactor` is 0), and
//! occlusion's own gray image. A binding the importer left out (an emissive texture under a black
//! `emissiveFactor`) cannot show, and is left out of the written material too.

use super::bcn::Profile;
use super::folder::{ExportError, encode_png};
use super::transcode::{Container, block_compressible, dds_bytes, ktx2_bytes, mip_chain, transcode_chain};
use crate::bundle::{Bundle, MapEntry};
use crate::decode::{DecodedMap, Decoder};
use crate::io::{Overwrite, Written};
use crate::set::gltf::{GltfSource, load_gltf_with_source};
use crate::set::{MapInfo, MapKind, SampleFormat};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The vendor extension each written texture carries.
pub const TEXSET_EXTENSION: &str = "TEXSET_neural_texture";

/// Texture extensions whose images the writer replaces (their entries leave `extensionsUsed`).
const REPLACED_IMAGE_EXTENSIONS: &[&str] = &["KHR_texture_basisu", "EXT_texture_webp", "EXT_texture_avif", "MSFT_texture_dds"];

/// A material binding: where in the material JSON it is, and which maps of the library material
/// give its channels.
struct Slot {
    /// The binding's path in the material object.
    path: &'static [&'static str],
    /// Its short name in file names.
    short: &'static str,
}

const SLOTS: [Slot; 5] = [
    Slot { path: &["pbrMetallicRoughness", "baseColorTexture"], short: "baseColor" },
    Slot { path: &["normalTexture"], short: "normal" },
    Slot { path: &["pbrMetallicRoughness", "metallicRoughnessTexture"], short: "metallicRoughness" },
    Slot { path: &["occlusionTexture"], short: "occlusion" },
    Slot { path: &["emissiveTexture"], short: "emissive" },
];

/// Per channel of a written image: `(map index, channel)` in the bundle material, or `None`
/// (written 0).
type Sources = Vec<Option<(usize, usize)>>;

/// The channels of the binding `slot` from the material's `maps`, or `None` when it has none (the
/// binding is left out).
fn sources(slot: usize, maps: &[MapEntry]) -> Option<Sources> {
    let find = |kind: MapKind| maps.iter().position(|m| m.info.kind == kind);
    let whole = |kind: MapKind| find(kind).map(|i| (0..maps[i].info.channels as usize).map(|c| Some((i, c))).collect());
    match slot {
        0 => whole(MapKind::Basecolor),
        1 => whole(MapKind::Normal),
        2 => whole(MapKind::Orm).or_else(|| {
            let (roughness, metallic) = (find(MapKind::Roughness), find(MapKind::Metallic));
            (roughness.is_some() || metallic.is_some()).then(|| vec![None, roughness.map(|i| (i, 0)), metallic.map(|i| (i, 0))])
        }),
        3 => whole(MapKind::Orm).or_else(|| find(MapKind::Ao).map(|i| vec![Some((i, 0))])),
        _ => whole(MapKind::Emissive),
    }
}

/// The image of `sources` over `decoded` (the material's maps at level 0) and the entry that
/// describes it: a map as it is when the sources are all of its channels in order, else its
/// channels gathered at the largest size among them (a constant map, stored small, is spread
/// nearest-texel) as a packed map.
fn image_map(sources: &Sources, decoded: &[DecodedMap], entries: &[MapEntry]) -> Result<(DecodedMap, MapEntry), String> {
    let first = sources.iter().flatten().next().map(|&(i, _)| i).ok_or("a binding with no source")?;
    let whole = sources.len() == entries[first].info.channels as usize && sources.iter().enumerate().all(|(c, s)| *s == Some((first, c)));
    if whole {
        return Ok((decoded[first].clone(), entries[first].clone()));
    }
    let (width, height) = sources.iter().flatten().fold((1, 1), |(w, h), &(i, _)| (w.max(decoded[i].width), h.max(decoded[i].height)));
    let channels = sources.len();
    let mut values = vec![0.0f32; width as usize * height as usize * channels];
    for (c, source) in sources.iter().enumerate() {
        let Some((i, from)) = *source else { continue };
        let map = &decoded[i];
        let ch = map.channels as usize;
        for y in 0..height as usize {
            let sy = y * map.height as usize / height as usize;
            for x in 0..width as usize {
                let sx = x * map.width as usize / width as usize;
                values[(y * width as usize + x) * channels + c] = map.values[(sy * map.width as usize + sx) * ch + from];
            }
        }
    }
    let deep = sources.iter().flatten().any(|&(i, _)| entries[i].info.sample_format != SampleFormat::U8);
    let entry = MapEntry {
        info: MapInfo {
            kind: if channels >= 3 { MapKind::Orm } else { entries[first].info.kind },
            width,
            height,
            channels: channels as u32,
            sample_format: if deep { SampleFormat::U16 } else { SampleFormat::U8 },
            channel_ranges: vec![[0.0, 1.0]; channels],
            ..entries[first].info.clone()
        },
        ..entries[first].clone()
    };
    Ok((DecodedMap { width, height, channels: channels as u32, values }, entry))
}

/// The PNG fallback of `sources` ([`image_map`]).
fn image_png(sources: &Sources, decoded: &[DecodedMap], entries: &[MapEntry]) -> Result<Vec<u8>, String> {
    let (map, entry) = image_map(sources, decoded, entries)?;
    encode_png(&map, &entry)
}

/// A block-compressed copy of `sources` with its full mip chain, as `texset transcode` writes
/// (BC7 colour and packed, BC5 normal, BC4 one channel): the file's bytes and the extension's
/// description of it. Named from the extension only: a core glTF `source` is PNG or JPEG.
fn block_compressed(
    sources: &Sources,
    decoded: &[DecodedMap],
    entries: &[MapEntry],
    container: Container,
) -> Result<(Vec<u8>, Value), String> {
    let (map, entry) = image_map(sources, decoded, entries)?;
    block_compressible(&entry)?;
    let transcoded = transcode_chain(&mip_chain(&map, &entry), &entry, Profile::High);
    let bytes = match container {
        Container::Ktx2 => ktx2_bytes(transcoded.format, transcoded.srgb, &transcoded.levels),
        Container::Dds => dds_bytes(transcoded.format, transcoded.srgb, &transcoded.levels),
    };
    let format = format!("{:?}", transcoded.format).to_lowercase();
    Ok((bytes, json!({ "format": format, "srgb": transcoded.srgb, "levels": transcoded.levels.len() })))
}

/// A name safe in a file name and a URI: ASCII letters, digits, `-` and `_`; others become `_`.
fn file_stem(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

/// The object at `path` in `value`, if there is one.
fn at_mut<'a>(value: &'a mut Value, path: &[&str]) -> Option<&'a mut Value> {
    path.iter().try_fold(value, |v, key| v.get_mut(*key))
}

/// What [`write_gltf`] wrote.
#[derive(Clone, Debug)]
pub struct GltfWritten {
    /// The `.gltf`.
    pub gltf: PathBuf,
    /// The bundle beside it.
    pub bundle: PathBuf,
    /// Every file written (the two above, buffers, textures).
    pub files: Vec<PathBuf>,
}

/// Writes the glTF asset at `source`, compressed into `bundle_bytes`, into the folder `dir`
/// (made if missing) as the module doc says; with `copies`, a block-compressed copy of every
/// texture too (KTX2 or DDS, named from the extension only). Every file is written atomically,
/// after every target was checked against the folder's record of what texset wrote
/// (`overwrite`).
pub fn write_gltf(
    source: &Path,
    bundle_bytes: &[u8],
    dir: &Path,
    overwrite: Overwrite,
    copies: Option<Container>,
) -> Result<GltfWritten, ExportError> {
    let refused = |message: String| ExportError::Write { path: source.to_path_buf(), message };
    let (asset, src) = load_gltf_with_source(source).map_err(|e| refused(e.to_string()))?;
    let bundle = Bundle::from_bytes(bundle_bytes).map_err(|e| refused(format!("the bundle does not read: {e}")))?;
    let decoder = Decoder::new(&bundle);
    let manifest = decoder.manifest();
    // Library material (by the asset's order) → bundle material, by name.
    let bundle_index: Vec<usize> = asset
        .materials
        .iter()
        .map(|m| {
            manifest
                .materials
                .iter()
                .position(|b| b.name == m.name)
                .ok_or_else(|| refused(format!("the bundle has no material '{}'", m.name)))
        })
        .collect::<Result<_, _>>()?;
    let bundle_name = format!("{}.texset", src.stem);
    let mut files: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    let json = rewrite(&src, &bundle_index, &decoder, (&bundle_name, copies), &mut files).map_err(refused)?;
    let text = serde_json::to_vec_pretty(&json).map_err(|e| refused(e.to_string()))?;
    files.push((PathBuf::from(format!("{}.gltf", src.stem)), text));
    files.push((PathBuf::from(&bundle_name), bundle_bytes.to_vec()));
    // `rewrite` names the files as the document does: relative to the folder.
    for (path, _) in &mut files {
        *path = dir.join(&*path);
    }
    let gltf = dir.join(format!("{}.gltf", src.stem));
    let bundle_path = dir.join(&bundle_name);

    std::fs::create_dir_all(dir).map_err(|e| ExportError::Write { path: dir.to_path_buf(), message: e.to_string() })?;
    let mut record = Written::open(dir)?;
    // Every target checked before anything is made: a folder holding the source asset keeps it.
    record.check(files.iter().map(|(p, _)| p.as_path()), overwrite)?;
    let textures = dir.join("textures");
    std::fs::create_dir_all(&textures).map_err(|e| ExportError::Write { path: textures, message: e.to_string() })?;
    let mut written = Vec::new();
    let mut result = Ok(());
    for (path, bytes) in &files {
        if let Err(e) = crate::io::write_atomic(path, bytes) {
            result = Err(ExportError::Write { path: path.clone(), message: e.to_string() });
            break;
        }
        record.add(path);
        written.push(path.clone());
    }
    record.save()?;
    result?;
    Ok(GltfWritten { gltf, bundle: bundle_path, files: written })
}

/// The document rewritten: textures and images replaced by the decoded PNGs (pushed to `files`,
/// relative to the output folder), buffers pointed at their files, the extension listed.
fn rewrite(
    src: &GltfSource,
    bundle_index: &[usize],
    decoder: &Decoder,
    (bundle_name, copies): (&str, Option<Container>),
    files: &mut Vec<(PathBuf, Vec<u8>)>,
) -> Result<Value, String> {
    let manifest = decoder.manifest();
    let mut json = src.json.clone();
    let old_textures = json.get("textures").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut images: Vec<Value> = Vec::new();
    // Per image, its block-compressed copy's description (with `copies`).
    let mut copy_of_image: Vec<Option<Value>> = Vec::new();
    let mut image_of_png: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut textures: Vec<Value> = Vec::new();
    let mut decoded: HashMap<usize, Vec<DecodedMap>> = HashMap::new();
    let mut used_names: Vec<String> = Vec::new();
    let material_count = json.get("materials").and_then(Value::as_array).map_or(0, Vec::len);
    for gi in 0..material_count {
        let library = src.library_index.get(gi).copied().flatten();
        for (s, slot) in SLOTS.iter().enumerate() {
            let material = &mut json["materials"][gi];
            let Some(binding) = at_mut(material, slot.path) else { continue };
            let Some(bi) = library.map(|l| bundle_index[l]) else {
                remove(material, slot.path);
                continue;
            };
            let entries = &manifest.materials[bi].maps;
            let Some(sources) = sources(s, entries) else {
                remove(material, slot.path);
                continue;
            };
            let old_texture = binding.get("index").and_then(Value::as_u64).and_then(|t| old_textures.get(t as usize)).cloned();
            let maps = match decoded.entry(bi) {
                std::collections::hash_map::Entry::Occupied(maps) => maps.into_mut(),
                std::collections::hash_map::Entry::Vacant(slot) => {
                    let maps = (0..entries.len()).map(|k| decoder.decode_map_level(bi, k, 0)).collect::<Result<Vec<_>, _>>();
                    slot.insert(maps.map_err(|e| e.to_string())?)
                }
            };
            let png = image_png(&sources, maps, entries)?;
            let name = &manifest.materials[bi].name;
            let image = if let Some(&image) = image_of_png.get(&png) {
                image
            } else {
                let mut stem = format!("{}_{}", file_stem(name), slot.short);
                while used_names.contains(&stem) {
                    stem.push('_');
                }
                used_names.push(stem.clone());
                let uri = format!("textures/{stem}.png");
                files.push((PathBuf::from(&uri), png.clone()));
                images.push(json!({ "uri": uri, "name": stem }));
                image_of_png.insert(png, images.len() - 1);
                copy_of_image.push(match copies {
                    Some(container) => {
                        let (bytes, mut description) =
                            block_compressed(&sources, maps, entries, container).map_err(|e| format!("{name}/{}: {e}", slot.short))?;
                        let uri = format!("textures/{stem}.{}", container.extension());
                        files.push((PathBuf::from(&uri), bytes));
                        description["uri"] = json!(uri);
                        Some(description)
                    }
                    None => None,
                });
                images.len() - 1
            };
            let channels: Vec<Value> = sources
                .iter()
                .map(|s| s.map_or(Value::Null, |(k, c)| json!({ "map": entries[k].info.kind.to_string(), "channel": c })))
                .collect();
            let mut texture = json!({
                "source": image,
                "extensions": { TEXSET_EXTENSION: { "bundle": bundle_name, "material": name, "channels": channels } },
            });
            if let Some(copy) = &copy_of_image[image] {
                texture["extensions"][TEXSET_EXTENSION]["blockCompressed"] = copy.clone();
            }
            if let Some(sampler) = old_texture.as_ref().and_then(|t| t.get("sampler")) {
                texture["sampler"] = sampler.clone();
            }
            let index = textures.iter().position(|t| *t == texture).unwrap_or_else(|| {
                textures.push(texture);
                textures.len() - 1
            });
            if let Some(binding) = at_mut(&mut json["materials"][gi], slot.path) {
                binding["index"] = json!(index);
            }
        }
    }
    set_or_remove(&mut json, "images", images);
    set_or_remove(&mut json, "textures", textures);
    point_buffers(&mut json, src, files);
    list_extension(&mut json);
    Ok(json)
}

/// Removes the object at `path` (its last key) from `value`.
fn remove(value: &mut Value, path: &[&str]) {
    if let Some((last, parent)) = path.split_last()
        && let Some(Value::Object(object)) = at_mut(value, parent)
    {
        object.remove(*last);
    }
}

/// `json[key] = items`, or no key when there are none (glTF forbids empty arrays).
fn set_or_remove(json: &mut Value, key: &str, items: Vec<Value>) {
    if let Value::Object(root) = json {
        if items.is_empty() {
            root.remove(key);
        } else {
            root.insert(key.to_owned(), Value::Array(items));
        }
    }
}

/// Each buffer with a file of its own beside the `.gltf` (`data:` URIs stay as they are).
fn point_buffers(json: &mut Value, src: &GltfSource, files: &mut Vec<(PathBuf, Vec<u8>)>) {
    let Some(buffers) = json.get_mut("buffers").and_then(Value::as_array_mut) else { return };
    let count = buffers.len();
    for (i, buffer) in buffers.iter_mut().enumerate() {
        if buffer.get("uri").and_then(Value::as_str).is_some_and(|uri| uri.starts_with("data:")) {
            continue;
        }
        let uri = if count == 1 { format!("{}.bin", file_stem(&src.stem)) } else { format!("{}_{i}.bin", file_stem(&src.stem)) };
        buffer["uri"] = json!(uri);
        files.push((PathBuf::from(uri), src.buffers.get(i).cloned().unwrap_or_default()));
    }
}

/// [`TEXSET_EXTENSION`] in `extensionsUsed` (never `extensionsRequired`: every viewer still shows
/// the fallbacks); image extensions whose images were replaced leave both lists.
fn list_extension(json: &mut Value) {
    let Value::Object(root) = json else { return };
    for key in ["extensionsUsed", "extensionsRequired"] {
        if let Some(Value::Array(list)) = root.get_mut(key) {
            list.retain(|e| e.as_str().is_none_or(|e| !REPLACED_IMAGE_EXTENSIONS.contains(&e)));
        }
    }
    let used = root.entry("extensionsUsed").or_insert_with(|| json!([]));
    if let Value::Array(list) = used
        && !list.iter().any(|e| e == TEXSET_EXTENSION)
    {
        list.push(json!(TEXSET_EXTENSION));
    }
    if root.get("extensionsRequired").and_then(Value::as_array).is_some_and(Vec::is_empty) {
        root.remove("extensionsRequired");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: MapKind, channels: u32) -> MapEntry {
        MapEntry::for_test(kind, channels, (4, 4))
    }

    /// The importer's rules backwards: ORM when there is one, else roughness in G and metallic in
    /// B; occlusion from ORM or its own map; an emissive binding without a map is left out.
    #[test]
    fn bindings_take_the_maps_the_importer_made() {
        let split = [entry(MapKind::Basecolor, 3), entry(MapKind::Roughness, 1), entry(MapKind::Ao, 1)];
        assert_eq!(sources(0, &split), Some(vec![Some((0, 0)), Some((0, 1)), Some((0, 2))]));
        assert_eq!(sources(2, &split), Some(vec![None, Some((1, 0)), None]));
        assert_eq!(sources(3, &split), Some(vec![Some((2, 0))]));
        assert_eq!(sources(4, &split), None);
        let orm = [entry(MapKind::Basecolor, 4), entry(MapKind::Orm, 3)];
        assert_eq!(sources(2, &orm), sources(3, &orm));
        assert_eq!(sources(0, &orm).map(|s| s.len()), Some(4));
    }

    /// A gathered image takes each source's channel, a small constant map spread over the size.
    #[test]
    fn a_gathered_image_spreads_a_small_map() {
        let entries = [entry(MapKind::Roughness, 1), {
            let mut small = entry(MapKind::Metallic, 1);
            (small.info.width, small.info.height) = (1, 1);
            small
        }];
        let roughness = DecodedMap { width: 2, height: 2, channels: 1, values: vec![0.0, 0.25, 0.5, 1.0] };
        let metallic = DecodedMap { width: 1, height: 1, channels: 1, values: vec![1.0] };
        let png = image_png(&vec![None, Some((0, 0)), Some((1, 0))], &[roughness, metallic], &entries).expect("encodes");
        let image = image::load_from_memory(&png).expect("decodes").to_rgb8();
        assert_eq!(image.dimensions(), (2, 2));
        let texels: Vec<[u8; 3]> = image.pixels().map(|p| p.0).collect();
        assert_eq!(texels, vec![[0, 0, 255], [0, 64, 255], [0, 128, 255], [0, 255, 255]]);
    }
}
