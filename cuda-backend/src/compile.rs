//! A kernel file ([`Module`]) and its compilation by NVRTC into device code (cubin).
//!
//! Every `.cu` file of `kernels/` is one module, declared by the op family whose kernels it
//! holds (`ops/*.rs`, listed in `kernels.rs`), compiled when a device is opened and cached for
//! the process. The headers (`common.cuh`, `ops.cuh` and the generated `codes.cuh`) are handed
//! to NVRTC in memory, so nothing is read from disk at run time.
//! [`compile_kernels`](crate::compile_kernels) compiles them all for one architecture: CI runs
//! it for `sm_80` and `sm_90` with NVRTC from PyPI and fails on any error or register spill.

use crate::codes;
use crate::error::CudaError;
use cudarc::nvrtc::sys;
use std::ffi::{CStr, CString, c_char, c_int};

/// One kernel file (a module on the device), as the op family whose kernels it holds declares
/// it: its name in `kernels/`, its text, and the structs its kernels take by value.
#[derive(Debug)]
pub(crate) struct Module {
    /// The file name in `kernels/`.
    pub(crate) file: &'static str,
    /// The file's text.
    pub(crate) text: &'static str,
    /// The structs its kernels take by value, as Rust lays them out: the compilation asserts
    /// that the kernels' structs have their sizes and alignments ([`layout_asserts`]).
    pub(crate) mirrors: &'static [Mirror],
}

/// What NVRTC made of one kernel file.
#[derive(Clone, Debug)]
pub struct CompiledKernels {
    /// The file in `kernels/`.
    pub file: &'static str,
    /// The architecture it was compiled for (`sm_90`).
    pub arch: String,
    /// The device code (cubin).
    pub cubin: Vec<u8>,
    /// NVRTC's and ptxas's log (with `ptxas -v`: registers, stack and spills per kernel).
    pub log: String,
}

impl CompiledKernels {
    /// The lines of the log that report register spills (`N bytes spill stores/loads` with
    /// `N > 0`).
    pub fn spills(&self) -> Vec<&str> {
        self.log
            .lines()
            .filter(|line| {
                line.split(',').any(|part| {
                    let part = part.trim();
                    part.contains("bytes spill") && !part.starts_with("0 bytes")
                })
            })
            .collect()
    }
}

/// Whether the NVRTC library can be loaded.
pub fn nvrtc_available() -> bool {
    // SAFETY: only tries to dlopen the library by its known names.
    unsafe { sys::is_culib_present() }
}

/// Compiles one kernel file for `arch`.
pub(crate) fn compile(module: &Module, arch: &str) -> Result<CompiledKernels, CudaError> {
    if !nvrtc_available() {
        return Err(CudaError::MissingLibrary("libnvrtc.so"));
    }
    let (file, text) = (module.file, module.text);
    let fail = |log: String| CudaError::Compile {
        file,
        arch: arch.to_string(),
        log,
    };
    let text = format!("{text}\n{}", layout_asserts(module));
    let program = Program::new(file, &text).map_err(|e| fail(format!("{e:?}")))?;
    let options = [
        format!("--gpu-architecture={arch}"),
        "--std=c++17".to_string(),
        "--ptxas-options=-v".to_string(),
    ];
    let status = program.compile(&options);
    let log = program.log();
    if status != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(fail(format!("{status:?}\n{log}")));
    }
    let cubin = program.cubin().map_err(|e| fail(format!("{e:?}\n{log}")))?;
    Ok(CompiledKernels {
        file,
        arch: arch.to_string(),
        cubin,
        log,
    })
}

/// A struct passed by value to kernels, as Rust lays it out: its kernel-side name, size and
/// alignment.
#[derive(Debug)]
pub(crate) struct Mirror {
    pub name: &'static str,
    pub size: usize,
    pub align: usize,
}

impl Mirror {
    /// The layout of `T`, whose kernel-side struct is `name`.
    pub(crate) const fn of<T>(name: &'static str) -> Mirror {
        Mirror {
            name,
            size: std::mem::size_of::<T>(),
            align: std::mem::align_of::<T>(),
        }
    }
}

