//! The one configuration-error type every tailor crate reports with.
//!
//! A [`ConfigError`] names the offending setting by its dotted key path as
//! written in the file (`shaper.k1`, `cluster.fail_safe.hold_s`) and says
//! what is wrong; [`ConfigErrors`] collects every problem of a configuration
//! so that a user sees them all at once. Every `validate()` of the workspace
//! returns `Result<(), ConfigErrors>`, and embedding configurations add
//! their table name with [`ConfigErrors::nested`] / [`ConfigErrors::prefixed`].
//!
//! ```
//! use tailor_core::ConfigErrors;
//!
//! let mut errs = ConfigErrors::new();
//! errs.range("interval_s", 1e-10, 0.1, 86_400.0);
//! errs.check("k1", -1.0_f64 >= 0.0, || "must be >= 0".to_string());
//! let errs = errs.prefixed("shaper");
//! assert_eq!(errs.keys(), vec!["shaper.interval_s", "shaper.k1"]);
//! assert!(errs.to_string().contains("shaper.interval_s: must be in [0.1, 86400], got 0.0000000001"));
//! ```

use serde::{Deserialize, Serialize};
use std::fmt::{Debug, Display};

/// The range of a recording (sampling) and shaping interval, in seconds:
/// shortest 0.1 s, longest one day. The agent's `interval_s` and the
/// simulator's share it, so that whatever interval an agent records at,
/// its recording can be replayed.
pub const MIN_INTERVAL_S: f64 = 0.1;
/// The longest recording and shaping interval (seconds): one day. See
/// [`MIN_INTERVAL_S`].
pub const MAX_INTERVAL_S: f64 = 86_400.0;

/// A number as written, or in exponent form when that is long (`1e300`
/// rather than 301 digits): for every message that echoes a refused value.
pub fn short_num<T: Display + Debug>(v: T) -> String {
    let s = v.to_string();
    if s.len() > 24 {
        format!("{v:?}")
    } else {
        s
    }
}

/// One invalid setting: its dotted key path and what is wrong with it. An
/// empty key means the file (or configuration) as a whole.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub struct ConfigError {
    /// Dotted key path, e.g. `shaper.k1`; `""` for the whole configuration.
    pub key: String,
    /// Why the value is refused, e.g. `must be in [0.1, 86400], got 0`.
    pub message: String,
}

impl ConfigError {
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            message: message.into(),
        }
    }
}

impl Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.key.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.key, self.message)
        }
    }
}

/// Every invalid setting of a configuration, in the order found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl Display for ConfigErrors {
    /// `N configuration error(s): key: message; key: message`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} configuration error(s): ", self.0.len())?;
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl From<ConfigError> for ConfigErrors {
    fn from(e: ConfigError) -> Self {
        Self(vec![e])
    }
}

