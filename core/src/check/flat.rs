//! [`Checkable`]: a differentiable value seen as a flat list of `f64` elements, so that the
//! checker can perturb one element at a time and read tangents element by element.

use crate::tensor::{Cpu, DType, Tensor, TensorTangent};
use crate::{Differentiable, TangentVector};

/// A [`Differentiable`] value whose elements the gradient checker can enumerate: `f64`,
/// `Vec`s and arrays of checkable values, tuples of them, and `f64` CPU tensors.
///
/// The elements are numbered in a fixed order (a tuple's parts in order, a tensor's elements
/// in row-major order); [`unflatten`](Checkable::unflatten) builds a value of the same
/// structure from new elements, and [`flatten_tangent`](Checkable::flatten_tangent) reads a
/// tangent at `self` in the same order (a symbolic zero as zeros).
pub trait Checkable: Differentiable + Clone {
    /// The number of elements.
    fn flat_len(&self) -> usize;

    /// Appends the elements to `out`.
    fn flatten(&self, out: &mut Vec<f64>);

    /// A value of the same structure whose elements are the next [`flat_len`] of `values`.
    ///
    /// [`flat_len`]: Checkable::flat_len
    fn unflatten(&self, values: &mut std::slice::Iter<'_, f64>) -> Self;

    /// Appends the elements of `tangent`, a tangent at `self`, to `out`.
    ///
    /// # Errors
    /// A description of the mismatch if `tangent` does not have `self`'s structure (a tensor
    /// tangent of another shape, a longer `Vec`).
    fn flatten_tangent(&self, tangent: &Self::Tangent, out: &mut Vec<f64>) -> Result<(), String>;

    /// A tangent at `self` whose elements are the next [`flat_len`](Checkable::flat_len) of
    /// `values`.
    fn tangent_from(&self, values: &mut std::slice::Iter<'_, f64>) -> Self::Tangent;

    /// The element counts of the top-level inputs: one part for a single value, one per
    /// component for a tuple (so that a report names "input 1" of `(x, y)`).
    fn parts(&self) -> Vec<usize> {
        vec![self.flat_len()]
    }

    /// Why the value cannot be checked in `f64` (an `f32` tensor), if it cannot.
    fn precision_issue(&self) -> Option<String> {
        None
    }
}

/// The next element of `values`.
///
/// # Panics
/// If `values` is exhausted: a [`Checkable`] impl asked for more elements than it has.
fn next(values: &mut std::slice::Iter<'_, f64>) -> f64 {
    *values
        .next()
        .expect("Checkable::unflatten: fewer values than elements (an impl's flat_len is wrong)")
}

impl Checkable for f64 {
    fn flat_len(&self) -> usize {
        1
    }
    fn flatten(&self, out: &mut Vec<f64>) {
        out.push(*self);
    }
    fn unflatten(&self, values: &mut std::slice::Iter<'_, f64>) -> Self {
        next(values)
    }
    fn flatten_tangent(&self, tangent: &f64, out: &mut Vec<f64>) -> Result<(), String> {
        out.push(*tangent);
        Ok(())
    }
    fn tangent_from(&self, values: &mut std::slice::Iter<'_, f64>) -> f64 {
        next(values)
    }
}

impl<T: Checkable> Checkable for Vec<T> {
    fn flat_len(&self) -> usize {
        self.iter().map(Checkable::flat_len).sum()
    }
    fn flatten(&self, out: &mut Vec<f64>) {
        self.iter().for_each(|x| x.flatten(out));
    }
    fn unflatten(&self, values: &mut std::slice::Iter<'_, f64>) -> Self {
        self.iter().map(|x| x.unflatten(values)).collect()
    }
    /// A shorter tangent (the empty `Vec` is the zero) is padded with zeros.
    fn flatten_tangent(&self, tangent: &Vec<T::Tangent>, out: &mut Vec<f64>) -> Result<(), String> {
        if tangent.len() > self.len() {
            return Err(format!(
                "a tangent of length {} for a Vec of length {}",
                tangent.len(),
                self.len()
            ));
        }
        let zero = T::Tangent::zero();
        for (i, x) in self.iter().enumerate() {
            x.flatten_tangent(tangent.get(i).unwrap_or(&zero), out)
                .map_err(|e| format!("element {i}: {e}"))?;
        }
        Ok(())
    }
    fn tangent_from(&self, values: &mut std::slice::Iter<'_, f64>) -> Vec<T::Tangent> {
        self.iter().map(|x| x.tangent_from(values)).collect()
    }
    fn precision_issue(&self) -> Option<String> {
        self.iter().find_map(Checkable::precision_issue)
    }
}

impl<T: Checkable, const N: usize> Checkable for [T; N] {
    fn flat_len(&self) -> usize {
        self.iter().map(Checkable::flat_len).sum()
    }
    fn flatten(&self, out: &mut Vec<f64>) {
        self.iter().for_each(|x| x.flatten(out));
    }
    fn unflatten(&self, values: &mut std::slice::Iter<'_, f64>) -> Self {
        std::array::from_fn(|i| self[i].unflatten(values))
    }
    fn flatten_tangent(&self, tangent: &[T::Tangent; N], out: &mut Vec<f64>) -> Result<(), String> {
        for (i, (x, t)) in self.iter().zip(tangent).enumerate() {
            x.flatten_tangent(t, out)
                .map_err(|e| format!("element {i}: {e}"))?;
        }
        Ok(())
    }
    fn tangent_from(&self, values: &mut std::slice::Iter<'_, f64>) -> [T::Tangent; N] {
        std::array::from_fn(|i| self[i].tangent_from(values))
    }
    fn precision_issue(&self) -> Option<String> {
        self.iter().find_map(Checkable::precision_issue)
    }
}

impl Checkable for Tensor<Cpu> {
    fn flat_len(&self) -> usize {
        self.len()
    }
    fn flatten(&self, out: &mut Vec<f64>) {
        out.extend(self.to_vec_f64());
    }
    /// The same shape and dtype.
    fn unflatten(&self, values: &mut std::slice::Iter<'_, f64>) -> Self {
        let data: Vec<f64> = (0..self.len()).map(|_| next(values)).collect();
        Tensor::from_vec(data, self.shape()).to_dtype(self.dtype())
    }
    /// The symbolic zero reads as zeros; a dense tangent must have `self`'s shape.
    fn flatten_tangent(&self, tangent: &TensorTangent, out: &mut Vec<f64>) -> Result<(), String> {
        match tangent.dense_ref() {
            None => out.extend(std::iter::repeat_n(0.0, self.len())),
            Some(t) if t.shape() == self.shape() => out.extend(t.to_vec_f64()),
            Some(t) => {
                return Err(format!(
                    "a tangent of shape {:?} for a tensor of shape {:?}",
                    t.shape(),
                    self.shape()
                ));
            }
        }
        Ok(())
    }
    fn tangent_from(&self, values: &mut std::slice::Iter<'_, f64>) -> TensorTangent {
        TensorTangent::Dense(self.unflatten(values))
    }
    fn precision_issue(&self) -> Option<String> {
        (self.dtype() != DType::F64).then(|| {
            format!(
                "a {:?} tensor of shape {:?}: finite differences need F64 (convert with to_dtype(DType::F64))",
                self.dtype(),
                self.shape()
            )
        })
    }
}

macro_rules! tuple_checkable {
    ($(($($name:ident $idx:tt),+))*) => {$(
        impl<$($name: Checkable),+> Checkable for ($($name,)+) {
            fn flat_len(&self) -> usize {
                0 $(+ self.$idx.flat_len())+
            }
            fn flatten(&self, out: &mut Vec<f64>) {
                $(self.$idx.flatten(out);)+
            }
            fn unflatten(&self, values: &mut std::slice::Iter<'_, f64>) -> Self {
                ($(self.$idx.unflatten(values),)+)
            }
            fn flatten_tangent(&self, tangent: &Self::Tangent, out: &mut Vec<f64>) -> Result<(), String> {
                $(self.$idx.flatten_tangent(&tangent.$idx, out)
                    .map_err(|e| format!("part {}: {e}", $idx))?;)+
                Ok(())
            }
            fn tangent_from(&self, values: &mut std::slice::Iter<'_, f64>) -> Self::Tangent {
                ($(self.$idx.tangent_from(values),)+)
            }
            fn parts(&self) -> Vec<usize> {
                vec![$(self.$idx.flat_len()),+]
            }
            fn precision_issue(&self) -> Option<String> {
                None $(.or_else(|| self.$idx.precision_issue()))+
            }
        }
    )*};
}
crate::differentiable::for_tuples!(tuple_checkable);
