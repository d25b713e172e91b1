//! Seeded random buffers.

use crate::{CpuStorage, DType};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Normal, Uniform};

/// `len` values from `U[a, b)` or `N(a, b²)`, reproducible for a given `seed`.
pub fn random(len: usize, seed: u64, (a, b): (f64, f64), normal: bool, dtype: DType) -> CpuStorage {
    let mut rng = StdRng::seed_from_u64(seed);
    let values: Vec<f64> = if normal {
        let dist = Normal::new(a, b).expect("normal: standard deviation must be finite and ≥ 0");
        (0..len).map(|_| dist.sample(&mut rng)).collect()
    } else {
        let dist = Uniform::new(a, b).expect("uniform: low must be < high and both finite");
        (0..len).map(|_| dist.sample(&mut rng)).collect()
    };
    CpuStorage::from_f64(&values, dtype)
}
