//! Masked fills and the triangular parts of matrices (causal masks).
//!
//! | op | value | derivative |
//! |---|---|---|
//! | `x.masked_fill(mask, v)` | `mask ≠ 0 ? v : x` | `x̄ = mask ≠ 0 ? 0 : ȳ` |
//! | `x.tril(k)` | `j − i ≤ k ? x[…, i, j] : 0` | `x̄ = tril(ȳ, k)` |
//! | `x.triu(k)` | `j − i ≥ k ? x[…, i, j] : 0` | `x̄ = triu(ȳ, k)` |
//!
//! `tril` and `triu` act on the last two axes (`i` the row, `j` the column), as
//! `torch.tril`/`torch.triu`: `k = 0` is the main diagonal, `k > 0` above it, `k < 0` below.
//! A causal attention mask is `scores.masked_fill(&ones.triu(1), f64::NEG_INFINITY)`. The masks
//! are constants: they get the symbolic zero tangent, and `v` none.

use super::forward::{linear, zero_if};
use super::slot;
use crate::NoTangent;
use crate::tensor::error::{TensorError, ensure, or_panic};
use crate::tensor::shape::broadcast_shape;
use crate::tensor::{Backend, Tensor, TensorTangent};

/// The pullback slots of [`masked_fill`](Tensor::masked_fill): the input's, the mask's (zero)
/// and the constant's.
pub(crate) type FillSlots<B> = (TensorTangent<B>, TensorTangent<B>, NoTangent);

impl<B: Backend> Tensor<B> {
    /// `mask ≠ 0 ? value : x` elementwise (`torch.masked_fill`): `mask` is a float tensor
    /// (e.g. from [`gt`](Tensor::gt) or [`triu`](Tensor::triu)) that broadcasts to `x`'s shape;
    /// the result has `x`'s shape.
    ///
    /// # Panics
    /// If the mask does not broadcast to `x`'s shape, or a dtype is not float.
    ///
    /// ```
    /// use adjoint::Tensor;
    /// let x = Tensor::from_vec(vec![1.0_f32, 2.0, 3.0], &[3]);
    /// let mask = Tensor::from_vec(vec![0.0_f32, 1.0, 0.0], &[3]);
    /// assert_eq!(x.masked_fill(&mask, -9.0).to_vec_f32(), vec![1.0, -9.0, 3.0]);
    /// ```
    #[track_caller]
    pub fn masked_fill(&self, mask: &Self, value: f64) -> Self {
        or_panic(self.try_masked_fill(mask, value))
    }

    /// [`masked_fill`](Tensor::masked_fill) returning an error on bad input.
    ///
    /// ```
    /// use adjoint::Tensor;
    /// let x = Tensor::from_vec(vec![1.0_f32, 2.0, 3.0], &[3]);
    /// let e = x.try_masked_fill(&Tensor::zeros(&[2]), 0.0).unwrap_err();
    /// let message = "masked_fill: mask [2] does not broadcast to the input's shape [3]";
    /// assert_eq!(e.to_string(), message);
    /// ```
    pub fn try_masked_fill(&self, mask: &Self, value: f64) -> Result<Self, TensorError> {
        const OP: &str = "masked_fill";
        self.check_float(OP)?;
        mask.check_float(OP)?;
        let fits = mask.rank() <= self.rank()
            && broadcast_shape(OP, mask.shape(), self.shape()).as_deref() == Ok(self.shape());
        ensure(fits, OP, || {
            format!(
                "mask {:?} does not broadcast to the input's shape {:?}",
                mask.shape(),
                self.shape()
            )
        })?;
        mask.try_where(&self.scalar_like(value), self)
    }

    /// Derivative rule of [`masked_fill`](Tensor::masked_fill): `x̄ = mask ≠ 0 ? 0 : ȳ`; the
    /// mask's tangent is the symbolic zero, and the fill value is a constant.
    #[track_caller]
    pub fn masked_fill_vjp_full(
        &self,
        mask: &Self,
        value: f64,
        needs: [bool; 3],
    ) -> (Self, impl FnOnce(TensorTangent<B>) -> FillSlots<B> + use<B>) {
        let y = self.masked_fill(mask, value);
        let mask = needs[0].then(|| mask.clone());
        (y, move |d| {
            let dx = slot(needs[0], &d, |d| {
                let mask = mask.as_ref().expect("saved for the pullback");
                mask.where_(&d.scalar_like(0.0), d)
            });
            (dx, TensorTangent::Zero, NoTangent)
        })
    }

