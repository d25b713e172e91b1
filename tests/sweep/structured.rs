//! Sweep lines of the ops with structure: reductions, layout, indexing, softmax, mse, layer
//! norm, matmul, convolution and pooling.

use super::Op;
use super::draw::{Case, Rng, case};
use adjoint::prelude::*;

/// A random subset of the axes of `shape` (as drawn, some negative), for a reduction;
/// `nonempty`: only axes of size > 0 are picked (a mean or max over no element is undefined).
fn axes(r: &mut Rng, shape: &[usize], nonempty: bool) -> Vec<isize> {
    let rank = shape.len();
    let mut axes = Vec::new();
    for (a, &size) in shape.iter().enumerate() {
        if r.chance(0.5) && (!nonempty || size > 0) {
            let negative = r.chance(0.3);
            axes.push(if negative {
                a as isize - rank as isize
            } else {
                a as isize
            });
        }
    }
    axes
}

/// A reduction over random axes; `nonempty` as in [`axes`], which then also keeps the
/// reduced axes' sizes above 0.
fn reduction<P, R>(
    r: &mut Rng,
    nonempty: bool,
    f: impl Fn(&Tensor, &[isize], bool) -> (Tensor, P) + 'static,
    jvp: impl Fn(&Tensor, &[isize], bool, Option<&TensorTangent>) -> (Tensor, Option<TensorTangent>)
    + 'static,
) -> Case
where
    P: FnOnce(TensorTangent) -> R + 'static,
    R: super::draw::IntoTangents,
{
    let shape = r.shape(0, 3);
    let ax = axes(r, &shape, nonempty);
    let keepdim = r.chance(0.5);
    let params = format!("axes {ax:?}, keepdim {keepdim}");
    let ax2 = ax.clone();
    case(vec![r.values(&shape)], params, move |xs| {
        f(&xs[0], &ax, keepdim)
    })
    .with_jvp(move |xs, ts| jvp(&xs[0], &ax2, keepdim, ts[0].as_ref()))
}

/// The tangent of a list of parts (zero for a part's `None`), `None` when no part has one.
fn list_tangent(ts: &[Option<TensorTangent>]) -> Option<Vec<TensorTangent>> {
    ts.iter().any(Option::is_some).then(|| {
        ts.iter()
            .map(|t| t.clone().unwrap_or(TensorTangent::Zero))
            .collect()
    })
}

/// Every structured line.
pub fn ops() -> Vec<Op> {
    let mut ops = reductions();
    ops.extend(layouts());
    ops.extend(indexing());
    ops.extend(losses());
    ops.extend(products());
    ops
}

fn reductions() -> Vec<Op> {
    vec![
        Op {
            name: "sum",
            draw: |r| {
                reduction(
                    r,
                    false,
                    |x, a, k| x.sum_vjp_full(a, k, [true, false, false]),
                    |x, a, k, t| x.sum_jvp_full(a, k, (t, None, None)),
                )
            },
        },
        Op {
            name: "mean",
            draw: |r| {
                reduction(
                    r,
                    true,
                    |x, a, k| x.mean_vjp_full(a, k, [true, false, false]),
                    |x, a, k, t| x.mean_jvp_full(a, k, (t, None, None)),
                )
            },
        },
        Op {
            name: "max",
            draw: |r| {
                reduction(
                    r,
                    true,
                    |x, a, k| x.max_vjp_full(a, k, [true, false, false]),
                    |x, a, k, t| x.max_jvp_full(a, k, (t, None, None)),
                )
            },
        },
        Op {
            name: "min",
            draw: |r| {
                reduction(
                    r,
                    true,
                    |x, a, k| x.min_vjp_full(a, k, [true, false, false]),
                    |x, a, k, t| x.min_jvp_full(a, k, (t, None, None)),
                )
            },
        },
        Op {
            name: "var",
            draw: |r| {
                reduction(
                    r,
                    true,
                    |x, a, k| x.var_vjp_full(a, k, [true, false, false]),
                    |x, a, k, t| x.var_jvp_full(a, k, (t, None, None)),
                )
            },
        },
        Op {
            name: "sum_all",
            draw: |r| {
                let shape = r.shape(0, 3);
                let x = r.values(&shape);
                case(vec![x], String::new(), |xs| xs[0].sum_all_vjp_full([true]))
                    .with_jvp(|xs, ts| xs[0].sum_all_jvp_full((ts[0].as_ref(),)))
            },
        },
        Op {
            name: "mean_all",
            draw: |r| {
                let shape = r.shape1(0, 3);
                let x = r.values(&shape);
                case(vec![x], String::new(), |xs| xs[0].mean_all_vjp_full([true]))
                    .with_jvp(|xs, ts| xs[0].mean_all_jvp_full((ts[0].as_ref(),)))
            },
        },
    ]
}

