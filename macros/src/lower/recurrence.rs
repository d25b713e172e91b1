//! Lowering a loop that is one recurrence ([`crate::patterns::recurrence`]) as one rule whose
//! call is a site (`core/src/ops/recurrence/site.rs`).

use crate::ir::graph::{Act, is_inactive};
use crate::lower::Lowering;
use crate::patterns::affine::Affine;
use crate::patterns::recurrence::{Recurrence, Role, rename};
use proc_macro2::{Ident, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, ExprForLoop};

/// The step's leaves and the rule's slots (see [`Lowering::recurrence_leaves`]).
struct Leaves {
    /// Each slot's activity and span: the initial value's, then each shared operand's.
    acts: Vec<Act>,
    spans: Vec<proc_macro2::Span>,
    slot_values: Vec<TokenStream>,
    /// Each leaf as the step closure takes it, its `Leaf` role and whether its tangent is
    /// needed.
    step_leaves: Vec<TokenStream>,
    leaf_roles: Vec<TokenStream>,
    leaf_needs: Vec<TokenStream>,
    /// The leaves that are shared operands.
    fixed_slots: Vec<usize>,
}

impl Lowering<'_> {
    /// Lowers a [`recurrence`] loop over the lowered `iter` as one rule, or `None` (lower it as
    /// a loop) when the carried variable is not a local or nothing in it is active.
    pub(crate) fn recurrence(
        &mut self,
        r: Recurrence<'_>,
        f: &ExprForLoop,
        iter: &Expr,
    ) -> Option<(Expr, Act)> {
        let Recurrence {
            carry,
            element,
            cell,
            roles,
        } = r;
        let carry_act = self.lookup(&carry.to_string())?.clone();
        let (c, x) = (format_ident!("__c"), format_ident!("__x"));
        let Leaves {
            acts,
            spans,
            slot_values,
            step_leaves,
            leaf_roles,
            leaf_needs,
            fixed_slots,
        } = self.recurrence_leaves(&cell, &roles, (carry, &c), (element, &x), carry_act)?;
        if acts.iter().all(is_inactive) {
            return None;
        }
        let slots = slot_values.len();
        let (pat, body) = (&f.pat, &f.body);
        // The loop as written, where no tangent is needed.
        let original: Expr = syn::parse_quote!({
            let mut #carry = #carry;
            for #pat in #iter #body
            #carry
        });
        let span = cell.span();
        let (count, transposed, epilogue) =
            (cell.products.len(), cell.transposed_mask(), cell.epilogue());
        let plain = crate::emit::fused::plain_rules(&cell);
        let g: Vec<Ident> = (0..step_leaves.len())
            .map(|i| format_ident!("__g{}", i))
            .collect();
        let carry_leaf = roles.iter().position(|&r| r == Role::Carry)?;
        let g_carry = &g[carry_leaf];
        let sums: Vec<Ident> = (1..slots).map(|i| format_ident!("__a{}", i)).collect();
        let g_fixed = fixed_slots.iter().map(|&i| &g[i]);
        let holes = (1..slots).map(|_| quote!(_));
        let any = (0..slots).map(|i| quote!(__n[#i]));
        let step = quote!(|#c, #x, __n: [bool; #slots]| {
            let __any = false #(|| #any)*;
            let (__y, __pb) = ::adjoint::__private::step(
                (#(#step_leaves,)*),
                [#(#leaf_needs),*],
                #plain,
            );
            (__y, move |__d, __acc: &mut (#(#holes,)*)| {
                let (#(#g,)*) = __pb(::adjoint::__private::settled(__d));
                let (#(#sums,)*) = __acc;
                #(::adjoint::__private::plus_assign(#sums, ::adjoint::__private::arg_tangent(#g_fixed));)*
                ::adjoint::__private::arg_tangent(#g_carry)
            })
        });
        let (value, act) = self.rule(acts, spans, span, original, |n| {
            quote_spanned!(span=> {
                #[allow(unused_imports)]
                use ::adjoint::__private::RecurrencePlain as _;
                ::adjoint::__private::recurrence((#(#slot_values,)*), #iter, [#(#n),*], #step)
                    .operands()
                    .rule(
                        [#(#leaf_roles),*],
                        #count,
                        #transposed,
                        ::adjoint::__private::Epilogue::#epilogue,
                    )
            })
        });
        self.assign(&carry.to_string(), act);
        Some((syn::parse_quote!({ #carry = #value; }), Act::Inactive))
    }

    /// The leaves of the step's expression as the step closure takes them (the carried value
    /// renamed to `c.1`, the element to `x.1`: the closure's parameters), and the shared
    /// operands, lowered here, as the rule's slots after the initial value's; `None` when a
    /// renamed leaf does not parse.
    fn recurrence_leaves(
        &mut self,
        cell: &Affine<'_>,
        roles: &[Role],
        (carry, c): (&Ident, &Ident),
        (element, x): (&Ident, &Ident),
        carry_act: Act,
    ) -> Option<Leaves> {
        // Slot 0 is the initial value; each shared operand has a slot of its own.
        let (mut acts, mut spans) = (vec![carry_act], vec![carry.span()]);
        let mut slot_values = vec![quote!(#carry)];
        let (mut step_leaves, mut leaf_roles, mut leaf_needs) =
            (Vec::new(), Vec::new(), Vec::new());
        let mut fixed_slots = Vec::new();
        for ((position, leaf), role) in cell.leaves().into_iter().zip(roles) {
            match role {
                Role::Carry | Role::Element => {
                    let (from, to) = if *role == Role::Carry {
                        (carry, c)
                    } else {
                        (element, x)
                    };
                    let renamed: Expr =
                        syn::parse2(rename(leaf.to_token_stream(), from, to)).ok()?;
                    step_leaves.push(self.leaf(position, leaf, &renamed));
                    if *role == Role::Carry {
                        leaf_roles.push(quote!(::adjoint::__private::Leaf::Carry));
                        leaf_needs.push(quote!(__any));
                    } else {
                        leaf_roles.push(quote!(::adjoint::__private::Leaf::Element));
                        leaf_needs.push(quote!(false));
                    }
                }
                Role::Fixed => {
                    let (lowered, act) = self.expr(leaf);
                    let value = self.leaf(position, leaf, &lowered);
                    let slot = slot_values.len();
                    step_leaves.push(value.clone());
                    slot_values.push(value);
                    leaf_roles.push(quote!(::adjoint::__private::Leaf::Fixed(#slot)));
                    leaf_needs.push(quote!(__n[#slot]));
                    fixed_slots.push(step_leaves.len() - 1);
                    acts.push(act);
                    spans.push(leaf.span());
                }
            }
        }
        Some(Leaves {
            acts,
            spans,
            slot_values,
            step_leaves,
            leaf_roles,
            leaf_needs,
            fixed_slots,
        })
    }
}
