//! JAX-like helpers on the companions of a `#[differentiable(forward)]` function: [`jvp`] (the
//! value and `J·v`), and the whole Jacobian `J = ∂f/∂x` by forward mode ([`jacfwd`], one jvp
//! per input element), by reverse mode ([`jacrev`], one pullback per output element) or by
//! whichever needs fewer passes ([`jacobian`]).
//!
//! Inputs and outputs are [`Checkable`]: `f64`, `Vec`s and arrays of them, CPU tensors, and
//! tuples of these (a tuple for several parameters: `|(x, y), (dx, dy)| f_jvp(x, y, dx, dy)`).
//! Their elements are numbered as [`Checkable`] flattens them, which fixes the rows (outputs)
//! and columns (inputs) of the [`Jacobian`]. Bad input is a [`JacobianError`], never a panic.

mod hessian;
mod matrix;

pub use hessian::{hessian, hvp};
pub use matrix::{Jacobian, JacobianError};

use crate::check::Checkable;

/// The value `f(x)` and the directional derivative `J·v = ∂f/∂x · v`, from a forward companion
/// (JAX's `jax.jvp`): `f_jvp` is called once, as `f_jvp(x, v)`.
///
/// `v` is first read at `x` and rebuilt with `x`'s full structure, so that `f_jvp` gets a
/// well-formed tangent: a `Vec` tangent shorter than its value stands for zeros beyond its end
/// (the [`TangentVector`](crate::TangentVector) convention), a symbolic zero tensor tangent
/// for zeros.
///
/// ```
/// use adjoint::prelude::*;
///
/// #[differentiable(forward)]
/// fn f(x: f64, y: f64) -> f64 {
///     x * y + x.sin()
/// }
///
/// // ∂f/∂x · 1 + ∂f/∂y · 0.5 = (y + cos x) + 0.5·x
/// let (value, dv) = jvp(|(x, y), (dx, dy)| f_jvp(x, y, dx, dy), (2.0, 3.0), (1.0, 0.5)).unwrap();
/// assert_eq!(value, 6.0 + 2.0_f64.sin());
/// assert_eq!(dv, 3.0 + 2.0_f64.cos() + 1.0);
///
/// // A tangent of another structure is a typed error.
/// #[differentiable(forward)]
/// fn norm2(v: &[f64]) -> f64 {
///     let mut s = 0.0;
///     for i in 0..v.len() {
///         s += v[i] * v[i];
///     }
///     s
/// }
/// let err = jvp(|v: Vec<f64>, dv: Vec<f64>| norm2_jvp(&v, &dv), vec![1.0, 2.0], vec![1.0; 3]);
/// assert!(matches!(err, Err(JacobianError::SeedShape { .. })));
/// ```
///
/// # Errors
/// [`JacobianError::SeedShape`] if `v` does not fit `x`; [`JacobianError::NonFiniteSeed`] or
/// [`JacobianError::NonFiniteInput`] for a NaN or infinite element of `v` or `x`;
/// [`JacobianError::TangentShape`] if the returned tangent does not fit the value.
pub fn jvp<X, Y>(
    f_jvp: impl FnOnce(X, X::Tangent) -> (Y, Y::Tangent),
    x: X,
    v: X::Tangent,
) -> Result<(Y, Y::Tangent), JacobianError>
where
    X: Checkable,
    Y: Checkable,
{
    finite_elements(&x)?;
    let mut seed = Vec::with_capacity(x.flat_len());
    x.flatten_tangent(&v, &mut seed)
        .map_err(|message| JacobianError::SeedShape { message })?;
    if let Some((element, &value)) = seed.iter().enumerate().find(|(_, s)| !s.is_finite()) {
        return Err(JacobianError::NonFiniteSeed { element, value });
    }
    let v = x.tangent_from(&mut seed.iter());
    let (y, t) = f_jvp(x, v);
    flat_output_tangent(&y, &t)?;
    Ok((y, t))
}

