//! `adjoint::checkpoint`: safetensors round trips, a file written by the Python `safetensors`
//! package, and every load error leaving the model untouched.

use adjoint::checkpoint::{self, CheckpointError, UnknownTensors};
use adjoint::prelude::*;
use std::path::PathBuf;

/// A fresh path in the system's temporary directory, removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("adjoint-checkpoint-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempFile(dir.join(format!("{name}.safetensors")))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[derive(Clone, Differentiable)]
struct Layer {
    weight: Tensor,
    bias: Tensor,
}

/// Nested layers in a `Vec`, and an `f64` tensor (a statistic the forward pass ignores).
#[derive(Differentiable)]
struct Mlp {
    layers: Vec<Layer>,
    scale: Tensor,
    #[no_derivative]
    name: String,
}

#[differentiable]
impl Mlp {
    #[differentiable]
    fn forward(&self, x: &Tensor) -> Tensor {
        let h = (x.matmul(&self.layers[0].weight) + &self.layers[0].bias).tanh();
        h.matmul(&self.layers[1].weight) + &self.layers[1].bias
    }
}

fn mlp(seed: u64) -> Mlp {
    let layer = |i: u64, n_in: usize, n_out: usize| Layer {
        weight: Tensor::rand_normal(&[n_in, n_out], 0.0, 1.0, seed + 2 * i),
        bias: Tensor::rand_normal(&[n_out], 0.0, 1.0, seed + 2 * i + 1),
    };
    Mlp {
        layers: vec![layer(0, 3, 4), layer(1, 4, 2)],
        scale: Tensor::from_vec(vec![1.5_f64 + seed as f64], &[1]),
        name: format!("mlp {seed}"),
    }
}

fn snapshot(m: &Mlp) -> Vec<Tensor> {
    let mut out = Vec::new();
    adjoint::Parameters::visit(m, &mut adjoint::ParamPath::new(), &mut |_, t| {
        out.push(t.clone())
    });
    out
}

#[test]
fn save_then_load_gives_identical_outputs() {
    let file = TempFile::new("roundtrip");
    let a = mlp(10);
    checkpoint::save(&a, &file.0).unwrap();

    let mut b = mlp(20);
    let x = Tensor::rand_uniform(&[5, 3], -1.0, 1.0, 99);
    assert_ne!(a.forward(&x), b.forward(&x));
    checkpoint::load(&mut b, &file.0).unwrap();
    assert_eq!(snapshot(&a), snapshot(&b));
    assert_eq!(a.forward(&x).to_vec_f32(), b.forward(&x).to_vec_f32());
    assert_eq!(b.scale.dtype(), DType::F64);
    assert_eq!(b.name, "mlp 20", "fields without derivative are not saved");
}

#[test]
fn the_file_uses_dotted_paths_shapes_and_dtypes() {
    let file = TempFile::new("header");
    checkpoint::save(&mlp(1), &file.0).unwrap();
    let bytes = std::fs::read(&file.0).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header = std::str::from_utf8(&bytes[8..8 + n]).unwrap();
    for entry in [
        r#""layers.0.weight":{"dtype":"F32","shape":[3,4],"#,
        r#""layers.0.bias":{"dtype":"F32","shape":[4],"#,
        r#""layers.1.weight":{"dtype":"F32","shape":[4,2],"#,
        r#""layers.1.bias":{"dtype":"F32","shape":[2],"#,
        r#""scale":{"dtype":"F64","shape":[1],"#,
        r#""__metadata__":{"format":"pt"}"#,
    ] {
        assert!(header.contains(entry), "{entry} not in {header}");
    }
    // 4-byte little-endian floats, row-major: the F64 tensor sorts first (larger alignment),
    // then the F32 ones by name; `layers.0.bias` is the first F32 tensor.
    let data = &bytes[8 + n..];
    assert_eq!(&data[..8], &2.5_f64.to_le_bytes());
    let bias: Vec<f32> = data[8..24]
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(bias, mlp(1).layers[0].bias.to_vec_f32());
}

#[derive(Differentiable)]
struct Encoder {
    weight: Tensor,
    bias: Tensor,
}

#[derive(Differentiable)]
struct TorchStyle {
    encoder: Encoder,
    layers: Vec<Tensor>,
}

fn torch_style() -> TorchStyle {
    TorchStyle {
        encoder: Encoder {
            weight: Tensor::zeros(&[2, 3]),
            bias: Tensor::zeros(&[2]),
        },
        layers: vec![
            Tensor::zeros_on(&[2, 2], DType::F64, &Cpu),
            Tensor::zeros_on(&[2], DType::F64, &Cpu),
        ],
    }
}

#[test]
fn loads_a_file_written_by_python_safetensors() {
    // tests/data/make_checkpoint_fixture.py writes it with `safetensors.numpy.save_file`.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/torch_style.safetensors"
    );
    let mut m = torch_style();
    checkpoint::load(&mut m, path).unwrap();
    let w: Vec<f32> = (0..6).map(|i| i as f32 / 4.0).collect();
    assert_eq!(m.encoder.weight, Tensor::from_vec(w, &[2, 3]));
    assert_eq!(m.encoder.bias.to_vec_f32(), vec![-1.0, 0.5]);
    assert_eq!(m.layers[0].to_vec_f64(), vec![0.1, 0.2, 0.3, 0.4]);
    assert_eq!(m.layers[1].to_vec_f64(), vec![1e-8, -3.5]);

    // And writes it back byte for byte (same header order, padding and data).
    let file = TempFile::new("torch-style");
    checkpoint::save(&m, &file.0).unwrap();
    assert_eq!(
        std::fs::read(&file.0).unwrap(),
        std::fs::read(path).unwrap()
    );
}

