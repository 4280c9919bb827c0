//! Checking a TOML configuration key by key, so that every problem of a
//! file is reported at once with its dotted key path: unknown keys and
//! values of the wrong type in every table (nested ones included), missing
//! required keys, and then the value errors of `validate()` for everything
//! that did parse.
//!
//! serde stops at the first error of a table, so a plain `toml::from_str`
//! would hide a table's value errors behind one unknown key. Here each key is
//! deserialized on its own against the table's type ([`Schema::probe`]);
//! keys that fail are reported and left out, required keys that are absent
//! are reported and stood in for by a placeholder (its own errors are
//! suppressed), and the rest is deserialized and validated as a whole.

use serde::de::DeserializeOwned;
use tailor_core::{join_key, ConfigErrors};

/// The shape of one TOML table: how to deserialize it and which of its keys
/// are tables with a shape of their own.
pub struct Schema {
    /// Deserializes a (partial) table as the table's type.
    pub probe: fn(&toml::Table) -> Result<(), String>,
    /// Sub-tables checked key by key too.
    pub tables: &'static [(&'static str, &'static Schema)],
}

impl Schema {
    fn table(&self, key: &str) -> Option<&'static Schema> {
        self.tables.iter().find(|(k, _)| *k == key).map(|(_, s)| *s)
    }
}

/// Deserializes `t` as `T`; the error is serde's message on one line.
pub fn probe<T: DeserializeOwned>(t: &toml::Table) -> Result<(), String> {
    T::deserialize(toml::Value::Table(t.clone()))
        .map(|_| ())
        .map_err(|e| clean_message(&e.to_string()))
}

/// A table with no sub-table of its own.
pub const fn leaf(probe: fn(&toml::Table) -> Result<(), String>) -> Schema {
    Schema { probe, tables: &[] }
}

/// The result of [`check_value`].
pub struct Checked<T> {
    /// The configuration built from every key that parsed (`None` when even
    /// that could not be built).
    pub config: Option<T>,
    /// Every parse error, with key paths.
    pub errors: ConfigErrors,
    /// Keys that were missing and stood in for by a placeholder: `validate()`
    /// errors on them repeat the "missing" error and should be dropped.
    pub placeholders: Vec<String>,
}

impl<T> Checked<T> {
    /// Adds the `validate()` errors, minus those on placeholders.
    pub fn add_validation(&mut self, result: Result<(), ConfigErrors>) {
        if let Err(e) = result {
            for one in e {
                if !self.placeholders.contains(&one.key) {
                    self.errors.0.push(one);
                }
            }
        }
    }
}

/// Parses TOML text. A syntax error is one error, with the key path of the
/// value it is in when that can be told (an integer beyond i64, a bad
/// escape in a string: see [`key_at`]), else with an empty key.
pub fn parse_text(text: &str) -> Result<toml::Table, ConfigErrors> {
    text.parse::<toml::Table>().map_err(|e| {
        let key = e
            .span()
            .and_then(|span| key_at(text, span))
            .unwrap_or_default();
        let at = e.span().map_or(String::new(), |span| {
            // 1-based line and column (in characters) of the error's start
            let mut end = span.start.min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            let before = &text[..end];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!(" at line {line}, column {column}")
        });
        ConfigErrors::single(
            key,
            format!("TOML syntax{at}: {}", clean_message(e.message())),
        )
    })
}

/// The dotted key path of the value that a parse error at `span` is in.
/// The parser points at one character; the bare token around it (a number,
/// a date, a boolean: `[A-Za-z0-9_+-.:]`, maybe empty) is replaced by `0`,
/// and if the text then parses, the error was in that value, whose key is
/// the one of the value now there. `None` when the text still does not
/// parse or no value is there (an error in a key or a table header).
fn key_at(text: &str, span: std::ops::Range<usize>) -> Option<String> {
    let bare = |c: char| c.is_ascii_alphanumeric() || "_+-.:".contains(c);
    let at = span.start;
    if at > text.len() || !text.is_char_boundary(at) {
        return None;
    }
    let start = text[..at]
        .char_indices()
        .rev()
        .take_while(|&(_, c)| bare(c))
        .last()
        .map_or(at, |(i, _)| i);
    let end = text[at..]
        .find(|c: char| !bare(c))
        .map_or(text.len(), |n| at + n);
    let patched = format!("{}0{}", &text[..start], &text[end..]);
    let doc = toml_edit::ImDocument::parse(patched.as_str()).ok()?;
    match doc.as_item() {
        toml_edit::Item::Table(t) => key_in_table(t, "", start),
        _ => None,
    }
}

fn key_in_table(table: &toml_edit::Table, path: &str, at: usize) -> Option<String> {
    table
        .iter()
        .find_map(|(k, item)| key_in_item(item, &join_key(path, k), at))
}