/// The Jacobian `J = ∂f/∂x` (`m × n`) by forward mode, like JAX's `jax.jacfwd`: column `j` is
/// `J·eⱼ`, the jvp along the `j`-th basis tangent of `x`, so `f_jvp` is called `n` times (once
/// if `x` has no elements, to learn `m`). The cheaper mode when `n ≤ m`.
///
/// ```
/// use adjoint::prelude::*;
///
/// /// Polar to Cartesian coordinates: (r cos θ, r sin θ).
/// #[differentiable(forward)]
/// fn cartesian(r: f64, theta: f64) -> [f64; 2] {
///     [r * theta.cos(), r * theta.sin()]
/// }
///
/// let (r, t) = (2.0, 0.5_f64);
/// let j = jacfwd(|(r, t), (dr, dt)| cartesian_jvp(r, t, dr, dt), &(r, t)).unwrap();
/// assert_eq!((j.rows(), j.cols()), (2, 2));
/// assert_eq!(j.row(0), Some(&[t.cos(), -r * t.sin()][..]));
/// assert_eq!(j.row(1), Some(&[t.sin(), r * t.cos()][..]));
/// ```
///
/// # Errors
/// [`JacobianError::NonFiniteInput`] for a NaN or infinite element of `x`;
/// [`JacobianError::TangentShape`] if a returned tangent does not fit the value;
/// [`JacobianError::OutputChanged`] if the output's size changes between calls.
pub fn jacfwd<X, Y>(
    f_jvp: impl Fn(X, X::Tangent) -> (Y, Y::Tangent),
    x: &X,
) -> Result<Jacobian, JacobianError>
where
    X: Checkable,
    Y: Checkable,
{
    finite_elements(x)?;
    let (_, first) = basis_column(&f_jvp, x, 0)?;
    forward_from(first, &f_jvp, x)
}

/// The Jacobian `J = ∂f/∂x` (`m × n`) by reverse mode, like JAX's `jax.jacrev`: row `i` is
/// `Jᵀ·eᵢ`, the pullback of the `i`-th basis cotangent of the output, so `f_vjp` is called `m`
/// times (once if the output has no elements). The cheaper mode when `m < n`. For a companion
/// that borrows its inputs (`fn f(x: &[f64])`), see [`jacrev_by`].
///
/// ```
/// use adjoint::prelude::*;
///
/// #[differentiable(forward)]
/// fn cartesian(r: f64, theta: f64) -> [f64; 2] {
///     [r * theta.cos(), r * theta.sin()]
/// }
///
/// let x = (2.0, 0.5);
/// let rev = jacrev(|(r, t)| cartesian_vjp(r, t), &x).unwrap();
/// let fwd = jacfwd(|(r, t), (dr, dt)| cartesian_jvp(r, t, dr, dt), &x).unwrap();
/// assert!(rev.max_abs_diff(&fwd).unwrap() < 1e-15);
/// ```
///
/// # Errors
/// As [`jacfwd`], with [`JacobianError::TangentShape`] for a pullback's tangent that does not
/// fit the input.
pub fn jacrev<X, Y, P>(f_vjp: impl Fn(X) -> (Y, P), x: &X) -> Result<Jacobian, JacobianError>
where
    X: Checkable,
    Y: Checkable,
    P: FnOnce(Y::Tangent) -> X::Tangent,
{
    finite_elements(x)?;
    let first = f_vjp(x.clone());
    let m = first.0.flat_len();
    reverse_rows(x, m, owned_pullbacks(&f_vjp, x, m, Some(first)))
}

/// [`jacrev`] for a companion whose pullback borrows its inputs (`fn f(x: &[f64])`, which a
/// closure cannot return): `value` computes `f(x)` (called once, for the output's structure),
/// `vjp` the pullback of a cotangent (`m` calls), as in
/// [`check_gradient_by`](crate::check::check_gradient_by).
///
/// ```
/// use adjoint::prelude::*;
///
/// #[differentiable(forward)]
/// fn moments(x: &[f64]) -> [f64; 2] {
///     let mut s = 0.0;
///     let mut q = 0.0;
///     for i in 0..x.len() {
///         s += x[i];
///         q += x[i] * x[i];
///     }
///     [s, q]
/// }
///
/// let j = jacrev_by(|x: &Vec<f64>| moments(x), |x, w| moments_vjp(x).1(w), &vec![1.0, -2.0]).unwrap();
/// assert_eq!(j.as_slice(), &[1.0, 1.0, 2.0, -4.0]);
/// ```
///
/// # Errors
/// As [`jacrev`].
pub fn jacrev_by<X, Y>(
    value: impl Fn(&X) -> Y,
    vjp: impl Fn(&X, Y::Tangent) -> X::Tangent,
    x: &X,
) -> Result<Jacobian, JacobianError>
where
    X: Checkable,
    Y: Checkable,
{
    finite_elements(x)?;
    let y = value(x);
    reverse_rows(x, y.flat_len(), |seed| {
        Ok(vjp(x, y.tangent_from(&mut seed.iter())))
    })
}

