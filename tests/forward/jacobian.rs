//! `jvp`, `jacfwd`, `jacrev`, `jacobian` and `check_jvp` on vector functions: forward and
//! reverse Jacobians equal each other, the hand-computed Jacobian and central finite
//! differences; bad input is a typed error; `check_jvp` catches a wrong jvp.

use adjoint::check::Checkable;
use adjoint::prelude::*;
use std::cell::Cell;

/// The Jacobian of `f` at `x` by central differences (step 1e-6), column by column.
fn fd_jacobian<X: Checkable, Y: Checkable>(f: impl Fn(X) -> Y, x: &X) -> Jacobian {
    let h = 1e-6;
    let mut flat = Vec::new();
    x.flatten(&mut flat);
    let mut columns = Vec::new();
    let mut rows = 0;
    for j in 0..flat.len() {
        let at = |sign: f64| {
            let mut moved = flat.clone();
            moved[j] += sign * h;
            let mut out = Vec::new();
            f(x.unflatten(&mut moved.iter())).flatten(&mut out);
            out
        };
        let (plus, minus) = (at(1.0), at(-1.0));
        rows = plus.len();
        columns.push(
            plus.iter()
                .zip(&minus)
                .map(|(p, m)| (p - m) / (2.0 * h))
                .collect::<Vec<_>>(),
        );
    }
    let data = (0..rows)
        .flat_map(|i| columns.iter().map(move |c| c[i]))
        .collect();
    Jacobian::from_row_major(rows, flat.len(), data).unwrap()
}

/// `jacfwd`, `jacrev` and `jacobian` agree with `exact` to 1e-13 and with finite differences of
/// `f` to 1e-7 (relative to the largest entry).
fn assert_jacobians(exact: &Jacobian, fwd: Jacobian, rev: Jacobian, auto: Jacobian, fd: Jacobian) {
    let scale = 1.0 + exact.as_slice().iter().fold(0.0_f64, |m, v| m.max(v.abs()));
    for (name, j, tol) in [
        ("jacfwd", &fwd, 1e-13),
        ("jacrev", &rev, 1e-13),
        ("jacobian", &auto, 1e-13),
        ("fd", &fd, 1e-7),
    ] {
        let d = exact.max_abs_diff(j).unwrap_or_else(|| {
            panic!(
                "{name}: shape {}×{} vs {}×{}",
                j.rows(),
                j.cols(),
                exact.rows(),
                exact.cols()
            )
        });
        assert!(
            d <= tol * scale,
            "{name} differs by {d:e}:\n{j}\nexact:\n{exact}"
        );
    }
}

/// Polar to Cartesian coordinates.
#[differentiable(forward)]
pub(crate) fn polar(r: f64, theta: f64) -> (f64, f64) {
    (r * theta.cos(), r * theta.sin())
}

#[test]
fn polar_to_cartesian() {
    let x = (2.0, 0.7_f64);
    let (r, t) = x;
    let exact =
        Jacobian::from_row_major(2, 2, vec![t.cos(), -r * t.sin(), t.sin(), r * t.cos()]).unwrap();
    let fwd = jacfwd(|(r, t), (dr, dt)| polar_jvp(r, t, dr, dt), &x).unwrap();
    let rev = jacrev(|(r, t)| polar_vjp(r, t), &x).unwrap();
    let auto = jacobian(
        |(r, t), (dr, dt)| polar_jvp(r, t, dr, dt),
        |(r, t)| polar_vjp(r, t),
        &x,
    )
    .unwrap();
    let fd = fd_jacobian(|(r, t)| polar(r, t), &x);
    assert_jacobians(&exact, fwd, rev, auto, fd);
}

/// A 3 → 2 map through a loop: (Σ xᵢ², Π xᵢ).
#[allow(clippy::needless_range_loop)] // `for x in slice` loses its tangent in forward mode: see below
#[differentiable(forward)]
pub(crate) fn sum_and_product(x: &[f64]) -> [f64; 2] {
    let mut s = 0.0;
    let mut p = 1.0;
    for i in 0..x.len() {
        s += x[i] * x[i];
        p *= x[i];
    }
    [s, p]
}

