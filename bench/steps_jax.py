"""The workloads of `benches/steps.rs` in JAX, jit-compiled, on the CPU, f32 (f64 for
Rosenbrock). MLP and CNN: `jit` of value_and_grad fused with the SGD update. RNN: `lax.scan`
(`rnn`) and a Python-unrolled loop (`rnn_unrolled`), both under `jit`.

Prints one JSON object: workload -> median seconds per step. Run by `bench/run.sh`, which sets
the XLA flags for 2 threads."""
import json
import sys

import jax
import jax.numpy as jnp

from common import median_seconds

jax.config.update("jax_enable_x64", True)
f32 = jnp.float32
LR = 0.01
key = jax.random.PRNGKey(0)


def init(shape, fan_in, dtype=f32):
    global key
    key, sub = jax.random.split(key)
    bound = fan_in ** -0.5
    return jax.random.uniform(sub, shape, dtype, -bound, bound)


def cross_entropy(logits, labels):
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


def training_step(loss):
    @jax.jit
    def step(params, x, labels):
        value, grads = jax.value_and_grad(loss)(params, x, labels)
        return value, [p - LR * g for p, g in zip(params, grads)]

    return step


def runner(step, params, x, labels):
    state = {"params": params}

    def run():
        value, state["params"] = step(state["params"], x, labels)
        value.block_until_ready()

    return run


def mlp():
    params = [init((784, 512), 784), init((512,), 784), init((512, 512), 512),
              init((512,), 512), init((512, 10), 512), init((10,), 512)]

    def loss(p, x, labels):
        h = jax.nn.relu(x @ p[0] + p[1])
        h = jax.nn.relu(h @ p[2] + p[3])
        return cross_entropy(h @ p[4] + p[5], labels)

    x = jax.random.uniform(jax.random.PRNGKey(1), (128, 784), f32)
    return runner(training_step(loss), params, x, jnp.arange(128) % 10)


def cnn():
    params = [init((32, 1, 3, 3), 9), init((32,), 9), init((64, 32, 3, 3), 288),
              init((64,), 288), init((9216, 128), 9216), init((128,), 9216),
              init((128, 10), 128), init((10,), 128)]

    def conv(x, w, b):
        y = jax.lax.conv_general_dilated(x, w, (1, 1), "VALID",
                                         dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return y + b[None, :, None, None]

    def loss(p, x, labels):
        h = jax.nn.relu(conv(x, p[0], p[1]))
        h = jax.nn.relu(conv(h, p[2], p[3]))
        h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        h = h.reshape(h.shape[0], -1)
        h = jax.nn.relu(h @ p[4] + p[5])
        return cross_entropy(h @ p[6] + p[7], labels)

    x = jax.random.uniform(jax.random.PRNGKey(2), (64, 1, 28, 28), f32)
    return runner(training_step(loss), params, x, jnp.arange(64) % 10)


def rnn(unrolled):
    w, u, b = init((32, 32), 32), init((16, 32), 16), init((32,), 32)
    xs = jax.random.uniform(jax.random.PRNGKey(3), (100, 1, 16), f32, -1, 1)

    def loss(w, u, b, xs):
        h = jnp.zeros((1, 32), f32)
        if unrolled:
            for t in range(100):
                h = jnp.tanh(h @ w + xs[t] @ u + b)
        else:
            h, _ = jax.lax.scan(lambda h, x: (jnp.tanh(h @ w + x @ u + b), None), h, xs)
        return jnp.sum(h * h)

    grad = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))
    return lambda: jax.block_until_ready(grad(w, u, b, xs))


def rosen(n):
    x = jnp.array([-1.2 + 0.037 * i for i in range(n)], dtype=jnp.float64)

    def f(x):
        a = 1 - x[:-1]
        b = x[1:] - x[:-1] ** 2
        return jnp.sum(a * a + 100 * b * b)

    grad = jax.jit(jax.grad(f))
    return lambda: jax.block_until_ready(grad(x))


if __name__ == "__main__":
    out = {}
    for name, make in [("mlp", mlp), ("cnn", cnn), ("rnn", lambda: rnn(False)),
                       ("rnn_unrolled", lambda: rnn(True)),
                       ("rosen2", lambda: rosen(2)), ("rosen100", lambda: rosen(100))]:
        out[name] = median_seconds(make())
        print(f"jax {name}: {out[name] * 1e3:.3f} ms", file=sys.stderr)
    print(json.dumps(out))
