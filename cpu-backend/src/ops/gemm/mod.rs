//! The backend's one GEMM: on a single thread, [`packed`]'s kernel for `f32` on CPUs with
//! AVX-512F or AVX2 and FMA, and the `gemm` crate's kernels otherwise (and for `f64`); and a
//! split of one product across rayon's threads.
//!
//! The `gemm` crate replaced `matrixmultiply` in the 20th session: its AVX2 `f32` tiles are
//! 6 rows × 16 columns (two vectors of `B`, six broadcasts of `A` and twelve multiply-adds per
//! step of the inner dimension) against `matrixmultiply`'s 8 × 8, and the MNIST MLP step ran
//! 8–9% faster with it (docs/tensors.md).
//!
//! All parallelism of the CPU backend is rayon's, in one pool of one thread per core.
//! `matrixmultiply`'s own `threading` feature would have started a second pool: on two cores
//! its worker and rayon's (spinning between the parallel passes of a step) took turns on the
//! same cores, and the MNIST CNN step spent about a quarter of its samples in `sched_yield` and
//! the scheduler. So products run serially where the caller is already parallel (the
//! convolution, one image per task), and [`gemm_parallel`] splits a lone product itself, into
//! chunks that the threads take as they become free (the
//! `gemm` crate's own rayon split was no faster on the MLP step: 2.66–2.70 against 2.59–2.61
//! ms in alternating runs).
//!
//! The files: [`product`] describes a product (its operands, its output, the epilogue applied
//! as `C` is written); [`dispatch`] is the [`Gemm`] trait and, for each float type, which
//! kernel runs a product on this CPU ([`packed`] for `f32` on AVX-512F or AVX2, [`avx2`]'s
//! dot products for `f32` on AVX2 where the caller asks for them, [`generic`] otherwise);
//! [`parallel`] splits one product across the threads.

#[cfg(target_arch = "x86_64")]
mod avx2;
mod dispatch;
mod generic;
#[cfg(target_arch = "x86_64")]
pub(crate) mod packed;
mod parallel;
mod product;

pub(crate) use dispatch::Gemm;
pub(crate) use parallel::gemm_parallel;
pub(crate) use product::{Epilogue, Operand, Output, Wrap};
