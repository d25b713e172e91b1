//! The entry points: a product on this thread ([`sgemm`]), over the chunks a thread is handed
//! ([`sgemm_chunks`]), and a series of products that share `B` ([`sgemm_shared_b`]).

use std::ops::Range;

use super::super::product::{Epilogue, Operand, Output, Wrap};
use super::block::{Share, product};
use super::blocking::{PACKED, PACKED_A, grow_to, inner_step, narrow};
use super::isa::{Avx2, Avx512, Isa};
use super::pack::{pack_a, packs_a};
use adjoint_backend::{BinaryOp, UnaryOp};

/// Whether this CPU runs [`sgemm`]: it has AVX-512F, or AVX2 and FMA (`std` caches the
/// answers after the first query).
#[inline]
pub(crate) fn available() -> bool {
    Avx512::available() || Avx2::available()
}

/// `$run` with `$isa` the widest extension this CPU has, else `$none`.
macro_rules! on_widest {
    ($isa:ident => $run:expr, else $none:expr) => {
        if Avx512::available() {
            type $isa = Avx512;
            $run
        } else if Avx2::available() {
            type $isa = Avx2;
            $run
        } else {
            $none
        }
    };
}

/// `C = act(A·B + β·C + bias)` as [`Gemm::gemm_epilogue`](crate::ops::gemm::Gemm::gemm_epilogue),
/// by this module's kernel (for the widest extension the CPU has) when it handles the
/// product; returns whether it ran. It does when [`available`], β is 0 or 1, `C`'s columns are contiguous and `B`'s columns or rows are (`false`:
/// use another GEMM). The bias and a ReLU are applied in the register tiles as they are written;
/// another activation to each block of rows after its product.
///
/// # Safety
/// As [`Gemm::gemm_epilogue`](crate::ops::gemm::Gemm::gemm_epilogue): the pointers address matrices
/// of these sizes under their strides, `C` overlaps neither operand, and the bias addresses `n`
/// elements.
pub(crate) unsafe fn sgemm(
    mkn: [usize; 3],
    a: Operand<f32>,
    b: Operand<f32>,
    beta: f32,
    c: Output<f32>,
    epilogue: Epilogue<f32>,
) -> bool {
    let mut whole = Some(0..mkn[0]);
    let mut next = || whole.take();
    // SAFETY: the caller's contract; the one chunk is every row, and shares nothing; the
    // CPU has the extension `on_widest` picked.
    on_widest!(S => unsafe {
        chunks::<S>(mkn, a, b, beta, c, epilogue, (true, false), &mut next)
    }, else false)
}

/// Whether [`sgemm`] and [`sgemm_chunks`] run a product with this `B`, β and `C`: on a CPU
/// with AVX-512F or AVX2 and FMA, for β 0 or 1, `C`'s columns contiguous and `B`'s columns or
/// rows.
pub(crate) fn handles(b: Operand<f32>, beta: f32, c: Output<f32>) -> bool {
    available() && takes(b, beta, c)
}

/// Whether [`sgemm_chunks`] runs this product, split into chunks of rows (`rows`) or of
/// columns, without packing again per chunk what they share: it packs that operand once for
/// all of them ([`sharing`]), or reads it in place (a row-major `A` where the extension does
/// not pack one, a [`narrow`] `B`). An extension without [`Isa::CHUNKS_BY_SHAPE`] says yes for
/// every product it takes.
pub(crate) fn shares_packing(
    mkn: [usize; 3],
    (_, a): Operand<f32>,
    b: Operand<f32>,
    beta: f32,
    c: Output<f32>,
    rows: bool,
) -> bool {
    handles(b, beta, c) && on_widest!(S => cheap_chunks::<S>(mkn, a, b.1, rows), else false)
}

/// [`shares_packing`] for `S`, on the strides of `A` and `B`.
fn cheap_chunks<S: Isa>(mkn: [usize; 3], a: [isize; 2], b: [isize; 2], rows: bool) -> bool {
    !S::CHUNKS_BY_SHAPE
        || mkn[1] == 0
        || sharing::<S>(mkn, a, b, rows) != Sharing::None
        || (!rows && !packs_a::<S>(a))
        || (rows && narrow::<S>(b))
}

/// Whether the kernel takes a product with this `B`, β and `C` on a CPU it runs on.
fn takes((_, [br, bc]): Operand<f32>, beta: f32, (_, [_, cc]): Output<f32>) -> bool {
    (beta == 0.0 || beta == 1.0) && cc == 1 && (bc == 1 || br == 1)
}

/// The largest operand, in elements, that [`sgemm_chunks`] packs once for all the chunks a
/// thread runs (1 MiB; the MNIST MLP's largest activation, `x`, is 0.4 MiB).
const SHARED_MAX: usize = 1 << 18;

