//! Stride-1 `f32` convolutions in AVX2 + FMA that read the image where it lies: no unfolded
//! columns, no packed copy of them and no folding back.
//!
//! With stride 1, row `k = (c, ki, kj)` of an image's unfolding, restricted to output row
//! `oy`, is row `oy + ki·d₀` of input channel `c` from column `kj·d₁` on: `ow` contiguous
//! elements of the (zero-padded, `Hp × Wp`) image, starting at `offset[k] + oy·Wp` with
//! `offset[k] = c·Hp·Wp + ki·d₀·Wp + kj·d₁`. A register tile of [`MR`](plan::MR) rows by
//! [`NV`](plan::NV) runs of up to eight consecutive pixels of an output row therefore loads
//! its right operand from the image itself, through a table of offsets:
//!
//! * forward, `Y[o, oy, ox] = b[o] + Σₖ W[o, k]·X[offset[k] + oy·Wp + ox]`: tiles of `MR`
//!   output channels, `W` packed once per call into runs of `MR` rows;
//! * input tangent, `X̄[offset[k] + oy·Wp + ox] += Σₒ W[o, k]·Ȳ[o, oy, ox]`: the same kernel
//!   on `Wᵀ` and the rows of `Ȳ`, each tile adding its sums into `X̄` where `col2im` would
//!   have put them. The taps are ordered channel fastest, so a tile's `MR` consecutive taps
//!   are `MR` different channels when there are at least `MR`, and its rows do not overlap
//!   in `X̄` (overlapping rows would still be added in order, only slower);
//! * weight tangent, `W̄ᵀ[k, o] += Σ_{oy, ox} X[offset[k] + oy·Wp + ox]·Ȳᵀ[oy·ow + ox, o]`:
//!   tiles of [`MR_W`](plan::MR_W) taps by [`NR_W`](plan::NR_W) output channels, each row
//!   broadcast from the image and `Ȳ` transposed once per image into blocks of `NR_W`
//!   channels.
//!
//! Images are split into one contiguous range per rayon thread, as in [`super::gemm`];
//! the weight tangent's per-thread sums are added at the end. The sums run over the inner
//! dimension in another order than the GEMM path's, so results agree to rounding, not bits.
//!
//! In the MNIST CNN step the `im2col` path spent 17% of its samples writing the columns
//! twice (the unfolding, then the GEMM's packing of them) and 3% folding them back;
//! with these kernels the step went from 52 to 37–39 ms on two AVX2 cores (docs/tensors.md,
//! 19th session). Masked stores are kept to the edges: AMD's Zen 2 runs them as long
//! microcoded sequences.
//!
//! The files, callers first: [`run`] (the three convolutions over a batch), [`image`] (one
//! image's, and the packed weights they read), [`tile`] (the register tiles) and [`plan`] (a
//! convolution's sizes and offset tables, and whether these kernels run it).

mod image;
mod plan;
mod run;
mod tile;

pub(crate) use plan::supported;
pub(crate) use run::{backward_input, backward_weight, forward};
