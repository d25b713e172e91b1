//! The op enums of the elementwise and reduction primitives, with the scalar meaning of each
//! op as a generic function that backends can use directly (CPU) or as a test oracle (CUDA).
//!
//! Each family is one list ([`op_family!`]): the enum, its `EVERY`, the ops' names, codes and
//! parameters all come from it, and so do the CUDA kernels' op codes.

pub use num_traits::Float as Real;

/// `√(2/π)`, used by the tanh form of GELU.
const GELU_C: f64 = 0.797_884_560_802_865_4;
/// The cubic coefficient of the tanh form of GELU.
const GELU_A: f64 = 0.044_715;

/// Declares an op family from its one list: the enum, and for it
///
/// * `EVERY`: every op once, the parameterized ones with the sample parameters of the list;
/// * `name()`: the variant's name (`"LeakyRelu"`), which the CUDA kernels prefix (`U_LeakyRelu`);
/// * `code()`: the op's position in the list, the code a backend passes to its kernels
///   (the CUDA backend generates its kernels' `#define`s from `EVERY`, `name` and `code`);
/// * `params()`: the op's parameters in order, zero-padded to two.
///
/// An entry is `Variant` or `Variant(name: f64 = sample, ..)`: a parameter, its name in
/// `params`, and the value `EVERY` gives it. A new op is one line here; the exhaustive
/// matches of `eval` and of every backend's kernels then make a missing case a compile error.
macro_rules! op_family {
    (
        $(#[$meta:meta])*
        pub enum $family:ident {
            $(
                $(#[$op_meta:meta])*
                $op:ident $(( $($param:ident: $ty:ty = $sample:expr),+ ))?,
            )*
        }
    ) => {
        $(#[$meta])*
        pub enum $family {
            $(
                $(#[$op_meta])*
                $op $(( $($ty),+ ))?,
            )*
        }

        impl $family {
            /// Every op once, in the list's order ([`code`](Self::code)), the parameterized ones
            /// with sample parameters: what tests that cover all ops iterate.
            pub const EVERY: [$family; [$(stringify!($op)),*].len()] =
                [$($family::$op $(( $($sample),+ ))?),*];

            /// The op's name: its variant's, without parameters (`"LeakyRelu"`).
            pub const fn name(self) -> &'static str {
                match self {
                    $($family::$op { .. } => stringify!($op),)*
                }
            }

            /// The op's position in [`EVERY`](Self::EVERY): a code that identifies the op
            /// without its parameters (the CUDA kernels' op codes).
            pub const fn code(self) -> u32 {
                #[allow(dead_code, reason = "only the discriminants are read")]
                enum Code {
                    $($op,)*
                }
                match self {
                    $($family::$op { .. } => Code::$op as u32,)*
                }
            }

            /// The op's parameters in order, zero-padded to two (`[lo, hi]` for a clamp,
            /// `[0, 0]` for an op without any).
            pub fn params(self) -> [f64; 2] {
                match self {
                    $($family::$op $(( $($param),+ ))? => padded([$($($param),+)?]),)*
                }
            }
        }
    };
}

/// `given` followed by zeros, two values in all.
fn padded<const N: usize>(given: [f64; N]) -> [f64; 2] {
    const { assert!(N <= 2, "an op takes at most two parameters") };
    let mut out = [0.0; 2];
    out[..N].copy_from_slice(&given);
    out
}

op_family! {
    /// An elementwise function of one tensor.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub enum UnaryOp {
        /// `−x`.
        Neg,
        /// `eˣ`.
        Exp,
        /// `ln x`.
        Ln,
        /// `√x`.
        Sqrt,
        /// `1/√x`.
        Rsqrt,
        /// `1/x`.
        Recip,
        /// `|x|`.
        Abs,
        /// `sign(x)` with `sign(0) = 0`.
        Sign,
        /// `tanh x`.
        Tanh,
        /// `1/(1 + e⁻ˣ)`.
        Sigmoid,
        /// `max(x, 0)`.
        Relu,
        /// `x` if `x > 0` else `α·x`.
        LeakyRelu(slope: f64 = 0.01),
        /// `x/2 · (1 + tanh(√(2/π)(x + 0.044715x³)))` (the tanh form).
        Gelu,
        /// `x·Φ(x) = x/2 · (1 + erf(x/√2))` (the exact form).
        GeluErf,
        /// `x · sigmoid(x)`.
        Silu,
        /// `sin x`.
        Sin,
        /// `cos x`.
        Cos,
        /// `xᵖ` for a constant `p`.
        Powf(p: f64 = 2.5),
        /// `x + c`.
        AddScalar(c: f64 = 0.5),
        /// `c · x`.
        MulScalar(c: f64 = -3.0),
        /// `c / x`.
        DivScalarBy(c: f64 = 2.0),
        /// `min(max(x, lo), hi)`.
        Clamp(lo: f64 = -0.5, hi: f64 = 0.25),
    }
}

op_family! {
    /// An elementwise function of two tensors (broadcast to a common shape).
    ///
    /// Besides arithmetic it holds the fused backward kernels of the unary activations
    /// (`*Grad(x or y, ȳ)`), so that a pullback is one pass over memory.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub enum BinaryOp {
        /// `a + b`.
        Add,
        /// `a − b`.
        Sub,
        /// `a · b`.
        Mul,
        /// `a / b`.
        Div,
        /// `max(a, b)`.
        Max,
        /// `min(a, b)`.
        Min,
        /// `aᵇ`.
        Pow,
        /// `(a == b) as float`.
        Eq,
        /// `(a < b) as float`.
        Lt,
        /// `(a <= b) as float`.
        Le,
        /// `(a > b) as float`.
        Gt,
        /// `(a >= b) as float`.
        Ge,
        /// `ȳ · (x > 0 ? 1 : α)` with `a = x`, `b = ȳ`.
        LeakyReluGrad(slope: f64 = 0.2),
        /// `ȳ · (1 − y²)` with `a = y = tanh x`, `b = ȳ`.
        TanhGrad,
        /// `ȳ · y(1 − y)` with `a = y = sigmoid x`, `b = ȳ`.
        SigmoidGrad,
        /// `ȳ · gelu'(x)` with `a = x`, `b = ȳ`.
        GeluGrad,
        /// `ȳ · (Φ(x) + x·φ(x))` with `a = x`, `b = ȳ` (exact GELU; `φ` the normal density).
        GeluErfGrad,
        /// `ȳ · σ(x)(1 + x(1 − σ(x)))` with `a = x`, `b = ȳ`.
        SiluGrad,
        /// `ȳ · 𝟙(lo ≤ x ≤ hi)` with `a = x`, `b = ȳ`.
        ClampGrad(lo: f64 = -0.5, hi: f64 = 0.5),
    }
}

op_family! {
    /// A reduction over some axes.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum ReduceOp {
        /// `Σ x`.
        Sum,
        /// `max x` (NaN if any element is NaN).
        Max,
        /// `min x` (NaN if any element is NaN).
        Min,
    }
}

