//! `adjoint::optim`: optimizer steps against values computed by hand from PyTorch's published
//! formulas, schedules, clipping, in-place updates, and a small model trained with Adam.
//!
//! The SGD cases use dyadic numbers (sums of powers of two), so every intermediate value is
//! exact in `f32` and `f64` and the comparisons are exact. Adam takes square roots, so it is
//! compared with a reference written from the formulas of the PyTorch documentation
//! (`m̂ = m/(1 − β₁ᵗ)`, `θ ← θ − γ·m̂/(√v̂ + ε)`), which the optimizer evaluates in another
//! (PyTorch's implementation) order: in `f64` the two agree to ~10⁻¹⁶ relative, in `f32` to a
//! few ulps of the parameter per step.

use adjoint::optim::{
    Adam, CosineWithWarmup, Groups, LrSchedule, Optimizer, Sgd, StepLr, clip_grad_norm, grad_norm,
};
use adjoint::prelude::*;

const THETA0: [f64; 2] = [1.0, -2.0];
const GRADS: [[f64; 2]; 3] = [[0.5, 1.0], [-0.25, 0.5], [1.0, -1.0]];

/// Runs three steps of `opt` on `THETA0` with `GRADS`, in `dtype`; the parameter after each.
fn three_steps<O: Optimizer>(mut opt: O, dtype: DType) -> Vec<Vec<f64>> {
    let mut w = Tensor::from_vec(THETA0.to_vec(), &[2]).to_dtype(dtype);
    GRADS
        .iter()
        .map(|g| {
            let g = Tensor::from_vec(g.to_vec(), &[2]).to_dtype(dtype);
            opt.step(&mut w, &TensorTangent::Dense(g));
            w.to_vec_f64()
        })
        .collect()
}

fn exact(opt: impl Fn() -> Sgd, expected: [[f64; 2]; 3]) {
    for dtype in [DType::F32, DType::F64] {
        assert_eq!(three_steps(opt(), dtype), expected, "{dtype:?}");
    }
}

#[test]
fn sgd_plain() {
    // θ ← θ − γ g, γ = 0.5
    exact(
        || Sgd::new(0.5),
        [[0.75, -2.5], [0.875, -2.75], [0.375, -2.25]],
    );
}

#[test]
fn sgd_momentum_with_dampening() {
    // μ = 0.5, τ = 0.25, γ = 0.5. The buffer starts as the first gradient (not (1 − τ) g):
    // b₁ = g₁ = (0.5, 1)                          θ₁ = θ₀ − γ b₁ = (0.75, −2.5)
    // b₂ = μ b₁ + 0.75 g₂ = (0.0625, 0.875)       θ₂ = (0.71875, −2.9375)
    // b₃ = μ b₂ + 0.75 g₃ = (0.78125, −0.3125)    θ₃ = (0.328125, −2.78125)
    exact(
        || Sgd::new(0.5).momentum(0.5).dampening(0.25),
        [[0.75, -2.5], [0.71875, -2.9375], [0.328125, -2.78125]],
    );
}

#[test]
fn sgd_nesterov() {
    // μ = 0.5, γ = 0.5, step along d = g + μ b:
    // b₁ = (0.5, 1),  d₁ = (0.75, 1.5),   θ₁ = (0.625, −2.75)
    // b₂ = (0, 1),    d₂ = (−0.25, 1),    θ₂ = (0.75, −3.25)
    // b₃ = (1, −0.5), d₃ = (1.5, −1.25),  θ₃ = (0, −2.625)
    exact(
        || Sgd::new(0.5).momentum(0.5).nesterov(true),
        [[0.625, -2.75], [0.75, -3.25], [0.0, -2.625]],
    );
}

