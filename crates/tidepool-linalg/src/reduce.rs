//! Thread-count-independent parallel reductions.
//!
//! Floating-point addition is not associative, so a reduction whose grouping follows rayon's
//! work stealing gives different round-off from run to run. Here every reduction sums fixed-size
//! chunks in parallel and then adds the chunk sums in order: the grouping depends only on the
//! vector length, and results are bit-identical for any number of threads.

use rayon::prelude::*;

/// Elements per chunk of a reduction.
pub const CHUNK: usize = 8192;

/// Length from which passes over vectors run in parallel: below it, waking the thread pool
/// costs more than the work.
pub const PARALLEL_MIN: usize = 16_384;

/// The `with_min_len` of every parallel pass over `n` elements: the whole pass on the calling
/// thread below [`PARALLEL_MIN`], else rayon's own splitting (a fixed minimum above it leaves
/// too few tasks to balance many threads: a 130 000-entry vector in 8 of them).
pub fn grain(n: usize) -> usize {
    if n < PARALLEL_MIN {
        n.max(1)
    } else {
        1
    }
}

/// [`grain`] for a reduction over `n` elements in chunks of [`CHUNK`]: its chunk sums are added
/// in the same order however the chunks are shared out, so this changes the speed, not the
/// result.
pub fn chunk_grain(n: usize) -> usize {
    grain(n).div_ceil(CHUNK)
}

/// `a . b`, bit-reproducible.
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "dot: length mismatch");
    if a.len() <= CHUNK {
        return a.iter().zip(b).map(|(p, q)| p * q).sum();
    }
    let partial: Vec<f64> = a.par_chunks(CHUNK).zip(b.par_chunks(CHUNK)).with_min_len(chunk_grain(a.len())).map(|(x, y)| x.iter().zip(y).map(|(p, q)| p * q).sum()).collect();
    partial.iter().sum()
}

/// Euclidean norm, bit-reproducible.
pub fn norm2(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

/// Sum of `f(i)` over `0..n`, bit-reproducible.
pub fn sum_by<F>(n: usize, f: F) -> f64
where
    F: Fn(usize) -> f64 + Sync,
{
    let chunks = n.div_ceil(CHUNK);
    let partial: Vec<f64> = (0..chunks).into_par_iter().with_min_len(chunk_grain(n)).map(|c| (c * CHUNK..((c + 1) * CHUNK).min(n)).map(&f).sum()).collect();
    partial.iter().sum()
}

/// `y += alpha x`.
pub fn axpy(alpha: f64, x: &[f64], y: &mut [f64]) {
    y.par_iter_mut().with_min_len(grain(x.len())).zip(x.par_iter()).for_each(|(yi, xi)| *yi += alpha * xi);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_is_independent_of_thread_count() {
        let n = 100_003;
        let a: Vec<f64> = (0..n).map(|i| ((i * 7919) % 1000) as f64 * 1e-3 + 1e-9).collect();
        let b: Vec<f64> = (0..n).map(|i| ((i * 104_729) % 997) as f64 * 1e-2).collect();
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let three = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let d1 = one.install(|| dot(&a, &b));
        let d3 = three.install(|| dot(&a, &b));
        assert_eq!(d1.to_bits(), d3.to_bits());
        let exact: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((d1 - exact).abs() <= 1e-12 * exact.abs());
        let s = sum_by(n, |i| a[i]);
        assert!((s - a.iter().sum::<f64>()).abs() < 1e-9);
    }
}
