//! Every kernel file compiles with NVRTC for the GPUs we target, without register spills.
//!
//! Needs NVRTC but no GPU: CI installs it from PyPI (`nvidia-cuda-nvrtc`, see `.ci/run`) and
//! sets `ADJOINT_REQUIRE_NVRTC=1`, so a missing library fails there; elsewhere the test says
//! it skipped.

use adjoint_cuda::{compile_kernels, nvrtc_available};

/// Ampere (A100) and Hopper (H100/H200).
const ARCHES: [&str; 2] = ["sm_80", "sm_90"];

#[test]
fn every_kernel_compiles_without_spills() {
    if !nvrtc_available() {
        assert!(
            std::env::var_os("ADJOINT_REQUIRE_NVRTC").is_none(),
            "ADJOINT_REQUIRE_NVRTC is set but libnvrtc.so cannot be loaded (LD_LIBRARY_PATH?)"
        );
        println!("skipped: NVRTC not found (install nvidia-cuda-nvrtc and set LD_LIBRARY_PATH)");
        return;
    }
    for arch in ARCHES {
        let compiled = compile_kernels(arch).unwrap_or_else(|e| panic!("{e}"));
        for file in &compiled {
            assert!(
                !file.cubin.is_empty(),
                "{} for {arch}: empty cubin",
                file.file
            );
            let spills = file.spills();
            assert!(
                spills.is_empty(),
                "{} for {arch} spills registers:\n{}",
                file.file,
                spills.join("\n")
            );
            println!("compiled kernels/{} for {arch}", file.file);
        }
    }
}

#[test]
fn spill_lines_are_recognised() {
    let report = adjoint_cuda::CompiledKernels {
        file: "x.cu",
        arch: "sm_90".into(),
        cubin: vec![1],
        log: "ptxas . 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
              ptxas . 8 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
            .into(),
    };
    assert_eq!(report.spills().len(), 1);
    assert!(report.spills()[0].contains("8 bytes spill stores"));
}
