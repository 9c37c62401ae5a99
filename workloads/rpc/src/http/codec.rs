//! How a message travels in an HTTP request and its response: as the raw body
//! ([`Plain`], the `http` protocol) or wrapped (the `soap` plugin's envelopes). The HTTP
//! client and server are written once, against this trait.

use bytes::Bytes;

/// A request as the server reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// The message's sequence number, when the client sent one (wrk and h2load do not):
    /// only then is the payload verified against the pattern.
    pub seq: Option<u64>,
    pub payload: Bytes,
    /// Whether to return the payload (echo) or an empty reply (sink).
    pub echo: bool,
}

/// Why a request was refused: the HTTP status and a reason for the response body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub why: String,
}

impl Refusal {
    pub fn bad(why: impl Into<String>) -> Refusal {
        Refusal {
            status: 400,
            why: why.into(),
        }
    }
}

pub trait Codec: Send + Sync + 'static {
    /// Its name in errors: "HTTP", "SOAP".
    fn name(&self) -> &'static str;
    /// The request for message `seq`: path (with query), content type, body.
    fn request(&self, seq: u64, payload: Bytes, echo: bool) -> (String, &'static str, Bytes);
    /// The SOAPAction header a request carries (SOAP 1.1 section 6.1.1), if any.
    fn action(&self, _echo: bool) -> Option<&'static str> {
        None
    }
    /// Reads a request the server received.
    fn parse_request(&self, path: &str, body: Bytes) -> Result<Parsed, Refusal>;
    /// The response body to a request: the payload echoed, or nothing.
    fn response(&self, seq: Option<u64>, echoed: Option<Bytes>) -> (&'static str, Bytes);
    /// The response body to a refused request.
    fn refusal(&self, r: &Refusal) -> (&'static str, Bytes);
    /// The payload out of a response body (with its status).
    fn parse_response(&self, status: u16, body: Bytes) -> Result<Bytes, String>;
    /// The largest request or response body this codec produces for payloads of at most
    /// `max_payload` bytes; anything larger is refused unread.
    fn max_body(&self, max_payload: usize) -> usize;
}

/// The payload as the body, seq and direction in the path: `POST /echo?seq=7`,
/// `POST /sink?seq=7`. A path without `seq` is served unverified, so wrk and h2load can
/// post a fixed body to the same server.
#[derive(Debug, Clone, Copy, Default)]
pub struct Plain;

impl Codec for Plain {
    fn name(&self) -> &'static str {
        "HTTP"
    }

    fn request(&self, seq: u64, payload: Bytes, echo: bool) -> (String, &'static str, Bytes) {
        let op = if echo { "echo" } else { "sink" };
        (
            format!("/{op}?seq={seq}"),
            "application/octet-stream",
            payload,
        )
    }

    fn parse_request(&self, path: &str, body: Bytes) -> Result<Parsed, Refusal> {
        let (p, q) = path.split_once('?').unwrap_or((path, ""));
        let echo = match p {
            "/echo" | "/" => true,
            "/sink" => false,
            _ => {
                return Err(Refusal {
                    status: 404,
                    why: format!("no such path {p:?} (use /echo or /sink)"),
                });
            }
        };
        let mut seq = None;
        for kv in q.split('&').filter(|s| !s.is_empty()) {
            if let Some(v) = kv.strip_prefix("seq=") {
                seq = Some(
                    v.parse::<u64>()
                        .map_err(|_| Refusal::bad(format!("seq={v:?} is not a number")))?,
                );
            }
        }
        Ok(Parsed {
            seq,
            payload: body,
            echo,
        })
    }

    fn response(&self, _seq: Option<u64>, echoed: Option<Bytes>) -> (&'static str, Bytes) {
        ("application/octet-stream", echoed.unwrap_or_default())
    }

    fn refusal(&self, r: &Refusal) -> (&'static str, Bytes) {
        ("text/plain", Bytes::from(r.why.clone()))
    }

    fn parse_response(&self, status: u16, body: Bytes) -> Result<Bytes, String> {
        if status == 200 {
            Ok(body)
        } else {
            let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
            Err(format!("status {status}: {text}"))
        }
    }

    fn max_body(&self, max_payload: usize) -> usize {
        max_payload
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_paths() {
        let (path, _, body) = Plain.request(7, Bytes::from_static(b"abc"), false);
        assert_eq!(path, "/sink?seq=7");
        let p = Plain.parse_request(&path, body).unwrap();
        assert_eq!(
            (p.seq, p.echo, &p.payload[..]),
            (Some(7), false, &b"abc"[..])
        );
        assert_eq!(Plain.parse_request("/", Bytes::new()).unwrap().seq, None);
        assert_eq!(
            Plain.parse_request("/x", Bytes::new()).unwrap_err().status,
            404
        );
        assert_eq!(
            Plain
                .parse_request("/echo?seq=x", Bytes::new())
                .unwrap_err()
                .status,
            400
        );
    }
}
