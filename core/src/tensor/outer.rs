//! [`OuterSum`]: a sum of matrix products `Σᵢ Aᵢᵀ·Gᵢ` kept as its operands until it is read.
//!
//! The tangent of the weight `W` of `y = x·W` is `xᵀ·ȳ`. When `W` is used in every iteration
//! of a loop (an RNN over time steps), its tangent is the sum of one such product per
//! iteration, and computing each product as it comes costs a matrix product, an allocation
//! and an accumulation per iteration — for a batch-1 RNN, small operations whose fixed cost is
//! most of their time. Kept as operands instead, the sum is one product of the stacked
//! operands when it is read: `Σᵢ Aᵢᵀ·Gᵢ = [A₁; …; Aₖ]ᵀ · [G₁; …; Gₖ]` (the rows stacked), which
//! is how cuDNN computes the weight gradient of a recurrent layer.
//!
//! Memory: the operands pending at any time hold at most as many elements as the dense sum
//! or 64 Ki elements, whichever is more (`Σ kᵢ·(m + n) ≤ max(m·n, 2¹⁶)`); a contribution that
//! would exceed that is multiplied out and added to a dense part first, so the laziness never
//! holds more than one extra gradient's worth (or 256 KiB of `f32`).

use super::{Backend, DType, Tensor, TensorTangent};
use crate::ops::matmul::gemm;

/// The most elements the pending operands of an `[m, n]` sum may hold: as many as the sum
/// itself, or 64 Ki (256 KiB of `f32`) for small ones, so that the weight tangent of a small
/// RNN over a few hundred steps is one product.
fn pending_limit([m, n]: [usize; 2]) -> usize {
    (m * n).max(1 << 16)
}

/// `dense + Σᵢ Aᵢᵀ·Gᵢ` with `Aᵢ: [kᵢ, m]`, `Gᵢ: [kᵢ, n]`, all of one dtype and device: an
/// `[m, n]` tensor not yet computed.
///
/// Made by the pullback of [`Tensor::matmul`] for a 2-D right operand, summed by
/// [`TangentVector::plus`](crate::TangentVector::plus), and computed by
/// [`to_tensor`](OuterSum::to_tensor) (which every accessor of
/// [`TensorTangent`](super::TensorTangent) calls).
#[derive(Clone, Debug)]
pub struct OuterSum<B: Backend> {
    terms: Terms<B>,
}

/// The terms of an [`OuterSum`]. A matmul pullback makes one product, which an accumulator
/// either takes as it is (the first) or absorbs (the others): only a sum of several holds a
/// list, so the product of each loop iteration allocates nothing.
#[derive(Clone, Debug)]
enum Terms<B: Backend> {
    /// One product `aᵀ·g`.
    One(Tensor<B>, Tensor<B>),
    /// `dense + Σ pairs`.
    Many(Many<B>),
}

/// A sum of several products: `dense + Σ pairs`.
#[derive(Clone, Debug)]
struct Many<B: Backend> {
    /// What was already multiplied out.
    dense: Option<Tensor<B>>,
    /// The pending pairs `(Aᵢ, Gᵢ)`.
    pairs: Vec<(Tensor<B>, Tensor<B>)>,
    /// `Σ kᵢ` over the pending pairs.
    rows: usize,
    /// `[m, n]`.
    shape: [usize; 2],
}

impl<B: Backend> OuterSum<B> {
    /// The tangent `aᵀ·g` for 2-D `a: [k, m]`, `g: [k, n]`: kept as the two operands if they
    /// hold no more elements than the cap (`k·(m + n) ≤ max(m·n, 2¹⁶)`), else computed.
    pub(crate) fn tangent(a: Tensor<B>, g: Tensor<B>) -> TensorTangent<B> {
        assert!(
            a.rank() == 2 && g.rank() == 2 && a.shape()[0] == g.shape()[0],
            "OuterSum: operands {:?} and {:?} are not [k, m] and [k, n]",
            a.shape(),
            g.shape()
        );
        let (k, shape) = (a.shape()[0], [a.shape()[1], g.shape()[1]]);
        if k * (shape[0] + shape[1]) > pending_limit(shape) {
            return TensorTangent::Dense(gemm(&a, true, &g, false));
        }
        TensorTangent::Outer(OuterSum {
            terms: Terms::One(a, g),
        })
    }

