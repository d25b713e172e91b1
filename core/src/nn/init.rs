//! Parameter initialization as PyTorch does it, reproducible from a seed.
//!
//! Random tensors are drawn on the device by [`Tensor::rand_uniform_on`] and
//! [`Tensor::rand_normal_on`] from a `u64` seed; a layer with several random tensors draws the
//! `k`-th from [`derive_seed`]`(seed, k)`. Initialization is not differentiated.

use crate::tensor::{Backend, DType, Tensor};

/// The `k`-th seed derived from `seed` (SplitMix64 of `seed + k·φ`), so that the tensors of
/// one layer, and layers built from consecutive seeds, are independent. `derive_seed(s, 0)` is
/// not `s`.
pub fn derive_seed(seed: u64, k: u64) -> u64 {
    let mut z = seed.wrapping_add(k.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The bound of PyTorch's `kaiming_uniform_(w, a)` for a weight with `fan_in` inputs per
/// output: `gain · √(3/fan_in)` with `gain = √(2/(1 + a²))`. For `a = √5` (what `nn.Linear` and
/// `nn.Conv2d` use) this is `1/√fan_in`.
///
/// # Panics
/// If `fan_in` is 0.
pub fn kaiming_uniform_bound(fan_in: usize, a: f64) -> f64 {
    assert!(fan_in > 0, "kaiming_uniform: fan_in must be positive");
    let gain = (2.0 / (1.0 + a * a)).sqrt();
    gain * (3.0 / fan_in as f64).sqrt()
}

/// A tensor of `U(−bound, bound)` samples with `bound = `[`kaiming_uniform_bound`]`(fan_in, a)`:
/// PyTorch's `kaiming_uniform_` (fan-in mode, leaky-ReLU gain).
#[track_caller]
pub fn kaiming_uniform_on<B: Backend>(
    shape: &[usize],
    fan_in: usize,
    a: f64,
    seed: u64,
    dtype: DType,
    device: &B::Device,
) -> Tensor<B> {
    let bound = kaiming_uniform_bound(fan_in, a);
    Tensor::rand_uniform_on(shape, -bound, bound, seed, dtype, device)
}

/// A tensor of `U(−1/√fan_in, 1/√fan_in)` samples: how PyTorch initializes the bias of
/// `nn.Linear` and `nn.Conv2d`.
///
/// # Panics
/// If `fan_in` is 0.
#[track_caller]
pub fn fan_in_uniform_on<B: Backend>(
    shape: &[usize],
    fan_in: usize,
    seed: u64,
    dtype: DType,
    device: &B::Device,
) -> Tensor<B> {
    assert!(fan_in > 0, "fan_in_uniform: fan_in must be positive");
    let bound = 1.0 / (fan_in as f64).sqrt();
    Tensor::rand_uniform_on(shape, -bound, bound, seed, dtype, device)
}
