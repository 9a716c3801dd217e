/*
 * The C API from C: decodes every map of a bundle into files the Rust test compares with texset's
 * own decoder, writes the GPU decoder's shaders and buffers, and feeds the API truncated and
 * corrupt bundles and bad arguments, expecting error codes and messages, never a crash.
 * Built with AddressSanitizer and UBSan by tests/c_program.rs (the C side only: the stable Rust
 * toolchain cannot instrument the library).
 *
 * Usage: check BUNDLE OUT_DIR    (exit 0 when every check passed)
 */
#include "texset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond, ...)                                 \
  do {                                                   \
    if (!(cond)) {                                       \
      fprintf(stderr, "check.c:%d: FAILED: ", __LINE__); \
      fprintf(stderr, __VA_ARGS__);                      \
      fprintf(stderr, " [%s]\n", texset_last_error());   \
      failures++;                                        \
    }                                                    \
  } while (0)

static int write_file(const char *dir, const char *name, const void *data, size_t len) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  size_t n = fwrite(data, 1, len, f);
  return fclose(f) == 0 && n == len;
}

static unsigned char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *data = malloc(size > 0 ? (size_t)size : 1);
  if (data && fread(data, 1, (size_t)size, f) != (size_t)size) {
    free(data);
    data = NULL;
  }
  fclose(f);
  *len = (size_t)size;
  return data;
}

/* Every level of every map in the three texel formats, and 64 texels at random access. */
static void decode_everything(const TexsetBundle *bundle, const char *out_dir) {
  static const char *suffix[3] = {"u8", "u16", "f32"};
  uint32_t materials = 0;
  CHECK(texset_bundle_material_count(bundle, &materials) == TEXSET_STATUS_OK, "material count");
  for (uint32_t m = 0; m < materials; m++) {
    const char *name = NULL;
    CHECK(texset_material_name(bundle, m, &name) == TEXSET_STATUS_OK && name && name[0], "material %u name", m);
    uint32_t maps = 0;
    CHECK(texset_material_map_count(bundle, m, &maps) == TEXSET_STATUS_OK && maps > 0, "material %u maps", m);
    for (uint32_t k = 0; k < maps; k++) {
      TexsetMapInfo info;
      CHECK(texset_map_info(bundle, m, k, &info) == TEXSET_STATUS_OK, "map %u/%u info", m, k);
      CHECK(info.channels >= 1 && info.channels <= 4 && info.mip_levels >= 1, "map %u/%u shape", m, k);
      CHECK(info.source_file && info.source_file[0], "map %u/%u source file", m, k);
      for (uint32_t level = 0; level < info.mip_levels; level++) {
        for (uint32_t format = 0; format < 3; format++) {
          uint32_t w = 0, h = 0;
          size_t bytes = 0;
          CHECK(texset_map_level_bytes(bundle, m, k, level, format, &w, &h, &bytes) == TEXSET_STATUS_OK, "level size");
          CHECK(bytes == (size_t)w * h * info.channels * (format == 0 ? 1 : format == 1 ? 2 : 4), "level bytes");
          unsigned char *texels = malloc(bytes);
          CHECK(texels != NULL, "malloc");
          if (!texels) continue;
          /* One byte short is refused, naming the size. */
          CHECK(texset_decode_map_level(bundle, m, k, level, format, texels, bytes - 1) == TEXSET_STATUS_BUFFER_TOO_SMALL,
                "a short buffer is refused");
          CHECK(strstr(texset_last_error(), "bytes") != NULL, "the message names the size");
          CHECK(texset_decode_map_level(bundle, m, k, level, format, texels, bytes) == TEXSET_STATUS_OK, "decode %u/%u/%u", m, k, level);
          char file[256];
          snprintf(file, sizeof file, "map_%u_%u_%u.%s", m, k, level, suffix[format]);
          CHECK(write_file(out_dir, file, texels, bytes), "write %s", file);
          free(texels);
        }
      }
      /* Random access: 64 texels on a fixed pattern, at levels of detail 0 and 0.5. */
      float uvs[128];
      for (int i = 0; i < 64; i++) {
        uvs[2 * i] = (float)((i * 37) % 64) / 64.0f + 0.003f;
        uvs[2 * i + 1] = (float)((i * 11) % 64) / 64.0f + 0.007f;
      }
      float lods[2] = {0.0f, 0.5f};
      for (int l = 0; l < 2; l++) {
        float out[256];
        CHECK(texset_decode_texels(bundle, m, k, uvs, 64, lods[l], out, 64 * info.channels) == TEXSET_STATUS_OK, "texels");
        char file[256];
        snprintf(file, sizeof file, "texels_%u_%u_%d.f32", m, k, l);
        CHECK(write_file(out_dir, file, out, 64 * info.channels * sizeof(float)), "write %s", file);
      }
    }
  }
}

