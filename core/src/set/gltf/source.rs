//! An asset's bytes: the file, the GLB container, the JSON and its validation, the buffers, and
//! where each image's bytes are. Every URI is confined to the asset's folder, and every size the
//! file claims is checked against the bytes that are there before anything is allocated for it.

use super::{GltfFault, MAX_FILE_BYTES, SUPPORTED_REQUIRED_EXTENSIONS};
use crate::set::ingest::{IngestError, decode_texture, load_texture};
use crate::set::{MapKind, NormalConvention, Texture};
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// A parsed and validated asset with its buffers loaded.
pub(super) struct LoadedAsset {
    /// The `.gltf` or `.glb` path as given (errors name it).
    pub(super) path: PathBuf,
    /// The asset's folder, canonical: no file outside it is read.
    pub(super) folder: PathBuf,
    /// The file stem (names materials that have no name).
    pub(super) stem: String,
    /// The validated document.
    pub(super) document: gltf::Document,
    /// The JSON as the file holds it (what the glTF writer edits).
    pub(super) json: Vec<u8>,
    /// Each buffer's bytes, exactly its `byteLength`.
    pub(super) buffers: Vec<Vec<u8>>,
    /// The `KHR_materials_variants` variant names, in document order.
    pub(super) variant_names: Vec<String>,
}

/// Where an image's bytes are: one key per distinct image (two image entries naming one file are
/// one key).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum ImageKey {
    /// A file inside the asset's folder, by canonical path.
    File(PathBuf),
    /// Image `N` of the document, in a buffer view or a `data:` URI.
    Embedded(usize),
}

/// Reads, parses and validates the asset at `path` and loads its buffers.
pub(super) fn read_asset(path: &Path) -> Result<LoadedAsset, IngestError> {
    let fault = |fault: GltfFault| IngestError::Gltf { path: path.to_path_buf(), fault };
    let io = |source: std::io::Error| IngestError::Io { path: path.to_path_buf(), source };
    let bytes = read_file(path, None).map_err(io)?;
    let (json, bin) = if bytes.starts_with(b"glTF") { split_glb(&bytes).map_err(fault)? } else { (&bytes[..], None) };
    let document = parse_document(json).map_err(fault)?;
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let folder = std::fs::canonicalize(parent).map_err(|source| IngestError::Io { path: parent.to_path_buf(), source })?;
    let buffers = load_buffers(&document, &folder, bin).map_err(fault)?;
    let variant_names = document.variants().map(|variants| variants.map(|v| v.name().to_owned()).collect()).unwrap_or_default();
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("material").to_owned();
    Ok(LoadedAsset { path: path.to_path_buf(), folder, stem, document, json: json.to_vec(), buffers, variant_names })
}

/// A regular file's bytes: all of them, or the first `prefix_bytes` (an error when it holds
/// fewer). Refused before reading when it is not a regular file or is over [`MAX_FILE_BYTES`].
fn read_file(path: &Path, prefix_bytes: Option<u64>) -> std::io::Result<Vec<u8>> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"));
    }
    let wanted = prefix_bytes.unwrap_or(meta.len());
    if wanted > MAX_FILE_BYTES || wanted > meta.len() {
        let why = format!("{wanted} bytes wanted of a file of {} (at most {MAX_FILE_BYTES} are read)", meta.len());
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, why));
    }
    let mut bytes = Vec::with_capacity(wanted as usize);
    std::fs::File::open(path)?.take(wanted).read_to_end(&mut bytes)?;
    if bytes.len() as u64 != wanted {
        return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the file shrank while it was read"));
    }
    Ok(bytes)
}

