//! Splitting a tensor into consecutive parts along one axis.
//!
//! | op | value | derivative |
//! |---|---|---|
//! | `x.split(sizes, a)` | parts `xₖ = x[…, oₖ..oₖ + sizesₖ, …]` along `a`, `oₖ = Σⱼ₍ⱼ₌₀..ₖ₎ sizesⱼ` | `x̄ = cat(x̄₀, x̄₁, …)` along `a`, zeros for a part with no tangent |
//! | `x.chunk(n, a)` | `split` into `n` parts of `⌈len/n⌉` (the last shorter) | the same |
//!
//! The parts are a `Vec`, whose tangent is a `Vec` of tangents (the empty vector is the zero
//! tangent, and a shorter one is padded with zeros), so that `let qkv = x.split(&[d, d, d],
//! -1); qkv[0].matmul(&qkv[1])` is ordinary `#[differentiable]` code. Each part is a copy
//! ([`narrow`](Tensor::narrow)).

use crate::NoTangent;
use crate::tensor::error::{TensorError, ensure, or_panic};
use crate::tensor::{Backend, Tensor, TensorTangent};

/// The pullback slots of [`split`](Tensor::split) and [`chunk`](Tensor::chunk): the input's
/// tangent and two constant arguments.
pub(crate) type SplitSlots<B> = (TensorTangent<B>, NoTangent, NoTangent);

impl<B: Backend> Tensor<B> {
    /// Consecutive parts of the given sizes along `axis`: part `k` is elements
    /// `oₖ..oₖ + sizes[k]` with `oₖ = sizes[0] + … + sizes[k − 1]` (negative axes count from
    /// the end). Each part is a copy. Derivative: `x̄ = cat(x̄₀, x̄₁, …)` along `axis`, zeros
    /// for a part with no tangent.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let x = Tensor::from_vec(vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3]);
    /// let parts = x.split(&[1, 2], -1);
    /// assert_eq!(parts[1].to_vec_f64(), [1.0, 2.0, 4.0, 5.0]);
    ///
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     let p = x.split(&[1, 2], 0);
    ///     p[1].square().sum_all()
    /// }
    /// let x = Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3]);
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [0.0, 4.0, 6.0]);
    /// ```
    ///
    /// # Panics
    /// If the sizes do not add up to the axis length, or the axis is out of range.
    #[track_caller]
    pub fn split(&self, sizes: &[usize], axis: isize) -> Vec<Self> {
        or_panic(self.try_split(sizes, axis))
    }

    /// [`split`](Tensor::split) returning an error on sizes that do not add up.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let e = Tensor::zeros(&[3]).try_split(&[1, 1], 0).unwrap_err();
    /// assert_eq!(e.to_string(), "split: sizes [1, 1] do not add up to axis 0 of shape [3]");
    /// ```
    pub fn try_split(&self, sizes: &[usize], axis: isize) -> Result<Vec<Self>, TensorError> {
        let a = crate::tensor::shape::normalize_axis("split", axis, self.rank(), self.shape())?;
        ensure(
            sizes.iter().sum::<usize>() == self.shape()[a],
            "split",
            || {
                format!(
                    "sizes {sizes:?} do not add up to axis {a} of shape {:?}",
                    self.shape()
                )
            },
        )?;
        let mut start = 0;
        sizes
            .iter()
            .map(|&n| {
                let part = self.try_narrow(a as isize, start, n);
                start += n;
                part
            })
            .collect()
    }

    /// `n` parts along `axis`, each of `⌈len/n⌉` elements but the last, which holds the rest
    /// (as `torch.chunk`: fewer than `n` parts when `len` is not enough to fill them, e.g.
    /// 5 elements in 4 chunks give parts of 2, 2 and 1; an empty axis gives `n` empty parts).
    /// Derivative: that of [`split`](Tensor::split) into the chunks' sizes.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// #[differentiable]
    /// fn f(x: &Tensor) -> Tensor {
    ///     x.chunk(2, 0)[1].sum_all()
    /// }
    /// let x = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0], &[5]);
    /// let parts = x.chunk(2, 0);
    /// assert_eq!(parts[0].to_vec_f64(), [1.0, 2.0, 3.0]);
    /// assert_eq!(parts[1].to_vec_f64(), [4.0, 5.0]);
    /// assert_eq!(gradient(f_vjp(&x)).unwrap().to_vec_f64(), [0.0, 0.0, 0.0, 1.0, 1.0]);
    /// ```
    ///
    /// # Panics
    /// If `n` is 0 or the axis is out of range.
    #[track_caller]
    pub fn chunk(&self, n: usize, axis: isize) -> Vec<Self> {
        self.split(&self.chunk_sizes("chunk", n, axis), axis)
    }

    /// The part sizes of [`chunk`](Tensor::chunk).
    #[track_caller]
    fn chunk_sizes(&self, op: &'static str, n: usize, axis: isize) -> Vec<usize> {
        assert!(n > 0, "{op}: the number of chunks must be at least 1");
        let len = self.shape()[self.axis(op, axis)];
        if len == 0 {
            return vec![0; n];
        }
        let each = len.div_ceil(n);
        let mut sizes = vec![each; len / each];
        if !len.is_multiple_of(each) {
            sizes.push(len % each);
        }
        sizes
    }

    /// Derivative rule of [`split`](Tensor::split): `x̄ = cat(x̄₀, x̄₁, …)` along the axis, a
    /// part whose tangent is zero (or missing from a shorter tangent vector) contributing
    /// zeros; the symbolic zero when no part has a tangent.
    #[track_caller]
    pub fn split_vjp_full(
        &self,
        sizes: &[usize],
        axis: isize,
        needs: [bool; 3],
    ) -> (
        Vec<Self>,
        impl FnOnce(Vec<TensorTangent<B>>) -> SplitSlots<B> + use<B>,
    ) {
        let parts = self.split(sizes, axis);
        let joiner = needs[0].then(|| Joiner::of(self, &parts, axis));
        (parts, move |d| {
            let dx = joiner.map_or(TensorTangent::Zero, |j| j.join(d));
            (dx, NoTangent, NoTangent)
        })
    }

    /// Derivative rule of [`chunk`](Tensor::chunk): that of [`split`](Tensor::split) into the
    /// chunks' sizes.
    #[track_caller]
    pub fn chunk_vjp_full(
        &self,
        n: usize,
        axis: isize,
        needs: [bool; 3],
    ) -> (
        Vec<Self>,
        impl FnOnce(Vec<TensorTangent<B>>) -> SplitSlots<B> + use<B>,
    ) {
        self.split_vjp_full(&self.chunk_sizes("chunk", n, axis), axis, needs)
    }
}

