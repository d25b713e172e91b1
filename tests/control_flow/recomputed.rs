//! Loops the pullback runs again instead of storing each iteration: unchanging parameters
//! shared between the recomputed loops, the loops that must stay taped (state the second run
//! would see changed), and element writes, recorded calls and borrowed captures in recomputed
//! loops.

use crate::common::{assert_close, check, check_gradient};
use adjoint::prelude::*;

/// Recomputed loops share an unchanging parameter instead of copying it per pullback; these
/// pin down when they may. `Σₜ Σᵢ w[i]·t` for `t` in 0..3 is `3·Σ w`, so ∂/∂w[i] = 3, read in a
/// loop nested in another (the sharing case).
#[differentiable]
fn shared_in_nested_loops(w: [f64; 3]) -> f64 {
    let mut total = 0.0;
    for t in 0..3 {
        let mut s = 0.0;
        for i in 0..3 {
            s += w[i];
        }
        total = total + s * (t as f64 + 1.0) / 2.0;
    }
    total
}

/// The parameter re-bound before the loop: the loop must read the new binding (2·w), so
/// ∂/∂w[i] = 2·3 = 6.
#[differentiable]
fn shared_then_shadowed(w: [f64; 3]) -> f64 {
    let w = [w[0] * 2.0, w[1] * 2.0, w[2] * 2.0];
    let mut total = 0.0;
    for _ in 0..3 {
        let mut s = 0.0;
        for i in 0..3 {
            s += w[i];
        }
        total = total + s;
    }
    total
}

/// The parameter used whole in the loop (`w.len()`), not only indexed: copied as before.
/// `Σᵢ w[i]·len` with len 3: ∂/∂w[i] = 3.
#[differentiable]
fn shared_used_whole(w: [f64; 3]) -> f64 {
    let mut s = 0.0;
    for i in 0..3 {
        s += w[i] * w.len() as f64;
    }
    s
}

#[test]
fn unchanging_parameters_shared_by_recomputed_loops() {
    check!(shared_in_nested_loops, shared_in_nested_loops_vjp; [1.0, -2.0, 0.5] => [3.0, 3.0, 3.0]);
    check!(shared_then_shadowed, shared_then_shadowed_vjp; [1.0, -2.0, 0.5] => [6.0, 6.0, 6.0]);
    check!(shared_used_whole, shared_used_whole_vjp; [1.0, -2.0, 0.5] => [3.0, 3.0, 3.0]);
}

// ---------------------------------------------------------------------------------------------
// Accumulation loops the pullback must not run again
// ---------------------------------------------------------------------------------------------

//
// A loop over a range may be differentiated by running its body again in the pullback instead
// of storing each iteration's residuals (forwards for a loop that only adds into its
// variables, backwards from stored states for a recurrence). That is wrong when the second run
// sees other values: a call that reads changing state, or a variable the loop assigns but does
// not carry. Such loops are taped.

