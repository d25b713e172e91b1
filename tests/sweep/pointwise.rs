//! Sweep lines of the elementwise ops: unary functions, binary ops with broadcasting, the
//! comparisons and `where_`, the tensor–scalar operators, and the constants made from a
//! tensor's shape (`zeros_like` and friends, whose derivative is zero).

use super::Op;
use super::draw::{Case, Rng, case, host};
use adjoint::__private::{AddJvp, DivJvp, MulJvp, SubJvp};
use adjoint::prelude::*;
use adjoint::rules::operators::{AddRule, DivRule, MulRule, SubRule};

/// A unary op on values of any rank ≤ 3 (`positive`: in `[0.5, 2)`).
fn unary<P, R>(
    r: &mut Rng,
    positive: bool,
    f: impl Fn(&Tensor) -> (Tensor, P) + 'static,
    jvp: impl Fn(&Tensor, Option<&TensorTangent>) -> (Tensor, Option<TensorTangent>) + 'static,
) -> Case
where
    P: FnOnce(TensorTangent) -> R + 'static,
    R: super::draw::IntoTangents,
{
    let shape = r.shape(0, 3);
    let x = if positive {
        r.positive(&shape)
    } else {
        r.values(&shape)
    };
    case(vec![x], String::new(), move |xs| f(&xs[0]))
        .with_jvp(move |xs, ts| jvp(&xs[0], ts[0].as_ref()))
}

/// A binary op on two shapes that broadcast, either side the smaller (`positive_rhs`: the
/// right operand in `[0.5, 2)`).
fn binary<P, R>(
    r: &mut Rng,
    positive_rhs: bool,
    f: impl Fn(&Tensor, &Tensor) -> (Tensor, P) + 'static,
    jvp: impl Fn(&Tensor, &Tensor, [Option<&TensorTangent>; 2]) -> (Tensor, Option<TensorTangent>)
    + 'static,
) -> Case
where
    P: FnOnce(TensorTangent) -> R + 'static,
    R: super::draw::IntoTangents,
{
    let big = r.shape(0, 3);
    let small = r.partner(&big);
    let (a, b) = if r.chance(0.5) {
        (big, small)
    } else {
        (small, big)
    };
    let rhs = if positive_rhs {
        r.positive(&b)
    } else {
        r.values(&b)
    };
    case(vec![r.values(&a), rhs], String::new(), move |xs| {
        f(&xs[0], &xs[1])
    })
    .with_jvp(move |xs, ts| jvp(&xs[0], &xs[1], [ts[0].as_ref(), ts[1].as_ref()]))
}

/// A tensor–scalar operator; the scalar is the second input, a rank-0 tensor.
fn scalar<P, R>(
    r: &mut Rng,
    positive: bool,
    f: impl Fn(Tensor, f64) -> (Tensor, P) + 'static,
    jvp: impl Fn(Tensor, f64, Option<TensorTangent>, Option<f64>) -> (Tensor, Option<TensorTangent>)
    + 'static,
) -> Case
where
    P: FnOnce(TensorTangent) -> R + 'static,
    R: super::draw::IntoTangents,
{
    let shape = r.shape(0, 3);
    let t = if positive {
        r.positive(&shape)
    } else {
        r.values(&shape)
    };
    let s = r.positive(&[]);
    case(vec![t, s], String::new(), move |xs| {
        f(xs[0].clone(), xs[1].to_scalar())
    })
    .with_jvp(move |xs, ts| {
        jvp(
            xs[0].clone(),
            xs[1].to_scalar(),
            ts[0].clone(),
            host(&ts[1]),
        )
    })
}

macro_rules! unary_lines {
    ($($name:literal $pos:literal $method:ident $jvp:ident;)*) => {
        vec![$(Op { name: $name, draw: |r| unary(r, $pos, |x| x.$method([true]), |x, t| x.$jvp((t,))) },)*]
    };
}

