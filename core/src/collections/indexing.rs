//! Element reads, element writes, `push` and `vec![..]` in differentiable code: the rules of
//! the collections' elements, whose tangents are the collections of [`super`].

use crate::{Differentiable, TangentVector};
use std::marker::PhantomData;

/// Where an element was read: its index and the length of the collection, so that the
/// adjoint of the collection can be created with the right length.
#[derive(Clone, Copy, Debug)]
pub struct IndexRecord {
    /// The index read.
    pub index: usize,
    /// The collection's length at the read.
    pub len: usize,
}

/// Collections whose elements differentiable code may read with `c[i]` and `c[i][j]`: they
/// are slices.
pub trait Elements {
    /// The element type.
    type Elem;
    /// The elements.
    fn elements(&self) -> &[Self::Elem];
}

impl<T> Elements for [T] {
    type Elem = T;
    #[inline(always)]
    fn elements(&self) -> &[T] {
        self
    }
}

impl<T> Elements for Vec<T> {
    type Elem = T;
    #[inline(always)]
    fn elements(&self) -> &[T] {
        self
    }
}

impl<T, const N: usize> Elements for [T; N] {
    type Elem = T;
    #[inline(always)]
    fn elements(&self) -> &[T] {
        self
    }
}

impl<C: Elements + ?Sized> Elements for &C {
    type Elem = C::Elem;
    #[inline(always)]
    fn elements(&self) -> &[C::Elem] {
        (**self).elements()
    }
}

/// Tangents of collections, which take the adjoint of one element in place.
pub trait AccumulateAt<E> {
    /// `self[record.index] += d`.
    fn accumulate_at(&mut self, record: IndexRecord, d: E);
}

impl<E: TangentVector> AccumulateAt<E> for Vec<E> {
    #[inline(always)]
    fn accumulate_at(&mut self, record: IndexRecord, d: E) {
        if self.len() < record.len {
            self.resize_with(record.len, E::zero);
        }
        self[record.index].plus_assign(d);
    }
}

impl<E: TangentVector, const N: usize> AccumulateAt<E> for [E; N] {
    #[inline(always)]
    fn accumulate_at(&mut self, record: IndexRecord, d: E) {
        self[record.index].plus_assign(d);
    }
}

/// Collections whose elements differentiable code may overwrite with `c[i] = value`.
pub trait IndexWrite: Elements {
    /// The elements, mutably.
    fn elements_mut(&mut self) -> &mut [Self::Elem];

    /// `self[index] = value`.
    #[inline(always)]
    #[track_caller]
    fn write(&mut self, index: usize, value: Self::Elem) {
        self.elements_mut()[index] = value;
    }
}

impl<T> IndexWrite for Vec<T> {
    #[inline(always)]
    fn elements_mut(&mut self) -> &mut [T] {
        self
    }
}

impl<T, const N: usize> IndexWrite for [T; N] {
    #[inline(always)]
    fn elements_mut(&mut self) -> &mut [T] {
        self
    }
}

/// Tangents of collections from which one element's adjoint can be taken out.
pub trait TakeAt<E> {
    /// Replaces `self[index]` with zero and returns it.
    fn take_at(&mut self, index: usize) -> E;
}

impl<E: TangentVector> TakeAt<E> for Vec<E> {
    #[inline(always)]
    fn take_at(&mut self, index: usize) -> E {
        match self.get_mut(index) {
            Some(e) => std::mem::replace(e, E::zero()),
            None => E::zero(),
        }
    }
}

impl<E: TangentVector, const N: usize> TakeAt<E> for [E; N] {
    #[inline(always)]
    fn take_at(&mut self, index: usize) -> E {
        if std::mem::size_of::<Self>() > SMALL_ARRAY {
            return std::mem::replace(&mut self[index], E::zero());
        }
        // A small array adjoint carried from iteration to iteration lives in registers: a
        // select on every element keeps it there, where storing the one zero would spill it,
        // write 8 bytes and reload it in 16-byte pieces, which waits for the store (the
        // store cannot be forwarded to the wider loads); in the Elman RNN's hidden-unit loop
        // that was one of the largest costs of the gradient under perf.
        let element = self[index].clone();
        for (k, e) in self.iter_mut().enumerate() {
            if k == index {
                *e = E::zero();
            }
        }
        element
    }
}

/// The size in bytes up to which [`TakeAt`] zeroes an array element by a select over the
/// whole array (16 `f64`).
const SMALL_ARRAY: usize = 128;

/// `c[index] = value` in differentiable code. The pullback maps the adjoint of the new
/// collection to (the adjoint of the old one, whose element `index` was overwritten and so gets
/// zero, and the adjoint of `value`).
#[inline(always)]
#[track_caller]
#[allow(clippy::type_complexity)]
pub fn index_write<C, E>(
    c: &mut C,
    index: usize,
    value: E,
    needs: [bool; 2],
) -> (
    (),
    impl FnOnce(C::Tangent) -> (C::Tangent, E::Tangent) + use<C, E>,
)
where
    C: Differentiable + IndexWrite<Elem = E>,
    C::Tangent: TakeAt<E::Tangent>,
    E: Differentiable,
{
    c.write(index, value);
    ((), write_pullback(index, needs))
}

/// The pullback of an element write at `index`: takes the element's adjoint out of the
/// collection's (the old element was overwritten, so its adjoint is zero) and returns both.
#[inline(always)]
fn write_pullback<T: TakeAt<E>, E: TangentVector>(
    index: usize,
    needs: [bool; 2],
) -> impl FnOnce(T) -> (T, E) {
    move |mut d: T| {
        let element = d.take_at(index);
        (d, if_needed(needs[1], element))
    }
}