#[test]
fn sgd_weight_decay() {
    // λ = 0.5, γ = 0.5: g' = g + λθ
    // g₁' = (1, 0)         θ₁ = (0.5, −2)
    // g₂' = (0, −0.5)      θ₂ = (0.5, −1.75)
    // g₃' = (1.25, −1.875) θ₃ = (−0.125, −0.8125)
    exact(
        || Sgd::new(0.5).weight_decay(0.5),
        [[0.5, -2.0], [0.5, -1.75], [-0.125, -0.8125]],
    );
    // With momentum μ = 0.5 the decayed gradient is what enters the buffer:
    // b₁ = (1, 0)            θ₁ = (0.5, −2)
    // g₂' = (0, −0.5), b₂ = (0.5, −0.5)        θ₂ = (0.25, −1.75)
    // g₃' = (1.125, −1.875), b₃ = (1.375, −2.125)  θ₃ = (−0.4375, −0.6875)
    exact(
        || Sgd::new(0.5).weight_decay(0.5).momentum(0.5),
        [[0.5, -2.0], [0.25, -1.75], [-0.4375, -0.6875]],
    );
}

#[test]
#[should_panic(expected = "Nesterov momentum requires")]
fn sgd_nesterov_needs_momentum() {
    three_steps(Sgd::new(0.1).nesterov(true), DType::F64);
}

/// Adam/AdamW from the formulas of the PyTorch documentation, in `f64`.
fn adam_reference(lr: f64, betas: (f64, f64), eps: f64, wd: f64, decoupled: bool) -> Vec<Vec<f64>> {
    let (b1, b2) = betas;
    let mut theta = THETA0;
    let (mut m, mut v) = ([0.0; 2], [0.0; 2]);
    let mut out = Vec::new();
    for (t, g) in GRADS.iter().enumerate() {
        let t = (t + 1) as i32;
        for i in 0..2 {
            let mut g = g[i];
            if decoupled {
                theta[i] -= lr * wd * theta[i];
            } else {
                g += wd * theta[i];
            }
            m[i] = b1 * m[i] + (1.0 - b1) * g;
            v[i] = b2 * v[i] + (1.0 - b2) * g * g;
            let m_hat = m[i] / (1.0 - b1.powi(t));
            let v_hat = v[i] / (1.0 - b2.powi(t));
            theta[i] -= lr * m_hat / (v_hat.sqrt() + eps);
        }
        out.push(theta.to_vec());
    }
    out
}

fn assert_close(got: &[Vec<f64>], want: &[Vec<f64>], tol: f64) {
    for (step, (g, w)) in got.iter().zip(want).enumerate() {
        for (a, b) in g.iter().zip(w) {
            assert!(
                (a - b).abs() <= tol,
                "step {}: got {g:?}, expected {w:?}",
                step + 1
            );
        }
    }
}

#[test]
fn adam_matches_the_published_formulas() {
    let cases = [
        (Adam::new(0.1), 0.1, (0.9, 0.999), 1e-8, 0.0, false),
        (
            Adam::new(0.05).betas(0.8, 0.99).eps(1e-3),
            0.05,
            (0.8, 0.99),
            1e-3,
            0.0,
            false,
        ),
        // Adam's weight decay is an L2 penalty: g ← g + λθ before the moments.
        (
            Adam::new(0.1).weight_decay(0.5),
            0.1,
            (0.9, 0.999),
            1e-8,
            0.5,
            false,
        ),
        // AdamW's is decoupled: θ ← θ(1 − γλ) before the Adam step.
        (
            Adam::adamw(0.1).weight_decay(0.5),
            0.1,
            (0.9, 0.999),
            1e-8,
            0.5,
            true,
        ),
        (Adam::adamw(0.1), 0.1, (0.9, 0.999), 1e-8, 1e-2, true),
    ];
    for (opt, lr, betas, eps, wd, decoupled) in cases {
        let want = adam_reference(lr, betas, eps, wd, decoupled);
        assert_close(&three_steps(opt.clone(), DType::F64), &want, 1e-14);
        // f32: ~10 rounded operations per step, each within 2⁻²⁴ relative, on values of
        // order 1, over three steps: well inside 10⁻⁶.
        assert_close(&three_steps(opt, DType::F32), &want, 1e-6);
    }
}

