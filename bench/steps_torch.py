"""The workloads of `benches/steps.rs` in PyTorch eager, 2 threads, f32 (f64 for Rosenbrock).

Prints one JSON object: workload -> median seconds per step, plus `sgemm_gflops`, the best
2-thread SGEMM rate of torch at n = 1024 and 2048. Run by `bench/run.sh`.

With `--device cuda`: the MLP, CNN and GPT steps only, on GPU 0 with torch's default settings and
threads, each timed step followed by `torch.cuda.synchronize()` (as adjoint's CUDA steps end by
reading the loss); no SGEMM rate. Run by `scripts/gpu-check.sh`."""
import argparse
import json
import sys

import torch
import torch.nn.functional as F

from common import median_seconds

LR = 0.01
CPU = torch.device("cpu")


def init(shape, fan_in, dtype=torch.float32, device=CPU):
    bound = fan_in ** -0.5
    return torch.empty(shape, dtype=dtype, device=device).uniform_(-bound, bound).requires_grad_()


def sgd_step(params, loss_fn):
    """Forward, loss, backward and an in-place SGD update."""
    loss = loss_fn()
    grads = torch.autograd.grad(loss, params)
    with torch.no_grad():
        for p, g in zip(params, grads):
            p.add_(g, alpha=-LR)
    return loss


def mlp(device=CPU):
    # Weights [in, out] and x @ W, as in the Rust version.
    shapes = [((784, 512), 784), ((512,), 784), ((512, 512), 512), ((512,), 512),
              ((512, 10), 512), ((10,), 512)]
    params = [init(shape, fan_in, device=device) for shape, fan_in in shapes]
    x = torch.rand(128, 784, device=device)
    labels = torch.arange(128, device=device) % 10

    def loss():
        w1, b1, w2, b2, w3, b3 = params
        h1 = torch.relu(x @ w1 + b1)
        h2 = torch.relu(h1 @ w2 + b2)
        return F.cross_entropy(h2 @ w3 + b3, labels)

    return lambda: sgd_step(params, loss)


def cnn(device=CPU):
    shapes = [((32, 1, 3, 3), 9), ((32,), 9), ((64, 32, 3, 3), 288), ((64,), 288),
              ((9216, 128), 9216), ((128,), 9216), ((128, 10), 128), ((10,), 128)]
    params = [init(shape, fan_in, device=device) for shape, fan_in in shapes]
    x = torch.rand(64, 1, 28, 28, device=device)
    labels = torch.arange(64, device=device) % 10

    def loss():
        c1w, c1b, c2w, c2b, f1w, f1b, f2w, f2b = params
        h = torch.relu(F.conv2d(x, c1w, c1b))
        h = torch.relu(F.conv2d(h, c2w, c2b))
        h = torch.flatten(F.max_pool2d(h, 2), 1)
        h = torch.relu(h @ f1w + f1b)
        return F.cross_entropy(h @ f2w + f2b, labels)

    return lambda: sgd_step(params, loss)


# The tiny GPT of BASELINES.md (nanoGPT's model: no biases, exact GELU, tied embedding).
GPT = dict(layers=2, heads=4, width=128, context=64, vocab=65, batch=16)


