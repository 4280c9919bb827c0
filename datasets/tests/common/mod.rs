//! Helpers shared by the integration tests on the real data.

use std::path::{Path, PathBuf};

/// `../shared/data` beside the repository, or `None` (saying the check is
/// skipped) when it is absent: checks on the full data run where it is.
pub fn shared() -> Option<PathBuf> {
    let p = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data")).to_path_buf();
    if p.is_dir() {
        Some(p)
    } else {
        println!("skipped: ../shared/data not found");
        None
    }
}