/// `static_assert`s, appended to a kernel file, that the structs it takes by value have the
/// size and alignment of their Rust mirrors: a field added or retyped on one side only fails
/// the NVRTC compilation (in CI, without a GPU) instead of scrambling kernel arguments.
fn layout_asserts(module: &Module) -> String {
    module
        .mirrors
        .iter()
        .map(|m| {
            format!(
                "static_assert(sizeof({0}) == {1} && alignof({0}) == {2}, \
                 \"struct {0} of the kernels differs from its Rust mirror\");\n",
                m.name, m.size, m.align
            )
        })
        .collect()
}

/// An NVRTC program, destroyed on drop.
struct Program {
    raw: sys::nvrtcProgram,
}

fn c_string(s: &str) -> CString {
    CString::new(s).expect("kernel sources and names hold no NUL byte")
}

impl Program {
    fn new(file: &str, text: &str) -> Result<Program, sys::nvrtcResult> {
        let headers = [
            ("codes.cuh", codes::header()),
            (
                "common.cuh",
                include_str!("../kernels/common.cuh").to_string(),
            ),
            ("ops.cuh", include_str!("../kernels/ops.cuh").to_string()),
        ];
        let names: Vec<CString> = headers.iter().map(|(n, _)| c_string(n)).collect();
        let texts: Vec<CString> = headers.iter().map(|(_, t)| c_string(t)).collect();
        let name_ptrs: Vec<*const c_char> = names.iter().map(|s| s.as_ptr()).collect();
        let text_ptrs: Vec<*const c_char> = texts.iter().map(|s| s.as_ptr()).collect();
        let (src, name) = (c_string(text), c_string(file));
        let mut raw = std::ptr::null_mut();
        // SAFETY: every pointer addresses a NUL-terminated string that outlives the call
        // (NVRTC copies sources and headers into the program), and the arrays hold
        // `headers.len()` entries each.
        let status = unsafe {
            sys::nvrtcCreateProgram(
                &mut raw,
                src.as_ptr(),
                name.as_ptr(),
                headers.len() as c_int,
                text_ptrs.as_ptr(),
                name_ptrs.as_ptr(),
            )
        };
        match status {
            sys::nvrtcResult::NVRTC_SUCCESS => Ok(Program { raw }),
            error => Err(error),
        }
    }

    fn compile(&self, options: &[String]) -> sys::nvrtcResult {
        let options: Vec<CString> = options.iter().map(|o| c_string(o)).collect();
        let ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        // SAFETY: `self.raw` is a live program; `ptrs` holds `ptrs.len()` C strings that
        // outlive the call.
        unsafe { sys::nvrtcCompileProgram(self.raw, ptrs.len() as c_int, ptrs.as_ptr()) }
    }

    fn log(&self) -> String {
        let mut size = 0usize;
        // SAFETY: `self.raw` is a live program and `size` a valid out-pointer.
        if unsafe { sys::nvrtcGetProgramLogSize(self.raw, &mut size) }
            != sys::nvrtcResult::NVRTC_SUCCESS
        {
            return String::new();
        }
        let mut buf = vec![0 as c_char; size.max(1)];
        // SAFETY: `buf` holds the `size` bytes NVRTC reported for the log.
        unsafe { sys::nvrtcGetProgramLog(self.raw, buf.as_mut_ptr()) };
        // SAFETY: NVRTC NUL-terminates the log within `size` bytes; `buf` is zeroed anyway.
        unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    }

    fn cubin(&self) -> Result<Vec<u8>, sys::nvrtcResult> {
        let mut size = 0usize;
        // SAFETY: `self.raw` is a compiled program and `size` a valid out-pointer.
        let status = unsafe { sys::nvrtcGetCUBINSize(self.raw, &mut size) };
        if status != sys::nvrtcResult::NVRTC_SUCCESS {
            return Err(status);
        }
        let mut cubin = vec![0u8; size];
        // SAFETY: `cubin` holds the `size` bytes NVRTC reported.
        let status = unsafe { sys::nvrtcGetCUBIN(self.raw, cubin.as_mut_ptr().cast()) };
        match status {
            sys::nvrtcResult::NVRTC_SUCCESS => Ok(cubin),
            error => Err(error),
        }
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: `self.raw` was created by `nvrtcCreateProgram` and is destroyed once.
        unsafe { sys::nvrtcDestroyProgram(&mut self.raw) };
    }
}
