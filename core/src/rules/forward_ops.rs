//! Forward-mode (JVP) rules of Rust's arithmetic operators: the traits that
//! `#[differentiable]` forward code calls as `::adjoint::__private::MulJvp::mul_jvp(a, b, (ta, tb))`.
//!
//! A rule returns the value and the tangent of the value `ẏ = J·(ȧ, ḃ)`, the directional
//! derivative along the tangents of the operands. A tangent is an `Option`: `None` is the zero
//! tangent, and the result's tangent is `None` exactly when every operand's is (so a rule never
//! allocates zeros). The tangent of an operand follows how the operand is passed: `T` for an
//! operand by value, `&T::Tangent` for an operand by reference.
//!
//! | expression | value `y` | `ẏ` |
//! |---|---|---|
//! | `a + b` | a + b | ȧ + ḃ |
//! | `a - b` | a − b | ȧ − ḃ |
//! | `a * b` | a · b | ȧ·b + a·ḃ |
//! | `a / b` | a / b | ȧ/b − y·ḃ/b |
//! | `a % b` | a − b·trunc(a/b) | ȧ − ḃ·trunc(a/b) |
//! | `-a` | −a | −ȧ |
//! | `a as T` | a (rounded to `T`) | ȧ (converted) |

macro_rules! binary_jvp_traits {
    ($($(#[$doc:meta])* $trait:ident :: $method:ident;)*) => {$(
        $(#[$doc])*
        pub trait $trait<Rhs = Self>: Sized {
            /// The type of the result (the reverse rule's `Output`).
            type Output;
            /// The tangent of the left operand as passed (`T` for `T`, `&T::Tangent` for `&T`).
            type LhsTangent;
            /// The tangent of the right operand as passed.
            type RhsTangent;
            /// The tangent of the result, `<Output as Differentiable>::Tangent`.
            type OutTangent;
            /// The result and its tangent `J·(ȧ, ḃ)`; `None` in both slots gives `None`.
            fn $method(
                self,
                rhs: Rhs,
                t: (Option<Self::LhsTangent>, Option<Self::RhsTangent>),
            ) -> (Self::Output, Option<Self::OutTangent>);
        }
    )*};
}

binary_jvp_traits! {
    /// Forward rule of `a + b`: `ẏ = ȧ + ḃ`.
    AddJvp::add_jvp;
    /// Forward rule of `a - b`: `ẏ = ȧ − ḃ`.
    SubJvp::sub_jvp;
    /// Forward rule of `a * b`: `ẏ = ȧ·b + a·ḃ`.
    MulJvp::mul_jvp;
    /// Forward rule of `a / b`: `ẏ = ȧ/b − y·ḃ/b`.
    DivJvp::div_jvp;
    /// Forward rule of `a % b` (PyTorch's `fmod` convention): `ẏ = ȧ − ḃ·trunc(a/b)`.
    RemJvp::rem_jvp;
}

/// Forward rule of unary `-a`: `ẏ = −ȧ`.
pub trait NegJvp: Sized {
    /// The type of the result.
    type Output;
    /// The tangent of the operand as passed.
    type Tangent;
    /// The tangent of the result.
    type OutTangent;
    /// The result and its tangent `−ȧ`; `None` gives `None`.
    fn neg_jvp(self, t: (Option<Self::Tangent>,)) -> (Self::Output, Option<Self::OutTangent>);
}

/// Forward rule of `a as To` between float types: the value and the tangent are both rounded
/// to `To` (`ẏ = ȧ as To`).
pub trait CastJvp<To>: Sized {
    /// The converted value and its tangent; `None` gives `None`.
    fn cast_jvp(self, t: (Option<Self>,)) -> (To, Option<To>);
}
