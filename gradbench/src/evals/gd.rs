//! The gradient-descent solver of the particle and saddle evals, step for step the kit's
//! `cpp/gradbench/gd.hpp` (which every tool uses, so that all find the same point): start with
//! step η = 10⁻⁵; stop when |∇f| ≤ 10⁻⁵ or when a step moves x by ≤ 10⁻⁵; take a step only
//! when it lowers f, else halve η; after 10 accepted steps in a row double η.
//!
//! Generic over the scalar so that an outer derivative can run through it on [`Dual`]
//! numbers (comparisons look at the real parts: the path is the primal's).
//!
//! [`Dual`]: adjoint::Dual

use adjoint::prelude::*;

/// |v|.
fn magnitude<T: Float, const N: usize>(v: &[T; N]) -> T {
    let mut acc = T::ZERO;
    for &x in v {
        acc += x * x;
    }
    acc.sqrt()
}

/// |u − v|.
fn distance<T: Float, const N: usize>(u: &[T; N], v: &[T; N]) -> T {
    let mut acc = T::ZERO;
    for (&a, &b) in u.iter().zip(v) {
        acc += (a - b) * (a - b);
    }
    acc.sqrt()
}

/// The argmin of `objective` from `start`, with `gradient` its gradient.
pub fn argmin<T: Float, const N: usize>(
    objective: impl Fn(&[T; N]) -> T,
    gradient: impl Fn(&[T; N]) -> [T; N],
    start: [T; N],
) -> [T; N] {
    let tolerance = T::from_f64(1e-5);
    let mut x = start;
    let mut fx = objective(&x);
    let mut gx = gradient(&x);
    let mut i = 0;
    let mut eta = T::from_f64(1e-5);
    loop {
        if magnitude(&gx) <= tolerance {
            return x;
        } else if i == 10 {
            eta *= T::from_f64(2.0);
            i = 0;
        } else {
            let mut x_prime = x;
            for (p, &g) in x_prime.iter_mut().zip(&gx) {
                *p -= eta * g;
            }
            if distance(&x, &x_prime) <= tolerance {
                return x;
            }
            let fx_prime = objective(&x_prime);
            if fx_prime < fx {
                x = x_prime;
                fx = fx_prime;
                gx = gradient(&x);
                i += 1;
            } else {
                eta /= T::from_f64(2.0);
                i = 0;
            }
        }
    }
}

/// The argmax of `objective` from `start`: the argmin of −objective, whose gradient is
/// −`gradient`.
pub fn argmax<T: Float, const N: usize>(
    objective: impl Fn(&[T; N]) -> T,
    gradient: impl Fn(&[T; N]) -> [T; N],
    start: [T; N],
) -> [T; N] {
    argmin(|x| -objective(x), |x| gradient(x).map(|g| -g), start)
}
