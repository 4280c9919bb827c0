//! Container labels that map containers onto applications and components.
//!
//! | label | meaning | default |
//! |---|---|---|
//! | `tailor.enable=true` | opt-in: the agent manages it | not managed |
//! | `tailor.app` | application name (components sharing it form one application) | the container name (its own application) |
//! | `tailor.class` | `core` or `elastic` | `core` |
//! | `tailor.priority` | integer, larger = more important | 0 |
//! | `tailor.protected` | `true`: never shrunk nor evicted | false |
//! | `tailor.request.cpu_cores` | request override (cores) | the CPU limit it was started with |
//! | `tailor.request.mem_bytes` | request override (bytes) | the memory limit it was started with |
//!
//! Bad label values are logged and ignored (the default applies): a typo on
//! one container never stops the agent.

use std::collections::BTreeMap;
use tailor_core::Class;

pub const ENABLE: &str = "tailor.enable";
pub const APP: &str = "tailor.app";
pub const CLASS: &str = "tailor.class";
pub const PRIORITY: &str = "tailor.priority";
pub const PROTECTED: &str = "tailor.protected";
pub const REQUEST_CPU: &str = "tailor.request.cpu_cores";
pub const REQUEST_MEM: &str = "tailor.request.mem_bytes";

/// What a container's labels say about it.
#[derive(Clone, Debug, PartialEq)]
pub struct ComponentLabels {
    pub app: String,
    pub class: Class,
    pub priority: i32,
    pub protected: bool,
    pub request_cpu_cores: Option<f64>,
    pub request_mem_bytes: Option<f64>,
    /// Problems found (label, message), for logging.
    pub problems: Vec<(String, String)>,
}

/// Reads the labels of container `name`.
pub fn parse(name: &str, labels: &BTreeMap<String, String>) -> ComponentLabels {
    let mut problems = Vec::new();
    let app = labels
        .get(APP)
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .unwrap_or(name)
        .to_string();
    let class = match labels.get(CLASS) {
        None => Class::Core,
        Some(v) => v
            .trim()
            .to_ascii_lowercase()
            .parse::<Class>()
            .unwrap_or_else(|e| {
                problems.push((CLASS.to_string(), e));
                Class::Core
            }),
    };
    let priority = match labels.get(PRIORITY) {
        None => 0,
        Some(v) => v.trim().parse::<i32>().unwrap_or_else(|e| {
            problems.push((PRIORITY.to_string(), format!("{v:?}: {e}")));
            0
        }),
    };
    let protected = match labels.get(PROTECTED).map(|v| v.trim().to_ascii_lowercase()) {
        None => false,
        Some(v) if matches!(v.as_str(), "true" | "1" | "yes" | "on") => true,
        Some(v) if matches!(v.as_str(), "false" | "0" | "no" | "off" | "") => false,
        Some(v) => {
            // unknown spelling: err on the safe side
            problems.push((
                PROTECTED.to_string(),
                format!("{v:?} is not a boolean; treated as protected"),
            ));
            true
        }
    };
    let mut positive = |key: &str| -> Option<f64> {
        let v = labels.get(key)?;
        match v.trim().parse::<f64>() {
            Ok(x) if x.is_finite() && x > 0.0 => Some(x),
            _ => {
                problems.push((key.to_string(), format!("{v:?} is not a positive number")));
                None
            }
        }
    };
    let request_cpu_cores = positive(REQUEST_CPU);
    let request_mem_bytes = positive(REQUEST_MEM);
    ComponentLabels {
        app,
        class,
        priority,
        protected,
        request_cpu_cores,
        request_mem_bytes,
        problems,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn unlabelled_is_its_own_core_app() {
        let l = parse("web-1", &labels(&[(ENABLE, "true")]));
        assert_eq!(l.app, "web-1");
        assert_eq!(l.class, Class::Core);
        assert_eq!(l.priority, 0);
        assert!(!l.protected);
        assert!(l.problems.is_empty());
    }

    #[test]
    fn full_labels() {
        let l = parse(
            "w",
            &labels(&[
                (APP, "batch"),
                (CLASS, "Elastic"),
                (PRIORITY, "-3"),
                (PROTECTED, "yes"),
                (REQUEST_CPU, "0.5"),
                (REQUEST_MEM, "1048576"),
            ]),
        );
        assert_eq!(l.app, "batch");
        assert_eq!(l.class, Class::Elastic);
        assert_eq!(l.priority, -3);
        assert!(l.protected);
        assert_eq!(l.request_cpu_cores, Some(0.5));
        assert_eq!(l.request_mem_bytes, Some(1048576.0));
    }

    #[test]
    fn bad_values_fall_back_and_are_reported() {
        let l = parse(
            "w",
            &labels(&[
                (CLASS, "huge"),
                (PRIORITY, "high"),
                (PROTECTED, "maybe"),
                (REQUEST_MEM, "-1"),
            ]),
        );
        assert_eq!(l.class, Class::Core);
        assert_eq!(l.priority, 0);
        assert!(l.protected, "unknown protected spelling is safe");
        assert_eq!(l.request_mem_bytes, None);
        assert_eq!(l.problems.len(), 4);
    }
}