/// Lines of unary ops with a constant `c` drawn in `[-2, 2)`.
macro_rules! constant_lines {
    ($($name:literal $method:ident $jvp:ident;)*) => {
        vec![$(Op {
            name: $name,
            draw: |r| {
                let c = r.uniform(-2.0, 2.0);
                unary(r, false, move |x| x.$method(c, [true, false]), move |x, t| x.$jvp(c, (t, None)))
            },
        },)*]
    };
}

macro_rules! binary_lines {
    ($($name:literal $pos:literal $method:ident $jvp:ident;)*) => {
        vec![$(Op { name: $name, draw: |r| binary(r, $pos, |a, b| a.$method(b, [true, true]), |a, b, [ta, tb]| a.$jvp(b, (ta, tb))) },)*]
    };
}

/// Every elementwise line.
pub fn ops() -> Vec<Op> {
    let mut ops = unary_lines! {
        "exp" false exp_vjp_full exp_jvp_full; "ln" true ln_vjp_full ln_jvp_full; "sqrt" true sqrt_vjp_full sqrt_jvp_full;
        "rsqrt" true rsqrt_vjp_full rsqrt_jvp_full; "recip" true recip_vjp_full recip_jvp_full; "abs" false abs_vjp_full abs_jvp_full;
        "sin" false sin_vjp_full sin_jvp_full; "cos" false cos_vjp_full cos_jvp_full; "tanh" false tanh_vjp_full tanh_jvp_full;
        "sigmoid" false sigmoid_vjp_full sigmoid_jvp_full; "relu" false relu_vjp_full relu_jvp_full; "gelu" false gelu_vjp_full gelu_jvp_full;
        "gelu_erf" false gelu_erf_vjp_full gelu_erf_jvp_full; "silu" false silu_vjp_full silu_jvp_full; "neg" false neg_vjp_full neg_jvp_full;
        "square" false square_vjp_full square_jvp_full; "zeros_like" false zeros_like_vjp_full zeros_like_jvp_full;
        "ones_like" false ones_like_vjp_full ones_like_jvp_full;
    };
    ops.extend(binary_lines! {
        "add" false add_vjp_full add_jvp_full; "sub" false sub_vjp_full sub_jvp_full; "mul" false mul_vjp_full mul_jvp_full;
        "div" true div_vjp_full div_jvp_full; "maximum" false maximum_vjp_full maximum_jvp_full;
        "minimum" false minimum_vjp_full minimum_jvp_full; "eq_mask" false eq_mask_vjp_full eq_mask_jvp_full;
        "gt" false gt_vjp_full gt_jvp_full; "ge" false ge_vjp_full ge_jvp_full; "lt" false lt_vjp_full lt_jvp_full;
        "le" false le_vjp_full le_jvp_full;
    });
    ops.extend(constant_lines! {
        "add_scalar" add_scalar_vjp_full add_scalar_jvp_full; "mul_scalar" mul_scalar_vjp_full mul_scalar_jvp_full;
        "full_like" full_like_vjp_full full_like_jvp_full; "scalar_like" scalar_like_vjp_full scalar_like_jvp_full;
    });
    ops.extend(parametrized());
    ops.extend(scalar_operators());
    ops
}

