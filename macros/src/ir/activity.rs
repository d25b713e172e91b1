//! Activity analysis, second half: a node is *useful* when its value reaches the result. (The
//! first half, *varied*, is decided while lowering: a node exists only if it depends on a
//! differentiated input.) Only nodes that are both get a pullback.

use crate::ir::graph::{Act, Graph};

/// Marks the nodes whose value flows into any of `roots`.
pub fn useful_from(graph: &Graph, roots: &[Act]) -> Vec<bool> {
    let mut useful = vec![false; graph.nodes.len()];
    for root in roots {
        if let Act::Active(root) = root {
            useful[*root] = true;
        }
    }
    for id in (0..graph.nodes.len()).rev() {
        if useful[id] {
            for operand in graph.nodes[id].kind.operands() {
                useful[operand] = true;
            }
        }
    }
    useful
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::graph::NodeKind;
    use quote::format_ident;

    #[test]
    fn only_nodes_reaching_the_result_are_useful() {
        let mut g = Graph::default();
        let x = g.add_with_deps(NodeKind::Param(0), 1);
        let y = g.add_with_deps(NodeKind::Param(1), 2);
        let unused = g.add(NodeKind::Rule {
            pullback: format_ident!("p"),
            slots: vec![Some(x)],
            spans: vec![proc_macro2::Span::call_site(); 2],
            inout: Vec::new(),
        });
        let used = g.add(NodeKind::Rule {
            pullback: format_ident!("q"),
            slots: vec![Some(x), None],
            spans: vec![proc_macro2::Span::call_site(); 2],
            inout: Vec::new(),
        });
        let u = useful_from(&g, &[Act::Active(used)]);
        assert_eq!(u, vec![true, false, false, true]);
        assert_eq!(g.nodes[unused].deps, 1);
        let _ = y;
    }
}
