//! `#[differentiable]` on single methods, not on their `impl`: called on a local value, on a
//! field of a local, on a reference parameter, on a by-value parameter, on a generic impl,
//! and from one another (a `&mut self` receiver is not differentiated yet: an error says so). Such a method's impl is unknown to the macro, so its uniform companion
//! returns a boxed pullback that does not borrow the receiver (see docs/design.md §4); until
//! that was done a call on a local or a field ended in rustc's E0597 / E0716 inside generated
//! code. Each gradient is exact and checked against central finite differences.

use crate::common::check_gradient;
use adjoint::prelude::*;

/// An affine map y = w·x + b.
#[derive(Clone, Debug, Differentiable)]
struct Lin {
    w: f64,
    b: f64,
}

impl Lin {
    /// w·x + b: ∂w = x, ∂b = 1, ∂x = w.
    #[differentiable]
    fn apply(&self, x: f64) -> f64 {
        self.w * x + self.b
    }

    /// `w` scaled by `s`, as a new map: (s·w, b).
    #[differentiable]
    fn scaled(&self, s: f64) -> Lin {
        Lin {
            w: self.w * s,
            b: self.b,
        }
    }

    /// Two applications, one method calling another: w(wx + b) + b.
    #[differentiable]
    fn twice(&self, x: f64) -> f64 {
        self.apply(self.apply(x))
    }
}

/// Two maps in a row.
#[derive(Clone, Debug, Differentiable)]
struct Net {
    a: Lin,
    c: Lin,
}

/// A generic affine map over any `Float`.
#[derive(Clone, Debug, Differentiable)]
struct GenLin<T: Float> {
    w: T,
}

impl<T: Float> GenLin<T> {
    /// w·x²: ∂w = x², ∂x = 2wx.
    #[differentiable]
    fn quad(&self, x: T) -> T {
        self.w * x * x
    }
}

/// On a local built from the parameters: (w·x + 1); ∂w = x, ∂x = w.
#[differentiable]
fn on_local(w: f64, x: f64) -> f64 {
    let l = Lin { w, b: 1.0 };
    l.apply(x)
}

/// On fields of a reference parameter, nested: c.w(a.w·x + a.b) + c.b.
#[differentiable]
fn on_fields(n: &Net, x: f64) -> f64 {
    n.c.apply(n.a.apply(x))
}

/// A method returning a struct, on a by-value parameter, then applied: (s·w)·x + b.
#[differentiable]
fn scaled_then_applied(l: Lin, s: f64, x: f64) -> f64 {
    let l = l.scaled(s);
    l.apply(x)
}

/// A method calling another on a local: w(wx + b) + b.
#[differentiable]
fn twice_on_local(w: f64, b: f64, x: f64) -> f64 {
    let l = Lin { w, b };
    l.twice(x)
}

/// A generic impl's method on a local, in `f64`: w·x².
#[differentiable]
fn generic_on_local(w: f64, x: f64) -> f64 {
    let g = GenLin { w };
    g.quad(x)
}

#[test]
fn lone_methods_on_locals_fields_and_references() {
    let (w, x) = (1.5, -0.7);
    let got = gradient(on_local_vjp(w, x));
    assert_eq!(got, (x, w));
    check_gradient("on_local", |(w, x)| on_local(w, x), (w, x), got);

    let n = Net {
        a: Lin { w: 2.0, b: 0.5 },
        c: Lin { w: -1.5, b: 0.25 },
    };
    let (dn, dx) = gradient(on_fields_vjp(&n, x));
    let inner = n.a.w * x + n.a.b;
    assert_eq!(
        (dn.a.w, dn.a.b, dn.c.w, dn.c.b),
        (n.c.w * x, n.c.w, inner, 1.0)
    );
    assert_eq!(dx, n.c.w * n.a.w);
    let net = |c: [f64; 5]| {
        let n = Net {
            a: Lin { w: c[0], b: c[1] },
            c: Lin { w: c[2], b: c[3] },
        };
        on_fields(&n, c[4])
    };
    let at = [n.a.w, n.a.b, n.c.w, n.c.b, x];
    check_gradient("on_fields", net, at, [dn.a.w, dn.a.b, dn.c.w, dn.c.b, dx]);

    let (l, s) = (Lin { w: 2.0, b: 0.5 }, 3.0);
    let (dl, ds, dx) = gradient(scaled_then_applied_vjp(l.clone(), s, x));
    assert_eq!((dl.w, dl.b, ds, dx), (s * x, 1.0, l.w * x, s * l.w));
    let f = |c: [f64; 4]| scaled_then_applied(Lin { w: c[0], b: c[1] }, c[2], c[3]);
    check_gradient(
        "scaled_then_applied",
        f,
        [l.w, l.b, s, x],
        [dl.w, dl.b, ds, dx],
    );

    let (w, b) = (1.5, 0.5);
    let got = gradient(twice_on_local_vjp(w, b, x));
    let want = (w * x + b + w * x, w + 1.0, w * w);
    crate::common::assert_close("twice_on_local", got, want);
    check_gradient(
        "twice_on_local",
        |(w, b, x)| twice_on_local(w, b, x),
        (w, b, x),
        got,
    );

    let got = gradient(generic_on_local_vjp(w, x));
    assert_eq!(got, (x * x, 2.0 * w * x));
    check_gradient(
        "generic_on_local",
        |(w, x)| generic_on_local(w, x),
        (w, x),
        got,
    );
    // The generic method in `f32` directly.
    let (value, pullback) = GenLin { w: 2.0_f32 }.quad_vjp(3.0);
    let (dg, dx) = pullback(1.0);
    assert_eq!((value, dg.w, dx), (18.0, 9.0, 12.0));
}
