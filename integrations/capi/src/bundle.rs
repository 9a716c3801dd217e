//! A bundle opened from memory or a path, what it holds, and decoding it on the CPU.

use crate::{Failure, TexsetStatus, guard, handle, write_out};
use std::ffi::{CStr, CString, c_char, c_void};
use std::path::Path;
use std::sync::Arc;
use texset_core::{
    bundle::{Bundle, BundleError, Manifest, MapEntry, MaterialEntry, limits::MAX_BUNDLE_BYTES},
    decode::{DecodeError, DecodeLimits, DecodedMap, Decoder, unorm8, unorm16},
    model::level_size,
    set::{ColorSpace, MapKind, NormalConvention, SampleFormat},
};

/// How much opening a bundle may cost, checked before anything is decoded: the bundle's own
/// size, and what decoding all of it declares (every map and mip level).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TexsetLimits {
    /// Most bytes of the bundle itself (at most 1 GiB, the reader's own limit).
    pub max_bundle_bytes: u64,
    /// Most bytes of decoded f32 values over every map and level of the library.
    pub max_decoded_bytes: u64,
    /// Most multiply-adds of the decoder's MLP over all those texels.
    pub max_multiply_adds: u64,
}

/// How a bundle is opened.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TexsetOpenOptions {
    /// The limits: `texset_open_options_default` gives texset's interactive ones (1 GiB of
    /// decoded values, 2^40 multiply-adds), what the studio and the Bevy loader use.
    pub limits: TexsetLimits,
    /// Threads a decode of this bundle may use: 0 for one per core (a pool shared by the
    /// process), N for a pool of N threads of this bundle's own.
    pub decode_threads: u32,
}

/// A map's kind (`TexsetMapInfo::kind`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TexsetMapKind {
    /// Base colour, sRGB.
    Basecolor = 0,
    /// Tangent-space normal, encoded `n * 0.5 + 0.5`.
    Normal = 1,
    /// Roughness, linear.
    Roughness = 2,
    /// Metallic, linear.
    Metallic = 3,
    /// Ambient occlusion, linear.
    Ao = 4,
    /// Height, linear.
    Height = 5,
    /// Emissive colour, sRGB.
    Emissive = 6,
    /// Opacity, linear.
    Opacity = 7,
    /// Packed occlusion (R), roughness (G), metallic (B): glTF's layout.
    Orm = 8,
}

/// The sample format the map's source had (`TexsetMapInfo::source_format`): what `texset
/// decode` writes back.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TexsetSampleFormat {
    /// 8-bit unsigned normalised.
    Unorm8 = 0,
    /// 16-bit unsigned normalised.
    Unorm16 = 1,
    /// 32-bit float (EXR): apply the map's channel ranges to the decoded values.
    Float32 = 2,
}

/// What `texset_decode_map_level` writes per channel, in native byte order.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TexsetTexelFormat {
    /// `uint8_t`: the stored value in [0, 1] as `round(clamp(v) * 255)`.
    Unorm8 = 0,
    /// `uint16_t`: `round(clamp(v) * 65535)`.
    Unorm16 = 1,
    /// `float`: the stored value in [0, 1] as the decoder computes it.
    Float32 = 2,
}

impl TexsetTexelFormat {
    fn from_u32(value: u32) -> Result<Self, Failure> {
        match value {
            0 => Ok(Self::Unorm8),
            1 => Ok(Self::Unorm16),
            2 => Ok(Self::Float32),
            other => Err(Failure::invalid(format!("texel format {other} is not one of TexsetTexelFormat's (0 to 2)"))),
        }
    }

    fn bytes(self) -> usize {
        match self {
            Self::Unorm8 => 1,
            Self::Unorm16 => 2,
            Self::Float32 => 4,
        }
    }
}

/// Colour spaces (`TexsetMapInfo::color_space`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TexsetColorSpace {
    /// Linear values.
    Linear = 0,
    /// sRGB-encoded colour channels (the first three); alpha is linear.
    Srgb = 1,
}

/// Normal-map conventions (`TexsetMapInfo::normal_convention`; 0 for other maps).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TexsetNormalConvention {
    /// +Y up (OpenGL, glTF); also every map that is not a normal map.
    OpenGl = 0,
    /// +Y down (DirectX).
    DirectX = 1,
}

