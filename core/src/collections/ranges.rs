//! Reads of a sub-slice `c[a..b]` of an active collection in differentiable code: the value is a
//! copy of the elements (as an element read is a clone of the element), and its adjoint, a
//! `Vec` of the elements' tangents, is added into the collection's adjoint at `a`:
//!
//! ```text
//! y = c[a..b]   ⇒   c̄[a + k] += ȳ[k]  for k < ȳ.len()   (ȳ may be shorter: the zero tangent)
//! ```
//!
//! An index is either kind through [`ReadIndex`], and an adjoint goes back by its record
//! through [`Accumulate`], so that the generated `index_read(&c, i)` and
//! `accumulate_at(&mut c̄, record, ȳ)` read and add an element or a range alike.

use super::indexing::{AccumulateAt, Elements, IndexRecord};
use crate::TangentVector;
use core::ops::{Bound, RangeBounds};

/// Where a sub-slice was read: its first index and the length of the whole collection.
#[derive(Clone, Copy, Debug)]
pub struct RangeRecord {
    /// The index of the sub-slice's first element in the collection.
    pub start: usize,
    /// The length of the collection read from.
    pub len: usize,
}

/// An index of a read `c[index]`: a position (the element, cloned) or a range (the elements,
/// copied into a `Vec`), with the record its adjoint goes back by.
pub trait ReadIndex<E> {
    /// What the read gives.
    type Value;
    /// Where it was read.
    type Record;
    /// `elements[self]`, and where.
    fn read(self, elements: &[E]) -> (Self::Value, Self::Record);
}

impl<E: Clone> ReadIndex<E> for usize {
    type Value = E;
    type Record = IndexRecord;
    #[inline(always)]
    #[track_caller]
    fn read(self, elements: &[E]) -> (E, IndexRecord) {
        let record = IndexRecord {
            index: self,
            len: elements.len(),
        };
        (elements[self].clone(), record)
    }
}

/// The bounds of `range` over `len` elements, `start..end`, checked as slicing checks them.
#[track_caller]
fn bounds(range: &impl RangeBounds<usize>, len: usize) -> (usize, usize) {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.checked_add(1).expect("range start overflows usize"),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1).expect("range end overflows usize"),
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    (start, end)
}

macro_rules! range_index {
    ($($range:ty),*) => {$(
        impl<E: Clone> ReadIndex<E> for $range {
            type Value = Vec<E>;
            type Record = RangeRecord;
            #[inline(always)]
            #[track_caller]
            fn read(self, elements: &[E]) -> (Vec<E>, RangeRecord) {
                let (start, end) = bounds(&self, elements.len());
                let record = RangeRecord { start, len: elements.len() };
                (elements[start..end].to_vec(), record)
            }
        }
    )*};
}

range_index!(
    core::ops::Range<usize>,
    core::ops::RangeFrom<usize>,
    core::ops::RangeTo<usize>,
    core::ops::RangeInclusive<usize>,
    core::ops::RangeToInclusive<usize>,
    core::ops::RangeFull
);

/// A record by which an adjoint `D` is added into a collection's adjoint `C`: one element's
/// at its index, or a sub-slice's from its start.
pub trait Accumulate<C, D> {
    /// `c[at] += d`.
    fn accumulate(self, c: &mut C, d: D);
}

impl<C: AccumulateAt<D>, D> Accumulate<C, D> for IndexRecord {
    #[inline(always)]
    fn accumulate(self, c: &mut C, d: D) {
        c.accumulate_at(self, d);
    }
}

impl<E: TangentVector> Accumulate<Vec<E>, Vec<E>> for RangeRecord {
    #[inline(always)]
    fn accumulate(self, c: &mut Vec<E>, d: Vec<E>) {
        if d.is_empty() {
            return;
        }
        if c.len() < self.len {
            c.resize_with(self.len, E::zero);
        }
        for (a, b) in c[self.start..].iter_mut().zip(d) {
            a.plus_assign(b);
        }
    }
}

impl<E: TangentVector, const N: usize> Accumulate<[E; N], Vec<E>> for RangeRecord {
    #[inline(always)]
    fn accumulate(self, c: &mut [E; N], d: Vec<E>) {
        for (a, b) in c[self.start..].iter_mut().zip(d) {
            a.plus_assign(b);
        }
    }
}

/// `c[i]` in differentiable code: the element (a copy or a cheap clone) and where it was read;
/// `c[a..b]`: a copy of the elements and where they were read.
#[inline(always)]
#[track_caller]
pub fn index_read<C: Elements + ?Sized, I: ReadIndex<C::Elem>>(
    c: &C,
    index: I,
) -> (I::Value, I::Record) {
    index.read(c.elements())
}

/// See [`AccumulateAt`]: `acc[record] += d` for an element's record, or a sub-slice's ([`Accumulate`]).
#[inline(always)]
pub fn accumulate_at<T, R: Accumulate<T, E>, E>(acc: &mut T, record: R, d: E) {
    record.accumulate(acc, d);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_read_copies_and_their_adjoints_land_at_the_start() {
        let v = [1.0, 2.0, 3.0, 4.0];
        let (s, r) = (1..3).read(&v);
        assert_eq!((s, r.start, r.len), (vec![2.0, 3.0], 1, 4));
        let (s, r) = (2..).read(&v);
        assert_eq!((s, r.start), (vec![3.0, 4.0], 2));
        let (s, _) = (..=1).read(&v);
        assert_eq!(s, vec![1.0, 2.0]);
        let mut acc: Vec<f64> = Vec::new();
        r.accumulate(&mut acc, vec![10.0, 20.0]);
        assert_eq!(acc, vec![0.0, 0.0, 10.0, 20.0]);
        // The zero tangent (empty) changes nothing, and a shorter one pads with zeros.
        r.accumulate(&mut acc, Vec::new());
        RangeRecord { start: 1, len: 4 }.accumulate(&mut acc, vec![1.0]);
        assert_eq!(acc, vec![0.0, 1.0, 10.0, 20.0]);
        let mut fixed = [0.0; 4];
        RangeRecord { start: 3, len: 4 }.accumulate(&mut fixed, vec![5.0]);
        assert_eq!(fixed, [0.0, 0.0, 0.0, 5.0]);
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn a_range_past_the_end_panics_as_slicing_does() {
        let _ = (2..9).read(&[1.0, 2.0, 3.0]);
    }
}