#[test]
fn adam_first_steps_by_hand() {
    // Step 1: m = 0.1 g, v = 0.001 g², m̂ = g, v̂ = g², so θ ← θ − γ g/(|g| + ε) ≈ θ − γ sign(g).
    // Step 2 with g₂: m = 0.09 g₁ + 0.1 g₂, v = 0.000999 g₁² + 0.001 g₂²,
    // m̂ = m/0.19, v̂ = v/0.001999.
    let got = three_steps(Adam::new(0.1), DType::F64);
    let s1 = [
        1.0 - 0.1 * 0.5 / (0.5 + 1e-8),
        -2.0 - 0.1 * 1.0 / (1.0 + 1e-8),
    ];
    assert!((got[0][0] - s1[0]).abs() < 1e-15 && (got[0][1] - s1[1]).abs() < 1e-15);
    let m = 0.09 * 0.5 + 0.1 * -0.25;
    let v: f64 = 0.000999 * 0.25 + 0.001 * 0.0625;
    let s2 = s1[0] - 0.1 * (m / 0.19) / ((v / 0.001999).sqrt() + 1e-8);
    assert!((got[1][0] - s2).abs() < 1e-14, "{} vs {s2}", got[1][0]);
    // AdamW and Adam with the same λ differ from the first step on.
    let w = three_steps(Adam::adamw(0.1).weight_decay(0.5), DType::F64);
    let l2 = three_steps(Adam::new(0.1).weight_decay(0.5), DType::F64);
    assert!((w[0][0] - l2[0][0]).abs() > 1e-3);
    // AdamW step 1: θ(1 − γλ) − γ sign(g) = 0.95 − 0.1 for θ = 1.
    assert!((w[0][0] - 0.85).abs() < 1e-7);
}

/// Two parameters, one of which gets no gradient.
#[derive(Differentiable)]
struct Two {
    a: Tensor,
    b: Tensor,
}

fn two() -> Two {
    Two {
        a: Tensor::from_vec(vec![1.0_f32, 2.0], &[2]),
        b: Tensor::from_vec(vec![3.0_f32], &[1]),
    }
}

fn dense(v: &[f32], shape: &[usize]) -> TensorTangent {
    TensorTangent::Dense(Tensor::from_vec(v.to_vec(), shape))
}

#[test]
fn state_is_per_parameter_and_zero_gradients_are_skipped() {
    let mut model = two();
    let mut opt = Adam::new(0.1).weight_decay(0.1);
    let g_a = TwoTangent {
        a: dense(&[1.0, 1.0], &[2]),
        b: TensorTangent::Zero,
    };
    opt.step(&mut model, &g_a);
    opt.step(&mut model, &g_a);
    // `b` had no gradient: untouched (no decay either) and without state, like a PyTorch
    // parameter whose `.grad` is None.
    assert_eq!(model.b.to_vec_f32(), vec![3.0]);
    assert!(opt.moments("b").is_none());
    assert_eq!(opt.moments("a").unwrap().2, 2);
    // Its first step is then its own step 1 (bias corrections of t = 1): θ − γ·sign(g).
    let g_b = TwoTangent {
        a: TensorTangent::Zero,
        b: dense(&[-2.0], &[1]),
    };
    let a_before = model.a.to_vec_f32();
    opt.step(&mut model, &g_b);
    assert_eq!(opt.moments("b").unwrap().2, 1);
    assert_eq!(opt.moments("a").unwrap().2, 2);
    assert_eq!(model.a.to_vec_f32(), a_before);
    // g' = −2 + 0.1·3 = −1.7 → θ = 3 + 0.1
    assert!((model.b.to_vec_f32()[0] - 3.1).abs() < 1e-6);
}

#[test]
fn updates_are_in_place_and_copy_on_write() {
    let mut model = two();
    let mut opt = Sgd::new(0.5).momentum(0.9);
    let g = TwoTangent {
        a: dense(&[1.0, 1.0], &[2]),
        b: dense(&[1.0], &[1]),
    };
    opt.step(&mut model, &g); // allocates the momentum buffers
    let buffer = |t: &Tensor| t.storage() as *const _;
    let (pa, pb) = (buffer(&model.a), buffer(&model.b));
    let pm = buffer(opt.momentum_buffer("a").unwrap());
    for _ in 0..3 {
        opt.step(&mut model, &g);
    }
    assert_eq!((buffer(&model.a), buffer(&model.b)), (pa, pb));
    assert_eq!(buffer(opt.momentum_buffer("a").unwrap()), pm);

    // A clone shares the buffer: the step copies it first, and the clone keeps its values.
    let kept = model.a.clone();
    let before = kept.to_vec_f32();
    opt.step(&mut model, &g);
    assert_eq!(kept.to_vec_f32(), before);
    assert_ne!(model.a.to_vec_f32(), before);
    assert!(!model.a.shares_storage_with(&kept));
}

