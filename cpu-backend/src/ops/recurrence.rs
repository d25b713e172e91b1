//! [`Backend::recurrence`](adjoint_backend::Backend::recurrence): the Elman recurrence of a
//! [`RecurrenceSpec`] as one loop over one buffer of states, and its backward pass.
//!
//! Each step runs the kernels the fused op runs (the same small products, bias additions and
//! activation loops, so the same values), into its slice of the states' buffer: no buffer,
//! handle or record per step. The backward pass keeps every step's `z̄ₜ` in one buffer, so
//! that the weights' tangents are one product each over all the steps (`W̄ = Hᵀ·Z̄` with `H`
//! the states `h₀ … h_{T−1}` as the rows of one matrix) instead of one per step.

use super::elementwise::{binary_slice, unary_slice};
use super::float::Float;
use super::matmul::product_into;
use crate::{CpuStorage, MatmulSpec};
use adjoint_backend::{BinaryOp, RecurrenceNeeds, RecurrenceSpec, RecurrenceTangents};

/// The elements of a buffer of the recurrence's element type `T`.
///
/// # Panics
/// If the buffer holds another type (a programmer error: `adjoint-core` checks the dtypes).
fn slice<T: Float>(s: &CpuStorage) -> &[T] {
    T::slice(s).unwrap_or_else(|| {
        panic!(
            "recurrence: a {:?} buffer among {} ones",
            s.dtype(),
            std::any::type_name::<T>()
        )
    })
}

/// The buffers of a recurrence, typed.
struct Operands<'a, T> {
    w: &'a [T],
    /// `U` and `x₁ … x_T`.
    input: Option<(&'a [T], Vec<&'a [T]>)>,
}

impl<'a, T: Float> Operands<'a, T> {
    fn of(
        spec: &RecurrenceSpec,
        w: &'a CpuStorage,
        input: Option<(&'a CpuStorage, &[&'a CpuStorage])>,
    ) -> Self {
        let n = spec.n;
        let w = slice::<T>(w);
        assert_eq!(w.len(), n * n, "recurrence: W is not {n} × {n}");
        let input = input.map(|(u, xs)| {
            let k = spec
                .input
                .expect("an input product has its columns in the spec");
            let (u, xs): (&[T], Vec<&[T]>) = (slice::<T>(u), xs.iter().map(|x| slice(x)).collect());
            assert_eq!(u.len(), k * n, "recurrence: U is not {k} × {n}");
            assert!(
                xs.len() == spec.steps && xs.iter().all(|x| x.len() == spec.m * k),
                "recurrence: the inputs are not {} of {} × {k}",
                spec.steps,
                spec.m
            );
            (u, xs)
        });
        Operands { w, input }
    }
}

/// The product specs of a step: `hₜ₋₁·op(W)`, `xₜ·op(U)`, and `z̄ₜ·op(W)ᵀ` (the tangent of
/// `hₜ₋₁`).
fn step_specs(spec: &RecurrenceSpec) -> [MatmulSpec; 3] {
    let (m, n) = (spec.m, spec.n);
    let product = |k, rhs_transposed| MatmulSpec {
        batch: 1,
        m,
        k,
        n,
        lhs_batch_stride: 0,
        rhs_batch_stride: 0,
        lhs_transposed: false,
        rhs_transposed,
    };
    [
        product(n, spec.w_transposed),
        product(spec.input.unwrap_or(0), spec.u_transposed),
        product(n, !spec.w_transposed),
    ]
}

/// The states `h₀ … h_T` of the recurrence (see [`RecurrenceSpec`]), `None` for `U32`
/// buffers; also the number of matrix products it ran.
pub fn recurrence(
    spec: &RecurrenceSpec,
    h0: &CpuStorage,
    w: &CpuStorage,
    input: Option<(&CpuStorage, &[&CpuStorage])>,
    biases: &[&CpuStorage],
) -> Option<(CpuStorage, usize)> {
    fn run<T: Float>(
        spec: &RecurrenceSpec,
        h0: &[T],
        ops: Operands<'_, T>,
        biases: &[&CpuStorage],
    ) -> (CpuStorage, usize) {
        let (steps, n, mn) = (spec.steps, spec.n, spec.m * spec.n);
        assert_eq!(h0.len(), mn, "recurrence: h₀ is not {} × {n}", spec.m);
        let biases: Vec<&[T]> = biases.iter().map(|c| slice(c)).collect();
        assert!(
            biases.iter().all(|c| c.len() == n || c.len() == mn),
            "recurrence: a bias holds neither {n} nor {mn} elements"
        );
        let [carry, input, _] = step_specs(spec);
        let mut states = vec![T::zero(); (steps + 1) * mn];
        states[..mn].copy_from_slice(h0);
        for t in 0..steps {
            let (done, rest) = states.split_at_mut((t + 1) * mn);
            let (prev, z) = (&done[t * mn..], &mut rest[..mn]);
            match &ops.input {
                Some((u, xs)) if spec.input_first => {
                    product_into::<T, false>(&input, xs[t], u, z);
                    product_into::<T, true>(&carry, prev, ops.w, z);
                }
                Some((u, xs)) => {
                    product_into::<T, false>(&carry, prev, ops.w, z);
                    product_into::<T, true>(&input, xs[t], u, z);
                }
                None => product_into::<T, false>(&carry, prev, ops.w, z),
            }
            for c in &biases {
                if c.len() == mn {
                    binary_slice(BinaryOp::Add, z, c, true);
                } else {
                    for row in z.chunks_exact_mut(n) {
                        binary_slice(BinaryOp::Add, row, c, true);
                    }
                }
            }
            if let Some((f, _)) = spec.act {
                unary_slice(f, z);
            }
        }
        let products = steps * (1 + usize::from(ops.input.is_some()));
        (T::storage(states), products)
    }
    Some(match h0 {
        CpuStorage::F32(h0) => run::<f32>(spec, h0, Operands::of(spec, w, input), biases),
        CpuStorage::F64(h0) => run::<f64>(spec, h0, Operands::of(spec, w, input), biases),
        CpuStorage::U32(_) => return None,
    })
}

