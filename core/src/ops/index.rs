//! Slicing, joining and gathering (splitting is in [`split`](super::split)).
//!
//! | op | value | derivative |
//! |---|---|---|
//! | `x.narrow(a, s, n)` | elements `s..s+n` along axis `a` | ȳ placed at `s..s+n`, zeros elsewhere |
//! | `Tensor::cat(xs, a)` | the parts joined along `a` | each part gets its slice of ȳ |
//! | `Tensor::stack(xs, a)` | the parts joined along a new axis `a` | each part gets its slice |
//! | `x.index_select(a, ids)` | rows `ids[j]` of axis `a` | ȳ rows added back at `ids[j]` |
//! | `table.embedding(ids)` | rows of a `[V, D]` table: `[…ids, D]` | ȳ rows added back |
//!
//! Ids are `U32` tensors; an id out of range panics naming the op and the size.

use super::forward::{linear, linear_jvp, zero_if};
use super::slot;
use crate::NoTangent;
use crate::tensor::error::{TensorError, ensure, or_panic};
use crate::tensor::{Backend, DType, Tensor, TensorTangent};

/// A list of tensors for [`cat`](Tensor::cat) and [`stack`](Tensor::stack): a slice, a
/// `Vec` or an array, whose tangent is the matching list of tangents (so that
/// `Tensor::cat(&[a, b], 0)` in `#[differentiable]` code gets an array tangent).
pub trait TensorList<B: Backend> {
    /// The tangent of the list: `Vec<TensorTangent>` or `[TensorTangent; N]`.
    type Tangents;
    /// The tensors.
    fn tensors(&self) -> &[Tensor<B>];
    /// The list tangent from one tangent per tensor (or none at all, for zero).
    fn from_tangents(tangents: Vec<TensorTangent<B>>) -> Self::Tangents;
    /// The tangents of the list, one per tensor (fewer: the rest are zero).
    fn tangent_slice(tangents: &Self::Tangents) -> &[TensorTangent<B>];
}

impl<B: Backend> TensorList<B> for [Tensor<B>] {
    type Tangents = Vec<TensorTangent<B>>;
    fn tensors(&self) -> &[Tensor<B>] {
        self
    }
    fn from_tangents(tangents: Vec<TensorTangent<B>>) -> Self::Tangents {
        tangents
    }
    fn tangent_slice(tangents: &Self::Tangents) -> &[TensorTangent<B>] {
        tangents
    }
}

impl<B: Backend> TensorList<B> for Vec<Tensor<B>> {
    type Tangents = Vec<TensorTangent<B>>;
    fn tensors(&self) -> &[Tensor<B>] {
        self
    }
    fn from_tangents(tangents: Vec<TensorTangent<B>>) -> Self::Tangents {
        tangents
    }
    fn tangent_slice(tangents: &Self::Tangents) -> &[TensorTangent<B>] {
        tangents
    }
}

impl<B: Backend, const N: usize> TensorList<B> for [Tensor<B>; N] {
    type Tangents = [TensorTangent<B>; N];
    fn tensors(&self) -> &[Tensor<B>] {
        self
    }
    fn from_tangents(tangents: Vec<TensorTangent<B>>) -> Self::Tangents {
        let mut it = tangents.into_iter();
        std::array::from_fn(|_| it.next().unwrap_or(TensorTangent::Zero))
    }
    fn tangent_slice(tangents: &Self::Tangents) -> &[TensorTangent<B>] {
        tangents
    }
}

