//! Custom derivatives registered with `#[derivative_of]` (in the same module, in another
//! module, under another name, generic, with data parameters), and "no wasted work": pullbacks
//! and tangents nobody asked for are not run, observed with counters.

mod common;

use adjoint::prelude::*;
use common::{assert_close, check, check_gradient};
use std::cell::Cell;

// ---------------------------------------------------------------------------------------------
// Custom derivatives
// ---------------------------------------------------------------------------------------------

fn cube(x: f64) -> f64 {
    x * x * x
}

/// The rule under the conventional name `cube_vjp`: 3x².
#[derivative_of(cube)]
fn cube_vjp(x: f64) -> (f64, impl FnOnce(f64) -> f64) {
    (x * x * x, move |d| d * 3.0 * x * x)
}

/// cube(x) + x: d/dx = 3x² + 1.
#[differentiable]
fn uses_cube(x: f64) -> f64 {
    cube(x) + x
}

/// x/(1 + |x|).
fn softsign(x: f64) -> f64 {
    x / (1.0 + x.abs())
}

/// A rule with its own name: softsign' = 1/(1 + |x|)².
#[derivative_of(softsign)]
fn softsign_rule(x: f64) -> (f64, impl FnOnce(f64) -> f64) {
    let s = 1.0 + x.abs();
    (x / s, move |d| d / (s * s))
}

/// softsign(2x): d/dx = 2/(1 + |2x|)².
#[differentiable]
fn uses_softsign(x: f64) -> f64 {
    softsign(x * 2.0)
}

/// ln(eᵃ + eᵇ).
fn smooth_max(a: f64, b: f64) -> f64 {
    (a.exp() + b.exp()).ln()
}

/// A rule of two parameters: ∇ = softmax(a, b).
#[derivative_of(smooth_max)]
fn smooth_max_vjp(a: f64, b: f64) -> (f64, impl FnOnce(f64) -> (f64, f64)) {
    let m = a.max(b);
    let (ea, eb) = ((a - m).exp(), (b - m).exp());
    let z = ea + eb;
    (m + z.ln(), move |d| (d * ea / z, d * eb / z))
}

/// smooth_max(x, y²): ∇ = (pₓ, 2y p_y) with p = softmax(x, y²).
#[differentiable]
fn uses_smooth_max(x: f64, y: f64) -> f64 {
    smooth_max(x, y * y)
}

/// A plain function in one module...
mod special {
    pub fn bump(x: f64) -> f64 {
        (-x * x).exp()
    }
}

/// ...and its rule in another, differently named: bump' = −2x e^{−x²}.
mod special_rules {
    use adjoint::prelude::*;

    #[derivative_of(super::special::bump)]
    pub fn bump_rule(x: f64) -> (f64, impl FnOnce(f64) -> f64) {
        let y = (-x * x).exp();
        (y, move |d| d * -2.0 * x * y)
    }
}

use special::bump;
use special_rules::bump_vjp;

/// bump(x)·x: d/dx = e^{−x²}(1 − 2x²).
#[differentiable]
fn uses_other_module(x: f64) -> f64 {
    bump(x) * x
}

/// A function with its rule in the same module, called by path from outside.
mod activations {
    use adjoint::prelude::*;

    /// eˣ − 1 below 0, x above.
    pub fn elu(x: f64) -> f64 {
        if x > 0.0 { x } else { x.exp_m1() }
    }

    /// elu' = 1 above 0, eˣ below (the `if` lives in the rule, not in differentiable code).
    #[derivative_of(elu)]
    pub fn elu_rule(x: f64) -> (f64, impl FnOnce(f64) -> f64) {
        let slope = if x > 0.0 { 1.0 } else { x.exp() };
        (elu(x), move |d| d * slope)
    }
}

/// elu(x)·3 by path: d/dx = 3·elu'(x).
#[differentiable]
fn uses_elu(x: f64) -> f64 {
    activations::elu(x) * 3.0
}

