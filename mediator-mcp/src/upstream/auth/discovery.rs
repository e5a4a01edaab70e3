//! Where to sign in, found as the MCP authorization specification says: the server's protected
//! resource metadata (RFC 9728) from its challenge or its well-known paths, then its
//! authorization server's metadata (RFC 8414, or OpenID Connect discovery), and for servers of
//! the 2025-03-26 revision, which publish no resource metadata, the server's own origin.

use reqwest::Url;
use serde::Deserialize;

use super::{AuthError, Web};

/// A protected resource's metadata (RFC 9728 §2), the parts sign-in uses.
#[derive(Debug, Clone, Deserialize)]
pub struct ResourceMetadata {
    pub resource: Option<String>,
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    pub scopes_supported: Option<Vec<String>>,
}

/// An authorization server's metadata (RFC 8414 §2), the parts sign-in uses.
#[derive(Debug, Clone, Deserialize)]
pub struct ServerMetadata {
    pub issuer: Option<String>,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    pub code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
}

/// What discovery found for one server.
#[derive(Debug, Clone)]
pub struct Discovered {
    /// The resource indicator every authorization and token request carries (RFC 8707).
    pub resource: String,
    /// The scopes the resource says it supports, if it says.
    pub scopes_supported: Option<Vec<String>>,
    /// The authorization server: its identifier and its metadata.
    pub issuer: String,
    pub server: ServerMetadata,
}

/// Discovers where `server` (the MCP endpoint) signs users in; `hinted` is the
/// `resource_metadata` of its challenge, if it gave one.
pub async fn discover(web: &Web, server: &Url, hinted: Option<&str>) -> Result<Discovered, AuthError> {
    let resource = match hinted {
        Some(hinted) => {
            let url = web.parse(hinted, "the resource_metadata of the server's challenge")?;
            Some(web.get_json::<ResourceMetadata>(&url).await?.ok_or_else(|| AuthError::Discovery {
                what: "protected resource metadata".into(),
                at: tool_mediator::http::shown(&url),
                reason: "not found".into(),
            })?)
        }
        None => first_found(web, &resource_metadata_urls(server)).await?,
    };
    let Some(metadata) = resource else {
        // The 2025-03-26 revision: the server's origin is its authorization server.
        return legacy(web, server).await;
    };
    // RFC 9728 §2 requires `resource`, and §3.3 that it be the resource asked about: metadata
    // without it vouches for nothing.
    let Some(resource) = &metadata.resource else {
        return Err(AuthError::Discovery {
            what: "protected resource metadata".into(),
            at: tool_mediator::http::shown(server),
            reason: "it names no resource (RFC 9728 requires one, naming this server)".into(),
        });
    };
    // A resource that is not this server would have tokens made for another one.
    let named = web.parse(resource, "the resource of the protected resource metadata")?;
    if !covers(&named, server) {
        return Err(AuthError::ResourceMismatch {
            named: tool_mediator::http::shown(&named),
            server: tool_mediator::http::shown(server),
        });
    }
    let resource = resource.clone();
    let issuer = metadata.authorization_servers.first().ok_or_else(|| AuthError::Discovery {
        what: "protected resource metadata".into(),
        at: tool_mediator::http::shown(server),
        reason: "it names no authorization server".into(),
    })?;
    let issuer_url = web.parse(issuer, "the authorization server the resource names")?;
    let server_metadata =
        first_found(web, &server_metadata_urls(&issuer_url)).await?.ok_or_else(|| AuthError::Discovery {
            what: "authorization server metadata".into(),
            at: tool_mediator::http::shown(&issuer_url),
            reason: "none at its well-known paths".into(),
        })?;
    check_issuer(&server_metadata, issuer)?;
    Ok(Discovered {
        resource,
        scopes_supported: metadata.scopes_supported,
        issuer: issuer.clone(),
        server: server_metadata,
    })
}

/// A server without resource metadata (the 2025-03-26 revision): its origin's authorization
/// server metadata, or the default endpoints at its origin.
async fn legacy(web: &Web, server: &Url) -> Result<Discovered, AuthError> {
    let origin = server.join("/").expect("an absolute URL joins a path");
    let issuer = origin.as_str().trim_end_matches('/').to_owned();
    let metadata: Option<ServerMetadata> = first_found(web, &server_metadata_urls(&origin)).await?;
    let metadata = match metadata {
        Some(metadata) => {
            // The server's own origin serves it, and may name an issuer under a path of its
            // own (`/oauth`), as 2025-03-26 servers do; one of another origin is not its own.
            let named = metadata.issuer.as_deref().and_then(|named| Url::parse(named).ok());
            match named {
                Some(named) if named.origin() == origin.origin() => {}
                _ => check_issuer(&metadata, &issuer)?,
            }
            metadata
        }
        None => ServerMetadata {
            issuer: None,
            authorization_endpoint: Some(format!("{issuer}/authorize")),
            token_endpoint: format!("{issuer}/token"),
            registration_endpoint: Some(format!("{issuer}/register")),
            token_endpoint_auth_methods_supported: None,
            // PKCE is used all the same; the server just never said.
            code_challenge_methods_supported: Some(vec!["S256".into()]),
            client_id_metadata_document_supported: false,
        },
    };
    Ok(Discovered { resource: canonical(server), scopes_supported: None, issuer, server: metadata })
}

