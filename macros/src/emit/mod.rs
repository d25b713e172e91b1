//! Emission: the code the macro writes, from the lowered body and its graph.

pub mod companions;
pub mod fused;
pub mod loops;
pub mod names;
pub mod region;
pub mod reverse;

/// A count or an index as the generated code spells it: `2`, not `2usize`.
pub fn index(i: usize) -> proc_macro2::Literal {
    proc_macro2::Literal::usize_unsuffixed(i)
}

/// Whether any of `flags` is true, as short as it can be written: `false`, the one flag, or
/// `(a || b || ..)`.
pub fn any(flags: Vec<proc_macro2::TokenStream>) -> proc_macro2::TokenStream {
    match flags.as_slice() {
        [] => quote::quote!(false),
        [one] => one.clone(),
        _ => quote::quote!((#(#flags)||*)),
    }
}
