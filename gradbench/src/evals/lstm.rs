//! lstm: ADBench's LSTM with diagonal weight matrices, its loss over a character sequence, and
//! the loss's gradient with respect to the main and extra parameters from the pullback of the
//! loops below.
//!
//! Per step t, with input yₜ (each of the B bits of character t) scaled by the input weights, each
//! layer ℓ updates its hidden state h and cell state s unit by unit:
//! fᵢ = σ(xᵢ w_fᵢ + b_fᵢ), gᵢ = σ(hᵢ w_gᵢ + b_gᵢ), oᵢ = σ(xᵢ w_oᵢ + b_oᵢ),
//! cᵢ = tanh(hᵢ w_cᵢ + b_cᵢ), sᵢ ← sᵢ fᵢ + gᵢ cᵢ, hᵢ ← oᵢ tanh(sᵢ),
//! x being the layer's input (the previous layer's new h). The prediction is
//! pᵢ = hᵢ v_oᵢ + v_bᵢ of the last layer, and the loss
//! L = −(1 / ((C − 1)·B)) Σₜ Σᵢ yₜ₊₁,ᵢ (pᵢ − ln(Σⱼ e^{pⱼ} + 2)).
//! The gradient is that of L through every step (reverse mode over the whole sequence); its
//! terms are the chain rule through σ′ = σ(1 − σ), tanh′ = 1 − tanh² and the log-sum-exp's
//! softmax, summed over steps.

use super::rows::Rows;
use super::{Input, Module, timed};
use adjoint::prelude::*;
use serde::Deserialize;

/// The eval's input.
#[derive(Deserialize)]
pub struct Lstm {
    /// Per layer, a row of weights and a row of biases, each the forget, input, output and
    /// change gates' B values: 2ℓ rows of 4B.
    pub main_params: Rows,
    /// The input weights, output weights and output biases: 3 rows of B.
    pub extra_params: Rows,
    /// Per layer, the initial hidden and cell states: 2ℓ rows of B.
    pub state: Rows,
    /// The characters' bits: C rows of B.
    pub sequence: Rows,
}

impl Lstm {
    /// The number of layers ℓ, characters C and bits per character B, as the reference reads
    /// them off the main parameters and the sequence.
    fn sizes(&self) -> (usize, usize, usize) {
        let b = self.main_params.lengths.first().map_or(0, |len| len / 4);
        (self.main_params.count() / 2, self.sequence.count(), b)
    }
}

impl Input for Lstm {
    fn check(&self) -> Result<(), String> {
        let (l, c, b) = self.sizes();
        if l == 0 || b == 0 || !self.main_params.count().is_multiple_of(2) {
            return Err(format!(
                "`main_params` has {} rows of {:?} numbers; expected 2ℓ rows of 4B with ℓ, B ≥ 1",
                self.main_params.count(),
                self.main_params.lengths.first()
            ));
        }
        if c < 2 {
            return Err(format!(
                "`sequence` has {c} rows; the loss predicts each character from the one before, so it needs at least 2"
            ));
        }
        self.main_params.expect("main_params", 2 * l, 4 * b)?;
        self.extra_params.expect("extra_params", 3, b)?;
        self.state.expect("state", 2 * l, b)?;
        self.sequence.expect("sequence", c, b)
    }
}

