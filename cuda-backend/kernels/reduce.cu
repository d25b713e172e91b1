// Reductions: a block per lane (or per run of a long lane), each thread folding a strided
// share of the elements, then a warp-shuffle tree and one shared-memory step across warps;
// or a thread per lane for short lanes. Softmax and argmax along one axis.
#include "ops.cuh"

#define REDUCE_THREADS 256

// Combines `v` across the lanes of a warp; lane 0 ends with the result.
template <typename T> __device__ __forceinline__ T warp_reduce(u32 op, T v) {
#pragma unroll
    for (int delta = 16; delta > 0; delta >>= 1)
        v = reduce_combine<T>(op, v, __shfl_down_sync(0xffffffffu, v, delta));
    return v;
}

// Combines `v` across the block (all threads must call it; a multiple of 32 threads); every
// thread gets the result. `partial` is the block's scratch of one value per warp.
template <typename T> __device__ __forceinline__ T block_reduce(u32 op, T v, T* partial) {
    const u32 lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    v = warp_reduce<T>(op, v);
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    v = lane < warps ? partial[lane] : reduce_identity<T>(op);
    v = warp_reduce<T>(op, v);
    if (lane == 0) partial[0] = v;
    __syncthreads();
    v = partial[0];
    __syncthreads();
    return v;
}

// `y[b] = op over r in run c of lane o of x[kept(o) + reduced(r)]`, `b = o·runs + c`: each
// lane of `reduced_len` elements is cut into `runs` runs of `run_len` (the last one
// shorter), one block per run. `kept` maps a lane to its base offset, `reduced` an index of
// the lane's elements to its offset from that base. With one run this is the reduction
// itself; with more, a second launch reduces the lanes of partial results. Launched with a
// multiple of 32 threads per block.
template <typename T>
__device__ void reduce(const T* x, T* y, u32 lanes, u32 reduced_len, u32 runs, u32 run_len,
                       u32 op, Strided kept, Strided reduced) {
    __shared__ T partial[REDUCE_THREADS / 32];
    for (u64 b = blockIdx.x; b < (u64)lanes * runs; b += gridDim.x) {
        const u32 o = (u32)(b / runs), start = (u32)(b % runs) * run_len;
        const u32 end = min(reduced_len, start + run_len);
        u32 base[1];
        strided_offsets<1>(kept, o, base);
        T acc = reduce_identity<T>(op);
        for (u32 r = start + threadIdx.x; r < end; r += blockDim.x) {
            u32 off[1];
            strided_offsets<1>(reduced, r, off);
            acc = reduce_combine<T>(op, acc, x[base[0] + off[0]]);
        }
        acc = block_reduce<T>(op, acc, partial);
        if (threadIdx.x == 0) y[b] = acc;
    }
}

// The same reduction with one thread per lane, folding its elements in order: for short
// lanes (a pooling window, a few partial results), where a block per lane would leave most
// of its threads idle.
template <typename T>
__device__ void reduce_lanes(const T* x, T* y, u32 lanes, u32 reduced_len, u32 op, Strided kept,
                             Strided reduced) {
    FOR_EACH(o, lanes) {
        u32 base[1];
        strided_offsets<1>(kept, o, base);
        T acc = reduce_identity<T>(op);
        for (u32 r = 0; r < reduced_len; ++r) {
            u32 off[1];
            strided_offsets<1>(reduced, r, off);
            acc = reduce_combine<T>(op, acc, x[base[0] + off[0]]);
        }
        y[o] = acc;
    }
}

// The softmax (`take_log` = 0) or log-softmax (`take_log` = 1) of each lane along the middle
// axis of `x` viewed as `[outer, len, inner]`: one block per lane, which finds the lane's
// maximum `m` and `s = Σ e^(x − m)` by block reductions, then writes `e^(x − m)/s` or
// `x − m − ln s`.
template <typename T>
__device__ void softmax(const T* x, T* y, u32 outer, u32 len, u32 inner, u32 take_log) {
    __shared__ T partial[REDUCE_THREADS / 32];
    for (u32 lane = blockIdx.x; lane < outer * inner; lane += gridDim.x) {
        const u32 o = lane / inner, in = lane - o * inner;
        const u64 base = (u64)o * len * inner + in;
        T m = reduce_identity<T>(R_Max);
        for (u32 j = threadIdx.x; j < len; j += blockDim.x)
            m = reduce_combine<T>(R_Max, m, x[base + (u64)j * inner]);
        m = block_reduce<T>(R_Max, m, partial);
        T s = T(0);
        for (u32 j = threadIdx.x; j < len; j += blockDim.x) s += exp(x[base + (u64)j * inner] - m);
        s = block_reduce<T>(R_Sum, s, partial);
        const T ln_s = take_log ? log(s) : T(0);
        for (u32 j = threadIdx.x; j < len; j += blockDim.x) {
            const T shifted = x[base + (u64)j * inner] - m;
            y[base + (u64)j * inner] = take_log ? shifted - ln_s : exp(shifted) / s;
        }
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
        reduce_##S(const T* x, T* y, u32 lanes, u32 reduced_len, u32 runs, u32 run_len,      \
                   u32 op, Strided kept, Strided reduced) {                                  \
        reduce<T>(x, y, lanes, reduced_len, runs, run_len, op, kept, reduced);               \
    }                                                                                        \
    extern "C" __global__ void reduce_lanes_##S(const T* x, T* y, u32 lanes, u32 reduced_len, \
                                                u32 op, Strided kept, Strided reduced) {     \
        reduce_lanes<T>(x, y, lanes, reduced_len, op, kept, reduced);                        \
    }                                                                                        \
    extern "C" __global__ void argmax_##S(const T* x, u32* y, u32 outer, u32 len, u32 inner) { \
        argmax<T>(x, y, outer, len, inner);                                                  \
    }                                                                                        \
    extern "C" __global__ void __launch_bounds__(REDUCE_THREADS)                             \
        softmax_##S(const T* x, T* y, u32 outer, u32 len, u32 inner, u32 take_log) {          \
        softmax<T>(x, y, outer, len, inner, take_log);                                       \
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
