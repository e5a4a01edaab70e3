//! Counts in messages: `1 tool`, `2 tools`, never `1 tools`.

/// `count` followed by `one` when it is 1, else by `many`.
pub fn counted<N: std::fmt::Display + PartialEq + From<u8>>(count: N, one: &str, many: &str) -> String {
    let word = if count == N::from(1) { one } else { many };
    format!("{count} {word}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(counted(1, "tool", "tools"), "1 tool");
        assert_eq!(counted(0, "tool", "tools"), "0 tools");
        assert_eq!(counted(2usize, "schema changed", "schemas changed"), "2 schemas changed");
        assert_eq!(counted(1u64, "request", "requests"), "1 request");
    }
}