fn gsquare<T: Float>(x: T) -> T {
    x * x
}

/// A generic rule: 2x.
#[derivative_of(gsquare)]
fn gsquare_vjp<T: Float>(x: T) -> (T, impl FnOnce(T) -> T) {
    (x * x, move |d| d * (x + x))
}

/// gsquare(x) + x: d/dx = 2x + 1.
#[differentiable]
fn uses_gsquare<T: Float>(x: T) -> T {
    gsquare(x) + x
}

fn pown(x: f64, n: i32) -> f64 {
    x.powi(n)
}

/// A rule with an integer parameter, which gets no tangent: n xⁿ⁻¹.
#[derivative_of(pown)]
fn pown_vjp(x: f64, n: i32) -> (f64, impl FnOnce(f64) -> f64) {
    (x.powi(n), move |d| d * f64::from(n) * x.powi(n - 1))
}

/// 2·pown(x, n): d/dx = 2n xⁿ⁻¹.
#[differentiable]
fn uses_pown(x: f64, n: i32) -> f64 {
    pown(x, n) * 2.0
}

fn round_to_quarter(x: f64) -> f64 {
    (x * 4.0).round() / 4.0
}

/// A straight-through estimator: the rule says 1 where the true derivative is 0 almost
/// everywhere, which shows the rule (not the function's body) is used.
#[derivative_of(round_to_quarter)]
fn round_to_quarter_vjp(x: f64) -> (f64, impl FnOnce(f64) -> f64) {
    (round_to_quarter(x), |d| d)
}

/// round_to_quarter(x)·x: d/dx = 1·x + round_to_quarter(x) under the estimator.
#[differentiable]
fn uses_straight_through(x: f64) -> f64 {
    round_to_quarter(x) * x
}

/// Custom rules deep inside differentiable calls: uses_cube(softsign(x)):
/// d/dx = (3s² + 1)·softsign'(x), s = softsign(x).
#[differentiable]
fn nested_custom(x: f64) -> f64 {
    uses_cube(softsign(x))
}

#[test]
fn custom_rules() {
    check!(uses_cube, uses_cube_vjp; 2.0 => 13.0);
    check!(uses_softsign, uses_softsign_vjp; 0.5 => 0.5);
    check!(uses_softsign, uses_softsign_vjp; -1.5 => 2.0 / 16.0);
    let (x, y) = (0.3_f64, 1.1_f64);
    let z = x.exp() + (y * y).exp();
    check!(uses_smooth_max, uses_smooth_max_vjp; x, y =>
        (x.exp() / z, 2.0 * y * (y * y).exp() / z));
    let x = 0.7_f64;
    check!(uses_other_module, uses_other_module_vjp; x =>
        (-x * x).exp() * (1.0 - 2.0 * x * x));
    check!(bump, bump_vjp; x => -2.0 * x * (-x * x).exp());
    check!(uses_elu, uses_elu_vjp; 2.0 => 3.0);
    check!(uses_elu, uses_elu_vjp; -0.5 => 3.0 * (-0.5_f64).exp());
    check!(uses_gsquare::<f64>, uses_gsquare_vjp::<f64>; 1.5 => 4.0);
    assert_eq!(gradient(uses_gsquare_vjp(1.5_f32)), 4.0_f32);
    check!(|x| uses_pown(x, 3), |x| uses_pown_vjp(x, 3); 2.0 => 24.0);
    let x = 0.6_f64;
    let s = softsign(x);
    check!(nested_custom, nested_custom_vjp; x =>
        (3.0 * s * s + 1.0) / ((1.0 + x) * (1.0 + x)));
}

#[test]
fn straight_through_estimator() {
    // No finite differences here: the rule is deliberately not the function's derivative.
    let x = 1.1;
    assert_eq!(round_to_quarter(x), 1.0);
    assert_eq!(
        value_with_gradient(uses_straight_through_vjp(x)),
        (1.1, x + 1.0)
    );
}