/* The GPU decoder's buffers, params and shaders, for the Rust test and glslangValidator. */
static void gpu(const TexsetBundle *bundle, const char *out_dir) {
  TexsetGpuModel *model = NULL;
  CHECK(texset_gpu_model_new(bundle, NULL, &model) == TEXSET_STATUS_OK && model, "gpu model");
  if (!model) return;
  TexsetGpuBuffers buffers;
  CHECK(texset_gpu_buffers(model, &buffers) == TEXSET_STATUS_OK, "gpu buffers");
  CHECK(buffers.params_bytes == 32 && buffers.block >= 1, "buffer facts");
  CHECK(write_file(out_dir, "latents.bin", buffers.latents, buffers.latents_bytes), "latents");
  CHECK(write_file(out_dir, "mlp.bin", buffers.mlp, buffers.mlp_bytes), "mlp");
  unsigned char params[32];
  CHECK(texset_gpu_params(model, 0, 0, 0, 0, TEXSET_DECODE_MODE_STORED, params) == TEXSET_STATUS_OK, "params");
  CHECK(write_file(out_dir, "params_0_0_0.bin", params, sizeof params), "params file");
  uint32_t groups[3] = {0, 0, 0};
  CHECK(texset_gpu_dispatch(model, TEXSET_ENTRY_POINT_DECODE_MAP, 0, 0, 0, 0, groups) == TEXSET_STATUS_OK, "dispatch");
  CHECK(write_file(out_dir, "dispatch_0_0_0.bin", groups, sizeof groups), "dispatch file");
  CHECK(texset_gpu_dispatch(model, TEXSET_ENTRY_POINT_FRAGMENT_DECODE, 0, 0, 0, 0, groups) == TEXSET_STATUS_INVALID_ARGUMENT,
        "fragment entry points are not dispatched");

  static const struct {
    uint32_t lang, entry;
    const char *file;
  } shaders[] = {
      {TEXSET_SHADER_LANG_GLSL, TEXSET_ENTRY_POINT_DECODE_MAP, "decode_map.comp"},
      {TEXSET_SHADER_LANG_GLSL, TEXSET_ENTRY_POINT_FRAGMENT_DECODE, "decode_map.frag"},
      {TEXSET_SHADER_LANG_HLSL, TEXSET_ENTRY_POINT_DECODE_MAP, "decoder.hlsl"},
      {TEXSET_SHADER_LANG_WGSL, TEXSET_ENTRY_POINT_DECODE_MAP, "decoder.wgsl"},
      {TEXSET_SHADER_LANG_MSL, TEXSET_ENTRY_POINT_DECODE_MAP, "decoder.metal"},
  };
  for (size_t i = 0; i < sizeof shaders / sizeof shaders[0]; i++) {
    char *source = NULL;
    CHECK(texset_gpu_shader(model, shaders[i].lang, shaders[i].entry, &source) == TEXSET_STATUS_OK && source, "%s", shaders[i].file);
    if (source) {
      CHECK(write_file(out_dir, shaders[i].file, source, strlen(source)), "write %s", shaders[i].file);
      texset_string_free(source);
    }
  }
  char *none = NULL;
  CHECK(texset_gpu_shader(model, 9, 0, &none) == TEXSET_STATUS_INVALID_ARGUMENT && none == NULL, "an unknown language");
  TexsetGpuOptions f16 = texset_gpu_options_default();
  f16.precision = TEXSET_PRECISION_F16;
  TexsetGpuModel *half = NULL;
  CHECK(texset_gpu_model_new(bundle, &f16, &half) == TEXSET_STATUS_OK, "f16 model");
  CHECK(texset_gpu_shader(half, TEXSET_SHADER_LANG_GLSL, 0, &none) == TEXSET_STATUS_SHADER && none == NULL, "f16 GLSL is refused");
  CHECK(strstr(texset_last_error(), "GLSL") != NULL, "the message says why");
  texset_gpu_model_free(half);
  texset_gpu_model_free(model);
}

