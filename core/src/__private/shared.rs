//! [`Shared`]: one copy of an unchanging parameter for the pullbacks of recomputed loops.

use std::cell::OnceCell;
use std::rc::Rc;

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