/// A GLB's JSON chunk and binary chunk (if any). Chunks of unknown type after the JSON are
/// ignored, as the GLB spec asks.
fn split_glb(bytes: &[u8]) -> Result<(&[u8], Option<&[u8]>), GltfFault> {
    let word = |data: &[u8], at: usize| data.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
    let bad = |what: String| GltfFault::Container(what);
    let version = word(bytes, 4).ok_or_else(|| bad("a header shorter than 12 bytes".into()))?;
    if version != 2 {
        return Err(bad(format!("version {version}, texset reads version 2")));
    }
    let length = word(bytes, 8).ok_or_else(|| bad("a header shorter than 12 bytes".into()))?;
    let body = bytes.get(12..length).ok_or_else(|| bad(format!("the header claims {length} bytes; the file holds {}", bytes.len())))?;
    let chunk = |data: &'_ [u8]| -> Result<Option<([u8; 4], usize)>, GltfFault> {
        if data.is_empty() {
            return Ok(None);
        }
        let len = word(data, 0).ok_or_else(|| bad("a truncated chunk header".into()))?;
        let kind = data.get(4..8).and_then(|k| <[u8; 4]>::try_from(k).ok()).ok_or_else(|| bad("a truncated chunk header".into()))?;
        if data.len() - 8 < len {
            return Err(bad(format!("a chunk of {len} bytes with {} left in the file", data.len() - 8)));
        }
        Ok(Some((kind, len)))
    };
    let Some((_, json_len)) = chunk(body)?.filter(|(kind, _)| kind == b"JSON") else { return Err(bad("no JSON chunk first".into())) };
    let json = &body[8..8 + json_len];
    let rest = &body[8 + json_len..];
    let bin = match chunk(rest)? {
        Some((kind, len)) if &kind == b"BIN\0" => Some(&rest[8..8 + len]),
        _ => None,
    };
    Ok((json, bin))
}

/// Parses the JSON and validates it: first `extensionsRequired` against what texset reads, then
/// the `gltf` crate's validation (whose own extension list is not texset's, so its verdict on
/// `extensionsRequired` is left out).
fn parse_document(json: &[u8]) -> Result<gltf::Document, GltfFault> {
    use gltf::json::validation::Validate as _;
    let root: gltf::json::Root = gltf::json::deserialize::from_slice(json).map_err(|e| GltfFault::Json(e.to_string()))?;
    if let Some(name) = root.extensions_required.iter().find(|name| !SUPPORTED_REQUIRED_EXTENSIONS.contains(&name.as_str())) {
        return Err(GltfFault::RequiredExtension { name: name.clone() });
    }
    // gltf-json's validation indexes `accessors` by a primitive's POSITION before it checks the
    // index: check every attribute's first, so a bad one is an error, not a panic.
    let attributes = root.meshes.iter().flat_map(|mesh| &mesh.primitives).flat_map(|primitive| primitive.attributes.values());
    if let Some(bad) = attributes.map(gltf::json::Index::value).find(|&index| index >= root.accessors.len()) {
        return Err(GltfFault::Invalid(format!("a primitive names accessor {bad}, and the file has {}", root.accessors.len())));
    }
    let mut errors = Vec::new();
    root.validate(&root, gltf::json::Path::new, &mut |path, error| {
        let path = path();
        if !path.as_str().starts_with("extensionsRequired") {
            errors.push(format!("{path}: {error}"));
        }
    });
    if !errors.is_empty() {
        let more = if errors.len() > 5 { format!(" (and {} more)", errors.len() - 5) } else { String::new() };
        errors.truncate(5);
        return Err(GltfFault::Invalid(format!("{}{more}", errors.join("; "))));
    }
    Ok(gltf::Document::from_json_without_validation(root))
}

