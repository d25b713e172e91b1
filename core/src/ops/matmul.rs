//! Matrix products.
//!
//! `a.matmul(&b)` multiplies the last two axes, `[…, m, k] · […, k, n] = […, m, n]`, with the
//! leading (batch) axes broadcast by NumPy rules. Both operands need rank ≥ 2.
//!
//! Derivative: `ā = Σ↓ ȳ · bᵀ`, `b̄ = Σ↓ aᵀ · ȳ` (`Σ↓` sums over broadcast batch axes). Each is
//! one GEMM, run only if that input needs a tangent. A 2-D right operand (the usual weight
//! matrix) is handled as one GEMM over all batch rows, and its tangent is that product kept as
//! its operands ([`TensorTangent::Outer`]) until it is read or added to: the tangents of a
//! weight used in every iteration of a loop then cost one GEMM over all iterations.

use super::forward::{linear, sum_terms};
use super::slot;
use crate::TangentVector;
use crate::tensor::error::{TensorError, ensure, or_panic};
use crate::tensor::shape::broadcast_shape;
use crate::tensor::{Backend, MatmulSpec, OuterSum, Shape, Tensor, TensorTangent};

impl<B: Backend> Tensor<B> {
    /// The matrix product over the last two axes, broadcasting batch axes:
    /// `y[…, i, j] = Σₗ a[…, i, l] · b[…, l, j]`. Derivative: `ā = ȳ·bᵀ`, `b̄ = aᵀ·ȳ` (summed
    /// over the axes a batch operand was broadcast along).
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let a = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    /// let b = Tensor::from_vec(vec![5.0, 6.0], &[2, 1]);
    /// assert_eq!(a.matmul(&b).to_vec_f64(), [17.0, 39.0]);
    ///
    /// #[differentiable]
    /// fn f(a: &Tensor, b: &Tensor) -> Tensor {
    ///     a.matmul(b).sum_all()
    /// }
    /// let (da, db) = gradient(f_vjp(&a, &b));
    /// assert_eq!(da.unwrap().to_vec_f64(), [5.0, 6.0, 5.0, 6.0]); // ones·bᵀ
    /// assert_eq!(db.unwrap().to_vec_f64(), [4.0, 6.0]); // aᵀ·ones
    /// ```
    ///
    /// # Panics
    /// If a rank is below 2, the inner sizes differ, the batch axes do not broadcast, or the
    /// dtypes differ.
    #[track_caller]
    pub fn matmul(&self, rhs: &Self) -> Self {
        or_panic(self.try_matmul(rhs))
    }

    /// [`matmul`](Tensor::matmul) returning an error on bad shapes (the cases under its
    /// `# Panics`) instead of panicking.
    ///
    /// ```
    /// use adjoint::prelude::*;
    /// let a = Tensor::from_vec(vec![0.0; 6], &[2, 3]);
    /// let e = a.try_matmul(&a).unwrap_err();
    /// assert_eq!(e.to_string(), "matmul: inner dimensions differ: [2, 3] · [2, 3]");
    /// ```
    pub fn try_matmul(&self, rhs: &Self) -> Result<Self, TensorError> {
        self.check_float("matmul")?;
        let (a, b) = (self.shape(), rhs.shape());
        ensure(self.dtype() == rhs.dtype(), "matmul", || {
            format!(
                "dtypes differ: {:?} {a:?} · {:?} {b:?}",
                self.dtype(),
                rhs.dtype()
            )
        })?;
        ensure(a.len() >= 2 && b.len() >= 2, "matmul", || {
            format!("operands need rank ≥ 2, got {a:?} · {b:?}")
        })?;
        ensure(a[a.len() - 1] == b[b.len() - 2], "matmul", || {
            format!("inner dimensions differ: {a:?} · {b:?}")
        })?;
        broadcast_shape("matmul", &a[..a.len() - 2], &b[..b.len() - 2]).map_err(|_| {
            TensorError::new(
                "matmul",
                format!("batch axes do not broadcast: {a:?} · {b:?}"),
            )
        })?;
        Ok(gemm(self, false, rhs, false))
    }

    /// Derivative rule of [`matmul`](Tensor::matmul): `ā = ȳ·bᵀ`, `b̄ = aᵀ·ȳ`, each computed
    /// only when needed.
    #[track_caller]
    pub fn matmul_vjp_full(
        &self,
        rhs: &Self,
        needs: [bool; 2],
    ) -> (
        Self,
        impl FnOnce(TensorTangent<B>) -> (TensorTangent<B>, TensorTangent<B>) + use<B>,
    ) {
        let y = self.matmul(rhs);
        let keep_b = needs[0].then(|| rhs.clone());
        let keep_a = needs[1].then(|| self.clone());
        let (sa, sb) = (self.shape_owned(), rhs.shape_owned());
        (y, move |d: TensorTangent<B>| {
            // Both tangents read `d`: a sum of products is computed once.
            let d = d.settled();
            matmul_tangents(
                &d,
                [keep_a.as_ref(), keep_b.as_ref()],
                [&sa, &sb],
                needs,
                false,
            )
        })
    }
}

