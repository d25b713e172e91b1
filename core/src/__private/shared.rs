//! [`Shared`]: one copy of an unchanging parameter for the pullbacks of recomputed loops.

use std::borrow::Borrow;
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
    /// A handle to the one copy of `value` (the parameter, or a reference to it where a
    /// recomputed loop reads it through its own handle), making it on first use.
    #[inline(always)]
    pub fn share<V: Borrow<T>>(&self, value: &V) -> Rc<T> {
        Rc::clone(self.0.get_or_init(|| Rc::new(value.borrow().clone())))
    }
}

/// The cell for a pullback that runs loop code again (whose nested loops share the parameter
/// too): it holds the same copy if one was made, else it starts empty.
impl<T> Clone for Shared<T> {
    #[inline(always)]
    fn clone(&self) -> Self {
        let cell = OnceCell::new();
        if let Some(copy) = self.0.get() {
            let _ = cell.set(Rc::clone(copy));
        }
        Shared(cell)
    }
}
