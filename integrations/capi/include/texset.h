/*
 * texset C API: read .texset bundles, decode them on the CPU, and run texset's GPU decoder in
 * your own renderer. Written by cbindgen from integrations/capi/src: do not edit; after changing
 * the crate, run `TEXSET_BLESS=1 cargo test --test header` in integrations/capi.
 * docs/integration.md ("C and C++") documents ownership, threads, limits and errors.
 */

#ifndef TEXSET_H
#define TEXSET_H

#include <stddef.h>
#include <stdint.h>

// The API's major version: a change here breaks programs built against an older header.
#define TEXSET_VERSION_MAJOR 0

// The API's minor version: additions that keep the ABI.
#define TEXSET_VERSION_MINOR 1

// The API's patch version.
#define TEXSET_VERSION_PATCH 0

// `MAJOR * 10000 + MINOR * 100 + PATCH`, what `texset_version` returns: compare it with the
// header's to catch a library of another version at run time.
#define TEXSET_VERSION (((TEXSET_VERSION_MAJOR * 10000) + (TEXSET_VERSION_MINOR * 100)) + TEXSET_VERSION_PATCH)

// What an entry point returns. Anything but `TEXSET_STATUS_OK` leaves a message for
// `texset_last_error` on the calling thread.
typedef enum TexsetStatus {
  // Done.
  TEXSET_STATUS_OK = 0,
  // A pointer the call needs was null.
  TEXSET_STATUS_NULL_ARGUMENT = 1,
  // An argument is out of range: a material, map or mip level that does not exist, an unknown
  // enum value, a length that does not fit.
  TEXSET_STATUS_INVALID_ARGUMENT = 2,
  // The file could not be read (missing, not a regular file, over the size limit).
  TEXSET_STATUS_IO = 3,
  // The bytes are not a bundle this library reads: truncated, corrupt (checksums), an
  // unsupported format version, or a manifest that contradicts itself.
  TEXSET_STATUS_BAD_BUNDLE = 4,
  // The bundle declares more decoding than the limits it was opened with allow.
  TEXSET_STATUS_OVER_LIMIT = 5,
  // The caller's buffer is smaller than the result (its size is in the message).
  TEXSET_STATUS_BUFFER_TOO_SMALL = 6,
  // The GPU decoder cannot be made for this bundle or language.
  TEXSET_STATUS_SHADER = 7,
  // texset panicked (a bug: please report the message); nothing crossed into C.
  TEXSET_STATUS_PANIC = 8,
} TexsetStatus;

// A map's kind (`TexsetMapInfo::kind`).
typedef enum TexsetMapKind {
  // Base colour, sRGB.
  TEXSET_MAP_KIND_BASECOLOR = 0,
  // Tangent-space normal, encoded `n * 0.5 + 0.5`.
  TEXSET_MAP_KIND_NORMAL = 1,
  // Roughness, linear.
  TEXSET_MAP_KIND_ROUGHNESS = 2,
  // Metallic, linear.
  TEXSET_MAP_KIND_METALLIC = 3,
  // Ambient occlusion, linear.
  TEXSET_MAP_KIND_AO = 4,
  // Height, linear.
  TEXSET_MAP_KIND_HEIGHT = 5,
  // Emissive colour, sRGB.
  TEXSET_MAP_KIND_EMISSIVE = 6,
  // Opacity, linear.
  TEXSET_MAP_KIND_OPACITY = 7,
  // Packed occlusion (R), roughness (G), metallic (B): glTF's layout.
  TEXSET_MAP_KIND_ORM = 8,
} TexsetMapKind;

// The sample format the map's source had (`TexsetMapInfo::source_format`): what `texset
// decode` writes back.
typedef enum TexsetSampleFormat {
  // 8-bit unsigned normalised.
  TEXSET_SAMPLE_FORMAT_UNORM8 = 0,
  // 16-bit unsigned normalised.
  TEXSET_SAMPLE_FORMAT_UNORM16 = 1,
  // 32-bit float (EXR): apply the map's channel ranges to the decoded values.
  TEXSET_SAMPLE_FORMAT_FLOAT32 = 2,
} TexsetSampleFormat;

