//! The optimizers' fused in-place step ([`Backend::update`](crate::Backend::update)): one pass
//! over the parameter, its gradient and the state buffers, running [`UpdateOp::eval`] on each
//! element. Nothing is allocated.

use crate::{CpuStorage, UpdateOp};
use adjoint_backend::Real;

/// A float element type and the typed views of a buffer of it.
trait Elem: Real {
    fn of(s: &CpuStorage) -> &[Self];
    fn of_mut(s: &mut CpuStorage) -> &mut [Self];
}

/// The panic of a buffer that is not of the expected element type.
#[track_caller]
fn wrong_dtype(s: &CpuStorage, expected: &str) -> ! {
    panic!("update: buffer of {:?}, expected {expected}", s.dtype())
}

macro_rules! elem {
    ($t:ty, $variant:ident) => {
        impl Elem for $t {
            fn of(s: &CpuStorage) -> &[$t] {
                match s {
                    CpuStorage::$variant(v) => v,
                    other => wrong_dtype(other, stringify!($t)),
                }
            }
            fn of_mut(s: &mut CpuStorage) -> &mut [$t] {
                match s {
                    CpuStorage::$variant(v) => v,
                    other => wrong_dtype(other, stringify!($t)),
                }
            }
        }
    };
}
elem!(f32, F32);
elem!(f64, F64);

/// `op` on every element of `param`, `grad` and the first `op.state_len()` buffers of `state`.
pub fn update(
    op: UpdateOp,
    param: &mut CpuStorage,
    grad: &CpuStorage,
    state: &mut [&mut CpuStorage],
) {
    assert!(
        state.len() >= op.state_len(),
        "update: {op:?} needs {} state buffers, got {}",
        op.state_len(),
        state.len()
    );
    match param {
        CpuStorage::F32(p) => run(op, p, f32::of(grad), state),
        CpuStorage::F64(p) => run(op, p, f64::of(grad), state),
        CpuStorage::U32(_) => panic!("update: parameters must be floats, got U32 ids"),
    }
}

fn run<T: Elem>(op: UpdateOp, p: &mut [T], g: &[T], state: &mut [&mut CpuStorage]) {
    let n = p.len();
    let mut s: [&mut [T]; 2] = [&mut [], &mut []];
    for (slot, buf) in s.iter_mut().zip(state.iter_mut()).take(op.state_len()) {
        *slot = T::of_mut(buf);
    }
    assert!(
        g.len() == n && s[..op.state_len()].iter().all(|b| b.len() == n),
        "update: buffers of different lengths"
    );
    let [s0, s1] = s;
    match op.state_len() {
        0 => p.iter_mut().zip(g).for_each(|(p, &g)| {
            *p = op.eval(*p, g, [T::zero(); 2]).0;
        }),
        1 => p.iter_mut().zip(g).zip(s0).for_each(|((p, &g), a)| {
            let (np, [na, _]) = op.eval(*p, g, [*a, T::zero()]);
            (*p, *a) = (np, na);
        }),
        _ => p
            .iter_mut()
            .zip(g)
            .zip(s0.iter_mut().zip(s1.iter_mut()))
            .for_each(|((p, &g), (a, b))| {
                let (np, [na, nb]) = op.eval(*p, g, [*a, *b]);
                (*p, *a, *b) = (np, na, nb);
            }),
    }
}
