// Counter-based random numbers: element `i` of a draw is a pure function of `(seed, i)`, so a
// draw is reproducible for a seed whatever the launch shape (it differs from the CPU
// backend's stream for the same seed).
#include "common.cuh"

// SplitMix64's finalizer: a bijective mix of 64 bits.
__device__ __forceinline__ u64 mix64(u64 z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// The `k`-th 64 random bits of element `i`.
__device__ __forceinline__ u64 bits(u64 seed, u32 i, u32 k) {
    return mix64(mix64(seed + 0x9e3779b97f4a7c15ull) ^ (((u64)i << 1) | k));
}

// A uniform double in [0, 1) from 53 random bits.
__device__ __forceinline__ double unit(u64 b) { return (double)(b >> 11) * 0x1.0p-53; }

// `U[a, b)` when `normal` is 0, else `N(a, b²)` (Box–Muller).
template <typename T> __device__ void random(T* y, u32 n, u64 seed, double a, double b, u32 normal) {
    FOR_EACH(i, n) {
        if (normal) {
            const double u1 = 1.0 - unit(bits(seed, i, 0)); // (0, 1]: the log stays finite
            const double u2 = unit(bits(seed, i, 1));
            y[i] = T(a + b * sqrt(-2.0 * log(u1)) * cospi(2.0 * u2));
        } else {
            T v = T(a + (b - a) * unit(bits(seed, i, 0)));
            // Rounding to `T` can reach `b`; keep the interval half-open.
            y[i] = v < T(b) ? v : T(a);
        }
    }
}

#define KERNELS(S, T)                                                                        \
    extern "C" __global__ void random_##S(T* y, u32 n, u64 seed, double a, double b,         \
                                          u32 normal) {                                      \
        random<T>(y, n, seed, a, b, normal);                                                 \
    }
FOR_FLOATS(KERNELS)