// ---------------------------------------------------------------------------------------------
// No wasted work: custom-rule counters
// ---------------------------------------------------------------------------------------------

thread_local! {
    /// Calls of `probe` itself (the undifferentiated function).
    static PLAIN: Cell<usize> = const { Cell::new(0) };
    /// Calls of the rule of `probe` (its forward half).
    static FORWARD: Cell<usize> = const { Cell::new(0) };
    /// Calls of the pullback the rule returns.
    static PULLBACK: Cell<usize> = const { Cell::new(0) };
}

fn bump_counter(c: &'static std::thread::LocalKey<Cell<usize>>) {
    c.with(|c| c.set(c.get() + 1));
}

/// (plain, forward rule, pullback) calls since the last reset; each test runs on its own
/// thread, so the counters are per test.
fn counts() -> (usize, usize, usize) {
    (
        PLAIN.with(Cell::get),
        FORWARD.with(Cell::get),
        PULLBACK.with(Cell::get),
    )
}

fn reset() {
    for c in [&PLAIN, &FORWARD, &PULLBACK] {
        c.with(|c| c.set(0));
    }
}

/// eˣ, counting its calls.
fn probe(x: f64) -> f64 {
    bump_counter(&PLAIN);
    x.exp()
}

#[derivative_of(probe)]
fn probe_vjp(x: f64) -> (f64, impl FnOnce(f64) -> f64) {
    bump_counter(&FORWARD);
    let y = x.exp();
    (y, move |d| {
        bump_counter(&PULLBACK);
        d * y
    })
}

/// x·probe(c), c data: d/dx = e^c.
#[differentiable]
fn data_branch(x: f64, #[no_derivative] c: f64) -> f64 {
    x * probe(c)
}

/// x·probe(y) with wrt(x): d/dx = e^y.
#[differentiable(wrt(x))]
fn wrt_branch(x: f64, y: f64) -> f64 {
    x * probe(y)
}

/// probe(x) never reaches the result: d/dx = 2.
#[differentiable]
fn dead_branch(x: f64) -> f64 {
    let unused = probe(x);
    let _ = unused;
    x * 2.0
}

/// x·probe(x): d/dx = eˣ(1 + x).
#[differentiable]
fn active_branch(x: f64) -> f64 {
    x * probe(x)
}

/// sin a + probe(b).
#[differentiable]
fn callee(a: f64, b: f64) -> f64 {
    a.sin() + probe(b)
}

/// callee(x, c) with c data: d/dx = cos x.
#[differentiable]
fn caller_with_data(x: f64, #[no_derivative] c: f64) -> f64 {
    callee(x, c)
}

#[test]
fn inactive_arguments_never_reach_the_rule() {
    // `probe(c)` on data is not rewritten: the plain function runs, the rule never does.
    reset();
    let (v, pb) = data_branch_vjp(2.0, 0.5);
    assert_eq!(v, 2.0 * 0.5_f64.exp());
    assert_eq!(pb(1.0), 0.5_f64.exp());
    assert_eq!(counts(), (1, 0, 0));

    reset();
    let (_, pb) = wrt_branch_vjp(2.0, 0.5);
    assert_eq!(pb(1.0), 0.5_f64.exp());
    assert_eq!(counts(), (1, 0, 0));
}

#[test]
fn values_that_do_not_reach_the_result_get_no_pullback() {
    reset();
    let (v, pb) = dead_branch_vjp(1.5);
    assert_eq!(v, 3.0);
    assert_eq!(pb(1.0), 2.0);
    assert_eq!(counts(), (1, 0, 0));
}

#[test]
fn pullbacks_run_only_when_the_pullback_is_called() {
    reset();
    let x = 0.5_f64;
    let (_, pb) = active_branch_vjp(x);
    // The forward pass ran the rule once and no pullback.
    assert_eq!(counts(), (0, 1, 0));
    assert_close("active_branch", pb(1.0), x.exp() * (1.0 + x));
    assert_eq!(counts(), (0, 1, 1));
    // A value without its pullback does no reverse work at all.
    reset();
    let _value = active_branch_vjp(x).0;
    assert_eq!(counts(), (0, 1, 0));
    check_gradient(
        "active_branch",
        active_branch,
        x,
        gradient(active_branch_vjp(x)),
    );
}

