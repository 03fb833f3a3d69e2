// Kernels of the `cuda` compute backend (dev.tandem.engine.cuda.CudaBackend).
//
// Compiled to PTX by build-ptx.sh beside this file; the PTX is committed as a resource and
// PtxFreshnessTest fails when it no longer matches this source. Every entry point is extern "C" so
// its name in the PTX is the name the host code looks up. Activations are row-major f32, one row
// per token; weights and KV entries stay in their stored type (f32, f16 or bf16) and are widened
// to f32 as they are read; every sum is f32.
//
// Launch shapes are computed by dev.tandem.engine.cuda.LaunchShapes (unit-tested on the host);
// the constants below must agree with it.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#ifdef __CUDACC__
#include <mma.h>  // the emulator (src/test/cuda/emulator.h) brings its own nvcuda::wmma
#endif

#define WARP 32
#define MATVEC_MAX_TOKENS 8     // LaunchShapes.MATVEC_MAX_TOKENS
#define MATVEC_THREADS 256      // 8 warps, one output row each
#define GEMM_TILE 64            // tokens and rows per GEMM block; 256 threads of 4 x 4 outputs
#define GEMM_K 16
#define ATTENTION_THREADS 128   // positions scored at once per (row, head); head dims <= 256
#define PREFILL_ROWS 32         // tiled attention: query rows of one sequence a block
#define PREFILL_KEYS 16         //   key positions staged at a time
#define PREFILL_THREADS 128     //   4 threads a query row
#define PREFILL_MAX_HEAD 128    //   its query tile and accumulators hold heads of up to 128 dims
#define TC_TILE 64              // tensor-core GEMM: 64 tokens x 64 rows a block of 4 warps
#define TC_K 32                 //   k-slice staged in shared memory
#define TC_PAD 8                //   row padding of the staged tiles (bank conflicts)
#define TC_THREADS 128          //   LaunchShapes.TC_THREADS

enum { DT_F32 = 0, DT_F16 = 1, DT_BF16 = 2 };  // DType's ordinals

template <int D>
__device__ __forceinline__ float widen(const void* base, size_t i) {
  if (D == DT_F32) {
    return static_cast<const float*>(base)[i];
  }
  uint16_t bits = static_cast<const uint16_t*>(base)[i];
  if (D == DT_BF16) {
    return __uint_as_float(static_cast<uint32_t>(bits) << 16);
  }
  return __half2float(__ushort_as_half(bits));
}

__device__ __forceinline__ float widen_half(uint32_t bits16, int d) {
  return d == DT_BF16 ? __uint_as_float(bits16 << 16) : __half2float(__ushort_as_half(static_cast<uint16_t>(bits16)));
}

// Eight consecutive elements from index i (a multiple of 8): two 128-bit loads for f32, one for
// 16-bit types.
template <int D>
__device__ __forceinline__ void widen8(const void* base, size_t i, float* w) {
  if (D == DT_F32) {
    const float4* p = reinterpret_cast<const float4*>(static_cast<const float*>(base) + i);
    float4 a = p[0];
    float4 b = p[1];
    w[0] = a.x; w[1] = a.y; w[2] = a.z; w[3] = a.w;
    w[4] = b.x; w[5] = b.y; w[6] = b.z; w[7] = b.w;
  } else {
    uint4 u = *reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(base) + i);
    uint32_t v[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int k = 0; k < 4; k++) {
      w[2 * k] = widen_half(v[k] & 0xffffu, D);
      w[2 * k + 1] = widen_half(v[k] >> 16, D);
    }
  }
}

// v as three bf16 terms whose sum carries 24 of its bits (hi + mid + lo): how the tensor-core
// kernels feed f32 activations and weights to bf16 MMAs without losing f32 precision.
__device__ __forceinline__ void split3(float v, __nv_bfloat16& hi, __nv_bfloat16& mid, __nv_bfloat16& lo) {
  hi = __float2bfloat16_rn(v);
  float rest = v - __bfloat162float(hi);
  mid = __float2bfloat16_rn(rest);
  lo = __float2bfloat16_rn(rest - __bfloat162float(mid));
}

