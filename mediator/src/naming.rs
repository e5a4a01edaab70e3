//! Which tool names a client accepts.

/// The names a client profile accepts: 1 to `max_len` characters of `A-Za-z0-9_-`, and `.`
/// where `allow_dots` is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NameRules {
    max_len: usize,
    allow_dots: bool,
}

impl NameRules {
    /// The shortest limit a profile may set: room for a repaired name and a `_N` suffix.
    pub const MIN_LEN: usize = 8;

    /// A client profile; a `max_len` under [`NameRules::MIN_LEN`] is raised to it.
    pub const fn new(max_len: usize, allow_dots: bool) -> Self {
        NameRules { max_len: if max_len < Self::MIN_LEN { Self::MIN_LEN } else { max_len }, allow_dots }
    }

    pub const fn max_len(&self) -> usize {
        self.max_len
    }

    pub const fn allow_dots(&self) -> bool {
        self.allow_dots
    }

    /// The MCP specification: 1-128 characters of `A-Za-z0-9_-.`.
    pub const MCP: NameRules = NameRules { max_len: 128, allow_dots: true };
    /// Clients that reject dots: `^[a-zA-Z0-9_-]{1,64}$`.
    pub const STRICT: NameRules = NameRules { max_len: 64, allow_dots: false };

    pub fn is_valid(&self, name: &str) -> bool {
        !name.is_empty() && name.len() <= self.max_len && name.bytes().all(|b| self.allows(b))
    }

    fn allows(&self, byte: u8) -> bool {
        byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-' || (self.allow_dots && byte == b'.')
    }

    /// The closest valid name: disallowed characters become `_`, the result is cut to length.
    pub fn sanitize(&self, name: &str) -> String {
        let mut sanitized: String =
            name.chars().map(|c| if c.is_ascii() && self.allows(c as u8) { c } else { '_' }).collect();
        sanitized.truncate(self.max_len);
        if sanitized.is_empty() {
            sanitized.push_str("tool");
        }
        sanitized
    }

    /// `name` with the first `_N` suffix (from `_2`) that makes it not `taken`, cut to length.
    pub fn unique_variant(&self, name: &str, taken: impl Fn(&str) -> bool) -> String {
        (2..)
            .map(|n| {
                let suffix = format!("_{n}");
                let mut base = name.to_owned();
                base.truncate(self.max_len.saturating_sub(suffix.len()));
                base + &suffix
            })
            .find(|candidate| !taken(candidate))
            .expect("an unbounded range always yields a free name")
    }
}

impl Default for NameRules {
    fn default() -> Self {
        NameRules::MCP
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_allows_dots_strict_does_not() {
        assert!(NameRules::MCP.is_valid("math.sum"));
        assert!(!NameRules::STRICT.is_valid("math.sum"));
        assert!(NameRules::STRICT.is_valid("get_user-2"));
    }

    #[test]
    fn empty_long_and_unicode_names_are_invalid() {
        assert!(!NameRules::MCP.is_valid(""));
        assert!(!NameRules::MCP.is_valid(&"a".repeat(129)));
        assert!(NameRules::MCP.is_valid(&"a".repeat(128)));
        assert!(!NameRules::MCP.is_valid("naïve"));
        assert!(!NameRules::MCP.is_valid("get user"));
    }

    #[test]
    fn sanitize_makes_any_name_valid() {
        for name in ["", "get user", "naïve", "a/b", &"x".repeat(300)] {
            assert!(NameRules::STRICT.is_valid(&NameRules::STRICT.sanitize(name)), "{name}");
        }
        assert_eq!(NameRules::STRICT.sanitize("admin/users.list"), "admin_users_list");
    }
}