// What `texset_decode_map_level` writes per channel, in native byte order.
typedef enum TexsetTexelFormat {
  // `uint8_t`: the stored value in [0, 1] as `round(clamp(v) * 255)`.
  TEXSET_TEXEL_FORMAT_UNORM8 = 0,
  // `uint16_t`: `round(clamp(v) * 65535)`.
  TEXSET_TEXEL_FORMAT_UNORM16 = 1,
  // `float`: the stored value in [0, 1] as the decoder computes it.
  TEXSET_TEXEL_FORMAT_FLOAT32 = 2,
} TexsetTexelFormat;

// Colour spaces (`TexsetMapInfo::color_space`).
typedef enum TexsetColorSpace {
  // Linear values.
  TEXSET_COLOR_SPACE_LINEAR = 0,
  // sRGB-encoded colour channels (the first three); alpha is linear.
  TEXSET_COLOR_SPACE_SRGB = 1,
} TexsetColorSpace;

// Normal-map conventions (`TexsetMapInfo::normal_convention`; 0 for other maps).
typedef enum TexsetNormalConvention {
  // +Y up (OpenGL, glTF); also every map that is not a normal map.
  TEXSET_NORMAL_CONVENTION_OPEN_GL = 0,
  // +Y down (DirectX).
  TEXSET_NORMAL_CONVENTION_DIRECT_X = 1,
} TexsetNormalConvention;

// The MLP's arithmetic in the shader (`TexsetGpuOptions::precision`).
typedef enum TexsetPrecision {
  // f32: portable, the default.
  TEXSET_PRECISION_F32 = 0,
  // f16: needs 16-bit float shaders (not GLSL).
  TEXSET_PRECISION_F16 = 1,
  // Packed int8 dot products, any device.
  TEXSET_PRECISION_INT8 = 2,
} TexsetPrecision;

// A shading language (`texset_gpu_shader`).
typedef enum TexsetShaderLang {
  // WGSL: every entry point.
  TEXSET_SHADER_LANG_WGSL = 0,
  // GLSL 4.50 core: the one entry point asked for.
  TEXSET_SHADER_LANG_GLSL = 1,
  // HLSL: every entry point.
  TEXSET_SHADER_LANG_HLSL = 2,
  // Metal Shading Language 2.1: every entry point.
  TEXSET_SHADER_LANG_MSL = 3,
} TexsetShaderLang;

// An entry point of the decoder shader (`texset_gpu_shader`, `texset_gpu_dispatch`).
typedef enum TexsetEntryPoint {
  // `cs_decode_map`: a whole map level into `output`.
  TEXSET_ENTRY_POINT_DECODE_MAP = 0,
  // `cs_decode_samples`: `samples` (u, v) pairs into `output`, four floats each.
  TEXSET_ENTRY_POINT_DECODE_SAMPLES = 1,
  // `vs_fullscreen`: the full-screen triangle for `fs_decode_map`.
  TEXSET_ENTRY_POINT_FULLSCREEN = 2,
  // `fs_decode_map`: a map level decoded per pixel into a render target of its size.
  TEXSET_ENTRY_POINT_FRAGMENT_DECODE = 3,
} TexsetEntryPoint;

// What a decoded value means on the GPU (`texset_gpu_params`).
typedef enum TexsetDecodeMode {
  // The stored values in [0, 1], as `texset_decode_map_level` gives them.
  TEXSET_DECODE_MODE_STORED = 0,
  // Un-mapped for shading: channel ranges applied, sRGB to linear, normals as unit +Y vectors.
  TEXSET_DECODE_MODE_SHADING = 1,
} TexsetDecodeMode;

// An open bundle: immutable, so it may be used from several threads at once. Free it with
// `texset_bundle_free` once no call that uses it is running.
typedef struct TexsetBundle TexsetBundle;