#[test]
#[should_panic(expected = "one optimizer serves one model")]
fn an_optimizer_serves_one_model() {
    let mut opt = Sgd::new(0.1);
    let mut a = two();
    let g = TwoTangent {
        a: dense(&[1.0, 1.0], &[2]),
        b: dense(&[1.0], &[1]),
    };
    opt.step(&mut a, &g);
    let mut w = Tensor::zeros(&[2]);
    opt.step(&mut w, &dense(&[1.0, 1.0], &[2]));
}

/// A matrix, a bias and a gain: what parameter groups tell apart.
#[derive(Differentiable)]
struct Grouped {
    w: Tensor,
    b: Tensor,
    gain: Tensor,
}

fn grouped() -> (Grouped, GroupedTangent) {
    let model = Grouped {
        w: Tensor::from_vec(vec![1.0_f32, -2.0, 0.5, 4.0], &[2, 2]),
        b: Tensor::from_vec(vec![1.0_f32, 2.0], &[2]),
        gain: Tensor::from_vec(vec![1.0_f32], &[1]),
    };
    let grad = GroupedTangent {
        w: dense(&[0.5, 1.0, -0.5, 0.25], &[2, 2]),
        b: dense(&[0.5, -1.0], &[2]),
        gain: dense(&[2.0], &[1]),
    };
    (model, grad)
}

/// Weight decay on the matrix only, by a rule on the parameters' ranks, with dyadic values
/// (exact in `f32`): SGD with `γ = ½`, `λ = ¼` on `w`: `θ − ½(g + ¼θ)`; on `b` and `gain`
/// without decay: `θ − ½g`. Each group keeps the state of its own parameters only.
#[test]
fn parameter_groups_by_a_rule() {
    let (mut model, grad) = grouped();
    let mut opt = Groups::new([
        Sgd::new(0.5).weight_decay(0.25).momentum(0.5),
        Sgd::new(0.5).momentum(0.5),
    ])
    .by(|_, p| usize::from(p.rank() < 2));
    opt.step(&mut model, &grad);
    assert_eq!(model.w.to_vec_f32(), vec![0.625, -2.25, 0.6875, 3.375]);
    assert_eq!(model.b.to_vec_f32(), vec![0.75, 2.5]);
    assert_eq!(model.gain.to_vec_f32(), vec![0.0]);
    assert!(opt.group(0).momentum_buffer("w").is_some());
    assert!(opt.group(0).momentum_buffer("b").is_none());
    assert!(opt.group(1).momentum_buffer("b").is_some());
    assert!(opt.group(1).momentum_buffer("w").is_none());
    // Later steps find each group's state again: the same as the groups' optimizers stepped
    // on their own parameters.
    let (mut alone, _) = grouped();
    let (mut sgd_w, mut sgd_b, mut sgd_gain) = (
        Sgd::new(0.5).weight_decay(0.25).momentum(0.5),
        Sgd::new(0.5).momentum(0.5),
        Sgd::new(0.5).momentum(0.5),
    );
    for _ in 0..3 {
        sgd_w.step(&mut alone.w, &grad.w);
        sgd_b.step(&mut alone.b, &grad.b);
        sgd_gain.step(&mut alone.gain, &grad.gain);
    }
    opt.step(&mut model, &grad);
    opt.step(&mut model, &grad);
    for (got, want) in [
        (&model.w, &alone.w),
        (&model.b, &alone.b),
        (&model.gain, &alone.gain),
    ] {
        assert_eq!(got.to_vec_f32(), want.to_vec_f32());
    }
    // A schedule sets every group's rate.
    opt.set_lr(0.25);
    assert_eq!(
        (opt.group(0).lr(), opt.group(1).lr(), opt.lr()),
        (0.25, 0.25, 0.25)
    );
}

