//! The op sweep: every public tensor op with a derivative rule × {F64, F32} × seeded random
//! shapes (size-1 and empty axes, broadcasting) × layouts (inputs given as permuted or
//! transposed copies, the permutation's rule composed with the op's) on the CPU backend.
//!
//! For each drawn case, in `F64`, [`check_gradient`] compares every element of the pullback
//! of a random cotangent with central differences, and [`check_dot_product`] checks
//! `⟨J v, w⟩ = ⟨v, Jᵀ w⟩`; in `F32`, the value and the pullback must agree with the `F64`
//! ones to `1e-4` relative (f32 rounding over these small sizes is far below). The op's line
//! in the table says how its inputs are drawn. An op whose rule is not in the table fails
//! [`every_op_with_a_rule_is_in_the_table`], which reads the rule names out of the source of
//! `core/src/ops`.
//!
//! `ADJOINT_SWEEP_SEED` and `ADJOINT_SWEEP_DRAWS` (draws per op) change the run.

#[path = "sweep/draw.rs"]
mod draw;
#[path = "sweep/forward.rs"]
mod forward;
#[path = "sweep/labelled.rs"]
mod labelled;
#[path = "sweep/mask.rs"]
mod mask;
#[path = "sweep/pointwise.rs"]
mod pointwise;
#[path = "support/rng.rs"]
mod rng;
#[path = "sweep/split.rs"]
mod split;
#[path = "sweep/structured.rs"]
mod structured;

use adjoint::check::{Tolerance, check_dot_product_with, check_gradient_with};
use adjoint::prelude::*;
use draw::{Case, Pullback, Rng};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// One line of the table: the op's name (its rule is `<name>_vjp_full`, or an operator) and
/// how to draw a case of it.
pub struct Op {
    pub name: &'static str,
    pub draw: fn(&mut Rng) -> Case,
}

/// The table.
fn table() -> Vec<Op> {
    let mut ops = pointwise::ops();
    ops.extend(structured::ops());
    ops.extend(labelled::ops());
    ops.extend(mask::ops());
    ops.extend(split::ops());
    ops
}

/// Rules without a line, and why.
const EXEMPT: &[(&str, &str)] = &[(
    "argmax",
    "its value is U32 ids, so it has no derivative to check; its rule gives the symbolic zero, which tests/tensors.rs checks",
)];

/// Lines that are operators, not `_vjp_full` methods.
const OPERATORS: &[&str] = &["t + s", "t - s", "s - t", "t * s", "t / s", "s / t"];

/// The sources of `core/src/ops`, one per module that `core/src/ops/mod.rs` declares (a module
/// that is a folder: all its files).
const SOURCES: &[(&str, &str)] = &[
    (
        "affine",
        concat!(
            include_str!("../core/src/ops/affine/mod.rs"),
            include_str!("../core/src/ops/affine/site.rs"),
        ),
    ),
    (
        "arith",
        concat!(
            include_str!("../core/src/ops/arith.rs"),
            include_str!("../core/src/ops/arith/forward.rs"),
        ),
    ),
    ("compare", include_str!("../core/src/ops/compare.rs")),
    ("constant", include_str!("../core/src/ops/constant.rs")),
    ("conv", include_str!("../core/src/ops/conv.rs")),
    (
        "cross_entropy",
        include_str!("../core/src/ops/cross_entropy.rs"),
    ),
    ("index", include_str!("../core/src/ops/index.rs")),
    ("loss", include_str!("../core/src/ops/loss.rs")),
    ("mask", include_str!("../core/src/ops/mask.rs")),
    ("matmul", include_str!("../core/src/ops/matmul.rs")),
    ("nn", include_str!("../core/src/ops/nn.rs")),
    ("pool", include_str!("../core/src/ops/pool.rs")),
    (
        "recurrence",
        concat!(
            include_str!("../core/src/ops/recurrence/mod.rs"),
            include_str!("../core/src/ops/recurrence/site.rs"),
        ),
    ),
    ("reduce", include_str!("../core/src/ops/reduce.rs")),
    ("scalar", include_str!("../core/src/ops/scalar.rs")),
    ("shape", include_str!("../core/src/ops/shape.rs")),
    ("split", include_str!("../core/src/ops/split.rs")),
    ("unary", include_str!("../core/src/ops/unary.rs")),
];

/// Every `<name>` of a `<name>_vjp_full` in `source`.
fn rule_names(source: &str) -> Vec<String> {
    names_of(source, "_vjp_full")
}

/// Every `<name>` of a `<name><suffix>` in `source`.
fn names_of(source: &str, suffix: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (at, _) in source.match_indices(suffix) {
        let head = &source[..at];
        let start = head
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        if start < at {
            names.push(head[start..].to_string());
        }
    }
    names
}