/// Unary ops with other constant parameters, and `where_`.
fn parametrized() -> Vec<Op> {
    vec![
        Op {
            name: "leaky_relu",
            draw: |r| {
                unary(
                    r,
                    false,
                    |x| x.leaky_relu_vjp_full(0.1, [true, false]),
                    |x, t| x.leaky_relu_jvp_full(0.1, (t, None)),
                )
            },
        },
        Op {
            name: "powf",
            draw: |r| {
                let p = [-1.5, 0.5, 2.0, 3.0][r.below(4)];
                unary(
                    r,
                    true,
                    move |x| x.powf_vjp_full(p, [true, false]),
                    move |x, t| x.powf_jvp_full(p, (t, None)),
                )
            },
        },
        Op {
            name: "clamp",
            draw: |r| {
                unary(
                    r,
                    false,
                    |x| x.clamp_vjp_full(-0.5, 0.5, [true, false, false]),
                    |x, t| x.clamp_jvp_full(-0.5, 0.5, (t, None, None)),
                )
            },
        },
        Op {
            name: "dropout",
            draw: |r| {
                let seed = r.next_u64();
                unary(
                    r,
                    false,
                    move |x| x.dropout_vjp_full(0.3, seed, [true, false, false]),
                    move |x, t| x.dropout_jvp_full(0.3, seed, (t, None, None)),
                )
            },
        },
        Op {
            name: "where_",
            draw: |r| {
                let shape = r.shape(0, 3);
                let cond = r.values(&shape).gt(&Tensor::from_vec(vec![0.0_f64], &[]));
                let cond2 = cond.clone();
                let other = r.partner(&shape);
                let inputs = vec![r.values(&shape), r.values(&other)];
                case(inputs, String::new(), move |xs| {
                    let cond = cond.to_dtype(xs[0].dtype());
                    let (y, pb) = cond.where__vjp_full(&xs[0], &xs[1], [false, true, true]);
                    (y, move |d| {
                        let (_, t, f) = pb(d);
                        (t, f)
                    })
                })
                .with_jvp(move |xs, ts| {
                    let cond = cond2.to_dtype(xs[0].dtype());
                    cond.where__jvp_full(&xs[0], &xs[1], (None, ts[0].as_ref(), ts[1].as_ref()))
                })
            },
        },
    ]
}

/// The rule of `s ∘ t` with its tangents in the order of the inputs, `(t̄, s̄)`.
fn swapped(
    (y, pb): (
        Tensor,
        impl FnOnce(TensorTangent) -> (f64, TensorTangent) + 'static,
    ),
) -> (Tensor, impl FnOnce(TensorTangent) -> (TensorTangent, f64)) {
    (y, move |d| {
        let (ds, dt) = pb(d);
        (dt, ds)
    })
}

/// The operators between a tensor and an `f64`, both differentiated.
fn scalar_operators() -> Vec<Op> {
    vec![
        Op {
            name: "t + s",
            draw: |r| {
                scalar(
                    r,
                    false,
                    |t, s| AddRule::add_vjp(t, s, [true, true]),
                    |t, s, tt, ts| AddJvp::add_jvp(t, s, (tt, ts)),
                )
            },
        },
        Op {
            name: "t - s",
            draw: |r| {
                scalar(
                    r,
                    false,
                    |t, s| SubRule::sub_vjp(t, s, [true, true]),
                    |t, s, tt, ts| SubJvp::sub_jvp(t, s, (tt, ts)),
                )
            },
        },
        Op {
            name: "s - t",
            draw: |r| {
                scalar(
                    r,
                    false,
                    |t, s| swapped(SubRule::sub_vjp(s, t, [true, true])),
                    |t, s, tt, ts| SubJvp::sub_jvp(s, t, (ts, tt)),
                )
            },
        },
        Op {
            name: "t * s",
            draw: |r| {
                scalar(
                    r,
                    false,
                    |t, s| MulRule::mul_vjp(t, s, [true, true]),
                    |t, s, tt, ts| MulJvp::mul_jvp(&t, s, (tt.as_ref(), ts)),
                )
            },
        },
        Op {
            name: "t / s",
            draw: |r| {
                scalar(
                    r,
                    false,
                    |t, s| DivRule::div_vjp(t, s, [true, true]),
                    |t, s, tt, ts| DivJvp::div_jvp(t, s, (tt, ts)),
                )
            },
        },
        Op {
            name: "s / t",
            draw: |r| {
                scalar(
                    r,
                    true,
                    |t, s| swapped(DivRule::div_vjp(s, t, [true, true])),
                    |t, s, tt, ts| DivJvp::div_jvp(s, &t, (ts, tt.as_ref())),
                )
            },
        },
    ]
}
