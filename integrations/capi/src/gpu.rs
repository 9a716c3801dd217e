//! The GPU decoder for an engine's own renderer: the decoder's shader specialised to a bundle
//! (WGSL, or GLSL, HLSL and MSL through naga), the bytes of the two buffers it reads, and the
//! 32 bytes of its `params` uniform. docs/integration.md ("Buffer layouts") specifies them.

use crate::{Failure, TexsetStatus, guard, handle, write_out};
use std::ffi::{CString, c_char};
use std::sync::Arc;
use texset_core::{
    bundle::Bundle,
    model::wgsl::{MlpPrecision, WeightMemory},
};
use texset_shaders::{
    DecodeMode, EntryPoint, ExportOptions, GpuModel, GpuModelOptions, SAMPLE_WORKGROUP, ShaderLang, WORKGROUP_SIDE, export_shader_with,
    model::{DecodeParams, words_to_bytes},
};

/// Workgroups a dispatch may have per dimension: WebGPU's guaranteed limit.
const MAX_GROUPS: u32 = 65_535;

/// How the GPU decoder is specialised (`texset_gpu_options_default` for the portable one).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TexsetGpuOptions {
    /// `TexsetPrecision`: the MLP's arithmetic.
    pub precision: u32,
    /// The bind group of every buffer.
    pub bind_group: u32,
    /// The binding of `latents`; `mlp`, `params`, `output` and `samples` take the next four.
    pub first_binding: u32,
}

/// The MLP's arithmetic in the shader (`TexsetGpuOptions::precision`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TexsetPrecision {
    /// f32: portable, the default.
    F32 = 0,
    /// f16: needs 16-bit float shaders (not GLSL).
    F16 = 1,
    /// Packed int8 dot products, any device.
    Int8 = 2,
}

/// A shading language (`texset_gpu_shader`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TexsetShaderLang {
    /// WGSL: every entry point.
    Wgsl = 0,
    /// GLSL 4.50 core: the one entry point asked for.
    Glsl = 1,
    /// HLSL: every entry point.
    Hlsl = 2,
    /// Metal Shading Language 2.1: every entry point.
    Msl = 3,
}

/// An entry point of the decoder shader (`texset_gpu_shader`, `texset_gpu_dispatch`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TexsetEntryPoint {
    /// `cs_decode_map`: a whole map level into `output`.
    DecodeMap = 0,
    /// `cs_decode_samples`: `samples` (u, v) pairs into `output`, four floats each.
    DecodeSamples = 1,
    /// `vs_fullscreen`: the full-screen triangle for `fs_decode_map`.
    Fullscreen = 2,
    /// `fs_decode_map`: a map level decoded per pixel into a render target of its size.
    FragmentDecode = 3,
}

/// What a decoded value means on the GPU (`texset_gpu_params`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TexsetDecodeMode {
    /// The stored values in [0, 1], as `texset_decode_map_level` gives them.
    Stored = 0,
    /// Un-mapped for shading: channel ranges applied, sRGB to linear, normals as unit +Y vectors.
    Shading = 1,
}

/// The two buffers the decoder reads, owned by the GPU model (valid until
/// `texset_gpu_model_free`). Upload them as they are (little-endian 32-bit words).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TexsetGpuBuffers {
    /// `latents` (binding `first_binding`): a read-only storage buffer.
    pub latents: *const u8,
    /// Bytes of `latents`.
    pub latents_bytes: usize,
    /// `mlp` (binding `first_binding + 1`): the dequantised weights.
    pub mlp: *const u8,
    /// Bytes of `mlp`.
    pub mlp_bytes: usize,
    /// 1: the shader declares `mlp` a uniform buffer; 0: a read-only storage buffer.
    pub mlp_is_uniform: u32,
    /// Texels each compute invocation decodes (`BLOCK`).
    pub block: u32,
    /// Bytes of the `params` uniform (binding `first_binding + 2`), 32.
    pub params_bytes: u32,
}

