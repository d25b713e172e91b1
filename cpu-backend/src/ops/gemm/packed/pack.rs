//! The packed layouts: `B` in panels of `NR` columns ([`Panels`]), `A` in runs of `MR` rows,
//! and the copies and transposes that write them.

use std::marker::PhantomData;

use super::super::product::Operand;
use super::isa::{Body, Isa};

/// Where the panels of one block of `B` lie: panel `q` (columns `q·NR..`) starts at
/// `ptr + q·panel`, its rows `row` apart. Packed, `row` is `NR` and `panel` `kc·NR`, and the
/// last panel is padded with zeros; in place (a row-major `B`), `row` is `B`'s row stride
/// and `panel` `NR`, and the last panel's loads are masked.
#[derive(Clone, Copy)]
pub(super) struct Panels<S> {
    pub(super) ptr: *const f32,
    pub(super) row: isize,
    pub(super) panel: isize,
    pub(super) packed: bool,
    /// Packed on the fly: the row-major block of `B` (its first element and row stride) that
    /// the first tile of each panel reads in place while it writes the panel at `ptr` (then
    /// a writable buffer), for the tiles after it.
    pub(super) source: Option<(*const f32, isize)>,
    isa: PhantomData<S>,
}

impl<S: Isa> Panels<S> {
    /// The panels of a packed `kc`-row block at `ptr`.
    pub(super) fn packed(ptr: *const f32, kc: usize) -> Self {
        Panels {
            ptr,
            row: S::NR as isize,
            panel: (kc * S::NR) as isize,
            packed: true,
            source: None,
            isa: PhantomData,
        }
    }

    /// The panels of a `kc`-row block at `dst`, packed by the tiles from the row-major block
    /// at `src` (row stride `br`) as they first read it.
    pub(super) fn packed_from(dst: *mut f32, kc: usize, src: *const f32, br: isize) -> Self {
        Panels {
            source: Some((src, br)),
            ..Panels::packed(dst, kc)
        }
    }

    /// The panels of a row-major `B` in place, from its row `ptr` (row stride `row`).
    pub(super) fn in_place(ptr: *const f32, row: isize) -> Self {
        Panels {
            ptr,
            row,
            panel: S::NR as isize,
            packed: false,
            source: None,
            isa: PhantomData,
        }
    }
}

/// Where element `(r, p)` of a packed block of `A` lies: tile `r / MR` (of `kc × MR`
/// elements), step `p`, lane `r mod MR`.
#[inline(always)]
fn packed_a_at<S: Isa>(kc: usize, r: usize, p: usize) -> usize {
    (r / S::MR) * S::MR * kc + p * S::MR + r % S::MR
}

/// Whether [`pack_a`] packs an `A` with these (row, column) strides: a transposed one
/// (adjacent rows) always, a row-major one where the extension says so
/// ([`Isa::PACK_ROW_MAJOR_A`]).
pub(super) fn packs_a<S: Isa>([ar, ac]: [isize; 2]) -> bool {
    ar == 1 || (S::PACK_ROW_MAJOR_A && ac == 1)
}

/// Packs the `rows × kc` block of `A` at `a` into tiles of `MR` rows ([`packed_a_at`]; the
/// last tile's missing rows are not read): a transposed `A` (adjacent rows, columns `ac`
/// apart) by copies of up to `MR` elements per step, a row-major one (rows `ar` apart) by
/// `LANES × LANES` transposes in registers.
///
/// # Safety
/// A CPU with `S`; [`packs_a`] the strides; `a` addresses the block under them, `dst` `rows`
/// rounded up to `MR` times `kc` elements.
pub(super) unsafe fn pack_a<S: Isa>(
    [rows, kc]: [usize; 2],
    (a, [ar, ac]): Operand<f32>,
    dst: *mut f32,
) {
    /// The copies of a transposed `A`, in `S`'s build.
    struct Transposed<S> {
        rows: usize,
        kc: usize,
        a: (*const f32, isize),
        dst: *mut f32,
        isa: PhantomData<S>,
    }
    impl<S: Isa> Body for Transposed<S> {
        type Output = ();
        #[inline(always)]
        unsafe fn run(self) {
            let Transposed {
                rows,
                kc,
                a: (a, ac),
                dst,
                ..
            } = self;
            // SAFETY: every read is `a[r + p·ac]` with `r < rows`, `p < kc`, every write
            // `dst[packed_a_at(kc, r, p)]` for such `(r, p)`; masked-off lanes are not
            // accessed; the operations are `S`'s, in its build.
            unsafe {
                for t in (0..rows).step_by(S::MR) {
                    let mask = S::mask(S::MR.min(rows - t));
                    for p in 0..kc {
                        let v = S::load_masked(mask, a.offset(t as isize + p as isize * ac));
                        S::store_masked(dst.add(packed_a_at::<S>(kc, t, p)), mask, v);
                    }
                }
            }
        }
    }
    /// The transposes of a row-major `A`, in `S`'s build.
    struct RowMajor<S> {
        rows: usize,
        kc: usize,
        a: (*const f32, isize),
        dst: *mut f32,
        isa: PhantomData<S>,
    }
    impl<S: Isa> Body for RowMajor<S> {
        type Output = ();
        #[inline(always)]
        unsafe fn run(self) {
            let RowMajor {
                rows,
                kc,
                a: (a, ar),
                dst,
                ..
            } = self;
            let (l, mr) = (S::LANES, S::MR);
            debug_assert!(mr <= l && l <= 2 * mr, "a column of a tile is one store");
            let body = kc - kc % l;
            // SAFETY: every read is `a[r·ar + p]` with `r < rows`, `p < kc`. Each column `p`
            // of a tile (its `MR` rows) is one vector stored at `p·MR` of the tile: the lanes
            // beyond `MR` fall on the next column (`LANES ≤ 2·MR`), written after it, except
            // in the tile's last column, stored masked; the lanes of rows beyond `rows`
            // (copies of the last row) are not read. The operations are `S`'s, in its build.
            unsafe {
                for t in (0..rows).step_by(mr) {
                    let n = mr.min(rows - t);
                    let tile = dst.add(packed_a_at::<S>(kc, t, 0));
                    let row = |i: usize| a.offset((t + i.min(n - 1)) as isize * ar);
                    for p in (0..body).step_by(l) {
                        let columns = S::transpose(S::square(|i| S::load(row(i).add(p))));
                        for (q, &v) in columns.as_ref().iter().enumerate() {
                            let at = tile.add((p + q) * mr);
                            if p + q + 1 < kc {
                                S::store(at, v);
                            } else {
                                S::store_masked(at, S::mask(mr), v);
                            }
                        }
                    }
                    for i in 0..n {
                        for p in body..kc {
                            *tile.add(p * mr + i) = *row(i).add(p);
                        }
                    }
                }
            }
        }
    }
    let isa = PhantomData::<S>;
    if ar == 1 {
        // SAFETY: the caller's contract.
        unsafe {
            S::build(Transposed {
                rows,
                kc,
                a: (a, ac),
                dst,
                isa,
            })
        }
    } else {
        // SAFETY: the caller's contract (`ac` is 1: `packs_a`).
        unsafe {
            S::build(RowMajor {
                rows,
                kc,
                a: (a, ar),
                dst,
                isa,
            })
        }
    }
}