fn key_in_item(item: &toml_edit::Item, path: &str, at: usize) -> Option<String> {
    match item {
        toml_edit::Item::None => None,
        toml_edit::Item::Value(v) => key_in_value(v, path, at),
        toml_edit::Item::Table(t) => key_in_table(t, path, at),
        toml_edit::Item::ArrayOfTables(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, t)| key_in_table(t, &format!("{path}[{i}]"), at)),
    }
}

fn key_in_value(value: &toml_edit::Value, path: &str, at: usize) -> Option<String> {
    match value {
        toml_edit::Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, v)| key_in_value(v, &format!("{path}[{i}]"), at)),
        toml_edit::Value::InlineTable(t) => t
            .iter()
            .find_map(|(k, v)| key_in_value(v, &join_key(path, k), at)),
        _ => value
            .span()
            .filter(|s| s.contains(&at))
            .map(|_| path.to_string()),
    }
}

/// Checks `table` against `schema` and builds `T` from what parsed.
pub fn check_value<T: DeserializeOwned>(table: &toml::Table, schema: &Schema) -> Checked<T> {
    let mut errors = ConfigErrors::new();
    let mut placeholders = Vec::new();
    let kept = clean(table, schema, "", &mut errors, &mut placeholders);
    let config = kept.and_then(|t| match T::deserialize(toml::Value::Table(t)) {
        Ok(c) => Some(c),
        Err(e) => {
            errors.push("", clean_message(&e.to_string()));
            None
        }
    });
    Checked {
        config,
        errors,
        placeholders,
    }
}

/// The keys of `table` that parse, sub-tables cleaned recursively; `None`
/// when the table cannot be built even so.
fn clean(
    table: &toml::Table,
    schema: &Schema,
    path: &str,
    errors: &mut ConfigErrors,
    placeholders: &mut Vec<String>,
) -> Option<toml::Table> {
    let mut kept = toml::Table::new();
    // Keys present but refused (their error is reported): not "missing".
    let mut refused: Vec<String> = Vec::new();
    for (k, v) in table {
        let key = join_key(path, k);
        let value = match (schema.table(k), v) {
            (Some(sub), toml::Value::Table(t)) => match clean(t, sub, &key, errors, placeholders) {
                Some(t) => toml::Value::Table(t),
                None => continue,
            },
            _ => v.clone(),
        };
        let mut one = toml::Table::new();
        one.insert(k.clone(), value.clone());
        match (schema.probe)(&one) {
            // required keys are checked on the whole table below
            Err(m) if missing_field(&m).is_none() => {
                errors.push(key, m);
                refused.push(k.clone());
            }
            _ => {
                kept.insert(k.clone(), value);
            }
        }
    }
    // Required keys: report each, stand in with a placeholder, retry. The
    // number of tries is bounded by the table's fields.
    for _ in 0..64 {
        match (schema.probe)(&kept) {
            Ok(()) => return Some(kept),
            Err(m) => match missing_field(&m) {
                Some(field) if !kept.contains_key(&field) => {
                    let key = join_key(path, &field);
                    if !refused.contains(&field) {
                        errors.push(key.clone(), "missing: this key is required");
                    }
                    placeholders.push(key);
                    let value = placeholder(schema, &field);
                    kept.insert(field, value);
                }
                _ => {
                    errors.push(path, m);
                    return None;
                }
            },
        }
    }
    errors.push(path, "too many missing keys");
    None
}

/// A stand-in for the missing `field` of the type it has: the first of
/// an empty string, list or table, 0, 0.0 or false that the field takes
/// (a wrong type would add an error of its own).
fn placeholder(schema: &Schema, field: &str) -> toml::Value {
    let candidates = [
        toml::Value::String(String::new()),
        toml::Value::Array(Vec::new()),
        toml::Value::Table(toml::Table::new()),
        toml::Value::Integer(0),
        toml::Value::Float(0.0),
        toml::Value::Boolean(false),
    ];
    for c in &candidates {
        let mut one = toml::Table::new();
        one.insert(field.to_string(), c.clone());
        match (schema.probe)(&one) {
            Ok(()) => return c.clone(),
            Err(m) if missing_field(&m).is_some_and(|f| f != field) => return c.clone(),
            Err(_) => {}
        }
    }
    toml::Value::String(String::new())
}

/// The field of serde's "missing field `x`" message.
fn missing_field(message: &str) -> Option<String> {
    let rest = &message[message.find("missing field `")? + "missing field `".len()..];
    Some(rest[..rest.find('`')?].to_string())
}

/// serde/toml messages on one line.
pub fn clean_message(m: &str) -> String {
    let one_line = m
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    untyped(&one_line)
}

