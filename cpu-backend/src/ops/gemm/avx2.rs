//! `C = A·Bᵀ` for small `f32` products whose rows of `A` and of `B` (stored `n × k`) are both
//! contiguous, in AVX2 + FMA: eight dot products at a time, their partial sums reduced
//! together.
//!
//! This is the input tangent of a layer, `ȳ·Wᵀ` (the RNN step of `benches/steps.rs` runs one
//! `[1, 32]·[32, 32]ᵀ` per step). The compiler vectorizes one dot product into eight lanes
//! but then adds the lanes one by one, for every output; here each chunk of `A`'s row is
//! loaded once for eight rows of `B`, and the eight sets of lanes are folded into one vector
//! of eight sums by three rounds of pairwise adds.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    __m256, _mm256_add_ps, _mm256_fmadd_ps, _mm256_hadd_ps, _mm256_loadu_ps,
    _mm256_permute2f128_ps, _mm256_setzero_ps, _mm256_storeu_ps,
};

/// `C[i, j] = Σₗ A[i, l]·B[j, l]` for `i < m`, `j < n`, `l < k`; `C` is row-major `m × n`.
///
/// # Safety
/// The CPU has AVX2 and FMA; `a + i·ar + l` and `b + j·bc + l` are readable for all `i, j, l`
/// in range, and `c` is writable for `m·n` elements that do not overlap `A` or `B`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn dots_f32(
    m: usize,
    k: usize,
    n: usize,
    a: *const f32,
    ar: isize,
    b: *const f32,
    bc: isize,
    c: *mut f32,
) {
    let chunks = k / 8;
    // SAFETY: every pointer below is `a + i·ar + l`, `b + j·bc + l` or `c + i·n + j` with
    // `i < m`, `j < n`, `l < k` (loads of eight start at `l = 8q` with `q < k / 8`), which the
    // caller guarantees to be in bounds; the features are the caller's too.
    unsafe {
        let tail = |x: *const f32, y: *const f32, mut sum: f32| {
            for l in chunks * 8..k {
                sum = (*x.add(l)).mul_add(*y.add(l), sum);
            }
            sum
        };
        for i in 0..m {
            let a_row = a.offset(i as isize * ar);
            let out = c.add(i * n);
            for j0 in (0..n - n % 8).step_by(8) {
                let rows: [*const f32; 8] =
                    std::array::from_fn(|r| b.offset((j0 + r) as isize * bc));
                let mut acc = [_mm256_setzero_ps(); 8];
                for q in 0..chunks {
                    let x = _mm256_loadu_ps(a_row.add(q * 8));
                    for (s, row) in acc.iter_mut().zip(&rows) {
                        *s = _mm256_fmadd_ps(x, _mm256_loadu_ps(row.add(q * 8)), *s);
                    }
                }
                let mut sums = [0.0_f32; 8];
                _mm256_storeu_ps(sums.as_mut_ptr(), sum_each(acc));
                for (r, (&sum, row)) in sums.iter().zip(&rows).enumerate() {
                    out.add(j0 + r).write(tail(a_row, *row, sum));
                }
            }
            // The last `n mod 8` columns, one dot product each.
            for j in n - n % 8..n {
                let row = b.offset(j as isize * bc);
                let mut acc = _mm256_setzero_ps();
                for q in 0..chunks {
                    let x = _mm256_loadu_ps(a_row.add(q * 8));
                    acc = _mm256_fmadd_ps(x, _mm256_loadu_ps(row.add(q * 8)), acc);
                }
                let mut lanes = [0.0_f32; 8];
                _mm256_storeu_ps(lanes.as_mut_ptr(), acc);
                out.add(j).write(tail(a_row, row, lanes.iter().sum()));
            }
        }
    }
}

/// The vector whose lane `r` is the sum of the eight lanes of `v[r]`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn sum_each(v: [__m256; 8]) -> __m256 {
    // `hadd(a, b)` = [a0+a1, a2+a3, b0+b1, b2+b3 | a4+a5, a6+a7, b4+b5, b6+b7].
    let pairs = [
        _mm256_hadd_ps(v[0], v[1]),
        _mm256_hadd_ps(v[2], v[3]),
        _mm256_hadd_ps(v[4], v[5]),
        _mm256_hadd_ps(v[6], v[7]),
    ];
    // Lane r of the low half: the sum of v[r]'s low four lanes; of the high half, of its high
    // four (r < 4 here, r ≥ 4 in `high`).
    let low = _mm256_hadd_ps(pairs[0], pairs[1]);
    let high = _mm256_hadd_ps(pairs[2], pairs[3]);
    _mm256_add_ps(
        _mm256_permute2f128_ps::<0x20>(low, high),
        _mm256_permute2f128_ps::<0x31>(low, high),
    )
}
