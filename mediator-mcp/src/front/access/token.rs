//! A bearer JWT checked (RFC 9068, RFC 8725): typed as an access token (`typ` `at+jwt`), with no
//! critical header extension, signed with an asymmetric algorithm of [`ALGORITHMS`] by a key of
//! the issuer's, naming the issuer (`iss`) and this resource (`aud`), within its time (`exp`,
//! and `nbf` when it has one), and naming its subject (`sub`). `none` and the HMAC algorithms
//! are never taken: a key published for anyone to read would then sign anything.

use jsonwebtoken::{Algorithm, DecodingKey, Validation, errors::ErrorKind};
use serde_json::{Map, Value};

use super::keys::{IssuerKeys, KeyError};
use super::{OAuthOptions, Refusal};

/// The algorithms a token may be signed with.
pub(super) const ALGORITHMS: [Algorithm; 4] = [Algorithm::RS256, Algorithm::PS256, Algorithm::ES256, Algorithm::EdDSA];

/// The claims of `token` once it is checked; or why it is refused.
pub(super) async fn verify(
    options: &OAuthOptions,
    keys: &IssuerKeys,
    token: &str,
) -> Result<Map<String, Value>, Refusal> {
    // `alg: none`, or one the crate does not know, does not even read as a header.
    let header = jsonwebtoken::decode_header(token).map_err(|_| Refusal::InvalidToken("the token is not a JWT"))?;
    if !ALGORITHMS.contains(&header.alg) {
        return Err(Refusal::InvalidToken("the token is not signed with an algorithm taken here"));
    }
    // RFC 9068 §4: an access token says it is one; one that does not (an ID token, typ `JWT`, or
    // no typ at all) is refused, so a token made for something else never opens a session.
    if !header.typ.as_deref().is_some_and(is_access_token_type) {
        return Err(Refusal::InvalidToken("the token is not an access token (its typ is not at+jwt)"));
    }
    // RFC 7515 §4.1.11: extensions marked critical must be understood, and none is here.
    if header.crit.is_some() {
        return Err(Refusal::InvalidToken(
            "the token has critical header parameters this resource does not understand",
        ));
    }
    let candidates = match keys.candidates(header.kid.as_deref(), header.alg).await {
        Ok(candidates) => candidates,
        Err(KeyError::Unknown) => return Err(Refusal::InvalidToken("the token is not signed by a key of the issuer")),
        Err(KeyError::Unavailable(why)) => return Err(Refusal::Unavailable(why)),
    };
    let validation = validation(options, keys.issued_as(), header.alg);
    let mut refusal = Refusal::InvalidToken("the token is not signed by a key of the issuer");
    for key in &candidates {
        let Ok(key) = DecodingKey::from_jwk(key) else { continue };
        match jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation) {
            // RFC 9068 §2.2: `sub` is required. Sessions are kept apart by it: tokens without
            // one would share theirs.
            Ok(data) if data.claims.get("sub").and_then(Value::as_str).is_none_or(str::is_empty) => {
                return Err(Refusal::InvalidToken("the token lacks a claim it must have (sub)"));
            }
            Ok(data) => return Ok(data.claims),
            // Another key of the issuer's may have signed it.
            Err(error)
                if matches!(
                    error.kind(),
                    ErrorKind::InvalidSignature
                        | ErrorKind::InvalidEcdsaKey
                        | ErrorKind::InvalidEddsaKey
                        | ErrorKind::InvalidRsaKey(_)
                        | ErrorKind::InvalidKeyFormat
                ) => {}
            Err(error) => {
                refusal = Refusal::InvalidToken(why(error.kind()));
                break;
            }
        }
    }
    Err(refusal)
}

/// `at+jwt`, or the media type it stands for (RFC 9068 §4; RFC 7515 §4.1.9: the
/// `application/` prefix may be left out, and media types are compared ignoring case).
fn is_access_token_type(typ: &str) -> bool {
    let typ = typ.trim();
    let typ = typ.get(..12).filter(|prefix| prefix.eq_ignore_ascii_case("application/")).map_or(typ, |_| &typ[12..]);
    typ.eq_ignore_ascii_case("at+jwt")
}

/// What a token must say: the issuer (as configured, or as its metadata spells it), this
/// resource, its expiry; its time read with the clock skew allowed.
fn validation(options: &OAuthOptions, issued_as: Option<String>, algorithm: Algorithm) -> Validation {
    let mut validation = Validation::new(algorithm);
    let mut issuers = vec![options.issuer.clone()];
    issuers.extend(issued_as);
    validation.set_issuer(&issuers);
    validation.set_audience(&[&options.audience]);
    validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    validation.validate_exp = true;
    validation.validate_nbf = true;
    validation.leeway = options.clock_skew.as_secs();
    validation
}

/// Why a token signed by the issuer is refused, in words a client may be told.
fn why(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::ExpiredSignature => "the token has expired",
        ErrorKind::ImmatureSignature => "the token is not valid yet",
        ErrorKind::InvalidAudience => "the token is for another resource",
        ErrorKind::InvalidIssuer => "the token is from another issuer",
        ErrorKind::MissingRequiredClaim(_) => "the token lacks a claim it must have (exp, iss, aud)",
        _ => "the token is not valid",
    }
}
