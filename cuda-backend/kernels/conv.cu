// The window kernels of convolution and pooling: unfolding images into columns (im2col), its
// adjoint (col2im), and max pooling with its tangent.
#include "common.cuh"

// The geometry of a 2-D convolution over NCHW images. Mirrors `Geometry` in src/ops/conv.rs.
struct Geometry {
    u32 batch, channels, height, width;
    u32 kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
    u32 out_h, out_w;
};

// Column element `(n, r, l)` with `r = (c, ki, kj)` and `l = (oy, ox)` is stored at
// `n * batch_stride + r * row_stride + l`: `[N, C·kh·kw, oh·ow]` has
// `(C·kh·kw·oh·ow, oh·ow)`, `[C·kh·kw, N, oh·ow]` has `(oh·ow, N·oh·ow)`. One thread per
// `(n, c, l)` writes the `kh·kw` taps of its pixel: the index is divided once per pixel, not
// once per column element, and neighbouring threads read and write neighbouring pixels.
template <typename T>
__device__ void im2col(const T* x, T* cols, Geometry g, double fill, u32 batch_stride,
                       u32 row_stride) {
    const u32 l_len = g.out_h * g.out_w, taps = g.kernel_h * g.kernel_w;
    FOR_EACH(i, g.batch * g.channels * l_len) {
        const u32 plane = i / l_len, l = i - plane * l_len;
        const u32 n = plane / g.channels, c = plane - n * g.channels;
        const u32 oy = l / g.out_w, ox = l - oy * g.out_w;
        const T* image = x + (u64)plane * g.height * g.width;
        T* out = cols + (u64)n * batch_stride + (u64)c * taps * row_stride + l;
        for (u32 ki = 0; ki < g.kernel_h; ++ki) {
            const int iy = (int)(oy * g.stride_h + ki * g.dilation_h) - (int)g.pad_h;
            const bool row_inside = iy >= 0 && iy < (int)g.height;
            for (u32 kj = 0; kj < g.kernel_w; ++kj) {
                const int ix = (int)(ox * g.stride_w + kj * g.dilation_w) - (int)g.pad_w;
                const bool inside = row_inside && ix >= 0 && ix < (int)g.width;
                out[(u64)(ki * g.kernel_w + kj) * row_stride] =
                    inside ? image[(u32)iy * g.width + (u32)ix] : T(fill);
            }
        }
    }
}

// The output position `o` along one axis whose tap `k` reads input coordinate `coord`, if
// any: `coord + pad − k·dilation` must be a multiple of `stride` below `stride·out`.
__device__ __forceinline__ bool output_of(int coord, u32 k, u32 stride, u32 pad, u32 dilation,
                                          u32 out, u32& o) {
    const int shifted = coord + (int)pad - (int)(k * dilation);
    if (shifted < 0) return false;
    if (stride == 1) {
        o = (u32)shifted;
    } else {
        o = (u32)shifted / stride;
        if (o * stride != (u32)shifted) return false;
    }
    return o < out;
}

// Calls `visit(tap, l)` for every window of `g` that reads input pixel `(iy, ix)`: `tap` the
// pixel's row-major index in the window, `l` the window's output pixel.
template <typename F>
__device__ __forceinline__ void windows_reading(u32 iy, u32 ix, const Geometry& g, F visit) {
    for (u32 ki = 0; ki < g.kernel_h; ++ki) {
        u32 oy;
        if (!output_of((int)iy, ki, g.stride_h, g.pad_h, g.dilation_h, g.out_h, oy)) continue;
        for (u32 kj = 0; kj < g.kernel_w; ++kj) {
            u32 ox;
            if (!output_of((int)ix, kj, g.stride_w, g.pad_w, g.dilation_w, g.out_w, ox)) continue;
            visit(ki * g.kernel_w + kj, oy * g.out_w + ox);
        }
    }
}

// `x[n, c, y, x] = Σ cols` over the column entries that read it (layout `[N, C·kh·kw, oh·ow]`):
// one thread per input element gathers, so no atomics and a fixed summation order.
template <typename T> __device__ void col2im(const T* cols, T* x, Geometry g) {
    const u32 l_len = g.out_h * g.out_w, taps = g.kernel_h * g.kernel_w;
    const u32 pixels = g.height * g.width;
    FOR_EACH(i, g.batch * g.channels * pixels) {
        const u32 plane = i / pixels, pixel = i - plane * pixels;
        const u32 iy = pixel / g.width;
        // Plane `n·C + c` has its column rows at `(n·C + c)·taps·l_len`.
        const T* rows = cols + (u64)plane * taps * l_len;
        T sum = T(0);
        windows_reading(iy, pixel - iy * g.width, g,
                        [&](u32 tap, u32 l) { sum += rows[(u64)tap * l_len + l]; });
        x[i] = sum;
    }
}

