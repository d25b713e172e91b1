//! IDX inputs: a valid file (rank 1 or 3, small sizes), its header fields set to edge values
//! and its bytes mutated, given plain, gzipped, or gzipped and then damaged.

use super::rng::Rng;
use super::{check, edge_u32, iterations, mutate_bytes, run};
use adjoint::data::idx;
use adjoint::data::mnist::Split;
use flate2::{Compression, write::GzEncoder};
use std::io::{Cursor, Write};

/// What any reader may allocate beyond the data: the decoder's window, buffers, the error.
const SLACK: usize = 64 << 10;

/// A valid `u8` IDX file of rank 1 or 3.
fn valid(r: &mut Rng) -> (Vec<u8>, u8) {
    let rank: u8 = if r.chance(0.5) { 1 } else { 3 };
    let dims: Vec<u32> = (0..rank).map(|_| r.between(0, 5) as u32).collect();
    let mut bytes = vec![0, 0, 0x08, rank];
    dims.iter().for_each(|d| bytes.extend(d.to_be_bytes()));
    let len: u32 = dims.iter().product();
    bytes.extend((0..len).map(|_| r.next_u64() as u8));
    (bytes, rank)
}

/// One header field changed: a byte of the magic number, or a dimension set to an edge value.
fn mutate_header(r: &mut Rng, bytes: &mut [u8]) {
    let fields = bytes.len().min(16) / 4;
    if fields == 0 {
        return;
    }
    let f = r.below(fields);
    if f == 0 {
        bytes[r.below(4)] = [0, 1, 0x08, 0x0d, 0x0e, 0xff, r.next_u64() as u8][r.below(7)];
    } else {
        let at = 4 * f;
        let old = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
        bytes[at..at + 4].copy_from_slice(&edge_u32(r, old).to_be_bytes());
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// A mutated IDX file as a reader gets it, and the allocation bound: twice what it can
/// decode to (a DEFLATE stream expands at most 1032 times) plus [`SLACK`].
fn mutated(r: &mut Rng) -> (Vec<u8>, u8, usize) {
    let (mut plain, rank) = valid(r);
    for _ in 0..r.between(1, 3) {
        if r.chance(0.6) {
            mutate_header(r, &mut plain);
        } else {
            mutate_bytes(r, &mut plain);
        }
    }
    match r.below(3) {
        0 => {
            let bound = 2 * plain.len() + SLACK;
            (gzip(&plain), rank, bound)
        }
        1 => {
            let mut g = gzip(&plain);
            mutate_bytes(r, &mut g);
            let bound = 2 * 1032 * g.len() + SLACK;
            (g, rank, bound)
        }
        _ => {
            let bound = 2 * plain.len() + SLACK;
            (plain, rank, bound)
        }
    }
}

fn one(r: &mut Rng) -> Result<bool, String> {
    let (input, rank, bound) = mutated(r);
    let asked = if r.chance(0.9) {
        rank
    } else {
        r.below(5) as u8
    };
    check("idx", &input, "fuzz.idx", bound, || {
        idx::read_u8_from(Cursor::new(&input), "fuzz.idx", asked).map(drop)
    })
}

#[test]
fn mutated_idx_files_give_typed_errors() {
    run("IDX", iterations(4_000), 1, one);
}

#[test]
#[ignore = "the long run: a million inputs, 2.5 to 4 minutes in a debug build"]
fn mutated_idx_files_long_run() {
    run("IDX (long)", 1_000_000, 2, one);
}

/// `Split::load` on a pair of files from disk, one of them mutated.
#[test]
fn mutated_mnist_splits_give_typed_errors() {
    let dir = std::env::temp_dir().join(format!("adjoint-fuzz-mnist-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (images, labels) = (dir.join("images.idx"), dir.join("labels.idx"));
    run("MNIST split", iterations(4_000) / 10, 3, |r| {
        let n = r.between(0, 3) as u32;
        let mut img = [0u8, 0, 8, 3].to_vec();
        [n, 2, 2].iter().for_each(|d| img.extend(d.to_be_bytes()));
        img.extend((0..4 * n).map(|_| r.next_u64() as u8));
        let mut lab = [0u8, 0, 8, 1].to_vec();
        lab.extend(n.to_be_bytes());
        lab.extend((0..n).map(|_| r.below(10) as u8));
        let target = if r.chance(0.5) { &mut img } else { &mut lab };
        mutate_header(r, target);
        if r.chance(0.5) {
            mutate_bytes(r, target);
        }
        std::fs::write(&images, &img).unwrap();
        std::fs::write(&labels, &lab).unwrap();
        let bound = 2 * (img.len() + lab.len()) + SLACK;
        check("mnist", &img, "idx", bound, || {
            Split::load(&images, &labels).map(drop)
        })
    });
    let _ = std::fs::remove_dir_all(&dir);
}
