//! Which tool names a client accepts, and names from several sources made one set.

use std::collections::{HashMap, HashSet};

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

/// Names from several sources made one set: a name more than one source has (or every name,
/// with `prefix_all`) becomes `<source>_<name>`, made valid by the rules and unique among all
/// the others. Names that stay as they are are reserved first, so a prefixed name never takes
/// one of them.
pub(crate) struct SharedNames {
    holders: HashMap<String, usize>,
    taken: HashSet<String>,
    prefix_all: bool,
    rules: NameRules,
}

impl SharedNames {
    /// Every name of every source, each as often as it is listed.
    pub(crate) fn new<'a>(names: impl IntoIterator<Item = &'a str>, prefix_all: bool, rules: NameRules) -> Self {
        let mut holders: HashMap<String, usize> = HashMap::new();
        for name in names {
            *holders.entry(name.to_owned()).or_default() += 1;
        }
        let mut shared = SharedNames { holders, taken: HashSet::new(), prefix_all, rules };
        shared.taken = shared.holders.keys().filter(|name| !shared.is_shared(name)).cloned().collect();
        shared
    }

    pub(crate) fn is_shared(&self, name: &str) -> bool {
        self.prefix_all || self.holders.get(name).is_some_and(|&count| count > 1)
    }

    /// The name source `source`'s `name` goes by.
    pub(crate) fn expose(&mut self, source: &str, name: &str) -> String {
        if !self.is_shared(name) {
            return name.to_owned();
        }
        let mut exposed = self.rules.sanitize(&format!("{source}_{name}"));
        if self.taken.contains(&exposed) {
            exposed = self.rules.unique_variant(&exposed, |candidate| self.taken.contains(candidate));
        }
        self.taken.insert(exposed.clone());
        exposed
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
    fn shared_names_are_prefixed_and_never_take_a_name_that_stays() {
        // `a` and `b` both have `x`; `c` has `a_x` of its own, which keeps it.
        let mut names = SharedNames::new(["x", "x", "a_x"], false, NameRules::MCP);
        assert_eq!(names.expose("a", "x"), "a_x_2");
        assert_eq!(names.expose("b", "x"), "b_x");
        assert_eq!(names.expose("c", "a_x"), "a_x");
        let mut all = SharedNames::new(["get"], true, NameRules::STRICT);
        assert_eq!(all.expose("git hub", "get"), "git_hub_get");
    }

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
