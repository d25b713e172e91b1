//! `adjoint::nn`'s GPT: the gradients of a tiny model and of its parts against central
//! differences in `f64`, the tied embedding's two tangents, causality, the parameter names and
//! groups, dropout, and sampling.

mod common;

use adjoint::nn::{Gpt, GptConfig, Layer, Sampling};
use adjoint::prelude::*;
use adjoint::{ParamPath, Parameters};
use common::layers::{assert_close, check_layer, check_layer_with, grads, params, perturbed};
use common::tensors::f64_tensor;

/// 1 layer, 2 heads, width 8, context 4, vocab 5.
fn tiny(bias: bool, dropout: f64) -> GptConfig {
    GptConfig {
        layers: 1,
        heads: 2,
        width: 8,
        context: 4,
        vocab: 5,
        dropout,
        bias,
    }
}

/// A model of `config` in `f64` whose parameters are all uniform in [−1, 1), so that every
/// part of it (the norms' gains, the biases) matters to the gradient.
fn model(config: GptConfig) -> Gpt {
    let mut model = Gpt::new_on(config, 3, DType::F64, &Cpu);
    let mut seed = 100;
    model.visit_each_mut(&mut ParamPath::new(), &mut |_, t| {
        seed += 1;
        *t = f64_tensor(t.shape(), seed);
    });
    model
}

/// Ids `[2, 4]` using tokens 0..4 (token 4 never appears).
fn ids() -> Tensor {
    Tensor::from_vec(vec![0_u32, 3, 1, 3, 2, 2, 0, 1], &[2, 4])
}

#[test]
fn tiny_gpt_gradients_match_finite_differences() {
    let names = check_layer(&model(tiny(true, 0.0)), &ids(), false);
    let block = [
        "ln_1.weight",
        "ln_1.bias",
        "attn.c_attn.weight",
        "attn.c_attn.bias",
        "attn.c_proj.weight",
        "attn.c_proj.bias",
        "ln_2.weight",
        "ln_2.bias",
        "mlp.c_fc.weight",
        "mlp.c_fc.bias",
        "mlp.c_proj.weight",
        "mlp.c_proj.bias",
    ];
    let want: Vec<String> = ["wte.weight", "wpe.weight"]
        .into_iter()
        .map(String::from)
        .chain(block.iter().map(|n| format!("h.0.{n}")))
        .chain(["ln_f.weight".into(), "ln_f.bias".into()])
        .collect();
    assert_eq!(names, want);
}

#[test]
fn two_blocks_without_biases_on_a_shorter_sequence() {
    let config = GptConfig {
        layers: 2,
        ..tiny(false, 0.0)
    };
    let ids = Tensor::from_vec(vec![4_u32, 0, 2], &[1, 3]);
    let names = check_layer(&model(config), &ids, false);
    assert_eq!(names.len(), 2 + 2 * 6 + 1);
    assert!(names.iter().all(|n| !n.ends_with("bias")), "{names:?}");
}

/// The mean cross-entropy and its gradient with respect to every parameter.
#[test]
fn loss_gradient_matches_finite_differences() {
    const H: f64 = 1e-6;
    let model = model(tiny(true, 0.0));
    let targets = Tensor::from_vec(vec![3_u32, 1, 3, 4, 2, 0, 1, 1], &[2, 4]);
    let (loss, grad) = value_with_gradient(model.loss_vjp(&ids(), &targets));
    let f = |m: &Gpt| m.loss(&ids(), &targets).to_scalar();
    assert!((loss.to_scalar() - f(&model)).abs() < 1e-12);
    for (name, g) in grads(&model, &grad) {
        for (j, gj) in g.to_vec_f64().into_iter().enumerate() {
            let fd = (f(&perturbed(&model, &name, j, H)) - f(&perturbed(&model, &name, j, -H)))
                / (2.0 * H);
            assert_close(&format!("{name}[{j}]"), gj, fd);
        }
    }
}

/// The parts on their own, with respect to their input too.
#[test]
fn attention_mlp_and_block_gradients_match_finite_differences() {
    let model = model(tiny(true, 0.0));
    let x = f64_tensor(&[2, 4, 8], 7);
    let block = &model.h[0];
    assert_eq!(check_layer(&block.attn, &x, true).len(), 4);
    assert_eq!(check_layer(&block.mlp, &x, true).len(), 4);
    assert_eq!(check_layer(block, &x, true).len(), 12);
}

/// `wte.weight` is read by the embedding and by the output projection: its gradient is the
/// sum of both. Token 4 is not in the ids, so its row gets the projection's part alone,
/// `Σ_{b,t} ȳ[b, t, 4] · h[b, t, :]` with `h` the final norm's output, here computed by hand
/// from the model's parts.
#[test]
fn the_tied_embedding_gets_both_tangents() {
    let model = model(tiny(true, 0.0));
    let r = f64_tensor(&[2, 4, 5], 8);
    let (_, (grad, _)) = value_with_gradient(common::layers::probe_vjp(&model, &ids(), &r));
    let dwte = grad.wte.weight.unwrap().to_vec_f64();
    let x = model.wte.forward(&ids()) + model.wpe.weight.narrow(0, 0, 4);
    let h = model.ln_f.forward(&model.h[0].forward(&x)).to_vec_f64();
    let r = r.to_vec_f64();
    for c in 0..8 {
        let want: f64 = (0..8).map(|bt| r[bt * 5 + 4] * h[bt * 8 + c]).sum();
        assert!(
            (dwte[4 * 8 + c] - want).abs() < 1e-12,
            "{c}: {} vs {want}",
            dwte[4 * 8 + c]
        );
    }
    // A looked-up row gets more than the projection's part.
    let projection_only: f64 = (0..8).map(|bt| r[bt * 5] * h[bt * 8]).sum();
    assert!((dwte[0] - projection_only).abs() > 1e-3);
}