#[test]
fn callee_with_an_unneeded_custom_rule() {
    reset();
    let x = 0.5_f64;
    let (_, pb) = caller_with_data_vjp(x, 0.25);
    assert_eq!(pb(1.0), x.cos());
    // The callee cannot know at compile time that `b` is data at this call, so its forward
    // pass runs the rule of `probe`.
    assert_eq!(counts().1, 1);
    // The caller said (needs = [true, false]) that no tangent of `b` is wanted, so the
    // pullback of `probe(b)` is skipped, as built-in rules skip their arithmetic (see
    // `needs_flags_skip_unneeded_tangents`).
    assert_eq!(counts().2, 0);
    check_gradient(
        "caller_with_data",
        |x| caller_with_data(x, 0.25),
        x,
        gradient(caller_with_data_vjp(x, 0.25)),
    );
}

// ---------------------------------------------------------------------------------------------
// No wasted work: built-in rules, observed through a float type that counts its arithmetic
// ---------------------------------------------------------------------------------------------

thread_local! {
    /// Arithmetic operations and float functions evaluated by [`Counted`].
    static OPS: Cell<usize> = const { Cell::new(0) };
}

fn ops() -> usize {
    OPS.with(Cell::get)
}

fn tick() {
    bump_counter(&OPS);
}

/// An `f64` that counts every arithmetic operation and float function it evaluates.
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
struct Counted(f64);

impl std::fmt::Display for Counted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

macro_rules! counted_ops {
    ($($tr:ident $m:ident $atr:ident $am:ident $op:tt;)*) => {$(
        impl std::ops::$tr for Counted {
            type Output = Counted;
            fn $m(self, o: Counted) -> Counted {
                tick();
                Counted(self.0 $op o.0)
            }
        }
        impl std::ops::$atr for Counted {
            fn $am(&mut self, o: Counted) {
                *self = std::ops::$tr::$m(*self, o);
            }
        }
    )*};
}

counted_ops! {
    Add add AddAssign add_assign +;
    Sub sub SubAssign sub_assign -;
    Mul mul MulAssign mul_assign *;
    Div div DivAssign div_assign /;
    Rem rem RemAssign rem_assign %;
}

impl std::ops::Neg for Counted {
    type Output = Counted;
    fn neg(self) -> Counted {
        tick();
        Counted(-self.0)
    }
}

impl TangentVector for Counted {
    fn zero() -> Self {
        Counted(0.0)
    }
    fn plus(self, other: Self) -> Self {
        self + other
    }
    fn scaled(self, factor: f64) -> Self {
        self * Counted(factor)
    }
}

impl Differentiable for Counted {
    type Tangent = Counted;
    fn move_by(&mut self, t: &Counted) {
        *self += *t;
    }
}

macro_rules! counted_math {
    (unary: $($u:ident)*; binary: $($b:ident)*) => {
        impl FloatMath for Counted {
            $(fn $u(self) -> Self {
                tick();
                Counted(self.0.$u())
            })*
            $(fn $b(self, o: Self) -> Self {
                tick();
                Counted(self.0.$b(o.0))
            })*
            fn powi(self, n: i32) -> Self {
                tick();
                Counted(self.0.powi(n))
            }
            fn mul_add(self, a: Self, b: Self) -> Self {
                tick();
                Counted(self.0.mul_add(a.0, b.0))
            }
        }
    };
}

counted_math! {
    unary: sin cos tan asin acos atan sinh cosh tanh exp exp2 exp_m1 ln ln_1p log2 log10 sqrt
           cbrt recip abs signum floor ceil round trunc fract;
    binary: atan2 powf log max min hypot
}

