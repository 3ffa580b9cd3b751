//! What the desktop benchmarks share: a program ended with the benchmark,
//! and a knob read from the environment.

use std::process::Child;

/// A program on the display, killed and reaped however the run ends.
pub struct Reaped(pub Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The positive integer `name` holds in the environment, else `default`.
pub fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|v| *v > 0)
        .unwrap_or(default)
}