/// What the pullback of a split keeps: the parts' shapes, dtype and device (for the zeros of
/// parts without a tangent) and the axis.
/// The tangent slots of a split: the input's, then the sizes' (or count's) and the axis'.
type SplitTangents<'t, B> = (
    Option<&'t TensorTangent<B>>,
    Option<NoTangent>,
    Option<NoTangent>,
);

impl<B: Backend> Tensor<B> {
    /// Forward rule of [`split`](Tensor::split), linear: the parts of the tangent,
    /// `ẏₖ = split(ẋ)ₖ` (the empty vector, the zero tangent, for a zero `ẋ`).
    #[track_caller]
    pub fn split_jvp_full(
        &self,
        sizes: &[usize],
        axis: isize,
        t: SplitTangents<'_, B>,
    ) -> (Vec<Self>, Option<Vec<TensorTangent<B>>>) {
        let parts = self.split(sizes, axis);
        let tangents = t.0.map(|t| match t.dense_ref() {
            Some(d) => d
                .split(sizes, axis)
                .into_iter()
                .map(TensorTangent::Dense)
                .collect(),
            None => Vec::new(),
        });
        (parts, tangents)
    }

    /// Forward rule of [`chunk`](Tensor::chunk): [`split_jvp_full`](Tensor::split_jvp_full)
    /// with the chunks' sizes.
    #[track_caller]
    pub fn chunk_jvp_full(
        &self,
        n: usize,
        axis: isize,
        t: SplitTangents<'_, B>,
    ) -> (Vec<Self>, Option<Vec<TensorTangent<B>>>) {
        self.split_jvp_full(&self.chunk_sizes("chunk", n, axis), axis, t)
    }
}

struct Joiner<B: Backend> {
    shapes: Vec<Vec<usize>>,
    axis: isize,
    like: Tensor<B>,
}

impl<B: Backend> Joiner<B> {
    fn of(x: &Tensor<B>, parts: &[Tensor<B>], axis: isize) -> Self {
        Joiner {
            shapes: parts.iter().map(|p| p.shape().to_vec()).collect(),
            axis,
            like: x.scalar_like(0.0),
        }
    }

