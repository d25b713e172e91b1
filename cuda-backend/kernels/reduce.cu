// Reductions: one block per output element, each thread folding a strided share of the
// reduced elements, then a warp-shuffle tree and one shared-memory step across warps.
#include "ops.cuh"

#define REDUCE_THREADS 256

// Combines `v` across the lanes of a warp; lane 0 ends with the result.
template <typename T> __device__ __forceinline__ T warp_reduce(u32 op, T v) {
#pragma unroll
    for (int delta = 16; delta > 0; delta >>= 1)
        v = reduce_combine<T>(op, v, __shfl_down_sync(0xffffffffu, v, delta));
    return v;
}

// `y[o] = op over r of x[kept(o) + reduced(r)]`: `kept` maps an output index to its base
// offset (buffer 0), `reduced` maps an index of the `reduced_len` reduced elements to its
// offset from that base (buffer 0). Launched with a multiple of 32 threads per block.
template <typename T>
__device__ void reduce(const T* x, T* y, u32 outputs, u32 reduced_len, u32 op, Strided kept,
                       Strided reduced) {
    __shared__ T partial[REDUCE_THREADS / 32];
    const u32 lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    for (u32 o = blockIdx.x; o < outputs; o += gridDim.x) {
        u32 base[1];
        strided_offsets<1>(kept, o, base);
        T acc = reduce_identity<T>(op);
        for (u32 r = threadIdx.x; r < reduced_len; r += blockDim.x) {
            u32 off[1];
            strided_offsets<1>(reduced, r, off);
            acc = reduce_combine<T>(op, acc, x[base[0] + off[0]]);
        }
        acc = warp_reduce<T>(op, acc);
        if (lane == 0) partial[warp] = acc;
        __syncthreads();
        if (warp == 0) {
            acc = lane < warps ? partial[lane] : reduce_identity<T>(op);
            acc = warp_reduce<T>(op, acc);
            if (lane == 0) y[o] = acc;
        }
        __syncthreads();
    }
}

// The index of the first maximum (the first NaN if any) of each lane along the middle axis of
// `x` viewed as `[outer, len, inner]`.
template <typename T>
__device__ void argmax(const T* x, u32* y, u32 outer, u32 len, u32 inner) {
    FOR_EACH(i, outer * inner) {
        const u32 o = i / inner, in = i - o * inner;
        const T* lane = x + (u64)o * len * inner + in;
        u32 best = 0;
        T best_value = lane[0];
        for (u32 j = 1; j < len; ++j) {
            const T v = lane[(u64)j * inner];
            if (v > best_value || (isnan(v) && !isnan(best_value))) {
                best = j;
                best_value = v;
            }
        }
        y[i] = best;
    }
}

#define KERNELS(S, T)                                                                        \
    extern "C" __global__ void __launch_bounds__(REDUCE_THREADS)                             \
        reduce_##S(const T* x, T* y, u32 outputs, u32 reduced_len, u32 op, Strided kept,      \
                   Strided reduced) {                                                        \
        reduce<T>(x, y, outputs, reduced_len, op, kept, reduced);                            \
    }                                                                                        \
    extern "C" __global__ void argmax_##S(const T* x, u32* y, u32 outer, u32 len, u32 inner) { \
        argmax<T>(x, y, outer, len, inner);                                                  \
    }
FOR_FLOATS(KERNELS)

// `*out = max(ids)` (`*out` starts at 0).
extern "C" __global__ void max_id(const u32* ids, u32 n, u32* out) {
    u32 best = 0;
    FOR_EACH(i, n) { best = max(best, ids[i]); }
#pragma unroll
    for (int delta = 16; delta > 0; delta >>= 1)
        best = max(best, __shfl_down_sync(0xffffffffu, best, delta));
    if (threadIdx.x % 32 == 0) atomicMax(out, best);
}