    /// The shape `[m, n]` of the sum.
    pub fn shape(&self) -> [usize; 2] {
        match &self.terms {
            Terms::One(a, g) => [a.shape()[1], g.shape()[1]],
            Terms::Many(many) => many.shape,
        }
    }

    /// The dtype and device of the terms.
    fn kind(&self) -> (DType, B::Device) {
        let t = match &self.terms {
            Terms::One(a, _) => a,
            Terms::Many(many) => (many.dense.as_ref())
                .or(many.pairs.first().map(|(a, _)| a))
                .expect("an OuterSum holds at least one product (it is made from one)"),
        };
        (t.dtype(), t.device())
    }

    /// Whether `other` is a sum of the same shape, dtype and device (so that the two can be
    /// merged without computing either).
    pub(crate) fn matches(&self, other: &Self) -> bool {
        self.shape() == other.shape() && self.kind() == other.kind()
    }

    /// Adds the pending pairs and dense part of `other` (same shape, dtype and device).
    pub(crate) fn absorb(&mut self, other: Self) {
        match other.terms {
            Terms::One(a, g) => self.push(a, g),
            Terms::Many(Many { dense, pairs, .. }) => {
                for (a, g) in pairs {
                    self.push(a, g);
                }
                if let Some(d) = dense {
                    self.add_dense(d);
                }
            }
        }
    }

    /// The terms as a list, to add to (a single product becomes a list of one).
    fn many(&mut self) -> &mut Many<B> {
        if let Terms::One(..) = self.terms {
            let shape = self.shape();
            let empty = Many {
                dense: None,
                pairs: Vec::new(),
                rows: 0,
                shape,
            };
            if let Terms::One(a, g) = std::mem::replace(&mut self.terms, Terms::Many(empty)) {
                let rows = a.shape()[0];
                self.terms = Terms::Many(Many {
                    dense: None,
                    pairs: vec![(a, g)],
                    rows,
                    shape,
                });
            }
        }
        match &mut self.terms {
            Terms::Many(many) => many,
            Terms::One(..) => unreachable!("made a list above"),
        }
    }

    /// Adds `aᵀ·g`, multiplying the pending pairs out first if keeping `a` and `g` too would
    /// pass the cap (and `aᵀ·g` itself if its operands alone would).
    fn push(&mut self, a: Tensor<B>, g: Tensor<B>) {
        let shape = self.shape();
        let [m, n] = shape;
        let k = a.shape()[0];
        if (self.many().rows + k) * (m + n) > pending_limit(shape) {
            self.flush();
            if k * (m + n) > pending_limit(shape) {
                return self.add_dense(gemm(&a, true, &g, false));
            }
        }
        let many = self.many();
        many.rows += k;
        many.pairs.push((a, g));
    }

    /// Adds an `[m, n]` tensor to the dense part.
    fn add_dense(&mut self, t: Tensor<B>) {
        let dense = &mut self.many().dense;
        *dense = Some(match dense.take() {
            Some(d) => d + t,
            None => t,
        });
    }

    /// Multiplies the pending pairs out into the dense part: one product over the stacked
    /// operands.
    fn flush(&mut self) {
        let many = self.many();
        let pairs = std::mem::take(&mut many.pairs);
        let rows = std::mem::replace(&mut many.rows, 0);
        let product = match pairs.as_slice() {
            [] => return,
            [(a, g)] => gemm(a, true, g, false),
            _ => {
                // The rows stacked by the backend directly: the pairs were checked as they
                // came (2-D, same row counts within a pair, same widths as the sum).
                let stack = |second: bool| {
                    let views: Vec<(&B::Storage, &[usize])> = (pairs.iter())
                        .map(|(a, g)| if second { g } else { a })
                        .map(|t| (t.storage(), t.shape()))
                        .collect();
                    let cols = views[0].1[1];
                    Tensor::from_storage(B::cat(&views, 0), [rows, cols])
                };
                gemm(&stack(false), true, &stack(true), false)
            }
        };
        self.add_dense(product);
    }