fn c<T: Real>(v: f64) -> T {
    T::from(v).expect("constant fits the float type")
}

fn sigmoid<T: Real>(x: T) -> T {
    T::one() / (T::one() + (-x).exp())
}

fn flag<T: Real>(b: bool) -> T {
    if b { T::one() } else { T::zero() }
}

impl UnaryOp {
    /// The op applied to one value.
    #[inline(always)]
    pub fn eval<T: Real>(self, x: T) -> T {
        match self {
            UnaryOp::Neg => -x,
            UnaryOp::Exp => x.exp(),
            UnaryOp::Ln => x.ln(),
            UnaryOp::Sqrt => x.sqrt(),
            UnaryOp::Rsqrt => x.sqrt().recip(),
            UnaryOp::Recip => x.recip(),
            UnaryOp::Abs => x.abs(),
            UnaryOp::Sign => {
                if x == T::zero() || x.is_nan() {
                    x
                } else {
                    x.signum()
                }
            }
            UnaryOp::Tanh => x.tanh(),
            UnaryOp::Sigmoid => sigmoid(x),
            UnaryOp::Relu => {
                if x > T::zero() {
                    x
                } else {
                    T::zero()
                }
            }
            UnaryOp::LeakyRelu(a) => {
                if x > T::zero() {
                    x
                } else {
                    x * c(a)
                }
            }
            UnaryOp::Gelu => {
                let u = c::<T>(GELU_C) * (x + c::<T>(GELU_A) * x * x * x);
                c::<T>(0.5) * x * (T::one() + u.tanh())
            }
            UnaryOp::GeluErf => gelu_erf(x),
            UnaryOp::Silu => x * sigmoid(x),
            UnaryOp::Sin => x.sin(),
            UnaryOp::Cos => x.cos(),
            UnaryOp::Powf(p) => x.powf(c(p)),
            UnaryOp::AddScalar(s) => x + c(s),
            UnaryOp::MulScalar(s) => x * c(s),
            UnaryOp::DivScalarBy(s) => c::<T>(s) / x,
            UnaryOp::Clamp(lo, hi) => x.max(c(lo)).min(c(hi)),
        }
    }
}

impl BinaryOp {
    /// The op applied to one pair of values.
    #[inline(always)]
    pub fn eval<T: Real>(self, a: T, b: T) -> T {
        match self {
            BinaryOp::Add => a + b,
            BinaryOp::Sub => a - b,
            BinaryOp::Mul => a * b,
            BinaryOp::Div => a / b,
            BinaryOp::Max => a.max(b),
            BinaryOp::Min => a.min(b),
            BinaryOp::Pow => a.powf(b),
            BinaryOp::Eq => flag(a == b),
            BinaryOp::Lt => flag(a < b),
            BinaryOp::Le => flag(a <= b),
            BinaryOp::Gt => flag(a > b),
            BinaryOp::Ge => flag(a >= b),
            BinaryOp::LeakyReluGrad(s) => {
                if a > T::zero() {
                    b
                } else {
                    b * c(s)
                }
            }
            BinaryOp::TanhGrad => b * (T::one() - a * a),
            BinaryOp::SigmoidGrad => b * a * (T::one() - a),
            BinaryOp::GeluGrad => b * gelu_derivative(a),
            BinaryOp::GeluErfGrad => b * gelu_erf_derivative(a),
            BinaryOp::SiluGrad => {
                let s = sigmoid(a);
                b * s * (T::one() + a * (T::one() - s))
            }
            BinaryOp::ClampGrad(lo, hi) => {
                if a >= c(lo) && a <= c(hi) {
                    b
                } else {
                    T::zero()
                }
            }
        }
    }
}