/// Every buffer's bytes, each exactly its `byteLength`: from a file in the folder, a `data:` URI
/// or the GLB's binary chunk. A source shorter than the buffer claims is refused before reading.
fn load_buffers(document: &gltf::Document, folder: &Path, bin: Option<&[u8]>) -> Result<Vec<Vec<u8>>, GltfFault> {
    document
        .buffers()
        .map(|buffer| {
            let index = buffer.index();
            let claimed_bytes = buffer.length() as u64;
            let too_short = |available_bytes: u64| GltfFault::BufferTooShort { buffer: index, claimed_bytes, available_bytes };
            let in_memory = |bytes: &[u8]| bytes.get(..buffer.length()).map(<[u8]>::to_vec).ok_or_else(|| too_short(bytes.len() as u64));
            match buffer.source() {
                gltf::buffer::Source::Bin => in_memory(bin.ok_or(GltfFault::MissingBinChunk { buffer: index })?),
                gltf::buffer::Source::Uri(uri) => match resolve_uri(folder, uri)? {
                    Resolved::Data(bytes) => in_memory(&bytes),
                    Resolved::File(path) => {
                        let file_bytes = std::fs::metadata(&path).map_or(u64::MAX, |m| m.len());
                        if file_bytes < claimed_bytes {
                            return Err(too_short(file_bytes));
                        }
                        read_file(&path, Some(claimed_bytes)).map_err(|source| GltfFault::MissingFile { uri: uri.to_owned(), path, source })
                    }
                },
            }
        })
        .collect()
}

/// What a URI resolves to.
enum Resolved {
    /// A `data:` URI's bytes.
    Data(Vec<u8>),
    /// A file inside the asset's folder, canonical.
    File(PathBuf),
}

/// Resolves `uri` against the canonical `folder`: a `data:` URI to its bytes; a relative
/// reference, percent-decoded and with `..` resolved lexically, to a file that must canonicalise
/// inside `folder`. Other schemes and absolute paths point outside the folder.
fn resolve_uri(folder: &Path, uri: &str) -> Result<Resolved, GltfFault> {
    if is_data_uri(uri) {
        return decode_data_uri(uri).map(Resolved::Data);
    }
    let outside = || GltfFault::OutsideFolder { uri: uri.to_owned() };
    if has_scheme(uri) {
        return Err(outside());
    }
    let decoded = String::from_utf8(percent_decode(uri)).map_err(|_| bad_uri(uri, "is not UTF-8 once percent-decoded"))?;
    let relative = confine(&decoded).ok_or_else(outside)?;
    let joined = folder.join(relative);
    let path = std::fs::canonicalize(&joined).map_err(|source| GltfFault::MissingFile { uri: uri.to_owned(), path: joined, source })?;
    if !path.starts_with(folder) {
        return Err(outside());
    }
    Ok(Resolved::File(path))
}

/// Whether `uri` is a `data:` URI (any case).
fn is_data_uri(uri: &str) -> bool {
    uri.get(..5).is_some_and(|s| s.eq_ignore_ascii_case("data:"))
}

/// A [`GltfFault::BadUri`], the URI cut after 60 characters (a `data:` URI can be megabytes).
fn bad_uri(uri: &str, reason: &str) -> GltfFault {
    let uri = if uri.chars().count() > 60 { format!("{}…", uri.chars().take(60).collect::<String>()) } else { uri.to_owned() };
    GltfFault::BadUri { uri, reason: reason.to_owned() }
}

/// Whether `uri` starts with an RFC 3986 scheme (`file:`, `http:`; a drive letter `C:` too).
fn has_scheme(uri: &str) -> bool {
    let Some(colon) = uri.find(':') else { return false };
    let scheme = &uri[..colon];
    scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// The relative path a decoded URI path names, `..` resolved lexically (`/` and `\` both
/// separate); `None` when it is absolute or climbs above the folder.
fn confine(decoded: &str) -> Option<PathBuf> {
    if decoded.starts_with('/') || decoded.starts_with('\\') || decoded.contains('\0') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in decoded.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            name => parts.push(name),
        }
    }
    Some(parts.iter().collect())
}

/// `%XX` escapes decoded to bytes (RFC 3986; a `%` not followed by two hex digits stays as it is,
/// as browsers read it).
fn percent_decode(text: &str) -> Vec<u8> {
    percent_encoding::percent_decode_str(text).collect()
}

