//! The `MCP-Protocol-Version` header of a POST inside a session, checked against the version
//! the session negotiated ([2025-11-25 transports, "Protocol Version Header"](https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#protocol-version-header)):
//! the client sends the negotiated version; an invalid or unsupported one is answered
//! `400 Bad Request`. A header naming a revision we serve but not the session's is refused the
//! same way, naming both: a client that lost track of its session's version would otherwise be
//! served by rules it does not expect.
//!
//! Pure functions over the header's text: no HTTP types. Not here: requests without a session
//! (the handshake's, and the 2026-07-28 per-request ladder, which has rules of its own).

use crate::proto::version::ProtocolVersion;

/// Whether `header` (the `MCP-Protocol-Version` value, if any) names no revision we know.
pub(crate) fn is_unknown(header: Option<&str>) -> bool {
    header.is_some_and(|text| text.trim().parse::<ProtocolVersion>().is_err())
}

/// Why a POST in a session whose negotiated version is `negotiated` is refused for its
/// `MCP-Protocol-Version` header, if it is (the message of the 400 answer); `supported` are
/// the versions this server serves. An absent header is no reason: the session's version
/// applies.
pub(crate) fn session_refusal(
    header: Option<&str>,
    negotiated: Option<ProtocolVersion>,
    supported: &[ProtocolVersion],
) -> Option<String> {
    let text = header?.trim();
    let shown = crate::proto::printable::printable(text);
    match text.parse::<ProtocolVersion>() {
        Ok(v) if !supported.contains(&v) || !v.has_initialize_handshake() => None,
        Ok(v) => match negotiated {
            Some(n) if n != v => Some(format!(
                "Bad Request: MCP-Protocol-Version {v} does not match the protocol version this session \
                 negotiated, {n}"
            )),
            _ => None,
        },
        Err(_) => {
            let served: Vec<String> = supported.iter().map(ToString::to_string).collect();
            Some(format!(
                "Bad Request: Unsupported protocol version: {shown} (this server supports {})",
                served.join(", ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: &[ProtocolVersion] = &[ProtocolVersion::V2025_03_26, ProtocolVersion::V2025_11_25];

    #[test]
    fn the_header_must_name_the_sessions_version() {
        let refusal = |h, n| session_refusal(h, n, ALL);
        let v11 = Some(ProtocolVersion::V2025_11_25);
        assert_eq!(refusal(Some("2025-11-25"), v11), None);
        assert_eq!(refusal(None, v11), None, "absent: the session's version applies");
        assert_eq!(
            refusal(Some("2025-03-26"), v11).as_deref(),
            Some(
                "Bad Request: MCP-Protocol-Version 2025-03-26 does not match the protocol version this session \
                 negotiated, 2025-11-25"
            )
        );
        assert_eq!(
            refusal(Some("2099-01-01\u{1b}[2J"), v11).as_deref(),
            Some("Bad Request: Unsupported protocol version: 2099-01-01\\u{1b}[2J (this server supports 2025-03-26, 2025-11-25)")
        );
        // A known revision this server does not serve is left to the existing check.
        assert_eq!(refusal(Some("2025-06-18"), v11), None);
        assert!(is_unknown(Some("nope")) && !is_unknown(Some("2025-06-18")) && !is_unknown(None));
    }
}