fn layouts() -> Vec<Op> {
    vec![
        Op {
            name: "reshape",
            draw: |r| {
                let shape = r.shape(0, 3);
                let n: usize = shape.iter().product();
                let to = [vec![n], vec![1, n], vec![n, 1, 1]][r.below(3)].clone();
                let params = format!("to {to:?}");
                let to2 = to.clone();
                case(vec![r.values(&shape)], params, move |xs| {
                    xs[0].reshape_vjp_full(&to, [true, false])
                })
                .with_jvp(move |xs, ts| xs[0].reshape_jvp_full(&to2, (ts[0].as_ref(), None)))
            },
        },
        Op {
            name: "broadcast_to",
            draw: |r| {
                let to = r.shape(0, 3);
                let from = r.partner(&to);
                let params = format!("to {to:?}");
                let to2 = to.clone();
                case(vec![r.values(&from)], params, move |xs| {
                    xs[0].broadcast_to_vjp_full(&to, [true, false])
                })
                .with_jvp(move |xs, ts| xs[0].broadcast_to_jvp_full(&to2, (ts[0].as_ref(), None)))
            },
        },
        Op {
            name: "squeeze",
            draw: |r| {
                let mut shape = r.shape(0, 2);
                let a = r.between(0, shape.len());
                shape.insert(a, 1);
                let axis = a as isize;
                case(vec![r.values(&shape)], format!("axis {axis}"), move |xs| {
                    xs[0].squeeze_vjp_full(axis, [true, false])
                })
                .with_jvp(move |xs, ts| xs[0].squeeze_jvp_full(axis, (ts[0].as_ref(), None)))
            },
        },
        Op {
            name: "unsqueeze",
            draw: |r| {
                let shape = r.shape(0, 3);
                let axis = r.between(0, shape.len()) as isize;
                case(vec![r.values(&shape)], format!("axis {axis}"), move |xs| {
                    xs[0].unsqueeze_vjp_full(axis, [true, false])
                })
                .with_jvp(move |xs, ts| xs[0].unsqueeze_jvp_full(axis, (ts[0].as_ref(), None)))
            },
        },
        Op {
            name: "flatten_from",
            draw: |r| {
                let shape = r.shape(0, 3);
                let start = r.between(0, shape.len());
                case(
                    vec![r.values(&shape)],
                    format!("start {start}"),
                    move |xs| xs[0].flatten_from_vjp_full(start, [true, false]),
                )
                .with_jvp(move |xs, ts| xs[0].flatten_from_jvp_full(start, (ts[0].as_ref(), None)))
            },
        },
        Op {
            name: "permute",
            draw: |r| {
                let shape = r.shape(0, 4);
                let perm = r.permutation(shape.len());
                let params = format!("perm {perm:?}");
                let perm2 = perm.clone();
                case(vec![r.values(&shape)], params, move |xs| {
                    xs[0].permute_vjp_full(&perm, [true, false])
                })
                .with_jvp(move |xs, ts| xs[0].permute_jvp_full(&perm2, (ts[0].as_ref(), None)))
            },
        },
        Op {
            name: "transpose",
            draw: |r| {
                let shape = r.shape(1, 4);
                let (a, b) = (r.axis(shape.len()), r.axis(shape.len()));
                let params = format!("axes {a}, {b}");
                case(vec![r.values(&shape)], params, move |xs| {
                    xs[0].transpose_vjp_full(a, b, [true, false, false])
                })
                .with_jvp(move |xs, ts| {
                    xs[0].transpose_jvp_full(a, b, (ts[0].as_ref(), None, None))
                })
            },
        },
        Op {
            name: "t",
            draw: |r| {
                let shape = r.shape(2, 4);
                case(vec![r.values(&shape)], String::new(), |xs| {
                    xs[0].t_vjp_full([true])
                })
                .with_jvp(|xs, ts| xs[0].t_jvp_full((ts[0].as_ref(),)))
            },
        },
    ]
}