// Reduces v over the block (blockDim.x a multiple of 32, at most 1024) with `op` (its identity
// fills the missing warps); every thread gets the result. All threads must call it.
struct Add {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// Reduces v over the warp with `op`; every lane gets the result.
template <typename Op>
__device__ __forceinline__ float warp_reduce(float v, Op op) {
#pragma unroll
  for (int o = WARP / 2; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) { return warp_reduce(v, Add()); }

template <typename Op>
__device__ float block_reduce(float v, Op op, float identity) {
  __shared__ float partial[WARP];
  __shared__ float total;
  int lane = threadIdx.x % WARP;
  int warp = threadIdx.x / WARP;
  v = warp_reduce(v, op);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float s = warp_reduce(lane < blockDim.x / WARP ? partial[lane] : identity, op);
    if (lane == 0) total = s;
  }
  __syncthreads();
  float result = total;
  __syncthreads();  // partial and total may be reused by the next call
  return result;
}

__device__ float block_sum(float v) { return block_reduce(v, Add(), 0.f); }
__device__ float block_max(float v) { return block_reduce(v, Max(), -INFINITY); }

// out[t * rows + r] = sum_i x[t * cols + i] * w[r * cols + i] for t < tokens (<= 8): one warp per
// output row, one pass over the weights (128-bit loads when cols is a multiple of 8).
// One output row per warp (not inlined: matvec and matvecs share one copy of it per type).
template <int D>
__device__ __noinline__ void matvec_row(const float* __restrict__ x, int tokens, const void* __restrict__ w, int rows, int cols,
                           float* __restrict__ out, int row) {
  int lane = threadIdx.x % WARP;
  float acc[MATVEC_MAX_TOKENS];
#pragma unroll
  for (int t = 0; t < MATVEC_MAX_TOKENS; t++) acc[t] = 0.f;
  size_t base = static_cast<size_t>(row) * cols;
  if ((cols & 7) == 0) {
    // Unrolled so that several 128-bit weight loads are in flight per lane: a row of a few
    // thousand columns is only a handful of iterations, and batch-1 decode lives on memory latency.
#pragma unroll 4
    for (int c = lane * 8; c < cols; c += WARP * 8) {
      float wv[8];
      widen8<D>(w, base + c, wv);
#pragma unroll
      for (int t = 0; t < MATVEC_MAX_TOKENS; t++) {
        if (t < tokens) {
          const float4* xr = reinterpret_cast<const float4*>(x + static_cast<size_t>(t) * cols + c);
          float4 a = xr[0];
          float4 b = xr[1];
          acc[t] += a.x * wv[0] + a.y * wv[1] + a.z * wv[2] + a.w * wv[3]
                  + b.x * wv[4] + b.y * wv[5] + b.z * wv[6] + b.w * wv[7];
        }
      }
    }
  } else {
    for (int c = lane; c < cols; c += WARP) {
      float wv = widen<D>(w, base + c);
#pragma unroll
      for (int t = 0; t < MATVEC_MAX_TOKENS; t++) {
        if (t < tokens) acc[t] += wv * x[static_cast<size_t>(t) * cols + c];
      }
    }
  }
#pragma unroll
  for (int t = 0; t < MATVEC_MAX_TOKENS; t++) {
    if (t < tokens) {
      float s = warp_sum(acc[t]);
      if (lane == 0) out[static_cast<size_t>(t) * rows + row] = s;
    }
  }
}

template <int D>
__device__ void matvec(const float* __restrict__ x, int tokens, const void* __restrict__ w, int rows, int cols,
                       float* __restrict__ out) {
  int row = (blockIdx.x * blockDim.x + threadIdx.x) / WARP;
  if (row < rows) matvec_row<D>(x, tokens, w, rows, cols, out, row);
}

extern "C" __global__ void matvec_f32(const float* x, int tokens, const void* w, int rows, int cols, float* out) {
  matvec<DT_F32>(x, tokens, w, rows, cols, out);
}
extern "C" __global__ void matvec_f16(const float* x, int tokens, const void* w, int rows, int cols, float* out) {
  matvec<DT_F16>(x, tokens, w, rows, cols, out);
}
extern "C" __global__ void matvec_bf16(const float* x, int tokens, const void* w, int rows, int cols, float* out) {
  matvec<DT_BF16>(x, tokens, w, rows, cols, out);
}

// The same product for up to three matrices of one input (q, k, v; gate, up) in one launch: warp
// row r < rows0 is row r of w0 into out0, the next rows1 those of w1, then w2's (rows2 may be 0).
// Each output row is computed exactly as matvec computes it.
template <int D>
__device__ void matvecs(const float* __restrict__ x, int tokens, const void* w0, int rows0, const void* w1, int rows1,
                        const void* w2, int rows2, int cols, float* out0, float* out1, float* out2) {
  int row = (blockIdx.x * blockDim.x + threadIdx.x) / WARP;
  if (row < rows0) {
    matvec_row<D>(x, tokens, w0, rows0, cols, out0, row);
  } else if (row < rows0 + rows1) {
    matvec_row<D>(x, tokens, w1, rows1, cols, out1, row - rows0);
  } else if (row < rows0 + rows1 + rows2) {
    matvec_row<D>(x, tokens, w2, rows2, cols, out2, row - rows0 - rows1);
  }
}

#define MATVECS_ENTRY(NAME, D)                                                                                 \
  extern "C" __global__ void NAME(const float* x, int tokens, const void* w0, int rows0, const void* w1,      \
                                  int rows1, const void* w2, int rows2, int cols, float* out0, float* out1,   \
                                  float* out2) {                                                              \
    matvecs<D>(x, tokens, w0, rows0, w1, rows1, w2, rows2, cols, out0, out1, out2);                          \
  }
MATVECS_ENTRY(matvecs_f32, DT_F32)
MATVECS_ENTRY(matvecs_f16, DT_F16)
MATVECS_ENTRY(matvecs_bf16, DT_BF16)

// The same product for many tokens: 64 x 64 output tiles through shared memory, 4 x 4 outputs a
// thread, weights widened to f32 as a tile is loaded. Grid (ceil(rows / 64), ceil(tokens / 64)).
template <int D>
__device__ void gemm(const float* __restrict__ x, int tokens, const void* __restrict__ w, int rows, int cols,
                     float* __restrict__ out) {
  __shared__ float xs[GEMM_K][GEMM_TILE + 1];
  __shared__ float ws[GEMM_K][GEMM_TILE + 1];
  int tx = threadIdx.x % 16;  // 4 output rows (weights) each
  int ty = threadIdx.x / 16;  // 4 tokens each
  int t0 = blockIdx.y * GEMM_TILE;
  int r0 = blockIdx.x * GEMM_TILE;
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int j = 0; j < 4; j++) acc[i][j] = 0.f;
  for (int k0 = 0; k0 < cols; k0 += GEMM_K) {
    for (int e = threadIdx.x; e < GEMM_TILE * GEMM_K; e += blockDim.x) {
      int i = e / GEMM_K;
      int kk = e % GEMM_K;
      int k = k0 + kk;
      int t = t0 + i;
      int r = r0 + i;
      xs[kk][i] = (t < tokens && k < cols) ? x[static_cast<size_t>(t) * cols + k] : 0.f;
      ws[kk][i] = (r < rows && k < cols) ? widen<D>(w, static_cast<size_t>(r) * cols + k) : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < GEMM_K; kk++) {
      float a[4];
      float b[4];
#pragma unroll
      for (int i = 0; i < 4; i++) {
        a[i] = xs[kk][ty * 4 + i];
        b[i] = ws[kk][tx * 4 + i];
      }
#pragma unroll
      for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; i++) {
    int t = t0 + ty * 4 + i;
    if (t >= tokens) continue;
#pragma unroll
    for (int j = 0; j < 4; j++) {
      int r = r0 + tx * 4 + j;
      if (r < rows) out[static_cast<size_t>(t) * rows + r] = acc[i][j];
    }
  }
}

extern "C" __global__ void gemm_f32(const float* x, int tokens, const void* w, int rows, int cols, float* out) {
  gemm<DT_F32>(x, tokens, w, rows, cols, out);
}
extern "C" __global__ void gemm_f16(const float* x, int tokens, const void* w, int rows, int cols, float* out) {
  gemm<DT_F16>(x, tokens, w, rows, cols, out);
}
extern "C" __global__ void gemm_bf16(const float* x, int tokens, const void* w, int rows, int cols, float* out) {
  gemm<DT_BF16>(x, tokens, w, rows, cols, out);
}

// The same product for many tokens on tensor cores, for bf16 weights: WMMA 16x16x16 tiles with f32
// accumulation. Activations are f32, so each is split into three bf16 terms (hi + mid + lo carry
// 24 of its bits) and each term multiplies the (exact) bf16 weights: three MMAs per tile give sums
// as close to f32 as the SIMT kernel's. A block of 4 warps computes 64 tokens x 64 rows, each warp
// a 32 x 32 quarter (2 x 2 fragments); the k dimension is staged 32 at a time. Grid
// (ceil(rows / 64), ceil(tokens / 64)), 128 threads.
extern "C" __global__ void gemm_tc_bf16(const float* __restrict__ x, int tokens, const void* __restrict__ w, int rows,
                                        int cols, float* __restrict__ out) {
  using namespace nvcuda;
  constexpr int LD = TC_K + TC_PAD;       // 40 bf16: a multiple of 8, as WMMA needs
  constexpr int LDC = TC_TILE + 4;        // 68 floats
  __shared__ __align__(32) __nv_bfloat16 xs[3][TC_TILE * LD];  // hi, mid, lo terms: [token][k]
  __shared__ __align__(32) __nv_bfloat16 ws[TC_TILE * LD];     // [row][k]: the B operand, column-major
  __shared__ __align__(32) float cs[TC_TILE * LDC];
  const uint16_t* wbits = static_cast<const uint16_t*>(w);
  int t0 = blockIdx.y * TC_TILE;
  int r0 = blockIdx.x * TC_TILE;
  int warp = threadIdx.x / WARP;
  int wt = (warp / 2) * 32;  // this warp's token offset in the tile
  int wr = (warp % 2) * 32;  // and row offset
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; i++)
#pragma unroll
    for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.f);
  // Rows 16-byte aligned (cols a multiple of 8): each thread moves 8 consecutive k at a time (two
  // 128-bit loads of activations, one of weights), and the next k-slice's loads are issued before
  // this slice's MMAs, so that they are in flight while the tensor cores work.
  bool vectors = (cols & 7) == 0;
  constexpr int GROUPS = TC_TILE * TC_K / 8 / TC_THREADS;  // 8-element groups a thread, per slice
  float4 xa[GROUPS], xb[GROUPS];
  uint4 wv[GROUPS];
  auto fetch = [&](int k0) {
#pragma unroll
    for (int g = 0; g < GROUPS; g++) {
      int e = threadIdx.x + g * TC_THREADS;
      int i = e / (TC_K / 8);
      int k = k0 + (e % (TC_K / 8)) * 8;
      int t = t0 + i;
      int r = r0 + i;
      xa[g] = make_float4(0.f, 0.f, 0.f, 0.f);
      xb[g] = xa[g];
      wv[g] = make_uint4(0, 0, 0, 0);
      if (t < tokens && k < cols) {
        const float4* p = reinterpret_cast<const float4*>(x + static_cast<size_t>(t) * cols + k);
        xa[g] = p[0];
        xb[g] = p[1];
      }
      if (r < rows && k < cols) wv[g] = *reinterpret_cast<const uint4*>(wbits + static_cast<size_t>(r) * cols + k);
    }
  };
  if (vectors) fetch(0);
  for (int k0 = 0; k0 < cols; k0 += TC_K) {
    if (vectors) {
      // This slice from registers into shared memory, each activation as three bf16 terms.
#pragma unroll
      for (int g = 0; g < GROUPS; g++) {
        int e = threadIdx.x + g * TC_THREADS;
        int i = e / (TC_K / 8);
        int kk = (e % (TC_K / 8)) * 8;
        float v[8] = {xa[g].x, xa[g].y, xa[g].z, xa[g].w, xb[g].x, xb[g].y, xb[g].z, xb[g].w};
#pragma unroll
        for (int n = 0; n < 8; n++) split3(v[n], xs[0][i * LD + kk + n], xs[1][i * LD + kk + n], xs[2][i * LD + kk + n]);
        *reinterpret_cast<uint4*>(ws + i * LD + kk) = wv[g];
      }
    } else {
      for (int e = threadIdx.x; e < TC_TILE * TC_K; e += blockDim.x) {
        int i = e / TC_K;
        int kk = e % TC_K;
        int k = k0 + kk;
        int t = t0 + i;
        int r = r0 + i;
        float v = (t < tokens && k < cols) ? x[static_cast<size_t>(t) * cols + k] : 0.f;
        split3(v, xs[0][i * LD + kk], xs[1][i * LD + kk], xs[2][i * LD + kk]);
        uint16_t bits = (r < rows && k < cols) ? wbits[static_cast<size_t>(r) * cols + k] : 0;
        ws[i * LD + kk] = __ushort_as_bfloat16(bits);
      }
    }
    __syncthreads();
    if (vectors && k0 + TC_K < cols) fetch(k0 + TC_K);
#pragma unroll
    for (int kk = 0; kk < TC_K; kk += 16) {
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b[2];
#pragma unroll
      for (int j = 0; j < 2; j++) wmma::load_matrix_sync(b[j], ws + (wr + 16 * j) * LD + kk, LD);
#pragma unroll
      for (int term = 0; term < 3; term++) {
#pragma unroll
        for (int i = 0; i < 2; i++) {
          wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
          wmma::load_matrix_sync(a, xs[term] + (wt + 16 * i) * LD + kk, LD);
#pragma unroll
          for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], a, b[j], acc[i][j]);
        }
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; i++)
#pragma unroll
    for (int j = 0; j < 2; j++)
      wmma::store_matrix_sync(cs + (wt + 16 * i) * LDC + wr + 16 * j, acc[i][j], LDC, wmma::mem_row_major);
  __syncthreads();
  for (int e = threadIdx.x; e < TC_TILE * TC_TILE; e += blockDim.x) {
    int i = e / TC_TILE;
    int j = e % TC_TILE;
    int t = t0 + i;
    int r = r0 + j;
    if (t < tokens && r < rows) out[static_cast<size_t>(t) * rows + r] = cs[i * LDC + j];
  }
}

