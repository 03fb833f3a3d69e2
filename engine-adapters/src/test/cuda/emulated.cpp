// tandem.cu's kernels on the CPU, as a shared library the tests call through Java's FFM API
// (dev.tandem.engine.cuda.KernelEmulator): emu_NAME(gridX, gridY, block, the kernel's arguments).
#include "emulator.h"
#include "tandem.cu"

#define EXPORT(NAME, PARAMS, ARGS) \
  extern "C" void emu_##NAME(int gx, int gy, int block, PARAMS) { emu::launch(gx, gy, block, [&] { NAME ARGS; }); }
#define P(...) __VA_ARGS__

#define MATMUL(NAME) \
  EXPORT(NAME, P(const float* x, int tokens, const void* w, int rows, int cols, float* out), (x, tokens, w, rows, cols, out))
MATMUL(matvec_f32)
MATMUL(matvec_f16)
MATMUL(matvec_bf16)
MATMUL(gemm_f32)
MATMUL(gemm_f16)
MATMUL(gemm_bf16)
MATMUL(gemm_tc_bf16)
EXPORT(rms_norm, P(const float* x, float* out, const float* weight, float eps, int dim), (x, out, weight, eps, dim))
EXPORT(add_rms_norm, P(float* x, const float* b, float* out, const float* weight, float eps, int dim),
       (x, b, out, weight, eps, dim))
#define MATVECS(NAME)                                                                                           \
  EXPORT(NAME, P(const float* x, int tokens, const void* w0, int rows0, const void* w1, int rows1, const void* w2, \
                 int rows2, int cols, float* out0, float* out1, float* out2),                                    \
         (x, tokens, w0, rows0, w1, rows1, w2, rows2, cols, out0, out1, out2))
MATVECS(matvecs_f32)
MATVECS(matvecs_f16)
MATVECS(matvecs_bf16)
EXPORT(rope, P(float* x, int rows, int heads, int headDim, const int* positions, const float* invFreq),
       (x, rows, heads, headDim, positions, invFreq))
EXPORT(silu_mul, P(float* gate, const float* up, long long n), (gate, up, n))
#define ATTENTION(NAME)                                                                                        \
  EXPORT(NAME, P(const float* q, float* out, const int* positions, const int* tables, const int* tableStart,   \
                 const int* rows, const void* keys, const void* values, int blockSize, int numHeads,           \
                 int numKvHeads, int headDim),                                                                 \
         (q, out, positions, tables, tableStart, rows, keys, values, blockSize, numHeads, numKvHeads, headDim))
#define ATTENTION_SPLIT(NAME)                                                                                  \
  EXPORT(NAME, P(const float* q, float* out, const int* positions, const int* tables, const int* tableStart,   \
                 const int* rows, const void* keys, const void* values, int blockSize, int numHeads,           \
                 int numKvHeads, int headDim, int splits, float* partials),                                    \
         (q, out, positions, tables, tableStart, rows, keys, values, blockSize, numHeads, numKvHeads, headDim, \
          splits, partials))
ATTENTION_SPLIT(attention_f32)
ATTENTION_SPLIT(attention_f16)
ATTENTION_SPLIT(attention_bf16)
EXPORT(attention_combine, P(float* out, const int* rows, const float* partials, int numHeads, int headDim, int splits),
       (out, rows, partials, numHeads, headDim, splits))
ATTENTION(attention_tiled_f32)
ATTENTION(attention_tiled_f16)
ATTENTION(attention_tiled_bf16)
ATTENTION(attention_tiled_tc_bf16)
#define EMBED(NAME) \
  EXPORT(NAME, P(const int* ids, int tokens, const void* table, int hidden, float* out), (ids, tokens, table, hidden, out))
EMBED(embed_f32)
EMBED(embed_f16)
EMBED(embed_bf16)
EXPORT(add, P(float* a, const float* b, long long n, int period), (a, b, n, period))
#define KV_WRITE(NAME)                                                                                     \
  EXPORT(NAME, P(const float* k, const float* v, const int* slots, int rows, int kvDim, void* keys, void* values, \
                 void* hostKeys, void* hostValues),                                                        \
         (k, v, slots, rows, kvDim, keys, values, hostKeys, hostValues))
KV_WRITE(kv_write_f32)
KV_WRITE(kv_write_f16)
KV_WRITE(kv_write_bf16)
EXPORT(copy_blocks, P(const uint4* src, uint4* dst, const int* blocks, int count, int blockVectors),
       (src, dst, blocks, count, blockVectors))
EXPORT(gather_rows, P(const float* x, const int* rows, int count, int hidden, float* out), (x, rows, count, hidden, out))
