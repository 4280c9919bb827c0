//! Which applications a credential may report components of.
//!
//! Within a tenant, applications are keyed by their label across hosts, so
//! a node that reports a component under an application's label takes part
//! in that application (its core components run together or not at all,
//! on every host). A credential added with `--apps web,batch-*` may report
//! only components of `web` and of labels starting with `batch-`; its other
//! components are left out of the view and answered as rejected. An empty
//! scope (the default) allows every application of the tenant.

use crate::protocol::MAX_NAME_LEN;
use std::sync::Arc;

/// Most patterns in one credential's scope.
pub const MAX_PATTERNS: usize = 1_000;

/// A credential's application patterns: an exact label, or a prefix ending
/// in `*`. Empty: every application.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct AppScope(Arc<[String]>);

impl AppScope {
    /// A scope from validated patterns (see [`check_patterns`]).
    pub fn new(patterns: &[String]) -> Self {
        Self(patterns.iter().cloned().collect())
    }

    /// Whether a component labelled `app` may be reported.
    pub fn allows(&self, app: &str) -> bool {
        self.0.is_empty()
            || self.0.iter().any(|p| match p.strip_suffix('*') {
                Some(prefix) => app.starts_with(prefix),
                None => app == p,
            })
    }

    /// The patterns, comma-separated (`*` when every application).
    pub fn describe(&self) -> String {
        if self.0.is_empty() {
            "*".into()
        } else {
            self.0.join(",")
        }
    }
}

/// Why a list of patterns is invalid, one message per bad pattern.
pub fn check_patterns(patterns: &[String]) -> Vec<String> {
    if patterns.len() > MAX_PATTERNS {
        return vec![format!(
            "{} application patterns, more than the limit of {MAX_PATTERNS}",
            patterns.len()
        )];
    }
    patterns
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let bad = if p.is_empty() || p == "*" {
                Some("is empty (leave the list out to allow every application)")
            } else if p.len() > MAX_NAME_LEN {
                Some("is longer than an application label may be")
            } else if p.chars().any(|c| c.is_control() || c == ',') {
                Some("contains control characters or a comma")
            } else if p.trim_end_matches('*').contains('*') {
                Some("has a '*' before its end (only a trailing '*' is a wildcard)")
            } else {
                None
            };
            bad.map(|why| format!("apps[{i}] {p:?} {why}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(p: &[&str]) -> AppScope {
        let v: Vec<String> = p.iter().map(|s| s.to_string()).collect();
        assert!(check_patterns(&v).is_empty(), "{p:?}");
        AppScope::new(&v)
    }

    #[test]
    fn exact_labels_and_trailing_wildcards() {
        let s = scope(&["web", "batch-*"]);
        assert!(s.allows("web"));
        assert!(!s.allows("web2"), "exact, not a prefix");
        assert!(s.allows("batch-"));
        assert!(s.allows("batch-7"));
        assert!(!s.allows("batch"));
        assert!(!s.allows("db"));
        assert!(AppScope::default().allows("anything"));
        assert_eq!(s.describe(), "web,batch-*");
        assert_eq!(AppScope::default().describe(), "*");
    }

    #[test]
    fn bad_patterns_are_named() {
        let bad: Vec<String> = ["", "*", "a*b", "x,y", "ok"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let e = check_patterns(&bad);
        assert_eq!(e.len(), 4, "{e:?}");
        assert!(e[2].starts_with("apps[2] \"a*b\""), "{e:?}");
        let many = vec!["a".to_string(); MAX_PATTERNS + 1];
        assert_eq!(check_patterns(&many).len(), 1);
    }
}
