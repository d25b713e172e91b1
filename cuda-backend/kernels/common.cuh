// Shared by every kernel file of adjoint's CUDA backend: index types, the strided-index map
// and the grid-stride loop. Sizes are 32-bit: the Rust side refuses tensors of 2^32 elements
// or more before launching (see `src/launch.rs`).
#pragma once

typedef unsigned int u32;
typedef unsigned long long u64;

#define MAX_RANK 8

// Maps the linear (row-major) index of an element of a `rank`-dimensional iteration space of
// extents `dims` to its offsets in up to three strided buffers (stride 0 on broadcast axes).
// Mirrors `Strided` in src/launch.rs field for field.
struct Strided {
    u32 rank;
    u32 dims[MAX_RANK];
    u32 strides[3][MAX_RANK];
};

// The offsets of element `i` (below the product of the extents) in the first `K` buffers of
// `s`. The outermost coordinate is what is left of `i` after the inner ones, so a rank-1 map
// divides nothing and a rank-r map divides r − 1 times.
template <int K>
__device__ __forceinline__ void strided_offsets(const Strided& s, u32 i, u32 (&off)[K]) {
#pragma unroll
    for (int k = 0; k < K; ++k) off[k] = 0;
    for (int d = (int)s.rank - 1; d > 0; --d) {
        const u32 q = i / s.dims[d];
        const u32 coord = i - q * s.dims[d];
#pragma unroll
        for (int k = 0; k < K; ++k) off[k] += coord * s.strides[k][d];
        i = q;
    }
    if (s.rank > 0) {
#pragma unroll
        for (int k = 0; k < K; ++k) off[k] += i * s.strides[k][0];
    }
}

// A grid-stride loop over `0..n` (64-bit counter, so the last step cannot wrap around).
#define FOR_EACH(i, n)                                                                  \
    for (u64 i##_wide = (u64)blockIdx.x * blockDim.x + threadIdx.x; i##_wide < (u64)(n); \
         i##_wide += (u64)blockDim.x * gridDim.x)                                       \
        for (u32 i = (u32)i##_wide, i##_once = 1; i##_once; i##_once = 0)

// Instantiates `KERNEL(suffix, type)` for the float types.
#define FOR_FLOATS(KERNEL) KERNEL(f32, float) KERNEL(f64, double)
// Instantiates `KERNEL(suffix, type)` for every element type.
#define FOR_ALL_TYPES(KERNEL) KERNEL(f32, float) KERNEL(f64, double) KERNEL(u32, u32)