/// A bundle's GPU decoder: buffers and shaders of one specialisation. Immutable, so usable from
/// several threads; free it with `texset_gpu_model_free`. It keeps what it needs of the bundle,
/// which may be freed first.
pub struct TexsetGpuModel {
    bundle: Arc<Bundle>,
    model: GpuModel,
    export: ExportOptions,
    latents: Vec<u8>,
    mlp: Vec<u8>,
}

/// The portable specialisation: f32, group 0, bindings from 0 (what `texset export-shader`
/// writes by default).
#[unsafe(no_mangle)]
pub extern "C" fn texset_gpu_options_default() -> TexsetGpuOptions {
    TexsetGpuOptions { precision: TexsetPrecision::F32 as u32, bind_group: 0, first_binding: 0 }
}

fn precision(value: u32) -> Result<MlpPrecision, Failure> {
    let all = [TexsetPrecision::F32, TexsetPrecision::F16, TexsetPrecision::Int8];
    match all.into_iter().find(|p| *p as u32 == value) {
        Some(TexsetPrecision::F32) => Ok(MlpPrecision::F32),
        Some(TexsetPrecision::F16) => Ok(MlpPrecision::F16),
        Some(TexsetPrecision::Int8) => Ok(MlpPrecision::Int8),
        None => Err(Failure::invalid(format!("precision {value} is not one of TexsetPrecision's (0 to 2)"))),
    }
}

fn entry_point(value: u32) -> Result<EntryPoint, Failure> {
    let all =
        [TexsetEntryPoint::DecodeMap, TexsetEntryPoint::DecodeSamples, TexsetEntryPoint::Fullscreen, TexsetEntryPoint::FragmentDecode];
    match all.into_iter().find(|e| *e as u32 == value) {
        Some(TexsetEntryPoint::DecodeMap) => Ok(EntryPoint::DecodeMap),
        Some(TexsetEntryPoint::DecodeSamples) => Ok(EntryPoint::DecodeSamples),
        Some(TexsetEntryPoint::Fullscreen) => Ok(EntryPoint::Fullscreen),
        Some(TexsetEntryPoint::FragmentDecode) => Ok(EntryPoint::FragmentDecode),
        None => Err(Failure::invalid(format!("entry point {value} is not one of TexsetEntryPoint's (0 to 3)"))),
    }
}

fn shader_lang(value: u32) -> Result<ShaderLang, Failure> {
    let all = [TexsetShaderLang::Wgsl, TexsetShaderLang::Glsl, TexsetShaderLang::Hlsl, TexsetShaderLang::Msl];
    match all.into_iter().find(|l| *l as u32 == value) {
        Some(TexsetShaderLang::Wgsl) => Ok(ShaderLang::Wgsl),
        Some(TexsetShaderLang::Glsl) => Ok(ShaderLang::Glsl),
        Some(TexsetShaderLang::Hlsl) => Ok(ShaderLang::Hlsl),
        Some(TexsetShaderLang::Msl) => Ok(ShaderLang::Msl),
        None => Err(Failure::invalid(format!("shader language {value} is not one of TexsetShaderLang's (0 to 3)"))),
    }
}

fn decode_mode(value: u32) -> Result<DecodeMode, Failure> {
    match [TexsetDecodeMode::Stored, TexsetDecodeMode::Shading].into_iter().find(|m| *m as u32 == value) {
        Some(TexsetDecodeMode::Stored) => Ok(DecodeMode::Stored),
        Some(TexsetDecodeMode::Shading) => Ok(DecodeMode::Shading),
        None => Err(Failure::invalid(format!("mode {value} is not one of TexsetDecodeMode's (0 or 1)"))),
    }
}

fn shader_failure(error: &impl std::fmt::Display) -> Failure {
    Failure::new(TexsetStatus::Shader, error.to_string())
}