/// Two parts of a model stepped apart, by one `Groups` (one optimizer alone panics, see
/// `an_optimizer_serves_one_model`): the same values as two optimizers, and an Adam step of
/// group 1 that moves by `γ·sign(g)`.
#[test]
fn parameter_groups_by_parts() {
    let (mut model, grad) = grouped();
    let mut opt = Groups::new([Adam::new(0.25), Adam::new(0.125)]);
    for _ in 0..2 {
        opt.step_group(0, &mut model.w, &grad.w);
        opt.step_group(1, &mut model.b, &grad.b);
    }
    let (mut alone, _) = grouped();
    let (mut a, mut b) = (Adam::new(0.25), Adam::new(0.125));
    for _ in 0..2 {
        a.step(&mut alone.w, &grad.w);
        b.step(&mut alone.b, &grad.b);
    }
    assert_eq!(model.w.to_vec_f32(), alone.w.to_vec_f32());
    assert_eq!(model.b.to_vec_f32(), alone.b.to_vec_f32());
    // Two Adam steps of a constant gradient: m̂ = g, v̂ = g², so θ − 2γ·g/(|g| + ε).
    let b = model.b.to_vec_f32();
    assert!(
        (b[0] - 0.75).abs() < 1e-6 && (b[1] - 2.25).abs() < 1e-6,
        "{b:?}"
    );
    assert_eq!(opt.group(1).moments("").map(|m| m.2), Some(2));
}

#[test]
#[should_panic(expected = "the rule puts `gain` in group 2, but there are 2 groups")]
fn a_rule_naming_a_missing_group_panics() {
    let (mut model, grad) = grouped();
    let mut opt = Groups::new([Sgd::new(0.1), Sgd::new(0.1)]).by(|path, _| match path {
        "w" => 0,
        "b" => 1,
        _ => 2,
    });
    opt.step(&mut model, &grad);
}

#[test]
#[should_panic(expected = "these `Groups` have no rule to give each parameter its group")]
fn groups_without_a_rule_step_by_parts() {
    let (mut model, grad) = grouped();
    Groups::new([Sgd::new(0.1)]).step(&mut model, &grad);
}

#[test]
#[should_panic(expected = "the gradient of `a` is F32 [3]")]
fn a_gradient_of_the_wrong_shape_names_the_parameter() {
    let mut model = two();
    let g = TwoTangent {
        a: dense(&[1.0, 1.0, 1.0], &[3]),
        b: TensorTangent::Zero,
    };
    Sgd::new(0.1).step(&mut model, &g);
}

#[test]
fn step_decay_schedule() {
    let s = StepLr::new(0.1, 3, 0.5);
    let lrs: Vec<f64> = (0..8).map(|t| s.lr_at(t)).collect();
    assert_eq!(lrs, [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025]);
}

#[test]
fn cosine_schedule_with_warmup() {
    let s = CosineWithWarmup::new(1.0, 4, 14).min_lr(0.1);
    // Warm-up: (t + 1)/W.
    assert_eq!(
        (0..4).map(|t| s.lr_at(t)).collect::<Vec<_>>(),
        [0.25, 0.5, 0.75, 1.0]
    );
    // Cosine from 1 at t = W to 0.1 at t = T: half-way (t = 9) is the mean, 0.55.
    assert_eq!(s.lr_at(4), 1.0);
    assert!((s.lr_at(9) - 0.55).abs() < 1e-15);
    // t = 6 is 2/10 of the way.
    let fifth = 0.1 + 0.9 * 0.5 * (1.0 + (0.2 * std::f64::consts::PI).cos());
    assert!((s.lr_at(6) - fifth).abs() < 1e-15);
    assert_eq!((s.lr_at(14), s.lr_at(100)), (0.1, 0.1));
    // Monotone after the warm-up.
    assert!((4..14).all(|t| s.lr_at(t + 1) <= s.lr_at(t)));
}

#[test]
fn schedules_drive_an_optimizer() {
    let s = StepLr::new(0.5, 1, 0.5);
    let mut opt = Sgd::new(0.0);
    let mut w = Tensor::from_vec(vec![0.0_f64], &[1]);
    let g = TensorTangent::Dense(Tensor::from_vec(vec![1.0_f64], &[1]));
    for t in 0..3 {
        assert_eq!(s.apply(&mut opt, t), opt.lr());
        opt.step(&mut w, &g);
    }
    // steps of 0.5, 0.25, 0.125
    assert_eq!(w.to_vec_f64(), vec![-0.875]);
}