thread_local! {
    /// The state of [`draw`]: 1, 2, 3, … on successive calls.
    static DRAWS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// The next number of a sequence 1, 2, 3, …: a stand-in for a random number generator.
fn draw() -> f64 {
    DRAWS.with(|d| {
        d.set(d.get() + 1);
        f64::from(d.get())
    })
}

/// Σ_{k<4} x·draw() with draws 1, 2, 3, 4 = 10x, d/dx = 10 (a replay would draw 5…8: 26).
#[differentiable]
fn draws_in_accumulation(x: f64) -> f64 {
    let mut s = 0.0;
    for _ in 0..4 {
        s += x * draw();
    }
    s
}

/// Σ_{k<4} x·a[2k] with an inactive counter: d/dx = a₀ + a₂ + a₄ + a₆, d/daᵢ = x for even i
/// (the replay restores the counter to its value at the loop's start; started from its final
/// value, 8, it would read past the array).
#[differentiable]
fn counter_in_accumulation(x: f64, a: &[f64; 8]) -> f64 {
    let mut s = 0.0;
    let mut k = 0;
    for _ in 0..4 {
        s += x * a[k];
        k += 2;
    }
    s
}

/// r = s − Σⱼ cⱼ tʲ by powers `m *= t` of a constant point t, kept in an inactive variable (the
/// pattern of GradBench's llsq), then r²: ∂cⱼ = −2r tʲ, ∂s = 2r. Replayed first to last with
/// `m` restored to 1 (taped before).
#[differentiable(wrt(c, s))]
fn residual_by_powers(c: &[f64], t: f64, s: f64) -> f64 {
    let mut r = s;
    let mut m = 1.0;
    for &cj in c.iter() {
        r -= cj * m;
        m *= t;
    }
    r * r
}

/// x·draw()·draw()·… over 3 iterations with draws 1, 2, 3: 6x, d/dx = 6 (a recurrence, so
/// a candidate for checkpointing, which would draw 4, 5, 6 when run again: 120).
#[differentiable]
fn draws_in_recurrence(x: f64) -> f64 {
    let mut y = x;
    for _ in 0..3 {
        y = y * draw();
    }
    y
}

/// y ← y·a[k], k ← k + 3 over 3 iterations: y = x·a₀·a₃·a₆, d/dx = a₀a₃a₆.
#[differentiable(wrt(x))]
fn counter_in_recurrence(x: f64, a: &[f64; 8]) -> f64 {
    let mut y = x;
    let mut k = 0;
    for _ in 0..3 {
        y = y * a[k];
        k += 3;
    }
    y
}

/// A local `Vec` of data read by a checkpointed recurrence and a replayed accumulation, then
/// after them: x = x₀·Πdᵢ, s = x·Σdᵢ + x·d₀, ds/dx₀ = Πdᵢ·(Σdᵢ + d₀). (The pullbacks of
/// loops run again must read copies: moving the `Vec` into them did not compile.)
#[differentiable]
fn data_after_replayed_loops(x0: f64) -> f64 {
    let data: Vec<f64> = vec![0.5, 1.5, 2.0, 0.25];
    let mut x = x0;
    for i in 0..4 {
        x = x * data[i];
    }
    let mut s = 0.0;
    for i in 0..4 {
        s += x * data[i];
    }
    s + x * data[0]
}

#[test]
fn loops_with_state_are_not_replayed() {
    let product = 0.5 * 1.5 * 2.0 * 0.25;
    check!(data_after_replayed_loops, data_after_replayed_loops_vjp; 2.0 => product * (4.25 + 0.5));

    DRAWS.with(|d| d.set(0));
    let (value, pullback) = draws_in_accumulation_vjp(0.5);
    assert_eq!(value, 5.0);
    assert_eq!(pullback(1.0), 10.0);

    let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
    let x = 0.75;
    let (value, pullback) = counter_in_accumulation_vjp(x, &a);
    assert_eq!(value, x * 16.0);
    let (dx, da) = pullback(1.0);
    assert_eq!(dx, 16.0);
    assert_eq!(da, [x, 0.0, x, 0.0, x, 0.0, x, 0.0]);
    DRAWS.with(|d| d.set(0));
    let (value, pullback) = draws_in_recurrence_vjp(0.5);
    assert_eq!(value, 3.0);
    assert_eq!(pullback(1.0), 6.0);
    let (value, pullback) = counter_in_recurrence_vjp(x, &a);
    assert_eq!(value, x * 28.0);
    assert_eq!(pullback(1.0), 28.0);
    let (c, t, s) = ([0.5, -1.25, 2.0, 0.75], 0.6, 1.0);
    let r = s - (0.5 - 1.25 * t + 2.0 * t * t + 0.75 * t * t * t);
    let (value, pullback) = residual_by_powers_vjp(&c, t, s);
    assert_close("residual_by_powers", value, r * r);
    let (dc, ds) = pullback(1.0);
    let want: [f64; 4] = std::array::from_fn(|j| -2.0 * r * t.powi(j as i32));
    assert_close(
        "residual_by_powers",
        (dc.clone().try_into().unwrap(), ds),
        (want, 2.0 * r),
    );
    check_gradient(
        "residual_by_powers",
        |(c, s): ([f64; 4], f64)| residual_by_powers(&c, t, s),
        (c, s),
        (want, ds),
    );
    check_gradient(
        "counter_in_accumulation",
        |(x, a): (f64, [f64; 8])| counter_in_accumulation(x, &a),
        (x, a),
        (dx, da),
    );
}

// ---------------------------------------------------------------------------------------------
// Loops run again in the pullback: element writes, recorded calls, borrowed captures
// ---------------------------------------------------------------------------------------------

/// `yᵢ = xᵢ²` written element by element, loss `Σ (i+1)·yᵢ`: `∂/∂xᵢ = 2(i+1)·xᵢ`.
#[differentiable]
fn squares_into(x: [f64; 4]) -> f64 {
    let mut y = [0.0; 4];
    for i in 0..4 {
        y[i] = x[i] * x[i];
    }
    y[0] + 2.0 * y[1] + 3.0 * y[2] + 4.0 * y[3]
}

/// Every iteration overwrites `y₀` with `3xᵢ`; only the last write counts, so the loss
/// `y₀ + y₁ = 3x₃` has gradient `(0, 0, 0, 3)` (a pullback that walked the iterations
/// forwards would hand the adjoint to the first write, `x₀`).
#[differentiable]
fn last_write_wins(x: [f64; 4]) -> f64 {
    let mut y = [0.0; 2];
    for i in 0..4 {
        y[0] = x[i] * 3.0;
    }
    y[0] + y[1]
}

/// `yᵢ = tanh(xᵢ)` (a recorded call), loss `Σ wᵢ·yᵢ` with `w = (1, −2, 3)`:
/// `∂/∂xᵢ = wᵢ·(1 − tanh²xᵢ)`.
#[differentiable]
pub(crate) fn tanh_into(x: [f64; 3]) -> f64 {
    let mut y = [0.0; 3];
    for i in 0..3 {
        y[i] = x[i].tanh();
    }
    y[0] - 2.0 * y[1] + 3.0 * y[2]
}

/// Two recorded calls per iteration and one nested in another (`exp(xᵢ)` then its `tanh`):
/// `s = Σ sin xᵢ · cos xᵢ + tanh(e^{xᵢ})`, so `∂s/∂xᵢ = cos 2xᵢ + (1 − tanh²(e^{xᵢ}))·e^{xᵢ}`.
#[differentiable]
pub(crate) fn recorded_sites(x: [f64; 3]) -> f64 {
    let mut s = 0.0;
    for i in 0..3 {
        s += x[i].sin() * x[i].cos() + x[i].exp().tanh();
    }
    s
}

/// A call under a branch runs in some iterations only and is made again, not recorded:
/// `s = Σ (xᵢ > 0 ? e^{xᵢ} : sin xᵢ)`, `∂s/∂xᵢ = e^{xᵢ}` or `cos xᵢ`.
#[differentiable]
fn branch_in_accumulation(x: [f64; 4]) -> f64 {
    let mut s = 0.0;
    for i in 0..4 {
        s += if x[i] > 0.0 { x[i].exp() } else { x[i].sin() };
    }
    s
}

/// A matrix–vector product written by rows, nested in a loop over steps, as the Elman RNN is:
/// `hₜ₊₁ = tanh(W hₜ)` from `h₀ = (1, 1)`, two steps, loss `Σ h₂`. The row loop writes `next`
/// element by element and is run again in the pullback; its nested accumulation reads `h` and
/// `w` by reference. The gradient is checked against the chain rule by hand:
/// `ḣ₂ = 1`, `ȧₜ = ḣₜ₊₁ ⊙ (1 − hₜ₊₁²)`, `W̄ += ȧₜ hₜᵀ`, `ḣₜ = Wᵀ ȧₜ`.
#[differentiable]
pub(crate) fn tanh_steps(w: [[f64; 2]; 2]) -> f64 {
    let mut h = [1.0; 2];
    for _ in 0..2 {
        let mut next = [0.0; 2];
        for i in 0..2 {
            let mut a = 0.0;
            for j in 0..2 {
                a += w[i][j] * h[j];
            }
            next[i] = a.tanh();
        }
        h = next;
    }
    h[0] + h[1]
}

/// `tanh_steps` by hand: the forward sweep keeps the states, the backward sweep applies the
/// formulas of its doc comment.
pub(crate) fn tanh_steps_by_hand(w: [[f64; 2]; 2]) -> [[f64; 2]; 2] {
    let mut hs = [[1.0; 2]; 3];
    for t in 0..2 {
        for i in 0..2 {
            hs[t + 1][i] = (w[i][0] * hs[t][0] + w[i][1] * hs[t][1]).tanh();
        }
    }
    let (mut dw, mut dh) = ([[0.0; 2]; 2], [1.0; 2]);
    for t in (0..2).rev() {
        let da = [0, 1].map(|i| dh[i] * (1.0 - hs[t + 1][i] * hs[t + 1][i]));
        dh = [0, 1].map(|j| w[0][j] * da[0] + w[1][j] * da[1]);
        for i in 0..2 {
            for j in 0..2 {
                dw[i][j] += da[i] * hs[t][j];
            }
        }
    }
    dw
}

const PAIRS: usize = 2;

/// Ranges built from constants (`0..2 * PAIRS`, `1..PAIRS + 1`) are evaluated again by the
/// pullback instead of being kept, in a recomputed accumulation and in a checkpointed
/// recurrence: `s = Σᵢ xᵢ³` over `i < 4`, `y = x₁·x₀²` (two steps of `y ← y·x₀`), loss
/// `s + y`: `∂/∂x₀ = 3x₀² + 2x₀x₁`, `∂/∂x₁ = 3x₁² + x₀²`, `∂/∂xᵢ = 3xᵢ²` for `i ≥ 2`.
#[differentiable]
fn constant_ranges(x: [f64; 4]) -> f64 {
    let mut s = 0.0;
    for i in 0..2 * PAIRS {
        s += x[i] * x[i] * x[i];
    }
    let mut y = x[1];
    for _ in 1..PAIRS + 1 {
        y = y * x[0];
    }
    s + y
}

/// A bound that is a local variable is captured, not evaluated again, even when the body
/// changes that variable afterwards (the range was fixed when the loop began): `n = 3`
/// iterations of `s += xᵢ²` while `n` grows, loss `s`: `∂/∂xᵢ = 2xᵢ` for `i < 3`, else 0.
#[allow(clippy::mut_range_bound)] // the point of the test
#[differentiable]
fn bound_changed_in_body(x: [f64; 4]) -> f64 {
    let mut n = 3;
    let mut s = 0.0;
    for i in 0..n {
        s += x[i] * x[i];
        n += 1;
    }
    s + (n as f64) * 0.0
}

/// A user type with a method named like a recorded float method: `Gain(a, b).tanh() = a·tanh b`.
#[derive(Clone, Copy, Debug)]
struct Gain(f64, f64);

impl Differentiable for Gain {
    type Tangent = (f64, f64);
    fn move_by(&mut self, t: &(f64, f64)) {
        self.0 += t.0;
        self.1 += t.1;
    }
}

impl Gain {
    /// `a·tanh b`: `∂/∂a = tanh b`, `∂/∂b = a·(1 − tanh² b)`.
    #[differentiable]
    fn tanh(&self) -> f64 {
        self.0 * self.1.tanh()
    }
}

/// A recorded call on a type without a rule from the recorded value uses the type's own rule:
/// `s = Σᵢ aᵢ·tanh bᵢ` (the method of [`Gain`]) `+ Σᵢ tanh xᵢ` (recorded `f64::tanh`), so
/// `∂s/∂aᵢ = tanh bᵢ`, `∂s/∂bᵢ = aᵢ·(1 − tanh² bᵢ)`, `∂s/∂xᵢ = 1 − tanh² xᵢ`.
#[differentiable]
fn own_tanh_in_loop(g: [Gain; 3], x: [f64; 3]) -> f64 {
    let mut s = 0.0;
    for i in 0..3 {
        s += g[i].tanh() + x[i].tanh();
    }
    s
}

/// Every method the macro records (`macros/src/cache.rs::CACHED`), in one recomputed loop, so
/// that each rule from a recorded value is checked: with `aᵢ = xᵢ/2` (in (−1, 1)) and
/// `pᵢ = xᵢ² + 1` (positive), `s = Σᵢ acos aᵢ + asin aᵢ + atan xᵢ + cbrt xᵢ + cos xᵢ + cosh xᵢ
/// + exp xᵢ + exp2 xᵢ + exp_m1 xᵢ + ln pᵢ + ln_1p pᵢ + log10 pᵢ + log2 pᵢ + sin xᵢ + sinh xᵢ
/// + tan xᵢ + tanh xᵢ` (derivative: [`every_recorded_method_derivative`]).
#[differentiable]
fn every_recorded_method(x: [f64; 3]) -> f64 {
    let mut s = 0.0;
    for i in 0..3 {
        let a = x[i] * 0.5;
        let p = x[i] * x[i] + 1.0;
        s += a.acos() + a.asin() + x[i].atan() + x[i].cbrt() + x[i].cos() + x[i].cosh();
        s += x[i].exp() + x[i].exp2() + x[i].exp_m1() + p.ln() + p.ln_1p() + p.log10();
        s += p.log2() + x[i].sin() + x[i].sinh() + x[i].tan() + x[i].tanh();
    }
    s
}

/// `∂s/∂x` of [`every_recorded_method`], term by term (`acos' + asin' = 0`;
/// `ln p` terms by the chain rule through `p' = 2x`).
fn every_recorded_method_derivative(x: f64) -> f64 {
    let p = x * x + 1.0;
    let (ln2, ln10) = (std::f64::consts::LN_2, std::f64::consts::LN_10);
    let dp = 2.0 * x;
    1.0 / (1.0 + x * x) + 1.0 / (3.0 * x.cbrt() * x.cbrt()) - x.sin()
        + x.sinh()
        + x.exp()
        + x.exp2() * ln2
        + x.exp()
        + dp / p
        + dp / (1.0 + p)
        + dp / (p * ln10)
        + dp / (p * ln2)
        + x.cos()
        + x.cosh()
        + 1.0 / (x.cos() * x.cos())
        + 1.0
        - x.tanh() * x.tanh()
}

/// `yᵢ = tanh(xᵢ)` over tensors written into a `Vec`, loss `Σ y₀ + 2 Σ y₁`:
/// `∂/∂xᵢ = (i+1)·(1 − tanh²)`, elementwise.
#[differentiable]
fn tanh_tensors(xs: &[Tensor]) -> Tensor {
    let mut ys = vec![Tensor::zeros(&[2]), Tensor::zeros(&[2])];
    for i in 0..2 {
        ys[i] = xs[i].tanh();
    }
    ys[0].sum_all() + ys[1].sum_all() * 2.0
}

#[test]
fn recomputed_loops_with_writes_and_recorded_calls() {
    let x = [0.5, -1.25, 2.0, 0.75];
    check!(squares_into, squares_into_vjp; x => [1.0, 4.0 * x[1], 6.0 * x[2], 8.0 * x[3]]);
    check!(last_write_wins, last_write_wins_vjp; x => [0.0, 0.0, 0.0, 3.0]);
    check!(constant_ranges, constant_ranges_vjp; x => [
        3.0 * x[0] * x[0] + 2.0 * x[0] * x[1],
        3.0 * x[1] * x[1] + x[0] * x[0],
        3.0 * x[2] * x[2],
        3.0 * x[3] * x[3],
    ]);
    check!(bound_changed_in_body, bound_changed_in_body_vjp; x => [2.0 * x[0], 2.0 * x[1], 2.0 * x[2], 0.0]);
    let x3 = [0.5, -1.25, 2.0];
    let w = [1.0, -2.0, 3.0];
    check!(tanh_into, tanh_into_vjp; x3 => std::array::from_fn(|i| w[i] * (1.0 - x3[i].tanh().powi(2))));
    check!(recorded_sites, recorded_sites_vjp; x3 => x3.map(|x| {
        (2.0 * x).cos() + (1.0 - x.exp().tanh().powi(2)) * x.exp()
    }));
    check!(branch_in_accumulation, branch_in_accumulation_vjp; x => x.map(|x| {
        if x > 0.0 { x.exp() } else { x.cos() }
    }));
    let w = [[0.5, -0.25], [0.75, 0.125]];
    check!(tanh_steps, tanh_steps_vjp; w => tanh_steps_by_hand(w));
    let xm = [0.5, -1.25, 0.875];
    check!(every_recorded_method, every_recorded_method_vjp; xm => xm.map(every_recorded_method_derivative));

    let (a, b) = ([0.5, -1.25, 2.0], [1.5, 0.25, -0.75]);
    let gains = std::array::from_fn(|i| Gain(a[i], b[i]));
    let (dg, dx) = gradient(own_tanh_in_loop_vjp(gains, x3));
    let sech2 = |v: f64| 1.0 - v.tanh().powi(2);
    assert_close("own_tanh_in_loop ∂a", dg.map(|d| d.0), b.map(f64::tanh));
    assert_close(
        "own_tanh_in_loop ∂b",
        dg.map(|d| d.1),
        std::array::from_fn(|i| a[i] * sech2(b[i])),
    );
    assert_close("own_tanh_in_loop ∂x", dx, x3.map(sech2));
    check_gradient(
        "own_tanh_in_loop",
        |(a, b, x): ([f64; 3], [f64; 3], [f64; 3])| {
            own_tanh_in_loop(std::array::from_fn(|i| Gain(a[i], b[i])), x)
        },
        (a, b, x3),
        (dg.map(|d| d.0), dg.map(|d| d.1), dx),
    );

    let xs = vec![
        Tensor::from_vec(vec![0.5_f64, -1.0], &[2]),
        Tensor::from_vec(vec![2.0_f64, 0.25], &[2]),
    ];
    let (y, pullback) = tanh_tensors_vjp(&xs);
    let want_y: f64 = [0.5_f64, -1.0].iter().map(|x| x.tanh()).sum::<f64>()
        + 2.0 * [2.0_f64, 0.25].iter().map(|x| x.tanh()).sum::<f64>();
    assert_close("tanh_tensors", y.to_scalar(), want_y);
    let grads = pullback(TensorTangent::Dense(Tensor::from_vec(vec![1.0_f64], &[])));
    for (i, g) in grads.into_iter().enumerate() {
        let want: Vec<f64> = xs[i]
            .to_vec_f64()
            .iter()
            .map(|x| (i + 1) as f64 * (1.0 - x.tanh().powi(2)))
            .collect();
        let got = g.to_tensor_like(&xs[i]).to_vec_f64();
        for (g, w) in got.iter().zip(&want) {
            assert_close("tanh_tensors gradient", *g, *w);
        }
    }
}