// out = x / sqrt(mean(x^2) + eps) * weight, one block per row; out may be x.
extern "C" __global__ void rms_norm(const float* x, float* out, const float* weight, float eps, int dim) {
  const float* xr = x + static_cast<size_t>(blockIdx.x) * dim;
  float* o = out + static_cast<size_t>(blockIdx.x) * dim;
  float ss = 0.f;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) ss += xr[i] * xr[i];
  ss = block_sum(ss);
  float inv = 1.f / sqrtf(ss / dim + eps);
  for (int i = threadIdx.x; i < dim; i += blockDim.x) o[i] = xr[i] * inv * weight[i];
}

// x += b (a residual), then out = x / sqrt(mean(x^2) + eps) * weight: the add and the next
// sub-layer's norm in one launch, one block per row, with the same arithmetic as add then rms_norm.
extern "C" __global__ void add_rms_norm(float* x, const float* b, float* out, const float* weight, float eps, int dim) {
  float* xr = x + static_cast<size_t>(blockIdx.x) * dim;
  const float* br = b + static_cast<size_t>(blockIdx.x) * dim;
  float* o = out + static_cast<size_t>(blockIdx.x) * dim;
  float ss = 0.f;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    float v = xr[i] + br[i];
    xr[i] = v;
    ss += v * v;
  }
  ss = block_sum(ss);
  float inv = 1.f / sqrtf(ss / dim + eps);
  for (int i = threadIdx.x; i < dim; i += blockDim.x) o[i] = xr[i] * inv * weight[i];
}

