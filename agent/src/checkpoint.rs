//! The models checkpoint under the state directory: the containers' recent
//! history and the node's priors ([`shaper::node_models`]), written every
//! few rounds and read back at start, so that models survive an agent
//! restart.

use shaper::node::NodeKernel;
use shaper::node_models::ModelCheckpoint;
use std::path::{Path, PathBuf};

/// File name under the state directory.
pub const MODELS_FILE: &str = "models.json";
/// Written every this many rounds (and at the first).
pub const CHECKPOINT_EVERY_ROUNDS: u64 = 6;
/// A checkpoint file larger than this is not read.
pub const MAX_CHECKPOINT_BYTES: u64 = 256 * 1024 * 1024;

/// Writes `bytes` to `dir/name` through a temporary file and a rename, so a
/// reader never sees half a file.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    let path = dir.join(name);
    let tmp = dir.join(format!("{name}.tmp"));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, &path)?;
    Ok(path)
}

/// Saves the kernel's checkpoint; failures are logged, never fatal.
pub fn save(dir: &Path, kernel: &NodeKernel, now_s: f64) {
    let written = serde_json::to_vec(&kernel.checkpoint(now_s))
        .map_err(std::io::Error::other)
        .and_then(|b| write_atomic(dir, MODELS_FILE, &b));
    if let Err(e) = written {
        tracing::warn!(path = %dir.join(MODELS_FILE).display(), error = %e, "cannot write the models checkpoint");
    }
}

/// Reads `dir/models.json` into `kernel`. A missing file is a fresh start;
/// a bad one is logged with its path and ignored (the models start fresh).
/// Returns the checkpoint when it restored any container (a recording
/// keeps it, so that its parity check starts from the same models).
pub fn restore(dir: &Path, kernel: &mut NodeKernel) -> Option<ModelCheckpoint> {
    let path = dir.join(MODELS_FILE);
    let read = || -> Result<ModelCheckpoint, String> {
        let len = std::fs::metadata(&path).map_err(|e| e.to_string())?.len();
        if len > MAX_CHECKPOINT_BYTES {
            return Err(format!("{len} bytes, more than {MAX_CHECKPOINT_BYTES}"));
        }
        let bytes = std::fs::read(&path).map_err(|e| e.to_string())?;
        serde_json::from_slice(&bytes).map_err(|e| e.to_string())
    };
    if !path.exists() {
        return None;
    }
    match read().and_then(|ck| {
        kernel
            .restore(ck.clone())
            .map(|n| (n, ck))
            .map_err(|e| e.to_string())
    }) {
        Ok((n, ck)) => {
            tracing::info!(path = %path.display(), containers = n, "models restored");
            (n > 0).then_some(ck)
        }
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "models checkpoint ignored; models start fresh");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shaper::ShaperConfig;

    fn kernel() -> NodeKernel {
        let model = toml::from_str("kind = \"last\"\ncalibrated = false").expect("model");
        NodeKernel::new(ShaperConfig::default(), model, 10.0).expect("kernel")
    }

    #[test]
    fn round_trip_and_bad_files() {
        let dir = tempfile::tempdir().expect("tmp");
        let mut k = kernel();
        assert!(
            restore(dir.path(), &mut k).is_none(),
            "no file: fresh start"
        );
        save(dir.path(), &k, 1.0);
        assert!(dir.path().join(MODELS_FILE).exists());
        assert!(
            restore(dir.path(), &mut kernel()).is_none(),
            "empty checkpoint"
        );
        std::fs::write(dir.path().join(MODELS_FILE), b"{not json").expect("write");
        assert!(
            restore(dir.path(), &mut kernel()).is_none(),
            "bad file ignored"
        );
    }
}
