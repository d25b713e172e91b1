// The scalar meaning of every elementwise, reduction and update op, once for all kernels.
// The op codes (`U_*`, `B_*`, `R_*`) are generated from the Rust enums (src/codes.rs) and
// prepended as the header "codes.cuh"; each function mirrors the `eval` of its Rust enum in
// adjoint-backend (crates/backend/src/ops.rs), which is the oracle of the CUDA tests.
#pragma once
#include "codes.cuh"
#include "common.cuh"

#define GELU_C 0.7978845608028654
#define GELU_A 0.044715

template <typename T> __device__ __forceinline__ T sigmoid(T x) { return T(1) / (T(1) + exp(-x)); }

// `Φ(x) = (1 + erf(x/√2))/2`, the standard normal distribution function.
template <typename T> __device__ __forceinline__ T normal_cdf(T x) {
    return T(0.5) * (T(1) + erf(x * T(0.7071067811865476)));
}

// `d/dx` of the exact GELU `x·Φ(x)`: `Φ(x) + x·φ(x)`, `φ(x) = e^(−x²/2)/√(2π)`.
template <typename T> __device__ __forceinline__ T gelu_erf_derivative(T x) {
    return normal_cdf(x) + x * exp(T(-0.5) * x * x) * T(0.3989422804014327);
}

template <typename T> __device__ __forceinline__ T gelu_derivative(T x) {
    const T u = T(GELU_C) * (x + T(GELU_A) * x * x * x);
    const T t = tanh(u);
    const T du = T(GELU_C) * (T(1) + T(3.0 * GELU_A) * x * x);
    return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du;
}

// `op` applied to `x`, with the op's parameters `a` and `b`.
template <typename T> __device__ __forceinline__ T unary_eval(u32 op, T x, T a, T b) {
    switch (op) {
    case U_Neg: return -x;
    case U_Exp: return exp(x);
    case U_Ln: return log(x);
    case U_Sqrt: return sqrt(x);
    case U_Rsqrt: return T(1) / sqrt(x);
    case U_Recip: return T(1) / x;
    case U_Abs: return fabs(x);
    case U_Sign: return (x == T(0) || isnan(x)) ? x : copysign(T(1), x);
    case U_Tanh: return tanh(x);
    case U_Sigmoid: return sigmoid(x);
    case U_Relu: return x > T(0) ? x : T(0);
    case U_LeakyRelu: return x > T(0) ? x : x * a;
    case U_Gelu: {
        const T u = T(GELU_C) * (x + T(GELU_A) * x * x * x);
        return T(0.5) * x * (T(1) + tanh(u));
    }
    case U_GeluErf: return x * normal_cdf(x);
    case U_Silu: return x * sigmoid(x);
    case U_Sin: return sin(x);
    case U_Cos: return cos(x);
    case U_Powf: return pow(x, a);
    case U_AddScalar: return x + a;
    case U_MulScalar: return x * a;
    case U_DivScalarBy: return a / x;
    case U_Clamp: return fmin(fmax(x, a), b);
    default: return x;
    }
}

// `op` applied to `(x, y)`, with the op's parameters `a` and `b`.
template <typename T> __device__ __forceinline__ T binary_eval(u32 op, T x, T y, T a, T b) {
    switch (op) {
    case B_Add: return x + y;
    case B_Sub: return x - y;
    case B_Mul: return x * y;
    case B_Div: return x / y;
    case B_Max: return fmax(x, y);
    case B_Min: return fmin(x, y);
    case B_Pow: return pow(x, y);
    case B_Eq: return x == y ? T(1) : T(0);
    case B_Lt: return x < y ? T(1) : T(0);
    case B_Le: return x <= y ? T(1) : T(0);
    case B_Gt: return x > y ? T(1) : T(0);
    case B_Ge: return x >= y ? T(1) : T(0);
    case B_LeakyReluGrad: return x > T(0) ? y : y * a;
    case B_TanhGrad: return y * (T(1) - x * x);
    case B_SigmoidGrad: return y * x * (T(1) - x);
    case B_GeluGrad: return y * gelu_derivative(x);
    case B_GeluErfGrad: return y * gelu_erf_derivative(x);
    case B_SiluGrad: {
        const T s = sigmoid(x);
        return y * s * (T(1) + x * (T(1) - s));
    }
    case B_ClampGrad: return (x >= a && x <= b) ? y : T(0);
    default: return x;
    }
}

// The identity element of reduction `op`.
template <typename T> __device__ __forceinline__ T reduce_identity(u32 op) {
    switch (op) {
    case R_Max: return -T(__int_as_float(0x7f800000));
    case R_Min: return T(__int_as_float(0x7f800000));
    case R_Sum:
    default: return T(0);
    }
}

// `acc` combined with `x` by reduction `op` (NaN propagates through max and min).
template <typename T> __device__ __forceinline__ T reduce_combine(u32 op, T acc, T x) {
    switch (op) {
    case R_Max: return (x > acc || isnan(x)) ? x : acc;
    case R_Min: return (x < acc || isnan(x)) ? x : acc;
    case R_Sum:
    default: return acc + x;
    }
}