/// The first of `urls` that serves a document; `None` when none does.
async fn first_found<T: serde::de::DeserializeOwned>(web: &Web, urls: &[Url]) -> Result<Option<T>, AuthError> {
    for url in urls {
        if let Some(found) = web.get_json(url).await? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// Where a server's resource metadata may be (RFC 9728 §3.1): under the well-known prefix with
/// the server's path, then at the root.
fn resource_metadata_urls(server: &Url) -> Vec<Url> {
    well_known(server, "oauth-protected-resource", false)
}

/// Where an authorization server's metadata may be, in the order the MCP specification gives:
/// OAuth's and OpenID's well-known prefixes with the issuer's path inserted, then OpenID's
/// appended to the path.
pub(crate) fn server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let mut urls = well_known(issuer, "oauth-authorization-server", true);
    urls.extend(well_known(issuer, "openid-configuration", true));
    if !path.is_empty() {
        let mut appended = issuer.clone();
        appended.set_path(&format!("{path}/.well-known/openid-configuration"));
        appended.set_query(None);
        appended.set_fragment(None);
        urls.push(appended);
    }
    urls
}

/// `/.well-known/<name><path>` for `url`, and the root form; only the path form when the URL
/// has a path and `path_only`.
fn well_known(url: &Url, name: &str, path_only: bool) -> Vec<Url> {
    let path = url.path().trim_end_matches('/');
    let at = |path: &str| {
        let mut at = url.clone();
        at.set_path(path);
        at.set_query(None);
        at.set_fragment(None);
        at
    };
    match (path.is_empty(), path_only) {
        (true, _) => vec![at(&format!("/.well-known/{name}"))],
        (false, true) => vec![at(&format!("/.well-known/{name}{path}"))],
        (false, false) => vec![at(&format!("/.well-known/{name}{path}")), at(&format!("/.well-known/{name}"))],
    }
}

/// The server's URL as a resource indicator: no fragment, no user or password.
pub fn canonical(server: &Url) -> String {
    let mut url = server.clone();
    url.set_fragment(None);
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.to_string()
}

/// Whether a resource named `named` covers the endpoint `server`: the same origin, and a path
/// that is the server's or a parent of it.
fn covers(named: &Url, server: &Url) -> bool {
    if named.origin() != server.origin() {
        return false;
    }
    let parent = named.path().trim_end_matches('/');
    let path = server.path();
    path == parent || path.trim_end_matches('/') == parent || path.starts_with(&format!("{parent}/"))
}

/// The metadata must be the issuer's own (RFC 8414 §3.3): metadata served under one issuer's
/// name for another would send the user to a server they did not choose.
fn check_issuer(metadata: &ServerMetadata, expected: &str) -> Result<(), AuthError> {
    // RFC 8414 §2 requires `issuer`: metadata without it could be anyone's.
    let Some(issuer) = &metadata.issuer else {
        return Err(AuthError::Discovery {
            what: "authorization server metadata".into(),
            at: expected.to_owned(),
            reason: "it names no issuer (RFC 8414 requires one, the issuer asked)".into(),
        });
    };
    if issuer.trim_end_matches('/') == expected.trim_end_matches('/') {
        return Ok(());
    }
    Err(AuthError::IssuerMismatch { expected: expected.to_owned(), issued: issuer.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    fn paths(urls: Vec<Url>) -> Vec<String> {
        urls.iter().map(|url| url.path().to_owned()).collect()
    }

    #[test]
    fn resource_metadata_is_looked_for_under_the_path_then_at_the_root() {
        assert_eq!(
            paths(resource_metadata_urls(&url("http://h/mcp?key=1"))),
            ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]
        );
        assert_eq!(paths(resource_metadata_urls(&url("http://h/"))), ["/.well-known/oauth-protected-resource"]);
    }

    #[test]
    fn server_metadata_urls_insert_the_issuers_path_and_never_drop_it() {
        assert_eq!(
            paths(server_metadata_urls(&url("https://auth.test/tenant1"))),
            [
                "/.well-known/oauth-authorization-server/tenant1",
                "/.well-known/openid-configuration/tenant1",
                "/tenant1/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            paths(server_metadata_urls(&url("https://auth.test"))),
            ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"]
        );
    }

    #[test]
    fn a_resource_covers_its_own_path_and_those_below_it_only() {
        let server = url("https://mcp.test/v1/mcp");
        assert!(covers(&url("https://mcp.test/v1/mcp"), &server));
        assert!(covers(&url("https://mcp.test/v1"), &server));
        assert!(covers(&url("https://mcp.test/"), &server));
        assert!(!covers(&url("https://mcp.test/v1/mc"), &server));
        assert!(!covers(&url("https://other.test/v1/mcp"), &server));
        assert!(!covers(&url("http://mcp.test/v1/mcp"), &server));
    }

    #[test]
    fn metadata_under_another_issuers_name_is_refused() {
        let metadata: ServerMetadata = serde_json::from_value(serde_json::json!({
            "issuer": "https://evil.test", "token_endpoint": "https://evil.test/token"
        }))
        .unwrap();
        assert!(check_issuer(&metadata, "https://auth.test").is_err());
        assert!(check_issuer(&metadata, "https://evil.test/").is_ok());
        let anonymous: ServerMetadata =
            serde_json::from_value(serde_json::json!({"token_endpoint": "https://auth.test/token"})).unwrap();
        assert!(check_issuer(&anonymous, "https://auth.test").is_err(), "no issuer is no match");
    }
}