#[test]
fn a_three_to_two_map_with_a_loop() {
    let x = vec![1.5, -0.5, 2.0];
    let p = 1.5 * -0.5 * 2.0;
    let exact =
        Jacobian::from_row_major(2, 3, vec![3.0, -1.0, 4.0, p / 1.5, p / -0.5, p / 2.0]).unwrap();
    let jvp_f = |x: Vec<f64>, dx: Vec<f64>| sum_and_product_jvp(&x, &dx);
    let vjp_f = |x: &Vec<f64>, w| sum_and_product_vjp(x).1(w);
    let value = |x: &Vec<f64>| sum_and_product(x);
    let fwd = jacfwd(jvp_f, &x).unwrap();
    let rev = jacrev_by(value, vjp_f, &x).unwrap();
    let auto = jacobian_by(jvp_f, vjp_f, &x).unwrap();
    let fd = fd_jacobian(|x: Vec<f64>| sum_and_product(&x), &x);
    assert_jacobians(&exact, fwd, rev, auto, fd);
}

/// softmax(x)ᵢ = e^{xᵢ} / Σⱼ e^{xⱼ}, written with element writes into a `Vec`.
#[allow(clippy::needless_range_loop)] // writes through an index are the case under test
#[differentiable(forward)]
pub(crate) fn softmax(x: &[f64]) -> Vec<f64> {
    let mut e = vec![0.0; x.len()];
    let mut total = 0.0;
    for i in 0..x.len() {
        e[i] = x[i].exp();
        total += e[i];
    }
    for i in 0..x.len() {
        e[i] /= total;
    }
    e
}

#[test]
fn softmax_over_a_vec() {
    let x = vec![0.5, -1.0, 2.0, 0.0];
    let s = softmax(&x);
    // ∂sᵢ/∂xⱼ = sᵢ (δᵢⱼ − sⱼ).
    let data = (0..16)
        .map(|k| {
            let (i, j) = (k / 4, k % 4);
            s[i] * (f64::from(u8::from(i == j)) - s[j])
        })
        .collect();
    let exact = Jacobian::from_row_major(4, 4, data).unwrap();
    let jvp_f = |x: Vec<f64>, dx: Vec<f64>| softmax_jvp(&x, &dx);
    let vjp_f = |x: &Vec<f64>, w| softmax_vjp(x).1(w);
    let fwd = jacfwd(jvp_f, &x).unwrap();
    let rev = jacrev_by(|x: &Vec<f64>| softmax(x), vjp_f, &x).unwrap();
    let auto = jacobian_by(jvp_f, vjp_f, &x).unwrap();
    let fd = fd_jacobian(|x: Vec<f64>| softmax(&x), &x);
    assert_jacobians(&exact, fwd, rev, auto, fd);
    // Each row of a softmax Jacobian sums to 0 (Σᵢ sᵢ = 1 everywhere).
    let j = jacfwd(jvp_f, &x).unwrap();
    for i in 0..4 {
        assert!(j.row(i).unwrap().iter().sum::<f64>().abs() < 1e-15);
    }
}

/// A tensor layer: tanh(x·w), differentiated in both `w` (2×2) and `x` (3×2).
#[differentiable(forward)]
pub(crate) fn layer(w: Tensor, x: Tensor) -> Tensor {
    x.matmul(&w).tanh()
}

#[test]
fn a_tensor_layer() {
    let w = Tensor::from_vec(vec![0.5_f64, -1.0, 2.0, 0.25], &[2, 2]);
    let x = Tensor::from_vec(vec![1.0_f64, -0.5, 0.75, 0.1, 0.3, -2.0], &[3, 2]);
    let (wv, xv) = (w.to_vec_f64(), x.to_vec_f64());
    let y = layer(w.clone(), x.clone()).to_vec_f64();
    // y[i,k] = tanh(Σⱼ x[i,j] w[j,k]): ∂/∂w[j,k] = (1 − y²) x[i,j], ∂/∂x[i,j] = (1 − y²) w[j,k].
    let mut data = vec![0.0; 6 * 10];
    for i in 0..3 {
        for k in 0..2 {
            let row = i * 2 + k;
            let d = 1.0 - y[row] * y[row];
            for j in 0..2 {
                data[row * 10 + j * 2 + k] = d * xv[i * 2 + j];
                data[row * 10 + 4 + i * 2 + j] = d * wv[j * 2 + k];
            }
        }
    }
    let exact = Jacobian::from_row_major(6, 10, data).unwrap();
    let inputs = (w, x);
    let jvp_f = |(w, x), (dw, dx)| layer_jvp(w, x, dw, dx);
    let vjp_f = |(w, x)| layer_vjp(w, x);
    let fwd = jacfwd(jvp_f, &inputs).unwrap();
    let rev = jacrev(vjp_f, &inputs).unwrap();
    let auto = jacobian(jvp_f, vjp_f, &inputs).unwrap();
    let fd = fd_jacobian(|(w, x)| layer(w, x), &inputs);
    assert_jacobians(&exact, fwd, rev, auto, fd);
}

