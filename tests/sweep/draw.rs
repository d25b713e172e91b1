//! Seeded draws of the sweep: numbers, shapes (with size-1 and empty axes), broadcasting
//! partners, permutations, and the cases an op line builds from them.

use adjoint::__private::NoTangent;
use adjoint::prelude::*;

pub use super::rng::Rng;

/// The sweep's draws.
impl Rng {
    /// A size: 0 one time in 12, 1 one time in 4, else 2 or 3.
    pub fn dim(&mut self) -> usize {
        match self.below(12) {
            0 => 0,
            1..=3 => 1,
            _ => self.between(2, 3),
        }
    }

    /// A size of at least 1.
    pub fn dim1(&mut self) -> usize {
        self.between(1, 3)
    }

    /// A shape of rank `lo..=hi`.
    pub fn shape(&mut self, lo: usize, hi: usize) -> Vec<usize> {
        let rank = self.between(lo, hi);
        (0..rank).map(|_| self.dim()).collect()
    }

    /// A shape of rank `lo..=hi` without empty axes.
    pub fn shape1(&mut self, lo: usize, hi: usize) -> Vec<usize> {
        let rank = self.between(lo, hi);
        (0..rank).map(|_| self.dim1()).collect()
    }

    /// A shape that broadcasts to `shape`: leading axes dropped, some sizes set to 1.
    pub fn partner(&mut self, shape: &[usize]) -> Vec<usize> {
        let drop = self.between(0, shape.len());
        let drop = if self.chance(0.5) { 0 } else { drop };
        shape[drop..]
            .iter()
            .map(|&d| if self.chance(0.3) { 1 } else { d })
            .collect()
    }

    /// A random permutation of `0..n`.
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut p: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            p.swap(i, self.below(i + 1));
        }
        p
    }

    /// An axis of a rank-`rank` tensor (`rank > 0`), negative half the time.
    pub fn axis(&mut self, rank: usize) -> isize {
        let a = self.below(rank) as isize;
        if self.chance(0.5) {
            a - rank as isize
        } else {
            a
        }
    }

    /// Values of magnitude `[0.1, 1)` with random signs, away from every kink at 0.
    pub fn values(&mut self, shape: &[usize]) -> Tensor {
        let n = shape.iter().product();
        let v = (0..n)
            .map(|_| {
                let m = self.uniform(0.1, 1.0);
                if self.chance(0.5) { -m } else { m }
            })
            .collect();
        Tensor::from_vec::<f64>(v, shape)
    }

    /// Values in `[0.5, 2)`, for `ln`, `sqrt` and divisors.
    pub fn positive(&mut self, shape: &[usize]) -> Tensor {
        let n = shape.iter().product();
        Tensor::from_vec::<f64>((0..n).map(|_| self.uniform(0.5, 2.0)).collect(), shape)
    }

    /// `U32` ids in `0..bound` of `shape`.
    pub fn ids(&mut self, shape: &[usize], bound: usize) -> Tensor {
        let n = shape.iter().product();
        Tensor::from_vec::<u32>((0..n).map(|_| self.below(bound) as u32).collect(), shape)
    }
}

/// The tangents of a pullback's result that belong to float tensor inputs.
pub trait IntoTangents {
    fn into_tangents(self) -> Vec<TensorTangent>;
}

impl IntoTangents for TensorTangent {
    fn into_tangents(self) -> Vec<TensorTangent> {
        vec![self]
    }
}

impl IntoTangents for NoTangent {
    fn into_tangents(self) -> Vec<TensorTangent> {
        vec![]
    }
}

impl IntoTangents for Vec<TensorTangent> {
    fn into_tangents(self) -> Vec<TensorTangent> {
        self
    }
}

/// The tangent of an `f64` operand, as the rank-0 tensor the sweep gives it as.
impl IntoTangents for f64 {
    fn into_tangents(self) -> Vec<TensorTangent> {
        vec![TensorTangent::Dense(Tensor::from_vec(vec![self], &[]))]
    }
}

macro_rules! tuple_into {
    ($($n:ident)*) => {
        impl<$($n: IntoTangents),*> IntoTangents for ($($n,)*) {
            #[allow(non_snake_case)]
            fn into_tangents(self) -> Vec<TensorTangent> {
                let ($($n,)*) = self;
                let mut v = Vec::new();
                $(v.extend($n.into_tangents());)*
                v
            }
        }
    };
}
tuple_into!(A);
tuple_into!(A C);
tuple_into!(A C D);
tuple_into!(A C D E);

/// A pullback to one tangent per differentiated input.
pub type Pullback = Box<dyn FnOnce(TensorTangent) -> Vec<TensorTangent>>;
/// An op applied to its differentiated inputs (constants such as ids captured).
pub type Run = Box<dyn Fn(&[Tensor]) -> (Tensor, Pullback)>;

/// The op's forward rule at its differentiated inputs, one tangent per input (`None`: zero):
/// the value and its tangent.
pub type Jvp = Box<dyn Fn(&[Tensor], &[Option<TensorTangent>]) -> (Tensor, Option<TensorTangent>)>;

/// One drawn case of an op: its differentiated inputs (`F64`) and the op on them.
pub struct Case {
    pub inputs: Vec<Tensor>,
    pub run: Run,
    /// The op's parameters (axes, options), for the failure message.
    pub params: String,
    /// The op's forward rule; a line without one fails the sweep.
    pub jvp: Option<Jvp>,
}

impl Case {
    /// The case with its forward rule.
    pub fn with_jvp(
        mut self,
        jvp: impl Fn(&[Tensor], &[Option<TensorTangent>]) -> (Tensor, Option<TensorTangent>) + 'static,
    ) -> Self {
        self.jvp = Some(Box::new(jvp));
        self
    }
}

/// A rank-0 tangent as the `f64` tangent of a scalar operand.
pub fn host(t: &Option<TensorTangent>) -> Option<f64> {
    t.as_ref()
        .map(|t| t.dense_ref().map_or(0.0, Tensor::to_scalar))
}

/// A case of `run` at `inputs`.
pub fn case<P, R>(
    inputs: Vec<Tensor>,
    params: String,
    run: impl Fn(&[Tensor]) -> (Tensor, P) + 'static,
) -> Case
where
    P: FnOnce(TensorTangent) -> R + 'static,
    R: IntoTangents,
{
    Case {
        inputs,
        params,
        jvp: None,
        run: Box::new(move |xs| {
            let (y, pb) = run(xs);
            (y, Box::new(move |d| pb(d).into_tangents()) as Pullback)
        }),
    }
}