impl<B: Backend> Tensor<B> {
    /// Elements `start..start + len` along `axis` (a copy): `y[…, i, …] = x[…, start + i, …]`.
    /// Derivative: ȳ placed at `start..start + len` along `axis`, zeros elsewhere.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     (x.narrow(0, 1, 2) * Tensor::from_vec(vec![1.0, 2.0], &[2])).sum_all()
    /// }
    /// let x = Tensor::from_vec(vec![5.0, 6.0, 7.0, 8.0], &[4]);
    /// assert_eq!(x.narrow(0, 1, 2).to_vec_f64(), [6.0, 7.0]);
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [0.0, 1.0, 2.0, 0.0]);
    /// ```
    ///
    /// # Panics
    /// If the range does not fit in the axis.
    #[track_caller]
    pub fn narrow(&self, axis: isize, start: usize, len: usize) -> Self {
        or_panic(self.try_narrow(axis, start, len))
    }

    /// [`narrow`](Tensor::narrow) returning an error.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let e = Tensor::zeros(&[3]).try_narrow(0, 2, 2).unwrap_err();
    /// assert_eq!(e.to_string(), "narrow: range 2..4 is outside axis 0 of shape [3]");
    /// ```
    pub fn try_narrow(&self, axis: isize, start: usize, len: usize) -> Result<Self, TensorError> {
        let a = crate::tensor::shape::normalize_axis("narrow", axis, self.rank(), self.shape())?;
        ensure(start + len <= self.shape()[a], "narrow", || {
            format!(
                "range {start}..{} is outside axis {a} of shape {:?}",
                start + len,
                self.shape()
            )
        })?;
        let mut shape = self.shape().to_vec();
        shape[a] = len;
        Ok(Tensor::from_storage(
            B::narrow(self.storage(), self.shape(), a, start, len),
            shape,
        ))
    }

    /// Derivative rule of [`narrow`](Tensor::narrow): ȳ padded with zeros back to x's shape.
    #[track_caller]
    pub fn narrow_vjp_full(
        &self,
        axis: isize,
        start: usize,
        len: usize,
        needs: [bool; 4],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, NoTangent, NoTangent, NoTangent) + use<B>,
    ) {
        let y = self.narrow(axis, start, len);
        let a = self.axis("narrow", axis);
        let shape = self.shape().to_vec();
        (y, move |d| {
            let dx = slot(needs[0], &d, |d| {
                let block = |n: usize| {
                    let mut s = shape.clone();
                    s[a] = n;
                    Tensor::zeros_on(&s, d.dtype(), &d.device())
                };
                Tensor::cat(
                    &[block(start), d.clone(), block(shape[a] - start - len)][..],
                    a as isize,
                )
            });
            (dx, NoTangent, NoTangent, NoTangent)
        })
    }

    /// The parts joined along `axis`; all shapes must agree off that axis. Derivative: part
    /// `k` gets its slice of ȳ along `axis`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// #[differentiable]
    /// fn f(a: &Tensor, b: &Tensor) -> Tensor {
    ///     let w = Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3]);
    ///     (Tensor::cat(&[a.clone(), b.clone()], 0) * w).sum_all()
    /// }
    /// let (a, b) = (Tensor::from_vec(vec![1.0], &[1]), Tensor::from_vec(vec![2.0, 3.0], &[2]));
    /// assert_eq!(Tensor::cat(&[a.clone(), b.clone()], 0).to_vec_f64(), [1.0, 2.0, 3.0]);
    /// let (da, db) = gradient(f_vjp(&a, &b));
    /// assert_eq!(da.unwrap().to_vec_f64(), [1.0]);
    /// assert_eq!(db.unwrap().to_vec_f64(), [2.0, 3.0]);
    /// ```
    ///
    /// # Panics
    /// If `parts` is empty, ranks or off-axis sizes differ, or dtypes differ.
    #[track_caller]
    pub fn cat<P: TensorList<B> + ?Sized>(parts: &P, axis: isize) -> Self {
        or_panic(Self::try_cat(parts.tensors(), axis))
    }

    /// [`cat`](Tensor::cat) returning an error.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let e = Tensor::try_cat(&[Tensor::zeros(&[2, 1]), Tensor::zeros(&[3, 2])], 0);
    /// let message = "cat: shapes [[2, 1], [3, 2]] must agree except on axis 0 (dtypes F32)";
    /// assert_eq!(e.unwrap_err().to_string(), message);
    /// ```
    pub fn try_cat(parts: &[Self], axis: isize) -> Result<Self, TensorError> {
        ensure(!parts.is_empty(), "cat", || {
            "needs at least one tensor".into()
        })?;
        let first = &parts[0];
        let a = crate::tensor::shape::normalize_axis("cat", axis, first.rank(), first.shape())?;
        let mut shape = first.shape().to_vec();
        shape[a] = 0;
        for p in parts {
            let same = p.rank() == first.rank()
                && p.dtype() == first.dtype()
                && (0..p.rank()).all(|i| i == a || p.shape()[i] == first.shape()[i]);
            ensure(same, "cat", || {
                format!(
                    "shapes {:?} must agree except on axis {a} (dtypes {:?})",
                    parts.iter().map(|p| p.shape().to_vec()).collect::<Vec<_>>(),
                    first.dtype()
                )
            })?;
            shape[a] += p.shape()[a];
        }
        let views: Vec<(&B::Storage, &[usize])> =
            parts.iter().map(|p| (p.storage(), p.shape())).collect();
        Ok(Tensor::from_storage(B::cat(&views, a), shape))
    }

    /// Derivative rule of [`cat`](Tensor::cat): part `i` gets its slice of ȳ.
    #[track_caller]
    pub fn cat_vjp_full<P: TensorList<B> + ?Sized>(
        parts: &P,
        axis: isize,
        needs: [bool; 2],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (P::Tangents, NoTangent) + use<B, P>,
    ) {
        let parts = parts.tensors();
        let y = Self::cat(parts, axis);
        let sizes: Vec<usize> = parts
            .iter()
            .map(|p| p.shape()[y.axis("cat", axis)])
            .collect();
        (y, move |d| {
            let mut start = 0;
            let dparts = sizes
                .iter()
                .map(|&n| {
                    let t = slot(needs[0], &d, |d| d.narrow(axis, start, n));
                    start += n;
                    t
                })
                .collect();
            (
                P::from_tangents(if needs[0] { dparts } else { Vec::new() }),
                NoTangent,
            )
        })
    }

    /// The parts (of equal shapes) stacked along a new axis `axis`: `y[…, k, …] = xₖ[…]`.
    /// Derivative: part `k` gets slice `k` of ȳ along `axis`.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// #[differentiable]
    /// fn f(a: &Tensor, b: &Tensor) -> Tensor {
    ///     let w = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    ///     (Tensor::stack(&[a.clone(), b.clone()], 1) * w).sum_all()
    /// }
    /// let a = Tensor::from_vec(vec![1.0, 2.0], &[2]);
    /// let b = Tensor::from_vec(vec![3.0, 4.0], &[2]);
    /// assert_eq!(Tensor::stack(&[a.clone(), b.clone()], 1).to_vec_f64(), [1.0, 3.0, 2.0, 4.0]);
    /// let (da, db) = gradient(f_vjp(&a, &b));
    /// assert_eq!(da.unwrap().to_vec_f64(), [1.0, 3.0]);
    /// assert_eq!(db.unwrap().to_vec_f64(), [2.0, 4.0]);
    /// ```
    ///
    /// # Panics
    /// If `parts` is empty or their shapes or dtypes differ.
    #[track_caller]
    pub fn stack<P: TensorList<B> + ?Sized>(parts: &P, axis: isize) -> Self {
        let expanded: Vec<Self> = parts.tensors().iter().map(|p| p.unsqueeze(axis)).collect();
        Self::cat(&expanded[..], axis)
    }

    /// Derivative rule of [`stack`](Tensor::stack): part `i` gets slice `i` of ȳ.
    #[track_caller]
    pub fn stack_vjp_full<P: TensorList<B> + ?Sized>(
        parts: &P,
        axis: isize,
        needs: [bool; 2],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (P::Tangents, NoTangent) + use<B, P>,
    ) {
        let expanded: Vec<Self> = parts.tensors().iter().map(|p| p.unsqueeze(axis)).collect();
        let shapes: Vec<Vec<usize>> = parts.tensors().iter().map(|p| p.shape().to_vec()).collect();
        let (y, pb) = Self::cat_vjp_full(&expanded[..], axis, needs);
        (y, move |d| {
            let (parts, _) = pb(d);
            let parts = parts
                .into_iter()
                .zip(shapes)
                .map(|(t, s)| t.map(|t| t.reshape(&s)))
                .collect();
            (P::from_tangents(parts), NoTangent)
        })
    }

    fn check_ids(&self, ids: &Self, size: usize, op: &'static str) -> Result<(), TensorError> {
        ensure(ids.dtype() == DType::U32, op, || {
            format!("ids must be U32, got {:?}", ids.dtype())
        })?;
        if let Some(max) = B::max_id(ids.storage()) {
            ensure((max as usize) < size, op, || {
                format!(
                    "id {max} is out of range for size {size} (shape {:?})",
                    self.shape()
                )
            })?;
        }
        Ok(())
    }

    /// Rows `ids[j]` along `axis`: `out[…, j, …] = x[…, ids[j], …]` (ids a rank-1 `U32`
    /// tensor). Derivative: the rows of ȳ added back at their ids (a repeated id accumulates).
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// #[differentiable(wrt(x))]
    /// fn f(x: &Tensor, ids: &Tensor) -> Tensor {
    ///     x.index_select(0, ids).sum_all()
    /// }
    /// let x = Tensor::from_vec(vec![10.0, 20.0, 30.0], &[3]);
    /// let ids = Tensor::from_vec(vec![2_u32, 0, 2], &[3]);
    /// assert_eq!(x.index_select(0, &ids).to_vec_f64(), [30.0, 10.0, 30.0]);
    /// assert_eq!(gradient(f_vjp(&x, &ids)).unwrap().to_vec_f64(), [1.0, 0.0, 2.0]);
    /// ```
    ///
    /// # Panics
    /// On a bad axis, non-`U32` or non-rank-1 ids, or an id out of range.
    #[track_caller]
    pub fn index_select(&self, axis: isize, ids: &Self) -> Self {
        or_panic(self.try_index_select(axis, ids))
    }

    /// [`index_select`](Tensor::index_select) returning an error.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let ids = Tensor::from_vec(vec![3_u32], &[1]);
    /// let e = Tensor::zeros(&[3]).try_index_select(0, &ids).unwrap_err();
    /// assert_eq!(e.to_string(), "index_select: id 3 is out of range for size 3 (shape [3])");
    /// ```
    pub fn try_index_select(&self, axis: isize, ids: &Self) -> Result<Self, TensorError> {
        self.check_float("index_select")?;
        let a =
            crate::tensor::shape::normalize_axis("index_select", axis, self.rank(), self.shape())?;
        ensure(ids.rank() == 1, "index_select", || {
            format!("ids must have rank 1, got shape {:?}", ids.shape())
        })?;
        self.check_ids(ids, self.shape()[a], "index_select")?;
        let mut shape = self.shape().to_vec();
        shape[a] = ids.len();
        Ok(Tensor::from_storage(
            B::index_select(self.storage(), self.shape(), a, ids.storage()),
            shape,
        ))
    }

    /// Derivative rule of [`index_select`](Tensor::index_select): ȳ rows added back at their
    /// ids (repeated ids accumulate); the ids' tangent is the symbolic zero.
    #[track_caller]
    pub fn index_select_vjp_full(
        &self,
        axis: isize,
        ids: &Self,
        needs: [bool; 3],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, NoTangent, TensorTangent<B>) + use<B>,
    ) {
        let y = self.index_select(axis, ids);
        let (a, ids, shape) = (
            self.axis("index_select", axis),
            ids.clone(),
            self.shape().to_vec(),
        );
        (y, move |d| {
            let dx = slot(needs[0], &d, |d| {
                Tensor::from_storage(
                    B::index_add(d.storage(), &shape, a, ids.storage()),
                    shape.clone(),
                )
            });
            (dx, NoTangent, TensorTangent::Zero)
        })
    }

    /// Embedding lookup: rows of the `[V, D]` table `self` picked by `U32` ids of any shape;
    /// the result has shape `[…ids.shape, D]`, `y[…, d] = table[ids[…], d]`. Derivative: each
    /// row of ȳ added to the table row of its id (a repeated id accumulates).
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// #[differentiable(wrt(table))]
    /// fn f(table: &Tensor, ids: &Tensor) -> Tensor {
    ///     table.embedding(ids).sum_all()
    /// }
    /// let table = Tensor::from_vec(vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0], &[3, 2]);
    /// let ids = Tensor::from_vec(vec![2_u32, 0, 2], &[1, 3]);
    /// let y = table.embedding(&ids);
    /// assert_eq!(y.shape(), [1, 3, 2]);
    /// assert_eq!(y.to_vec_f64(), [4.0, 5.0, 0.0, 1.0, 4.0, 5.0]);
    /// let d = gradient(f_vjp(&table, &ids)).unwrap();
    /// assert_eq!(d.to_vec_f64(), [1.0, 1.0, 0.0, 0.0, 2.0, 2.0]);
    /// ```
    ///
    /// # Panics
    /// If the table is not of rank 2, the ids are not `U32` or an id is out of range.
    #[track_caller]
    pub fn embedding(&self, ids: &Self) -> Self {
        or_panic(self.try_embedding(ids))
    }

    /// [`embedding`](Tensor::embedding) returning an error.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let ids = Tensor::from_vec(vec![0_u32], &[1]);
    /// let e = Tensor::zeros(&[4]).try_embedding(&ids).unwrap_err();
    /// assert_eq!(e.to_string(), "embedding: the table must be [V, D], got [4]");
    /// ```
    pub fn try_embedding(&self, ids: &Self) -> Result<Self, TensorError> {
        ensure(self.rank() == 2, "embedding", || {
            format!("the table must be [V, D], got {:?}", self.shape())
        })?;
        self.check_ids(ids, self.shape()[0], "embedding")?;
        let flat = ids.reshape(&[ids.len()]);
        let rows = self.try_index_select(0, &flat)?;
        let mut shape = ids.shape().to_vec();
        shape.push(self.shape()[1]);
        rows.try_reshape(&shape)
    }

    /// Derivative rule of [`embedding`](Tensor::embedding): each ȳ row is added to the table
    /// row of its id.
    #[track_caller]
    pub fn embedding_vjp_full(
        &self,
        ids: &Self,
        needs: [bool; 2],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, TensorTangent<B>) + use<B>,
    ) {
        let y = self.embedding(ids);
        let (flat, shape) = (ids.reshape(&[ids.len()]), self.shape().to_vec());
        (y, move |d| {
            let dx = slot(needs[0], &d, |d| {
                let d = d.reshape(&[flat.len(), shape[1]]);
                Tensor::from_storage(
                    B::index_add(d.storage(), &shape, 0, flat.storage()),
                    shape.clone(),
                )
            });
            (dx, TensorTangent::Zero)
        })
    }
}

