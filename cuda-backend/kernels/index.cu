// Gather, scatter-add and one-hot over `u32` ids.
#include "common.cuh"

// `y[o, j, i] = x[o, ids[j], i]` with `x` viewed as `[outer, len, inner]` and `m` ids (ids
// are checked against `len` by the caller; an id out of range reads 0 rather than memory).
template <typename T>
__device__ void index_select(const T* x, const u32* ids, T* y, u32 outer, u32 len, u32 inner,
                             u32 m) {
    FOR_EACH(i, outer * m * inner) {
        const u32 in = i % inner, rest = i / inner, j = rest % m, o = rest / m;
        const u32 id = ids[j];
        y[i] = id < len ? x[((u64)o * len + id) * inner + in] : T(0);
    }
}

// `y[o, ids[j], i] += src[o, j, i]` into a zeroed `y` of `[outer, len, inner]` (atomic: ids may
// repeat; the order of the additions, and so the last bits of a sum, may vary between runs).
template <typename T>
__device__ void index_add(const T* src, const u32* ids, T* y, u32 outer, u32 len, u32 inner,
                          u32 m) {
    FOR_EACH(i, outer * m * inner) {
        const u32 in = i % inner, rest = i / inner, j = rest % m, o = rest / m;
        const u32 id = ids[j];
        if (id < len) atomicAdd(&y[((u64)o * len + id) * inner + in], src[i]);
    }
}

// `y[r, c] = ids[r] == c` for `classes` columns.
template <typename T> __device__ void one_hot(const u32* ids, T* y, u32 rows, u32 classes) {
    FOR_EACH(i, rows * classes) { y[i] = ids[i / classes] == i % classes ? T(1) : T(0); }
}

#define KERNELS(S, T)                                                                        \
    extern "C" __global__ void index_select_##S(const T* x, const u32* ids, T* y, u32 outer, \
                                                u32 len, u32 inner, u32 m) {                 \
        index_select<T>(x, ids, y, outer, len, inner, m);                                    \
    }                                                                                        \
    extern "C" __global__ void index_add_##S(const T* src, const u32* ids, T* y, u32 outer,  \
                                             u32 len, u32 inner, u32 m) {                    \
        index_add<T>(src, ids, y, outer, len, inner, m);                                     \
    }                                                                                        \
    extern "C" __global__ void one_hot_##S(const u32* ids, T* y, u32 rows, u32 classes) {    \
        one_hot<T>(ids, y, rows, classes);                                                   \
    }
FOR_FLOATS(KERNELS)
