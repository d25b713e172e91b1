//! The blocks of a product (the sizes are each extension's, [`Isa`]), and each thread's
//! buffers for packed blocks.

use std::cell::RefCell;

use super::isa::Isa;

/// Whether `B` (row and column strides) is read in place by a product of any size: a
/// row-major `B` at most one vector wide whose rows are at most a vector apart, so that all
/// of it lies in `k × LANES` adjacent elements, which stay in L1 while every tile reads them.
/// Packed, its one panel was padded to `NR` columns of zeros (a write of three times its
/// size): in the MNIST MLP step, in place, `h₂·W₃` (`128 × 512 × 10`) took 16.7 µs against
/// 20.5 and `W₃ += h₂ᵀ·z̄₃` (`512 × 128 × 10`) 21.8 against 22.9 (medians of ~2400 steps
/// each, alternated in one process, 24th session, AVX-512).
pub(super) fn narrow<S: Isa>([br, bc]: [isize; 2]) -> bool {
    bc == 1 && (0..=S::LANES as isize).contains(&br)
}

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
/// `KC` (784 = 4 × 196 for a `KC` of 256). The blocks of a shared `A` ([`Share::A`](super::block::Share::A)) are laid
/// out by it too.
pub(super) fn inner_step<S: Isa>(k: usize) -> usize {
    k.div_ceil(k.div_ceil(S::KC))
}