    /// Forward rule of [`masked_fill`](Tensor::masked_fill): `ẏ = mask ≠ 0 ? 0 : ẋ`; the mask
    /// is a constant (its tangent is ignored) and `v` has none.
    #[track_caller]
    pub fn masked_fill_jvp_full(
        &self,
        mask: &Self,
        value: f64,
        t: (
            Option<&TensorTangent<B>>,
            Option<&TensorTangent<B>>,
            Option<NoTangent>,
        ),
    ) -> (Self, Option<TensorTangent<B>>) {
        let y = self.masked_fill(mask, value);
        let dx = linear(t.0, |d| mask.where_(&d.scalar_like(0.0), d));
        let ty = dx.or_else(|| zero_if(t.1.is_some()));
        (y, ty)
    }

    /// `x` where the `[m, n]` mask of `triangle` and `k` is set, else 0.
    #[track_caller]
    fn band(&self, op: &'static str, k: isize, triangle: Triangle) -> Self {
        or_panic(self.check_float(op));
        assert!(
            self.rank() >= 2,
            "{op}: needs a tensor of rank at least 2 (a matrix or a batch of them), got shape {:?}",
            self.shape()
        );
        let [m, n] = [self.shape()[self.rank() - 2], self.shape()[self.rank() - 1]];
        let mask = triangle.mask(m, n, k, self);
        mask.where_(self, &self.scalar_like(0.0))
    }
}