/// The tangent of a list op (`cat`, `stack`) that is linear in its parts: `join` applied to
/// the parts' tangents (zeros for zero ones), or the symbolic zero when every one is zero.
fn join_tangents<B: Backend, P: TensorList<B> + ?Sized>(
    parts: &P,
    t: Option<&P::Tangents>,
    join: impl FnOnce(&[Tensor<B>]) -> Tensor<B>,
) -> Option<TensorTangent<B>> {
    let t = P::tangent_slice(t?);
    if t.iter().all(TensorTangent::is_zero) {
        return Some(TensorTangent::Zero);
    }
    let dense: Vec<Tensor<B>> = parts
        .tensors()
        .iter()
        .enumerate()
        .map(|(i, p)| {
            t.get(i)
                .and_then(TensorTangent::dense_ref)
                .cloned()
                .unwrap_or_else(|| p.zeros_like())
        })
        .collect();
    Some(TensorTangent::Dense(join(&dense)))
}

impl<B: Backend> Tensor<B> {
    /// Forward rule of [`cat`](Tensor::cat), linear: `ẏ = cat(ẋ₀, ẋ₁, …)`.
    #[track_caller]
    pub fn cat_jvp_full<P: TensorList<B> + ?Sized>(
        parts: &P,
        axis: isize,
        t: (Option<&P::Tangents>, Option<NoTangent>),
    ) -> (Self, Option<TensorTangent<B>>) {
        let y = Tensor::cat(parts, axis);
        (y, join_tangents(parts, t.0, |d| Tensor::cat(d, axis)))
    }