// Max pooling of each plane (`batch·channels` planes of `height × width`) over the windows of
// `g`, one thread per window: `y` its maximum, `winners` the row-major index of its first
// maximal tap. A NaN beats numbers (the window's first NaN wins); taps in the padding are
// skipped, and a window entirely in the padding keeps −∞ and tap 0. The CPU backend's
// `max_pool2d` does the same.
template <typename T> __device__ void max_pool(const T* x, T* y, u32* winners, Geometry g) {
    const u32 l_len = g.out_h * g.out_w;
    FOR_EACH(i, g.batch * g.channels * l_len) {
        const u32 plane = i / l_len, l = i - plane * l_len;
        const u32 oy = l / g.out_w, ox = l - oy * g.out_w;
        const T* image = x + (u64)plane * g.height * g.width;
        T best = -T(__int_as_float(0x7f800000));
        u32 winner = 0;
        bool found = false;
        for (u32 ki = 0; ki < g.kernel_h; ++ki) {
            const int iy = (int)(oy * g.stride_h + ki * g.dilation_h) - (int)g.pad_h;
            if (iy < 0 || iy >= (int)g.height) continue;
            for (u32 kj = 0; kj < g.kernel_w; ++kj) {
                const int ix = (int)(ox * g.stride_w + kj * g.dilation_w) - (int)g.pad_w;
                if (ix < 0 || ix >= (int)g.width) continue;
                const T v = image[(u32)iy * g.width + (u32)ix];
                if (!found || v > best || (isnan(v) && !isnan(best))) {
                    best = v;
                    winner = ki * g.kernel_w + kj;
                    found = true;
                }
            }
        }
        y[i] = best;
        winners[i] = winner;
    }
}

// The input tangent of `max_pool`: each input element gathers `dy` of the windows whose
// winning tap it is (one thread per input element: no atomics, a fixed order where windows
// overlap).
template <typename T>
__device__ void max_pool_backward(const T* dy, const u32* winners, T* dx, Geometry g) {
    const u32 l_len = g.out_h * g.out_w, pixels = g.height * g.width;
    FOR_EACH(i, g.batch * g.channels * pixels) {
        const u32 plane = i / pixels, pixel = i - plane * pixels;
        const u32 iy = pixel / g.width;
        const u64 first = (u64)plane * l_len;
        T sum = T(0);
        windows_reading(iy, pixel - iy * g.width, g, [&](u32 tap, u32 l) {
            if (winners[first + l] == tap) sum += dy[first + l];
        });
        dx[i] = sum;
    }
}

// The input tangent of `max_pool` when no two windows share an input element (each window
// scatters `dy` to its winning tap, into `dx` zeroed before): one thread per window instead
// of a search per input element. A window entirely in the padding writes nothing.
template <typename T>
__device__ void max_pool_scatter(const T* dy, const u32* winners, T* dx, Geometry g) {
    const u32 l_len = g.out_h * g.out_w;
    FOR_EACH(i, g.batch * g.channels * l_len) {
        const u32 plane = i / l_len, l = i - plane * l_len;
        const u32 oy = l / g.out_w, ox = l - oy * g.out_w;
        const u32 tap = winners[i], ki = tap / g.kernel_w, kj = tap - ki * g.kernel_w;
        const int iy = (int)(oy * g.stride_h + ki * g.dilation_h) - (int)g.pad_h;
        const int ix = (int)(ox * g.stride_w + kj * g.dilation_w) - (int)g.pad_w;
        if (iy >= 0 && iy < (int)g.height && ix >= 0 && ix < (int)g.width)
            dx[(u64)plane * g.height * g.width + (u32)iy * g.width + (u32)ix] = dy[i];
    }
}

#define KERNELS(S, T)                                                                        \
    extern "C" __global__ void im2col_##S(const T* x, T* cols, Geometry g, double fill,      \
                                          u32 batch_stride, u32 row_stride) {                \
        im2col<T>(x, cols, g, fill, batch_stride, row_stride);                               \
    }                                                                                        \
    extern "C" __global__ void col2im_##S(const T* cols, T* x, Geometry g) {                 \
        col2im<T>(cols, x, g);                                                               \
    }                                                                                        \
    extern "C" __global__ void max_pool_##S(const T* x, T* y, u32* winners, Geometry g) {    \
        max_pool<T>(x, y, winners, g);                                                       \
    }                                                                                        \
    extern "C" __global__ void max_pool_backward_##S(const T* dy, const u32* winners, T* dx, \
                                                     Geometry g) {                           \
        max_pool_backward<T>(dy, winners, dx, g);                                            \
    }                                                                                        \
    extern "C" __global__ void max_pool_scatter_##S(const T* dy, const u32* winners, T* dx,  \
                                                    Geometry g) {                            \
        max_pool_scatter<T>(dy, winners, dx, g);                                             \
    }
FOR_FLOATS(KERNELS)