/// The type of `c`, without its value: what the pullback of a loop that only writes `c`
/// keeps of it (see [`index_rewrite`]).
#[inline(always)]
pub fn witness<C>(_: &C) -> PhantomData<C> {
    PhantomData
}

/// `c[index] = value` run again by the pullback of a loop whose iterations only write `c`
/// (nothing in the loop reads it): the forward pass made the write, so this keeps only the
/// pullback of [`index_write`], and the loop's pullback holds only the type of `c`.
#[inline(always)]
#[allow(clippy::type_complexity)]
pub fn index_rewrite<C, E>(
    _: &PhantomData<C>,
    index: usize,
    value: E,
    needs: [bool; 2],
) -> (
    (),
    impl FnOnce(C::Tangent) -> (C::Tangent, E::Tangent) + use<C, E>,
)
where
    C: Differentiable,
    C::Tangent: TakeAt<E::Tangent>,
    E: Differentiable,
{
    drop(value);
    ((), write_pullback(index, needs))
}

/// `t` where its slot is needed, else the zero tangent.
#[inline(always)]
fn if_needed<T: TangentVector>(need: bool, t: T) -> T {
    if need { t } else { T::zero() }
}

/// `v.push(value)` in differentiable code. The pullback splits the adjoint of the longer
/// vector into the adjoint of the old one and that of `value`.
#[inline(always)]
#[allow(clippy::type_complexity)]
pub fn vec_push<E: Differentiable>(
    v: &mut Vec<E>,
    value: E,
    needs: [bool; 2],
) -> (
    (),
    impl FnOnce(Vec<E::Tangent>) -> (Vec<E::Tangent>, E::Tangent) + use<E>,
) {
    let len = v.len();
    v.push(value);
    ((), move |mut d: Vec<E::Tangent>| {
        let element = if d.len() > len {
            d.truncate(len + 1);
            d.pop().unwrap_or_else(E::Tangent::zero)
        } else {
            E::Tangent::zero()
        };
        (d, if_needed(needs[1], element))
    })
}

/// `v.truncate(len)` in differentiable code (and the end of `v.pop()`, which reads the last
/// element first). The dropped elements get no adjoint: the pullback keeps the first `len`
/// elements of the shorter vector's adjoint, which is the longer one's with zeros after
/// (a `Vec` tangent is padded with zeros).
#[inline(always)]
#[allow(clippy::type_complexity)]
pub fn vec_truncate<E: Differentiable>(
    v: &mut Vec<E>,
    len: usize,
    _needs: [bool; 1],
) -> (
    (),
    impl FnOnce(Vec<E::Tangent>) -> (Vec<E::Tangent>,) + use<E>,
) {
    v.truncate(len);
    ((), move |mut d: Vec<E::Tangent>| {
        d.truncate(len);
        (d,)
    })
}

/// The `N` element adjoints of `vec![e0, .., eN-1]` (the tangent may be shorter: the rest is
/// zero).
#[inline(always)]
pub fn vec_parts<E: TangentVector, const N: usize>(d: Vec<E>) -> [E; N] {
    let mut parts = d.into_iter();
    std::array::from_fn(|_| parts.next().unwrap_or_else(E::zero))
}

/// Where `c[i][j]` was read.
#[derive(Clone, Copy, Debug)]
pub struct IndexRecord2 {
    /// Where the row `c[i]` lies in `c`.
    pub outer: IndexRecord,
    /// Where the element lies in the row.
    pub inner: IndexRecord,
}

/// `c[i][j]` in differentiable code: one element, without copying the row `c[i]`.
#[inline(always)]
#[track_caller]
pub fn index_read2<C>(c: &C, i: usize, j: usize) -> (<C::Elem as Elements>::Elem, IndexRecord2)
where
    C: Elements + ?Sized,
    C::Elem: Elements,
    <C::Elem as Elements>::Elem: Clone,
{
    let rows = c.elements();
    let row = rows[i].elements();
    let record = IndexRecord2 {
        outer: IndexRecord {
            index: i,
            len: rows.len(),
        },
        inner: IndexRecord {
            index: j,
            len: row.len(),
        },
    };
    (row[j].clone(), record)
}

/// Tangents of collections of collections, which take the adjoint of one element in place.
pub trait AccumulateAt2<E> {
    /// `self[record.outer.index][record.inner.index] += d`.
    fn accumulate_at2(&mut self, record: IndexRecord2, d: E);
}

impl<E, R: AccumulateAt<E> + TangentVector> AccumulateAt2<E> for Vec<R> {
    #[inline(always)]
    fn accumulate_at2(&mut self, record: IndexRecord2, d: E) {
        if self.len() < record.outer.len {
            self.resize_with(record.outer.len, R::zero);
        }
        self[record.outer.index].accumulate_at(record.inner, d);
    }
}

impl<E, R: AccumulateAt<E>, const N: usize> AccumulateAt2<E> for [R; N] {
    #[inline(always)]
    fn accumulate_at2(&mut self, record: IndexRecord2, d: E) {
        self[record.outer.index].accumulate_at(record.inner, d);
    }
}

/// See [`AccumulateAt2`].
#[inline(always)]
pub fn accumulate_at2<T: AccumulateAt2<E>, E>(acc: &mut T, record: IndexRecord2, d: E) {
    acc.accumulate_at2(record, d);
}
