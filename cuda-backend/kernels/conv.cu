// Unfolding of images into convolution columns (im2col) and its adjoint (col2im).
#include "common.cuh"

// The geometry of a 2-D convolution over NCHW images. Mirrors `Geometry` in src/ops/conv.rs.
struct Geometry {
    u32 batch, channels, height, width;
    u32 kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
    u32 out_h, out_w;
};

// Column element `(n, r, l)` with `r = (c, ki, kj)` and `l = (oy, ox)` is stored at
// `n * batch_stride + r * row_stride + l`: `[N, C·kh·kw, oh·ow]` has
// `(C·kh·kw·oh·ow, oh·ow)`, `[C·kh·kw, N, oh·ow]` has `(oh·ow, N·oh·ow)`.
template <typename T>
__device__ void im2col(const T* x, T* cols, Geometry g, double fill, u32 batch_stride,
                       u32 row_stride) {
    const u32 l_len = g.out_h * g.out_w, taps = g.kernel_h * g.kernel_w;
    const u32 rows = g.channels * taps;
    FOR_EACH(i, g.batch * rows * l_len) {
        const u32 l = i % l_len, r = (i / l_len) % rows, n = i / (l_len * rows);
        const u32 c = r / taps, tap = r % taps, ki = tap / g.kernel_w, kj = tap % g.kernel_w;
        const u32 oy = l / g.out_w, ox = l % g.out_w;
        const int iy = (int)(oy * g.stride_h + ki * g.dilation_h) - (int)g.pad_h;
        const int ix = (int)(ox * g.stride_w + kj * g.dilation_w) - (int)g.pad_w;
        const bool inside = iy >= 0 && iy < (int)g.height && ix >= 0 && ix < (int)g.width;
        cols[(u64)n * batch_stride + (u64)r * row_stride + l] =
            inside ? x[(((u64)n * g.channels + c) * g.height + iy) * g.width + ix] : T(fill);
    }
}

// The input coordinates along one axis whose tap `k` lands on output position `o`: returns
// whether `coord + pad - k·dilation` is a multiple of `stride` below `out`, and sets `o`.
__device__ __forceinline__ bool output_of(int coord, u32 k, u32 stride, u32 pad, u32 dilation,
                                          u32 out, u32& o) {
    const int shifted = coord + (int)pad - (int)(k * dilation);
    if (shifted < 0 || shifted % (int)stride != 0) return false;
    o = (u32)shifted / stride;
    return o < out;
}

// `x[n, c, y, x] = Σ cols` over the column entries that read it (layout `[N, C·kh·kw, oh·ow]`):
// one thread per input element gathers, so no atomics and a fixed summation order.
template <typename T> __device__ void col2im(const T* cols, T* x, Geometry g) {
    const u32 l_len = g.out_h * g.out_w, taps = g.kernel_h * g.kernel_w;
    const u32 rows = g.channels * taps;
    FOR_EACH(i, g.batch * g.channels * g.height * g.width) {
        const u32 ix = i % g.width, iy = (i / g.width) % g.height;
        const u32 c = (i / (g.width * g.height)) % g.channels;
        const u32 n = i / (g.width * g.height * g.channels);
        const T* image = cols + (u64)n * rows * l_len;
        T sum = T(0);
        for (u32 ki = 0; ki < g.kernel_h; ++ki) {
            u32 oy;
            if (!output_of((int)iy, ki, g.stride_h, g.pad_h, g.dilation_h, g.out_h, oy)) continue;
            for (u32 kj = 0; kj < g.kernel_w; ++kj) {
                u32 ox;
                if (!output_of((int)ix, kj, g.stride_w, g.pad_w, g.dilation_w, g.out_w, ox))
                    continue;
                sum += image[(u64)(c * taps + ki * g.kernel_w + kj) * l_len + oy * g.out_w + ox];
            }
        }
        x[i] = sum;
    }
}

#define KERNELS(S, T)                                                                        \
    extern "C" __global__ void im2col_##S(const T* x, T* cols, Geometry g, double fill,      \
                                          u32 batch_stride, u32 row_stride) {                \
        im2col<T>(x, cols, g, fill, batch_stride, row_stride);                               \
    }                                                                                        \
    extern "C" __global__ void col2im_##S(const T* cols, T* x, Geometry g) {                 \
        col2im<T>(cols, x, g);                                                               \
    }
FOR_FLOATS(KERNELS)
