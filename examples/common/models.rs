//! The two MNIST models, shared by `examples/mnist_mlp.rs`, `examples/mnist_cnn.rs` and
//! `benches/steps.rs` (which includes this file by path), so that what is benchmarked is what
//! is trained. Both are generic over the backend and start from PyTorch's default
//! initialization of `nn.Linear` and `nn.Conv2d`: uniform in ±1/√fan_in, where fan_in counts
//! the inputs of one output unit.

use adjoint::prelude::*;

/// Uniform in ±1/√`fan_in`, from `seed`, on `device`.
///
/// Drawn on the CPU and uploaded, so that a model starts from the same weights on every
/// backend and runs on different devices can be compared.
fn init<B: Backend>(shape: &[usize], fan_in: usize, seed: u64, device: &B::Device) -> Tensor<B> {
    let bound = 1.0 / (fan_in as f64).sqrt();
    Tensor::rand_uniform(shape, -bound, bound, seed).to_device(device)
}

/// The MLP 784-512-512-10 with ReLU.
#[derive(Differentiable)]
pub struct Mlp<B: Backend = Cpu> {
    w1: Tensor<B>,
    b1: Tensor<B>,
    w2: Tensor<B>,
    b2: Tensor<B>,
    w3: Tensor<B>,
    b3: Tensor<B>,
}

#[differentiable]
impl<B: Backend> Mlp<B> {
    /// A freshly initialized MLP on `device`; `seed` chooses the draw.
    pub fn new_on(seed: u64, device: &B::Device) -> Self {
        let s = seed * 10;
        Mlp {
            w1: init(&[784, 512], 784, s + 1, device),
            b1: init(&[512], 784, s + 6, device),
            w2: init(&[512, 512], 512, s + 2, device),
            b2: init(&[512], 512, s + 7, device),
            w3: init(&[512, 10], 512, s + 3, device),
            b3: init(&[10], 512, s + 8, device),
        }
    }

    /// Class scores for a batch `x` of shape `[n, 784]`.
    #[differentiable]
    pub fn logits(&self, x: &Tensor<B>) -> Tensor<B> {
        let h1 = (x.matmul(&self.w1) + &self.b1).relu();
        let h2 = (h1.matmul(&self.w2) + &self.b2).relu();
        h2.matmul(&self.w3) + &self.b3
    }

    /// Mean softmax cross-entropy on a batch.
    #[differentiable]
    pub fn loss(
        &self,
        #[no_derivative] x: &Tensor<B>,
        #[no_derivative] labels: &Tensor<B>,
    ) -> Tensor<B> {
        self.logits(x).cross_entropy(labels)
    }
}

/// The PyTorch `examples/mnist` network without dropout: conv 1→32 3×3, ReLU, conv 32→64
/// 3×3, ReLU, max-pool 2×2, flatten (9216), linear 9216→128, ReLU, linear 128→10.
#[derive(Differentiable)]
pub struct Cnn<B: Backend = Cpu> {
    conv1_w: Tensor<B>,
    conv1_b: Tensor<B>,
    conv2_w: Tensor<B>,
    conv2_b: Tensor<B>,
    fc1_w: Tensor<B>,
    fc1_b: Tensor<B>,
    fc2_w: Tensor<B>,
    fc2_b: Tensor<B>,
}

#[differentiable]
impl<B: Backend> Cnn<B> {
    /// A freshly initialized CNN on `device`; `seed` chooses the draw.
    pub fn new_on(seed: u64, device: &B::Device) -> Self {
        let s = seed * 100;
        Cnn {
            conv1_w: init(&[32, 1, 3, 3], 9, s + 1, device),
            conv1_b: init(&[32], 9, s + 2, device),
            conv2_w: init(&[64, 32, 3, 3], 32 * 9, s + 3, device),
            conv2_b: init(&[64], 32 * 9, s + 4, device),
            fc1_w: init(&[9216, 128], 9216, s + 5, device),
            fc1_b: init(&[128], 9216, s + 6, device),
            fc2_w: init(&[128, 10], 128, s + 7, device),
            fc2_b: init(&[10], 128, s + 8, device),
        }
    }

    /// Class scores for a batch `x` of shape `[n, 1, 28, 28]`.
    #[differentiable]
    pub fn logits(&self, x: &Tensor<B>) -> Tensor<B> {
        let h1 = x
            .conv2d_with_bias(&self.conv1_w, &self.conv1_b, Conv2d::default())
            .relu();
        let h2 = h1
            .conv2d_with_bias(&self.conv2_w, &self.conv2_b, Conv2d::default())
            .relu();
        let pooled = h2.max_pool2d([2, 2], Conv2d::stride(2)).flatten_from(1);
        let h3 = (pooled.matmul(&self.fc1_w) + &self.fc1_b).relu();
        h3.matmul(&self.fc2_w) + &self.fc2_b
    }

    /// Mean softmax cross-entropy on a batch.
    #[differentiable]
    pub fn loss(
        &self,
        #[no_derivative] x: &Tensor<B>,
        #[no_derivative] labels: &Tensor<B>,
    ) -> Tensor<B> {
        self.logits(x).cross_entropy(labels)
    }
}
