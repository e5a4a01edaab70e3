//! What a server's refusal says: the `Bearer` challenge of its `WWW-Authenticate` header
//! (RFC 6750 §3, RFC 9728 §5.1), from which sign-in learns where to start and what to ask for.

/// The parameters of a `Bearer` challenge that sign-in uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// Where the server's protected resource metadata is (RFC 9728).
    pub resource_metadata: Option<String>,
    /// The scopes the request needs, space-separated.
    pub scope: Option<String>,
    /// `invalid_token`, `insufficient_scope`, ...
    pub error: Option<String>,
}

impl Challenge {
    /// The `Bearer` challenge among the header values (a header may hold several challenges,
    /// and a response several headers); `None` when there is none: the server does not ask for
    /// an OAuth token (an API key, Basic), and no sign-in is started for it.
    pub fn of<'a>(values: impl IntoIterator<Item = &'a str>) -> Option<Challenge> {
        values.into_iter().find_map(bearer)
    }

    /// The server asks for more scope than the token has (a step-up).
    pub fn wants_more_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// The `Bearer` challenge of one header value, if it holds one. A value is a list of
/// challenges, each a scheme and its `name=value` parameters, separated by commas.
fn bearer(value: &str) -> Option<Challenge> {
    let mut rest = value;
    // The challenge being read: whether its scheme is Bearer, and its parameters.
    let mut current: Option<(bool, Challenge)> = None;
    let mut found = None;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
        if rest.is_empty() {
            break;
        }
        if let Some((name, value, after)) = parameter(rest) {
            if let Some((true, challenge)) = &mut current {
                match name.to_ascii_lowercase().as_str() {
                    "resource_metadata" => challenge.resource_metadata = Some(value),
                    "scope" => challenge.scope = Some(value),
                    "error" => challenge.error = Some(value),
                    _ => {}
                }
            }
            rest = after;
            continue;
        }
        // Not a parameter: the next challenge's scheme (never empty: separators are gone).
        if let Some((true, challenge)) = current.take() {
            found.get_or_insert(challenge);
        }
        let end = rest.find(|c: char| c.is_whitespace() || c == ',').unwrap_or(rest.len());
        current = Some((rest[..end].eq_ignore_ascii_case("bearer"), Challenge::default()));
        rest = &rest[end..];
    }
    if let Some((true, challenge)) = current {
        found.get_or_insert(challenge);
    }
    found
}

/// One `name=value` or `name="quoted value"` at the start of `text`: the name, the value
/// unquoted, and what follows it.
fn parameter(text: &str) -> Option<(&str, String, &str)> {
    let equals = text.find('=')?;
    let name = text[..equals].trim();
    if name.is_empty() || name.contains(|c: char| c.is_whitespace() || c == ',' || c == '"') {
        return None;
    }
    let after = text[equals + 1..].trim_start();
    if let Some(quoted) = after.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = quoted.char_indices();
        while let Some((at, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        value.push(escaped);
                    }
                }
                '"' => return Some((name, value, &quoted[at + 1..])),
                c => value.push(c),
            }
        }
        // An unclosed quote: the rest is the value.
        return Some((name, value, ""));
    }
    let end = after.find([',', ' ', '\t']).unwrap_or(after.len());
    Some((name, after[..end].to_owned(), &after[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_bearer_challenge_with_quoted_and_bare_parameters() {
        let header = r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="http://127.0.0.1:3000/.well-known/oauth-protected-resource/mcp", error_description="Scope \"x\" needed""#;
        let challenge = Challenge::of([header]).unwrap();
        assert_eq!(challenge.scope.as_deref(), Some("mcp:basic mcp:write"));
        assert_eq!(
            challenge.resource_metadata.as_deref(),
            Some("http://127.0.0.1:3000/.well-known/oauth-protected-resource/mcp")
        );
        assert!(challenge.wants_more_scope());
        assert_eq!(Challenge::of(["Bearer error=invalid_token"]).unwrap().error.as_deref(), Some("invalid_token"));
    }

    #[test]
    fn finds_bearer_among_other_schemes_and_headers() {
        let challenge = Challenge::of(["Basic realm=\"x\", Bearer scope=\"a b\"", "DPoP algs=\"ES256\""]).unwrap();
        assert_eq!(challenge.scope.as_deref(), Some("a b"));
        let challenge = Challenge::of(["Basic realm=\"x\"", "bearer resource_metadata=\"https://h/m\""]).unwrap();
        assert_eq!(challenge.resource_metadata.as_deref(), Some("https://h/m"));
        assert_eq!(Challenge::of(["Basic realm=\"x\""]), None);
        assert_eq!(Challenge::of(["Bearer"]), Some(Challenge::default()));
    }

    #[test]
    fn hostile_headers_end_without_a_challenge_or_a_panic() {
        for header in [
            "",
            "Bearer",
            "Bearer =",
            "Bearer scope=\"unclosed",
            ",,,",
            "Bearer a=b,,c=d",
            "\u{e9}\u{e9} x=\"",
            "=\"\"",
        ] {
            let _ = Challenge::of([header]);
        }
        assert_eq!(Challenge::of(["Bearer scope=\"unclosed"]).unwrap().scope.as_deref(), Some("unclosed"));
    }
}