// Rotary embedding, Hugging Face layout (element i pairs with i + headDim / 2), one thread per
// pair; the angle and its sine and cosine in double, as the CPU backends compute them.
extern "C" __global__ void rope(float* x, int rows, int heads, int headDim, const int* positions,
                                const float* invFreq) {
  int half = headDim / 2;
  long long n = static_cast<long long>(rows) * heads * half;
  long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n) return;
  int i = static_cast<int>(idx % half);
  long long rowHead = idx / half;
  int t = static_cast<int>(rowHead / heads);
  double angle = static_cast<double>(positions[t]) * static_cast<double>(invFreq[i]);
  double s;
  double c;
  sincos(angle, &s, &c);
  float* v = x + rowHead * headDim;
  double a = v[i];
  double b = v[i + half];
  v[i] = static_cast<float>(a * c - b * s);
  v[i + half] = static_cast<float>(b * c + a * s);
}

// gate[i] = silu(gate[i]) * up[i].
extern "C" __global__ void silu_mul(float* gate, const float* up, long long n) {
  long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float g = gate[i];
  gate[i] = g / (1.f + expf(-g)) * up[i];
}

// Causal attention of query rows over a paged KV cache laid out [block][slot][kvHead][headDim].
// One block of 128 threads per (row, head): positions are scored 128 at a time, with a running
// maximum and sum (online softmax), and each thread accumulates the weighted values of up to two
// head dimensions (headDim <= 256). Row t attends to positions 0..positions[t] through its block
// table tables[tableStart[t] ..]. With rowList, block b takes row rowList[b] (the rows not in a
// tiled run); without, block b takes row b.
//
// Split-K (flash decoding): with splits > 1 a row's context is cut into `splits` equal parts, one
// block each (grid y = heads x splits), so that a few long rows still fill the GPU; each part
// writes its running maximum, sum and unnormalised weighted values to partials[(b, h, split)]
// (headDim + 2 floats) and attention_combine merges them. With splits == 1 the block writes out.
template <int D>
__device__ void attention(const float* __restrict__ q, float* __restrict__ out, const int* __restrict__ positions,
                          const int* __restrict__ tables, const int* __restrict__ tableStart,
                          const int* __restrict__ rowList, const void* __restrict__ keys,
                          const void* __restrict__ values, int blockSize, int numHeads, int numKvHeads, int headDim,
                          int splits, float* __restrict__ partials) {
  __shared__ float qs[256];
  __shared__ float p[ATTENTION_THREADS];
  int t = rowList != nullptr ? rowList[blockIdx.x] : blockIdx.x;
  int h = blockIdx.y % numHeads;
  int split = blockIdx.y / numHeads;
  int g = h / (numHeads / numKvHeads);
  int kvDim = numKvHeads * headDim;
  const float* qr = q + (static_cast<size_t>(t) * numHeads + h) * headDim;
  for (int i = threadIdx.x; i < headDim; i += blockDim.x) qs[i] = qr[i];
  __syncthreads();
  const int* table = tables + tableStart[t];
  int total = positions[t] + 1;
  int chunk = (total + splits - 1) / splits;
  int from = min(total, split * chunk);  // this block's positions: from .. len - 1
  int len = min(total, from + chunk);
  float scale = 1.f / sqrtf(static_cast<float>(headDim));
  float running = -INFINITY;  // maximum score so far
  float sum = 0.f;            // sum of exp(score - running) so far
  float acc0 = 0.f;           // dimension threadIdx.x
  float acc1 = 0.f;           // dimension threadIdx.x + 128
  for (int start = from; start < len; start += ATTENTION_THREADS) {
    int pos = start + threadIdx.x;
    float score = -INFINITY;
    if (pos < len) {
      size_t entry = (static_cast<size_t>(table[pos / blockSize]) * blockSize + pos % blockSize) * kvDim
                     + static_cast<size_t>(g) * headDim;
      float dot = 0.f;
      for (int i = 0; i < headDim; i++) dot += qs[i] * widen<D>(keys, entry + i);
      score = dot * scale;
    }
    float next = fmaxf(running, block_max(score));
    float weight = pos < len ? expf(score - next) : 0.f;
    p[threadIdx.x] = weight;
    float rescale = expf(running - next);  // 0 on the first tile
    sum = sum * rescale + block_sum(weight);
    running = next;
    acc0 *= rescale;
    acc1 *= rescale;
    int count = min(ATTENTION_THREADS, len - start);
    for (int j = 0; j < count; j++) {
      int vp = start + j;
      size_t entry = (static_cast<size_t>(table[vp / blockSize]) * blockSize + vp % blockSize) * kvDim
                     + static_cast<size_t>(g) * headDim;
      float pj = p[j];
      if (threadIdx.x < headDim) acc0 += pj * widen<D>(values, entry + threadIdx.x);
      if (threadIdx.x + ATTENTION_THREADS < headDim) acc1 += pj * widen<D>(values, entry + threadIdx.x + ATTENTION_THREADS);
    }
    __syncthreads();  // p is rewritten by the next tile
  }
  if (splits > 1) {
    float* part = partials + ((static_cast<size_t>(blockIdx.x) * numHeads + h) * splits + split) * (headDim + 2);
    if (threadIdx.x == 0) {
      part[0] = running;  // -inf, with sum 0, for a part past the row's end
      part[1] = sum;
    }
    if (threadIdx.x < headDim) part[2 + threadIdx.x] = acc0;
    if (threadIdx.x + ATTENTION_THREADS < headDim) part[2 + threadIdx.x + ATTENTION_THREADS] = acc1;
    return;
  }
  float* o = out + (static_cast<size_t>(t) * numHeads + h) * headDim;
  if (threadIdx.x < headDim) o[threadIdx.x] = acc0 / sum;
  if (threadIdx.x + ATTENTION_THREADS < headDim) o[threadIdx.x + ATTENTION_THREADS] = acc1 / sum;
}