    /// `cat` of the parts' tangents, zeros where a part has none.
    fn join(self, d: Vec<TensorTangent<B>>) -> TensorTangent<B> {
        assert!(
            d.len() <= self.shapes.len(),
            "split: a tangent of {} parts for a split into {}",
            d.len(),
            self.shapes.len()
        );
        if d.iter().all(TensorTangent::is_zero) {
            return TensorTangent::Zero;
        }
        let mut d = d.into_iter();
        let blocks: Vec<Tensor<B>> = self
            .shapes
            .iter()
            .map(|s| {
                d.next()
                    .and_then(TensorTangent::dense)
                    .unwrap_or_else(|| Tensor::zeros_on(s, self.like.dtype(), &self.like.device()))
            })
            .collect();
        TensorTangent::Dense(Tensor::cat(&blocks[..], self.axis))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{check_unary, rand, t64};
    use crate::{Tensor, TensorTangent};

    /// `y = cat(2·x₂, x₀, x₁)`: a split whose parts are used in another order, one scaled,
    /// so that a tangent routed to the wrong part or left unscaled fails the check.
    #[test]
    fn split_rule() {
        check_unary("split", rand(&[3, 6], 1), |x| {
            let (p, pb) = x.split_vjp_full(&[1, 3, 2], 1, [true, false, false]);
            let y = Tensor::cat(&[p[2].mul_scalar(2.0), p[0].clone(), p[1].clone()], 1);
            (y, move |d: TensorTangent| {
                let d = d.unwrap();
                let dp = vec![
                    d.narrow(1, 2, 1),
                    d.narrow(1, 3, 3),
                    d.narrow(1, 0, 2) * 2.0,
                ];
                (pb(dp.into_iter().map(TensorTangent::Dense).collect()).0,)
            })
        });
        check_unary("chunk", rand(&[5, 2], 2), |x| {
            let (p, pb) = x.chunk_vjp_full(2, 0, [true, false, false]);
            let y = Tensor::cat(&[p[1].exp(), p[0].clone()], 0);
            (y, move |d: TensorTangent| {
                let d = d.unwrap();
                let dp = vec![d.narrow(0, 2, 3), d.narrow(0, 0, 2) * &p[1].exp()];
                (pb(dp.into_iter().map(TensorTangent::Dense).collect()).0,)
            })
        });
    }

    /// By hand: parts without a tangent (a `Zero` slot, or missing from a shorter vector)
    /// get zeros; no tangent at all is the symbolic zero.
    #[test]
    fn missing_part_tangents_are_zeros() {
        let x = t64(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3]);
        let (parts, pb) = x.split_vjp_full(&[2, 1], -1, [true, false, false]);
        assert_eq!(parts[0].to_vec_f64(), vec![0.0, 1.0, 3.0, 4.0]);
        assert_eq!(parts[1].to_vec_f64(), vec![2.0, 5.0]);
        let d = vec![
            TensorTangent::Zero,
            TensorTangent::Dense(t64(&[7.0, 8.0], &[2, 1])),
        ];
        let dx = pb(d).0.unwrap();
        assert_eq!(dx.shape(), &[2, 3]);
        assert_eq!(dx.to_vec_f64(), vec![0.0, 0.0, 7.0, 0.0, 0.0, 8.0]);
        let (_, pb) = x.split_vjp_full(&[2, 1], 1, [true, false, false]);
        let d = vec![TensorTangent::Dense(t64(&[1.0, 2.0, 3.0, 4.0], &[2, 2]))];
        assert_eq!(
            pb(d).0.unwrap().to_vec_f64(),
            vec![1.0, 2.0, 0.0, 3.0, 4.0, 0.0]
        );
        let (_, pb) = x.split_vjp_full(&[2, 1], 1, [true, false, false]);
        assert!(pb(Vec::new()).0.is_zero());
        let (_, pb) = x.split_vjp_full(&[2, 1], 1, [false, false, false]);
        assert!(pb(vec![TensorTangent::Dense(x.ones_like())]).0.is_zero());
    }

    #[test]
    fn chunk_sizes_follow_torch() {
        let x = Tensor::zeros(&[5, 7]);
        let lens = |parts: Vec<Tensor>, a: usize| -> Vec<usize> {
            parts.iter().map(|p| p.shape()[a]).collect()
        };
        assert_eq!(lens(x.chunk(4, 0), 0), vec![2, 2, 1]);
        assert_eq!(lens(x.chunk(3, 1), 1), vec![3, 3, 1]);
        assert_eq!(lens(x.chunk(7, 1), 1), vec![1; 7]);
        assert_eq!(lens(x.chunk(9, 0), 0), vec![1; 5]);
        assert_eq!(lens(x.chunk(1, -1), 1), vec![7]);
        // An empty axis: `n` empty parts (torch gives them too), so that `let [q, k, v]`
        // patterns hold on empty inputs.
        let empty = Tensor::zeros(&[2, 0]);
        assert_eq!(lens(empty.chunk(3, 1), 1), vec![0; 3]);
        assert_eq!(lens(empty.chunk(1, 1), 1), vec![0]);
        let (parts, pb) = empty.chunk_vjp_full(2, -1, [true, false, false]);
        assert_eq!(parts.len(), 2);
        let d = parts
            .iter()
            .map(|p| TensorTangent::Dense(p.ones_like()))
            .collect();
        let dx = pb(d).0.unwrap();
        assert_eq!((dx.shape(), dx.len()), (&[2, 0][..], 0));
    }

    #[test]
    fn bad_sizes_name_the_op_and_shape() {
        let err = Tensor::zeros(&[2, 3]).try_split(&[1, 1], 1).unwrap_err();
        assert_eq!(
            err.to_string(),
            "split: sizes [1, 1] do not add up to axis 1 of shape [2, 3]"
        );
    }
}
