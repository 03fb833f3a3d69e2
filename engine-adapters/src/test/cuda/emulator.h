// CUDA's built-ins on the CPU, so that tandem.cu's kernels compile with g++ and run in tests on
// machines without a GPU (dev.tandem.engine.cuda.KernelEmulator). Each CUDA thread of a block is a
// fiber on the calling OS thread (switched by a few instructions on x86-64, by ucontext elsewhere), run in turn until it finishes or waits: at
// __syncthreads (a barrier of the block) or in a warp shuffle (two barriers of the warp around an
// exchange through a per-warp array). A thread that returns drops out of its barriers, as an exited
// CUDA thread no longer holds up the others. Blocks run one after another, so a __shared__
// variable (a function-local static here) belongs to one block at a time. Faithful, not fast.
#pragma once

#include <ucontext.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>  // also brings CUDA's vector_types.h: dim3, uint4, float4

#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __shared__ static

namespace emu {
struct Barrier {
  int expected = 0;
  int arrived = 0;
  long generation = 0;
};

struct Fiber {
  void* sp = nullptr;  // saved stack pointer (x86-64 switch)
  ucontext_t context;  // elsewhere
  std::unique_ptr<char[]> stack;
  bool done = false;
};

constexpr size_t kStack = 256 * 1024;

struct State {
  std::vector<Fiber> fibers;
  void* schedulerSp = nullptr;
  ucontext_t scheduler;
  int running = 0;
  Barrier blockBarrier;
  std::vector<Barrier> warpBarriers;
  std::vector<float> lanes;  // one slot per thread, for shuffles
  const std::function<void()>* kernel = nullptr;
};
inline thread_local State state;

#if defined(__x86_64__)
// Saves the callee-saved registers on the current stack, stores its pointer in *save, switches to
// the stack at load and restores its registers (System V x86-64: rbx, rbp, r12-r15).
extern "C" void emu_switch(void** save, void* load);
asm(R"(
  .text
  .globl emu_switch
  .type emu_switch, @function
emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size emu_switch, .-emu_switch
)");
#endif

inline void yield() {
#if defined(__x86_64__)
  emu_switch(&state.fibers[state.running].sp, state.schedulerSp);
#else
  swapcontext(&state.fibers[state.running].context, &state.scheduler);
#endif
}

inline void wait(Barrier& b) {
  long generation = b.generation;
  if (++b.arrived == b.expected) {
    b.arrived = 0;
    b.generation++;
    return;
  }
  while (b.generation == generation) yield();
}

inline void drop(Barrier& b) {
  b.expected--;
  if (b.arrived > 0 && b.arrived == b.expected) {
    b.arrived = 0;
    b.generation++;
  }
}

inline void entry() {
  int t = state.running;
  (*state.kernel)();
  state.fibers[t].done = true;
  drop(state.blockBarrier);
  drop(state.warpBarriers[t / 32]);
#if defined(__x86_64__)
  emu_switch(&state.fibers[t].sp, state.schedulerSp);  // never resumed
  __builtin_unreachable();
#endif
}  // (ucontext) returns to the scheduler through uc_link
}  // namespace emu

#define threadIdx (dim3(static_cast<unsigned>(emu::state.running), 0, 0))
inline thread_local dim3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;

inline void __syncthreads() { emu::wait(emu::state.blockBarrier); }

inline float __shfl_xor_sync(unsigned, float v, int laneMask) {
  int t = emu::state.running;
  int warp = t / 32;
  emu::state.lanes[t] = v;
  emu::wait(emu::state.warpBarriers[warp]);
  float other = emu::state.lanes[warp * 32 + ((t % 32) ^ laneMask)];
  emu::wait(emu::state.warpBarriers[warp]);
  return other;
}

