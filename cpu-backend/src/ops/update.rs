//! The optimizers' fused in-place step ([`Backend::update`](crate::Backend::update)): one pass
//! over the parameter, its gradient and the state buffers, running [`UpdateOp::eval`] on each
//! element, split across the threads for long buffers. Nothing is allocated.

use super::elementwise::{PAR_CHUNK, PAR_MIN};
use crate::{CpuStorage, UpdateOp};
use adjoint_backend::Real;

/// A float element type and the typed views of a buffer of it.
trait Elem: Real + Send + Sync {
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
        0 => blocks(p, g, (&mut [], &mut []), &|p, g, _| {
            for (p, &g) in p.iter_mut().zip(g) {
                *p = op.eval(*p, g, [T::zero(); 2]).0;
            }
        }),
        1 => blocks(p, g, (s0, &mut []), &|p, g, (s0, _)| {
            for ((p, &g), a) in p.iter_mut().zip(g).zip(s0) {
                let (np, [na, _]) = op.eval(*p, g, [*a, T::zero()]);
                (*p, *a) = (np, na);
            }
        }),
        _ => blocks(p, g, (s0, s1), &|p, g, (s0, s1)| {
            for ((p, &g), (a, b)) in p.iter_mut().zip(g).zip(s0.iter_mut().zip(s1)) {
                let (np, [na, nb]) = op.eval(*p, g, [*a, *b]);
                (*p, *a, *b) = (np, na, nb);
            }
        }),
    }
}

/// Two state buffers, each either as long as the parameter or empty (unused).
type State<'a, T> = (&'a mut [T], &'a mut [T]);

/// Runs `f` on matching blocks of the parameter, gradient and state buffers: the whole
/// buffers on the calling thread when short (handing work to the pool costs more than a
/// short pass), else halves split recursively across the threads down to [`PAR_CHUNK`]
/// elements (`split_at_mut`, so nothing is allocated).
fn blocks<T: Elem>(
    p: &mut [T],
    g: &[T],
    state: State<'_, T>,
    f: &(impl Fn(&mut [T], &[T], State<'_, T>) + Sync),
) {
    if p.len() < PAR_MIN {
        f(p, g, state);
    } else {
        halves(p, g, state, f);
    }
}

fn halves<T: Elem>(
    p: &mut [T],
    g: &[T],
    (s0, s1): State<'_, T>,
    f: &(impl Fn(&mut [T], &[T], State<'_, T>) + Sync),
) {
    if p.len() <= PAR_CHUNK {
        return f(p, g, (s0, s1));
    }
    let mid = p.len() / 2;
    let (p0, p1) = p.split_at_mut(mid);
    let (g0, g1) = g.split_at(mid);
    // An unused state buffer is empty and splits into two empty halves.
    let (s00, s01) = s0.split_at_mut(mid.min(s0.len()));
    let (s10, s11) = s1.split_at_mut(mid.min(s1.len()));
    rayon::join(
        || halves(p0, g0, (s00, s10), f),
        || halves(p1, g1, (s01, s11), f),
    );
}