/// A `data:` URI's bytes: base64 after `;base64,` (padding optional), else percent-encoded.
fn decode_data_uri(uri: &str) -> Result<Vec<u8>, GltfFault> {
    use base64::Engine as _;
    const BASE64: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new().with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    let Some((header, payload)) = uri.split_once(',') else { return Err(bad_uri(uri, "is a data: URI without a comma")) };
    if header.rsplit_once(';').is_some_and(|(_, last)| last.eq_ignore_ascii_case("base64")) {
        BASE64.decode(payload).map_err(|e| bad_uri(uri, &format!("has bad base64 data ({e})")))
    } else {
        Ok(percent_decode(payload))
    }
}

/// Where image `index`'s bytes are. A file is resolved (and must exist inside the folder) now.
pub(super) fn image_key(asset: &LoadedAsset, index: usize) -> Result<ImageKey, GltfFault> {
    let image = asset.document.as_json().images.get(index).ok_or_else(|| GltfFault::Invalid(format!("no image {index}")))?;
    match (&image.uri, image.buffer_view) {
        (_, Some(_)) => Ok(ImageKey::Embedded(index)),
        (Some(uri), None) if is_data_uri(uri) => Ok(ImageKey::Embedded(index)),
        (Some(uri), None) => match resolve_uri(&asset.folder, uri)? {
            Resolved::File(path) => Ok(ImageKey::File(path)),
            Resolved::Data(_) => Ok(ImageKey::Embedded(index)),
        },
        (None, None) => Err(GltfFault::Invalid(format!("image {index} has neither a uri nor a bufferView"))),
    }
}

/// The path an image is reported under: the file, or `<asset>#image<N>`.
pub(super) fn image_source_path(asset: &LoadedAsset, key: &ImageKey) -> PathBuf {
    match key {
        ImageKey::File(path) => path.clone(),
        ImageKey::Embedded(index) => PathBuf::from(format!("{}#image{index}", asset.path.display())),
    }
}

/// Decodes the image `key` names (its kind set later), with ingest's limits.
pub(super) fn decode_image(asset: &LoadedAsset, key: &ImageKey) -> Result<Texture, IngestError> {
    let fault = |fault: GltfFault| IngestError::Gltf { path: asset.path.clone(), fault };
    let index = match key {
        ImageKey::File(path) => return load_texture(path, MapKind::Basecolor, NormalConvention::OpenGl),
        ImageKey::Embedded(index) => *index,
    };
    let image = asset.document.as_json().images.get(index).ok_or_else(|| fault(GltfFault::Invalid(format!("no image {index}"))))?;
    let source_path = image_source_path(asset, key);
    if let Some(view) = image.buffer_view {
        let view = asset.document.views().nth(view.value()).ok_or_else(|| fault(GltfFault::Invalid(format!("no buffer view {view}"))))?;
        let bytes = view_bytes(asset, &view).map_err(fault)?;
        return decode_texture(bytes, &source_path, MapKind::Basecolor, NormalConvention::OpenGl);
    }
    let uri = image.uri.as_deref().unwrap_or_default();
    let bytes = decode_data_uri(uri).map_err(fault)?;
    decode_texture(&bytes, &source_path, MapKind::Basecolor, NormalConvention::OpenGl)
}

/// A buffer view's bytes, refused when it reaches past its buffer.
pub(super) fn view_bytes<'a>(asset: &'a LoadedAsset, view: &gltf::buffer::View<'_>) -> Result<&'a [u8], GltfFault> {
    let buffer = view.buffer().index();
    let data = asset.buffers.get(buffer).map_or(&[][..], Vec::as_slice);
    let end = view.offset().checked_add(view.length());
    end.and_then(|end| data.get(view.offset()..end)).ok_or(GltfFault::ViewOutOfRange {
        view: view.index(),
        end_bytes: (view.offset() as u64).saturating_add(view.length() as u64),
        buffer,
        buffer_bytes: data.len() as u64,
    })
}