/// The loss L, computed as the C++ reference does: step by step, layer by layer, unit by
/// unit.
// Loops over index ranges: the pullback runs such loops again instead of taping them; the
// arguments are the eval's arrays and sizes as the reference takes them.
#[allow(clippy::needless_range_loop, clippy::too_many_arguments)]
#[differentiable]
pub fn lstm(
    main_params: &[f64],
    extra_params: &[f64],
    #[no_derivative] state: &[f64],
    #[no_derivative] sequence: &[f64],
    l: usize,
    c: usize,
    b: usize,
) -> f64 {
    // Per layer, the hidden and cell states.
    let mut hs: Vec<Vec<f64>> = (0..l)
        .map(|j| state[2 * b * j..2 * b * j + b].to_vec())
        .collect();
    let mut cs: Vec<Vec<f64>> = (0..l)
        .map(|j| state[2 * b * j + b..2 * b * (j + 1)].to_vec())
        .collect();
    let mut total = 0.0;
    for t in 0..c - 1 {
        let mut input = vec![0.0; b];
        for i in 0..b {
            input[i] = sequence[t * b + i] * extra_params[i];
        }
        for layer in 0..l {
            let w = 8 * b * layer;
            let (hidden, cell) = (hs[layer].clone(), cs[layer].clone());
            let (mut hidden_next, mut cell_next) = (vec![0.0; b], vec![0.0; b]);
            // Unit i reads only unit i of the states, so each unit's update is written to the
            // new states (the reference overwrites the states in place, unit by unit).
            for i in 0..b {
                let forget = 1.0
                    / (1.0 + (-(input[i] * main_params[w + i] + main_params[w + 4 * b + i])).exp());
                let ingate = 1.0
                    / (1.0
                        + (-(hidden[i] * main_params[w + b + i] + main_params[w + 5 * b + i]))
                            .exp());
                let outgate = 1.0
                    / (1.0
                        + (-(input[i] * main_params[w + 2 * b + i] + main_params[w + 6 * b + i]))
                            .exp());
                let change =
                    (hidden[i] * main_params[w + 3 * b + i] + main_params[w + 7 * b + i]).tanh();
                let c = cell[i] * forget + ingate * change;
                cell_next[i] = c;
                hidden_next[i] = outgate * c.tanh();
            }
            hs[layer] = hidden_next.clone();
            cs[layer] = cell_next;
            input = hidden_next;
        }
        let mut ypred = vec![0.0; b];
        for i in 0..b {
            ypred[i] = input[i] * extra_params[b + i] + extra_params[2 * b + i];
        }
        let mut sum = 0.0;
        for i in 0..b {
            sum += ypred[i].exp();
        }
        let lse = (sum + 2.0).ln();
        for i in 0..b {
            total += sequence[(t + 1) * b + i] * (ypred[i] - lse);
        }
    }
    -total / ((c - 1) * b) as f64
}

/// L at the input.
fn objective(i: &Lstm) -> f64 {
    let (l, c, b) = i.sizes();
    let (main, extra) = (&i.main_params.data, &i.extra_params.data);
    lstm(main, extra, &i.state.data, &i.sequence.data, l, c, b)
}

/// ∇L: the gradient of the main parameters by rows, then that of the extra parameters by rows.
fn jacobian(i: &Lstm) -> Vec<f64> {
    let (l, c, b) = i.sizes();
    let (main, extra) = (&i.main_params.data, &i.extra_params.data);
    let (mut dmain, mut dextra) = gradient(lstm_vjp(
        main,
        extra,
        &i.state.data,
        &i.sequence.data,
        l,
        c,
        b,
    ));
    dmain.resize(main.len(), 0.0);
    dextra.resize(extra.len(), 0.0);
    dmain.extend(dextra);
    dmain
}

/// `objective` = L, `jacobian` = ∇L with respect to the main and extra parameters.
pub const MODULE: Module = Module {
    name: "lstm",
    functions: &[
        ("objective", |input| timed(input, objective)),
        ("jacobian", |input| timed(input, jacobian)),
    ],
};

#[cfg(test)]
mod tests {
    use crate::evals::evaluate;
    use serde_json::json;

    #[test]
    fn bad_shapes_name_the_field_and_the_shapes() {
        let input = json!({"main_params": [[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8]], "extra_params": [[0.1], [0.2], [0.3]],
                           "state": [[0.1], [0.2]], "sequence": [[1.0], [0.0], [1.0]]});
        assert!(evaluate("lstm", "jacobian", input.clone()).is_ok());
        let mut bad = input.clone();
        bad["state"] = json!([[0.1], [0.2], [0.3]]);
        let e = evaluate("lstm", "objective", bad)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("`state` has 3 rows; expected 2 rows of 1"),
            "{e}"
        );
        let mut bad = input;
        bad["sequence"] = json!([[1.0]]);
        let e = evaluate("lstm", "objective", bad)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("`sequence` has 1 rows"), "{e}");
    }
}