// A bundle's GPU decoder: buffers and shaders of one specialisation. Immutable, so usable from
// several threads; free it with `texset_gpu_model_free`. It keeps what it needs of the bundle,
// which may be freed first.
typedef struct TexsetGpuModel TexsetGpuModel;

// How much opening a bundle may cost, checked before anything is decoded: the bundle's own
// size, and what decoding all of it declares (every map and mip level).
typedef struct TexsetLimits {
  // Most bytes of the bundle itself (at most 1 GiB, the reader's own limit).
  uint64_t max_bundle_bytes;
  // Most bytes of decoded f32 values over every map and level of the library.
  uint64_t max_decoded_bytes;
  // Most multiply-adds of the decoder's MLP over all those texels.
  uint64_t max_multiply_adds;
} TexsetLimits;

// How a bundle is opened.
typedef struct TexsetOpenOptions {
  // The limits: `texset_open_options_default` gives texset's interactive ones (1 GiB of
  // decoded values, 2^40 multiply-adds), what the studio and the Bevy loader use.
  struct TexsetLimits limits;
  // Threads a decode of this bundle may use: 0 for one per core (a pool shared by the
  // process), N for a pool of N threads of this bundle's own.
  uint32_t decode_threads;
} TexsetOpenOptions;

// One map of a material.
typedef struct TexsetMapInfo {
  // `TexsetMapKind`.
  uint32_t kind;
  // Width of level 0, texels.
  uint32_t width;
  // Height of level 0, texels.
  uint32_t height;
  // Channels, 1 to 4.
  uint32_t channels;
  // Mip levels the bundle decodes (1 without a stored mip chain; level `k` is the size halved
  // `k` times, at least 1).
  uint32_t mip_levels;
  // `TexsetColorSpace` of the decoded values.
  uint32_t color_space;
  // `TexsetNormalConvention`.
  uint32_t normal_convention;
  // `TexsetSampleFormat` of the source.
  uint32_t source_format;
  // Per channel, the source value at a decoded 0: `source = low + (high - low) * decoded`.
  float range_low[4];
  // Per channel, the source value at a decoded 1.
  float range_high[4];
  // The source's file name, UTF-8, NUL-terminated; owned by the bundle (valid until
  // `texset_bundle_free`).
  const char *source_file;
} TexsetMapInfo;

// How the GPU decoder is specialised (`texset_gpu_options_default` for the portable one).
typedef struct TexsetGpuOptions {
  // `TexsetPrecision`: the MLP's arithmetic.
  uint32_t precision;
  // The bind group of every buffer.
  uint32_t bind_group;
  // The binding of `latents`; `mlp`, `params`, `output` and `samples` take the next four.
  uint32_t first_binding;
} TexsetGpuOptions;

// The two buffers the decoder reads, owned by the GPU model (valid until
// `texset_gpu_model_free`). Upload them as they are (little-endian 32-bit words).
typedef struct TexsetGpuBuffers {
  // `latents` (binding `first_binding`): a read-only storage buffer.
  const uint8_t *latents;
  // Bytes of `latents`.
  size_t latents_bytes;
  // `mlp` (binding `first_binding + 1`): the dequantised weights.
  const uint8_t *mlp;
  // Bytes of `mlp`.
  size_t mlp_bytes;
  // 1: the shader declares `mlp` a uniform buffer; 0: a read-only storage buffer.
  uint32_t mlp_is_uniform;
  // Texels each compute invocation decodes (`BLOCK`).
  uint32_t block;
  // Bytes of the `params` uniform (binding `first_binding + 2`), 32.
  uint32_t params_bytes;
} TexsetGpuBuffers;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

// The message of the last failed call on this thread, UTF-8, NUL-terminated; "" when none has
// failed. The pointer stays valid until the next call into texset on this thread; copy it to
// keep it. Never null.
const char *texset_last_error(void);