/// Makes the GPU decoder of `bundle` as `options` says (null: `texset_gpu_options_default()`).
///
/// # Safety
/// `bundle` must be a live bundle; `options` null or valid; `out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn texset_gpu_model_new(
    bundle: *const crate::TexsetBundle,
    options: *const TexsetGpuOptions,
    out: *mut *mut TexsetGpuModel,
) -> TexsetStatus {
    guard(|| {
        // SAFETY: the caller's contract for `bundle`.
        let opened = unsafe { handle(bundle, "bundle") }?;
        // SAFETY: the caller's contract: `options` null or valid.
        let options = unsafe { options.as_ref() }.copied().unwrap_or_else(|| texset_gpu_options_default());
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        let precision = precision(options.precision)?;
        if options.first_binding.checked_add(4).is_none() {
            return Err(Failure::invalid(format!("first_binding {} leaves no room for the four bindings after it", options.first_binding)));
        }
        let bundle = Arc::clone(opened.bundle());
        let model =
            GpuModel::with_options(&bundle, GpuModelOptions { precision, ..GpuModelOptions::default() }).map_err(|e| shader_failure(&e))?;
        let export =
            ExportOptions { bind_group: options.bind_group, first_binding: options.first_binding, functions_only: false, precision };
        let (latents, mlp) = (words_to_bytes(&model.latent_words), words_to_bytes(&model.mlp_words));
        let made = Box::new(TexsetGpuModel { bundle, model, export, latents, mlp });
        // SAFETY: `out` is not null and valid for a write by the caller's contract.
        unsafe { write_out(out, "out", Box::into_raw(made)) }
    })
}

/// Frees a GPU model (null does nothing); the buffers it handed out die with it.
///
/// # Safety
/// `model` must be null or a model from `texset_gpu_model_new` not yet freed, unused by any
/// running call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn texset_gpu_model_free(model: *mut TexsetGpuModel) {
    let _ = guard(|| {
        if !model.is_null() {
            // SAFETY: by the caller's contract, a pointer from Box::into_raw, freed once.
            drop(unsafe { Box::from_raw(model) });
        }
        Ok(())
    });
}

/// `*out` = the model's buffers (owned by the model).
///
/// # Safety
/// `model` must be a live GPU model; `out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn texset_gpu_buffers(model: *const TexsetGpuModel, out: *mut TexsetGpuBuffers) -> TexsetStatus {
    guard(|| {
        // SAFETY: the caller's contract for `model`.
        let model = unsafe { handle(model, "model") }?;
        let buffers = TexsetGpuBuffers {
            latents: model.latents.as_ptr(),
            latents_bytes: model.latents.len(),
            mlp: model.mlp.as_ptr(),
            mlp_bytes: model.mlp.len(),
            mlp_is_uniform: u32::from(model.model.weight_memory == WeightMemory::Uniform),
            block: model.model.block,
            params_bytes: DecodeParams::BYTES as u32,
        };
        // SAFETY: the caller's contract for `out`.
        unsafe { write_out(out, "out", buffers) }
    })
}

/// `*out` = the decoder's shader in `lang` (a `TexsetShaderLang`), bound as the model's options
/// say, validated by naga. GLSL holds the one entry point `entry` (a `TexsetEntryPoint`); the
/// other languages hold all four. The string is the caller's: free it with `texset_string_free`.
///
/// # Safety
/// `model` must be a live GPU model; `out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn texset_gpu_shader(model: *const TexsetGpuModel, lang: u32, entry: u32, out: *mut *mut c_char) -> TexsetStatus {
    guard(|| {
        // SAFETY: the caller's contract for `model`.
        let model = unsafe { handle(model, "model") }?;
        let lang = shader_lang(lang)?;
        let entry = entry_point(entry)?;
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        let source = export_shader_with(&model.bundle, lang, entry, model.export).map_err(|e| shader_failure(&e))?;
        let source = CString::new(source).map_err(|_| shader_failure(&"the shader source holds a NUL"))?;
        // SAFETY: the caller's contract for `out`.
        unsafe { write_out(out, "out", source.into_raw()) }
    })
}

