//! What a method does to its receiver, by name: queries whose results are data (sizes,
//! shapes, predicates, comparisons), which need no derivative in either mode; methods that
//! lend part of their receiver by `&mut`, which neither mode follows; the pure float methods
//! and the other methods that only read their receiver; and so which method statements
//! (`acc.add(x);`) may change it.

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

/// Methods that only read their receiver (besides the pure float methods): sizes, shapes,
/// iteration by reference, copies, and the tensor operations that take `&self`.
pub const READ_ONLY_METHODS: &[&str] = &[
    "argmax",
    "as_slice",
    "broadcast_to",
    "chunks",
    "clone",
    "cloned",
    "contains",
    "copied",
    "dims",
    "dot",
    "eq",
    "expect",
    "first",
    "flatten_from",
    "ge",
    "get",
    "gt",
    "into_iter",
    "is_empty",
    "is_finite",
    "is_infinite",
    "is_nan",
    "is_sign_negative",
    "is_sign_positive",
    "iter",
    "last",
    "le",
    "len",
    "log_softmax",
    "lt",
    "matmul",
    "mean",
    "mean_all",
    "ndim",
    "ne",
    "numel",
    "partial_cmp",
    "permute",
    "product",
    "relu",
    "reshape",
    "shape",
    "sigmoid",
    "softmax",
    "square",
    "sum",
    "sum_all",
    "t",
    "to_owned",
    "to_scalar",
    "to_string",
    "to_vec",
    "total_cmp",
    "transpose",
    "unwrap",
    "unwrap_or",
    "windows",
];

/// Methods of `f32`/`f64`: functions of their receiver and arguments only, so a loop body
/// calling them gives the same values when run again.
pub const PURE_METHODS: &[&str] = &[
    "abs",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "cbrt",
    "ceil",
    "clamp",
    "copysign",
    "cos",
    "cosh",
    "exp",
    "exp2",
    "exp_m1",
    "floor",
    "fract",
    "hypot",
    "ln",
    "ln_1p",
    "log",
    "log10",
    "log2",
    "max",
    "min",
    "mul_add",
    "powf",
    "powi",
    "recip",
    "round",
    "signum",
    "sin",
    "sin_cos",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "to_degrees",
    "to_radians",
    "trunc",
];

/// Whether a statement `recv.m(..);` may change `recv`: any method but the pure float
/// methods, the queries and the methods that only read (`READ_ONLY_METHODS`, `clone`).
pub fn called_for_effect(m: &proc_macro2::Ident) -> bool {
    let name = m.to_string();
    !(PURE_METHODS.contains(&name.as_str())
        || is_query(&name)
        || READ_ONLY_METHODS.contains(&name.as_str())
        || name == "clone")
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