// The library's version, [`TEXSET_VERSION`]'s form.
uint32_t texset_version(void);

// texset's interactive defaults: a bundle of up to 1 GiB, 1 GiB of decoded values, 2^40
// multiply-adds, one decode thread per core.
struct TexsetOpenOptions texset_open_options_default(void);

// Opens a bundle from `len` bytes at `data` (copied: the caller may free them on return).
// `options` may be null for `texset_open_options_default()`. On success `*out` is a bundle to
// free with `texset_bundle_free`; on failure it is left as it was.
//
// # Safety
// `data` must be valid for reads of `len` bytes; `options` null or valid; `out` valid for a
// write.
enum TexsetStatus texset_bundle_open_memory(const uint8_t *data,
                                            size_t len,
                                            const struct TexsetOpenOptions *options,
                                            struct TexsetBundle **out);

// Opens the bundle file at `path` (UTF-8, NUL-terminated): a regular file, read whole. As
// `texset_bundle_open_memory` otherwise.
//
// # Safety
// `path` must be a NUL-terminated string; `options` null or valid; `out` valid for a write.
enum TexsetStatus texset_bundle_open_path(const char *path,
                                          const struct TexsetOpenOptions *options,
                                          struct TexsetBundle **out);

// Frees a bundle (null is allowed and does nothing). Every pointer it handed out (names, file
// names) dies with it.
//
// # Safety
// `bundle` must be null or a bundle from `texset_bundle_open_*` not yet freed, with no call
// using it still running.
void texset_bundle_free(struct TexsetBundle *bundle);

// `*out` = the number of materials.
//
// # Safety
// `bundle` must be a live bundle; `out` valid for a write.
enum TexsetStatus texset_bundle_material_count(const struct TexsetBundle *bundle, uint32_t *out);

// `*out` = material `material`'s name (UTF-8, NUL-terminated), owned by the bundle.
//
// # Safety
// `bundle` must be a live bundle; `out` valid for a write.
enum TexsetStatus texset_material_name(const struct TexsetBundle *bundle,
                                       uint32_t material,
                                       const char **out);

// `*out` = the number of maps of material `material`.
//
// # Safety
// `bundle` must be a live bundle; `out` valid for a write.
enum TexsetStatus texset_material_map_count(const struct TexsetBundle *bundle,
                                            uint32_t material,
                                            uint32_t *out);

// `*out` = map `map` of material `material`.
//
// # Safety
// `bundle` must be a live bundle; `out` valid for a write.
enum TexsetStatus texset_map_info(const struct TexsetBundle *bundle,
                                  uint32_t material,
                                  uint32_t map,
                                  struct TexsetMapInfo *out);

// The size of mip level `level` of a map: `*width`, `*height` in texels and `*bytes` that
// `texset_decode_map_level` writes in `format` (a `TexsetTexelFormat`): `width * height *
// channels` values, rows top to bottom, channels interleaved, no padding.
//
// # Safety
// `bundle` must be a live bundle; `width`, `height` and `bytes` valid for writes.
enum TexsetStatus texset_map_level_bytes(const struct TexsetBundle *bundle,
                                         uint32_t material,
                                         uint32_t map,
                                         uint32_t level,
                                         uint32_t format,
                                         uint32_t *width,
                                         uint32_t *height,
                                         size_t *bytes);

// Decodes mip level `level` of a map on the CPU into `out` (`out_bytes` long, at least what
// `texset_map_level_bytes` says; no alignment needed), in `format`. The values are the same
// texset's Rust decoder gives, bit for bit.
//
// # Safety
// `bundle` must be a live bundle; `out` valid for writes of `out_bytes` bytes.
enum TexsetStatus texset_decode_map_level(const struct TexsetBundle *bundle,
                                          uint32_t material,
                                          uint32_t map,
                                          uint32_t level,
                                          uint32_t format,
                                          void *out,
                                          size_t out_bytes);