/// Frees a string texset returned (null does nothing).
///
/// # Safety
/// `text` must be null or a string from `texset_gpu_shader`, freed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn texset_string_free(text: *mut c_char) {
    let _ = guard(|| {
        if !text.is_null() {
            // SAFETY: by the caller's contract, a pointer from CString::into_raw, freed once.
            drop(unsafe { CString::from_raw(text) });
        }
        Ok(())
    });
}

impl TexsetGpuModel {
    /// Library-wide map index and `(width, height, channels)` of level `level` of a map.
    fn level(&self, material: u32, map: u32, level: u32) -> Result<(u32, (u32, u32, u32)), Failure> {
        let shape = crate::bundle::level_shape(&self.bundle.manifest, material, map, level)?;
        Ok((self.model.first_map[material as usize] + map, shape))
    }
}

/// The 32 bytes of the `params` uniform for one dispatch: `sample_count` 0 decodes mip level
/// `level` of the map whole (`cs_decode_map`, `fs_decode_map`); `sample_count` N > 0 decodes N
/// samples at level of detail `level` (`cs_decode_samples`). `mode` is a `TexsetDecodeMode`.
///
/// # Safety
/// `model` must be a live GPU model; `out` valid for writes of 32 bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn texset_gpu_params(
    model: *const TexsetGpuModel,
    material: u32,
    map: u32,
    level: u32,
    sample_count: u32,
    mode: u32,
    out: *mut u8,
) -> TexsetStatus {
    guard(|| {
        // SAFETY: the caller's contract for `model`.
        let model = unsafe { handle(model, "model") }?;
        let mode = decode_mode(mode)?;
        // Samples address the map by (u, v) at a level of detail: the map's level-0 size.
        let (index, size) = model.level(material, map, if sample_count == 0 { level } else { 0 })?;
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        let bytes = DecodeParams::new(index, size, sample_count, mode, level as f32).bytes();
        // SAFETY: `out` is not null and valid for 32 bytes of writes by the caller's contract;
        // bytes need no alignment.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out, bytes.len()) };
        Ok(())
    })
}

/// The workgroups to dispatch (`groups[0..3]`) for `entry` on mip level `level` of a map
/// (`TEXSET_ENTRY_POINT_DECODE_MAP`), or for `sample_count` samples
/// (`TEXSET_ENTRY_POINT_DECODE_SAMPLES`). Fragment entry points draw one triangle over a target
/// of the level's size instead and get an invalid-argument error here.
///
/// # Safety
/// `model` must be a live GPU model; `groups` valid for writes of three `uint32_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn texset_gpu_dispatch(
    model: *const TexsetGpuModel,
    entry: u32,
    material: u32,
    map: u32,
    level: u32,
    sample_count: u32,
    groups: *mut u32,
) -> TexsetStatus {
    guard(|| {
        // SAFETY: the caller's contract for `model`.
        let model = unsafe { handle(model, "model") }?;
        let block = model.model.block;
        let counts = match entry_point(entry)? {
            EntryPoint::DecodeMap => {
                let (_, (w, h, _)) = model.level(material, map, level)?;
                [w.div_ceil(WORKGROUP_SIDE * block), h.div_ceil(WORKGROUP_SIDE), 1]
            }
            EntryPoint::DecodeSamples => {
                model.level(material, map, 0)?;
                // As texset's own GpuDecoder: rows of WebGPU's guaranteed 65,535 groups.
                let groups = sample_count.div_ceil(SAMPLE_WORKGROUP * block).max(1);
                [groups.min(MAX_GROUPS), groups.div_ceil(MAX_GROUPS), 1]
            }
            EntryPoint::Fullscreen | EntryPoint::FragmentDecode => {
                return Err(Failure::invalid("fragment entry points are drawn (one triangle over the level's size), not dispatched"));
            }
        };
        if groups.is_null() {
            return Err(Failure::null("groups"));
        }
        // SAFETY: `groups` is not null and valid for three u32 writes by the caller's contract;
        // written byte-wise-free through `write_unaligned`, so any alignment is fine.
        unsafe {
            for (i, count) in counts.into_iter().enumerate() {
                groups.add(i).write_unaligned(count);
            }
        }
        Ok(())
    })
}
