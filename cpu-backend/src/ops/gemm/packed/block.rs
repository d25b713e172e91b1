//! A product as blocks: of columns and of the inner dimension ([`product`]), then of rows and
//! panels, down to the register tiles ([`block`]).

use super::super::product::{Epilogue, Operand, Wrap};
use super::blocking::{PACKED, PACKED_A, grow_to, inner_step, narrow};
use super::isa::Isa;
use super::pack::{Panels, pack_a, packing, packs_a};
use super::tile::{Columns, tiles};

/// What the chunks of a product that one thread runs share ([`sgemm_chunks`](super::sgemm_chunks)):
/// an operand the thread packed once for all of them.
#[derive(Clone, Copy)]
pub(super) enum Share {
    /// Nothing: each block packs what it reads.
    None,
    /// All of `A`, packed one block of the inner dimension after the other: the `kc` columns
    /// from `p0` at `ptr + p0·rows` (`rows`: `m` rounded up to `MR`), in [`pack_a`]'s layout
    /// (its block of `MC` rows from `i0` at `i0·kc`).
    A { ptr: *const f32, rows: usize },
    /// All of `B`, in panels of all `k` rows (panel `q` at `ptr + q·k·NR`): written by this
    /// chunk when `fill` (the thread's first), read by the others.
    B { ptr: *mut f32, fill: bool },
}

/// `C (+)= A·B` for one block of the inner dimension: `A` is `m × kc` under `(ar, ac)`, `B`
/// `kc × nc` as `panels`, `C` `m × nc` (row stride `cr`); `finish` (at the block's first
/// column) as the tiles write their sums.
///
/// # Safety
/// A CPU with `S`; the pointers address matrices of these sizes, `C` overlaps neither
/// operand.
#[allow(clippy::too_many_arguments)]
unsafe fn block<S: Isa>(
    [m, kc, nc]: [usize; 3],
    (a, ar, ac): (*const f32, isize, isize),
    wrap: Wrap,
    a_packed: Option<*const f32>,
    panels: Panels<S>,
    (c, cr): (*mut f32, isize),
    add: bool,
    finish: Epilogue<f32>,
) {
    // A transposed `A` (adjacent rows) that more than one panel reads is packed: each tile's
    // `MR × kc` elements become one contiguous run, which the broadcasts read at constant
    // offsets from one pointer. Read in place, it touches a line per step for 32 of its 64
    // bytes: 171 and 136 GFLOP/s for `784 × 128 × 512` and 1024³, 198 and 181 packed, on one
    // core of a Xeon whose FMA peak is 246. A row-major `A` is read in place: each tile's eight rows are eight pointers
    // and one offset, and each line it loads serves sixteen steps. Packed by `16 × 16`
    // transposes instead, one core of a Xeon (FMA peak 176) ran `128 × 784 × 512` at 145–148
    // GFLOP/s against 154–155 in place, `64 × 9216 × 128` at 74–109 against 124–125 and
    // 256³ at 148–152 against 166, and the MNIST MLP step took 1793–1809 µs against
    // 1741–1754 (three alternating pairs, 22nd session; AVX-512 kernels, as the figures
    // below).
    // Already packed (`a_packed`, by [`sgemm_chunks`]), tile `i` of `MR` rows is at
    // `a_packed + i·kc`.
    // A block of one panel reads each tile's `A` once, in place: packing it would add a copy
    // (the MNIST MLP's `W₃` tangent, `512 × 128 × 10`: 23.5 µs packed, 18.2 in place,
    // medians of ~2000 steps alternated in one process, 26th session).
    let (mr, nr, mc) = (S::MR, S::NR, S::MC);
    let pack = a_packed.is_none() && kc > 0 && packs_a::<S>([ar, ac]) && nc > nr && !wrap.breaks();
    let run = |packed: *mut f32| {
        // SAFETY: every pointer formed below addresses an element of the caller's matrices
        // (rows `< m`, columns `< nc`, panels `< nc / NR` rounded up) or of the buffer (tiles
        // `< MC / MR` of `kc × MR`) or of the caller's packed `A`, and each tile's accesses
        // are too.
        unsafe {
            for i0 in (0..m).step_by(mc) {
                let rows_end = m.min(i0 + mc);
                if pack {
                    let a = (a.offset(i0 as isize * ar), [ar, ac]);
                    pack_a::<S>([rows_end - i0, kc], a, packed);
                }
                for (q, j) in (0..nc).step_by(nr).enumerate() {
                    let cols = Columns::<S>::first(nr.min(nc - j));
                    let masked = nc - j < nr && !panels.packed;
                    let at = panels.ptr.wrapping_offset(q as isize * panels.panel);
                    let panel = (at, panels.row, masked);
                    // Packed on the fly: the first tile reads the panel in place (its last
                    // one masked) and writes it for the others.
                    let mut first = panels
                        .source
                        .filter(|_| i0 == 0)
                        .map(|(src, br)| ((src.add(j), br, nc - j < nr), at.cast_mut()));
                    let finish = finish.at_column(j);
                    let mut i = i0;
                    while i < rows_end {
                        let (panel, fill) = match first.take() {
                            Some((source, fill)) => (source, Some(fill)),
                            None => (panel, None),
                        };
                        let rows = mr.min(rows_end - i);
                        let a = if let Some(packed) = a_packed {
                            (packed.add(i * kc), 1, mr as isize)
                        } else if pack {
                            (packed.add((i - i0) * kc).cast_const(), 1, mr as isize)
                        } else {
                            (a.wrapping_offset(i as isize * ar), ar, ac)
                        };
                        let c = (c.offset(i as isize * cr).add(j), cr);
                        let finish = finish.at_row(i, cr);
                        tiles(rows, kc, a, wrap, panel, fill, cols, c, add, finish);
                        i += rows;
                    }
                }
            }
        }
    };
    if pack {
        PACKED_A.with_borrow_mut(|buffer| {
            run(grow_to(buffer, mc * kc));
        });
    } else {
        run(std::ptr::null_mut());
    }
}