class Block(torch.nn.Module):
    def __init__(self, c, heads, sdpa):
        super().__init__()
        self.heads, self.sdpa = heads, sdpa
        self.ln_1 = torch.nn.LayerNorm(c, bias=False)
        self.c_attn = torch.nn.Linear(c, 3 * c, bias=False)
        self.attn_proj = torch.nn.Linear(c, c, bias=False)
        self.ln_2 = torch.nn.LayerNorm(c, bias=False)
        self.c_fc = torch.nn.Linear(c, 4 * c, bias=False)
        self.mlp_proj = torch.nn.Linear(4 * c, c, bias=False)

    def attention(self, x):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2)
                   for z in self.c_attn(x).split(c, dim=2))
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            s = (q @ k.transpose(-2, -1)) * (c // self.heads) ** -0.5
            mask = torch.ones(t, t, dtype=torch.bool).triu(1)
            y = F.softmax(s.masked_fill(mask, float("-inf")), dim=-1) @ v
        return self.attn_proj(y.transpose(1, 2).contiguous().view(b, t, c))

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class Gpt(torch.nn.Module):
    def __init__(self, sdpa):
        super().__init__()
        c = GPT["width"]
        self.wte = torch.nn.Embedding(GPT["vocab"], c)
        self.wpe = torch.nn.Embedding(GPT["context"], c)
        self.h = torch.nn.ModuleList(Block(c, GPT["heads"], sdpa) for _ in range(GPT["layers"]))
        self.ln_f = torch.nn.LayerNorm(c, bias=False)
        for p in self.parameters():  # nanoGPT's initialization, without its residual scaling
            if p.dim() >= 2:
                torch.nn.init.normal_(p, 0.0, 0.02)

    def forward(self, ids, targets):
        t = ids.shape[1]
        x = self.wte(ids) + self.wpe(torch.arange(t, device=ids.device))
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def gpt(sdpa=True, device=CPU):
    """One AdamW step of the tiny GPT: decay 0.1 on the linear layers' matrices only, as
    `benches/steps.rs` (and nanoGPT, but for the embeddings); `sdpa=False` writes the attention
    out (matmul, masked_fill, softmax, matmul) as adjoint's model does."""
    model = Gpt(sdpa).to(device)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and not n.startswith("w")]
    rest = [p for n, p in model.named_parameters() if p.dim() < 2 or n.startswith("w")]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": rest, "weight_decay": 0.0}], lr=1e-3, betas=(0.9, 0.99))
    shape = (GPT["batch"], GPT["context"])
    x = torch.randint(GPT["vocab"], shape, device=device)
    y = torch.randint(GPT["vocab"], shape, device=device)

    def step():
        loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    return step


def rnn():
    w, u, b = init((32, 32), 32), init((16, 32), 16), init((32,), 32)
    xs = [torch.rand(1, 16) * 2 - 1 for _ in range(100)]

    def grad():
        h = torch.zeros(1, 32)
        for x in xs:
            h = torch.tanh(h @ w + x @ u + b)
        return torch.autograd.grad((h * h).sum(), (w, u, b))

    return grad


def rosen(n):
    x = torch.tensor([-1.2 + 0.037 * i for i in range(n)], dtype=torch.float64,
                     requires_grad=True)

    def grad():
        a = 1 - x[:-1]
        b = x[1:] - x[:-1] ** 2
        return torch.autograd.grad((a * a + 100 * b * b).sum(), x)

    return grad


def sgemm_gflops():
    best = 0.0
    for n in (1024, 2048):
        a, b = torch.rand(n, n), torch.rand(n, n)
        t = median_seconds(lambda: a @ b, samples=10)
        best = max(best, 2 * n ** 3 / t / 1e9)
    return best


def synchronized(step):
    """`step` followed by waiting for the GPU's queued work."""
    def call():
        step()
        torch.cuda.synchronize()

    return call


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--tf32", action="store_true",
                        help="CUDA matrix products on TF32 tensor cores (convolutions use them "
                             "by default: torch.backends.cudnn.allow_tf32)")
    parser.add_argument("--only", nargs="+", metavar="WORKLOAD",
                        help="time these workloads only (and no SGEMM rate)")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    if args.device == "cuda":
        gpu = torch.device("cuda")
        workloads = [("mlp", lambda: synchronized(mlp(gpu))),
                     ("cnn", lambda: synchronized(cnn(gpu))),
                     ("gpt", lambda: synchronized(gpt(device=gpu)))]
    else:
        torch.set_num_threads(2)
        workloads = [("mlp", mlp), ("cnn", cnn), ("gpt", gpt),
                     ("gpt_manual_attention", lambda: gpt(sdpa=False)), ("rnn", rnn),
                     ("rosen2", lambda: rosen(2)), ("rosen100", lambda: rosen(100))]
    if args.only:
        workloads = [(name, make) for name, make in workloads if name in args.only]
    out = {}
    for name, make in workloads:
        out[name] = median_seconds(make())
        print(f"torch {name}: {out[name] * 1e3:.3f} ms", file=sys.stderr)
    if args.device == "cpu" and not args.only:
        out["sgemm_gflops"] = sgemm_gflops()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
