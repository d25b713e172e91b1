//! What a product reads and writes: its operands and output under their strides, the breaks
//! in the runs of a row-major `A` read in place ([`Wrap`]), and the [`Epilogue`] applied as
//! `C` is written.

use super::super::elementwise::{binary_slice, unary_slice};
use super::super::math::Elementary;
use adjoint_backend::{BinaryOp, Real, UnaryOp};

/// A matrix operand: its first element and its (row, column) strides in elements.
pub(crate) type Operand<T> = (*const T, [isize; 2]);
/// A matrix result: its first element and its (row, column) strides in elements.
pub(crate) type Output<T> = (*mut T, [isize; 2]);

/// What a product does with each sum of `C` as it writes it: `C[i, j] = grad(y[i, j],
/// act(α·(A·B)[i, j] + β·C[i, j] + bias[j]))` (each part optional: α = 1, no bias, no
/// activation, no derivative), then `sums[j] += C[i, j]` if asked. The bias's sum, the
/// activation and the derivative are the elementwise ops' own kernels (`binary_slice`,
/// `unary_slice`), so a product with an epilogue gives the values of the product followed by
/// those ops, to the last bit; the sums are those of a reduction over the rows (each column
/// added up in row order from zero) when the rows of each column are written in order, by
/// one thread: [`gemm_parallel`](super::gemm_parallel) then splits such a product by columns
/// only.
#[derive(Clone, Copy)]
pub(crate) struct Epilogue<T> {
    /// The factor α of the product (`None`: 1), applied to every partial sum of the inner
    /// dimension as it is added to `C` (by a fused multiply-add in a type's own kernel).
    pub scale: Option<T>,
    /// The bias row: `n` elements, one per column of `C`.
    pub bias: Option<*const T>,
    /// The activation.
    pub act: Option<UnaryOp>,
    /// An activation's derivative `grad(y, ·)` (a `BinaryOp` of `(y, ȳ)`, the product being
    /// `ȳ`) and `y` at `C`'s first element, laid out with `C`'s strides.
    pub grad: Option<(BinaryOp, *const T)>,
    /// The column sums `Σᵢ C[i, j]` (a bias's tangent, where `C` is the tangent of the layer's
    /// pre-activation): `n` elements at `C`'s first column, zeros before the product, to which
    /// each element of `C` is added as it is written, rows in order.
    pub sums: Option<*mut T>,
}

impl<T: Real + Send + Sync + Elementary> Epilogue<T> {
    /// No epilogue: `C` is the product.
    pub const NONE: Self = Epilogue {
        scale: None,
        bias: None,
        act: None,
        grad: None,
        sums: None,
    };

    /// `C` is `α` times the product (plus `β·C`).
    pub(crate) fn scaled(alpha: T) -> Self {
        Epilogue {
            scale: Some(alpha),
            ..Self::NONE
        }
    }

    /// What the sums of a block of the inner dimension other than the last get: the factor
    /// only (the bias and the activation wait for the complete sums).
    pub(crate) fn partial(self) -> Self {
        Epilogue {
            scale: self.scale,
            ..Self::NONE
        }
    }

    /// The epilogue of the columns from `start` on (`C`'s columns contiguous).
    pub(crate) fn at_column(self, start: usize) -> Self {
        Epilogue {
            bias: self.bias.map(|b| b.wrapping_add(start)),
            grad: self.grad.map(|(op, y)| (op, y.wrapping_add(start))),
            sums: self.sums.map(|s| s.wrapping_add(start)),
            ..self
        }
    }

    /// The epilogue of the rows from `start` on, `row` elements apart.
    pub(crate) fn at_row(self, start: usize, row: isize) -> Self {
        Epilogue {
            grad: self
                .grad
                .map(|(op, y)| (op, y.wrapping_offset(start as isize * row))),
            ..self
        }
    }

    /// Applies the bias, the activation and the derivative to the `m × n` block `C` (row
    /// stride `cr`, columns contiguous), after a product that applied the factor, and adds
    /// its rows, in order, to the sums.
    ///
    /// # Safety
    /// `C` addresses `m` rows of `n` initialized elements, `bias` and `sums` (if any) `n`
    /// elements each.
    pub(crate) unsafe fn apply(self, [m, n]: [usize; 2], c: *mut T, cr: isize) {
        if self.bias.is_none() && self.act.is_none() && self.grad.is_none() && self.sums.is_none() {
            return;
        }
        for i in 0..m {
            // SAFETY: row `i < m` of `C` holds `n` elements (the caller's contract) that no
            // other reference reaches while this one lives.
            let row = unsafe { std::slice::from_raw_parts_mut(c.offset(i as isize * cr), n) };
            if let Some(bias) = self.bias {
                // SAFETY: the bias row holds `n` elements.
                let bias = unsafe { std::slice::from_raw_parts(bias, n) };
                binary_slice(BinaryOp::Add, row, bias, true);
            }
            if let Some(op) = self.act {
                unary_slice(op, row);
            }
            if let Some((op, y)) = self.grad {
                // SAFETY: `y` has `C`'s layout (the caller's contract): row `i` holds `n`
                // elements.
                let y = unsafe { std::slice::from_raw_parts(y.offset(i as isize * cr), n) };
                binary_slice(op, row, y, false);
            }
            if let Some(sums) = self.sums {
                // SAFETY: the sums hold `n` elements that nothing else reaches meanwhile.
                let sums = unsafe { std::slice::from_raw_parts_mut(sums, n) };
                for (s, &x) in sums.iter_mut().zip(row.iter()) {
                    *s = *s + x;
                }
            }
        }
    }
}

/// Where the runs of a row-major `A`'s rows break: element `(r, p)` lies at
/// `r·ar + p·ac + ⌊p / every⌋·skip`. An image's unfolding at stride 1 has such rows without
/// being copied out: row `(c, kᵢ, kⱼ)` restricted to output row `y` is `ow` adjacent
/// elements of the image, and the next output row's start `W − ow` elements after its end
/// (`W` the image's width), so the image itself, `every = ow` and `skip = W − ow`, is that
/// row ([`Gemm::gemm_shared_b`](super::Gemm::gemm_shared_b)).
#[derive(Clone, Copy)]
pub(crate) struct Wrap {
    /// Elements of a run (`usize::MAX`: one run).
    pub(crate) every: usize,
    /// How much further on than adjacent the next run starts.
    pub(crate) skip: isize,
    /// Steps before the first break, from where a block of the inner dimension starts.
    pub(crate) first: usize,
}

impl Wrap {
    /// Rows without breaks.
    pub(crate) const NONE: Wrap = Wrap {
        every: usize::MAX,
        skip: 0,
        first: usize::MAX,
    };

    /// A break after every `every` elements (at least 1), the next `skip` elements on.
    pub(crate) fn every(every: usize, skip: isize) -> Wrap {
        assert!(every > 0, "Wrap::every: runs of at least one element");
        Wrap {
            every,
            skip,
            first: every,
        }
    }

    /// Whether the runs break at all.
    pub(crate) fn breaks(self) -> bool {
        self.every != usize::MAX
    }

    /// The offset of inner index `p` along a row (columns `ac` apart), and the breaks of a
    /// block of the inner dimension that starts there.
    pub(crate) fn at(self, p: usize, ac: isize) -> (isize, Wrap) {
        let offset = p as isize * ac + (p / self.every) as isize * self.skip;
        let first = self.every - p % self.every;
        (offset, Wrap { first, ..self })
    }
}
