//! ht's derivatives against hand-computed values and central differences (including the
//! mirrored model, which the manual tool's Jacobian gets wrong, and the identity rotation below
//! |a| = 10⁻⁴), and its input checks.

use super::input::{HtInput, Problem};
use super::model::{angle_axis_to_rotation_matrix_jvp, euler_angles_to_rotation_matrix_jvp};
use super::objective::{jacobian, objective};
use crate::evals::Input;
use std::f64::consts::FRAC_PI_2;

/// The input of the first case of a fixture file.
fn fixture(name: &str) -> HtInput {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let case: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    serde_json::from_value(case["input"].clone()).unwrap()
}

fn close(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance * b.abs().max(1.0)
}

/// Every Jacobian column against central differences of the objective: θₖ one at a time, and
/// the k-th barycentric coordinate of every point at once (the compressed columns).
fn check_by_differences(input: HtInput) {
    input.check().unwrap();
    let problem = Problem::new(input);
    let columns = jacobian(&problem);
    let offset = if problem.us.is_empty() { 0 } else { 2 };
    assert_eq!(columns.len(), offset + 26);
    let h = 1e-6;
    let difference = |shift: &dyn Fn(&mut Problem, f64)| -> Vec<f64> {
        let (mut up, mut down) = (problem.clone(), problem.clone());
        shift(&mut up, h);
        shift(&mut down, -h);
        let (a, b) = (objective(&up), objective(&down));
        a.iter().zip(&b).map(|(a, b)| (a - b) / (2.0 * h)).collect()
    };
    for k in 0..26 {
        let fd = difference(&|p: &mut Problem, h| p.theta[k] += h);
        for (row, (got, want)) in columns[offset + k].iter().zip(&fd).enumerate() {
            assert!(
                close(*got, *want, 1e-6),
                "θ{k}, row {row}: {got} against {want}"
            );
        }
    }
    for coordinate in 0..offset {
        let fd = difference(&|p: &mut Problem, h| p.us.iter_mut().for_each(|u| u[coordinate] += h));
        for (row, (got, want)) in columns[coordinate].iter().zip(&fd).enumerate() {
            assert!(
                close(*got, *want, 1e-6),
                "u{coordinate}, row {row}: {got} against {want}"
            );
        }
    }
}

#[test]
fn jacobians_match_central_differences() {
    check_by_differences(fixture("ht.jsonl"));
    check_by_differences(fixture("ht_simple.jsonl"));
    let mut mirrored = fixture("ht.jsonl");
    mirrored.data.model.is_mirrored = true;
    check_by_differences(mirrored);
    let mut still = fixture("ht_simple.jsonl");
    still.theta[..3].copy_from_slice(&[3e-5, -2e-5, 1e-5]);
    check_by_differences(still);
}

/// Each entry of the 3 × 3 matrix `got` within 10⁻¹⁵ of `want`.
fn assert_matrix(what: &str, got: [[f64; 3]; 3], want: [[f64; 3]; 3]) {
    for i in 0..3 {
        for j in 0..3 {
            let (g, w) = (got[i][j], want[i][j]);
            assert!((g - w).abs() < 1e-15, "{what}{i}{j} = {g}, not {w}");
        }
    }
}

#[test]
fn rotation_about_z_and_its_tangent() {
    // a = (0, 0, π/2): R = [[0, −1, 0], [1, 0, 0], [0, 0, 1]]; along ȧ = (0, 0, 1),
    // dR/dθ = [[−sin θ, −cos θ, 0], [cos θ, −sin θ, 0], [0, 0, 0]] = [[−1, 0, 0], [0, −1, 0], 0].
    let (r, dr) = angle_axis_to_rotation_matrix_jvp([0.0, 0.0, FRAC_PI_2], [0.0, 0.0, 1.0]);
    let want_r = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]];
    let want_dr = [[-1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, 0.0]];
    assert_matrix("R", r, want_r);
    assert_matrix("dR", dr, want_dr);
    // Below |a| = 10⁻⁴ the rotation is the identity, with a zero tangent.
    let (r, dr) = angle_axis_to_rotation_matrix_jvp([1e-5, 0.0, 0.0], [1.0, 2.0, 3.0]);
    assert_eq!(r, [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]);
    assert_eq!(dr, [[0.0; 3]; 3]);
}

#[test]
fn euler_rotation_and_its_tangent() {
    // Angles (x, z, y) = (0, 0, t): R = Ry(t) = [[c, 0, s], [0, 1, 0], [−s, 0, c]], its
    // derivative along the y angle [[−s, 0, c], [0, 0, 0], [−c, 0, −s]]; at t = π/2, c = 0.
    let (r, dr) = euler_angles_to_rotation_matrix_jvp([0.0, 0.0, FRAC_PI_2], [0.0, 0.0, 1.0]);
    let want_r = [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]];
    let want_dr = [[-1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, -1.0]];
    assert_matrix("R", r, want_r);
    assert_matrix("dR", dr, want_dr);
}

#[test]
fn inconsistent_sizes_are_named() {
    let broken = |change: &dyn Fn(&mut HtInput)| {
        let mut input = fixture("ht.jsonl");
        change(&mut input);
        input.check().unwrap_err()
    };
    assert_eq!(fixture("ht.jsonl").check(), Ok(()));
    assert_eq!(
        broken(&|i| i.theta.push(0.0)),
        "`theta` has 27 entries; the number of pose parameters is 26"
    );
    assert_eq!(
        broken(&|i| {
            i.us.pop();
        }),
        "`us` has 2 entries; the number of `data.points` is 3"
    );
    assert_eq!(
        broken(&|i| i.us[1].push(0.5)),
        "`us[1]` has 3 entries; each must have 2"
    );
    assert_eq!(
        broken(&|i| i.data.correspondences[2] = 7),
        "`data.correspondences` entry 2 is 7; there are 3 triangles"
    );
    assert_eq!(
        broken(&|i| i.data.model.parents[4] = 9),
        "`parents[4]` is 9; a parent is −1 or a bone before 4"
    );
    assert_eq!(
        broken(&|i| i.data.model.base_relatives[3][2].pop().map(drop).unwrap()),
        "`base_relatives[3][2]` has 3 entries; each must have 4"
    );
    assert_eq!(
        broken(&|i| i.data.model.weights[0].pop().map(drop).unwrap()),
        "`weights[0]` has 21 entries; each must have 22"
    );
    assert_eq!(
        broken(&|i| i.data.points[0].push(1.0)),
        "`data.points[0]` has 4 entries; each must have 3"
    );
    let simple = |change: &dyn Fn(&mut HtInput)| {
        let mut input = fixture("ht_simple.jsonl");
        change(&mut input);
        input.check().unwrap_err()
    };
    assert_eq!(
        simple(&|i| i.data.correspondences[0] = 9),
        "`data.correspondences` entry 0 is 9; there are 9 vertices"
    );
}
