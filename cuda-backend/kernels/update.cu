// Fused in-place optimizer steps: one pass over a parameter, its gradient and its state,
// mirroring `UpdateOp::eval` in adjoint-backend (crates/backend/src/update.rs).
#include "common.cuh"

#define UPDATE_SGD 0
#define UPDATE_ADAM 1
#define FLAG_NESTEROV 1u
#define FLAG_FIRST_STEP 2u
#define FLAG_DECOUPLED 4u

// Mirrors `UpdateParams` in src/ops/update.rs.
struct UpdateParams {
    u32 kind, flags;
    double lr, momentum, dampening, weight_decay;
    double beta1, beta2, eps, bias_correction1, bias_correction2;
};

template <typename T>
__device__ void sgd(T& p, T g, T* buf, const UpdateParams& u) {
    if (u.weight_decay != 0.0) g = g + T(u.weight_decay) * p;
    if (u.momentum != 0.0) {
        const T b = (u.flags & FLAG_FIRST_STEP) ? g
                                                : *buf * T(u.momentum) + T(1.0 - u.dampening) * g;
        *buf = b;
        g = (u.flags & FLAG_NESTEROV) ? g + T(u.momentum) * b : b;
    }
    p = p + T(-u.lr) * g;
}

template <typename T>
__device__ void adam(T& p, T g, T& m, T& v, const UpdateParams& u) {
    if (u.flags & FLAG_DECOUPLED) {
        p = p * T(1.0 - u.lr * u.weight_decay);
    } else if (u.weight_decay != 0.0) {
        g = g + T(u.weight_decay) * p;
    }
    const double w = 1.0 - u.beta1;
    m = fabs(w) < 0.5 ? m + T(w) * (g - m) : g - (g - m) * T(1.0 - w);
    v = v * T(u.beta2) + T(1.0 - u.beta2) * g * g;
    const T denom = sqrt(v) / T(sqrt(u.bias_correction2)) + T(u.eps);
    p = p + T(-(u.lr / u.bias_correction1)) * m / denom;
}

// One step on `n` elements; `s0`/`s1` are the op's state buffers (null when it has fewer).
template <typename T>
__device__ void update(T* p, const T* g, T* s0, T* s1, u32 n, UpdateParams u) {
    FOR_EACH(i, n) {
        T param = p[i];
        if (u.kind == UPDATE_SGD) {
            sgd<T>(param, g[i], s0 ? s0 + i : nullptr, u);
        } else {
            adam<T>(param, g[i], s0[i], s1[i], u);
        }
        p[i] = param;
    }
}

#define KERNELS(S, T)                                                                        \
    extern "C" __global__ void update_##S(T* p, const T* g, T* s0, T* s1, u32 n,             \
                                          UpdateParams u) {                                  \
        update<T>(p, g, s0, s1, n, u);                                                       \
    }
FOR_FLOATS(KERNELS)
