//! Errors of the XMPP client engine. Each variant says who is at fault: the server (peer
//! data that breaks RFC 6120), the server's decision (authentication refused, stream
//! error), the local configuration, or the caller.

/// Why the engine stopped or refused a command. After any error from
/// [`crate::Client::handle_input`] the session is over: the engine is in
/// [`crate::State::Closed`] and has queued `</stream:stream>` where that still makes sense.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum XmppError {
    /// The server sent bytes that are not the XML RFC 6120 §11 allows.
    #[error("malformed XML from the server: {0}")]
    Malformed(String),
    /// The server sent an element larger than `ClientConfig::max_stanza`.
    #[error(
        "the server sent a stanza larger than this client's limit of {limit} bytes \
         (ClientConfig::max_stanza)"
    )]
    StanzaTooLarge { limit: usize },
    /// The server sent well-formed XML that breaks the protocol at this point.
    #[error("protocol violation by the server: {0}")]
    Protocol(String),
    /// The server closed the stream with `<stream:error>` (RFC 6120 §4.9).
    #[error("the server closed the stream with error <{condition}/>{}", fmt_text(.text))]
    Stream {
        condition: String,
        text: Option<String>,
    },
    /// Authentication failed: refused by the server (`<failure>`, RFC 6120 §6.5), or the
    /// server could not prove it knows the password (SCRAM server signature, RFC 5802 §3).
    #[error("authentication failed: {0}")]
    Auth(String),
    /// The server and this configuration have nothing in common (no shared SASL
    /// mechanism, TLS required by one side and not possible on the other, ...).
    #[error("stream negotiation failed: {0}")]
    Negotiation(String),
    /// TLS failed (certificate, handshake or record layer), as reported by rustls.
    #[error("TLS failed: {0}")]
    Tls(String),
    /// The caller asked for something the current state does not allow.
    #[error("not possible now: {0}")]
    Usage(String),
    /// The session is over; the first error (or close) was reported before.
    #[error("the XMPP session is closed")]
    Closed,
}

fn fmt_text(text: &Option<String>) -> String {
    match text {
        Some(t) => format!(": {t}"),
        None => String::new(),
    }
}