/// The Jacobian `J = ∂f/∂x` (`m × n`) by the mode that needs fewer passes: forward ([`jacfwd`],
/// `n` jvps) when `n ≤ m`, reverse ([`jacrev`], `m` pullbacks) when `n > m`. A tie goes to
/// forward mode, since a jvp stores nothing.
///
/// The first jvp, along `e₀`, tells `m`; it is column 0 of the forward result and is wasted
/// only when reverse mode is picked. For a companion that borrows its inputs, see
/// [`jacobian_by`].
///
/// ```
/// use adjoint::prelude::*;
///
/// #[differentiable(forward)]
/// fn weighted(x: Vec<f64>) -> f64 {
///     let mut s = 0.0;
///     for i in 0..x.len() {
///         s += (i as f64 + 1.0) * x[i] * x[i];
///     }
///     s
/// }
///
/// // 3 inputs, 1 output: reverse mode, one pullback. ∂/∂xᵢ = 2(i + 1)xᵢ.
/// let j = jacobian(|x, dx| weighted_jvp(x, dx), |x| weighted_vjp(x), &vec![1.0, -1.0, 0.5]).unwrap();
/// assert_eq!(j.as_slice(), &[2.0, -4.0, 3.0]);
/// ```
///
/// # Errors
/// As [`jacfwd`] and [`jacrev`].
pub fn jacobian<X, Y, P>(
    f_jvp: impl Fn(X, X::Tangent) -> (Y, Y::Tangent),
    f_vjp: impl Fn(X) -> (Y, P),
    x: &X,
) -> Result<Jacobian, JacobianError>
where
    X: Checkable,
    Y: Checkable,
    P: FnOnce(Y::Tangent) -> X::Tangent,
{
    finite_elements(x)?;
    let (y, first) = basis_column(&f_jvp, x, 0)?;
    let m = y.flat_len();
    if x.flat_len() <= m {
        forward_from(first, &f_jvp, x)
    } else {
        reverse_rows(x, m, owned_pullbacks(&f_vjp, x, m, None))
    }
}

/// [`jacobian`] for companions that borrow their inputs: `vjp` is the pullback of a cotangent,
/// as in [`jacrev_by`] (the output's structure comes from the first jvp).
///
/// ```
/// use adjoint::prelude::*;
///
/// #[differentiable(forward)]
/// fn outer(x: &[f64]) -> [f64; 3] {
///     [x[0] * x[1], x[0].exp(), x[1].sin()]
/// }
///
/// // 2 inputs, 3 outputs: forward mode, two jvps.
/// let x = vec![0.5, 2.0_f64];
/// let j = jacobian_by(
///     |x: Vec<f64>, dx: Vec<f64>| outer_jvp(&x, &dx),
///     |x, w| outer_vjp(x).1(w),
///     &x,
/// )
/// .unwrap();
/// assert_eq!(j.as_slice(), &[2.0, 0.5, 0.5_f64.exp(), 0.0, 0.0, 2.0_f64.cos()]);
/// ```
///
/// # Errors
/// As [`jacfwd`] and [`jacrev`].
pub fn jacobian_by<X, Y>(
    f_jvp: impl Fn(X, X::Tangent) -> (Y, Y::Tangent),
    vjp: impl Fn(&X, Y::Tangent) -> X::Tangent,
    x: &X,
) -> Result<Jacobian, JacobianError>
where
    X: Checkable,
    Y: Checkable,
{
    finite_elements(x)?;
    let (y, first) = basis_column(&f_jvp, x, 0)?;
    let m = y.flat_len();
    if x.flat_len() <= m {
        forward_from(first, &f_jvp, x)
    } else {
        reverse_rows(x, m, |seed| Ok(vjp(x, y.tangent_from(&mut seed.iter()))))
    }
}