#[test]
fn every_op_with_a_rule_is_in_the_table() {
    let modules: Vec<&str> = include_str!("../core/src/ops/mod.rs")
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod ")?.strip_suffix(';'))
        .collect();
    let read: Vec<&str> = SOURCES.iter().map(|s| s.0).collect();
    assert_eq!(
        modules, read,
        "a module of core/src/ops is not read: add it to SOURCES"
    );
    let mut rules: Vec<String> = SOURCES.iter().flat_map(|s| rule_names(s.1)).collect();
    rules.sort();
    rules.dedup();
    let lines: Vec<&str> = table().iter().map(|op| op.name).collect();
    let exempt: Vec<&str> = EXEMPT.iter().map(|e| e.0).collect();
    let missing: Vec<&String> = rules
        .iter()
        .filter(|r| !lines.contains(&r.as_str()) && !exempt.contains(&r.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "rules without a line in the sweep table: {missing:?}"
    );
    let unknown: Vec<&&str> = lines
        .iter()
        .filter(|l| !rules.iter().any(|r| r == *l) && !OPERATORS.contains(l))
        .collect();
    assert!(
        unknown.is_empty(),
        "table lines without a rule: {unknown:?}"
    );
    let forward: Vec<String> = SOURCES
        .iter()
        .flat_map(|s| names_of(s.1, "_jvp_full"))
        .collect();
    let no_forward: Vec<&String> = rules.iter().filter(|r| !forward.contains(r)).collect();
    assert!(
        no_forward.is_empty(),
        "rules without a forward rule `<name>_jvp_full`: {no_forward:?}"
    );
    let mut sorted = lines.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), lines.len(), "an op has two lines");
}

/// The case with each input of rank ≥ 2 given, one time in three, as a permuted copy `xᴾ`
/// that the case permutes back (with the rule of `permute`) before the op; the layout for the
/// failure message.
fn with_layout(case: Case, r: &mut Rng) -> (Case, String) {
    let perms: Vec<Option<Vec<usize>>> = case
        .inputs
        .iter()
        .map(|x| (x.rank() >= 2 && r.chance(1.0 / 3.0)).then(|| r.permutation(x.rank())))
        .collect();
    if perms.iter().all(Option::is_none) {
        return (case, "contiguous".into());
    }
    let layout = format!("permuted copies {perms:?}");
    let inputs = case.inputs.iter().zip(&perms).map(|(x, p)| match p {
        Some(p) => x.permute(p),
        None => x.clone(),
    });
    let inverse: Vec<Option<Vec<usize>>> = perms
        .iter()
        .map(|p| {
            p.as_ref().map(|p| {
                (0..p.len())
                    .map(|i| p.iter().position(|&j| j == i).unwrap())
                    .collect()
            })
        })
        .collect();
    let jvp = case.jvp.map(|jvp| {
        let inverse = inverse.clone();
        Box::new(move |bases: &[Tensor], ts: &[Option<TensorTangent>]| {
            let (xs, ts): (Vec<Tensor>, Vec<Option<TensorTangent>>) = bases
                .iter()
                .zip(ts)
                .zip(&inverse)
                .map(|((b, t), q)| match q {
                    Some(q) => b.permute_jvp_full(q, (t.as_ref(), None)),
                    None => (b.clone(), t.clone()),
                })
                .unzip();
            jvp(&xs, &ts)
        }) as draw::Jvp
    });
    let run = case.run;
    let wrapped = move |bases: &[Tensor]| {
        let mut back: Vec<Option<Pullback>> = Vec::new();
        let xs: Vec<Tensor> = bases
            .iter()
            .zip(&inverse)
            .map(|(b, q)| match q {
                Some(q) => {
                    let (x, pb) = b.permute_vjp_full(q, [true, false]);
                    back.push(Some(Box::new(move |d| vec![pb(d).0])));
                    x
                }
                None => {
                    back.push(None);
                    b.clone()
                }
            })
            .collect();
        let (y, pb) = run(&xs);
        let pb: Pullback = Box::new(move |d| {
            let ts = pb(d);
            ts.into_iter()
                .zip(back)
                .map(|(t, b)| match b {
                    Some(b) => b(t).pop().unwrap(),
                    None => t,
                })
                .collect()
        });
        (y, pb)
    };
    let case = Case {
        inputs: inputs.collect(),
        run: Box::new(wrapped),
        params: case.params,
        jvp,
    };
    (case, layout)
}

/// What one case checked.
#[derive(Default)]
struct Counts {
    cases: usize,
    derivatives: usize,
    dot_products: usize,
    forward: usize,
}

/// The F64 checks of `case`: every element, and the dot-product identity.
fn check_f64(case: &Case, seed: u64, counts: &mut Counts) -> Result<(), String> {
    let tolerance = Tolerance {
        seed,
        ..Tolerance::default()
    };
    let f = |xs: Vec<Tensor>| (case.run)(&xs);
    let g = check_gradient_with(tolerance, f, &case.inputs).map_err(|e| e.to_string())?;
    let d = check_dot_product_with(tolerance, f, &case.inputs).map_err(|e| e.to_string())?;
    counts.forward += forward::check_forward(case, seed ^ 0x5eed)?;
    counts.cases += 1;
    counts.derivatives += g.checked;
    counts.dot_products += d.checked;
    Ok(())
}