/// A 2 → 3 map with a branch.
#[differentiable(forward)]
pub(crate) fn lifted(x: f64, y: f64) -> [f64; 3] {
    let a = if x > y { x - y } else { (y - x) * 2.0 };
    [a * y, x.exp() * y, (x * y).sin()]
}

#[test]
fn a_two_to_three_map_with_a_branch_on_both_sides() {
    for (x, y) in [(1.5, 0.5_f64), (-0.5, 1.0_f64)] {
        let (a, da) = if x > y {
            (x - y, [1.0, -1.0])
        } else {
            ((y - x) * 2.0, [-2.0, 2.0])
        };
        let c = (x * y).cos();
        let exact = Jacobian::from_row_major(
            3,
            2,
            vec![da[0] * y, da[1] * y + a, x.exp() * y, x.exp(), c * y, c * x],
        )
        .unwrap();
        let jvp_f = |(x, y), (dx, dy)| lifted_jvp(x, y, dx, dy);
        let vjp_f = |(x, y)| lifted_vjp(x, y);
        let fwd = jacfwd(jvp_f, &(x, y)).unwrap();
        let rev = jacrev(vjp_f, &(x, y)).unwrap();
        let auto = jacobian(jvp_f, vjp_f, &(x, y)).unwrap();
        let fd = fd_jacobian(|(x, y)| lifted(x, y), &(x, y));
        assert_jacobians(&exact, fwd, rev, auto, fd);
    }
}

/// The 1 × n Jacobian of a scalar function is its gradient.
#[differentiable(forward)]
fn rosenbrock(x: Vec<f64>) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + 100.0 * b * b;
    }
    s
}

#[test]
fn the_jacobian_of_a_scalar_function_is_its_gradient() {
    let x = vec![0.5, -0.25, 1.5, 1.0];
    let mut g = vec![0.0; 4];
    for i in 0..3 {
        let b = x[i + 1] - x[i] * x[i];
        g[i] += -2.0 * (1.0 - x[i]) - 400.0 * b * x[i];
        g[i + 1] += 200.0 * b;
    }
    let exact = Jacobian::from_row_major(1, 4, g.clone()).unwrap();
    let fwd = jacfwd(rosenbrock_jvp, &x).unwrap();
    let rev = jacrev(rosenbrock_vjp, &x).unwrap();
    let auto = jacobian(rosenbrock_jvp, rosenbrock_vjp, &x).unwrap();
    let fd = fd_jacobian(rosenbrock, &x);
    let grad: Vec<f64> = gradient(rosenbrock_vjp(x.clone()));
    assert_eq!(rev.as_slice(), &grad[..]);
    assert_jacobians(&exact, fwd, rev, auto, fd);
}

/// Counts the calls of a jvp and a vjp closure.
#[derive(Default)]
struct Calls {
    jvp: Cell<usize>,
    vjp: Cell<usize>,
}

#[test]
fn jacobian_picks_forward_for_few_inputs_and_reverse_for_few_outputs() {
    let calls = Calls::default();
    let jvp_f = |(x, y), (dx, dy)| {
        calls.jvp.set(calls.jvp.get() + 1);
        lifted_jvp(x, y, dx, dy)
    };
    let vjp_f = |(x, y)| {
        calls.vjp.set(calls.vjp.get() + 1);
        lifted_vjp(x, y)
    };
    // 2 inputs ≤ 3 outputs: two jvps, no pullback.
    jacobian(jvp_f, vjp_f, &(0.5, 1.5)).unwrap();
    assert_eq!((calls.jvp.get(), calls.vjp.get()), (2, 0));
    let calls = Calls::default();
    let jvp_f = |x: Vec<f64>, dx: Vec<f64>| {
        calls.jvp.set(calls.jvp.get() + 1);
        sum_and_product_jvp(&x, &dx)
    };
    let vjp_f = |x: &Vec<f64>, w| {
        calls.vjp.set(calls.vjp.get() + 1);
        sum_and_product_vjp(x).1(w)
    };
    // 3 inputs > 2 outputs: one jvp to learn the size, then two pullbacks.
    jacobian_by(jvp_f, vjp_f, &vec![1.0, 2.0, 3.0]).unwrap();
    assert_eq!((calls.jvp.get(), calls.vjp.get()), (1, 2));
}

