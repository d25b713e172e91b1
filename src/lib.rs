//! # adjoint
//!
//! Compile-time reverse-mode automatic differentiation for Rust. Put `#[differentiable]` on an
//! ordinary function and the macro writes its derivative next to it as plain Rust, the way
//! Swift's compiler does: no tape, no tracing, no runtime graph.
//!
//! ```
//! use adjoint::prelude::*;
//!
//! #[differentiable]
//! fn f(x: f64, y: f64) -> f64 {
//!     x * y + x.sin()
//! }
//!
//! // `f` stays as written. The macro adds `f_vjp`, returning the value and a pullback:
//! let (value, pullback) = f_vjp(2.0, 3.0);
//! let (dx, dy) = pullback(1.0);
//! assert_eq!(value, 6.0 + 2.0_f64.sin());
//! assert_eq!((dx, dy), (3.0 + 2.0_f64.cos(), 2.0));
//!
//! // For a scalar result, `gradient` seeds the pullback with 1.
//! assert_eq!(gradient(f_vjp(2.0, 3.0)), (dx, dy));
//! let (v, (dx, dy)) = value_with_gradient(f_vjp(2.0, 3.0));
//! # let _ = (v, dx, dy);
//! ```
//!
//! ## What gets differentiated
//! Every parameter is differentiated except those of obviously non-differentiable types
//! (integers, `bool`, `char`, `&str`, `String`). `#[differentiable(wrt(x, y))]` names the
//! parameters explicitly and `#[no_derivative]` on a parameter leaves it out. Any other
//! parameter type must implement [`Differentiable`]; references `&T` have tangent `T::Tangent`,
//! tuples have tuple tangents. The pullback returns the tangent itself for one differentiated
//! parameter and a tuple for several.
//!
//! `#[differentiable]` works on free functions, generic functions (`fn f<T: Float>(x: T) -> T`),
//! inherent methods (`&self` is differentiated; its tangent is `Self::Tangent`) and trait
//! methods, required or with a default body. An associated function with neither `self` nor
//! `Self` in its signature needs `#[differentiable(associated)]`, because the macro cannot see
//! that it sits in an `impl`.
//!
//! ## Inout parameters
//! A differentiated `&mut` parameter is Swift's `inout`: `fn step(x: &mut f64, y: f64)` gets
//! `step_vjp(x: &mut f64, y: f64) -> ((), impl FnOnce((), (&mut f64,)) -> f64)`. The pullback
//! takes, after the result's tangent, a tuple of `&mut` tangents of the inout parameters: on
//! entry each holds the tangent of the parameter's final value, on exit that of its initial
//! value. It returns the tangents of the other differentiated parameters.
//!
//! ```
//! use adjoint::prelude::*;
//!
//! #[differentiable]
//! fn step(x: &mut f64, y: f64) {
//!     *x = *x * y + y;
//! }
//!
//! let mut x = 2.0;
//! let ((), pullback) = step_vjp(&mut x, 3.0);
//! assert_eq!(x, 9.0);
//! let mut dx = 1.0; // seed: d(final x)
//! let dy = pullback((), (&mut dx,));
//! assert_eq!((dx, dy), (3.0, 3.0)); // d(final x)/d(initial x) = y, d/dy = x₀ + 1
//! ```
//!
//! The pullback of a free function without `&T` parameters borrows nothing (the inout
//! parameters are taken by value internally), so `x` is readable right after the call.
//!
//! ## Methods and `impl` blocks
//! Put `#[differentiable]` on the methods, and also on their `impl` (or `trait`) block:
//!
//! ```
//! use adjoint::prelude::*;
//!
//! #[derive(Clone, Differentiable)]
//! struct Scale {
//!     k: f64,
//! }
//!
//! #[differentiable]
//! impl Scale {
//!     #[differentiable]
//!     fn apply(&self, x: f64) -> f64 {
//!         self.k * x
//!     }
//! }
//!
//! #[differentiable]
//! fn twice(x: f64) -> f64 {
//!     let s = Scale { k: 2.0 }; // built here: its method's pullback must not borrow it
//!     s.apply(x) * x
//! }
//!
//! assert_eq!(gradient(twice_vjp(3.0)), 12.0);
//! ```
//!
//! With the block annotated, the macro knows the block's generic parameters and declares the
//! methods' pullbacks to capture only those (`impl use<B> + FnOnce(..)`). Without it a method's
//! pullback keeps its receiver and reference arguments borrowed (Rust 2024 captures every
//! lifetime in scope), which is fine for a model that outlives its pullback, but not for a
//! value built inside differentiable code.
//!
//! ## Companions and imports
//! `fn f` gets `fn f_vjp` with the same visibility and generics, and a method `m` gets a sibling
//! method `m_vjp`. Differentiable code that calls `g(x)` calls `g`'s companion instead, found by
//! Rust's ordinary name resolution: import both names, `use m::{g, g_vjp};`, or call by path,
//! `m::g(x)`.
//!
//! When the callee has no derivative, rustc reports the missing companion at the call, for
//! example ``cannot find type `g_vjp` in this scope`` for a function, or ``no method named
//! `twice_vjp_full` found`` for a method. The fix is one of: put `#[differentiable]` on `g`; import
//! `g_vjp` next to `g`; register a hand-written derivative with
//! [`#[derivative_of(g)]`](derivative_of); or, if no derivative should flow, pass
//! `without_derivative(x)`.
//!
//! ## Structs
//! `#[derive(Differentiable)]` gives a struct a tangent struct with the same field names and
//! lets differentiable code read its fields (`self.w`): see [`Differentiable`](macro@Differentiable).
//! `#[no_derivative]` fields (a rate, a size, a flag) are read like any other and carry no
//! derivative. Reading a field of an active value whose type implements `Differentiable` by hand fails
//! with ``no method named `__field_w_vjp_full` ``: derive the trait instead. A struct read as
//! a field of an active value (a nested layer) is cloned, so it must be `Clone`.
//!
//! ## Custom derivatives
//! ```
//! use adjoint::prelude::*;
//!
//! fn cube(x: f64) -> f64 {
//!     x * x * x
//! }
//!
//! #[derivative_of(cube)]
//! fn cube_vjp(x: f64) -> (f64, impl FnOnce(f64) -> f64) {
//!     (x * x * x, move |dy| dy * 3.0 * x * x)
//! }
//!
//! #[differentiable]
//! fn g(x: f64) -> f64 {
//!     cube(x) + x
//! }
//!
//! assert_eq!(gradient(g_vjp(2.0)), 13.0);
//! ```
//!
//! A rule for a method sits in the type's `impl`, and its pullback returns the tangent of
//! `self` first (a method taking `&self` says with `use<..>` that its pullback borrows nothing):
//!
//! ```
//! use adjoint::prelude::*;
//!
//! #[derive(Clone, Differentiable)]
//! struct Scale {
//!     k: f64,
//! }
//!
//! impl Scale {
//!     fn apply(&self, x: f64) -> f64 {
//!         self.k * x
//!     }
//!
//!     #[derivative_of(Scale::apply)]
//!     fn apply_rule(&self, x: f64) -> (f64, impl use<> + FnOnce(f64) -> (ScaleTangent, f64)) {
//!         let k = self.k;
//!         (k * x, move |dy| (ScaleTangent { k: dy * x }, dy * k))
//!     }
//! }
//!
//! #[differentiable]
//! fn h(s: Scale, x: f64) -> f64 {
//!     s.apply(x) * x
//! }
//!
//! let (ds, dx) = gradient(h_vjp(Scale { k: 3.0 }, 2.0));
//! assert_eq!((ds.k, dx), (4.0, 12.0));
//! ```
//!
//! ## Activity
//! Code that does not depend on a differentiated parameter, or whose value does not reach the
//! result, is emitted unchanged and never rejected: logging, assertions, shape and loop-bound
//! computations on data are free. Tangents nobody asked for are not computed: every rule takes
//! per-input flags, and calls between differentiable functions pass the caller's flags on.
//!
//! ## Derivative conventions
//! Where a derivative is undefined, adjoint follows PyTorch (`abs` at 0 has derivative 0,
//! `max`/`min` split the tangent on a tie, ...): see [`rules::methods`].