inline float __uint_as_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t __float_as_uint(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
using std::isnan;
using std::min;

// WMMA on the CPU. On a GPU a fragment is spread over the warp's 32 lanes; here every lane holds
// the whole 16 x 16 tile and computes all of it (the same values in each lane), which keeps the
// warp-collective calls free of any exchange. Kernels must not index fragment elements directly
// (their layout on a GPU is unspecified anyway).
namespace nvcuda {
namespace wmma {
struct row_major {};
struct col_major {};
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  float v[16][16];  // [row][col] of the tile
};

template <typename T>
inline float element(const T& x) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(x);
  else if constexpr (std::is_same_v<T, __half>) return __half2float(x);
  else return static_cast<float>(x);
}

template <typename Use, typename T, typename Layout>
inline void load_matrix_sync(fragment<Use, 16, 16, 16, T, Layout>& f, const T* p, unsigned ldm) {
  for (int r = 0; r < 16; r++)
    for (int c = 0; c < 16; c++)
      f.v[r][c] = element(std::is_same_v<Layout, col_major> ? p[c * ldm + r] : p[r * ldm + c]);
}

inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float>& f, const float* p, unsigned ldm, layout_t layout) {
  for (int r = 0; r < 16; r++)
    for (int c = 0; c < 16; c++) f.v[r][c] = layout == mem_col_major ? p[c * ldm + r] : p[r * ldm + c];
}

template <typename Use, typename T, typename Layout>
inline void fill_fragment(fragment<Use, 16, 16, 16, T, Layout>& f, float value) {
  for (auto& row : f.v)
    for (float& e : row) e = value;
}

template <typename TA, typename LA, typename TB, typename LB>
inline void mma_sync(fragment<accumulator, 16, 16, 16, float>& d, const fragment<matrix_a, 16, 16, 16, TA, LA>& a,
                     const fragment<matrix_b, 16, 16, 16, TB, LB>& b, const fragment<accumulator, 16, 16, 16, float>& c) {
  float result[16][16];
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++) {
      float sum = c.v[i][j];
      for (int k = 0; k < 16; k++) sum += a.v[i][k] * b.v[k][j];
      result[i][j] = sum;
    }
  std::memcpy(d.v, result, sizeof(result));
}

inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 16, float>& f, unsigned ldm, layout_t layout) {
  for (int r = 0; r < 16; r++)
    for (int c = 0; c < 16; c++) (layout == mem_col_major ? p[c * ldm + r] : p[r * ldm + c]) = f.v[r][c];
}
}  // namespace wmma
}  // namespace nvcuda

namespace emu {
// Runs kernel() as a gx × gy grid of blocks of `threads` threads.
inline void launch(int gx, int gy, int threads, const std::function<void()>& kernel) {
  State& s = state;
  blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
  gridDim = dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy), 1);
  s.kernel = &kernel;
  if (static_cast<int>(s.fibers.size()) < threads) s.fibers.resize(threads);
  s.lanes.assign(threads, 0.f);
  for (int y = 0; y < gy; y++) {
    for (int x = 0; x < gx; x++) {
      blockIdx = dim3(static_cast<unsigned>(x), static_cast<unsigned>(y), 0);
      s.blockBarrier = Barrier{threads, 0, 0};
      s.warpBarriers.assign((threads + 31) / 32, Barrier{});
      for (int w = 0; w < static_cast<int>(s.warpBarriers.size()); w++) {
        s.warpBarriers[w].expected = std::min(32, threads - 32 * w);
      }
      for (int t = 0; t < threads; t++) {
        Fiber& f = s.fibers[t];
        if (!f.stack) f.stack.reset(new char[kStack]);
        f.done = false;
#if defined(__x86_64__)
        // A fresh stack that "returns" into entry with the alignment of a call: 16-byte aligned
        // top, a padding word, entry's address, six zeroed registers for emu_switch to pop.
        auto top = reinterpret_cast<uintptr_t>(f.stack.get() + kStack) & ~uintptr_t{15};
        void** sp = reinterpret_cast<void**>(top);
        *--sp = nullptr;
        *--sp = reinterpret_cast<void*>(&entry);
        for (int r = 0; r < 6; r++) *--sp = nullptr;
        f.sp = sp;
#else
        getcontext(&f.context);
        f.context.uc_stack.ss_sp = f.stack.get();
        f.context.uc_stack.ss_size = kStack;
        f.context.uc_link = &s.scheduler;
        makecontext(&f.context, entry, 0);
#endif
      }
      for (bool left = true; left;) {
        left = false;
        for (int t = 0; t < threads; t++) {
          if (s.fibers[t].done) continue;
          s.running = t;
#if defined(__x86_64__)
          emu_switch(&s.schedulerSp, s.fibers[t].sp);
#else
          swapcontext(&s.scheduler, &s.fibers[t].context);
#endif
          left |= !s.fibers[t].done;
        }
      }
    }
  }
}
}  // namespace emu
