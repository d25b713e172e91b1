// Layout kernels: one strided copy (permute, broadcast, narrow and cat are all instances of
// it), dtype casts, fill and arange.
#include "common.cuh"

// `dst[dst_offset + out(i)] = src[src_offset + in(i)]` for each of the `n` elements of the
// iteration space of `s`: buffer 0 of `s` holds the source strides, buffer 1 the destination's.
template <typename T>
__device__ void copy(const T* src, T* dst, u32 n, Strided s, u32 src_offset, u32 dst_offset) {
    FOR_EACH(i, n) {
        u32 off[2];
        strided_offsets<2>(s, i, off);
        dst[dst_offset + off[1]] = src[src_offset + off[0]];
    }
}

// `x` converted to `To`; float to `u32` saturates (NaN gives 0), as Rust's `as` does.
template <typename To, typename From> __device__ __forceinline__ To convert(From x) {
    return (To)x;
}
template <> __device__ __forceinline__ u32 convert<u32, double>(double x) {
    return !(x > 0.0) ? 0u : x >= 4294967295.0 ? 0xffffffffu : (u32)x;
}
template <> __device__ __forceinline__ u32 convert<u32, float>(float x) {
    return convert<u32, double>((double)x);
}

template <typename T> __device__ void fill(T* y, u32 n, double value) {
    FOR_EACH(i, n) { y[i] = convert<T>(value); }
}

template <typename T> __device__ void arange(T* y, u32 n, double start, double step) {
    FOR_EACH(i, n) { y[i] = convert<T>(start + step * (double)i); }
}

#define KERNELS(S, T)                                                                        \
    extern "C" __global__ void copy_##S(const T* src, T* dst, u32 n, Strided s,              \
                                        u32 src_offset, u32 dst_offset) {                    \
        copy<T>(src, dst, n, s, src_offset, dst_offset);                                     \
    }                                                                                        \
    extern "C" __global__ void fill_##S(T* y, u32 n, double value) { fill<T>(y, n, value); } \
    extern "C" __global__ void arange_##S(T* y, u32 n, double start, double step) {          \
        arange<T>(y, n, start, step);                                                        \
    }
FOR_ALL_TYPES(KERNELS)

// `y[i] = (To) x[i]`.
template <typename From, typename To> __device__ void cast(const From* x, To* y, u32 n) {
    FOR_EACH(i, n) { y[i] = convert<To>(x[i]); }
}

#define CAST(FS, F, TS, T)                                                                   \
    extern "C" __global__ void cast_##FS##_##TS(const F* x, T* y, u32 n) { cast<F, T>(x, y, n); }
CAST(f32, float, f64, double)
CAST(f64, double, f32, float)
CAST(f32, float, u32, u32)
CAST(f64, double, u32, u32)
CAST(u32, u32, f32, float)
CAST(u32, u32, f64, double)