    /// Forward rule of [`stack`](Tensor::stack), linear: `ẏ = stack(ẋ₀, ẋ₁, …)`.
    #[track_caller]
    pub fn stack_jvp_full<P: TensorList<B> + ?Sized>(
        parts: &P,
        axis: isize,
        t: (Option<&P::Tangents>, Option<NoTangent>),
    ) -> (Self, Option<TensorTangent<B>>) {
        let y = Tensor::stack(parts, axis);
        (y, join_tangents(parts, t.0, |d| Tensor::stack(d, axis)))
    }

    /// Forward rule of [`index_select`](Tensor::index_select), linear in `x`:
    /// `ẏ = index_select(ẋ, axis, ids)`; the ids are constants.
    #[track_caller]
    pub fn index_select_jvp_full(
        &self,
        axis: isize,
        ids: &Self,
        t: (
            Option<&TensorTangent<B>>,
            Option<NoTangent>,
            Option<&TensorTangent<B>>,
        ),
    ) -> (Self, Option<TensorTangent<B>>) {
        let y = self.index_select(axis, ids);
        let ty = linear(t.0, |d| d.index_select(axis, ids)).or_else(|| zero_if(t.2.is_some()));
        (y, ty)
    }

    /// Forward rule of [`embedding`](Tensor::embedding), linear in the table:
    /// `ẏ = embedding(ẇ, ids)`; the ids are constants.
    #[track_caller]
    pub fn embedding_jvp_full(
        &self,
        ids: &Self,
        t: (Option<&TensorTangent<B>>, Option<&TensorTangent<B>>),
    ) -> (Self, Option<TensorTangent<B>>) {
        let y = self.embedding(ids);
        let ty = linear(t.0, |d| d.embedding(ids)).or_else(|| zero_if(t.1.is_some()));
        (y, ty)
    }
}

