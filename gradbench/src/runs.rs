//! Repeated, timed evaluation: at least `min_runs` runs and until their summed time reaches
//! `min_seconds`, one timing per run. Only the computation is timed; the input is decoded before
//! and the output encoded after.

use serde::Deserialize;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// How often to run a function, from the `min_runs` / `min_seconds` fields of an input.
/// Inputs without them (hello's bare number) run once.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
pub struct Runs {
    /// The fewest runs.
    #[serde(default = "one")]
    pub min_runs: u32,
    /// The least summed running time, in seconds.
    #[serde(default)]
    pub min_seconds: f64,
}

fn one() -> u32 {
    1
}

impl Default for Runs {
    fn default() -> Self {
        Runs {
            min_runs: 1,
            min_seconds: 0.0,
        }
    }
}

/// The last run's output and every run's time.
pub struct Timed<O> {
    /// What the last run returned.
    pub output: O,
    /// One duration per run, in order.
    pub timings: Vec<Duration>,
}

impl Runs {
    /// Runs `f` as often as `self` asks, at least once.
    pub fn time<O>(self, mut f: impl FnMut() -> O) -> Timed<O> {
        let min_seconds =
            Duration::try_from_secs_f64(self.min_seconds.max(0.0)).unwrap_or(Duration::MAX);
        let mut timings = Vec::new();
        let mut total = Duration::ZERO;
        loop {
            let start = Instant::now();
            let output = black_box(f());
            let took = start.elapsed();
            timings.push(took);
            total += took;
            if timings.len() >= self.min_runs.max(1) as usize && total >= min_seconds {
                return Timed { output, timings };
            }
            drop(output);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Runs;
    use std::time::Duration;

    #[test]
    fn runs_at_least_min_runs_times_and_until_min_seconds() {
        let mut calls = 0;
        let timed = Runs {
            min_runs: 3,
            min_seconds: 0.0,
        }
        .time(|| {
            calls += 1;
            calls
        });
        assert_eq!((timed.output, timed.timings.len()), (3, 3));

        let timed = Runs {
            min_runs: 1,
            min_seconds: 0.02,
        }
        .time(|| std::thread::sleep(Duration::from_millis(5)));
        assert!(timed.timings.len() >= 2);
        assert!(timed.timings.iter().sum::<Duration>() >= Duration::from_millis(20));
    }

    #[test]
    fn runs_once_when_asked_for_nothing() {
        assert_eq!(
            Runs {
                min_runs: 0,
                min_seconds: 0.0
            }
            .time(|| ())
            .timings
            .len(),
            1
        );
    }
}
