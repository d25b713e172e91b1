//! placeholder
pub use adjoint_core::*;
pub use adjoint_macros::*;
pub mod prelude {
    pub use adjoint_core::{Differentiable, Float, FloatMath, TangentVector, gradient, value_with_gradient, without_derivative};
    pub use adjoint_macros::{derivative_of, differentiable};
}