#![warn(missing_docs)]

pub use adjoint_core::*;

pub mod data;
pub mod distributed;

/// The CUDA backend ([`adjoint_cuda`]): `Tensor<Cuda>` lives on an NVIDIA GPU.
///
/// Nothing of CUDA is needed to build: the driver, cuBLAS and NVRTC load when a device is
/// opened, and [`CudaDevice::new`](cuda::CudaDevice::new) says what is missing. The module
/// exists with the `cuda` feature, on by default; `default-features = false` leaves the CUDA
/// crate out.
///
/// ```no_run
/// use adjoint::cuda::{Cuda, CudaDevice};
/// use adjoint::prelude::*;
///
/// let gpu = CudaDevice::new(0)?;
/// let x = Tensor::<Cuda>::from_vec_on(vec![1.0f32, 2.0, 3.0], &[3], &gpu);
/// let y = (&x * &x).sum_all();
/// assert_eq!(y.to_scalar(), 14.0);
/// let back: Tensor = y.to_device(&Cpu);
/// # Ok::<(), adjoint::cuda::CudaError>(())
/// ```
#[cfg(feature = "cuda")]
pub mod cuda {
    pub use adjoint_cuda::{Cuda, CudaDevice, CudaError, CudaStorage, host_waits};
}

/// Generates the reverse-mode derivative of a function: see the [crate documentation](crate).
///
/// Arguments: `wrt(x, y)` picks the differentiated parameters; `associated` marks an associated
/// function without `self`/`Self` in its signature.
pub use adjoint_macros::differentiable;

