//! The vector instructions the kernel is written in ([`Isa`]), one implementation per CPU
//! extension ([`Avx512`]: 16 lanes and mask registers; [`Avx2`]: 8 lanes, masks as vectors),
//! and the builds of the kernel's code for each ([`Body`]).
//!
//! The kernel's tiles, packing loops and blocking are written once, generic over the
//! extension; each extension says its vector width, its register tile and block sizes (what
//! fits its registers and caches) and how it loads, stores, multiplies and transposes. A
//! [`Body`] is run by [`Isa::build`], a function compiled for the extension's features into
//! which the body and the operations it calls (all `#[inline(always)]`) are inlined: its
//! instructions are those the extension's own hand-written copy would have.

mod avx2;
mod avx512;

pub(super) use avx2::Avx2;
pub(super) use avx512::Avx512;

/// Code compiled into each extension's build ([`Isa::build`]). Its `run` must be
/// `#[inline(always)]`, so that the body lands in the build whatever its size (a closure
/// cannot be marked so, and one left its loop out of line: `simd::dispatch_widest`).
pub(super) trait Body {
    /// What the body returns.
    type Output;

    /// Runs the body.
    ///
    /// # Safety
    /// Only inside [`Isa::build`] of the extension the body's operations are of, and
    /// whatever the body requires besides.
    unsafe fn run(self) -> Self::Output;
}

/// A body generic over the rows of a register tile: what [`Isa::by_rows`] dispatches.
pub(super) trait ForRows {
    /// Runs the body for tiles of `R` rows.
    ///
    /// # Safety
    /// `R` is at most the extension's [`Isa::MR`]; whatever the body requires besides.
    unsafe fn rows<const R: usize>(self);
}

/// One CPU extension's vectors of `f32`, the kernel's sizes for it, and its build.
///
/// Every operation is `unsafe`: it may only run on a CPU with the extension (inside
/// [`Isa::build`], where it compiles to its instruction); loads and stores read and write
/// `LANES` elements (those of the mask, for the masked ones) at the pointer.
pub(super) trait Isa: Copy + Send + Sync + 'static {
    /// `LANES` `f32` in one register.
    type V: Copy;
    /// Which lanes a masked load or store touches.
    type Mask: Copy;
    /// `LANES` vectors, one row each of a `LANES × LANES` block.
    type Square: AsRef<[Self::V]>;

    /// Lanes of a vector.
    const LANES: usize;
    /// Rows of `C` per register tile (`MR × 2` accumulators, two vectors of `B` and a
    /// broadcast of `A` fit the extension's registers).
    const MR: usize;
    /// Columns of `C` per register tile: two vectors.
    const NR: usize = 2 * Self::LANES;
    /// Inner-dimension block: a panel of `B` is `KC × NR` elements.
    const KC: usize;
    /// Rows of `C` per row block (a multiple of `MR`): the block's `A` is `MC × KC`.
    const MC: usize;
    /// Columns of `B` packed into the buffer at a time (a multiple of `NR`).
    const NC: usize;
    /// A row-major `B` is read in place, not packed, by a product of at most this many rows
    /// ([`blocking`](super::blocking)).
    const IN_PLACE_ROWS: usize;
    /// How many rows ahead of its loads a tile that packs a row-major `B` prefetches.
    const PREFETCH_ROWS: isize;
    /// Whether a tile prefetches its rows of `C` before its loop.
    const PREFETCH_C: bool;
    /// Whether a product is cut into chunks finer than one per thread only where the chunks
    /// pack nothing again ([`shares_packing`](super::sgemm::shares_packing)); without it, for
    /// every product the kernel takes.
    const CHUNKS_BY_SHAPE: bool;
    /// Whether a row-major `A` is packed into runs of `MR` rows (else read in place).
    const PACK_ROW_MAJOR_A: bool;
    /// The extension's name, for the tests' messages.
    #[cfg(test)]
    const NAME: &'static str;

    /// Whether this CPU has the extension (`std` caches the answer after the first query).
    fn available() -> bool;

    /// `body.run()` compiled for the extension.
    ///
    /// # Safety
    /// Only on a CPU with the extension ([`Isa::available`]); the body's own contract.
    unsafe fn build<B: Body>(body: B) -> B::Output;

    /// `body.rows::<rows>()` for `rows` from 1 to [`Isa::MR`] (more: `MR`).
    ///
    /// # Safety
    /// The body's contract for tiles of `rows` rows.
    unsafe fn by_rows(rows: usize, body: impl ForRows);

    /// The mask of the first `lanes` (at most `LANES`) lanes.
    fn mask(lanes: usize) -> Self::Mask;
    /// All lanes 0.
    unsafe fn zero() -> Self::V;
    /// All lanes `x`.
    unsafe fn splat(x: f32) -> Self::V;
    /// `LANES` elements from `p`.
    unsafe fn load(p: *const f32) -> Self::V;
    /// The lanes of `mask` from `p`, zeros in the others (which are not read).
    unsafe fn load_masked(mask: Self::Mask, p: *const f32) -> Self::V;
    /// `v` to `LANES` elements at `p`.
    unsafe fn store(p: *mut f32, v: Self::V);
    /// The lanes of `mask` of `v` to `p` (the others are not written).
    unsafe fn store_masked(p: *mut f32, mask: Self::Mask, v: Self::V);
    /// `a·b + c`, one rounding.
    unsafe fn fmadd(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// `a + b`.
    unsafe fn add(a: Self::V, b: Self::V) -> Self::V;
    /// `a·b`.
    unsafe fn mul(a: Self::V, b: Self::V) -> Self::V;
    /// `max(a, b)`, giving `b` where either is a NaN or both are zeros (the instruction's
    /// rule: `max(z, +0)` is ReLU's `z > 0 ? z : 0`, bit for bit).
    unsafe fn max(a: Self::V, b: Self::V) -> Self::V;
    /// `y > 0 ? positive : other`, lane by lane (false for a NaN `y`).
    unsafe fn where_positive(y: Self::V, positive: Self::V, other: Self::V) -> Self::V;
    /// A hint to bring the line at `p` into L1 (never faults).
    unsafe fn prefetch(p: *const f32);
    /// The `LANES × LANES` block whose row `t` is `row(t)`.
    fn square(row: impl FnMut(usize) -> Self::V) -> Self::Square;
    /// The transpose of a `LANES × LANES` block: vector `q` holds element `q` of every row.
    unsafe fn transpose(square: Self::Square) -> Self::Square;
}
