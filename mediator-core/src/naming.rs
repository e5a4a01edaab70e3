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

/// Names from several sources made one set. A source's name stays as it is unless another
/// source has it too (or `prefix_all`), it is one the mediator makes itself (`reserved`:
/// `search_tools`), or it starts with another source's prefix (`mail_send` from any server but
/// `mail`, which would pose as `mail`'s `send`): then it becomes `<source>_<name>`, made valid by
/// the rules and unique among all the others. The prefix `<source>_` is that source's alone.
///
/// Names are given out in this order, so a clash never goes to a name a server chose: names
/// that stay; then prefixed names that read as their own source's; last, prefixed names that
/// read as another source's (source names that nest, `mail` and `mail_send`: `mail`'s
/// `send_now` would read `mail_send_now`), which take a `_N` suffix if that one has the name.
pub struct SharedNames {
    exposed: HashMap<(usize, String), String>,
    clashes: Vec<String>,
}

/// Why a name does not stay as its source wrote it.
enum Prefixed {
    Shared,
    Reserved,
    /// It starts with the prefix of this other source.
    Poses(usize),
}

impl SharedNames {
    /// Every name of every source (by number, `sources` naming them in order), each as often as
    /// it is listed; `reserved` are the names the mediator makes itself.
    pub fn new<'a>(
        sources: &[String],
        names: impl IntoIterator<Item = (usize, &'a str)>,
        prefix_all: bool,
        reserved: &[&str],
        rules: NameRules,
    ) -> Self {
        let prefixes: Vec<Option<String>> =
            sources.iter().map(|source| (!source.is_empty()).then(|| format!("{}_", rules.sanitize(source)))).collect();
        // The source whose prefix `name` starts with, the longest when prefixes nest.
        let owner = |name: &str| {
            (0..prefixes.len())
                .filter(|&source| prefixes[source].as_deref().is_some_and(|prefix| name.starts_with(prefix)))
                .max_by_key(|&source| (prefixes[source].as_ref().map_or(0, String::len), usize::MAX - source))
        };
        let mut clashes = Vec::new();
        for (one, prefix) in prefixes.iter().enumerate() {
            for (other, longer) in prefixes.iter().enumerate().filter(|(other, _)| *other != one) {
                if let (Some(prefix), Some(longer)) = (prefix, longer)
                    && longer.starts_with(prefix.as_str())
                    && (longer != prefix || one < other)
                {
                    clashes.push(format!(
                        "the servers `{}` and `{}` prefix tool names alike (`{prefix}`, `{longer}`): \
                         a prefixed name of one may read as the other's; rename one in the servers file",
                        sources[one], sources[other]
                    ));
                }
            }
        }
        let mut listed: Vec<(usize, &str)> = Vec::new();
        let mut holders: HashMap<&str, HashSet<usize>> = HashMap::new();
        for (source, name) in names {
            if holders.entry(name).or_default().insert(source) {
                listed.push((source, name));
            }
        }
        let why = |source: usize, name: &str| {
            if reserved.contains(&name) {
                Some(Prefixed::Reserved)
            } else if let Some(other) = owner(name).filter(|&other| other != source) {
                Some(Prefixed::Poses(other))
            } else if prefix_all || holders.get(name).is_some_and(|holders| holders.len() > 1) {
                Some(Prefixed::Shared)
            } else {
                None
            }
        };
        let mut exposed = HashMap::new();
        let mut taken: HashSet<String> = HashSet::new();
        let mut prefixed = Vec::new();
        for &(source, name) in &listed {
            match why(source, name) {
                None => {
                    taken.insert(name.to_owned());
                    exposed.insert((source, name.to_owned()), name.to_owned());
                }
                Some(why) => prefixed.push((source, name, why)),
            }
        }
        let source_name = |source: usize| sources.get(source).map_or("", String::as_str);
        let candidate = |source: usize, name: &str| match source_name(source) {
            "" => name.to_owned(),
            prefix => rules.sanitize(&format!("{prefix}_{name}")),
        };
        let reads_as_own = |source: usize, name: &str| {
            prefixes.get(source).is_none_or(Option::is_none) || owner(&candidate(source, name)) == Some(source)
        };
        let (own, posing): (Vec<_>, Vec<_>) =
            prefixed.into_iter().partition(|(source, name, _)| reads_as_own(*source, name));
        for (source, name, why) in own.into_iter().chain(posing) {
            let wanted = candidate(source, name);
            let mut name_given = wanted.clone();
            if taken.contains(&name_given) || (source_name(source).is_empty() && name_given == name) {
                name_given = rules.unique_variant(&wanted, |candidate| taken.contains(candidate));
            }
            let server = source_name(source);
            match why {
                Prefixed::Shared => {}
                Prefixed::Reserved => clashes.push(format!(
                    "the server `{server}` lists a tool named `{name}`, a name the mediator gives its own tool; \
                     listed as `{name_given}`"
                )),
                Prefixed::Poses(other) => clashes.push(format!(
                    "the server `{server}` lists a tool named `{name}`, which starts with `{}`, the prefix of \
                     the server `{}`'s tools; listed as `{name_given}`, so it cannot pose as one of them",
                    prefixes[other].as_deref().unwrap_or_default(),
                    source_name(other)
                )),
            }
            if let Some(other) = owner(&name_given).filter(|&other| other != source && !server.is_empty()) {
                clashes.push(format!(
                    "the server `{server}`'s tool `{name}` is listed as `{name_given}`, which reads as a tool of \
                     the server `{}`; rename one of them in the servers file",
                    source_name(other)
                ));
            }
            taken.insert(name_given.clone());
            exposed.insert((source, name.to_owned()), name_given);
        }
        SharedNames { exposed, clashes }
    }