/// The tangents of the recurrence (see [`RecurrenceSpec`]) from its `states` and `h̄_T`, and
/// the number of matrix products it ran.
pub fn recurrence_backward(
    spec: &RecurrenceSpec,
    states: &CpuStorage,
    w: &CpuStorage,
    input: Option<(&CpuStorage, &[&CpuStorage])>,
    dh: &CpuStorage,
    needs: RecurrenceNeeds,
) -> (RecurrenceTangents<CpuStorage>, usize) {
    fn run<T: Float>(
        spec: &RecurrenceSpec,
        states: &[T],
        ops: Operands<'_, T>,
        dh: &CpuStorage,
        needs: RecurrenceNeeds,
    ) -> (RecurrenceTangents<CpuStorage>, usize) {
        let (steps, m, n, mn) = (spec.steps, spec.m, spec.n, spec.m * spec.n);
        assert_eq!(
            states.len(),
            (steps + 1) * mn,
            "recurrence: states of another spec"
        );
        let mut dh = slice::<T>(dh).to_vec();
        assert_eq!(dh.len(), mn, "recurrence: h̄_T is not {m} × {n}");
        let [.., back] = step_specs(spec);
        let mut products = 0;
        // z̄ₜ for every step, then h̄ₜ₋₁ = z̄ₜ·op(W)ᵀ (not for t = 1 unless h̄₀ is needed).
        let mut zs = vec![T::zero(); steps * mn];
        for t in (0..steps).rev() {
            let z = &mut zs[t * mn..(t + 1) * mn];
            z.copy_from_slice(&dh);
            if let Some((_, grad)) = spec.act {
                binary_slice(grad, z, &states[(t + 1) * mn..(t + 2) * mn], false);
            }
            if t > 0 || needs.h0 {
                product_into::<T, false>(&back, z, ops.w, &mut dh);
                products += 1;
            }
        }
        // `Aᵀ·B` over all the steps' rows (`A`: `T·m × p`, `B`: `T·m × q`).
        let mut gram = |a: &[T], p: usize, b: &[T], q: usize| {
            let spec = MatmulSpec {
                batch: 1,
                m: p,
                k: steps * m,
                n: q,
                lhs_batch_stride: 0,
                rhs_batch_stride: 0,
                lhs_transposed: true,
                rhs_transposed: false,
            };
            let mut out = vec![T::zero(); p * q];
            product_into::<T, false>(&spec, a, b, &mut out);
            products += 1;
            T::storage(out)
        };
        let before = &states[..steps * mn];
        let w = needs.w.then(|| match spec.w_transposed {
            false => gram(before, n, &zs, n),
            true => gram(&zs, n, before, n),
        });
        let u = match (&ops.input, needs.u) {
            (Some((_, xs)), true) => {
                let k = spec
                    .input
                    .expect("an input product has its columns in the spec");
                let x = xs.concat();
                Some(match spec.u_transposed {
                    false => gram(&x, k, &zs, n),
                    true => gram(&zs, n, &x, k),
                })
            }
            _ => None,
        };
        // Σₜ z̄ₜ, which the row sums reduce further; neither without a bias tangent.
        let summed = needs.rows || needs.steps;
        let mut by_step = vec![T::zero(); if summed { mn } else { 0 }];
        for z in zs.chunks_exact(mn).filter(|_| summed) {
            binary_slice(BinaryOp::Add, &mut by_step, z, true);
        }
        let rows = needs.rows.then(|| {
            let mut sum = vec![T::zero(); n];
            for row in by_step.chunks_exact(n) {
                binary_slice(BinaryOp::Add, &mut sum, row, true);
            }
            T::storage(sum)
        });
        let tangents = RecurrenceTangents {
            h0: needs.h0.then(|| T::storage(dh)),
            w,
            u,
            rows,
            steps: needs.steps.then(|| T::storage(by_step)),
        };
        (tangents, products)
    }
    match states {
        CpuStorage::F32(s) => run::<f32>(spec, s, Operands::of(spec, w, input), dh, needs),
        CpuStorage::F64(s) => run::<f64>(spec, s, Operands::of(spec, w, input), dh, needs),
        CpuStorage::U32(_) => panic!("recurrence_backward: U32 states"),
    }
}
