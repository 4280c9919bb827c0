//! Operations helpers shared by tailor's node agent and its central shaper
//! (neither depends on the other; both depend on this):
//!
//! * [`serve`]: bounded HTTP serving (connection limit, idle, header and
//!   request timeouts).
//! * [`prom`]: the Prometheus text writer and this process's CPU and memory.
//! * [`toml_check`]: key-by-key TOML checking that reports every error of a
//!   file at once.
//!
//! # Example
//!
//! ```
//! let mut t = service::prom::PromText::default();
//! t.single("tailor_up", "gauge", "Whether the process is up.", 1);
//! let text = t.finish();
//! assert_eq!(service::prom::sample(&text, "tailor_up"), Some(1.0));
//! ```

pub mod prom;
pub mod serve;
pub mod toml_check;
