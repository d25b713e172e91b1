//! The [`Backend`] trait of adjoint: the small set of device primitives that every tensor
//! backend (CPU, CUDA) implements.
//!
//! Everything else (softmax, cross-entropy, layer norm, the derivative rules) is written once in
//! `adjoint-core` from these primitives. The trait is shaped for devices with their own memory:
//! a [`Backend::Storage`] is an opaque device buffer, every primitive takes and returns buffers
//! (never host slices), and the only host transfers are the explicit `upload_*`/`download_*`
//! calls. A backend may run primitives asynchronously; a download is the synchronisation point.
//!
//! Buffers are contiguous and row-major; shapes and strides travel beside them as plain
//! `&[usize]` so that a kernel launch needs no allocation on the device.

#![warn(missing_docs)]

mod ops;
mod recurrence;
mod update;

pub use ops::{BinaryOp, Real, ReduceOp, UnaryOp};
pub use recurrence::{RecurrenceNeeds, RecurrenceSpec, RecurrenceTangents};
pub use update::UpdateOp;

use std::fmt::Debug;

/// The element type of a tensor, known at run time.
///
/// `F32` is for training, `F64` for gradient checks (CPU), `U32` for integer ids (class
/// labels, token ids, indices). Arithmetic is defined on the float types only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit IEEE float.
    F32,
    /// 64-bit IEEE float.
    F64,
    /// 32-bit unsigned integer (ids and indices; no arithmetic).
    U32,
}

impl DType {
    /// Whether values of this type are floats (and so can be differentiated).
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }

    /// The size of one element in bytes.
    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::F32 | DType::U32 => 4,
            DType::F64 => 8,
        }
    }
}

/// One (possibly batched) matrix product `C[b] = op(A[b]) · op(B[b])` with `C[b]` of shape
/// `m × n` and inner dimension `k`, all buffers contiguous row-major.
///
/// `op(A)` is `A` (stored `m × k`) or, when `lhs_transposed`, `Aᵀ` with `A` stored `k × m`;
/// likewise for `B` (`k × n`, or `n × k` when `rhs_transposed`). Batch `b` of `A` starts at
/// `b · lhs_batch_stride` elements (`0` broadcasts one matrix over the batch); the output is
/// always `batch × m × n` contiguous.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatmulSpec {
    /// Number of products.
    pub batch: usize,
    /// Rows of the result.
    pub m: usize,
    /// Inner dimension.
    pub k: usize,
    /// Columns of the result.
    pub n: usize,
    /// Element offset between consecutive left matrices (`0`: the same one for every batch).
    pub lhs_batch_stride: usize,
    /// Element offset between consecutive right matrices (`0`: the same one for every batch).
    pub rhs_batch_stride: usize,
    /// The left operand is stored transposed (`k × m`).
    pub lhs_transposed: bool,
    /// The right operand is stored transposed (`n × k`).
    pub rhs_transposed: bool,
}

/// Geometry of a 2-D convolution or pooling window over NCHW data, shared by
/// [`Backend::im2col`] and [`Backend::col2im`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv2dGeometry {
    /// Batch size `N`.
    pub batch: usize,
    /// Input channels `C`.
    pub channels: usize,
    /// Input height and width.
    pub input: [usize; 2],
    /// Kernel height and width.
    pub kernel: [usize; 2],
    /// Stride along height and width.
    pub stride: [usize; 2],
    /// Zero padding on each side along height and width.
    pub padding: [usize; 2],
    /// Dilation along height and width.
    pub dilation: [usize; 2],
}

impl Conv2dGeometry {
    /// The output height and width:
    /// `⌊(in + 2·pad − dil·(kernel − 1) − 1) / stride⌋ + 1`, or `None` if the window does not
    /// fit.
    pub fn output(&self) -> Option<[usize; 2]> {
        let axis = |d: usize| {
            let span = self.dilation[d] * self.kernel[d].checked_sub(1)? + 1;
            let padded = self.input[d] + 2 * self.padding[d];
            (span <= padded && self.stride[d] > 0).then(|| (padded - span) / self.stride[d] + 1)
        };
        Some([axis(0)?, axis(1)?])
    }
}