linear_jvp! {
    /// Forward rule of [`narrow`](Tensor::narrow), linear: `ẏ = narrow(ẋ, axis, start, len)`.
    narrow_jvp_full(axis: isize => NoTangent, start: usize => NoTangent, len: usize => NoTangent) => |d| d.narrow(axis, start, len);
}

#[cfg(test)]
mod tests {
    use super::super::testing::{boxed, check, check_unary, first, rand};
    use crate::Tensor;

    fn ids() -> Tensor {
        Tensor::from_vec(vec![2_u32, 0, 2], &[3])
    }

    #[test]
    fn index_rules() {
        check_unary("narrow", rand(&[3, 5], 1), |x| {
            x.narrow_vjp_full(1, 1, 3, [true, false, false, false])
        });
        check_unary("index_select", rand(&[3, 4], 1), |x| {
            let (y, pb) = x.index_select_vjp_full(0, &ids(), [true, false, false]);
            (y, move |d| (pb(d).0,))
        });
        check_unary("index_select axis 1", rand(&[2, 3], 1), |x| {
            let (y, pb) = x.index_select_vjp_full(1, &ids(), [true, false, false]);
            (y, move |d| (pb(d).0,))
        });
        check_unary("embedding", rand(&[3, 4], 1), |x| {
            first(x.embedding_vjp_full(&ids().reshape(&[1, 3]), [true, false]))
        });
        check("cat", &[rand(&[2, 3], 1), rand(&[2, 2], 2)], |xs| {
            let (y, pb) = Tensor::cat_vjp_full(xs, 1, [true, false]);
            let pb = move |d| -> (Vec<_>, _) { pb(d) };
            boxed((y, move |d| {
                let mut v = pb(d).0.into_iter();
                (v.next().expect("two"), v.next().expect("two"))
            }))
        });
        check("stack", &[rand(&[2, 3], 1), rand(&[2, 3], 2)], |xs| {
            let (y, pb) = Tensor::stack_vjp_full(xs, 1, [true, false]);
            let pb = move |d| -> (Vec<_>, _) { pb(d) };
            boxed((y, move |d| {
                let mut v = pb(d).0.into_iter();
                (v.next().expect("two"), v.next().expect("two"))
            }))
        });
    }

    #[test]
    fn values() {
        let x = Tensor::from_vec(vec![0.0_f32, 1.0, 2.0, 3.0, 4.0, 5.0], &[3, 2]);
        assert_eq!(
            x.index_select(0, &ids()).to_vec_f32(),
            vec![4.0, 5.0, 0.0, 1.0, 4.0, 5.0]
        );
        let parts = x.split(&[1, 2], 0);
        assert_eq!(parts[1].to_vec_f32(), vec![2.0, 3.0, 4.0, 5.0]);
        assert_eq!(Tensor::cat(&parts, 0), x);
        assert_eq!(Tensor::cat(&parts[..], 0), x);
        assert_eq!(
            Tensor::stack(&[x.clone(), x.clone()], 0).shape(),
            &[2, 3, 2]
        );
    }

    #[test]
    #[should_panic(expected = "embedding: id 9 is out of range for size 3")]
    fn bad_id() {
        let _ = Tensor::zeros(&[3, 2]).embedding(&Tensor::from_vec(vec![9_u32], &[1]));
    }
}