/// `C (+)= A·B`, then `finish`, with each `KC × NC` block of `B` packed into this thread's
/// buffer as contiguous panels (copied by the tiles that first read them when `B` is
/// row-major, `br` apart: the copy's loads are the tile's own, and its stores overlap the
/// multiply-adds, which a separate copy, 12% of a `128 × 784 × 512` product on one core of
/// a Xeon, did not; transposed beforehand by `16 × 16` register blocks when its rows are
/// contiguous, `bc` apart), except a row-major `B` in a product of at most [`IN_PLACE_ROWS`]
/// rows or a [`narrow`] one, read in place; or, for a chunk of a split product (`share`), the `A`
/// or `B` its thread packed once for all its chunks. Every tile of a block of rows reads a packed
/// panel from L1 with unmasked loads; read in place, the rows of a panel are `n` elements apart
/// (the 1024³ product: 130 GFLOP/s in place, 165 packed, on one core of a Xeon whose FMA peak is
/// 246; presumably because rows 4 KiB apart map to the same few sets of L1, which this VM's lack of
/// cache counters leaves unchecked).
///
/// The inner dimension is split into equal blocks of at most `KC` (784 = 4 × 196, not
/// 3 × 256 + 16, whose last block would pay a tile's setup and stores for 16 steps).
///
/// # Safety
/// A CPU with `S`, and the pointers as for [`sgemm`](super::sgemm::sgemm).
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn product<S: Isa>(
    [m, k, n]: [usize; 3],
    (a, [ar, ac]): Operand<f32>,
    wrap: Wrap,
    (b, [br, bc]): Operand<f32>,
    (c, cr): (*mut f32, isize),
    add: bool,
    finish: Epilogue<f32>,
    share: Share,
) {
    if k == 0 {
        // No sums: `C` is `β·C` (zeros or itself), then the epilogue, by the same tiles
        // with no steps (they read no operand).
        let empty = std::ptr::NonNull::<f32>::dangling().as_ptr();
        // SAFETY: no element of `A` or `B` is read; `C` is the caller's.
        let panels = Panels::<S>::packed(empty, 0);
        let a = (empty.cast_const(), 0, 0);
        return unsafe { block([m, 0, n], a, Wrap::NONE, None, panels, (c, cr), add, finish) };
    }
    let step = inner_step::<S>(k);
    // A shared `B` is never read in place, nor packed into this call's buffer.
    let in_place = bc == 1
        && (m <= S::IN_PLACE_ROWS || narrow::<S>([br, bc]))
        && !matches!(share, Share::B { .. });
    let own_buffer = !in_place && !matches!(share, Share::B { .. });
    // In place, one block of columns: nothing is copied that a narrower block would keep in
    // cache.
    let width = if in_place { n.max(1) } else { S::NC };
    PACKED.with_borrow_mut(|buffer| {
        // Read only by the blocks that pack into this call's buffer.
        let dst = if own_buffer {
            grow_to(buffer, step * S::NC.min(n).next_multiple_of(S::NR))
        } else {
            std::ptr::null_mut()
        };
        for j0 in (0..n).step_by(width) {
            let nc = width.min(n - j0);
            for p0 in (0..k).step_by(step) {
                let kc = step.min(k - p0);
                let finish = if p0 + kc == k {
                    finish.at_column(j0)
                } else {
                    finish.partial()
                };
                // SAFETY: columns `j0..j0 + nc` and inner indices `p0..p0 + kc` of `B` are
                // the caller's; this call's buffer holds `kc` rows of `nc` rounded up to
                // panels, a shared one all `k` rows of every panel; the block then reads them
                // (or `B` in place), rows `< m` of `A` and the block of `C`.
                unsafe {
                    let src = b.offset(p0 as isize * br + j0 as isize * bc);
                    let panels = match share {
                        // Panels of all `k` rows: this block's from column `j0`, row `p0`.
                        Share::B { ptr, fill } => {
                            let at = ptr.add(j0 * k + p0 * S::NR);
                            if fill {
                                packing::<S>([kc, nc], (src, [br, bc]), at, k)
                            } else {
                                Panels::packed(at, k)
                            }
                        }
                        _ if in_place => Panels::in_place(src, br),
                        _ => packing([kc, nc], (src, [br, bc]), dst, kc),
                    };
                    let (at, wrap) = wrap.at(p0, ac);
                    let a = (a.offset(at), ar, ac);
                    let a_packed = match share {
                        Share::A { ptr, rows } => Some(ptr.add(p0 * rows)),
                        _ => None,
                    };
                    block(
                        [m, kc, nc],
                        a,
                        wrap,
                        a_packed,
                        panels,
                        (c.add(j0), cr),
                        add || p0 > 0,
                        finish,
                    );
                }
            }
        }
    });
}
