//! A small JSON writer: the dashboard's answers are built by hand, so the feature
//! pulls in no serializer.

use std::fmt::Write;

/// Appends `s` as a JSON string (quoted and escaped).
pub(super) fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // `<` escaped too, so that no text can close a `<script>` it is put in.
            c if (c as u32) < 0x20 || c == '<' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Appends `"key":` (after a comma unless `first`).
pub(super) fn key(out: &mut String, first: bool, k: &str) {
    if !first {
        out.push(',');
    }
    string(out, k);
    out.push(':');
}

/// Appends `"key":value` for a number.
pub(super) fn num(out: &mut String, first: bool, k: &str, v: impl std::fmt::Display) {
    key(out, first, k);
    let _ = write!(out, "{v}");
}

/// Appends `"key":"value"`.
pub(super) fn text(out: &mut String, first: bool, k: &str, v: &str) {
    key(out, first, k);
    string(out, v);
}

/// Appends `"key":"value"` or `"key":null`.
pub(super) fn opt_text(out: &mut String, first: bool, k: &str, v: Option<&str>) {
    key(out, first, k);
    match v {
        Some(v) => string(out, v),
        None => out.push_str("null"),
    }
}

/// `{"error": message}`.
pub(super) fn error(message: &str) -> String {
    let mut out = String::from("{");
    text(&mut out, true, "error", message);
    out.push('}');
    out
}
