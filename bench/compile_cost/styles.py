"""The function styles of the compile-cost benchmark (standard library only).

Each style writes unit `i` (one function, or one struct and its impl) in two variants: `plain`
(no attribute) and `diff` (`#[differentiable]`, `#[derive(Differentiable)]`, `#[no_derivative]`
where a user would put them). The bodies are the same in both; constants vary with `i` so that
no two units are identical. `call` is the statement of `main` that uses unit `i`: the function
itself when plain, `gradient(<name>_vjp(..))` when differentiable. `setup` holds the lines of
`main` that build the arguments every call shares.
"""


def _c(i, k, base=0.1, step=0.1, mod=7):
    """A constant in [base, base + step·(mod − 1)] that depends on unit `i` and slot `k`."""
    return f"{base + step * ((i + k) % mod):.1f}"


def _attr(diff, text):
    return text if diff else ""


class Scalar:
    """A loop, a branch and sin/exp/tanh/powi on `f64`: 13 lines, as in issue 45."""

    name = "scalar"
    setup = ""

    @staticmethod
    def unit(i, diff):
        return (
            _attr(diff, "#[differentiable]\n")
            + f"fn scalar_{i}(x: f64, y: f64) -> f64 {{\n"
            f"    let mut acc = x * {_c(i, 0, 0.3)};\n"
            f"    for k in 0..{2 + i % 3} {{\n"
            f"        let t = (acc * y).sin() + {_c(i, 1)} * k as f64;\n"
            "        acc = acc + t.tanh();\n"
            "    }\n"
            f"    if acc > {_c(i, 2, 0.5)} {{\n"
            f"        acc = acc.powi({2 + i % 2}) - y.exp();\n"
            "    } else {\n"
            f"        acc = acc * {_c(i, 3)} + (x * y).exp();\n"
            "    }\n"
            f"    acc + x.powi({3 + i % 2})\n"
            "}\n"
        )

    @staticmethod
    def call(i, diff):
        if diff:
            return f"black_box(gradient(scalar_{i}_vjp(black_box(0.5), 1.5)));"
        return f"black_box(scalar_{i}(black_box(0.5), 1.5));"


class Tensor:
    """A two-layer tensor function (`Tensor<Cpu>` of f32): matmul + bias + relu or tanh."""

    name = "tensor"
    setup = (
        "    let x = Tensor::rand_uniform(&[8, 16], -1.0, 1.0, 1);\n"
        "    let w = Tensor::rand_uniform(&[16, 16], -1.0, 1.0, 2);\n"
        "    let b = Tensor::rand_uniform(&[16], -1.0, 1.0, 3);\n"
        "    let v = Tensor::rand_uniform(&[16, 4], -1.0, 1.0, 4);\n"
    )

    @staticmethod
    def unit(i, diff):
        act, out = ("relu", "tanh") if i % 2 == 0 else ("tanh", "sigmoid")
        return (
            _attr(diff, "#[differentiable]\n")
            + f"fn layer_{i}({_attr(diff, '#[no_derivative] ')}x: &Tensor, w: &Tensor, "
            "b: &Tensor, v: &Tensor) -> Tensor {\n"
            f"    let h = (x.matmul(w) + b).{act}();\n"
            f"    let z = h.matmul(v) * {_c(i, 0, 0.5)};\n"
            f"    (z.{out}() + {_c(i, 1)}).sum_all()\n"
            "}\n"
        )

    @staticmethod
    def call(i, diff):
        if diff:
            return f"black_box(gradient(layer_{i}_vjp(&x, &w, &b, &v)));"
        return f"black_box(layer_{i}(&x, &w, &b, &v));"


class Method:
    """A struct with a method: a loop over a configuration field, a branch, tanh/exp/sin."""

    name = "method"
    setup = ""

    @staticmethod
    def unit(i, diff):
        return (
            _attr(diff, "#[derive(Differentiable)]\n")
            + f"struct Cell{i} {{\n"
            "    a: f64,\n"
            "    b: f64,\n"
            + _attr(diff, "    #[no_derivative]\n")
            + "    steps: usize,\n"
            "}\n"
            "\n"
            + _attr(diff, "#[differentiable]\n")
            + f"impl Cell{i} {{\n"
            + _attr(diff, "    #[differentiable]\n")
            + "    fn run(&self, x: f64) -> f64 {\n"
            "        let mut h = x;\n"
            "        for _ in 0..self.steps {\n"
            "            h = (self.a * h + self.b).tanh();\n"
            "        }\n"
            f"        if h > {_c(i, 0)} {{\n"
            "            h * h.exp()\n"
            "        } else {\n"
            "            h.sin() * self.a\n"
            "        }\n"
            "    }\n"
            "}\n"
        )

    @staticmethod
    def call(i, diff):
        cell = f"Cell{i} {{ a: {_c(i, 1, 0.5)}, b: {_c(i, 2)}, steps: {2 + i % 3} }}"
        if diff:
            return f"black_box(gradient({cell}.run_vjp(black_box(0.5))));"
        return f"black_box({cell}.run(black_box(0.5)));"


class Recursion:
    """Direct recursion on `f64` with a data depth `n: u32` (as in tests/control_flow.rs)."""

    name = "recursion"
    setup = ""

    @staticmethod
    def unit(i, diff):
        base = ("sin", "exp", "tanh")[i % 3]
        return (
            _attr(diff, "#[differentiable]\n")
            + f"fn rec_{i}(x: f64, n: u32) -> f64 {{\n"
            "    if n == 0 {\n"
            f"        x.{base}()\n"
            "    } else {\n"
            f"        let y = rec_{i}(x * {_c(i, 0, 0.5)}, n - 1);\n"
            f"        y * {_c(i, 1)} + (x * y).tanh()\n"
            "    }\n"
            "}\n"
        )

    @staticmethod
    def call(i, diff):
        if diff:
            return f"black_box(gradient(rec_{i}_vjp(black_box(0.5), 4)));"
        return f"black_box(rec_{i}(black_box(0.5), 4));"


STYLES = {s.name: s for s in (Scalar, Tensor, Method, Recursion)}


def main_rs(style, n, diff):
    """The whole `src/main.rs` of one generated crate: `n` units of `style` and a `main`."""
    variant = "#[differentiable]" if diff else "plain"
    units = "\n".join(style.unit(i, diff) for i in range(n))
    calls = "".join(f"    {style.call(i, diff)}\n" for i in range(n))
    return (
        f"//! Generated by bench/compile_cost: {n} `{style.name}` units, {variant}.\n"
        "#![allow(unused_imports)]\n"
        "\n"
        "use adjoint::prelude::*;\n"
        "use std::hint::black_box;\n"
        "\n"
        f"{units}\n"
        "fn main() {\n"
        f"{style.setup}{calls}"
        "}\n"
    )


def source_bytes(style, n):
    """Mean bytes of one unit as written without attributes (the plain variant)."""
    return sum(len(style.unit(i, False).encode()) for i in range(n)) / n
