//! The block and tile sizes of the kernel, and each thread's buffers for packed blocks.

use std::cell::RefCell;

/// Rows of `C` per register tile.
pub(super) const MR: usize = 8;
/// Columns of `C` per register tile: two 16-lane vectors.
pub(super) const NR: usize = 32;
/// Inner-dimension block: a panel of `B` is `KC × NR` elements (32 KiB).
const KC: usize = 256;
/// Rows of `C` per row block: the block's `A` is `MC × KC` elements (64 KiB).
pub(super) const MC: usize = 64;
/// Columns of `B` packed into the buffer at a time.
pub(super) const NC: usize = 512;
/// A row-major `B` is read in place, not packed, by a product of at most this many rows: its
/// panels are each read by at most `MC / MR` tiles, and packing them (a read and a write of
/// `B`) cost more than it saved (the CNN step 21.5–21.8 ms in place against 22.1–22.3, its
/// convolutions' `64 × 288 × 576` products reading the unfolded columns; with 128, the
/// `128 × 512 × 512` product fell from 183 to 166 GFLOP/s, its rows of `B` 2 KiB apart).
pub(super) const IN_PLACE_ROWS: usize = 64;

/// Whether `B` (row and column strides) is read in place by a product of any size: a
/// row-major `B` at most one vector wide whose rows are at most a vector apart, so that all
/// of it lies in `k × 16` adjacent elements, which stay in L1 while every tile reads them.
/// Packed, its one panel was padded to `NR` columns of zeros (a write of three times its
/// size): in the MNIST MLP step, in place, `h₂·W₃` (`128 × 512 × 10`) took 16.7 µs against
/// 20.5 and `W₃ += h₂ᵀ·z̄₃` (`512 × 128 × 10`) 21.8 against 22.9 (medians of ~2400 steps
/// each, alternated in one process, 24th session).
pub(super) fn narrow([br, bc]: [isize; 2]) -> bool {
    bc == 1 && (0..=16).contains(&br)
}
/// How many rows ahead of its loads a tile that packs a row-major `B` (rows `n` apart, each a
/// line or two of a panel) prefetches: the lines of a block of `B` that no other tile has read
/// are fetched from L2 or another core's cache (a product's weight, written by the other
/// thread's last update). 8, 16 and 32 rows were equal; with 8, the MNIST MLP step took
/// 1735–1768 µs against 1761–1796 without (three in-process alternations, 22nd session),
/// and on two threads `x·W₁` ran at 291–301 GFLOP/s against 284–294.
pub(super) const PREFETCH_ROWS: isize = 8;

thread_local! {
    /// Each thread's buffer for packed blocks of `B`: at most `KC × NC` elements.
    pub(super) static PACKED: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
    /// Each thread's buffer for a packed block of `A`: at most `MC × KC` elements.
    pub(super) static PACKED_A: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// Makes a packing buffer hold at least `len` elements from its [`line_start`] on, and returns
/// that address. Its contents are not kept between products (everything read is written
/// first), so it only grows: shrinking it to each product's size, `Vec::resize` zeroed the
/// difference at the next larger one, 1% of the MNIST MLP step's samples.
pub(super) fn grow_to(buffer: &mut Vec<f32>, len: usize) -> *mut f32 {
    if buffer.len() < len + LINE {
        buffer.resize(len + LINE, 0.0);
    }
    line_start(buffer)
}

/// Elements of a cache line (64 bytes), which a packing buffer holds beyond what it packs so
/// that its packed data can start on a line ([`line_start`]).
const LINE: usize = 16;

/// The first element of `buffer` on a cache line: where its packed data starts (at most
/// [`LINE`] − 1 elements in, inside a buffer [`grow_to`] made).
///
/// A tile loads its panel of `B` as whole vectors of 64 bytes; from the allocator's 16-byte
/// alignment, every such load spanned two lines (a split load: two accesses of L1 each, at
/// two loads per cycle, against sixteen multiply-adds per step). Started on a line, the MNIST
/// MLP step took 94 µs less (median of 30 paired in-process rounds, 30 of 30 faster: 1772 →
/// 1690 µs, 26th session). Aligning the tensors' own buffers as well (the output rows of
/// `C`, a row-major `A` read by broadcasts) changed nothing measurable (+8 µs, 8 of 30).
fn line_start(buffer: &mut [f32]) -> *mut f32 {
    let p = buffer.as_mut_ptr();
    p.wrapping_add(p.align_offset(64).min(LINE))
}

/// The length of the blocks of the inner dimension: `k` split into equal blocks of at most
/// `KC` (784 = 4 × 196). The blocks of a shared `A` ([`Share::A`](super::block::Share::A)) are laid
/// out by it too.
pub(super) fn inner_step(k: usize) -> usize {
    k.div_ceil(k.div_ceil(KC))
}