fn indexing() -> Vec<Op> {
    vec![
        Op {
            name: "narrow",
            draw: |r| {
                let shape = r.shape(1, 3);
                let axis = r.axis(shape.len());
                let size = shape[axis.rem_euclid(shape.len() as isize) as usize];
                let start = r.between(0, size);
                let len = r.between(0, size - start);
                let params = format!("axis {axis}, {start}..{}", start + len);
                case(vec![r.values(&shape)], params, move |xs| {
                    xs[0].narrow_vjp_full(axis, start, len, [true; 4])
                })
                .with_jvp(move |xs, ts| {
                    xs[0].narrow_jvp_full(axis, start, len, (ts[0].as_ref(), None, None, None))
                })
            },
        },
        Op {
            name: "cat",
            draw: |r| {
                let shape = r.shape(1, 3);
                let axis = r.axis(shape.len());
                let a = axis.rem_euclid(shape.len() as isize) as usize;
                let parts: Vec<Tensor> = (0..r.between(1, 3))
                    .map(|_| {
                        let mut s = shape.clone();
                        s[a] = r.dim();
                        r.values(&s)
                    })
                    .collect();
                case(parts, format!("axis {axis}"), move |xs| {
                    Tensor::cat_vjp_full(&xs.to_vec(), axis, [true, false])
                })
                .with_jvp(move |xs, ts| {
                    Tensor::cat_jvp_full(&xs.to_vec(), axis, (list_tangent(ts).as_ref(), None))
                })
            },
        },
        Op {
            name: "stack",
            draw: |r| {
                let shape = r.shape(0, 2);
                let axis = r.between(0, shape.len()) as isize;
                let parts: Vec<Tensor> = (0..r.between(1, 3)).map(|_| r.values(&shape)).collect();
                case(parts, format!("axis {axis}"), move |xs| {
                    Tensor::stack_vjp_full(&xs.to_vec(), axis, [true, false])
                })
                .with_jvp(move |xs, ts| {
                    Tensor::stack_jvp_full(&xs.to_vec(), axis, (list_tangent(ts).as_ref(), None))
                })
            },
        },
        Op {
            name: "index_select",
            draw: |r| {
                let mut shape = r.shape(1, 3);
                let axis = r.axis(shape.len());
                let a = axis.rem_euclid(shape.len() as isize) as usize;
                shape[a] = shape[a].max(1);
                let count = r.between(0, 4);
                let ids = r.ids(&[count], shape[a]);
                let params = format!("axis {axis}, ids {:?}", ids.to_vec_u32());
                let ids2 = ids.clone();
                case(vec![r.values(&shape)], params, move |xs| {
                    let (y, pb) = xs[0].index_select_vjp_full(axis, &ids, [true, false, false]);
                    (y, move |d| pb(d).0)
                })
                .with_jvp(move |xs, ts| {
                    xs[0].index_select_jvp_full(axis, &ids2, (ts[0].as_ref(), None, None))
                })
            },
        },
        Op {
            name: "embedding",
            draw: |r| {
                let table = [r.dim1(), r.dim()];
                let ids_shape = r.shape(0, 2);
                let ids = r.ids(&ids_shape, table[0]);
                let params = format!("ids {:?} {:?}", ids.shape(), ids.to_vec_u32());
                let ids2 = ids.clone();
                case(vec![r.values(&table)], params, move |xs| {
                    let (y, pb) = xs[0].embedding_vjp_full(&ids, [true, false]);
                    (y, move |d| pb(d).0)
                })
                .with_jvp(move |xs, ts| xs[0].embedding_jvp_full(&ids2, (ts[0].as_ref(), None)))
            },
        },
    ]
}

fn losses() -> Vec<Op> {
    vec![
        Op {
            name: "softmax",
            draw: |r| {
                let shape = r.shape(1, 3);
                let axis = r.axis(shape.len());
                case(vec![r.values(&shape)], format!("axis {axis}"), move |xs| {
                    xs[0].softmax_vjp_full(axis, [true, false])
                })
                .with_jvp(move |xs, ts| xs[0].softmax_jvp_full(axis, (ts[0].as_ref(), None)))
            },
        },
        Op {
            name: "log_softmax",
            draw: |r| {
                let shape = r.shape(1, 3);
                let axis = r.axis(shape.len());
                case(vec![r.values(&shape)], format!("axis {axis}"), move |xs| {
                    xs[0].log_softmax_vjp_full(axis, [true, false])
                })
                .with_jvp(move |xs, ts| xs[0].log_softmax_jvp_full(axis, (ts[0].as_ref(), None)))
            },
        },
        Op {
            name: "mse",
            draw: |r| {
                let shape = r.shape1(0, 3);
                let inputs = vec![r.values(&shape), r.values(&shape)];
                case(inputs, String::new(), |xs| {
                    xs[0].mse_vjp_full(&xs[1], [true, true])
                })
                .with_jvp(|xs, ts| xs[0].mse_jvp_full(&xs[1], (ts[0].as_ref(), ts[1].as_ref())))
            },
        },
        Op {
            name: "layer_norm",
            draw: |r| {
                let mut shape = r.shape(0, 2);
                let d = r.dim1();
                shape.push(d);
                let inputs = vec![r.values(&shape), r.values(&[d]), r.values(&[d])];
                case(inputs, String::new(), |xs| {
                    let (y, pb) =
                        xs[0].layer_norm_vjp_full(&xs[1], &xs[2], 1e-5, [true, true, true, false]);
                    (y, move |d| {
                        let (x, g, b, _) = pb(d);
                        (x, g, b)
                    })
                })
                .with_jvp(|xs, ts| {
                    let t = (ts[0].as_ref(), ts[1].as_ref(), ts[2].as_ref(), None);
                    xs[0].layer_norm_jvp_full(&xs[1], &xs[2], 1e-5, t)
                })
            },
        },
    ]
}

