//! Text from containers' labels, names and journals on its way to a
//! terminal or a file: one sanitiser for every printer (`tailor history`,
//! `tailor recommendations`' table and CSV).

/// `s` with every control character (escape sequences, newlines, tabs,
/// C1 controls) and every bidirectional-override mark shown as `?`: names,
/// labels and explanations are set by users and must not drive a terminal
/// or break a row.
pub fn printable(s: &str) -> String {
    s.chars()
        .map(|c| if is_unsafe(c) { '?' } else { c })
        .collect()
}

fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        )
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn escapes_and_overrides_are_replaced() {
        assert_eq!(printable("x\u{1b}[31mred"), "x?[31mred");
        assert_eq!(printable("a\nb\tc\u{9b}d\u{7f}"), "a?b?c?d?");
        assert_eq!(printable("abc\u{202E}txt.exe"), "abc?txt.exe");
        assert_eq!(printable("web-1 é 日本"), "web-1 é 日本");
    }
}