/// `C = act(A·B + β·C + bias)` as [`sgemm`], over the chunks of rows (`rows`) or of columns of
/// `C` that `next` hands out, until it hands out none; returns whether it ran (the conditions
/// of [`sgemm`]). Chunks of columns share all of `A`, chunks of rows all of `B`: this thread
/// packs that operand once, before its first chunk (`A`, where the kernel packs it) or as
/// its first chunk reads it (`B`), when it has at most [`SHARED_MAX`] elements
/// ([`sharing`]), so that a product handed out in many chunks (for balance between threads)
/// packs it no more often than in one.
///
/// # Safety
/// As [`sgemm`]; every chunk lies inside `C`'s rows (`rows`) or columns.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn sgemm_chunks(
    mkn: [usize; 3],
    a: Operand<f32>,
    b: Operand<f32>,
    beta: f32,
    c: Output<f32>,
    epilogue: Epilogue<f32>,
    rows: bool,
    next: &mut dyn FnMut() -> Option<Range<usize>>,
) -> bool {
    // SAFETY: the caller's contract; the CPU has the extension `on_widest` picked.
    on_widest!(S => unsafe {
        chunks::<S>(mkn, a, b, beta, c, epilogue, (rows, true), next)
    }, else false)
}

/// What the chunks of a split product share, packed once by each thread.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sharing {
    /// Nothing: each chunk packs what it reads.
    None,
    /// All of `A`, which chunks of columns share.
    A,
    /// All of `B`, which chunks of rows share.
    B,
}

/// What `S`'s kernel shares between the chunks of rows (`rows`) or of columns of a product
/// with these strides of `A` and `B`: all of an operand of at most [`SHARED_MAX`] elements
/// that it packs ([`packs_a`] for `A`; `B` unless [`narrow`], read in place).
fn sharing<S: Isa>([m, k, n]: [usize; 3], a: [isize; 2], b: [isize; 2], rows: bool) -> Sharing {
    if k == 0 {
        Sharing::None
    } else if !rows && packs_a::<S>(a) && m.next_multiple_of(S::MR) * k <= SHARED_MAX {
        Sharing::A
    } else if rows && k * n.next_multiple_of(S::NR) <= SHARED_MAX && !narrow::<S>(b) {
        Sharing::B
    } else {
        Sharing::None
    }
}

/// [`sgemm_chunks`] in `S`'s kernel, packing the shared operand once only when `share`.
///
/// # Safety
/// As [`sgemm_chunks`], on a CPU with `S`.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn chunks<S: Isa>(
    [m, k, n]: [usize; 3],
    (a, [ar, ac]): Operand<f32>,
    (b, [br, bc]): Operand<f32>,
    beta: f32,
    (c, [cr, cc]): Output<f32>,
    epilogue: Epilogue<f32>,
    (rows, share): (bool, bool),
    next: &mut dyn FnMut() -> Option<Range<usize>>,
) -> bool {
    if !takes((b, [br, bc]), beta, (c, [cr, cc])) {
        return false;
    }
    let add = beta == 1.0;
    // The tiles add the bias, apply a ReLU and a ReLU's derivative as they write their last
    // sums; another activation or derivative runs over each chunk after its product.
    let relu = epilogue.act == Some(UnaryOp::Relu);
    let later = epilogue.act.is_some() && !relu;
    let grad_in_tiles = !later && matches!(epilogue.grad, Some((BinaryOp::LeakyReluGrad(_), _)));
    let mut after = Epilogue {
        act: epilogue.act.filter(|_| !relu),
        grad: epilogue.grad.filter(|_| !grad_in_tiles),
        ..Epilogue::NONE
    };
    // The column sums are taken by whichever writes the final values.
    let sums_after = after.act.is_some() || after.grad.is_some();
    after.sums = epilogue.sums.filter(|_| sums_after);
    let in_tiles = Epilogue {
        act: epilogue.act.filter(|_| relu),
        grad: epilogue.grad.filter(|_| grad_in_tiles),
        sums: epilogue.sums.filter(|_| !sums_after),
        ..epilogue
    };
    let m_tiles = m.next_multiple_of(S::MR);
    let sharing = if share {
        sharing::<S>([m, k, n], [ar, ac], [br, bc], rows)
    } else {
        Sharing::None
    };
    let (share_a, share_b) = (sharing == Sharing::A, sharing == Sharing::B);
    // The shared operand's buffer is taken out of its cell for the chunks, whose blocks
    // borrow the other cell.
    let cell = if share_a {
        Some(&PACKED_A)
    } else if share_b {
        Some(&PACKED)
    } else {
        None
    };
    let mut buffer = cell.map(|cell| cell.take()).unwrap_or_default();
    // Where the shared operand is packed (nothing is, without one).
    let base = if share_a {
        grow_to(&mut buffer, m_tiles * k)
    } else if share_b {
        grow_to(&mut buffer, k * n.next_multiple_of(S::NR))
    } else {
        std::ptr::null_mut()
    };
    if share_a {
        // SAFETY: the CPU has `S` (the caller's contract); each block of `A` (rows `i0..`,
        // inner indices `p0..`) is the caller's, and its tiles go to `p0·m_tiles + i0·kc..`
        // of the buffer, inside its `m_tiles · k` elements.
        unsafe {
            let step = inner_step::<S>(k);
            for p0 in (0..k).step_by(step) {
                let kc = step.min(k - p0);
                for i0 in (0..m).step_by(S::MC) {
                    let from = a.offset(p0 as isize * ac + i0 as isize * ar);
                    let to = base.add(p0 * m_tiles + i0 * kc);
                    pack_a::<S>([S::MC.min(m - i0), kc], (from, [ar, ac]), to);
                }
            }
        }
    }
    let mut fill = true;
    while let Some(chunk) = next() {
        let share = if share_a {
            Share::A {
                ptr: base.cast_const(),
                rows: m_tiles,
            }
        } else if share_b {
            Share::B { ptr: base, fill }
        } else {
            Share::None
        };
        fill = false;
        let (start, len) = (chunk.start as isize, chunk.len());
        // SAFETY: the CPU has `S` (the caller's contract); the chunk's rows (columns) of `A`
        // (of `B`), of `C` and of the bias lie inside what the caller described, and the
        // shared buffer holds what `share` says. The product initializes the chunk of `C`
        // before the remaining activation reads it.
        unsafe {
            if rows {
                let c = c.offset(start * cr);
                let a = (a.offset(start * ar), [ar, ac]);
                let finish = in_tiles.at_row(chunk.start, cr);
                product::<S>(
                    [len, k, n],
                    a,
                    Wrap::NONE,
                    (b, [br, bc]),
                    (c, cr),
                    add,
                    finish,
                    share,
                );
                after.at_row(chunk.start, cr).apply([len, n], c, cr);
            } else {
                let (b, c) = ((b.offset(start * bc), [br, bc]), c.offset(start));
                let finish = in_tiles.at_column(chunk.start);
                let a = (a, [ar, ac]);
                product::<S>([m, k, len], a, Wrap::NONE, b, (c, cr), add, finish, share);
                after.at_column(chunk.start).apply([m, len], c, cr);
            }
        }
    }
    if let Some(cell) = cell {
        cell.set(buffer);
    }
    true
}