/// One map of a material.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TexsetMapInfo {
    /// `TexsetMapKind`.
    pub kind: u32,
    /// Width of level 0, texels.
    pub width: u32,
    /// Height of level 0, texels.
    pub height: u32,
    /// Channels, 1 to 4.
    pub channels: u32,
    /// Mip levels the bundle decodes (1 without a stored mip chain; level `k` is the size halved
    /// `k` times, at least 1).
    pub mip_levels: u32,
    /// `TexsetColorSpace` of the decoded values.
    pub color_space: u32,
    /// `TexsetNormalConvention`.
    pub normal_convention: u32,
    /// `TexsetSampleFormat` of the source.
    pub source_format: u32,
    /// Per channel, the source value at a decoded 0: `source = low + (high - low) * decoded`.
    pub range_low: [f32; 4],
    /// Per channel, the source value at a decoded 1.
    pub range_high: [f32; 4],
    /// The source's file name, UTF-8, NUL-terminated; owned by the bundle (valid until
    /// `texset_bundle_free`).
    pub source_file: *const c_char,
}

/// An open bundle: immutable, so it may be used from several threads at once. Free it with
/// `texset_bundle_free` once no call that uses it is running.
pub struct TexsetBundle {
    bundle: Arc<Bundle>,
    decoder: Decoder,
    material_names: Vec<CString>,
    source_files: Vec<Vec<CString>>,
    pool: Option<rayon::ThreadPool>,
}

impl TexsetBundle {
    fn open(bundle: Bundle, options: &TexsetOpenOptions) -> Result<Self, Failure> {
        let limits =
            DecodeLimits { max_decoded_bytes: options.limits.max_decoded_bytes, max_multiply_adds: options.limits.max_multiply_adds };
        let decoder = Decoder::with_limits(&bundle, limits).map_err(|e| decode_failure(&e))?;
        let text =
            |what: &str, s: &str| CString::new(s).map_err(|_| Failure::new(TexsetStatus::BadBundle, format!("{what} {s:?} holds a NUL")));
        let manifest = decoder.manifest();
        let material_names = manifest.materials.iter().map(|m| text("material name", &m.name)).collect::<Result<_, _>>()?;
        let source_files = manifest
            .materials
            .iter()
            .map(|m| m.maps.iter().map(|map| text("source file", &map.source_file)).collect::<Result<Vec<_>, _>>())
            .collect::<Result<_, _>>()?;
        let pool = match options.decode_threads {
            0 => None,
            n => Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(n as usize)
                    .thread_name(|i| format!("texset-decode-{i}"))
                    .build()
                    .map_err(|e| Failure::invalid(format!("cannot start {n} decode threads: {e}")))?,
            ),
        };
        Ok(Self { bundle: Arc::new(bundle), decoder, material_names, source_files, pool })
    }

    /// The bundle as read.
    pub(crate) fn bundle(&self) -> &Arc<Bundle> {
        &self.bundle
    }

    /// Runs `work` on this bundle's threads.
    fn run<R: Send>(&self, work: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(pool) => pool.install(work),
            None => work(),
        }
    }

    fn map(&self, material: u32, map: u32) -> Result<&MapEntry, Failure> {
        map_entry(self.decoder.manifest(), material, map)
    }

    /// The map's level `level`: `(width, height, channels)`.
    fn level(&self, material: u32, map: u32, level: u32) -> Result<(u32, u32, u32), Failure> {
        level_shape(self.decoder.manifest(), material, map, level)
    }
}

/// Material `material` of `manifest`, or an invalid-argument failure naming it: the one check of
/// a material index every entry point makes.
pub(crate) fn material_entry(manifest: &Manifest, material: u32) -> Result<&MaterialEntry, Failure> {
    manifest
        .materials
        .get(material as usize)
        .ok_or_else(|| Failure::invalid(format!("material {material} does not exist (the bundle has {})", manifest.materials.len())))
}

/// Map `map` of material `material`, or a failure naming what does not exist.
pub(crate) fn map_entry(manifest: &Manifest, material: u32, map: u32) -> Result<&MapEntry, Failure> {
    let mat = material_entry(manifest, material)?;
    mat.maps
        .get(map as usize)
        .ok_or_else(|| Failure::invalid(format!("map {map} does not exist in material '{}' (it has {})", mat.name, mat.maps.len())))
}