/// ‖v‖² over a slice.
#[allow(clippy::needless_range_loop)] // `for x in slice` loses its tangent in forward mode: see below
#[differentiable(forward)]
fn norm2(v: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..v.len() {
        s += v[i] * v[i];
    }
    s
}

#[test]
fn jvp_is_the_directional_derivative_and_rejects_bad_seeds() {
    let f = |v: Vec<f64>, dv: Vec<f64>| norm2_jvp(&v, &dv);
    let (value, t) = jvp(f, vec![1.0, 2.0], vec![0.5, -1.0]).unwrap();
    assert_eq!((value, t), (5.0, 2.0 * 0.5 - 4.0));
    // A shorter Vec tangent stands for zeros beyond its end (the empty one is the zero).
    assert_eq!(jvp(f, vec![1.0, 2.0], vec![]).unwrap(), (5.0, 0.0));
    assert_eq!(jvp(f, vec![1.0, 2.0], vec![1.0]).unwrap(), (5.0, 2.0));
    let err = jvp(f, vec![1.0, 2.0], vec![1.0, 0.0, 0.0]).unwrap_err();
    let JacobianError::SeedShape { message } = &err else {
        panic!("{err:?}")
    };
    assert!(
        message.contains("length 3") && message.contains("length 2"),
        "{message}"
    );
    assert!(
        err.to_string()
            .starts_with("jvp: the tangent does not fit the input"),
        "{err}"
    );
    let err = jvp(f, vec![1.0, 2.0], vec![0.0, f64::NAN]).unwrap_err();
    assert!(
        matches!(err, JacobianError::NonFiniteSeed { element: 1, value } if value.is_nan()),
        "{err:?}"
    );
}