impl IntoIterator for ConfigErrors {
    type Item = ConfigError;
    type IntoIter = std::vec::IntoIter<ConfigError>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a ConfigErrors {
    type Item = &'a ConfigError;
    type IntoIter = std::slice::Iter<'a, ConfigError>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// Joins a table path and a key: `join("shaper", "k1") == "shaper.k1"`;
/// an empty side is left out.
pub fn join_key(prefix: &str, key: &str) -> String {
    match (prefix.is_empty(), key.is_empty()) {
        (true, _) => key.to_string(),
        (false, true) => prefix.to_string(),
        (false, false) => format!("{prefix}.{key}"),
    }
}

impl ConfigErrors {
    /// No error yet.
    pub fn new() -> Self {
        Self(Vec::new())
    }

    /// One error.
    pub fn single(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self(vec![ConfigError::new(key, message)])
    }

    /// Adds an error.
    pub fn push(&mut self, key: impl Into<String>, message: impl Into<String>) {
        self.0.push(ConfigError::new(key, message));
    }

    /// Adds an error unless `ok`; the message is only built when needed.
    pub fn check(&mut self, key: &str, ok: bool, message: impl FnOnce() -> String) {
        if !ok {
            self.push(key, message());
        }
    }

    /// Adds `key: must be in [lo, hi], got value` unless `lo <= value <= hi`.
    /// NaN is never in range, so a float check also refuses NaN and (with a
    /// finite `hi`) infinities.
    pub fn range<T: PartialOrd + Display + Debug + Copy>(
        &mut self,
        key: &str,
        value: T,
        lo: T,
        hi: T,
    ) {
        if !(value >= lo && value <= hi) {
            self.push(
                key,
                format!("must be in [{lo}, {hi}], got {}", short_num(value)),
            );
        }
    }

    /// As [`ConfigErrors::range`], but 0 (which turns the setting off) is
    /// accepted too.
    pub fn range_or_off(&mut self, key: &str, value: f64, lo: f64, hi: f64) {
        if !(value == 0.0 || (value >= lo && value <= hi)) {
            self.push(
                key,
                format!(
                    "must be 0 (off) or in [{lo}, {hi}], got {}",
                    short_num(value)
                ),
            );
        }
    }

    /// As [`ConfigErrors::range`] for an optional value (absent is fine).
    pub fn range_opt<T: PartialOrd + Display + Debug + Copy>(
        &mut self,
        key: &str,
        value: Option<T>,
        lo: T,
        hi: T,
    ) {
        if let Some(v) = value {
            self.range(key, v, lo, hi);
        }
    }

    /// Adds every error of a sub-configuration, its keys under `prefix`.
    pub fn nested(&mut self, prefix: &str, result: Result<(), ConfigErrors>) {
        if let Err(e) = result {
            self.0.extend(e.prefixed(prefix).0);
        }
    }

    /// Adds every error of `other` as is.
    pub fn extend(&mut self, other: ConfigErrors) {
        self.0.extend(other.0);
    }

    /// The same errors with `prefix.` in front of every key.
    pub fn prefixed(mut self, prefix: &str) -> Self {
        for e in &mut self.0 {
            e.key = join_key(prefix, &e.key);
        }
        self
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The keys in error, in the order they were found.
    pub fn keys(&self) -> Vec<&str> {
        self.0.iter().map(|e| e.key.as_str()).collect()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, ConfigError> {
        self.0.iter()
    }

    /// `Ok(())` when empty, else `Err(self)`.
    pub fn into_result(self) -> Result<(), ConfigErrors> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(self)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_refuses_nan_infinity_and_out_of_range() {
        let mut e = ConfigErrors::new();
        e.range("a", f64::NAN, 0.0, 1.0);
        e.range("b", f64::INFINITY, 0.0, 1.0);
        e.range("c", -0.1, 0.0, 1.0);
        e.range("d", 0.5, 0.0, 1.0);
        e.range("e", 11usize, 1, 10);
        e.range_opt("f", None::<u32>, 1, 2);
        e.range_opt("g", Some(3u32), 1, 2);
        assert_eq!(e.keys(), vec!["a", "b", "c", "e", "g"]);
        assert_eq!(e.0[3].message, "must be in [1, 10], got 11");
        let mut big = ConfigErrors::new();
        big.range("x", 1e300, 0.0, 1.0);
        assert_eq!(big.0[0].message, "must be in [0, 1], got 1e300");
    }

    #[test]
    fn nested_and_prefixed_build_key_paths() {
        let mut inner = ConfigErrors::new();
        inner.push("hold_s", "bad");
        inner.push("", "whole table");
        let mut outer = ConfigErrors::new();
        outer.nested("fail_safe", Err(inner));
        outer.nested("x", Ok(()));
        let e = outer.prefixed("cluster");
        assert_eq!(
            e.keys(),
            vec!["cluster.fail_safe.hold_s", "cluster.fail_safe"]
        );
        let text = e.to_string();
        assert!(text.starts_with("2 configuration error(s): "), "{text}");
        assert!(text.contains("cluster.fail_safe.hold_s: bad; cluster.fail_safe: whole table"));
        assert!(e.clone().into_result().is_err());
        assert!(ConfigErrors::new().into_result().is_ok());
    }

    #[test]
    fn empty_key_displays_only_the_message() {
        assert_eq!(
            ConfigError::new("", "file: cannot read").to_string(),
            "file: cannot read"
        );
        assert_eq!(ConfigError::new("k", "m").to_string(), "k: m");
    }
}
