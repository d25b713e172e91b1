//! `Differentiable` for `Vec<T>`, `[T; N]` and `[T]`: the tangent has the same shape.
//!
//! The zero tangent of a `Vec` is the empty vector (as in Swift's `Array.TangentVector`), so
//! that "no derivative" costs no allocation; [`TangentVector::plus`] treats a shorter vector as
//! padded with zeros, and `move_by` with the empty vector changes nothing.

pub(crate) mod indexing;
pub(crate) mod ranges;
pub(crate) mod sorting;

use crate::{Differentiable, TangentVector};

impl<T: TangentVector> TangentVector for Vec<T> {
    fn zero() -> Self {
        Vec::new()
    }

    fn plus(mut self, other: Self) -> Self {
        self.plus_assign(other);
        self
    }

    fn plus_assign(&mut self, other: Self) {
        if self.is_empty() {
            *self = other;
            return;
        }
        if self.len() < other.len() {
            self.resize_with(other.len(), T::zero);
        }
        for (a, b) in self.iter_mut().zip(other) {
            a.plus_assign(b);
        }
    }

    fn scaled(self, factor: f64) -> Self {
        self.into_iter().map(|t| t.scaled(factor)).collect()
    }

    fn settled(self) -> Self {
        self.into_iter().map(T::settled).collect()
    }
}

impl<T: Differentiable> Differentiable for Vec<T> {
    type Tangent = Vec<T::Tangent>;

    /// # Panics
    /// If `tangent` is longer than `self`.
    fn move_by(&mut self, tangent: &Self::Tangent) {
        self.as_mut_slice().move_by(tangent);
    }

    fn zero_tangent(&self) -> Self::Tangent {
        self.iter().map(Differentiable::zero_tangent).collect()
    }
}

impl<T: Differentiable> Differentiable for [T] {
    type Tangent = Vec<T::Tangent>;

    /// # Panics
    /// If `tangent` is longer than `self`.
    fn move_by(&mut self, tangent: &Self::Tangent) {
        assert!(
            tangent.len() <= self.len(),
            "move_by: tangent of length {} for a value of length {}",
            tangent.len(),
            self.len()
        );
        for (x, t) in self.iter_mut().zip(tangent) {
            x.move_by(t);
        }
    }

    fn zero_tangent(&self) -> Self::Tangent {
        self.iter().map(Differentiable::zero_tangent).collect()
    }
}

impl<T: TangentVector, const N: usize> TangentVector for [T; N] {
    fn zero() -> Self {
        std::array::from_fn(|_| T::zero())
    }

    fn plus(mut self, other: Self) -> Self {
        self.plus_assign(other);
        self
    }

    fn plus_assign(&mut self, other: Self) {
        for (a, b) in self.iter_mut().zip(other) {
            a.plus_assign(b);
        }
    }

    fn scaled(self, factor: f64) -> Self {
        self.map(|t| t.scaled(factor))
    }

    fn settled(self) -> Self {
        self.map(T::settled)
    }
}

impl<T: Differentiable, const N: usize> Differentiable for [T; N] {
    type Tangent = [T::Tangent; N];

    fn move_by(&mut self, tangent: &Self::Tangent) {
        for (x, t) in self.iter_mut().zip(tangent) {
            x.move_by(t);
        }
    }
}

/// The tangent of an `Option<T>` is that of its payload (zero for `None`): `Some(x)` and the
/// pattern `Some(v)` pass derivatives through unchanged, which is what `?` and early returns
/// of optional values need.
impl<T: Differentiable> Differentiable for Option<T> {
    type Tangent = T::Tangent;

    fn move_by(&mut self, tangent: &Self::Tangent) {
        if let Some(x) = self {
            x.move_by(tangent);
        }
    }
}

/// The tangent of a `Result<T, E>` is that of its `Ok` payload (zero for `Err`).
impl<T: Differentiable, E> Differentiable for Result<T, E> {
    type Tangent = T::Tangent;

    fn move_by(&mut self, tangent: &Self::Tangent) {
        if let Ok(x) = self {
            x.move_by(tangent);
        }
    }
}