/// `(width, height, channels)` of mip level `level` of a map, or a failure naming what does not
/// exist.
pub(crate) fn level_shape(manifest: &Manifest, material: u32, map: u32, level: u32) -> Result<(u32, u32, u32), Failure> {
    let entry = map_entry(manifest, material, map)?;
    let levels = manifest.map_mip_levels(entry);
    if level >= levels {
        return Err(Failure::invalid(format!("mip level {level} does not exist (the map has {levels})")));
    }
    let (w, h) = level_size(entry.info.width, entry.info.height, level);
    Ok((w, h, entry.info.channels))
}

fn bundle_failure(error: &BundleError) -> Failure {
    let status = match error {
        BundleError::Io { .. } => TexsetStatus::Io,
        _ => TexsetStatus::BadBundle,
    };
    Failure::new(status, error.to_string())
}

fn decode_failure(error: &DecodeError) -> Failure {
    let status = match error {
        DecodeError::OverBudget { .. } => TexsetStatus::OverLimit,
        DecodeError::NoMaterial(_) | DecodeError::NoMap { .. } => TexsetStatus::InvalidArgument,
        _ => TexsetStatus::BufferTooSmall,
    };
    Failure::new(status, error.to_string())
}

/// texset's interactive defaults: a bundle of up to 1 GiB, 1 GiB of decoded values, 2^40
/// multiply-adds, one decode thread per core.
#[unsafe(no_mangle)]
pub extern "C" fn texset_open_options_default() -> TexsetOpenOptions {
    let limits = DecodeLimits::INTERACTIVE;
    TexsetOpenOptions {
        limits: TexsetLimits {
            max_bundle_bytes: MAX_BUNDLE_BYTES,
            max_decoded_bytes: limits.max_decoded_bytes,
            max_multiply_adds: limits.max_multiply_adds,
        },
        decode_threads: 0,
    }
}

/// `*options`, or the defaults where it is null.
///
/// # Safety
/// `options` must be null or valid for a read.
unsafe fn options_or_default(options: *const TexsetOpenOptions) -> TexsetOpenOptions {
    // SAFETY: the caller's contract: `options` is null or points to a valid TexsetOpenOptions.
    unsafe { options.as_ref() }.copied().unwrap_or_else(|| texset_open_options_default())
}

fn check_bundle_size(len: u64, options: &TexsetOpenOptions, what: &str) -> Result<(), Failure> {
    let limit = options.limits.max_bundle_bytes.min(MAX_BUNDLE_BYTES);
    if len > limit {
        return Err(Failure::new(TexsetStatus::OverLimit, format!("{what} is {len} bytes, over the limit of {limit}")));
    }
    Ok(())
}

/// Opens a bundle from `len` bytes at `data` (copied: the caller may free them on return).
/// `options` may be null for `texset_open_options_default()`. On success `*out` is a bundle to
/// free with `texset_bundle_free`; on failure it is left as it was.
///
/// # Safety
/// `data` must be valid for reads of `len` bytes; `options` null or valid; `out` valid for a
/// write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn texset_bundle_open_memory(
    data: *const u8,
    len: usize,
    options: *const TexsetOpenOptions,
    out: *mut *mut TexsetBundle,
) -> TexsetStatus {
    guard(|| {
        if data.is_null() {
            return Err(Failure::null("data"));
        }
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        // SAFETY: the caller's contract for `options`.
        let options = unsafe { options_or_default(options) };
        check_bundle_size(len as u64, &options, "the bundle")?;
        // SAFETY: `data` is not null and, by the caller's contract, valid for `len` bytes, which
        // are only read, for the duration of this call.
        let bytes = unsafe { std::slice::from_raw_parts(data, len) };
        let bundle = Bundle::from_bytes(bytes).map_err(|e| bundle_failure(&e))?;
        let opened = Box::new(TexsetBundle::open(bundle, &options)?);
        // SAFETY: `out` is not null and valid for a write by the caller's contract.
        unsafe { write_out(out, "out", Box::into_raw(opened)) }
    })
}

