use adjoint::prelude::*;

/// `to_dtype` has no derivative rule: the error names it and the tensor type at the call.
#[differentiable]
fn f(x: Tensor<Cpu>) -> Tensor<Cpu> {
    x.to_dtype(DType::F32).sum_all()
}

fn main() {}
