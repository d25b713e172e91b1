//! Gradient checking of `adjoint::nn` layers: the pullback of `layer.forward` against central
//! differences in `f64`, with respect to every parameter (found through `Parameters`) and
//! every element of the input.

use adjoint::nn::Layer;
use adjoint::prelude::*;
use adjoint::{ParamPath, Parameters};

use super::tensors::f64_tensor;

/// `Σ forward(x) · r`: a scalar whose gradient exercises every output element.
#[differentiable]
pub fn probe<L: Layer>(layer: &L, x: &Tensor, #[no_derivative] r: &Tensor) -> Tensor {
    (layer.forward(x) * r).sum_all()
}

/// The parameters of `layer` as `(name, tensor)`.
pub fn params<L: Parameters>(layer: &L) -> Vec<(String, Tensor)> {
    let mut out = Vec::new();
    layer.visit(&mut ParamPath::new(), &mut |name, t| {
        out.push((name.to_owned(), t.clone()))
    });
    out
}

/// The gradient `grad` of `layer`, one `(name, tensor)` per parameter (zeros where symbolic).
pub fn grads<L: Parameters + Clone>(layer: &L, grad: &L::Tangent) -> Vec<(String, Tensor)> {
    let mut out = Vec::new();
    layer
        .clone()
        .visit_mut(grad, &mut ParamPath::new(), &mut |name, p, g| {
            let g = g.dense_ref().cloned().unwrap_or_else(|| p.zeros_like());
            out.push((name.to_owned(), g))
        });
    // `visit_mut` walks the parameters last first: back to `visit`'s order.
    out.reverse();
    out
}

/// `layer` with element `j` of parameter `name` moved by `delta`.
pub fn perturbed<L: Parameters + Clone>(layer: &L, name: &str, j: usize, delta: f64) -> L {
    let mut l = layer.clone();
    l.visit_each_mut(&mut ParamPath::new(), &mut |n, t| {
        if n == name {
            let mut v = t.to_vec_f64();
            v[j] += delta;
            *t = Tensor::from_vec(v, t.shape());
        }
    });
    l
}

/// Asserts that `analytic` and the central difference `fd` agree to `1e-6 · (1 + |fd|)`.
pub fn assert_close(what: &str, analytic: f64, fd: f64) {
    assert!(
        (fd - analytic).abs() < 1e-6 * (1.0 + fd.abs()),
        "{what}: analytic {analytic} vs finite differences {fd}"
    );
}

/// Checks the pullback of `layer.forward` at `x` against central differences, w.r.t. every
/// parameter and (if `wrt_x`) every element of `x`. Returns the parameter names checked.
pub fn check_layer<L: Layer + Clone>(layer: &L, x: &Tensor, wrt_x: bool) -> Vec<String> {
    check_layer_with(&|| layer.clone(), x, wrt_x)
}

/// [`check_layer`] for the layer `make()`; every evaluation uses a new `make()`, so a layer
/// with state (dropout's seed counter) is in the same state each time.
pub fn check_layer_with<L: Layer + Clone>(
    make: &dyn Fn() -> L,
    x: &Tensor,
    wrt_x: bool,
) -> Vec<String> {
    const H: f64 = 1e-6;
    let layer = &make();
    let out_shape = make().forward(x).shape().to_vec();
    let r = f64_tensor(&out_shape, 99);
    let f = |l: &L, x: &Tensor| probe(l, x, &r).to_scalar();
    let (value, (dlayer, dx)) = value_with_gradient(probe_vjp(&make(), x, &r));
    // The companion's forward pass fuses `x·Wᵀ + b` (docs/design.md §4.2.1), which reads `W`
    // transposed instead of copying it: the same sums, in another order, so the same value up
    // to the last bits.
    let plain = f(&make(), x);
    assert!(
        (value.to_scalar() - plain).abs() <= 1e-14 * plain.abs().max(1.0),
        "value {} vs the function's {plain}",
        value.to_scalar()
    );
    let mut names = Vec::new();
    for (name, g) in grads(layer, &dlayer) {
        let g = g.to_vec_f64();
        for (j, &gj) in g.iter().enumerate() {
            // A fresh `make()` each time: a clone of one layer would share its dropout counter.
            let at = |delta: f64| f(&perturbed(&make(), &name, j, delta), x);
            let fd = (at(H) - at(-H)) / (2.0 * H);
            assert_close(&format!("{name}[{j}]"), gj, fd);
        }
        names.push(name);
    }
    if wrt_x {
        let dx = dx.to_tensor_like(x).to_vec_f64();
        let values = x.to_vec_f64();
        for (j, &gj) in dx.iter().enumerate() {
            let at = |delta: f64| {
                let mut v = values.clone();
                v[j] += delta;
                f(&make(), &Tensor::from_vec(v, x.shape()))
            };
            assert_close(&format!("x[{j}]"), gj, (at(H) - at(-H)) / (2.0 * H));
        }
    }
    names
}
