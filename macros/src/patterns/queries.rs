//! Methods whose results are data (sizes, shapes, predicates, comparisons): calling one on an
//! active value needs no derivative, in either mode. And methods that lend part of their
//! receiver by `&mut`, which neither mode follows.

/// The method names, as written after the `.`.
const QUERIES: &[&str] = &[
    "len",
    "is_empty",
    "capacity",
    "shape",
    "dims",
    "ndim",
    "rank",
    "numel",
    "dtype",
    "device",
    "is_nan",
    "is_infinite",
    "is_finite",
    "is_normal",
    "is_sign_positive",
    "is_sign_negative",
    "partial_cmp",
    "total_cmp",
    "to_bits",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
];

/// Whether `method` returns data about its receiver.
pub fn is_query(method: &str) -> bool {
    QUERIES.contains(&method)
}

/// Whether `method` lends part of its receiver by `&mut`, by the standard library's naming
/// convention (`iter_mut`, `as_mut_slice`, `last_mut`, `get_mut`, `split_at_mut`,
/// `chunks_mut`, `as_mut`, `borrow_mut`).
pub fn lends_mut(method: &str) -> bool {
    method.ends_with("_mut") || method.starts_with("as_mut")
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_and_predicates_are_queries_and_arithmetic_is_not() {
        assert!(super::is_query("len") && super::is_query("is_nan") && super::is_query("shape"));
        assert!(!super::is_query("sin") && !super::is_query("max") && !super::is_query("clone"));
    }

    #[test]
    fn mutable_accessors_lend_and_others_do_not() {
        for m in [
            "iter_mut",
            "as_mut_slice",
            "last_mut",
            "as_mut",
            "split_at_mut",
        ] {
            assert!(super::lends_mut(m), "{m}");
        }
        for m in ["iter", "as_slice", "last", "mul_add", "muted"] {
            assert!(!super::lends_mut(m), "{m}");
        }
    }
}