/// serde names the Rust type a table deserializes into ("expected struct
/// ClusterClientConfig"); the operator wrote TOML, so it reads "expected a
/// table".
fn untyped(m: &str) -> String {
    const STRUCT: &str = "expected struct ";
    let mut out = String::with_capacity(m.len());
    let mut rest = m;
    while let Some(at) = rest.find(STRUCT) {
        out.push_str(&rest[..at]);
        out.push_str("expected a table");
        let after = &rest[at + STRUCT.len()..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        rest = &after[name_len..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[test]
    fn a_table_is_not_named_by_its_rust_type() {
        assert_eq!(
            clean_message(
                "invalid type: integer `5`, expected struct ClusterClientConfig in `cluster`"
            ),
            "invalid type: integer `5`, expected a table in `cluster`"
        );
        assert_eq!(clean_message("expected struct A_1"), "expected a table");
        assert_eq!(clean_message("no struct here"), "no struct here");
    }

    #[test]
    fn a_syntax_error_names_its_line_and_column() {
        let e = parse_text("a = 1\nk1 = \n").expect_err("no value");
        let text = e.to_string();
        assert!(text.contains("TOML syntax at line 2, column 6"), "{text}");
        let e = parse_text("é = [\n").expect_err("unclosed");
        assert!(e.to_string().contains("TOML syntax at line "), "{e}");
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        need: String,
        #[serde(default)]
        n: u32,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Outer {
        #[serde(default)]
        x: f64,
        inner: Option<Inner>,
    }

    static INNER: Schema = leaf(probe::<Inner>);
    static OUTER: Schema = Schema {
        probe: probe::<Outer>,
        tables: &[("inner", &INNER)],
    };

    #[test]
    fn every_error_of_every_table_at_once() {
        let t = parse_text("x = \"no\"\nbogus = 1\n[inner]\nn = -1\nextra = 2\n").expect("toml");
        let c: Checked<Outer> = check_value(&t, &OUTER);
        let keys = c.errors.keys();
        assert_eq!(
            keys,
            vec!["bogus", "inner.extra", "inner.n", "inner.need", "x"]
        );
        assert_eq!(c.placeholders, vec!["inner.need".to_string()]);
        let cfg = c.config.expect("built from what parsed");
        assert_eq!(cfg.x, 0.0);
    }

    /// The TOML parser refuses an integer beyond i64 before any key is
    /// checked; the error still names the key, wherever it is.
    #[test]
    fn an_integer_beyond_i64_names_its_key_path() {
        let big = "99999999999999999999";
        for (text, key) in [
            (format!("mem_bytes = {big}\n"), "mem_bytes"),
            (format!("x = 1\n[inner]\nn = {big}\n"), "inner.n"),
            (format!("[a]\nb.c = {big}\n"), "a.b.c"),
            (format!("t = {{ u = [1, {big}] }}\n"), "t.u[1]"),
            (format!("[[r]]\nv = 1\n[[r]]\nv = -{big}\n"), "r[1].v"),
        ] {
            let e = parse_text(&text).expect_err("beyond i64");
            assert_eq!(e.keys(), vec![key], "{text}: {e}");
            assert!(e.to_string().contains("TOML syntax at line "), "{e}");
        }
        let e = parse_text("[d]\nt = 1979-05-27T07:32:00+25:00\n").expect_err("offset");
        assert_eq!(e.keys(), vec!["d.t"], "{e}");
        // An error that is not in a value keeps the empty key.
        for text in ["[a.]\nx = 1\n", "a = 1\na = 2\n", "x = = 1\n"] {
            let e = parse_text(text).expect_err("not in a value");
            assert_eq!(e.keys(), vec![""], "{text}: {e}");
        }
    }

    #[test]
    fn syntax_error_is_one_whole_file_error() {
        let e = parse_text("x = = 1").expect_err("syntax");
        assert_eq!(e.keys(), vec![""]);
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Two {
        list: Vec<String>,
        url: String,
    }

    /// QA C14: a missing list is one "missing" error (no type error of its
    /// placeholder), the next missing key is reported too, and a key of the
    /// wrong type is not also called missing.
    #[test]
    fn missing_and_mistyped_keys_get_one_error_each() {
        let schema = leaf(probe::<Two>);
        let c = check_value::<Two>(&toml::Table::new(), &schema);
        assert_eq!(c.errors.keys(), vec!["list", "url"], "{}", c.errors);
        assert!(c.errors.to_string().contains("missing"), "{}", c.errors);
        let t: toml::Table = "list = 42\nurl = \"x\"".parse().expect("toml");
        let c = check_value::<Two>(&t, &schema);
        assert_eq!(c.errors.keys(), vec!["list"], "{}", c.errors);
        assert!(!c.errors.to_string().contains("missing"), "{}", c.errors);
    }

    #[test]
    fn missing_field_is_found_in_serde_messages() {
        assert_eq!(
            missing_field("missing field `token_file`").as_deref(),
            Some("token_file")
        );
        assert_eq!(missing_field("unknown field `x`"), None);
    }
}
