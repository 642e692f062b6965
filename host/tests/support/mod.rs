//! Helpers shared by the integration tests.

/// Prints a skip reason past the test harness's output capture (which takes only the `print!`
/// macros), so CI logs show why a GPU test did not run.
pub fn skip_note(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}