// Decodes `count` texels of a map at random access on the CPU: texel `i` at
// `(uvs[2i], uvs[2i + 1])` (0 to 1 across the map; outside wraps, as a repeating sampler) and
// level of detail `lod` (0 for the full size; a fraction blends two levels), its `channels`
// stored values in [0, 1] to `out[i * channels ...]`. `out_len` counts floats.
//
// # Safety
// `bundle` must be a live bundle; `uvs` valid for reads of `2 * count` floats and `out` for
// writes of `out_len` floats, both aligned for `float`.
enum TexsetStatus texset_decode_texels(const struct TexsetBundle *bundle,
                                       uint32_t material,
                                       uint32_t map,
                                       const float *uvs,
                                       size_t count,
                                       float lod,
                                       float *out,
                                       size_t out_len);

// The portable specialisation: f32, group 0, bindings from 0 (what `texset export-shader`
// writes by default).
struct TexsetGpuOptions texset_gpu_options_default(void);

// Makes the GPU decoder of `bundle` as `options` says (null: `texset_gpu_options_default()`).
//
// # Safety
// `bundle` must be a live bundle; `options` null or valid; `out` valid for a write.
enum TexsetStatus texset_gpu_model_new(const struct TexsetBundle *bundle,
                                       const struct TexsetGpuOptions *options,
                                       struct TexsetGpuModel **out);

// Frees a GPU model (null does nothing); the buffers it handed out die with it.
//
// # Safety
// `model` must be null or a model from `texset_gpu_model_new` not yet freed, unused by any
// running call.
void texset_gpu_model_free(struct TexsetGpuModel *model);

// `*out` = the model's buffers (owned by the model).
//
// # Safety
// `model` must be a live GPU model; `out` valid for a write.
enum TexsetStatus texset_gpu_buffers(const struct TexsetGpuModel *model,
                                     struct TexsetGpuBuffers *out);

// `*out` = the decoder's shader in `lang` (a `TexsetShaderLang`), bound as the model's options
// say, validated by naga. GLSL holds the one entry point `entry` (a `TexsetEntryPoint`); the
// other languages hold all four. The string is the caller's: free it with `texset_string_free`.
//
// # Safety
// `model` must be a live GPU model; `out` valid for a write.
enum TexsetStatus texset_gpu_shader(const struct TexsetGpuModel *model,
                                    uint32_t lang,
                                    uint32_t entry,
                                    char **out);

// Frees a string texset returned (null does nothing).
//
// # Safety
// `text` must be null or a string from `texset_gpu_shader`, freed once.
void texset_string_free(char *text);

// The 32 bytes of the `params` uniform for one dispatch: `sample_count` 0 decodes mip level
// `level` of the map whole (`cs_decode_map`, `fs_decode_map`); `sample_count` N > 0 decodes N
// samples at level of detail `level` (`cs_decode_samples`). `mode` is a `TexsetDecodeMode`.
//
// # Safety
// `model` must be a live GPU model; `out` valid for writes of 32 bytes.
enum TexsetStatus texset_gpu_params(const struct TexsetGpuModel *model,
                                    uint32_t material,
                                    uint32_t map,
                                    uint32_t level,
                                    uint32_t sample_count,
                                    uint32_t mode,
                                    uint8_t *out);

// The workgroups to dispatch (`groups[0..3]`) for `entry` on mip level `level` of a map
// (`TEXSET_ENTRY_POINT_DECODE_MAP`), or for `sample_count` samples
// (`TEXSET_ENTRY_POINT_DECODE_SAMPLES`). Fragment entry points draw one triangle over a target
// of the level's size instead and get an invalid-argument error here.
//
// # Safety
// `model` must be a live GPU model; `groups` valid for writes of three `uint32_t`.
enum TexsetStatus texset_gpu_dispatch(const struct TexsetGpuModel *model,
                                      uint32_t entry,
                                      uint32_t material,
                                      uint32_t map,
                                      uint32_t level,
                                      uint32_t sample_count,
                                      uint32_t *groups);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* TEXSET_H */
