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

// `y[i] = max(x[i], 0)`, and bit `k` of `bits[w]` set where `x[32·w + k] > 0`. Each warp
// takes 32 consecutive elements per step (coalesced reads and writes) and its lanes' signs form
// the word by `__ballot_sync`. Blocks are a multiple of 32 threads, so the lanes of a warp share
// `start` and run the same iterations (the ballot needs all 32).
template <typename T>
__device__ void relu_with_bits(const T* x, T* y, u32* bits, u32 n) {
    const u32 lane = threadIdx.x % 32;
    for (u64 start = (u64)blockIdx.x * blockDim.x + threadIdx.x - lane; start < (u64)n;
         start += (u64)blockDim.x * gridDim.x) {
        const u64 i = start + lane;
        const bool on = i < n && x[i] > T(0);
        if (i < n) y[i] = on ? x[i] : T(0);
        const u32 word = __ballot_sync(0xffffffffu, on);
        if (lane == 0) bits[start / 32] = word;
    }
}

// `y[i] = d[i]` where bit `i` of `bits` is set, else 0.
template <typename T>
__device__ void mask_by_bits(const T* d, const u32* bits, T* y, u32 n) {
    FOR_EACH(i, n) { y[i] = ((bits[i / 32] >> (i % 32)) & 1u) ? d[i] : T(0); }
}

// `y[i] = act(y[i] + bias[i % cols])` in place, `act` applied when `has_act`: the epilogue of
// a layer `f(x·W + b)` after its product, one pass where the sum and the activation took two
// (and the same scalar rules, so the same bits).
template <typename T>
__device__ void bias_act(T* y, const T* bias, u32 n, u32 cols, u32 has_act, u32 op, double a,
                         double b) {
    FOR_EACH(i, n) {
        T v = binary_eval<T>(B_Add, y[i], bias[i % cols], T(0), T(0));
        if (has_act) v = unary_eval<T>(op, v, T(a), T(b));
        y[i] = v;
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
    }                                                                                        \
    extern "C" __global__ void relu_with_bits_##S(const T* x, T* y, u32* bits, u32 n) {      \
        relu_with_bits<T>(x, y, bits, n);                                                    \
    }                                                                                        \
    extern "C" __global__ void mask_by_bits_##S(const T* d, const u32* bits, T* y, u32 n) {  \
        mask_by_bits<T>(d, bits, y, n);                                                      \
    }                                                                                        \
    extern "C" __global__ void bias_act_##S(T* y, const T* bias, u32 n, u32 cols, u32 has_act, \
                                            u32 op, double a, double b) {                    \
        bias_act<T>(y, bias, n, cols, has_act, op, a, b);                                    \
    }
FOR_FLOATS(KERNELS)
