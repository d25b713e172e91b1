// Elementwise kernels: unary ops, binary ops with broadcasting, and select. The op is a
// run-time code (uniform across the grid, so the switch costs no divergence).
#include "ops.cuh"

template <typename T>
__device__ void unary(const T* x, T* y, u32 n, u32 op, double a, double b) {
    FOR_EACH(i, n) { y[i] = unary_eval<T>(op, x[i], T(a), T(b)); }
}

// `y[i] = op(lhs[·], rhs[·])` where `s` maps `i` to the offsets of both operands.
template <typename T>
__device__ void binary(const T* lhs, const T* rhs, T* y, u32 n, u32 op, double a, double b,
                       Strided s) {
    FOR_EACH(i, n) {
        u32 off[2];
        strided_offsets<2>(s, i, off);
        y[i] = binary_eval<T>(op, lhs[off[0]], rhs[off[1]], T(a), T(b));
    }
}

// `y[i] = mask[·] != 0 ? on_true[·] : on_false[·]`, all three broadcast through `s`.
template <typename T>
__device__ void select(const T* mask, const T* on_true, const T* on_false, T* y, u32 n,
                       Strided s) {
    FOR_EACH(i, n) {
        u32 off[3];
        strided_offsets<3>(s, i, off);
        y[i] = mask[off[0]] != T(0) ? on_true[off[1]] : on_false[off[2]];
    }
}

#define KERNELS(S, T)                                                                        \
    extern "C" __global__ void unary_##S(const T* x, T* y, u32 n, u32 op, double a,          \
                                         double b) {                                         \
        unary<T>(x, y, n, op, a, b);                                                         \
    }                                                                                        \
    extern "C" __global__ void binary_##S(const T* lhs, const T* rhs, T* y, u32 n, u32 op,   \
                                          double a, double b, Strided s) {                   \
        binary<T>(lhs, rhs, y, n, op, a, b, s);                                              \
    }                                                                                        \
    extern "C" __global__ void select_##S(const T* mask, const T* on_true, const T* on_false, \
                                          T* y, u32 n, Strided s) {                          \
        select<T>(mask, on_true, on_false, y, n, s);                                         \
    }
FOR_FLOATS(KERNELS)
