//! Text from a peer made safe to log or print: [`printable`] escapes what could forge a log
//! line or drive a terminal. Not here: where it is used (every log line and message that
//! quotes a name or text a peer chose).

/// `text` as it may be logged or printed: its control characters (C0, DEL, C1) and the
/// bidirectional overrides escaped as Rust writes them (`\n`, `\u{1b}`), everything else as
/// it is. For text an upstream chose (server and tool names, errors, messages): a server
/// cannot then forge a log line or drive the operator's terminal.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !unsafe_char(c) {
            out.push(c);
        } else if matches!(c, '\n' | '\r' | '\t') {
            out.extend(c.escape_debug());
        } else {
            out.extend(c.escape_unicode());
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_escapes_what_could_forge_a_line_or_drive_a_terminal() {
        assert!(matches!(printable("plain ünïcode"), std::borrow::Cow::Borrowed("plain ünïcode")));
        assert_eq!(printable("a\x1b[2J\nINFO forged\r\x07\x7f\u{9b}"), r"a\u{1b}[2J\nINFO forged\r\u{7}\u{7f}\u{9b}");
        assert_eq!(printable("abc\u{202e}fed"), r"abc\u{202e}fed");
    }
}