/* Bad input: every answer is an error code with a message, never a crash (ASan watches). */
static void bad_input(const unsigned char *bytes, size_t len, const TexsetBundle *good) {
  TexsetBundle *bundle = NULL;
  CHECK(texset_bundle_open_memory(NULL, 10, NULL, &bundle) == TEXSET_STATUS_NULL_ARGUMENT && !bundle, "null data");
  CHECK(texset_bundle_open_memory(bytes, len, NULL, NULL) == TEXSET_STATUS_NULL_ARGUMENT, "null out");
  CHECK(texset_bundle_open_path("/nonexistent/x.texset", NULL, &bundle) == TEXSET_STATUS_IO && !bundle, "missing file");
  CHECK(strstr(texset_last_error(), "/nonexistent/x.texset") != NULL, "the message names the file");

  /* Truncated: every length up to 64 bytes, then every 97th. */
  int refused = 0, tried = 0;
  for (size_t cut = 0; cut < len; cut += cut < 64 ? 1 : 97) {
    /* A copy of exactly `cut` bytes, so that ASan sees any read past its end. */
    unsigned char *copy = malloc(cut ? cut : 1);
    memcpy(copy, bytes, cut);
    TexsetStatus status = texset_bundle_open_memory(copy, cut, NULL, &bundle);
    tried++;
    refused += status == TEXSET_STATUS_BAD_BUNDLE && !bundle && texset_last_error()[0];
    free(copy);
  }
  CHECK(refused == tried, "truncated bundles: %d of %d refused as bad", refused, tried);

  /* Corrupt: one byte flipped at each of 200 places; what still opens must decode. */
  unsigned char *copy = malloc(len);
  int opened = 0;
  for (int i = 0; i < 200; i++) {
    memcpy(copy, bytes, len);
    size_t at = ((size_t)i * 7919u) % len;
    copy[at] ^= 0x5a;
    TexsetStatus status = texset_bundle_open_memory(copy, len, NULL, &bundle);
    if (status == TEXSET_STATUS_OK) {
      opened++;
      TexsetMapInfo info;
      if (texset_map_info(bundle, 0, 0, &info) == TEXSET_STATUS_OK) {
        float texel[4];
        float uv[2] = {0.5f, 0.5f};
        CHECK(texset_decode_texels(bundle, 0, 0, uv, 1, 0.0f, texel, 4) == TEXSET_STATUS_OK, "a bundle that opens decodes");
      }
      texset_bundle_free(bundle);
      bundle = NULL;
    } else {
      CHECK(status == TEXSET_STATUS_BAD_BUNDLE && texset_last_error()[0], "a flipped byte at %zu: status %d", at, (int)status);
    }
  }
  free(copy);
  printf("corrupt bundles: %d of 200 still opened (a flipped byte in padding or a name), the rest refused\n", opened);

  /* Limits, arguments, buffers. */
  TexsetOpenOptions tight = texset_open_options_default();
  tight.limits.max_decoded_bytes = 1;
  CHECK(texset_bundle_open_memory(bytes, len, &tight, &bundle) == TEXSET_STATUS_OVER_LIMIT && !bundle, "over the decode limit");
  tight = texset_open_options_default();
  tight.limits.max_bundle_bytes = len - 1;
  CHECK(texset_bundle_open_memory(bytes, len, &tight, &bundle) == TEXSET_STATUS_OVER_LIMIT && !bundle, "over the size limit");
  uint32_t count = 0;
  CHECK(texset_material_map_count(good, 1000000, &count) == TEXSET_STATUS_INVALID_ARGUMENT, "no such material");
  CHECK(texset_material_map_count(NULL, 0, &count) == TEXSET_STATUS_NULL_ARGUMENT, "null bundle");
  TexsetMapInfo info;
  CHECK(texset_map_info(good, 0, 1000, &info) == TEXSET_STATUS_INVALID_ARGUMENT, "no such map");
  unsigned char texel[16];
  CHECK(texset_decode_map_level(good, 0, 0, 99, 0, texel, sizeof texel) == TEXSET_STATUS_INVALID_ARGUMENT, "no such level");
  CHECK(texset_decode_map_level(good, 0, 0, 0, 7, texel, sizeof texel) == TEXSET_STATUS_INVALID_ARGUMENT, "no such format");
  float uv[2] = {0.0f / 0.0f, 0.5f}, out[4];
  CHECK(texset_decode_texels(good, 0, 0, uv, 1, 0.0f, out, 4) == TEXSET_STATUS_INVALID_ARGUMENT, "a NaN coordinate");
  CHECK(texset_decode_texels(good, 0, 0, uv, 1, 0.0f, out, 0) == TEXSET_STATUS_BUFFER_TOO_SMALL, "no room for the texel");
  texset_bundle_free(NULL);
  texset_string_free(NULL);
  texset_gpu_model_free(NULL);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s BUNDLE OUT_DIR\n", argv[0]);
    return 2;
  }
  CHECK(texset_version() == TEXSET_VERSION, "the library's version is the header's");
  TexsetOpenOptions options = texset_open_options_default();
  options.decode_threads = 2;
  TexsetBundle *bundle = NULL;
  CHECK(texset_bundle_open_path(argv[1], &options, &bundle) == TEXSET_STATUS_OK && bundle, "open %s", argv[1]);
  if (!bundle) return 1;
  decode_everything(bundle, argv[2]);
  gpu(bundle, argv[2]);

  /* The same bytes from memory decode the same texels. */
  size_t len = 0;
  unsigned char *bytes = read_file(argv[1], &len);
  CHECK(bytes != NULL, "read %s", argv[1]);
  if (bytes) {
    TexsetBundle *from_memory = NULL;
    CHECK(texset_bundle_open_memory(bytes, len, NULL, &from_memory) == TEXSET_STATUS_OK, "open from memory");
    uint32_t w = 0, h = 0;
    size_t n = 0;
    texset_map_level_bytes(bundle, 0, 0, 0, TEXSET_TEXEL_FORMAT_FLOAT32, &w, &h, &n);
    float *a = malloc(n), *b = malloc(n);
    CHECK(texset_decode_map_level(bundle, 0, 0, 0, TEXSET_TEXEL_FORMAT_FLOAT32, a, n) == TEXSET_STATUS_OK &&
              texset_decode_map_level(from_memory, 0, 0, 0, TEXSET_TEXEL_FORMAT_FLOAT32, b, n) == TEXSET_STATUS_OK &&
              memcmp(a, b, n) == 0,
          "memory and path decode alike");
    free(a);
    free(b);
    texset_bundle_free(from_memory);
    bad_input(bytes, len, bundle);
    free(bytes);
  }
  texset_bundle_free(bundle);
  if (failures) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("all checks passed\n");
  return 0;
}
