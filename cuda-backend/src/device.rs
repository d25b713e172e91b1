//! [`CudaDevice`]: an opened GPU with its stream, cuBLAS handle and compiled kernels.
//!
//! The device is opened with the list of kernel files it loads; [`CudaDevice::new`], which
//! passes every op's, is in `kernels.rs`, so that this file knows no op.

use crate::compile::{Module, compile};
use crate::error::CudaError;
use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, LaunchConfig, sys};
use cudarc::nvrtc::Ptx;
use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

/// One GPU, opened once per process: every tensor on it is queued on its one stream, so the
/// queue order is the program order and no event tracking is needed.
///
/// `CudaDevice` is a cheap `Copy` handle. [`CudaDevice::new`] opens a device (or returns the
/// already opened one) and reports what is missing as a [`CudaError`]; `CudaDevice::default()`
/// is device 0 and panics if it cannot be opened, so call `new` first where a machine may
/// have no GPU.
#[derive(Clone, Copy)]
pub struct CudaDevice {
    state: &'static DeviceState,
}

pub(crate) struct DeviceState {
    ordinal: usize,
    name: String,
    /// Streaming multiprocessors: how many blocks keep the device busy.
    pub(crate) multiprocessors: u32,
    pub(crate) stream: Arc<CudaStream>,
    blas: Mutex<CudaBlas>,
    /// Each kernel file's module, by file name.
    modules: Vec<(&'static str, Arc<CudaModule>)>,
    functions: Mutex<HashMap<(&'static str, &'static str), CudaFunction>>,
}

thread_local! {
    /// The calling thread's waits for a device ([`host_waits`]).
    static WAITS: Cell<u64> = const { Cell::new(0) };
}

/// How many times the calling thread has waited for a CUDA device's queued work so far: each
/// download (`to_vec_*`, `to_scalar`, reading a loss), each largest id computed on the device
/// (validating ids that were not uploaded from the host) and each
/// [`CudaDevice::synchronize`]. Everything else only queues work, so the difference over a
/// training step counts its round trips: one, reading the loss, in the MNIST examples
/// (tested). Counted per thread, so that other threads' work does not blur a measurement.
pub fn host_waits() -> u64 {
    WAITS.with(Cell::get)
}

/// The devices opened so far; each lives until the process ends.
static OPENED: Mutex<Vec<&'static DeviceState>> = Mutex::new(Vec::new());

impl CudaDevice {
    /// [`CudaDevice::new`] with the kernel files `kernels`: opens GPU `ordinal`, compiling and
    /// loading them (once per process, in parallel), or returns the opened device.
    ///
    /// # Errors
    /// As [`CudaDevice::new`].
    pub(crate) fn open(ordinal: usize, kernels: &[&Module]) -> Result<CudaDevice, CudaError> {
        let mut opened = OPENED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&state) = opened.iter().find(|s| s.ordinal == ordinal) {
            return Ok(CudaDevice { state });
        }
        let state = DeviceState::open(ordinal, kernels)?;
        let state: &'static DeviceState = Box::leak(Box::new(state));
        opened.push(state);
        Ok(CudaDevice { state })
    }

    /// The device's ordinal.
    pub fn ordinal(&self) -> usize {
        self.state.ordinal
    }

    /// The device's name, e.g. `NVIDIA H200`.
    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// Waits until all queued work on the device has finished.
    ///
    /// # Errors
    /// An asynchronous failure of earlier work (e.g. a kernel fault) surfaces here.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        self.state.waited();
        self.state
            .stream
            .synchronize()
            .map_err(CudaError::driver("synchronizing the stream"))
    }

    /// Lets cuBLAS use TF32 tensor cores for `f32` matrix products (10-bit mantissa inputs,
    /// `f32` accumulation; PyTorch's `allow_tf32`). Off by default.
    ///
    /// # Errors
    /// If cuBLAS rejects the math mode.
    pub fn set_tf32(&self, on: bool) -> Result<(), CudaError> {
        use cudarc::cublas::sys::{cublasMath_t, cublasSetMathMode};
        let mode = if on {
            cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH
        } else {
            cublasMath_t::CUBLAS_DEFAULT_MATH
        };
        let blas = self.state.blas();
        // SAFETY: the handle is live (owned by `blas`, locked for the call).
        unsafe { cublasSetMathMode(*blas.handle(), mode) }
            .result()
            .map_err(|source| CudaError::Blas {
                context: "setting the math mode",
                source,
            })
    }

    pub(crate) fn state(&self) -> &'static DeviceState {
        self.state
    }
}

impl Default for CudaDevice {
    /// Device 0.
    ///
    /// # Panics
    /// If device 0 cannot be opened; use [`CudaDevice::new`] to get the reason as an error.
    fn default() -> CudaDevice {
        CudaDevice::new(0).unwrap_or_else(|e| {
            panic!(
                "CudaDevice::default(): {e}; open devices with CudaDevice::new(0)? to handle this"
            )
        })
    }
}

impl PartialEq for CudaDevice {
    fn eq(&self, other: &CudaDevice) -> bool {
        self.state.ordinal == other.state.ordinal
    }
}

impl fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CudaDevice({}, {})", self.state.ordinal, self.state.name)
    }
}

/// Whether a shared library can be loaded (cudarc panics on first use otherwise).
fn present(check: unsafe fn() -> bool) -> bool {
    // SAFETY: the checks only try to dlopen the library by its known names.
    unsafe { check() }
}