/// Registers a hand-written derivative of a function, so that `#[differentiable]` code may call
/// it: see the [crate documentation](crate#custom-derivatives).
///
/// The rule has the function's parameters and returns `(value, pullback)` where the pullback
/// maps the result's tangent to the tangents of the differentiated parameters (the tangent
/// itself for one). A rule whose parameter or value types differ from the function's, or a
/// second rule for the same function in the same module, is a compile error.
pub use adjoint_macros::derivative_of;

/// Derives [`Differentiable`] for a struct: the tangent struct `NameTangent` with the same
/// field names (`#[no_derivative]` fields left out), its vector-space operations (`zero`, `+`,
/// `+=`, `-`, `* f64`), `move_by`, and the accessors that let `#[differentiable]` code read
/// fields of an active value (`self.w`).
///
/// ```
/// use adjoint::prelude::*;
///
/// #[derive(Differentiable)]
/// struct Line {
///     slope: f64,
///     intercept: f64,
///     #[no_derivative]
///     name: &'static str,
/// }
///
/// impl Line {
///     #[differentiable]
///     fn at(&self, x: f64) -> f64 {
///         self.slope * x + self.intercept
///     }
/// }
///
/// let line = Line { slope: 2.0, intercept: 1.0, name: "l" };
/// let (_, (dline, dx)) = value_with_gradient(line.at_vjp(3.0));
/// assert_eq!((dline.slope, dline.intercept, dx), (3.0, 1.0, 2.0));
/// ```
pub use adjoint_macros::Differentiable;

/// Everything a user of adjoint needs in scope.
pub mod prelude {
    pub use crate::{Differentiable, derivative_of, differentiable};
    pub use adjoint_core::{
        Backend, Conv2d, Cpu, DType, Tensor, TensorTangent, cross_entropy, cross_entropy_vjp, mse,
        mse_vjp, nll, nll_vjp,
    };
    pub use adjoint_core::{
        Dual, Float, FloatMath, TangentVector, UnitSeed, dual, dual_eps, dual_eps_vjp, dual_re,
        dual_re_vjp, dual_vjp, gradient, value_with_gradient, without_derivative,
    };
    pub use adjoint_core::{
        Jacobian, JacobianError, hessian, hvp, jacfwd, jacobian, jacobian_by, jacrev, jacrev_by,
        jvp,
    };
}