#[test]
fn non_finite_inputs_are_refused_by_every_helper() {
    let x = vec![1.0, f64::INFINITY, 0.0];
    let jvp_f = |x: Vec<f64>, dx: Vec<f64>| sum_and_product_jvp(&x, &dx);
    let vjp_f = |x: &Vec<f64>, w| sum_and_product_vjp(x).1(w);
    let want = JacobianError::NonFiniteInput {
        element: 1,
        value: f64::INFINITY,
    };
    assert_eq!(jacfwd(jvp_f, &x).unwrap_err(), want);
    assert_eq!(
        jacrev_by(|x: &Vec<f64>| sum_and_product(x), vjp_f, &x).unwrap_err(),
        want
    );
    assert_eq!(jacobian_by(jvp_f, vjp_f, &x).unwrap_err(), want);
    assert_eq!(jvp(jvp_f, x, vec![]).unwrap_err(), want);
    let nan = (f64::NAN, 1.0);
    let err = jacrev(|(r, t)| polar_vjp(r, t), &nan).unwrap_err();
    assert!(
        matches!(err, JacobianError::NonFiniteInput { element: 0, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("input element 0 is NaN"), "{err}");
}

/// sin over a tensor, whose hand-written jvp and pullback return the transpose of the right
/// tangent (the wrong shape for a non-square tensor).
fn transposed_sin_jvp(x: Tensor, dx: TensorTangent) -> (Tensor, TensorTangent) {
    let t = (&dx.unwrap() * &x.cos()).t();
    (x.sin(), TensorTangent::Dense(t))
}

#[test]
fn a_tangent_of_the_wrong_shape_is_a_typed_error() {
    let x = Tensor::from_vec(vec![0.5_f64, -1.0, 2.0, 0.1, 0.0, -0.3], &[2, 3]);
    let err = jacfwd(transposed_sin_jvp, &x).unwrap_err();
    let JacobianError::TangentShape { message } = &err else {
        panic!("{err:?}")
    };
    assert!(
        message.contains("jvp's tangent")
            && message.contains("[3, 2]")
            && message.contains("[2, 3]"),
        "{message}"
    );
    let transposed_pullback = |x: Tensor| {
        let y = x.sin();
        (y, move |w: TensorTangent| {
            TensorTangent::Dense(w.unwrap().t())
        })
    };
    let err = jacrev(transposed_pullback, &x).unwrap_err();
    let JacobianError::TangentShape { message } = &err else {
        panic!("{err:?}")
    };
    assert!(message.contains("pullback's tangent"), "{message}");
    // The seed given to jvp must have the input's shape.
    let seed = TensorTangent::Dense(Tensor::from_vec(vec![1.0_f64; 6], &[3, 2]));
    let err = jvp(transposed_sin_jvp, x, seed).unwrap_err();
    assert!(matches!(err, JacobianError::SeedShape { .. }), "{err:?}");
}

#[test]
fn an_output_that_changes_size_between_calls_is_a_typed_error() {
    let calls = Cell::new(0);
    let growing = |x: Vec<f64>, dx: Vec<f64>| {
        calls.set(calls.get() + 1);
        (vec![x[0]; calls.get()], vec![dx[0]; calls.get()])
    };
    let err = jacfwd(growing, &vec![1.0, 2.0]).unwrap_err();
    assert_eq!(err, JacobianError::OutputChanged { first: 1, now: 2 });
    let calls = Cell::new(0);
    let growing = |x: Vec<f64>| {
        calls.set(calls.get() + 1);
        (vec![x[0] + x[1]; calls.get() + 1], move |w: Vec<f64>| {
            vec![w.iter().sum(); 2]
        })
    };
    let err = jacrev(growing, &vec![1.0, 2.0]).unwrap_err();
    assert_eq!(err, JacobianError::OutputChanged { first: 2, now: 3 });
}

#[test]
fn empty_inputs_and_outputs_give_empty_jacobians() {
    let f = |v: Vec<f64>, dv: Vec<f64>| norm2_jvp(&v, &dv);
    let j = jacfwd(f, &vec![]).unwrap();
    assert_eq!((j.rows(), j.cols(), j.as_slice()), (1, 0, &[][..]));
    let nothing = |x: Vec<f64>| (Vec::<f64>::new(), move |_w: Vec<f64>| vec![0.0; x.len()]);
    let j = jacrev(nothing, &vec![1.0, 2.0]).unwrap();
    assert_eq!((j.rows(), j.cols()), (0, 2));
}

#[test]
fn the_matrix_reads_and_prints_row_major() {
    let j = Jacobian::from_row_major(2, 3, vec![1.0, 2.5, -3.0, 4.0, 0.0, 6.0]).unwrap();
    assert_eq!((j[(0, 1)], j[(1, 2)]), (2.5, 6.0));
    assert_eq!(
        (j.get(1, 0), j.get(2, 0), j.get(0, 3)),
        (Some(4.0), None, None)
    );
    assert_eq!(j.row(1), Some(&[4.0, 0.0, 6.0][..]));
    assert_eq!((j.row(2), j.column(1)), (None, Some(vec![2.5, 0.0])));
    let t = j.transpose();
    assert_eq!(
        (t.rows(), t.cols(), t.as_slice()),
        (3, 2, &[1.0, 4.0, 2.5, 0.0, -3.0, 6.0][..])
    );
    assert_eq!(j.max_abs_diff(&t), None);
    assert_eq!(j.max_abs_diff(&t.transpose()), Some(0.0));
    assert_eq!(j.to_string(), "[[1, 2.5, -3],\n [4, 0, 6]]");
    assert_eq!(format!("{j:.1}"), "[[1.0, 2.5, -3.0],\n [4.0, 0.0, 6.0]]");
    assert_eq!(
        Jacobian::from_row_major(2, 2, vec![1.0; 3]).unwrap_err(),
        JacobianError::DataLength {
            rows: 2,
            cols: 2,
            len: 3
        }
    );
}

#[test]
#[should_panic(expected = "Jacobian index (2, 0) outside its 2×3 shape")]
fn indexing_outside_the_matrix_panics_with_its_shape() {
    let j = Jacobian::from_row_major(2, 3, vec![0.0; 6]).unwrap();
    let _ = j[(2, 0)];
}

/// ‖v‖² over a slice, iterated with `for x in v`.
#[differentiable(forward)]
fn norm2_by_iteration(v: &[f64]) -> f64 {
    let mut s = 0.0;
    for x in v {
        s += x * x;
    }
    s
}

/// Known forward-mode bug: iterating a `&[f64]` parameter with `for x in v` drops its tangent
/// (the jvp is 0 while the gradient is right); `check_jvp` catches it.
#[test]

fn iteration_over_a_slice_parameter_carries_its_tangent() {
    let f_jvp = |v: Vec<f64>, dv: Vec<f64>| norm2_by_iteration_jvp(&v, &dv);
    let report = adjoint::check::check_jvp(
        f_jvp,
        |v: Vec<f64>| norm2_by_iteration(&v),
        &vec![1.0, 2.0],
        &vec![0.5, -1.0],
    );
    assert!(report.is_ok(), "{}", report.unwrap_err());
}