/// The `kc × nc` block of `B` at `src` as panels of `rows ≥ kc` rows at `dst`: packed by the
/// tiles that first read them when `B` is row-major, by [`pack_transposed`] now otherwise.
///
/// # Safety
/// A CPU with `S`; `src` addresses the block under its strides (one of them 1), `dst`
/// `rows × nc` rounded up to panels.
pub(super) unsafe fn packing<S: Isa>(
    [kc, nc]: [usize; 2],
    (src, [br, bc]): Operand<f32>,
    dst: *mut f32,
    rows: usize,
) -> Panels<S> {
    if bc == 1 {
        Panels::packed_from(dst, rows, src, br)
    } else {
        let pack = PackTransposed::<S> {
            kc,
            nc,
            src,
            bc,
            dst,
            panel: rows,
            isa: PhantomData,
        };
        // SAFETY: the caller's contract.
        unsafe { S::build(pack) };
        Panels::packed(dst, rows)
    }
}

/// Where element `(p, j)` of `B` packed in panels of `rows` rows lies: panel `j / NR`, row
/// `p`, lane `j mod NR`.
#[inline(always)]
fn packed_at<S: Isa>(rows: usize, p: usize, j: usize) -> usize {
    (j / S::NR) * rows * S::NR + p * S::NR + j % S::NR
}

/// Packs the `kc × nc` block of `B` at `src` whose rows are contiguous (`B[p, j] =
/// src[p + j·bc]`) into panels of `panel ≥ kc` rows (their first `kc` written), by
/// `LANES × LANES` transposes in registers (the edges elementwise), the last panel's columns
/// beyond `nc` zeros.
///
/// # Safety (of `run`)
/// In `S`'s build; `src` addresses `nc` runs of `kc` elements `bc` apart, `dst` `panel × nc`
/// rounded up to panels.
struct PackTransposed<S> {
    kc: usize,
    nc: usize,
    src: *const f32,
    bc: isize,
    dst: *mut f32,
    panel: usize,
    isa: PhantomData<S>,
}

impl<S: Isa> Body for PackTransposed<S> {
    type Output = ();

    #[inline(always)]
    unsafe fn run(self) {
        let PackTransposed {
            kc,
            nc,
            src,
            bc,
            dst,
            panel,
            ..
        } = self;
        let l = S::LANES;
        let nb = nc - nc % l;
        // SAFETY: every read is `src[p + j·bc]` with `p < kc`, `j < nc` (masked-off lanes
        // are not read), and every write `dst[packed_at(panel, p, j)]` with `p < kc`, `j < nc`
        // rounded up to `NR`; `LANES` columns from a multiple of `LANES` stay in one panel.
        unsafe {
            for j in (0..nb).step_by(l) {
                for p in (0..kc).step_by(l) {
                    // The last block of the inner dimension may be short (`W₃ᵀ` of the MNIST
                    // MLP has 10 rows): its loads are masked, and only its rows are stored.
                    let steps = l.min(kc - p);
                    let (from, mask) = (src.offset(j as isize * bc).add(p), S::mask(steps));
                    let rows = S::transpose(S::square(|t| {
                        S::load_masked(mask, from.offset(t as isize * bc))
                    }));
                    for (q, row) in rows.as_ref().iter().take(steps).enumerate() {
                        S::store(dst.add(packed_at::<S>(panel, p + q, j)), *row);
                    }
                }
            }
            for j in nb..nc.next_multiple_of(S::NR) {
                for p in 0..kc {
                    let v = if j < nc {
                        *src.offset(j as isize * bc).add(p)
                    } else {
                        0.0
                    };
                    *dst.add(packed_at::<S>(panel, p, j)) = v;
                }
            }
        }
    }
}
