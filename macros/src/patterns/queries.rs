//! Methods whose results are data (sizes, shapes, predicates, comparisons): calling one on an
//! active value needs no derivative, in either mode.

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

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_and_predicates_are_queries_and_arithmetic_is_not() {
        assert!(super::is_query("len") && super::is_query("is_nan") && super::is_query("shape"));
        assert!(!super::is_query("sin") && !super::is_query("max") && !super::is_query("clone"));
    }
}
