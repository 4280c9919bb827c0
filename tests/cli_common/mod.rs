//! Helpers for the tests that run the `tailor` binary: one runner and one
//! file writer.

#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// Runs tailor with `RUST_LOG` at `rust_log` (or unset: the binary's
/// default); (success, stdout, stderr).
pub fn tailor_logging(args: &[&str], rust_log: Option<&str>) -> (bool, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tailor"));
    c.args(args);
    match rust_log {
        Some(level) => c.env("RUST_LOG", level),
        None => c.env_remove("RUST_LOG"),
    };
    let out = c.output().expect("run tailor");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// Runs tailor at its default log level; (success, stdout, stderr).
pub fn tailor(args: &[&str]) -> (bool, String, String) {
    tailor_logging(args, None)
}

/// Writes `text` to `dir/name`; returns the path as a string.
pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p.to_str().expect("utf8").to_string()
}

/// Runs tailor with only its errors logged; (success, stdout, stderr).
pub fn tailor_quiet(args: &[&str]) -> (bool, String, String) {
    tailor_logging(args, Some("error"))
}