/// `d/dx` of the tanh form of GELU.
fn gelu_derivative<T: Real>(x: T) -> T {
    let half = c::<T>(0.5);
    let u = c::<T>(GELU_C) * (x + c::<T>(GELU_A) * x * x * x);
    let t = u.tanh();
    let du = c::<T>(GELU_C) * (T::one() + c::<T>(3.0 * GELU_A) * x * x);
    half * (T::one() + t) + half * x * (T::one() - t * t) * du
}

/// `erf x`, through libm's `f64` `erf` (for `f32`, rounded once from the `f64` value).
fn erf<T: Real>(x: T) -> T {
    c(libm::erf(x.to_f64().expect("a float converts to f64")))
}

/// `x·Φ(x) = x/2·(1 + erf(x/√2))`, the exact GELU.
fn gelu_erf<T: Real>(x: T) -> T {
    c::<T>(0.5) * x * (T::one() + erf(x * c(std::f64::consts::FRAC_1_SQRT_2)))
}

/// `d/dx` of the exact GELU: `Φ(x) + x·φ(x)` with `φ(x) = e^(−x²/2)/√(2π)`.
fn gelu_erf_derivative<T: Real>(x: T) -> T {
    let cdf = c::<T>(0.5) * (T::one() + erf(x * c(std::f64::consts::FRAC_1_SQRT_2)));
    let density = (c::<T>(-0.5) * x * x).exp()
        * c(0.5 * std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2);
    cdf + x * density
}

impl ReduceOp {
    /// The identity of the reduction (`0`, `−∞`, `+∞`).
    pub fn identity<T: Real>(self) -> T {
        match self {
            ReduceOp::Sum => T::zero(),
            ReduceOp::Max => T::neg_infinity(),
            ReduceOp::Min => T::infinity(),
        }
    }

    /// Combines an accumulator with one value (NaN propagates through `Max`/`Min`).
    #[inline(always)]
    pub fn combine<T: Real>(self, acc: T, x: T) -> T {
        match self {
            ReduceOp::Sum => acc + x,
            ReduceOp::Max => {
                if x > acc || x.is_nan() {
                    x
                } else {
                    acc
                }
            }
            ReduceOp::Min => {
                if x < acc || x.is_nan() {
                    x
                } else {
                    acc
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{BinaryOp, ReduceOp, UnaryOp};

    /// `EVERY` holds each op once, at its code, under a name of its own.
    #[test]
    fn every_lists_each_op_once_at_its_code() {
        fn check<T: Copy>(every: &[T], code: fn(T) -> u32, name: fn(T) -> &'static str) {
            let mut names: Vec<_> = every.iter().map(|&op| name(op)).collect();
            for (i, &op) in every.iter().enumerate() {
                assert_eq!(code(op) as usize, i, "{}", name(op));
            }
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), every.len(), "an op is listed twice");
        }
        check(&UnaryOp::EVERY, UnaryOp::code, UnaryOp::name);
        check(&BinaryOp::EVERY, BinaryOp::code, BinaryOp::name);
        check(&ReduceOp::EVERY, ReduceOp::code, ReduceOp::name);
        assert_eq!(
            (
                UnaryOp::EVERY.len(),
                BinaryOp::EVERY.len(),
                ReduceOp::EVERY.len()
            ),
            (22, 19, 3)
        );
    }

    /// The name and code ignore the parameters; `params` gives them in order, then zeros.
    #[test]
    fn params_are_the_fields_in_order() {
        assert_eq!(UnaryOp::Clamp(-1.0, 2.0).params(), [-1.0, 2.0]);
        assert_eq!(UnaryOp::LeakyRelu(0.3).params(), [0.3, 0.0]);
        assert_eq!(UnaryOp::Exp.params(), [0.0, 0.0]);
        assert_eq!(BinaryOp::ClampGrad(1.0, 2.0).params(), [1.0, 2.0]);
        assert_eq!(UnaryOp::LeakyRelu(0.3).name(), "LeakyRelu");
        assert_eq!(
            (
                UnaryOp::LeakyRelu(0.3).code(),
                UnaryOp::LeakyRelu(0.9).code()
            ),
            (11, 11)
        );
        assert_eq!(
            (BinaryOp::Add.code(), BinaryOp::ClampGrad(0.0, 1.0).code()),
            (0, 18)
        );
        assert_eq!(ReduceOp::Min.code(), 2);
    }
}