/// Opens the bundle file at `path` (UTF-8, NUL-terminated): a regular file, read whole. As
/// `texset_bundle_open_memory` otherwise.
///
/// # Safety
/// `path` must be a NUL-terminated string; `options` null or valid; `out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn texset_bundle_open_path(
    path: *const c_char,
    options: *const TexsetOpenOptions,
    out: *mut *mut TexsetBundle,
) -> TexsetStatus {
    guard(|| {
        if path.is_null() {
            return Err(Failure::null("path"));
        }
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        // SAFETY: `path` is not null and NUL-terminated by the caller's contract.
        let path = unsafe { CStr::from_ptr(path) };
        let path = Path::new(path.to_str().map_err(|_| Failure::invalid("path is not UTF-8"))?);
        // SAFETY: the caller's contract for `options`.
        let options = unsafe { options_or_default(options) };
        let len = std::fs::metadata(path)
            .map_err(|e| Failure::new(TexsetStatus::Io, format!("cannot access bundle {}: {e}", path.display())))?
            .len();
        check_bundle_size(len, &options, &format!("bundle {}", path.display()))?;
        let bundle = Bundle::read(path).map_err(|e| {
            let failure = bundle_failure(&e);
            Failure::new(failure.status, format!("{}: {}", path.display(), failure.message))
        })?;
        let opened = Box::new(TexsetBundle::open(bundle, &options)?);
        // SAFETY: `out` is not null and valid for a write by the caller's contract.
        unsafe { write_out(out, "out", Box::into_raw(opened)) }
    })
}

/// Frees a bundle (null is allowed and does nothing). Every pointer it handed out (names, file
/// names) dies with it.
///
/// # Safety
/// `bundle` must be null or a bundle from `texset_bundle_open_*` not yet freed, with no call
/// using it still running.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn texset_bundle_free(bundle: *mut TexsetBundle) {
    let _ = guard(|| {
        if !bundle.is_null() {
            // SAFETY: by the caller's contract, a pointer from Box::into_raw in open, freed once.
            drop(unsafe { Box::from_raw(bundle) });
        }
        Ok(())
    });
}

/// `*out` = the number of materials.
///
/// # Safety
/// `bundle` must be a live bundle; `out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn texset_bundle_material_count(bundle: *const TexsetBundle, out: *mut u32) -> TexsetStatus {
    guard(|| {
        // SAFETY: the caller's contract for `bundle`.
        let bundle = unsafe { handle(bundle, "bundle") }?;
        let count = bundle.material_names.len() as u32;
        // SAFETY: the caller's contract for `out`.
        unsafe { write_out(out, "out", count) }
    })
}

/// `*out` = material `material`'s name (UTF-8, NUL-terminated), owned by the bundle.
///
/// # Safety
/// `bundle` must be a live bundle; `out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn texset_material_name(bundle: *const TexsetBundle, material: u32, out: *mut *const c_char) -> TexsetStatus {
    guard(|| {
        // SAFETY: the caller's contract for `bundle`.
        let bundle = unsafe { handle(bundle, "bundle") }?;
        material_entry(bundle.decoder.manifest(), material)?;
        // SAFETY: the caller's contract for `out`.
        unsafe { write_out(out, "out", bundle.material_names[material as usize].as_ptr()) }
    })
}

/// `*out` = the number of maps of material `material`.
///
/// # Safety
/// `bundle` must be a live bundle; `out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn texset_material_map_count(bundle: *const TexsetBundle, material: u32, out: *mut u32) -> TexsetStatus {
    guard(|| {
        // SAFETY: the caller's contract for `bundle`.
        let bundle = unsafe { handle(bundle, "bundle") }?;
        let maps = material_entry(bundle.decoder.manifest(), material)?.maps.len();
        // SAFETY: the caller's contract for `out`.
        unsafe { write_out(out, "out", maps as u32) }
    })
}