/// A 2-D convolution: the window geometry of the input plus the output channels and groups.
/// The weight is `[out_channels, channels / groups, kh, kw]`, the output
/// `[batch, out_channels, oh, ow]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv2dSpec {
    /// Input size, kernel, stride, padding and dilation.
    pub geometry: Conv2dGeometry,
    /// Output channels `O` (a multiple of `groups`).
    pub out_channels: usize,
    /// Channel groups (input and output channels split into independent convolutions).
    pub groups: usize,
}

/// A tensor backend: device buffers and the primitives that compute on them.
///
/// Every primitive allocates and returns a new buffer; inputs are never modified, so buffers
/// can be shared (`Arc`) between tensors. The one exception is [`update`](Backend::update),
/// the optimizers' fused step, which writes into buffers its caller holds uniquely. Shapes are validated by `adjoint-core` before a
/// primitive is called: a backend may assume consistent arguments and panic otherwise.
pub trait Backend: Copy + Clone + Debug + Default + Send + Sync + 'static {
    /// Where buffers live (a CPU has one; a CUDA backend names a GPU and its stream).
    type Device: Clone + Debug + Default + PartialEq + Send + Sync;
    /// One contiguous buffer of elements of a run-time [`DType`], resident on a device.
    type Storage: Debug + Send + Sync;

    /// Runs `f` and returns its value, from where this backend's ops start their parallel
    /// work most cheaply; a training loop runs each step through it (`B::install(|| step)`).
    /// The result is the same as `f()`'s.
    ///
    /// This default runs `f` on the calling thread. The CPU backend runs it on one of its
    /// worker threads: a parallel op started there hands part of its work to the other
    /// workers and takes part itself, where one started from the caller's thread hands all of
    /// it to the pool and puts the caller to sleep until it is done, a sleep and a wake-up per
    /// op. Until `f` returns, the other workers poll for work instead of sleeping between
    /// the ops, as OpenMP's threads spin between parallel regions. `benches/steps.rs` times
    /// the MNIST MLP step both ways (`steps/mlp` against `steps/mlp_on_caller`; the ratios
    /// measured are in `docs/perf-log.md`, from its 15th session on).
    fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
        f()
    }

    /// The device a buffer lives on.
    fn device(storage: &Self::Storage) -> Self::Device;
    /// The element type of a buffer.
    fn dtype(storage: &Self::Storage) -> DType;
    /// The number of elements of a buffer.
    fn len(storage: &Self::Storage) -> usize;

    /// Copies host values to a new buffer of type `dtype` (rounded if `F32`; `U32` takes the
    /// values as integers).
    fn upload_f64(device: &Self::Device, data: &[f64], dtype: DType) -> Self::Storage;
    /// Copies host `f32` values to a new `F32` buffer.
    fn upload_f32(device: &Self::Device, data: &[f32]) -> Self::Storage;
    /// Copies host integers to a new `U32` buffer.
    fn upload_u32(device: &Self::Device, data: &[u32]) -> Self::Storage;
    /// Copies a buffer to the host as `f64` (waits for pending work).
    fn download_f64(storage: &Self::Storage) -> Vec<f64>;
    /// Copies a buffer to the host as `f32` (waits for pending work).
    fn download_f32(storage: &Self::Storage) -> Vec<f32>;
    /// Copies a `U32` buffer to the host (waits for pending work).
    fn download_u32(storage: &Self::Storage) -> Vec<u32>;

    /// A buffer of `len` copies of `value`.
    fn fill(device: &Self::Device, len: usize, value: f64, dtype: DType) -> Self::Storage;
    /// `start, start + step, …` (`len` values).
    fn arange(
        device: &Self::Device,
        start: f64,
        step: f64,
        len: usize,
        dtype: DType,
    ) -> Self::Storage;
    /// `len` values drawn i.i.d. from `U[low, high)` (`normal == false`) or `N(low, high²)`
    /// (`normal == true`), from a generator seeded with `seed`.
    fn random(
        device: &Self::Device,
        len: usize,
        seed: u64,
        params: (f64, f64),
        normal: bool,
        dtype: DType,
    ) -> Self::Storage;
    /// The values converted to `dtype` (a new buffer, also when `dtype` is the buffer's own).
    fn cast(storage: &Self::Storage, dtype: DType) -> Self::Storage;

    /// `op` applied to every element.
    fn unary(op: UnaryOp, x: &Self::Storage) -> Self::Storage;
    /// [`unary`](Backend::unary) written into `x` (a float buffer no other tensor shares):
    /// what a fused op runs on the buffer it has just made. The default computes into a new
    /// buffer, which replaces `x`.
    fn unary_assign(op: UnaryOp, x: &mut Self::Storage) {
        *x = Self::unary(op, x);
    }
    /// `op` applied elementwise with NumPy broadcasting. `lhs_shape` and `rhs_shape` have the
    /// rank of `out_shape` (leading 1s added by the caller); an axis of size 1 is broadcast.
    /// Both operands have the same float dtype.
    fn binary(
        op: BinaryOp,
        lhs: (&Self::Storage, &[usize]),
        rhs: (&Self::Storage, &[usize]),
        out_shape: &[usize],
    ) -> Self::Storage;
    /// [`binary`](Backend::binary) of two equally long buffers, written into one of them:
    /// `out ← op(out, other)` if `out_is_lhs`, else `out ← op(other, out)`. What the ops use
    /// when they own an operand no other tensor shares (a pullback's incoming adjoint, a
    /// temporary), so that the result needs no new buffer. The default computes into a new
    /// buffer and replaces `out`.
    fn binary_assign(
        op: BinaryOp,
        out: &mut Self::Storage,
        other: &Self::Storage,
        out_is_lhs: bool,
    ) {
        binary_assign_by_copy::<Self>(op, out, other, out_is_lhs)
    }
    /// `relu` and the signs of its result as bits: `y = max(x, 0)` (`x > 0 ? x : 0`), and a
    /// `u32` buffer of `⌈n/32⌉` words whose bit `i % 32` of word `i / 32` says whether
    /// `y[i] > 0` (the unused bits of the last word clear). What the `relu` rule runs: its
    /// pullback keeps one bit per element instead of the output.
    fn relu_with_bits(x: &Self::Storage) -> (Self::Storage, Self::Storage);
    /// `d[i]` where bit `i` of `bits` (as made by [`relu_with_bits`](Backend::relu_with_bits)
    /// from a buffer as long as `d`) is set, else `0`: `ȳ·𝟙(y > 0)`, the pullback of `relu`.
    fn mask_by_bits(d: &Self::Storage, bits: &Self::Storage) -> Self::Storage;
    /// `if mask != 0 { on_true } else { on_false }` elementwise, broadcast as in
    /// [`binary`](Backend::binary); `mask` is any float buffer.
    fn select(
        mask: (&Self::Storage, &[usize]),
        on_true: (&Self::Storage, &[usize]),
        on_false: (&Self::Storage, &[usize]),
        out_shape: &[usize],
    ) -> Self::Storage;
    /// Reduces `x` (of `shape`) over `axes` with `op`; the result has `shape` with the reduced
    /// axes set to 1 (sorted, distinct axes).
    fn reduce(op: ReduceOp, x: &Self::Storage, shape: &[usize], axes: &[usize]) -> Self::Storage;
    /// The index of the largest element along `axis` (first on ties) as `U32`, shape with
    /// `axis` set to 1.
    fn argmax(x: &Self::Storage, shape: &[usize], axis: usize) -> Self::Storage;
    /// Matrix products as described by `spec`.
    fn matmul(lhs: &Self::Storage, rhs: &Self::Storage, spec: &MatmulSpec) -> Self::Storage;
    /// The products of [`matmul`](Backend::matmul) times `alpha` added to `out` (`batch · m ·
    /// n` elements, the same dtype): `C += α·op(A)·op(B)`, a GEMM with β = 1. What a fused
    /// sum of products (`a·b + c·d`, α = 1) runs, so that the second product needs no buffer
    /// of its own, and plain SGD's step on a weight whose gradient is a product not yet
    /// computed (`W += (−γ)·xᵀ·ȳ`), so that neither the gradient nor a scaled operand is
    /// stored. The default computes the products into a new buffer, scales it (α ≠ 1) and
    /// adds it.
    fn matmul_acc(
        lhs: &Self::Storage,
        rhs: &Self::Storage,
        spec: &MatmulSpec,
        alpha: f64,
        out: &mut Self::Storage,
    ) {
        let mut product = Self::matmul(lhs, rhs, spec);
        if alpha != 1.0 {
            Self::unary_assign(UnaryOp::MulScalar(alpha), &mut product);
        }
        Self::binary_assign(BinaryOp::Add, out, &product, true);
    }
    /// `grad(y, op(A)·op(B))` elementwise, `y` holding the products' elements: the tangent
    /// `z̄ = ȳ·f′(z)` of an activation `y = f(z)` (`grad` its kernel: `LeakyReluGrad`,
    /// `TanhGrad`, `SigmoidGrad`, …, of `(y, ȳ)`) whose `ȳ` is a product, the input tangent
    /// `ū·Wᵀ` of the next layer. One op, so that a backend can apply the derivative as it
    /// writes each block of the product instead of in a pass of its own. The values must be
    /// those of the default, to the last bit: the products, then
    /// [`binary_assign`](Backend::binary_assign) of `grad` with `y` as the left operand.
    fn matmul_grad(
        lhs: &Self::Storage,
        rhs: &Self::Storage,
        spec: &MatmulSpec,
        y: &Self::Storage,
        grad: BinaryOp,
    ) -> Self::Storage {
        let mut d = Self::matmul(lhs, rhs, spec);
        Self::binary_assign(grad, &mut d, y, false);
        d
    }
    /// [`matmul_grad`](Backend::matmul_grad) for one product (`batch` 1) together with the
    /// sums of its rows, `s[j] = Σᵢ z̄[i, j]` (`n` elements): the tangent of a bias added to
    /// every row of the layer's pre-activation `z = x·W + b`, taken as the derivative's values
    /// are written instead of in a pass of its own. The values must be those of the default,
    /// to the last bit: [`matmul_grad`](Backend::matmul_grad), then
    /// [`reduce`](Backend::reduce) `Sum` over axis 0 (each column added up in row order).
    fn matmul_grad_sums(
        lhs: &Self::Storage,
        rhs: &Self::Storage,
        spec: &MatmulSpec,
        y: &Self::Storage,
        grad: BinaryOp,
    ) -> (Self::Storage, Self::Storage) {
        let d = Self::matmul_grad(lhs, rhs, spec, y, grad);
        let sums = Self::reduce(ReduceOp::Sum, &d, &[spec.batch * spec.m, spec.n], &[0]);
        (d, sums)
    }
    /// `act(op(A)·op(B) + bias)`: the products of [`matmul`](Backend::matmul), `bias` (`n`
    /// elements, the same dtype) added to every row of each, then `act` elementwise. A fused
    /// layer `f(x·W + b)` in one op, so that a backend can finish each block of the product
    /// while it is in cache (one pass over the output instead of three). The values must be
    /// those of the default, to the last bit: the products, then `binary(Add)` with the bias
    /// broadcast over the rows, then `unary_assign(act)`.
    fn matmul_epilogue(
        lhs: &Self::Storage,
        rhs: &Self::Storage,
        spec: &MatmulSpec,
        bias: Option<&Self::Storage>,
        act: Option<UnaryOp>,
    ) -> Self::Storage {
        matmul_epilogue_by_ops::<Self>(lhs, rhs, spec, bias, act)
    }

    /// A contiguous copy of `x` (of `shape`) with its axes permuted: output axis `a` is input
    /// axis `perm[a]`.
    fn permute(x: &Self::Storage, shape: &[usize], perm: &[usize]) -> Self::Storage;
    /// `x` (of `shape`, same rank as `out_shape`, 1 on broadcast axes) repeated into a
    /// contiguous buffer of `out_shape`.
    fn broadcast(x: &Self::Storage, shape: &[usize], out_shape: &[usize]) -> Self::Storage;
    /// The sub-block `start..start + len` along `axis` of `x` (of `shape`), contiguous.
    fn narrow(
        x: &Self::Storage,
        shape: &[usize],
        axis: usize,
        start: usize,
        len: usize,
    ) -> Self::Storage;
    /// Concatenation along `axis` of buffers with shapes `shapes` (equal except at `axis`).
    fn cat(parts: &[(&Self::Storage, &[usize])], axis: usize) -> Self::Storage;
    /// Rows of `x` (of `shape`) along `axis` picked by the `U32` buffer `ids`:
    /// `out[.., j, ..] = x[.., ids[j], ..]`.
    fn index_select(
        x: &Self::Storage,
        shape: &[usize],
        axis: usize,
        ids: &Self::Storage,
    ) -> Self::Storage;
    /// The adjoint of [`index_select`](Backend::index_select): a zero buffer of `shape` with
    /// `src[.., j, ..]` added at row `ids[j]` along `axis`.
    fn index_add(
        src: &Self::Storage,
        shape: &[usize],
        axis: usize,
        ids: &Self::Storage,
    ) -> Self::Storage;
    /// `out[i, c] = (ids[i] == c) as dtype`, shape `[ids.len(), classes]` (a row of zeros for
    /// an id at or above `classes`).
    fn one_hot(ids: &Self::Storage, classes: usize, dtype: DType) -> Self::Storage;
    /// The largest id of a `U32` buffer, or `None` if it is empty (used to validate ids
    /// against a size before indexing; a device backend may keep it lazy).
    fn max_id(ids: &Self::Storage) -> Option<u32>;

    /// Unfolds NCHW `x` into columns `[N, C·kh·kw, oh·ow]`; positions in the padding read
    /// `fill` (0 for convolution, −∞ for max pooling).
    fn im2col(x: &Self::Storage, geometry: &Conv2dGeometry, fill: f64) -> Self::Storage;
    /// The adjoint of [`im2col`](Backend::im2col): sums columns back into an NCHW buffer.
    fn col2im(cols: &Self::Storage, geometry: &Conv2dGeometry) -> Self::Storage;
    /// The convolution `y[n, o] = Σ_{c, p, q} w[o, c, p, q] · x[n, g·C/G + c, ·+p, ·+q]`
    /// (cross-correlation, zero padding) of NCHW `x` with `w`.
    fn conv2d(x: &Self::Storage, w: &Self::Storage, spec: &Conv2dSpec) -> Self::Storage;
    /// `x̄` of [`conv2d`](Backend::conv2d) from the output tangent `dy`.
    fn conv2d_backward_input(
        dy: &Self::Storage,
        w: &Self::Storage,
        spec: &Conv2dSpec,
    ) -> Self::Storage;
    /// `w̄` of [`conv2d`](Backend::conv2d) from the input `x` and the output tangent `dy`.
    fn conv2d_backward_weight(
        x: &Self::Storage,
        dy: &Self::Storage,
        spec: &Conv2dSpec,
    ) -> Self::Storage;

    /// [`conv2d`](Backend::conv2d) plus `bias[o]` (a `[O]` buffer of the same dtype) added to
    /// every pixel of output channel `o`, fused into the convolution by backends that can:
    /// `None`, the default, lets the caller add the bias by a broadcast
    /// [`binary`](Backend::binary), one more pass over the output.
    fn conv2d_bias(
        x: &Self::Storage,
        w: &Self::Storage,
        bias: &Self::Storage,
        spec: &Conv2dSpec,
    ) -> Option<Self::Storage> {
        let _ = (x, w, bias, spec);
        None
    }

    /// Max pooling fused into one pass over the windows of `geometry` (whose `channels` is 1:
    /// each plane of the input is one image): the maximum of each window (`[P, oh·ow]`, the
    /// input's dtype) and the index of its first maximal tap in row-major window order (a
    /// `U32` buffer of the same shape; a NaN is the maximum, padding never wins), as
    /// [`reduce`](Backend::reduce) and [`argmax`](Backend::argmax) over
    /// [`im2col`](Backend::im2col)'s columns give them. `None`, the default, lets the caller
    /// compose it so.
    fn max_pool2d(
        x: &Self::Storage,
        geometry: &Conv2dGeometry,
    ) -> Option<(Self::Storage, Self::Storage)> {
        let _ = (x, geometry);
        None
    }

    /// The input tangent of max pooling over the windows of `geometry` (whose `channels` is 1:
    /// each plane is one image): `dy` (`[P, oh·ow]`) added at the winning tap of each window
    /// (`winners`, `U32` indices in row-major window order, as [`argmax`](Backend::argmax)
    /// over [`im2col`](Backend::im2col)'s columns gives them), zeros elsewhere (`[P, H, W]`).
    /// `None`, the default, lets the caller compose it from a mask of the winning taps and
    /// [`col2im`](Backend::col2im).
    fn max_pool2d_backward(
        dy: &Self::Storage,
        winners: &Self::Storage,
        geometry: &Conv2dGeometry,
    ) -> Option<Self::Storage> {
        let _ = (dy, winners, geometry);
        None
    }

    /// The softmax `yᵢ = e^(xᵢ − m) / Σⱼ e^(xⱼ − m)` (or, when `log`, the log-softmax
    /// `yᵢ = xᵢ − m − ln Σⱼ e^(xⱼ − m)`), with `m` the maximum, along `axis` of `x` (of
    /// `shape`), fused into one pass by backends that can: `None`, the default, lets the
    /// caller compose it from [`reduce`](Backend::reduce), [`binary`](Backend::binary) and
    /// [`unary`](Backend::unary) (five or six launches where a fused kernel needs one; the CPU
    /// and CUDA backends have one).
    fn softmax(
        x: &Self::Storage,
        shape: &[usize],
        axis: usize,
        log: bool,
    ) -> Option<Self::Storage> {
        let _ = (x, shape, axis, log);
        None
    }

    /// The mean softmax cross-entropy of `[n, c]` scores `z` against `n` `U32` class ids
    /// (each below `c`, or equal to `ignore`), fused into one pass by backends that can:
    /// `loss = −(1/N) Σᵢ log softmax(zᵢ)[labelᵢ]` over the `N` rows whose label is not
    /// `ignore` (`N = n` when `ignore` is `None`; a loss of 0 when `N = 0`), a one-element
    /// buffer, and, when `grad`, its derivative `∂loss/∂z = (softmax(z) − onehot(labels)) / N`,
    /// `[n, c]`, zero on the ignored rows, computed from the same exponentials. `None`, the
    /// default, lets the caller compose both from [`softmax`](Backend::softmax),
    /// [`one_hot`](Backend::one_hot) and the elementwise ops (nine launches where a fused
    /// kernel needs one).
    fn cross_entropy(
        z: &Self::Storage,
        labels: &Self::Storage,
        shape: [usize; 2],
        ignore: Option<u32>,
        grad: bool,
    ) -> Option<(Self::Storage, Option<Self::Storage>)> {
        let _ = (z, labels, shape, ignore, grad);
        None
    }

    /// The optimizer step `op`, in place: for every element `i`,
    /// `(param[i], s[i]) ← op.eval(param[i], grad[i], s[i])` with `s[i]` read from and written
    /// to the `op.state_len()` buffers of `state`. All buffers have the same length and float
    /// dtype. With [`binary_assign`](Backend::binary_assign) the only primitive that modifies
    /// its arguments: optimizers update
    /// parameters and their state without allocating.
    fn update(
        op: UpdateOp,
        param: &mut Self::Storage,
        grad: &Self::Storage,
        state: &mut [&mut Self::Storage],
    );

    /// The recurrence of `spec` as one kernel, from `h0` (`m·n`), `w`, the input product's
    /// `U` and `x₁ … x_T` if it has one, and the biases: all the states `h₀, h₁, …, h_T` in one
    /// buffer (`(T + 1)·m·n`), what the backward pass reads. All buffers have one float
    /// dtype. `None` where the backend has no such kernel (the default): the caller then runs
    /// each step as a fused op (`core/src/ops/recurrence.rs`), the same values. A step of a
    /// small RNN costs less than running it as ops, which is why a backend may fuse the loop.
    fn recurrence(
        _spec: &RecurrenceSpec,
        _h0: &Self::Storage,
        _w: &Self::Storage,
        _input: Option<(&Self::Storage, &[&Self::Storage])>,
        _biases: &[&Self::Storage],
    ) -> Option<Self::Storage> {
        None
    }

    /// The backward pass of [`recurrence`](Backend::recurrence) (see [`RecurrenceSpec`]) from
    /// its `states` and `h̄_T` (`m·n`): the tangents `needs` asks for.
    ///
    /// # Panics
    /// The default panics: a backend whose `recurrence` returns a buffer implements this too.
    fn recurrence_backward(
        _spec: &RecurrenceSpec,
        _states: &Self::Storage,
        _w: &Self::Storage,
        _input: Option<(&Self::Storage, &[&Self::Storage])>,
        _dh: &Self::Storage,
        _needs: RecurrenceNeeds,
    ) -> RecurrenceTangents<Self::Storage> {
        unimplemented!("a backend whose `recurrence` runs implements `recurrence_backward`")
    }
}