    /// The sum as one `[m, n]` tensor.
    pub fn to_tensor(&self) -> Tensor<B> {
        self.clone().into_tensor()
    }

    /// The sum as one `[m, n]` tensor, reusing this sum's buffers.
    pub fn into_tensor(mut self) -> Tensor<B> {
        if let Terms::One(a, g) = &self.terms {
            return gemm(a, true, g, false);
        }
        self.flush();
        self.many()
            .dense
            .take()
            .expect("an OuterSum holds at least one product (it is made from one)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TangentVector;

    fn t(v: Vec<f64>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(v, shape)
    }

    /// Integers in −5..=5, so that every sum below is exact in `f64` in any order.
    fn ints(rows: usize, cols: usize, seed: usize) -> Tensor {
        let v = (0..rows * cols).map(|i| ((i * 7 + seed * 3) % 11) as f64 - 5.0);
        t(v.collect(), &[rows, cols])
    }

    #[test]
    fn products_add_up_lazily_to_the_exact_sum() {
        // [1 2]ᵀ[3 4 5] = [[3 4 5] [6 8 10]], [1 −1]ᵀ[1 0 2] = [[1 0 2] [−1 0 −2]].
        let p1 = OuterSum::tangent(t(vec![1., 2.], &[1, 2]), t(vec![3., 4., 5.], &[1, 3]));
        let p2 = OuterSum::tangent(t(vec![1., -1.], &[1, 2]), t(vec![1., 0., 2.], &[1, 3]));
        let sum = p1.plus(p2);
        assert!(
            matches!(&sum, TensorTangent::Outer(s) if s.shape() == [2, 3]
            && matches!(&s.terms, Terms::Many(many) if many.pairs.len() == 2))
        );
        assert_eq!(sum.unwrap().to_vec_f64(), vec![4., 4., 7., 5., 8., 8.]);
    }

    #[test]
    fn pending_operands_beyond_the_limit_are_multiplied_out() {
        // Each pair holds 300·(16 + 16) = 9600 elements; the seventh passes 2¹⁶.
        let mut acc = TensorTangent::zero();
        let mut want = Tensor::zeros_on(&[16, 16], DType::F64, &crate::tensor::Cpu);
        for i in 0..7 {
            let (a, g) = (ints(300, 16, i), ints(300, 16, i + 10));
            want = want + a.t().matmul(&g);
            acc.plus_assign(OuterSum::tangent(a, g));
        }
        match &acc {
            TensorTangent::Outer(OuterSum {
                terms: Terms::Many(many),
            }) => assert!(many.dense.is_some() && many.rows == 300),
            other => panic!("expected a sum of products, got {other:?}"),
        }
        assert_eq!(acc.unwrap().to_vec_f64(), want.to_vec_f64());
    }

    #[test]
    fn a_product_larger_than_the_limit_is_computed_at_once() {
        // 5000·(8 + 8) = 80000 elements > 2¹⁶.
        let (a, g) = (ints(5000, 8, 1), ints(5000, 8, 2));
        let want = a.t().matmul(&g);
        let tangent = OuterSum::tangent(a, g);
        assert!(matches!(tangent, TensorTangent::Dense(_)));
        assert_eq!(tangent.unwrap(), want);
    }

    #[test]
    fn a_sum_of_products_reads_like_its_tensor() {
        // [2 3]·[1 4] = 14.
        let sum = OuterSum::tangent(t(vec![2., 3.], &[2, 1]), t(vec![1., 4.], &[2, 1]));
        let dense = TensorTangent::Dense(t(vec![14.], &[1, 1]));
        assert_eq!(sum, dense);
        let mut scratch = None;
        assert_eq!(sum.dense_ref(&mut scratch).unwrap().to_vec_f64(), vec![14.]);
        assert_eq!(sum.clone().plus(dense).unwrap().to_vec_f64(), vec![28.]);
        assert_eq!(sum.clone().scaled(0.5).unwrap().to_vec_f64(), vec![7.]);
        assert!(matches!(sum.settled(), TensorTangent::Dense(_)));
    }
}
