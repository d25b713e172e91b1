//! Elementary functions in `f32` written so that a loop over them vectorizes: straight-line
//! float arithmetic, bit operations and selects, no calls and no branches. The elementwise
//! loops that run them are compiled for AVX-512, for AVX2 + FMA and for the baseline, and
//! picked at run time ([`dispatch_widest`](super::simd::dispatch_widest)); the three builds
//! give the same bits (no `mul_add`, so nothing is contracted; a NaN's sign is kept by the
//! kernels that would otherwise multiply two NaNs).
//!
//! libm's `tanhf` is a scalar call of about 20–30 ns on the development machine, which made
//! the `tanh` of a 32-wide hidden state cost more than the matrix product feeding it (the RNN
//! step of `benches/steps.rs`), and libm's `tanhf`/`expm1f` were a third of the tiny GPT's
//! training step inside GELU and its derivative (issue 42). `f64` keeps libm: it is the type of
//! gradient checks, where the last bit matters more than speed.
//!
//! The errors against `f64` libm over `tests.rs`'s sweep (every 97th float of each sign):
//!
//! | function | bound tested | largest seen |
//! |---|---|---|
//! | [`exp_f32`], [`expm1_f32`](exp::expm1_f32), [`tanh_f32`], [`erf_f32`](erf::erf_f32) | 1.5 ulp | 1.18, 1.44, 1.07, 1.20 |
//! | [`ln_f32`] | 1 ulp | 0.80 |
//! | [`sigmoid_f32`], [`silu_f32`] (`x > −87`), [`gelu_f32`] (`x ≥ −1.5`) | 3, 3.5, 6 ulp | 2.71, 3.28, 5.92 |
//! | [`gelu_f32`], `−10 ≤ x < −1.5` | relative `2·10⁻⁵` (the condition number × 2⁻²⁴) | |
//! | [`gelu_erf_f32`], `x ≥ −2` | 9 ulp | 8.65 (the rounding of `x/√2` and of `−a²` in `Φ`'s tail) |
//! | [`gelu_erf_f32`], `−5.65 ≤ x < −2` | relative `3·10⁻⁶` | |
//! | the derivatives ([`gelu_derivative_f32`], …) | `4·2⁻²⁴` absolute (they are `O(1)` and cross 0) | |
//!
//! Below `x = −5.657`, `gelu_erf_f32` is 0 (the true value is below `10⁻⁷` in magnitude).
//! Special values follow the `f64` functions: `±0`, subnormals, `±∞` and NaN in, the IEEE
//! results out (the tests check each).

mod activation;
mod erf;
mod exp;
mod log;
mod tanh;
#[cfg(test)]
mod tests;

pub use activation::{
    gelu_derivative_f32, gelu_erf_derivative_f32, gelu_erf_f32, gelu_f32, sigmoid_f32,
    silu_derivative_f32, silu_f32,
};
pub use exp::exp_f32;
pub use log::ln_f32;
pub use tanh::tanh_f32;

use adjoint_backend::{BinaryOp, UnaryOp};

/// The elementwise functions of a float type with a kernel of their own: the `f32` forms of
/// this module, or, for `f64`, the ops' scalar meaning ([`UnaryOp::eval`],
/// [`BinaryOp::eval`], on libm). `*_grad(x, ȳ)` is the derivative's kernel `ȳ·f′(x)`.
pub(crate) trait Elementary: Copy {
    /// `e^self`.
    fn exp_elementwise(self) -> Self;
    /// `ln self`.
    fn ln_elementwise(self) -> Self;
    /// `tanh self`.
    fn tanh_elementwise(self) -> Self;
    /// `σ(self)`.
    fn sigmoid_elementwise(self) -> Self;
    /// `self·σ(self)`.
    fn silu_elementwise(self) -> Self;
    /// The tanh-form GELU.
    fn gelu_elementwise(self) -> Self;
    /// The exact GELU.
    fn gelu_erf_elementwise(self) -> Self;
    /// `d·silu′(self)`.
    fn silu_grad(self, d: Self) -> Self;
    /// `d·gelu′(self)`, tanh form.
    fn gelu_grad(self, d: Self) -> Self;
    /// `d·gelu′(self)`, exact form.
    fn gelu_erf_grad(self, d: Self) -> Self;
}

impl Elementary for f32 {
    #[inline(always)]
    fn exp_elementwise(self) -> f32 {
        exp_f32(self)
    }
    #[inline(always)]
    fn ln_elementwise(self) -> f32 {
        ln_f32(self)
    }
    #[inline(always)]
    fn tanh_elementwise(self) -> f32 {
        tanh_f32(self)
    }
    #[inline(always)]
    fn sigmoid_elementwise(self) -> f32 {
        sigmoid_f32(self)
    }
    #[inline(always)]
    fn silu_elementwise(self) -> f32 {
        silu_f32(self)
    }
    #[inline(always)]
    fn gelu_elementwise(self) -> f32 {
        gelu_f32(self)
    }
    #[inline(always)]
    fn gelu_erf_elementwise(self) -> f32 {
        gelu_erf_f32(self)
    }
    #[inline(always)]
    fn silu_grad(self, d: f32) -> f32 {
        d * silu_derivative_f32(self)
    }
    #[inline(always)]
    fn gelu_grad(self, d: f32) -> f32 {
        d * gelu_derivative_f32(self)
    }
    #[inline(always)]
    fn gelu_erf_grad(self, d: f32) -> f32 {
        d * gelu_erf_derivative_f32(self)
    }
}

/// `f64`: the ops' own scalar meaning, bit for bit what the elementwise loops computed
/// before these kernels.
impl Elementary for f64 {
    #[inline(always)]
    fn exp_elementwise(self) -> f64 {
        self.exp()
    }
    #[inline(always)]
    fn ln_elementwise(self) -> f64 {
        UnaryOp::Ln.eval(self)
    }
    #[inline(always)]
    fn tanh_elementwise(self) -> f64 {
        self.tanh()
    }
    #[inline(always)]
    fn sigmoid_elementwise(self) -> f64 {
        UnaryOp::Sigmoid.eval(self)
    }
    #[inline(always)]
    fn silu_elementwise(self) -> f64 {
        UnaryOp::Silu.eval(self)
    }
    #[inline(always)]
    fn gelu_elementwise(self) -> f64 {
        UnaryOp::Gelu.eval(self)
    }
    #[inline(always)]
    fn gelu_erf_elementwise(self) -> f64 {
        UnaryOp::GeluErf.eval(self)
    }
    #[inline(always)]
    fn silu_grad(self, d: f64) -> f64 {
        BinaryOp::SiluGrad.eval(self, d)
    }
    #[inline(always)]
    fn gelu_grad(self, d: f64) -> f64 {
        BinaryOp::GeluGrad.eval(self, d)
    }
    #[inline(always)]
    fn gelu_erf_grad(self, d: f64) -> f64 {
        BinaryOp::GeluErfGrad.eval(self, d)
    }
}