impl Float for Counted {
    const ZERO: Self = Counted(0.0);
    const ONE: Self = Counted(1.0);
    fn from_f64(v: f64) -> Self {
        Counted(v)
    }
    fn to_f64(self) -> f64 {
        self.0
    }
}

/// sin x · eʸ.
#[differentiable]
fn heavy<T: Float>(x: T, y: T) -> T {
    x.sin() * y.exp()
}

/// heavy(x, c) with c data.
#[differentiable]
fn heavy_x<T: Float>(x: T, #[no_derivative] c: T) -> T {
    heavy(x, c)
}

/// heavy(c, y) with c data.
#[differentiable]
fn heavy_y<T: Float>(#[no_derivative] c: T, y: T) -> T {
    heavy(c, y)
}

/// heavy(c, c) + x with c data: the call is on data and has no pullback.
#[differentiable]
fn heavy_data<T: Float>(x: T, #[no_derivative] c: T) -> T {
    x + heavy(c, c)
}

/// heavy with wrt(x) directly.
#[differentiable(wrt(x))]
fn heavy_wrt_x<T: Float>(x: T, y: T) -> T {
    x.sin() * y.exp()
}

/// Operations the pullback of `vjp` does when called with seed 1.
fn pullback_ops<P: FnOnce(Counted) -> G, G>(vjp: (Counted, P)) -> (usize, G) {
    let (_, pb) = vjp;
    let before = ops();
    let g = pb(Counted(1.0));
    (ops() - before, g)
}

#[test]
fn needs_flags_skip_unneeded_tangents() {
    let (x, y) = (Counted(0.5), Counted(0.25));
    let (cx, ey) = (0.5_f64.cos(), 0.25_f64.exp());
    let (sx, _) = (0.5_f64.sin(), ());
    // Both tangents: mul (ȳ·eʸ, ȳ·sin x) + sin (ā·cos x: a cos and a mul) + exp (b̄·eʸ) = 5.
    let (n, (dx, dy)) = pullback_ops(heavy_vjp(x, y));
    assert_eq!(n, 5);
    assert_eq!((dx.0, dy.0), (cx * ey, sx * ey));
    // Only x, through a caller passing its flags on: mul (ȳ·eʸ) + sin (cos, mul) = 3; the
    // pullback of exp is reached with a zero seed and does nothing.
    let (n, dx) = pullback_ops(heavy_x_vjp(x, y));
    assert_eq!(n, 3);
    assert_eq!(dx.0, cx * ey);
    // The same with wrt(x) on the function itself.
    let (n, dx) = pullback_ops(heavy_wrt_x_vjp(x, y));
    assert_eq!(n, 3);
    assert_eq!(dx.0, cx * ey);
    // Only y: mul (ȳ·sin x) + exp (mul) = 2.
    let (n, dy) = pullback_ops(heavy_y_vjp(x, y));
    assert_eq!(n, 2);
    assert_eq!(dy.0, sx * ey);
    // A call on data only: `x + heavy(c, c)`: the add rule does no arithmetic.
    let (n, dx) = pullback_ops(heavy_data_vjp(x, y));
    assert_eq!(n, 0);
    assert_eq!(dx.0, 1.0);
    // And the counted gradients are the f64 ones.
    let (dx64, dy64) = gradient(heavy_vjp(0.5, 0.25));
    assert_eq!((dx64, dy64), (cx * ey, sx * ey));
}

// ---------------------------------------------------------------------------------------------
// Rules for methods and associated functions
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug, Differentiable)]
pub struct Scale {
    k: f64,
}

/// A trait method with a rule in the type's inherent `impl`.
pub trait Energy {
    fn energy(&self) -> f64;
}

impl Energy for Scale {
    fn energy(&self) -> f64 {
        0.5 * self.k * self.k
    }
}

impl Scale {
    /// k·x.
    pub fn apply(&self, x: f64) -> f64 {
        self.k * x
    }