/// Loads `file` into `model`, expects an error, and checks that the model is unchanged.
fn failing_load(model: &mut Mlp, file: &TempFile) -> CheckpointError {
    let before = snapshot(model);
    let err = checkpoint::load(model, &file.0).unwrap_err();
    assert_eq!(snapshot(model), before, "the model changed on: {err}");
    let message = err.to_string();
    assert!(message.contains(&file.0.display().to_string()), "{message}");
    err
}

#[test]
fn corrupt_and_truncated_files() {
    let file = TempFile::new("corrupt");
    let mut m = mlp(3);
    checkpoint::save(&mlp(4), &file.0).unwrap();
    let good = std::fs::read(&file.0).unwrap();

    // Truncated: the last tensor's bytes are cut off.
    std::fs::write(&file.0, &good[..good.len() - 3]).unwrap();
    assert!(matches!(
        failing_load(&mut m, &file),
        CheckpointError::Corrupt { .. }
    ));
    // Cut inside the header.
    std::fs::write(&file.0, &good[..20]).unwrap();
    assert!(matches!(
        failing_load(&mut m, &file),
        CheckpointError::Corrupt { .. }
    ));
    // Garbage in the header.
    let mut bad = good.clone();
    bad[8] = b'x';
    std::fs::write(&file.0, &bad).unwrap();
    assert!(matches!(
        failing_load(&mut m, &file),
        CheckpointError::Corrupt { .. }
    ));
    // Not a safetensors file at all, and an empty one.
    std::fs::write(&file.0, b"PK\x03\x04 this is a zip").unwrap();
    assert!(matches!(
        failing_load(&mut m, &file),
        CheckpointError::Corrupt { .. }
    ));
    std::fs::write(&file.0, b"").unwrap();
    assert!(matches!(
        failing_load(&mut m, &file),
        CheckpointError::Corrupt { .. }
    ));

    // No file.
    let missing = TempFile::new("never-written");
    let err = failing_load(&mut m, &missing);
    assert!(matches!(err, CheckpointError::Io { .. }), "{err}");
}

/// `Mlp`'s parameters, without the last one or with one more.
#[derive(Differentiable)]
struct MlpWithScale {
    layers: Vec<Layer>,
    scale: Tensor,
}

#[derive(Differentiable)]
struct MlpWithoutScale {
    layers: Vec<Layer>,
}

#[derive(Differentiable)]
struct MlpWithExtra {
    layers: Vec<Layer>,
    scale: Tensor,
    extra: Tensor,
}

/// Saves `model` (whose `layers` are those of `mlp(4)`), then checks that loading it into
/// `mlp(3)` fails on `scale` without touching the layers, which come first and are valid.
fn error_on_scale(save: impl FnOnce(&TempFile)) -> CheckpointError {
    let file = TempFile::new(&format!("{:?}", std::thread::current().id()));
    save(&file);
    let mut m = mlp(3);
    let err = failing_load(&mut m, &file);
    assert!(err.to_string().contains("`scale`"), "{err}");
    err
}

#[test]
fn a_missing_tensor_is_named() {
    let err = error_on_scale(|f| {
        checkpoint::save(
            &MlpWithoutScale {
                layers: mlp(4).layers,
            },
            &f.0,
        )
        .unwrap()
    });
    assert!(matches!(err, CheckpointError::Missing { ref tensor, .. } if tensor == "scale"));
}

#[test]
fn a_wrong_shape_is_named() {
    let err = error_on_scale(|f| {
        let m = MlpWithScale {
            layers: mlp(4).layers,
            scale: Tensor::zeros_on(&[2], DType::F64, &Cpu),
        };
        checkpoint::save(&m, &f.0).unwrap()
    });
    match err {
        CheckpointError::Shape {
            tensor,
            expected,
            found,
            ..
        } => assert_eq!(
            (tensor.as_str(), expected, found),
            ("scale", vec![1], vec![2])
        ),
        other => panic!("{other}"),
    }
}

#[test]
fn a_wrong_dtype_is_named() {
    let err = error_on_scale(|f| {
        let m = MlpWithScale {
            layers: mlp(4).layers,
            scale: Tensor::ones(&[1]),
        };
        checkpoint::save(&m, &f.0).unwrap()
    });
    assert!(
        matches!(err, CheckpointError::DType { ref tensor, expected: DType::F64, ref found, .. }
            if tensor == "scale" && found == "F32"),
        "{err}"
    );
}

#[test]
fn unknown_tensors_are_an_error_unless_ignored() {
    let file = TempFile::new("extra");
    let source = mlp(4);
    let with_extra = MlpWithExtra {
        layers: source.layers.clone(),
        scale: source.scale.clone(),
        extra: Tensor::ones(&[3]),
    };
    checkpoint::save(&with_extra, &file.0).unwrap();
    let mut m = mlp(3);
    let err = failing_load(&mut m, &file);
    assert!(
        matches!(err, CheckpointError::Unknown { ref tensor, .. } if tensor == "extra"),
        "{err}"
    );
    checkpoint::load_with(&mut m, &file.0, UnknownTensors::Ignore).unwrap();
    assert_eq!(snapshot(&m), snapshot(&source));
}

#[test]
fn a_loaded_parameter_is_a_new_buffer() {
    // Clones taken before a load keep their values.
    let file = TempFile::new("fresh");
    checkpoint::save(&mlp(5), &file.0).unwrap();
    let mut m = mlp(6);
    let kept = m.layers[0].weight.clone();
    let values = kept.to_vec_f32();
    checkpoint::load(&mut m, &file.0).unwrap();
    assert_eq!(kept.to_vec_f32(), values);
    assert_eq!(m.layers[0].weight, mlp(5).layers[0].weight);
}