// Merges the split parts of attention's rows: out = sum_s exp(m_s - M) acc_s / sum_s exp(m_s - M)
// l_s, M the largest part maximum. Grid (listed rows, heads), 128 threads (two dims each).
extern "C" __global__ void attention_combine(float* out, const int* rowList, const float* partials, int numHeads,
                                             int headDim, int splits) {
  int t = rowList != nullptr ? rowList[blockIdx.x] : blockIdx.x;
  int h = blockIdx.y;
  const float* parts = partials + (static_cast<size_t>(blockIdx.x) * numHeads + h) * splits * (headDim + 2);
  float best = -INFINITY;
  for (int s = 0; s < splits; s++) best = fmaxf(best, parts[s * (headDim + 2)]);
  float total = 0.f;
  float acc0 = 0.f;
  float acc1 = 0.f;
  for (int s = 0; s < splits; s++) {
    const float* part = parts + s * (headDim + 2);
    if (part[0] == -INFINITY) continue;  // an empty part
    float w = expf(part[0] - best);
    total += w * part[1];
    if (threadIdx.x < headDim) acc0 += w * part[2 + threadIdx.x];
    if (threadIdx.x + ATTENTION_THREADS < headDim) acc1 += w * part[2 + threadIdx.x + ATTENTION_THREADS];
  }
  float* o = out + (static_cast<size_t>(t) * numHeads + h) * headDim;
  if (threadIdx.x < headDim) o[threadIdx.x] = acc0 / total;
  if (threadIdx.x + ATTENTION_THREADS < headDim) o[threadIdx.x + ATTENTION_THREADS] = acc1 / total;
}

