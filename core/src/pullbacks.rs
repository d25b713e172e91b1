//! What the pullbacks of loops and branches keep: a loop's [`Tape`] of per-iteration
//! pullbacks, a branch's [`Branch`] of the arm taken, and the [`Shared`] copy of an
//! unchanging parameter that the pullbacks of recomputed loops read.

use std::cell::OnceCell;
use std::rc::Rc;

/// The per-iteration pullbacks of a loop, in order: one buffer, allocated once with the
/// iterator's length when known. (Inline storage for short loops was measured slower: the
/// records of nested loops then nest by value and are copied around.)
pub type Tape<T> = Vec<T>;

/// A tape with room for `n` iterations.
#[inline(always)]
pub fn tape<T>(n: usize) -> Tape<T> {
    Tape::with_capacity(n)
}

/// The pullback of the branch taken by an `if` or `match`: nested for more than two arms.
pub enum Branch<A, B> {
    /// The first arm's pullback.
    First(A),
    /// The pullback of the second arm (or a `Branch` of the remaining arms).
    Second(B),
}

/// A parameter that keeps its value for the whole function body, copied once (the first time
/// a recomputed loop captures it) into an `Rc` that every such loop's pullback clones,
/// instead of each pullback holding its own copy.
pub struct Shared<T>(OnceCell<Rc<T>>);

impl<T> Shared<T> {
    /// No copy yet (declared for every parameter that could be shared: costs nothing and
    /// asks nothing of `T` until a loop shares it).
    #[inline(always)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Shared(OnceCell::new())
    }
}

impl<T: Clone> Shared<T> {
    /// A handle to the one copy of `value`, making it on first use.
    #[inline(always)]
    pub fn share(&self, value: &T) -> Rc<T> {
        Rc::clone(self.0.get_or_init(|| Rc::new(value.clone())))
    }
}

impl<O> Shared<O> {
    /// A handle to the one owned copy of the referent of a `&R` parameter (`Vec<f64>` of a
    /// `&[f64]`), making it on first use: what the replayed loops of a function whose pullback
    /// may not borrow its arguments read instead of the reference.
    #[inline(always)]
    pub fn share_owned<R: ?Sized + ToOwned<Owned = O>>(&self, value: &R) -> Rc<O> {
        Rc::clone(self.0.get_or_init(|| Rc::new(value.to_owned())))
    }
}