#[test]
fn clipping_to_a_global_norm() {
    let mut model = two();
    // ‖(1, 2, 2)‖ = 3 across both tensors.
    let g = || TwoTangent {
        a: dense(&[1.0, 2.0], &[2]),
        b: dense(&[-2.0], &[1]),
    };
    assert_eq!(grad_norm(&mut model, &g()), 3.0);

    // Below the threshold: untouched.
    let mut small = g();
    assert_eq!(clip_grad_norm(&mut model, &mut small, 5.0), 3.0);
    assert_eq!(small.a.unwrap().to_vec_f32(), vec![1.0, 2.0]);

    // Above: scaled by max_norm/(norm + 1e-6), as PyTorch.
    let mut big = g();
    assert_eq!(clip_grad_norm(&mut model, &mut big, 1.5), 3.0);
    let c = (1.5 / (3.0 + 1e-6)) as f32;
    assert_eq!(big.a.clone().unwrap().to_vec_f32(), vec![c, 2.0 * c]);
    assert_eq!(big.b.clone().unwrap().to_vec_f32(), vec![-2.0 * c]);
    assert!((grad_norm(&mut model, &big) - 1.5).abs() < 1e-5);

    // Symbolic zeros count as zeros and stay zeros.
    let mut partial = TwoTangent {
        a: dense(&[3.0, 4.0], &[2]),
        b: TensorTangent::Zero,
    };
    assert_eq!(clip_grad_norm(&mut model, &mut partial, 1.0), 5.0);
    assert!(partial.b.is_zero());
    // The parameters were only read.
    assert_eq!(model.a.to_vec_f32(), vec![1.0, 2.0]);
}

/// A one-hidden-layer network for 1-D regression.
#[derive(Differentiable)]
struct Net {
    w1: Tensor,
    b1: Tensor,
    w2: Tensor,
    b2: Tensor,
}

#[differentiable]
impl Net {
    #[differentiable]
    fn forward(&self, x: &Tensor) -> Tensor {
        let h = (x.matmul(&self.w1) + &self.b1).tanh();
        h.matmul(&self.w2) + &self.b2
    }
}

#[differentiable]
fn net_loss(net: &Net, x: &Tensor, y: &Tensor) -> Tensor {
    net.forward(x).mse(y)
}

#[test]
fn adam_trains_a_small_regression() {
    // y = sin(2x) on [−1.5, 1.5], 32 points; 16 tanh units.
    let xs: Vec<f32> = (0..32).map(|i| -1.5 + 3.0 * i as f32 / 31.0).collect();
    let ys: Vec<f32> = xs.iter().map(|x| (2.0 * x).sin()).collect();
    let x = Tensor::from_vec(xs, &[32, 1]);
    let y = Tensor::from_vec(ys, &[32, 1]);
    let mut net = Net {
        w1: Tensor::rand_normal(&[1, 16], 0.0, 1.0, 1),
        b1: Tensor::rand_normal(&[16], 0.0, 1.0, 2),
        w2: Tensor::rand_normal(&[16, 1], 0.0, 0.25, 3),
        b2: Tensor::zeros(&[1]),
    };
    let initial = net_loss(&net, &x, &y).to_scalar();
    let schedule = CosineWithWarmup::new(0.03, 20, 1500).min_lr(1e-3);
    let mut opt = Adam::new(0.0);
    let mut loss = initial;
    let buffer = |t: &Tensor| t.storage() as *const _;
    let w1 = buffer(&net.w1);
    for t in 0..1500 {
        schedule.apply(&mut opt, t);
        let (l, (mut g, _, _)) = value_with_gradient(net_loss_vjp(&net, &x, &y));
        clip_grad_norm(&mut net, &mut g, 10.0);
        opt.step(&mut net, &g);
        loss = l.to_scalar();
    }
    // The pullback (and the clones it captured) is gone by the time of the step, so the
    // parameters were updated in their own buffers all along.
    assert_eq!(buffer(&net.w1), w1);
    assert!(initial > 0.1, "initial loss {initial}");
    eprintln!("loss {initial} → {loss}");
    assert!(loss < 1e-4, "loss {initial} → {loss}");
}