// Causal attention for runs of query rows that are consecutive positions of one sequence (a
// prefill chunk), tiled as flash attention: a block takes up to 32 rows of a run and one head,
// stages the keys and values 16 positions at a time in shared memory (each read once for all its
// rows, not once per row), and keeps each row's running maximum, sum and weighted values. Four
// threads share a row: each scores 4 of the 16 staged keys and owns every fourth dimension of the
// output. tiles[2b] is the block's first row, tiles[2b + 1] its row count; the rows' positions and
// block table are those of the per-row kernel. Grid (tiles, heads), 128 threads, heads <= 128 dims.
template <int D>
__device__ void attention_tiled(const float* __restrict__ q, float* __restrict__ out, const int* __restrict__ positions,
                                const int* __restrict__ tables, const int* __restrict__ tableStart,
                                const int* __restrict__ tiles, const void* __restrict__ keys,
                                const void* __restrict__ values, int blockSize, int numHeads, int numKvHeads,
                                int headDim) {
  // One float of padding a row: the 8 rows and 4 key columns a warp reads at once fall in
  // different banks (unpadded, rows 128 floats apart shared one bank: 8-way conflicts).
  __shared__ float qs[PREFILL_ROWS][PREFILL_MAX_HEAD + 1];
  __shared__ float ks[PREFILL_KEYS][PREFILL_MAX_HEAD + 1];
  __shared__ float vs[PREFILL_KEYS][PREFILL_MAX_HEAD + 1];
  __shared__ float ps[PREFILL_ROWS][PREFILL_KEYS + 1];
  int first = tiles[2 * blockIdx.x];
  int count = tiles[2 * blockIdx.x + 1];
  int h = blockIdx.y;
  int g = h / (numHeads / numKvHeads);
  int kvDim = numKvHeads * headDim;
  int p0 = positions[first];
  const int* table = tables + tableStart[first];
  float scale = 1.f / sqrtf(static_cast<float>(headDim));
  for (int e = threadIdx.x; e < PREFILL_ROWS * headDim; e += blockDim.x) {
    int i = e / headDim;
    int d = e % headDim;
    qs[i][d] = i < count ? q[(static_cast<size_t>(first + i) * numHeads + h) * headDim + d] : 0.f;
  }
  int row = threadIdx.x / 4;   // this thread's query row in the tile
  int part = threadIdx.x % 4;  // its quarter: keys part, part + 4, ...; dims part, part + 4, ...
  int qp = p0 + row;           // the row's position
  float running = -INFINITY;
  float sum = 0.f;
  float acc[PREFILL_MAX_HEAD / 4];
#pragma unroll
  for (int k = 0; k < PREFILL_MAX_HEAD / 4; k++) acc[k] = 0.f;
  int end = p0 + count;  // keys 0 .. end - 1 cover every row of the tile
  for (int k0 = 0; k0 < end; k0 += PREFILL_KEYS) {
    __syncthreads();  // the previous tile's keys and weights are no longer read
    for (int e = threadIdx.x; e < PREFILL_KEYS * headDim; e += blockDim.x) {
      int j = e / headDim;
      int d = e % headDim;
      int kp = k0 + j;
      float kv = 0.f;
      float vv = 0.f;
      if (kp < end) {
        size_t entry = (static_cast<size_t>(table[kp / blockSize]) * blockSize + kp % blockSize) * kvDim
                       + static_cast<size_t>(g) * headDim + d;
        kv = widen<D>(keys, entry);
        vv = widen<D>(values, entry);
      }
      ks[j][d] = kv;
      vs[j][d] = vv;
    }
    __syncthreads();
    float score[PREFILL_KEYS / 4];
    float best = -INFINITY;
#pragma unroll
    for (int k = 0; k < PREFILL_KEYS / 4; k++) {
      int j = part + 4 * k;
      float dot = 0.f;
      for (int d = 0; d < headDim; d++) dot += qs[row][d] * ks[j][d];
      score[k] = (row < count && k0 + j <= qp) ? dot * scale : -INFINITY;
      best = fmaxf(best, score[k]);
    }
    best = fmaxf(best, __shfl_xor_sync(0xffffffffu, best, 1));
    best = fmaxf(best, __shfl_xor_sync(0xffffffffu, best, 2));
    float next = fmaxf(running, best);
    // A row with nothing to attend to yet in this tile keeps its state (exp of -inf is 0).
    float rescale = next == -INFINITY ? 1.f : expf(running - next);
    float partial = 0.f;
#pragma unroll
    for (int k = 0; k < PREFILL_KEYS / 4; k++) {
      float w = next == -INFINITY ? 0.f : expf(score[k] - next);
      ps[row][part + 4 * k] = w;
      partial += w;
    }
    partial += __shfl_xor_sync(0xffffffffu, partial, 1);
    partial += __shfl_xor_sync(0xffffffffu, partial, 2);
    sum = sum * rescale + partial;
    running = next;
    __syncthreads();  // the row's weights, written by its four threads, are all in ps
#pragma unroll
    for (int k = 0; k < PREFILL_MAX_HEAD / 4; k++) {
      int d = part + 4 * k;
      if (d < headDim) {
        float a = acc[k] * rescale;
        for (int j = 0; j < PREFILL_KEYS; j++) a += ps[row][j] * vs[j][d];
        acc[k] = a;
      }
    }
  }
  if (row < count) {
    float* o = out + (static_cast<size_t>(first + row) * numHeads + h) * headDim;
#pragma unroll
    for (int k = 0; k < PREFILL_MAX_HEAD / 4; k++) {
      int d = part + 4 * k;
      if (d < headDim) o[d] = acc[k] / sum;
    }
  }
}