fn map_info(bundle: &TexsetBundle, material: u32, map: u32) -> Result<TexsetMapInfo, Failure> {
    let entry = bundle.map(material, map)?;
    let kind = match entry.info.kind {
        MapKind::Basecolor => TexsetMapKind::Basecolor,
        MapKind::Normal => TexsetMapKind::Normal,
        MapKind::Roughness => TexsetMapKind::Roughness,
        MapKind::Metallic => TexsetMapKind::Metallic,
        MapKind::Ao => TexsetMapKind::Ao,
        MapKind::Height => TexsetMapKind::Height,
        MapKind::Emissive => TexsetMapKind::Emissive,
        MapKind::Opacity => TexsetMapKind::Opacity,
        MapKind::Orm => TexsetMapKind::Orm,
    };
    let source_format = match entry.info.sample_format {
        SampleFormat::U8 => TexsetSampleFormat::Unorm8,
        SampleFormat::U16 => TexsetSampleFormat::Unorm16,
        SampleFormat::F32 => TexsetSampleFormat::Float32,
    };
    let color_space = match entry.info.color_space {
        ColorSpace::Linear => TexsetColorSpace::Linear,
        ColorSpace::Srgb => TexsetColorSpace::Srgb,
    };
    let normal_convention = match (entry.info.kind, entry.info.normal_convention) {
        (MapKind::Normal, NormalConvention::DirectX) => TexsetNormalConvention::DirectX,
        _ => TexsetNormalConvention::OpenGl,
    };
    let (mut range_low, mut range_high) = ([0.0; 4], [1.0; 4]);
    for (c, [low, high]) in entry.info.channel_ranges.iter().copied().enumerate().take(4) {
        range_low[c] = low;
        range_high[c] = high;
    }
    Ok(TexsetMapInfo {
        kind: kind as u32,
        width: entry.info.width,
        height: entry.info.height,
        channels: entry.info.channels,
        mip_levels: bundle.decoder.manifest().map_mip_levels(entry),
        color_space: color_space as u32,
        normal_convention: normal_convention as u32,
        source_format: source_format as u32,
        range_low,
        range_high,
        source_file: bundle.source_files[material as usize][map as usize].as_ptr(),
    })
}

/// `*out` = map `map` of material `material`.
///
/// # Safety
/// `bundle` must be a live bundle; `out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn texset_map_info(bundle: *const TexsetBundle, material: u32, map: u32, out: *mut TexsetMapInfo) -> TexsetStatus {
    guard(|| {
        // SAFETY: the caller's contract for `bundle`.
        let bundle = unsafe { handle(bundle, "bundle") }?;
        let info = map_info(bundle, material, map)?;
        // SAFETY: the caller's contract for `out`.
        unsafe { write_out(out, "out", info) }
    })
}

/// The size of mip level `level` of a map: `*width`, `*height` in texels and `*bytes` that
/// `texset_decode_map_level` writes in `format` (a `TexsetTexelFormat`): `width * height *
/// channels` values, rows top to bottom, channels interleaved, no padding.
///
/// # Safety
/// `bundle` must be a live bundle; `width`, `height` and `bytes` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn texset_map_level_bytes(
    bundle: *const TexsetBundle,
    material: u32,
    map: u32,
    level: u32,
    format: u32,
    width: *mut u32,
    height: *mut u32,
    bytes: *mut usize,
) -> TexsetStatus {
    guard(|| {
        // SAFETY: the caller's contract for `bundle`.
        let bundle = unsafe { handle(bundle, "bundle") }?;
        let format = TexsetTexelFormat::from_u32(format)?;
        let (w, h, channels) = bundle.level(material, map, level)?;
        let size = level_bytes(w, h, channels, format)?;
        if width.is_null() || height.is_null() {
            return Err(Failure::null("width or height"));
        }
        // SAFETY: the caller's contract for the three out-pointers (each checked for null).
        unsafe {
            write_out(bytes, "bytes", size)?;
            write_out(width, "width", w)?;
            write_out(height, "height", h)
        }
    })
}

fn level_bytes(width: u32, height: u32, channels: u32, format: TexsetTexelFormat) -> Result<usize, Failure> {
    (width as usize)
        .checked_mul(height as usize)
        .and_then(|n| n.checked_mul(channels as usize))
        .and_then(|n| n.checked_mul(format.bytes()))
        .ok_or_else(|| Failure::invalid("the level's size does not fit this machine's size_t"))
}