/// Convolution options: stride 1–2, padding 0–1, dilation 1–2, the given groups.
fn conv_options(r: &mut Rng, groups: usize) -> Conv2d {
    Conv2d {
        stride: [r.between(1, 2), r.between(1, 2)],
        padding: [r.between(0, 1), r.between(0, 1)],
        dilation: [r.between(1, 2), r.between(1, 2)],
        groups,
    }
}

/// An `[N, C, H, W]` input big enough for `kernel` under `o`.
fn image(r: &mut Rng, c: usize, kernel: [usize; 2], o: &Conv2d) -> Tensor {
    let side = |i: usize, r: &mut Rng| {
        let reach = o.dilation[i] * (kernel[i] - 1) + 1;
        (reach.saturating_sub(2 * o.padding[i])).max(1) + r.between(0, 2)
    };
    let (h, w) = (side(0, r), side(1, r));
    let n = r.between(1, 2);
    r.values(&[n, c, h, w])
}

fn products() -> Vec<Op> {
    vec![
        Op {
            name: "matmul",
            draw: |r| {
                let (m, k, n) = (r.dim(), r.dim(), r.dim());
                let batch = r.shape(0, 2);
                let other = r.partner(&batch);
                let (ba, bb) = if r.chance(0.5) {
                    (batch, other)
                } else {
                    (other, batch)
                };
                let a = [ba, vec![m, k]].concat();
                let b = [bb, vec![k, n]].concat();
                case(vec![r.values(&a), r.values(&b)], String::new(), |xs| {
                    xs[0].matmul_vjp_full(&xs[1], [true, true])
                })
                .with_jvp(|xs, ts| xs[0].matmul_jvp_full(&xs[1], (ts[0].as_ref(), ts[1].as_ref())))
            },
        },
        Op {
            name: "conv2d",
            draw: |r| conv(r, false),
        },
        Op {
            name: "conv2d_with_bias",
            draw: |r| conv(r, true),
        },
        Op {
            name: "max_pool2d",
            draw: |r| pool(r, true),
        },
        Op {
            name: "avg_pool2d",
            draw: |r| pool(r, false),
        },
    ]
}

fn conv(r: &mut Rng, bias: bool) -> Case {
    let groups = r.between(1, 2);
    let (c, o) = (groups * r.dim1(), groups * r.dim1());
    let kernel = [r.dim1(), r.dim1()];
    let opts = conv_options(r, groups);
    let x = image(r, c, kernel, &opts);
    let w = r.values(&[o, c / groups, kernel[0], kernel[1]]);
    let params = format!("{opts:?}");
    if bias {
        let inputs = vec![x, w, r.values(&[o])];
        case(inputs, params, move |xs| {
            let (y, pb) =
                xs[0].conv2d_with_bias_vjp_full(&xs[1], &xs[2], opts, [true, true, true, false]);
            (y, move |d| {
                let (x, w, b, _) = pb(d);
                (x, w, b)
            })
        })
        .with_jvp(move |xs, ts| {
            let t = (ts[0].as_ref(), ts[1].as_ref(), ts[2].as_ref(), None);
            xs[0].conv2d_with_bias_jvp_full(&xs[1], &xs[2], opts, t)
        })
    } else {
        case(vec![x, w], params, move |xs| {
            xs[0].conv2d_vjp_full(&xs[1], opts, [true, true, false])
        })
        .with_jvp(move |xs, ts| {
            xs[0].conv2d_jvp_full(&xs[1], opts, (ts[0].as_ref(), ts[1].as_ref(), None))
        })
    }
}

fn pool(r: &mut Rng, max: bool) -> Case {
    let kernel = [r.dim1(), r.dim1()];
    let mut opts = conv_options(r, 1);
    opts.dilation = [1, 1];
    opts.padding = [
        opts.padding[0].min(kernel[0] / 2),
        opts.padding[1].min(kernel[1] / 2),
    ];
    let c = r.dim1();
    let x = image(r, c, kernel, &opts);
    let params = format!("kernel {kernel:?}, {opts:?}");
    if max {
        case(vec![x], params, move |xs| {
            xs[0].max_pool2d_vjp_full(kernel, opts, [true, false, false])
        })
        .with_jvp(move |xs, ts| {
            xs[0].max_pool2d_jvp_full(kernel, opts, (ts[0].as_ref(), None, None))
        })
    } else {
        case(vec![x], params, move |xs| {
            xs[0].avg_pool2d_vjp_full(kernel, opts, [true, false, false])
        })
        .with_jvp(move |xs, ts| {
            xs[0].avg_pool2d_jvp_full(kernel, opts, (ts[0].as_ref(), None, None))
        })
    }
}
