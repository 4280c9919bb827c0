//! [`Logs`]: what the code under test logs, captured for the tests that
//! read it.

use std::sync::{Arc, Mutex};

/// What the code under test logs while the guard of [`Logs::capture`]
/// lives (this thread only: the tests' current-thread runtime).
#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("logs").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    /// Captures the events at `level` and above, as plain text.
    pub fn capture(level: tracing::Level) -> (Self, tracing::subscriber::DefaultGuard) {
        let logs = Logs::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_max_level(level)
            .finish();
        (logs, tracing::subscriber::set_default(subscriber))
    }

    /// Everything logged so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("logs")).into_owned()
    }

    /// The lines that carry `message`.
    pub fn lines(&self, message: &str) -> Vec<String> {
        self.text()
            .lines()
            .filter(|l| l.contains(message))
            .map(str::to_string)
            .collect()
    }
}