/// [`Gemm::gemm_shared_b`](crate::ops::gemm::Gemm::gemm_shared_b) for `f32`: `C[cₜ..] +=
/// A[aₜ..]·B` for each pair of offsets of `at` in order, on this thread, `B` packed once for
/// all of them (by the first product). Returns whether it ran: it does under the conditions
/// of [`sgemm`] for this `B` and β = 1 and, where the runs break inside the `k` steps, for
/// rows of `A` that are not adjacent and a `B` whose columns are not (the tiles that read
/// broken runs read neither a transposed `A` nor a row-major `B` that they pack). The sums
/// of each product are those of [`sgemm`] on the same `A` laid out without breaks, to the
/// bit (the same blocks of the inner dimension, in the same order).
///
/// # Safety
/// As [`sgemm`] for every pair: each `A[aₜ..]` addresses its `m × k` elements under `ar` and
/// `wrap`, `B` its `k × n` under its strides, each `C[cₜ..]` `m × n` elements that no operand
/// and no other pair's `C` overlaps.
pub(crate) unsafe fn sgemm_shared_b(
    [m, k, n]: [usize; 3],
    (a, ar, wrap): (*const f32, isize, Wrap),
    b: Operand<f32>,
    (c, cr): (*mut f32, isize),
    at: &[(usize, usize)],
) -> bool {
    let wrap = if wrap.every >= k { Wrap::NONE } else { wrap };
    let [_, bc] = b.1;
    let declined = wrap.breaks() && (ar == 1 || bc == 1);
    if declined || !handles(b, 1.0, (c, [cr, 1])) {
        return false;
    }
    // SAFETY: the caller's contract; the CPU has the extension `on_widest` picked.
    on_widest!(S => unsafe { shared_b::<S>([m, k, n], (a, ar, wrap), b, (c, cr), at) }, else false)
}

/// [`sgemm_shared_b`] in `S`'s kernel, for a product it takes.
///
/// # Safety
/// As [`sgemm_shared_b`], on a CPU with `S`.
unsafe fn shared_b<S: Isa>(
    [m, k, n]: [usize; 3],
    (a, ar, wrap): (*const f32, isize, Wrap),
    b: Operand<f32>,
    (c, cr): (*mut f32, isize),
    at: &[(usize, usize)],
) -> bool {
    if k == 0 {
        // Nothing to add to any `C`.
        return true;
    }
    let mut buffer = PACKED.take();
    let base = grow_to(&mut buffer, k * n.next_multiple_of(S::NR));
    for (t, &(a_at, c_at)) in at.iter().enumerate() {
        let share = Share::B {
            ptr: base,
            fill: t == 0,
        };
        // SAFETY: the CPU has `S` (the caller's contract); the pair's operands are the
        // caller's, and the buffer holds all `k` rows of `B`'s panels, packed by the first
        // product.
        unsafe {
            let (a, c) = ((a.add(a_at), [ar, 1]), (c.add(c_at), cr));
            product::<S>([m, k, n], a, wrap, b, c, true, Epilogue::NONE, share);
        }
    }
    PACKED.set(buffer);
    true
}