/// Changing a later token leaves the scores of every earlier position unchanged.
#[test]
fn attention_is_causal() {
    let model = model(tiny(true, 0.0));
    let a = model.forward(&Tensor::from_vec(vec![0_u32, 3, 1, 3], &[1, 4]));
    let b = model.forward(&Tensor::from_vec(vec![0_u32, 3, 4, 0], &[1, 4]));
    let (a, b) = (a.to_vec_f64(), b.to_vec_f64());
    assert_eq!(a[..10], b[..10]);
    assert_ne!(a[10..15], b[10..15]);
}

#[test]
fn parameter_count_and_groups() {
    // V·C + T·C + L·(2C + 3C² + C² + 4C² + 4C²) + C with C = 8, no biases.
    let model = Gpt::new(tiny(false, 0.0), 0);
    assert_eq!(model.parameter_count(), 40 + 32 + (16 + 12 * 64) + 8);
    let groups: Vec<(String, usize)> = params(&Gpt::new_on(tiny(true, 0.0), 0, DType::F64, &Cpu))
        .into_iter()
        .map(|(name, t)| {
            let g = Gpt::decay_group(&name, &t);
            (name, g)
        })
        .collect();
    for (name, group) in &groups {
        let decayed = name.ends_with("c_attn.weight")
            || name.ends_with("c_proj.weight")
            || name.ends_with("c_fc.weight");
        assert_eq!(*group, usize::from(!decayed), "{name}");
    }
}

/// nanoGPT's initialization: `N(0, 0.02²)`, the residual projections `0.02/√(2L)`.
#[test]
fn initialization_follows_nanogpt() {
    let config = GptConfig {
        layers: 2,
        width: 64,
        vocab: 300,
        context: 16,
        ..tiny(true, 0.0)
    };
    let model = Gpt::new(config, 1);
    let std = |t: &Tensor| {
        let v = t.to_vec_f64();
        (v.iter().map(|x| x * x).sum::<f64>() / v.len() as f64).sqrt()
    };
    assert!((std(&model.wte.weight) / 0.02 - 1.0).abs() < 0.03);
    assert!((std(&model.h[1].mlp.c_fc.weight) / 0.02 - 1.0).abs() < 0.03);
    assert!((std(&model.h[1].mlp.c_proj.weight) / 0.01 - 1.0).abs() < 0.03);
    let bias = model.h[0].attn.c_attn.bias.as_ref().unwrap();
    assert_eq!(bias.to_vec_f64(), [0.0; 192]);
    assert_eq!(Gpt::new(config, 1).wte.weight, model.wte.weight);
    assert_ne!(Gpt::new(config, 2).wte.weight, model.wte.weight);
    assert_ne!(model.h[0].attn.c_attn.weight, model.h[1].attn.c_attn.weight);
}

/// In training mode dropout draws masks (the same sequence for each fresh model, so the
/// gradients can be checked); in evaluation mode the model is deterministic.
#[test]
fn dropout_in_training_and_evaluation() {
    let config = tiny(true, 0.3);
    let make = || model(config);
    assert_eq!(check_layer_with(&make, &ids(), false).len(), 16);
    let mut m = make();
    assert_ne!(m.forward(&ids()), m.forward(&ids()));
    m.train(false);
    assert_eq!(m.forward(&ids()), m.forward(&ids()));
}

#[test]
fn generation_is_seeded_and_greedy_at_temperature_zero() {
    let model = model(tiny(true, 0.0));
    let sampling = Sampling {
        temperature: 1.0,
        top_k: Some(3),
        seed: 9,
    };
    // Longer than the context: the model reads the last 4 tokens.
    let tokens = model.generate(&[1, 2], 7, sampling);
    assert_eq!(tokens.len(), 7);
    assert!(tokens.iter().all(|&t| t < 5));
    assert_eq!(model.generate(&[1, 2], 7, sampling), tokens);
    let greedy = Sampling {
        temperature: 0.0,
        ..sampling
    };
    let first = model.generate(&[1, 2], 1, greedy)[0];
    let scores = model
        .forward(&Tensor::from_vec(vec![1_u32, 2], &[1, 2]))
        .to_vec_f64();
    let last = &scores[5..];
    let best = (0..5).fold(0, |b, i| if last[i] > last[b] { i } else { b });
    assert_eq!(first, best as u32);
}

#[test]
#[should_panic(expected = "a sequence of 5 tokens is longer than the context of 4")]
fn a_sequence_longer_than_the_context_is_refused() {
    Gpt::new(tiny(true, 0.0), 0).forward(&Tensor::from_vec(vec![0_u32; 5], &[1, 5]));
}

#[test]
#[should_panic(expected = "width 8 must be a positive multiple of heads 3")]
fn heads_must_divide_the_width() {
    Gpt::new(
        GptConfig {
            heads: 3,
            ..tiny(true, 0.0)
        },
        0,
    );
}