// The tiled prefill attention on tensor cores, for a bf16 KV cache and heads of 16 to 128 dims in
// steps of 16: the same tiles and grid as attention_tiled (32 query rows of one sequence and one
// head a block of 4 warps), keys and values staged 16 positions at a time. WMMA fragments hide
// which thread holds which row, so the softmax takes two passes instead of rescaling running
// sums: the first finds each row's maximum score, the second forms the weights against it and
// accumulates weights x values in the fragments. Queries (f32) and weights (f32) each enter the
// MMAs as three bf16 terms over the exact bf16 keys and values, as in gemm_tc_bf16, so scores and
// outputs stay as close to f32 as the SIMT kernel's. Scores go through shared memory for the
// causal mask and the exponentials.
#define TCA_KEYS 16  // key positions staged at a time
extern "C" __global__ void attention_tiled_tc_bf16(const float* __restrict__ q, float* __restrict__ out,
                                                   const int* __restrict__ positions, const int* __restrict__ tables,
                                                   const int* __restrict__ tableStart, const int* __restrict__ tiles,
                                                   const void* __restrict__ keys, const void* __restrict__ values,
                                                   int blockSize, int numHeads, int numKvHeads, int headDim) {
  using namespace nvcuda;
  constexpr int LDQ = PREFILL_MAX_HEAD + 8;  // bf16 a staged row (a multiple of 8, as WMMA needs)
  constexpr int LDS = TCA_KEYS + 4;          // floats a score row
  constexpr int LDP = TCA_KEYS + 8;          // bf16 a weight row
  constexpr int LDO = PREFILL_MAX_HEAD + 4;  // floats an output row (the queries' space, reused)
  __shared__ __align__(32) __nv_bfloat16 qs[3][PREFILL_ROWS * LDQ];  // hi, mid, lo terms: [row][dim]
  __shared__ __align__(32) __nv_bfloat16 ks[TCA_KEYS * LDQ];         // [key][dim]: B of q.k, column-major
  __shared__ __align__(32) __nv_bfloat16 vs[TCA_KEYS * LDQ];         // [key][dim]: B of p.v, row-major
  __shared__ __align__(32) float ss[PREFILL_ROWS * LDS];             // scores [row][key]
  __shared__ __align__(32) __nv_bfloat16 ps[3][PREFILL_ROWS * LDP];  // weights as three terms [row][key]
  const uint16_t* kbits = static_cast<const uint16_t*>(keys);
  const uint16_t* vbits = static_cast<const uint16_t*>(values);
  int first = tiles[2 * blockIdx.x];
  int count = tiles[2 * blockIdx.x + 1];
  int h = blockIdx.y;
  int g = h / (numHeads / numKvHeads);
  int kvDim = numKvHeads * headDim;
  int p0 = positions[first];
  const int* table = tables + tableStart[first];
  float scale = 1.f / sqrtf(static_cast<float>(headDim));
  int warp = threadIdx.x / WARP;
  for (int e = threadIdx.x; e < PREFILL_ROWS * PREFILL_MAX_HEAD; e += blockDim.x) {
    int i = e / PREFILL_MAX_HEAD;
    int d = e % PREFILL_MAX_HEAD;
    float v = i < count && d < headDim ? q[(static_cast<size_t>(first + i) * numHeads + h) * headDim + d] : 0.f;
    split3(v, qs[0][i * LDQ + d], qs[1][i * LDQ + d], qs[2][i * LDQ + d]);
  }
  int row = threadIdx.x / 4;   // the score row this thread reads, with three others
  int part = threadIdx.x % 4;  // its keys in a staged tile: part, part + 4, ...
  int qp = p0 + row;
  bool valid = row < count;
  int end = p0 + count;  // keys 0 .. end - 1 cover every row of the tile
  // Stages keys (and values) k0 .. k0 + 15 as the cache holds them (bf16 bits), zero past the end.
  auto stage = [&](int k0, bool withValues) {
    for (int e = threadIdx.x; e < TCA_KEYS * PREFILL_MAX_HEAD; e += blockDim.x) {
      int j = e / PREFILL_MAX_HEAD;
      int d = e % PREFILL_MAX_HEAD;
      int kp = k0 + j;
      uint16_t kb = 0;
      uint16_t vb = 0;
      if (kp < end && d < headDim) {
        size_t entry = (static_cast<size_t>(table[kp / blockSize]) * blockSize + kp % blockSize) * kvDim
                       + static_cast<size_t>(g) * headDim + d;
        kb = kbits[entry];
        if (withValues) vb = vbits[entry];
      }
      ks[j * LDQ + d] = __ushort_as_bfloat16(kb);
      if (withValues) vs[j * LDQ + d] = __ushort_as_bfloat16(vb);
    }
  };
  // Scores of the staged keys for all 32 rows into ss: warps 0 and 1, 16 rows each.
  auto scores = [&]() {
    if (warp < 2) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.f);
      for (int d = 0; d < headDim; d += 16) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b;
        wmma::load_matrix_sync(b, ks + d, LDQ);
#pragma unroll
        for (int term = 0; term < 3; term++) {
          wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
          wmma::load_matrix_sync(a, qs[term] + warp * 16 * LDQ + d, LDQ);
          wmma::mma_sync(acc, a, b, acc);
        }
      }
      wmma::store_matrix_sync(ss + warp * 16 * LDS, acc, LDS, wmma::mem_row_major);
    }
  };
  // Pass 1: each row's largest score over the keys it may see.
  float best = -INFINITY;
  for (int k0 = 0; k0 < end; k0 += TCA_KEYS) {
    __syncthreads();  // the previous tile's keys and scores are no longer read
    stage(k0, false);
    __syncthreads();
    scores();
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TCA_KEYS / 4; k++) {
      int j = part + 4 * k;
      if (valid && k0 + j <= qp) best = fmaxf(best, ss[row * LDS + j] * scale);
    }
  }
  best = fmaxf(best, __shfl_xor_sync(0xffffffffu, best, 1));
  best = fmaxf(best, __shfl_xor_sync(0xffffffffu, best, 2));
  // Pass 2: the weights against that maximum, their sum, and weights x values in the fragments.
  // Warp w holds rows 16 (w / 2) .. + 15 and dims 64 (w % 2) .. + 63 of the output.
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> o[4];
#pragma unroll
  for (int f = 0; f < 4; f++) wmma::fill_fragment(o[f], 0.f);
  int oRow = (warp / 2) * 16;
  int oDim = (warp % 2) * 64;
  float sum = 0.f;
  for (int k0 = 0; k0 < end; k0 += TCA_KEYS) {
    __syncthreads();  // the previous tile's keys, values, scores and weights are no longer read
    stage(k0, true);
    __syncthreads();
    scores();
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TCA_KEYS / 4; k++) {
      int j = part + 4 * k;
      float w = valid && k0 + j <= qp ? expf(ss[row * LDS + j] * scale - best) : 0.f;
      sum += w;
      split3(w, ps[0][row * LDP + j], ps[1][row * LDP + j], ps[2][row * LDP + j]);
    }
    __syncthreads();
#pragma unroll
    for (int f = 0; f < 4; f++) {
      if (oDim + 16 * f < headDim) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b;
        wmma::load_matrix_sync(b, vs + oDim + 16 * f, LDQ);
#pragma unroll
        for (int term = 0; term < 3; term++) {
          wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
          wmma::load_matrix_sync(a, ps[term] + oRow * LDP, LDP);
          wmma::mma_sync(o[f], a, b, o[f]);
        }
      }
    }
  }
  sum += __shfl_xor_sync(0xffffffffu, sum, 1);
  sum += __shfl_xor_sync(0xffffffffu, sum, 2);
  __syncthreads();  // every MMA has read the queries' space: it now takes the output
  float* os = reinterpret_cast<float*>(qs);
#pragma unroll
  for (int f = 0; f < 4; f++) {
    if (oDim + 16 * f < headDim) wmma::store_matrix_sync(os + oRow * LDO + oDim + 16 * f, o[f], LDO, wmma::mem_row_major);
  }
  __syncthreads();
  if (valid) {
    float* dst = out + (static_cast<size_t>(first + row) * numHeads + h) * headDim;
    for (int d = part; d < headDim; d += 4) dst[d] = os[row * LDO + d] / sum;
  }
}

#define ATTENTION_TILED_ENTRY(NAME, D)                                                                          \
  extern "C" __global__ void NAME(const float* q, float* out, const int* positions, const int* tables,          \
                                  const int* tableStart, const int* tiles, const void* keys, const void* values, \
                                  int blockSize, int numHeads, int numKvHeads, int headDim) {                   \
    attention_tiled<D>(q, out, positions, tables, tableStart, tiles, keys, values, blockSize, numHeads,         \
                       numKvHeads, headDim);                                                                    \
  }
ATTENTION_TILED_ENTRY(attention_tiled_f32, DT_F32)
ATTENTION_TILED_ENTRY(attention_tiled_f16, DT_F16)
ATTENTION_TILED_ENTRY(attention_tiled_bf16, DT_BF16)