/// The output and the jvp of `f_jvp` at `x` along the basis tangent `e_j` (the zero tangent if
/// `x` has fewer than `j + 1` elements), flat.
fn basis_column<X: Checkable, Y: Checkable>(
    f_jvp: &impl Fn(X, X::Tangent) -> (Y, Y::Tangent),
    x: &X,
    j: usize,
) -> Result<(Y, Vec<f64>), JacobianError> {
    let mut basis = vec![0.0; x.flat_len()];
    if let Some(e) = basis.get_mut(j) {
        *e = 1.0;
    }
    let (y, t) = f_jvp(x.clone(), x.tangent_from(&mut basis.iter()));
    let column = flat_output_tangent(&y, &t)?;
    Ok((y, column))
}

/// The forward-mode Jacobian given its first column.
fn forward_from<X: Checkable, Y: Checkable>(
    first: Vec<f64>,
    f_jvp: &impl Fn(X, X::Tangent) -> (Y, Y::Tangent),
    x: &X,
) -> Result<Jacobian, JacobianError> {
    let (m, n) = (first.len(), x.flat_len());
    let mut columns = first;
    if n == 0 {
        return Ok(Jacobian::from_columns(m, 0, &[]));
    }
    columns.reserve(m * (n - 1));
    for j in 1..n {
        let (_, column) = basis_column(f_jvp, x, j)?;
        same_output_size(m, column.len())?;
        columns.extend(column);
    }
    Ok(Jacobian::from_columns(m, n, &columns))
}

/// The pullbacks of a companion `f_vjp` that takes `x` by value, one call per seed (the first
/// from `first` if given), each checked to have an output of `m` elements.
fn owned_pullbacks<'a, X, Y, P>(
    f_vjp: &'a impl Fn(X) -> (Y, P),
    x: &'a X,
    m: usize,
    mut first: Option<(Y, P)>,
) -> impl FnMut(&[f64]) -> Result<X::Tangent, JacobianError> + 'a
where
    X: Checkable,
    Y: Checkable + 'a,
    P: FnOnce(Y::Tangent) -> X::Tangent + 'a,
{
    move |seed| {
        let (y, pullback) = first.take().unwrap_or_else(|| f_vjp(x.clone()));
        same_output_size(m, y.flat_len())?;
        Ok(pullback(y.tangent_from(&mut seed.iter())))
    }
}

/// The reverse-mode Jacobian with `m` rows: row `i` is the flat tangent `pull(eᵢ)`.
fn reverse_rows<X: Checkable>(
    x: &X,
    m: usize,
    mut pull: impl FnMut(&[f64]) -> Result<X::Tangent, JacobianError>,
) -> Result<Jacobian, JacobianError> {
    let n = x.flat_len();
    let mut data = Vec::with_capacity(m * n);
    let mut seed = vec![0.0; m];
    for i in 0..m {
        seed[i] = 1.0;
        let tangent = pull(&seed)?;
        seed[i] = 0.0;
        x.flatten_tangent(&tangent, &mut data)
            .map_err(|e| JacobianError::TangentShape {
                message: format!("the pullback's tangent does not fit the input: {e}"),
            })?;
    }
    Jacobian::from_row_major(m, n, data)
}

/// The elements of the tangent `t` at the output `y`.
fn flat_output_tangent<Y: Checkable>(y: &Y, t: &Y::Tangent) -> Result<Vec<f64>, JacobianError> {
    let mut out = Vec::with_capacity(y.flat_len());
    y.flatten_tangent(t, &mut out)
        .map_err(|e| JacobianError::TangentShape {
            message: format!("the jvp's tangent does not fit its value: {e}"),
        })?;
    Ok(out)
}

/// An error naming the first non-finite element of `x`, if any.
fn finite_elements<X: Checkable>(x: &X) -> Result<(), JacobianError> {
    let mut flat = Vec::with_capacity(x.flat_len());
    x.flatten(&mut flat);
    match flat.into_iter().enumerate().find(|(_, v)| !v.is_finite()) {
        Some((element, value)) => Err(JacobianError::NonFiniteInput { element, value }),
        None => Ok(()),
    }
}

/// An error if a call's output size `now` differs from the first call's.
fn same_output_size(first: usize, now: usize) -> Result<(), JacobianError> {
    if first == now {
        Ok(())
    } else {
        Err(JacobianError::OutputChanged { first, now })
    }
}