/// `|a − b| ≤ 1e-4·(1 + |b|)` elementwise, or what differs.
fn agree(what: &str, a: &[f64], b: &[f64]) -> Result<(), String> {
    if a.len() != b.len() {
        return Err(format!(
            "{what}: {} elements in F32, {} in F64",
            a.len(),
            b.len()
        ));
    }
    match a
        .iter()
        .zip(b)
        .position(|(x, y)| (x - y).abs().is_nan() || (x - y).abs() > 1e-4 * (1.0 + y.abs()))
    {
        Some(i) => Err(format!("{what}[{i}]: F32 gives {}, F64 {}", a[i], b[i])),
        None => Ok(()),
    }
}

/// The F32 case: value and pullback of a random cotangent against the F64 ones.
fn check_f32(case: &Case, r: &mut Rng, counts: &mut Counts) -> Result<(), String> {
    let (y64, pb64) = (case.run)(&case.inputs);
    let w = r.values(y64.shape());
    let g64 = pb64(TensorTangent::Dense(w.clone()));
    let xs: Vec<Tensor> = case.inputs.iter().map(|x| x.to_dtype(DType::F32)).collect();
    let (y32, pb32) = (case.run)(&xs);
    if y32.dtype() != DType::F32 || y32.shape() != y64.shape() {
        return Err(format!("F32 value is {:?} {:?}", y32.dtype(), y32.shape()));
    }
    agree("value", &y32.to_vec_f64(), &y64.to_vec_f64())?;
    let g32 = pb32(TensorTangent::Dense(w.to_dtype(DType::F32)));
    for (i, ((a, b), x)) in g32.into_iter().zip(g64).zip(&case.inputs).enumerate() {
        let (a, b) = (a.to_tensor_like(&xs[i]), b.to_tensor_like(x));
        // A rank-0 input may be an `f64` operand, whose tangent is a host number.
        if a.dtype() != DType::F32 && x.rank() > 0 {
            return Err(format!("tangent {i} is {:?}", a.dtype()));
        }
        agree(&format!("tangent {i}"), &a.to_vec_f64(), &b.to_vec_f64())?;
    }
    counts.cases += 1;
    Ok(())
}

/// The message of a caught panic.
fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    match (panic.downcast_ref::<String>(), panic.downcast_ref::<&str>()) {
        (Some(s), _) => s.clone(),
        (_, Some(s)) => s.to_string(),
        _ => "(no message)".into(),
    }
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn every_op_passes_the_gradient_checks_on_random_shapes() {
    let ops = table();
    let seed = env("ADJOINT_SWEEP_SEED", 2024);
    let draws = env(
        "ADJOINT_SWEEP_DRAWS",
        10_000u64.div_ceil(2 * ops.len() as u64),
    ) as usize;
    let mut r = Rng::new(seed);
    let mut counts = Counts::default();
    let mut failures = Vec::new();
    let start = std::time::Instant::now();
    for op in &ops {
        for draw in 0..draws {
            let (case, layout) = with_layout((op.draw)(&mut r), &mut r);
            let case_seed = r.next_u64();
            let result = catch_unwind(AssertUnwindSafe(|| {
                check_f64(&case, case_seed, &mut counts)?;
                check_f32(&case, &mut r, &mut counts)
            }))
            .unwrap_or_else(|panic| Err(format!("panicked: {}", panic_text(&*panic))));
            if let Err(e) = result {
                let shapes: Vec<&[usize]> = case.inputs.iter().map(Tensor::shape).collect();
                failures.push(format!(
                    "{} (draw {draw}, inputs {shapes:?}, {}, {layout}): {e}",
                    op.name, case.params
                ));
            }
        }
    }
    println!(
        "sweep: {} cases ({} ops × F64/F32 × {draws} draws of shapes and layouts, seed {seed}), \
         {} element derivatives and {} dot-product identities checked in F64, and {} forward \
         checks (J·v against central differences, ⟨J·v, w⟩ = ⟨v, Jᵀ·w⟩, no tangent in gives \
         none out), in {:.1?}",
        counts.cases,
        ops.len(),
        counts.derivatives,
        counts.dot_products,
        counts.forward,
        start.elapsed()
    );
    // The first failure of each op, then the count.
    let mut firsts: Vec<&String> = Vec::new();
    for f in &failures {
        let op = f.split(" (draw").next();
        if !firsts.iter().any(|g| g.split(" (draw").next() == op) {
            firsts.push(f);
        }
    }
    let firsts: Vec<&str> = firsts.iter().map(|s| s.as_str()).collect();
    for f in &failures {
        eprintln!("FAIL {f}");
    }
    assert!(
        failures.is_empty(),
        "{} failures, the first of each op:\n{}",
        failures.len(),
        firsts.join("\n")
    );
    assert!(
        counts.cases >= 10_000 || draws < 10_000usize.div_ceil(2 * ops.len()),
        "{} cases",
        counts.cases
    );
}
