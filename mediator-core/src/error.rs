//! Errors as people read them.

/// An error and its causes as the CLI prints them, `outer: inner: innermost`: some errors
/// (reqwest's, io's inside ours) name only their outermost part in their own message.
pub fn with_causes(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        message = format!("{message}: {inner}");
        cause = inner.source();
    }
    message
}
