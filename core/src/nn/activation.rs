//! Layers without parameters: the elementwise activations and [`Flatten`].
//!
//! Their tangent is `()`; the pullback of `forward` returns `((), x̄)`.

use super::{Layer, no_parameters};
use crate::Differentiable;
use crate::gradient::without_derivative;
use crate::tensor::{Backend, Tensor, TensorTangent};
use adjoint_macros::differentiable;

/// Writes a unit-struct activation layer calling the tensor method `$method`.
macro_rules! activation {
    ($(#[$doc:meta])* $name:ident => $method:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $name;

        no_parameters!($name);

        // The `where` clause: see "Generic impls" in the module docs.
        #[differentiable]
        impl<B: Backend> Layer<B> for $name
        where
            Tensor<B>: Differentiable<Tangent = TensorTangent<B>>,
        {
            /// The activation, elementwise; see the type's documentation.
            #[differentiable]
            fn forward(&self, x: &Tensor<B>) -> Tensor<B> {
                x.$method()
            }
        }
    };
}

activation! {
    /// Rectified linear unit, `y = max(x, 0)`; `x̄ = ȳ · 𝟙(x > 0)` (0 at 0, as PyTorch).
    Relu => relu
}

activation! {
    /// Gaussian error linear unit, tanh approximation (PyTorch's `approximate="tanh"`):
    /// `y = x/2 · (1 + tanh(u))`, `u = √(2/π)(x + 0.044715 x³)`;
    /// `x̄ = ȳ · (½(1 + tanh u) + x/2 · (1 − tanh² u) · √(2/π)(1 + 3·0.044715 x²))`.
    Gelu => gelu
}

activation! {
    /// Gaussian error linear unit, exact form (PyTorch's default `nn.GELU()`):
    /// `y = x·Φ(x) = x/2 · (1 + erf(x/√2))`; `x̄ = ȳ · (Φ(x) + x·φ(x))`,
    /// `φ(x) = e^(−x²/2)/√(2π)`.
    GeluErf => gelu_erf
}

activation! {
    /// Hyperbolic tangent, `y = tanh x`; `x̄ = ȳ · (1 − y²)`.
    Tanh => tanh
}

activation! {
    /// Logistic sigmoid, `y = σ(x) = 1/(1 + e⁻ˣ)`; `x̄ = ȳ · y(1 − y)`.
    Sigmoid => sigmoid
}

activation! {
    /// Sigmoid-weighted linear unit (swish), `y = x · σ(x)`; `x̄ = ȳ · σ(x)(1 + x(1 − σ(x)))`.
    Silu => silu
}

/// Flattens the axes from `start` on into one: `[d₀, …, d_{s−1}, d_s, …, d_{r−1}]` becomes
/// `[d₀, …, d_{s−1}, d_s·…·d_{r−1}]`. [`Flatten::default`] starts at axis 1, as PyTorch's
/// `nn.Flatten`, keeping the batch axis. The derivative reshapes back: `x̄ = ȳ` reshaped to
/// `x`'s shape. No data is copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flatten {
    /// The first axis flattened.
    pub start: usize,
}

impl Flatten {
    /// Flattens the axes from `start` on.
    pub fn new(start: usize) -> Self {
        Flatten { start }
    }
}

impl Default for Flatten {
    /// `Flatten { start: 1 }`: everything but the batch axis.
    fn default() -> Self {
        Flatten { start: 1 }
    }
}

no_parameters!(Flatten);

// The `where` clause: see "Generic impls" in the module docs.
#[differentiable]
impl<B: Backend> Layer<B> for Flatten
where
    Tensor<B>: Differentiable<Tangent = TensorTangent<B>>,
{
    /// `x.flatten_from(start)`.
    #[differentiable]
    fn forward(&self, x: &Tensor<B>) -> Tensor<B> {
        x.flatten_from(without_derivative(self).start)
    }
}