/// A linear map whose weight's gradient is a matrix product (`xᵀ·ȳ`).
#[derive(Clone, Differentiable)]
struct Lin {
    w: Tensor,
}

/// `Σ (x·W) ⊙ y`: `W̄ = xᵀ·y`.
#[differentiable]
fn lin_loss(m: &Lin, #[no_derivative] x: &Tensor, #[no_derivative] y: &Tensor) -> Tensor {
    (x.matmul(&m.w) * y).sum_all()
}

/// Small integers (exact in `f32`, as are all the products and sums below).
fn ints(rows: usize, cols: usize, seed: usize) -> Tensor {
    let v = (0..rows * cols).map(|i| ((i * 7 + seed * 3) % 9) as f32 - 4.0);
    Tensor::from_vec(v.collect(), &[rows, cols])
}

/// `x: [5, 3]`, `y: [5, 4]`, `W: [3, 4]`, and the gradient of [`lin_loss`] at them.
fn lin_problem() -> (Lin, LinTangent) {
    let (x, y, w) = (ints(5, 3, 1), ints(5, 4, 2), ints(3, 4, 3));
    let m = Lin { w };
    let g = gradient(lin_loss_vjp(&m, &x, &y));
    (m, g)
}

#[test]
fn plain_sgd_adds_a_weights_product_into_it() {
    let (mut m, g) = lin_problem();
    assert!(
        matches!(g.w, TensorTangent::Outer(_)),
        "the weight's gradient reaches the optimizer as its product's operands"
    );
    // θ − γ·g with g computed, by hand: xᵀ·y of the integers above.
    let dense = g.w.clone().unwrap();
    let want: Vec<f32> =
        m.w.to_vec_f32()
            .iter()
            .zip(dense.to_vec_f32())
            .map(|(w, g)| w - 0.5 * g)
            .collect();
    let buffer = |t: &Tensor| t.storage() as *const _;
    let before = buffer(&m.w);
    let calls = adjoint::tensor::matmul_calls();
    Sgd::new(0.5).step(&mut m, &g);
    // One GEMM into the parameter's own buffer, no gradient tensor.
    assert_eq!(adjoint::tensor::matmul_calls() - calls, 1);
    assert_eq!(buffer(&m.w), before);
    assert_eq!(m.w.to_vec_f32(), want);

    // A clone of the parameter keeps its values (copy on write).
    let (mut m, g) = lin_problem();
    let kept = m.w.clone();
    let old = kept.to_vec_f32();
    Sgd::new(0.5).step(&mut m, &g);
    assert_eq!(kept.to_vec_f32(), old);
    assert_eq!(m.w.to_vec_f32(), want);
}

#[test]
fn a_product_read_before_the_step_is_not_computed_again() {
    let (mut m, g) = lin_problem();
    let mut settled = m.clone();
    Sgd::new(0.5).step(&mut settled, &g.clone().settled());
    // The norm computes the product; the step then adds that tensor (no second GEMM).
    let norm = grad_norm(&mut m, &g);
    let sum_sq: f32 =
        g.w.clone()
            .unwrap()
            .to_vec_f32()
            .iter()
            .map(|v| v * v)
            .sum();
    assert_eq!(norm, f64::from(sum_sq).sqrt());
    let calls = adjoint::tensor::matmul_calls();
    Sgd::new(0.5).step(&mut m, &g);
    assert_eq!(adjoint::tensor::matmul_calls(), calls);
    assert_eq!(m.w.to_vec_f32(), settled.w.to_vec_f32());
}

#[test]
fn momentum_and_weight_decay_take_a_products_value() {
    for opt in [
        || Sgd::new(0.5).momentum(0.5),
        || Sgd::new(0.5).weight_decay(0.25),
    ] {
        let (mut m, g) = lin_problem();
        let mut settled = m.clone();
        let (mut a, mut b) = (opt(), opt());
        for _ in 0..2 {
            a.step(&mut m, &g);
            b.step(&mut settled, &g.clone().settled());
        }
        assert_eq!(m.w.to_vec_f32(), settled.w.to_vec_f32());
    }
}