impl<B: Backend> Tensor<B> {
    /// Forward rule of [`matmul`](Tensor::matmul), bilinear: `ẏ = ȧ·b + a·ḃ` (each term only
    /// for a tangent given).
    #[track_caller]
    pub fn matmul_jvp_full(
        &self,
        rhs: &Self,
        t: (Option<&TensorTangent<B>>, Option<&TensorTangent<B>>),
    ) -> (Self, Option<TensorTangent<B>>) {
        let y = self.matmul(rhs);
        let da = linear(t.0, |d| d.matmul(rhs));
        let db = linear(t.1, |d| self.matmul(d));
        let ty = sum_terms(y.shape(), [da, db]);
        (y, ty)
    }
}

/// The tangents `(ā, b̄)` of `y = a·op(b)` from `d = ȳ` (settled), where `op(b)` is `b`, or
/// `bᵀ` if `b_transposed` (`x.matmul(&w.t())` with `w` stored as is): `ā = ȳ·op(b)ᵀ` from `b`
/// (`kept[1]`), `b̄` from `a` (`kept[0]`: `aᵀ·ȳ`, or `ȳᵀ·a` for a transposed `b`), each
/// computed only where `needs` says so (its operand is then kept); `shapes` are those of `a`
/// and `b` as stored. A 2-D `b`'s tangent is kept as its operands (see [`OuterSum`]).
pub(crate) fn matmul_tangents<B: Backend>(
    d: &TensorTangent<B>,
    [keep_a, keep_b]: [Option<&Tensor<B>>; 2],
    [sa, sb]: [&[usize]; 2],
    needs: [bool; 2],
    b_transposed: bool,
) -> (TensorTangent<B>, TensorTangent<B>) {
    let da = match (d, keep_b) {
        // Kept as its operands for the reader: a layer's pullback applies its activation's
        // derivative as the product is written (`core/src/ops/affine.rs`).
        (TensorTangent::Dense(d), Some(b))
            if needs[0] && d.rank() == 2 && sa.len() == 2 && sb.len() == 2 =>
        {
            OuterSum::input(d.clone(), b.clone(), b_transposed)
        }
        _ => slot(needs[0], d, |d| {
            let da = gemm(d, false, keep_b.expect("kept"), !b_transposed);
            if da.shape() == sa { da } else { da.sum_to(sa) }
        }),
    };
    let db = match (d, keep_a) {
        (TensorTangent::Dense(d), Some(a)) if sb.len() == 2 => {
            // b̄ = A_flatᵀ · Ȳ_flat over all batch rows, kept as its two operands so that the
            // accumulator of a weight used in many loop iterations takes it into its buffer.
            // The batch rows counted from the shape, not as `len / cols`, which is 0 for an
            // empty last axis whatever the rows.
            let flat = |t: &Tensor<B>| {
                if t.rank() == 2 {
                    t.clone()
                } else {
                    let (rows, cols) = t.shape().split_at(t.rank() - 1);
                    t.reshape(&[rows.iter().product(), cols[0]])
                }
            };
            let (a, d) = (flat(a), flat(d));
            if b_transposed {
                OuterSum::tangent(d, a)
            } else {
                OuterSum::tangent(a, d)
            }
        }
        _ => slot(needs[1], d, |d| {
            let a = keep_a.expect("kept");
            let db = if b_transposed {
                gemm(d, true, a, false)
            } else {
                gemm(a, true, d, false)
            };
            db.sum_to(sb)
        }),
    };
    (da, db)
}

/// The product `op(a)·op(b)` of one pair of matrices, for operand shapes `sa` and `sb` (their
/// last two axes), `op` transposing where the flag is set.
pub(crate) fn product_spec(sa: &[usize], ta: bool, sb: &[usize], tb: bool) -> MatmulSpec {
    let (ra, rb) = (sa.len(), sb.len());
    let (m, k) = if ta {
        (sa[ra - 1], sa[ra - 2])
    } else {
        (sa[ra - 2], sa[ra - 1])
    };
    MatmulSpec {
        batch: 1,
        m,
        k,
        n: if tb { sb[rb - 2] } else { sb[rb - 1] },
        lhs_batch_stride: 0,
        rhs_batch_stride: 0,
        lhs_transposed: ta,
        rhs_transposed: tb,
    }
}