    /// The rule of `apply`: the tangent of `self` first (k̄ = x ȳ), then x̄ = k ȳ.
    #[derivative_of(Scale::apply, jvp = apply_jvp_rule)]
    pub fn apply_rule(&self, x: f64) -> (f64, impl use<> + FnOnce(f64) -> (ScaleTangent, f64)) {
        let k = self.k;
        (k * x, move |d| (ScaleTangent { k: d * x }, d * k))
    }

    /// The forward rule of `apply`: k̇ x + k ẋ.
    pub fn apply_jvp_rule(&self, x: f64, dself: &ScaleTangent, dx: f64) -> (f64, f64) {
        (self.k * x, dself.k * x + self.k * dx)
    }

    /// ln(1 + eˣ), an associated function.
    pub fn softplus(x: f64) -> f64 {
        x.exp().ln_1p()
    }

    /// Its rule: σ(x).
    #[derivative_of(Scale::softplus, jvp = softplus_jvp_rule)]
    pub fn softplus_rule(x: f64) -> (f64, impl FnOnce(f64) -> f64) {
        let s = 1.0 / (1.0 + (-x).exp());
        (x.exp().ln_1p(), move |d| d * s)
    }

    pub fn softplus_jvp_rule(x: f64, dx: f64) -> (f64, f64) {
        (x.exp().ln_1p(), dx / (1.0 + (-x).exp()))
    }

    /// The rule of the trait method `energy`: k̄ = k ȳ (counted, to show it runs).
    #[derivative_of(Scale::energy)]
    pub fn energy_rule(&self) -> (f64, impl use<> + FnOnce(f64) -> ScaleTangent) {
        let k = self.k;
        ENERGY_RULE_RUNS.with(|c| c.set(c.get() + 1));
        (0.5 * k * k, move |d| ScaleTangent { k: d * k })
    }
}

thread_local! {
    static ENERGY_RULE_RUNS: Cell<usize> = const { Cell::new(0) };
}

/// k(kx) + softplus(x): ∂k = 2kx, ∂x = k² + σ(x).
#[differentiable(forward)]
fn scaled_twice(s: Scale, x: f64) -> f64 {
    s.apply(s.apply(x)) + Scale::softplus(x)
}

/// energy(s)·x = k²x/2: ∂k = kx, ∂x = k²/2.
#[differentiable]
fn energy_times(s: Scale, x: f64) -> f64 {
    s.energy() * x
}

#[test]
fn rules_for_methods_return_the_tangent_of_self_first() {
    let (k, x): (f64, f64) = (1.5, 0.8);
    let sigma = 1.0 / (1.0 + (-x).exp());
    let (v, pb) = scaled_twice_vjp(Scale { k }, x);
    assert!((v - (k * k * x + x.exp().ln_1p())).abs() < 1e-12);
    let (ds, dx) = pb(1.0);
    assert!((ds.k - 2.0 * k * x).abs() < 1e-12, "{ds:?}");
    assert!((dx - (k * k + sigma)).abs() < 1e-12, "{dx}");
    check_gradient(
        "scaled_twice",
        |(k, x)| scaled_twice(Scale { k }, x),
        (k, x),
        (ds.k, dx),
    );
    let (_, t) = scaled_twice_jvp(Scale { k }, x, ScaleTangent { k: 0.3 }, -0.5);
    assert!((t - (0.3 * 2.0 * k * x - 0.5 * (k * k + sigma))).abs() < 1e-12);

    let before = ENERGY_RULE_RUNS.with(Cell::get);
    let (ds, dx) = gradient(energy_times_vjp(Scale { k }, x));
    assert_eq!(ENERGY_RULE_RUNS.with(Cell::get), before + 1, "the rule ran");
    assert!((ds.k - k * x).abs() < 1e-12 && (dx - 0.5 * k * k).abs() < 1e-12);
    check_gradient(
        "energy_times",
        |(k, x)| energy_times(Scale { k }, x),
        (k, x),
        (ds.k, dx),
    );
}