    /// The name source number `source`'s `name` goes by.
    pub fn expose(&self, source: usize, name: &str) -> String {
        self.exposed.get(&(source, name.to_owned())).cloned().unwrap_or_else(|| name.to_owned())
    }

    /// Each name a server chose that clashed with another server's prefix or the mediator's
    /// own names, and how it was settled: for the log.
    pub fn clashes(&self) -> &[String] {
        &self.clashes
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

    fn shared(sources: &[&str], names: &[(usize, &str)], prefix_all: bool, reserved: &[&str]) -> SharedNames {
        let sources: Vec<String> = sources.iter().map(|&source| source.to_owned()).collect();
        SharedNames::new(&sources, names.iter().copied(), prefix_all, reserved, NameRules::MCP)
    }

    #[test]
    fn shared_names_are_prefixed_and_never_take_a_name_that_stays() {
        // `a` and `b` both have `x`; `c` has `a_x`, which starts with `a`'s prefix: prefixed.
        let names = shared(&["a", "b", "c"], &[(0, "x"), (1, "x"), (2, "a_x"), (2, "y")], false, &[]);
        assert_eq!(names.expose(0, "x"), "a_x");
        assert_eq!(names.expose(1, "x"), "b_x");
        assert_eq!(names.expose(2, "a_x"), "c_a_x");
        assert_eq!(names.expose(2, "y"), "y");
        assert!(names.clashes()[0].contains("`c`") && names.clashes()[0].contains("`a_`"), "{:?}", names.clashes());
        let sources = ["git hub".to_owned()];
        let all = SharedNames::new(&sources, [(0, "get")], true, &[], NameRules::STRICT);
        assert_eq!(all.expose(0, "get"), "git_hub_get");
    }

    #[test]
    fn a_prefixed_name_always_goes_to_the_source_it_reads_as() {
        // `mail`'s `send_now` would read as `mail_send`'s `now`, whichever comes first.
        let names = shared(&["mail", "mail_send"], &[(0, "send_now"), (1, "now")], true, &[]);
        assert_eq!(names.expose(1, "now"), "mail_send_now");
        assert_eq!(names.expose(0, "send_now"), "mail_send_now_2");
        assert!(names.clashes().iter().any(|clash| clash.contains("rename one")), "{:?}", names.clashes());
        // A server's own prefix is its own to use.
        let names = shared(&["mail", "evil"], &[(0, "mail_send"), (0, "send"), (1, "send")], false, &[]);
        assert_eq!(names.expose(0, "mail_send"), "mail_send");
        assert_eq!(names.expose(0, "send"), "mail_send_2");
        assert_eq!(names.expose(1, "send"), "evil_send");
    }

    #[test]
    fn the_mediators_own_names_are_never_a_servers() {
        let names = shared(&["a", "b"], &[(0, "search_tools"), (1, "x")], false, &["search_tools"]);
        assert_eq!(names.expose(0, "search_tools"), "a_search_tools");
        assert_eq!(names.expose(1, "x"), "x");
        let unnamed = shared(&[""], &[(0, "search_tools")], false, &["search_tools"]);
        assert_eq!(unnamed.expose(0, "search_tools"), "search_tools_2");
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