impl DeviceState {
    fn open(ordinal: usize, kernels: &[&Module]) -> Result<DeviceState, CudaError> {
        if !present(sys::is_culib_present) {
            return Err(CudaError::NoDriver);
        }
        if !present(cudarc::cublas::sys::is_culib_present) {
            return Err(CudaError::MissingLibrary("libcublas.so"));
        }
        if !present(cudarc::nvrtc::sys::is_culib_present) {
            return Err(CudaError::MissingLibrary("libnvrtc.so"));
        }
        let count = CudaContext::device_count().map_err(CudaError::driver("counting devices"))?;
        if ordinal >= count.max(0) as usize {
            return Err(CudaError::NoSuchDevice {
                ordinal,
                count: count.max(0) as usize,
            });
        }
        let ctx = CudaContext::new(ordinal).map_err(CudaError::driver("creating the context"))?;
        // SAFETY: this backend queues all its work on the one stream below, so stream order
        // alone orders every use of every buffer; no cross-stream events are needed.
        unsafe { ctx.disable_event_tracking() };
        keep_pool_memory(&ctx)?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(CudaError::driver("reading the compute capability"))?;
        let arch = format!("sm_{major}{minor}");
        let name = ctx.name().map_err(CudaError::driver("reading the name"))?;
        let multiprocessors = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(CudaError::driver("reading the multiprocessor count"))?;
        let stream = ctx.default_stream();
        let blas = CudaBlas::new(stream.clone()).map_err(|source| CudaError::Blas {
            context: "creating the handle",
            source,
        })?;
        let modules = compile_all(kernels, &arch)?
            .into_iter()
            .zip(kernels)
            .map(|(cubin, module)| {
                let loaded = ctx.load_module(Ptx::from_binary(cubin));
                loaded.map(|loaded| (module.file, loaded))
            })
            .collect::<Result<_, _>>()
            .map_err(CudaError::driver("loading the kernels"))?;
        Ok(DeviceState {
            ordinal,
            name,
            multiprocessors: multiprocessors.max(1) as u32,
            stream,
            blas: Mutex::new(blas),
            modules,
            functions: Mutex::new(HashMap::new()),
        })
    }

    /// Counts one wait of the calling thread for the device ([`host_waits`]).
    pub(crate) fn waited(&self) {
        WAITS.with(|w| w.set(w.get() + 1));
    }

    /// The cuBLAS handle (one per device; cuBLAS handles must not be used concurrently).
    pub(crate) fn blas(&self) -> MutexGuard<'_, CudaBlas> {
        self.blas.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Kernel `{name}_{suffix}` (or `name` when `suffix` is empty) of `module`.
    ///
    /// # Panics
    /// If the module has no such kernel (a mismatch between `src/ops` and `kernels/`), or was
    /// not loaded (its op's `KERNELS` is missing from `kernels.rs`).
    pub(crate) fn function(
        &self,
        module: &Module,
        name: &'static str,
        suffix: &'static str,
    ) -> CudaFunction {
        let mut cache = self.functions.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .entry((name, suffix))
            .or_insert_with(|| {
                let full = if suffix.is_empty() {
                    name.to_string()
                } else {
                    format!("{name}_{suffix}")
                };
                let (_, loaded) = self
                    .modules
                    .iter()
                    .find(|(file, _)| *file == module.file)
                    .unwrap_or_else(|| {
                        panic!(
                            "kernels/{} was not loaded: list it in kernels.rs",
                            module.file
                        )
                    });
                loaded.load_function(&full).unwrap_or_else(|e| {
                    panic!("kernels/{} has no kernel `{full}`: {e}", module.file)
                })
            })
            .clone()
    }
}

/// Raises the release threshold of the device's default memory pool to its maximum, so that
/// memory freed by `cuMemFreeAsync` stays in the pool for the next allocation instead of going
/// back to the driver at every synchronization (PyTorch's caching allocator does the same).
fn keep_pool_memory(ctx: &CudaContext) -> Result<(), CudaError> {
    if !ctx.has_async_alloc() {
        return Ok(());
    }
    let mut pool = std::ptr::null_mut();
    let mut threshold = u64::MAX;
    // SAFETY: `pool` and `threshold` are valid out/in pointers; the device handle is live.
    unsafe {
        sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device())
            .result()
            .map_err(CudaError::driver("getting the memory pool"))?;
        sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut threshold as *mut u64).cast(),
        )
        .result()
        .map_err(CudaError::driver(
            "setting the memory pool's release threshold",
        ))
    }
}

/// The cubins of the kernel files `kernels` for `arch`, compiled in parallel.
fn compile_all(kernels: &[&Module], arch: &str) -> Result<Vec<Vec<u8>>, CudaError> {
    std::thread::scope(|scope| {
        let jobs: Vec<_> = kernels
            .iter()
            .map(|&m| scope.spawn(move || compile(m, arch)))
            .collect();
        jobs.into_iter()
            .map(|job| job.join().expect("NVRTC compilation thread panicked"))
            .map(|compiled| compiled.map(|c| c.cubin))
            .collect()
    })
}

/// A launch of `n` threads' worth of work: 256-thread blocks, at most 65,536 blocks (the
/// kernels' grid-stride loops cover the rest).
pub(crate) fn grid(n: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(256).clamp(1, 65_536), 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}