/// [`Backend::matmul_epilogue`] as separate ops: the products, `binary(Add)` with the bias
/// broadcast over the rows, then `unary_assign(act)` (the default, and the values every
/// backend's fused form must give).
pub fn matmul_epilogue_by_ops<B: Backend>(
    lhs: &B::Storage,
    rhs: &B::Storage,
    spec: &MatmulSpec,
    bias: Option<&B::Storage>,
    act: Option<UnaryOp>,
) -> B::Storage {
    let mut z = B::matmul(lhs, rhs, spec);
    if let Some(bias) = bias {
        let shape = [spec.batch * spec.m, spec.n];
        z = B::binary(BinaryOp::Add, (&z, &shape), (bias, &[1, spec.n]), &shape);
    }
    if let Some(op) = act {
        B::unary_assign(op, &mut z);
    }
    z
}

/// [`Backend::binary_assign`] through [`Backend::binary`]: the result in a new buffer, which
/// replaces `out` (the default, for backends without an in-place kernel for `op`).
pub fn binary_assign_by_copy<B: Backend>(
    op: BinaryOp,
    out: &mut B::Storage,
    other: &B::Storage,
    out_is_lhs: bool,
) {
    let shape = [B::len(out)];
    let (a, b) = if out_is_lhs {
        (&*out, other)
    } else {
        (other, &*out)
    };
    *out = B::binary(op, (a, &shape), (b, &shape), &shape);
}