#define ATTENTION_ENTRY(NAME, D)                                                                          \
  extern "C" __global__ void NAME(const float* q, float* out, const int* positions, const int* tables,   \
                                  const int* tableStart, const int* rowList, const void* keys,           \
                                  const void* values, int blockSize, int numHeads, int numKvHeads,       \
                                  int headDim, int splits, float* partials) {                            \
    attention<D>(q, out, positions, tables, tableStart, rowList, keys, values, blockSize, numHeads,      \
                 numKvHeads, headDim, splits, partials);                                                 \
  }
ATTENTION_ENTRY(attention_f32, DT_F32)
ATTENTION_ENTRY(attention_f16, DT_F16)
ATTENTION_ENTRY(attention_bf16, DT_BF16)

// ---- The device-resident forward pass (dev.tandem.engine.builtin.CudaTransformer) ----

// out[t, :] = widen(table[ids[t], :]), one thread per element.
template <int D>
__device__ void embed(const int* __restrict__ ids, int tokens, const void* __restrict__ table, int hidden,
                      float* __restrict__ out) {
  long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= static_cast<long long>(tokens) * hidden) return;
  int t = static_cast<int>(e / hidden);
  int i = static_cast<int>(e % hidden);
  out[e] = widen<D>(table, static_cast<size_t>(ids[t]) * hidden + i);
}
extern "C" __global__ void embed_f32(const int* ids, int tokens, const void* table, int hidden, float* out) {
  embed<DT_F32>(ids, tokens, table, hidden, out);
}
extern "C" __global__ void embed_f16(const int* ids, int tokens, const void* table, int hidden, float* out) {
  embed<DT_F16>(ids, tokens, table, hidden, out);
}
extern "C" __global__ void embed_bf16(const int* ids, int tokens, const void* table, int hidden, float* out) {
  embed<DT_BF16>(ids, tokens, table, hidden, out);
}

// a[i] += b[i % period] for i < n: a residual (period = n) or a bias added to every row (period =
// the row's length).
extern "C" __global__ void add(float* a, const float* b, long long n, int period) {
  long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  a[i] += b[i % period];
}

// f32 to a 16-bit type's bits, rounding to nearest even exactly as DType.narrow does on the host
// (a NaN keeps its sign and, folded, its significand), so device and host caches hold the same bits.
template <int D>
__device__ __forceinline__ uint16_t narrow(float v) {
  uint32_t bits = __float_as_uint(v);
  if (D == DT_F16) {
    if (isnan(v)) {  // Java's Float.floatToFloat16: the sign, and the significand's bits folded in
      return static_cast<uint16_t>(((bits & 0x80000000u) >> 16) | 0x7c00u | ((bits & 0x007fe000u) >> 13)
                                   | ((bits & 0x00001ff0u) >> 4) | (bits & 0x0000000fu));
    }
    return __half_as_ushort(__float2half_rn(v));
  }
  if (isnan(v)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

// Stores row t's keys and values (kvDim each) at cache slot slots[t] (block * blockSize + slot),
// in the device cache and, through mapped memory, in the host cache (hostKeys/hostValues may be
// null: device only). One thread per element.
template <int D>
__device__ void kv_write(const float* __restrict__ k, const float* __restrict__ v, const int* __restrict__ slots,
                         int rows, int kvDim, void* keys, void* values, void* hostKeys, void* hostValues) {
  long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= static_cast<long long>(rows) * kvDim) return;
  int t = static_cast<int>(e / kvDim);
  int i = static_cast<int>(e % kvDim);
  size_t at = static_cast<size_t>(slots[t]) * kvDim + i;
  if (D == DT_F32) {
    float kv = k[e];
    float vv = v[e];
    static_cast<float*>(keys)[at] = kv;
    static_cast<float*>(values)[at] = vv;
    if (hostKeys != nullptr) {
      static_cast<float*>(hostKeys)[at] = kv;
      static_cast<float*>(hostValues)[at] = vv;
    }
  } else {
    uint16_t kb = narrow<D>(k[e]);
    uint16_t vb = narrow<D>(v[e]);
    static_cast<uint16_t*>(keys)[at] = kb;
    static_cast<uint16_t*>(values)[at] = vb;
    if (hostKeys != nullptr) {
      static_cast<uint16_t*>(hostKeys)[at] = kb;
      static_cast<uint16_t*>(hostValues)[at] = vb;
    }
  }
}
extern "C" __global__ void kv_write_f32(const float* k, const float* v, const int* slots, int rows, int kvDim, void* keys,
                                        void* values, void* hostKeys, void* hostValues) {
  kv_write<DT_F32>(k, v, slots, rows, kvDim, keys, values, hostKeys, hostValues);
}
extern "C" __global__ void kv_write_f16(const float* k, const float* v, const int* slots, int rows, int kvDim, void* keys,
                                        void* values, void* hostKeys, void* hostValues) {
  kv_write<DT_F16>(k, v, slots, rows, kvDim, keys, values, hostKeys, hostValues);
}
extern "C" __global__ void kv_write_bf16(const float* k, const float* v, const int* slots, int rows, int kvDim, void* keys,
                                         void* values, void* hostKeys, void* hostValues) {
  kv_write<DT_BF16>(k, v, slots, rows, kvDim, keys, values, hostKeys, hostValues);
}

// Copies whole cache blocks blocks[0..count) from src to dst (both [block][blockBytes]), 16 bytes a
// thread: the blocks a KV import wrote into the host cache, read through mapped memory.
extern "C" __global__ void copy_blocks(const uint4* src, uint4* dst, const int* blocks, int count, int blockVectors) {
  long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= static_cast<long long>(count) * blockVectors) return;
  int b = static_cast<int>(e / blockVectors);
  int i = static_cast<int>(e % blockVectors);
  size_t at = static_cast<size_t>(blocks[b]) * blockVectors + i;
  dst[at] = src[at];
}

// out[j, :] = x[rows[j], :] for j < count, one thread per element.
extern "C" __global__ void gather_rows(const float* x, const int* rows, int count, int hidden, float* out) {
  long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= static_cast<long long>(count) * hidden) return;
  int j = static_cast<int>(e / hidden);
  int i = static_cast<int>(e % hidden);
  out[e] = x[static_cast<size_t>(rows[j]) * hidden + i];
}
