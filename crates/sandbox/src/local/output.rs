//! How much of an execution's output a local sandbox keeps: one cap for every kind of
//! execution (shell and Python alike, each stream or field), what is past it dropped and said
//! in a last line, so a runaway command fills neither the memory nor the history.

/// The most bytes of output kept per stream (shell) or field (Python's output, error, value).
pub const MAX_OUTPUT_BYTES: usize = 4 * 1024 * 1024;

/// The line that says how much was not kept.
pub(crate) fn cut_note(dropped: u64) -> String {
    format!(
        "\n[{dropped} more bytes of output were not kept: an execution keeps {MAX_OUTPUT_BYTES}]"
    )
}

/// `kept` (at most [`MAX_OUTPUT_BYTES`], as it came) as text, stripped, with the note when
/// `dropped` bytes were left out.
pub(crate) fn text(kept: &[u8], dropped: u64) -> String {
    let mut text = String::from_utf8_lossy(kept).trim().to_owned();
    if dropped > 0 {
        text.push_str(&cut_note(dropped));
    }
    text
}

/// The longest reply line a Python session may send: three fields at the cap, each escaped as
/// JSON at worst six bytes a byte (`\u00XX`), and room for the rest.
pub(crate) const MAX_REPLY_BYTES: u64 = 3 * 6 * MAX_OUTPUT_BYTES as u64 + 64 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_cut_is_said() {
        assert_eq!(text(b"  hi \n", 0), "hi");
        assert_eq!(
            text(b"abc", 10),
            format!(
                "abc\n[10 more bytes of output were not kept: an execution keeps {MAX_OUTPUT_BYTES}]"
            )
        );
    }
}