/// `tril` and `triu` with their rules: the op keeps the `$triangle` of the last two axes,
/// and its pullback the same triangle of `ȳ` (a linear projection).
macro_rules! triangles {
    ($($(#[$doc:meta])* $name:ident $vjp:ident $jvp:ident $triangle:ident;)*) => {
        impl<B: Backend> Tensor<B> {$(
            $(#[$doc])*
            ///
            /// # Panics
            /// If the rank is below 2 or the dtype is not float.
            #[track_caller]
            pub fn $name(&self, k: isize) -> Self {
                self.band(stringify!($name), k, Triangle::$triangle)
            }

            #[doc = concat!("Derivative rule of [`", stringify!($name), "`](Tensor::", stringify!($name), "): `x̄ = ", stringify!($name), "(ȳ, k)`.")]
            #[track_caller]
            pub fn $vjp(&self, k: isize, needs: [bool; 2]) -> (Self, impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, NoTangent) + use<B>) {
                (self.$name(k), move |d| (slot(needs[0], &d, |d| d.$name(k)), NoTangent))
            }

            #[doc = concat!("Forward rule of [`", stringify!($name), "`](Tensor::", stringify!($name), "), linear: `ẏ = ", stringify!($name), "(ẋ, k)`.")]
            #[track_caller]
            pub fn $jvp(&self, k: isize, t: (Option<&TensorTangent<B>>, Option<NoTangent>)) -> (Self, Option<TensorTangent<B>>) {
                (self.$name(k), linear(t.0, |d| d.$name(k)))
            }
        )*}
    };
}

triangles! {
    /// The lower triangle of the last two axes: `x[…, i, j]` where `j − i ≤ k`, else 0
    /// (`torch.tril`; `k = 0` keeps the main diagonal).
    tril tril_vjp_full tril_jvp_full Lower;
    /// The upper triangle of the last two axes: `x[…, i, j]` where `j − i ≥ k`, else 0
    /// (`torch.triu`; `k = 1` leaves out the main diagonal, the causal mask of attention).
    triu triu_vjp_full triu_jvp_full Upper;
}

/// Which triangle [`Tensor::band`] keeps.
#[derive(Clone, Copy)]
enum Triangle {
    /// `j − i ≤ k`.
    Lower,
    /// `j − i ≥ k`.
    Upper,
}

impl Triangle {
    /// The `[m, n]` mask `𝟙(j − i ≤ k)` or `𝟙(j − i ≥ k)` in `like`'s dtype and device, made
    /// on the device from two ranges (the differences `j − i` are small integers, exact in
    /// either float type).
    fn mask<B: Backend>(self, m: usize, n: usize, k: isize, like: &Tensor<B>) -> Tensor<B> {
        let range =
            |len: usize| Tensor::arange_on(0.0, len as f64, 1.0, like.dtype(), &like.device());
        let offset = range(n).reshape(&[1, n]).sub(&range(m).reshape(&[m, 1]));
        let k = like.scalar_like(k as f64);
        match self {
            Triangle::Lower => offset.le(&k),
            Triangle::Upper => offset.ge(&k),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{check_unary, rand, t64};
    use crate::{Tensor, TensorTangent};

    #[test]
    fn mask_rules() {
        let mask = rand(&[3, 1], 5).gt(&t64(&[0.0], &[1]));
        check_unary("masked_fill", rand(&[2, 3, 4], 1), |x| {
            let (y, pb) = x.masked_fill_vjp_full(&mask, -7.0, [true, false, false]);
            (y, move |d| (pb(d).0,))
        });
        check_unary("tril", rand(&[2, 3, 4], 2), |x| {
            x.tril_vjp_full(0, [true, false])
        });
        check_unary("triu", rand(&[4, 3], 3), |x| {
            x.triu_vjp_full(-1, [true, false])
        });
    }

    /// By hand, on `x = [[1, 2, 3], [4, 5, 6]]`.
    #[test]
    fn triangles_and_fills_by_hand() {
        let x = t64(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
        assert_eq!(x.tril(0).to_vec_f64(), vec![1.0, 0.0, 0.0, 4.0, 5.0, 0.0]);
        assert_eq!(x.tril(-1).to_vec_f64(), vec![0.0, 0.0, 0.0, 4.0, 0.0, 0.0]);
        assert_eq!(x.tril(1).to_vec_f64(), vec![1.0, 2.0, 0.0, 4.0, 5.0, 6.0]);
        assert_eq!(x.triu(0).to_vec_f64(), vec![1.0, 2.0, 3.0, 0.0, 5.0, 6.0]);
        assert_eq!(x.triu(1).to_vec_f64(), vec![0.0, 2.0, 3.0, 0.0, 0.0, 6.0]);
        assert_eq!(x.triu(3).to_vec_f64(), vec![0.0; 6]);
        // A batch of two matrices gets the same triangle each.
        let b = Tensor::stack(&[x.clone(), x.mul_scalar(10.0)], 0);
        assert_eq!(
            b.tril(0).to_vec_f64(),
            vec![
                1.0, 0.0, 0.0, 4.0, 5.0, 0.0, 10.0, 0.0, 0.0, 40.0, 50.0, 0.0
            ]
        );
        // The causal mask of attention: −∞ above the diagonal, and no tangent there.
        let causal = Tensor::ones_on(&[2, 3], x.dtype(), &x.device()).triu(1);
        let (y, pb) = x.masked_fill_vjp_full(&causal, f64::NEG_INFINITY, [true, false, false]);
        let inf = f64::NEG_INFINITY;
        assert_eq!(y.to_vec_f64(), vec![1.0, inf, inf, 4.0, 5.0, inf]);
        let d = t64(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
        let (dx, dmask, _) = pb(TensorTangent::Dense(d));
        assert_eq!(dx.unwrap().to_vec_f64(), vec![1.0, 0.0, 0.0, 4.0, 5.0, 0.0]);
        assert!(dmask.is_zero());
        // tril's pullback keeps the same triangle of ȳ.
        let (_, pb) = x.tril_vjp_full(0, [true, false]);
        let dx = pb(TensorTangent::Dense(x.ones_like())).0.unwrap();
        assert_eq!(dx.to_vec_f64(), vec![1.0, 0.0, 0.0, 1.0, 1.0, 0.0]);
    }

    #[test]
    fn bad_masks_are_errors() {
        let x = Tensor::zeros(&[2, 3]);
        let err = x.try_masked_fill(&Tensor::zeros(&[3, 3]), 0.0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "masked_fill: mask [3, 3] does not broadcast to the input's shape [2, 3]"
        );
        let r = std::panic::catch_unwind(|| Tensor::zeros(&[3]).tril(0));
        let msg = *r.unwrap_err().downcast::<String>().unwrap();
        assert!(
            msg.starts_with("tril: needs a tensor of rank at least 2"),
            "{msg}"
        );
    }
}