/// Decodes mip level `level` of a map on the CPU into `out` (`out_bytes` long, at least what
/// `texset_map_level_bytes` says; no alignment needed), in `format`. The values are the same
/// texset's Rust decoder gives, bit for bit.
///
/// # Safety
/// `bundle` must be a live bundle; `out` valid for writes of `out_bytes` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn texset_decode_map_level(
    bundle: *const TexsetBundle,
    material: u32,
    map: u32,
    level: u32,
    format: u32,
    out: *mut c_void,
    out_bytes: usize,
) -> TexsetStatus {
    guard(|| {
        // SAFETY: the caller's contract for `bundle`.
        let bundle = unsafe { handle(bundle, "bundle") }?;
        let format = TexsetTexelFormat::from_u32(format)?;
        let (w, h, channels) = bundle.level(material, map, level)?;
        let needed = level_bytes(w, h, channels, format)?;
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        if out_bytes < needed {
            return Err(Failure::new(TexsetStatus::BufferTooSmall, format!("out holds {out_bytes} bytes, the level needs {needed}")));
        }
        let decoded: DecodedMap =
            bundle.run(|| bundle.decoder.decode_map_level(material as usize, map as usize, level)).map_err(|e| decode_failure(&e))?;
        // SAFETY: `out` is not null and valid for `out_bytes >= needed` bytes of writes by the
        // caller's contract; bytes need no alignment; nothing else refers to them during this call.
        let out = unsafe { std::slice::from_raw_parts_mut(out.cast::<u8>(), needed) };
        let values = &decoded.values;
        match format {
            TexsetTexelFormat::Unorm8 => out.iter_mut().zip(values).for_each(|(o, &v)| *o = unorm8(v)),
            TexsetTexelFormat::Unorm16 => {
                out.chunks_exact_mut(2).zip(values).for_each(|(o, &v)| o.copy_from_slice(&unorm16(v).to_ne_bytes()));
            }
            TexsetTexelFormat::Float32 => out.chunks_exact_mut(4).zip(values).for_each(|(o, &v)| o.copy_from_slice(&v.to_ne_bytes())),
        }
        Ok(())
    })
}

/// Decodes `count` texels of a map at random access on the CPU: texel `i` at
/// `(uvs[2i], uvs[2i + 1])` (0 to 1 across the map; outside wraps, as a repeating sampler) and
/// level of detail `lod` (0 for the full size; a fraction blends two levels), its `channels`
/// stored values in [0, 1] to `out[i * channels ...]`. `out_len` counts floats.
///
/// # Safety
/// `bundle` must be a live bundle; `uvs` valid for reads of `2 * count` floats and `out` for
/// writes of `out_len` floats, both aligned for `float`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn texset_decode_texels(
    bundle: *const TexsetBundle,
    material: u32,
    map: u32,
    uvs: *const f32,
    count: usize,
    lod: f32,
    out: *mut f32,
    out_len: usize,
) -> TexsetStatus {
    guard(|| {
        use rayon::prelude::*;
        // SAFETY: the caller's contract for `bundle`.
        let bundle = unsafe { handle(bundle, "bundle") }?;
        let channels = bundle.map(material, map)?.info.channels as usize;
        if uvs.is_null() || out.is_null() {
            return Err(Failure::null("uvs or out"));
        }
        if !uvs.is_aligned() || !out.is_aligned() {
            return Err(Failure::invalid("uvs and out must be aligned for float"));
        }
        let uv_len = count.checked_mul(2).ok_or_else(|| Failure::invalid("count is too large"))?;
        let needed = count.checked_mul(channels).ok_or_else(|| Failure::invalid("count is too large"))?;
        if out_len < needed {
            return Err(Failure::new(TexsetStatus::BufferTooSmall, format!("out holds {out_len} floats, {count} texels need {needed}")));
        }
        if !lod.is_finite() {
            return Err(Failure::invalid(format!("lod {lod} is not a finite number")));
        }
        // SAFETY: not null, aligned (checked), and valid for `2 * count` floats of reads by the
        // caller's contract.
        let uvs = unsafe { std::slice::from_raw_parts(uvs, uv_len) };
        if let Some(i) = uvs.iter().position(|x| !x.is_finite()) {
            return Err(Failure::invalid(format!("uvs[{i}] is {}, not a finite number", uvs[i])));
        }
        // SAFETY: not null, aligned (checked), valid for `out_len >= needed` floats of writes by
        // the caller's contract, and not read through `uvs` (a caller passing overlapping
        // buffers breaks that contract).
        let out = unsafe { std::slice::from_raw_parts_mut(out, needed) };
        if count == 0 {
            return Ok(());
        }
        bundle
            .run(|| {
                out.par_chunks_mut(channels)
                    .zip(uvs.par_chunks(2))
                    .try_for_each(|(texel, uv)| bundle.decoder.decode_texel_lod(material as usize, map as usize, uv[0], uv[1], lod, texel))
            })
            .map_err(|e| decode_failure(&e))
    })
}
