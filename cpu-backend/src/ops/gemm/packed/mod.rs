//! The own `f32` GEMM, for CPUs with AVX-512F and for those with AVX2 and FMA:
//! `C = act(A·B + β·C + bias)` for β ∈ {0, 1}.
//!
//! The kernel is written once, generic over the vector extension ([`isa`]: its vectors, its
//! register tile and block sizes, its build), and runs in the widest one the CPU has. A
//! register tile holds `MR × NR` elements of `C` in `2·MR` accumulators: 8 × 32 on AVX-512F
//! (sixteen 512-bit registers of thirty-two), 6 × 16 on AVX2 (twelve 256-bit registers of
//! sixteen); half as many, of `MR × LANES`, for a last panel of at most one vector of columns.
//! Each step of the inner dimension loads one row of the tile's `B` panel (two vectors) and
//! broadcasts one element of each of the tile's `MR` rows of `A`. `B` is packed, a block of
//! `KC × NC` at a time, into contiguous panels of `NR` columns (a row-major `B` by the first
//! tile that reads each panel, which stores the rows it loads; one whose rows are contiguous
//! beforehand, by `LANES × LANES` transposes in registers), the last panel padded with zeros so
//! that every load of `B` is a full vector; a row-major `B` of a short product, or one at
//! most a vector wide with adjacent rows, is read in place instead
//! ([`IN_PLACE_ROWS`](blocking::IN_PLACE_ROWS), [`narrow`](blocking::narrow)). A transposed `A`
//! (adjacent rows) is packed, a block of `MC` rows at a time, into runs of `MR` rows, so that the
//! broadcasts take constant offsets from one pointer; any other `A` is read in place under its
//! strides (a broadcast reads one element wherever it lies; a row-major `A`'s lines each serve
//! sixteen steps), its rows' runs broken where [`sgemm_shared_b`]'s caller says (an image read as
//! its unfolding).
//!
//! `matrixmultiply`, the backend's GEMM when this kernel was written, packs both operands for
//! every product into its own layouts, with no choice by shape: in the MNIST MLP step (batch
//! 128) its packing was 16% of all samples, its kernel 61%. Here the packing of both operands was
//! about 11% of the step's samples, and the columns of `C` beyond the last full panel are handled
//! by masked loads and stores, the rows beyond the last full tile by narrower tiles (`R < MR`).
//!
//! A product split between threads ([`sgemm_chunks`]) is handed out in chunks of rows or of
//! columns; each thread packs the operand its chunks share once for all of them.
//!
//! Loop order, outermost first: blocks of `NC` columns (one when `B` is read in place),
//! blocks of at most `KC` of the inner dimension (`B`'s block packed into this thread's
//! buffer; a block's partial sums are added to `C`), blocks of `MC` rows (their `A`, packed or
//! not, stays in L2 while it is reused for every panel), panels of `NR` columns (the panel's
//! `KC × NR` elements stay in L1 while every tile of the row block reads them), tiles of `MR`
//! rows.
//!
//! The kernel was AVX-512F only until the 36th session; on AVX2 CPUs the `gemm` crate ran the
//! products, without the epilogues in the tiles (a separate pass over `C` for a bias, an
//! activation or its derivative) and at 88% of MKL's rate on a Zen 3 host (149 against 169
//! GFLOP/s, `n = 1024` and 2048).
//!
//! The files, callers first: [`sgemm`](mod@sgemm) (the entry points, which pick the
//! extension, and the split of a product into chunks), [`block`] (blocks of the inner
//! dimension and of rows), [`tile`] (the register tiles), [`pack`] (the packed layouts of `A`
//! and `B`), [`blocking`] (the threads' packing buffers) and [`isa`] (the extensions).

mod block;
mod blocking;
mod isa;
mod pack;
mod sgemm;
#[cfg(test)]
mod tests;
mod tile;

#[cfg(test)]
pub(crate) use sgemm::available;
pub(crate) use sgemm::{sgemm, sgemm_chunks, sgemm_shared_b, shares_packing};