/// `out += α·op(a)·op(b)` for matrices `a` and `b` (shapes valid, `out` holding the
/// product's elements): a GEMM with β = 1 into `out`'s buffer.
pub(crate) fn gemm_acc<B: Backend>(
    a: &Tensor<B>,
    ta: bool,
    b: &Tensor<B>,
    tb: bool,
    alpha: f64,
    out: &mut B::Storage,
) {
    let spec = product_spec(a.shape(), ta, b.shape(), tb);
    B::matmul_acc(a.storage(), b.storage(), &spec, alpha, out);
}

/// `op(a) · op(b)` where `op` transposes the last two axes when the flag is set; shapes are
/// valid. Batch axes broadcast; a 2-D `b` with an untransposed `a` is a single GEMM.
pub(crate) fn gemm<B: Backend>(a: &Tensor<B>, ta: bool, b: &Tensor<B>, tb: bool) -> Tensor<B> {
    let (sa, sb) = (a.shape(), b.shape());
    let (ra, rb) = (sa.len(), sb.len());
    let one = product_spec(sa, ta, sb, tb);
    let (m, n) = (one.m, one.n);
    let plain = |batch, rows| MatmulSpec {
        batch,
        m: rows,
        ..one
    };
    if ra == 2 && rb == 2 {
        // Two matrices: no batch axes to broadcast.
        let product = B::matmul(a.storage(), b.storage(), &plain(1, m));
        return Tensor::from_storage(product, [m, n]);
    }
    let (batch_a, batch_b) = (&sa[..ra - 2], &sb[..rb - 2]);
    let batch_shape = broadcast_shape("matmul", batch_a, batch_b).expect("validated");
    let mut out_shape = Shape::from_slice(&batch_shape);
    out_shape.extend_from_slice(&[m, n]);
    if batch_b.is_empty() && !ta {
        let rows = batch_a.iter().product::<usize>() * m;
        return Tensor::from_storage(
            B::matmul(a.storage(), b.storage(), &plain(1, rows)),
            out_shape,
        );
    }
    let batch: usize = batch_shape.iter().product();
    let operand = |t: &Tensor<B>, own: &[usize], rows: usize, cols: usize| -> (Tensor<B>, usize) {
        if own.iter().product::<usize>() == 1 {
            (t.clone(), 0)
        } else if own == batch_shape.as_slice() {
            (t.clone(), rows * cols)
        } else {
            let mut full = Shape::from_slice(&batch_shape);
            full.extend_from_slice(&[rows, cols]);
            (t.broadcast_to(&full), rows * cols)
        }
    };
    let (a2, sa_stride) = operand(a, batch_a, sa[ra - 2], sa[ra - 1]);
    let (b2, sb_stride) = operand(b, batch_b, sb[rb - 2], sb[rb - 1]);
    let spec = MatmulSpec {
        lhs_batch_stride: sa_stride,
        rhs_batch_stride: sb_stride,
        ..plain(batch, m)
    };
    Tensor::from_storage(B::matmul(a2.storage(), b2.storage(), &spec), out_shape)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{check_binary, t64};

    #[test]
    fn matmul_rules() {
        for (a, b) in [
            (vec![3, 4], vec![4, 5]),
            (vec![2, 3, 4], vec![4, 5]),
            (vec![3, 4], vec![2, 4, 5]),
            (vec![2, 3, 4], vec![2, 4, 5]),
            (vec![2, 1, 3, 4], vec![3, 4, 2]),
            // Empty: a batch axis of 0 (it panicked in the kernel, whose operands hold no
            // matrix), and a 2-D weight with no columns (its tangent's rows were counted as
            // `len / cols`, 0).
            (vec![2, 0, 3, 3], vec![1, 1, 3, 1]),
            (vec![0, 3, 1], vec![1, 1, 0]),
            (vec![2, 2, 1], vec![1, 0]),
            (vec![2, 3, 0], vec![0, 1]),
        ] {
            check_binary("matmul", &a, &b, |x, y| x.matmul_vjp_full(y, [true, true]));
        }
    }

    #[test]
    fn exact_values() {
        let a = t64(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
        let b = t64(&[5.0, 6.0, 7.0, 8.0], &[2, 2]);
        assert_eq!(a.matmul(&b).to_vec_f64(), vec![19.0, 22.0, 43.0, 50.0]);
    }

    #[test]
    #[should_panic(expected = "matmul: inner dimensions differ: [2, 3] · [4, 5]")]
    fn bad_inner() {
        let _ = crate::Tensor::zeros(&[2, 3]).matmul(&crate::Tensor::zeros(&[4, 5]));
    }
}
