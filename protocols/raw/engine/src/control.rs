//! The control channel: JSON objects, one per line, over TCP.
//!
//! As in Soap-Stone, the client drives the server: it asks for a data listener with the
//! behaviour a workload needs, runs the workload on the data connection, then asks for
//! the server's side of the result. Lines are bounded ([`MAX_LINE`]); anything that is not
//! a valid request gets an error reply and the connection is closed. The protocol is
//! described with examples in `docs/protocols/control.md`.

use serde::{Deserialize, Serialize};

pub const VERSION: u32 = 1;
/// Longest accepted control line, newline included.
pub const MAX_LINE: usize = 64 * 1024;

/// What the server does with the frames of a data connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Behaviour {
    /// Send every frame back, after `think_ns` (ping-pong, echo stream).
    Echo,
    /// Count and verify frames, report on request (one-way stream).
    Sink,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Open {
    pub protocol: String,
    pub behaviour: Behaviour,
    /// Largest payload the client will send; the server refuses more.
    pub max_payload: u32,
    /// Responder's wait before each echo (study S1's typing delay).
    #[serde(default)]
    pub think_ns: u64,
    /// Pattern seed for payload verification.
    pub seed: u64,
    /// Verify payload bytes on the server (sink); echo servers leave that to the client.
    #[serde(default = "yes")]
    pub verify: bool,
    /// TCP_NODELAY on the server's end of the data connection.
    #[serde(default = "yes")]
    pub nodelay: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Request {
    Hello {
        version: u32,
        client: String,
    },
    Open(Open),
    /// Wait (bounded by the server) for the session's data connection to end and return
    /// its counts.
    Result {
        session: u64,
    },
}

/// The server's account of a finished session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionReport {
    pub counts: wirebench_payload::tally::Counts,
    /// Frames' total bytes, headers included.
    pub bytes: u64,
    pub payload_bytes: u64,
    /// CLOCK_MONOTONIC of the first and last byte read (0 if none).
    pub first_rx_ns: u64,
    pub last_rx_ns: u64,
    /// Why the data connection ended early, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Every reply: `ok` and either `error` or the fields of the request's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reply {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// Server's CLOCK_MONOTONIC when it answered hello: lets the client tell whether the
    /// two share a clock (same kernel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<SessionReport>,
}

impl Reply {
    pub fn error(msg: impl Into<String>) -> Reply {
        Reply {
            ok: false,
            error: Some(msg.into()),
            ..Default::default()
        }
    }
    pub fn to_line(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec(self).unwrap_or_else(|_| b"{\"ok\":false}".to_vec());
        v.push(b'\n');
        v
    }
}

impl Request {
    pub fn to_line(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec(self).unwrap_or_default();
        v.push(b'\n');
        v
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    #[error("control line longer than {MAX_LINE} bytes")]
    TooLong,
    #[error("control line is not UTF-8")]
    NotUtf8,
}

/// Splits a byte stream into bounded lines.
#[derive(Debug, Default)]
pub struct LineBuffer {
    buf: Vec<u8>,
}

impl LineBuffer {
    pub fn push(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// The next complete line without its newline, `Ok(None)` if more input is needed.
    pub fn next_line(&mut self) -> Result<Option<String>, LineError> {
        match self.buf.iter().position(|b| *b == b'\n') {
            Some(i) if i < MAX_LINE => {
                let line: Vec<u8> = self.buf.drain(..=i).take(i).collect();
                String::from_utf8(line)
                    .map(Some)
                    .map_err(|_| LineError::NotUtf8)
            }
            Some(_) => Err(LineError::TooLong),
            None if self.buf.len() >= MAX_LINE => Err(LineError::TooLong),
            None => Ok(None),
        }
    }
}

/// Parses a request line; the error text is sent back to the client as is.
pub fn parse_request(line: &str) -> Result<Request, String> {
    serde_json::from_str(line.trim()).map_err(|e| format!("bad control request: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_wire_form_is_stable() {
        let r = Request::Open(Open {
            protocol: "raw".into(),
            behaviour: Behaviour::Echo,
            max_payload: 100,
            think_ns: 0,
            seed: 1,
            verify: false,
            nodelay: true,
        });
        let line = String::from_utf8(r.to_line()).unwrap();
        assert_eq!(
            line,
            "{\"op\":\"open\",\"protocol\":\"raw\",\"behaviour\":\"echo\",\"max_payload\":100,\"think_ns\":0,\"seed\":1,\"verify\":false,\"nodelay\":true}\n"
        );
        assert_eq!(parse_request(&line).unwrap(), r);
    }

    #[test]
    fn garbage_is_an_error_naming_the_problem() {
        assert!(
            parse_request("hello there")
                .unwrap_err()
                .contains("bad control request")
        );
        assert!(parse_request("{\"op\":\"format-disk\"}").is_err());
    }

    #[test]
    fn lines_are_bounded() {
        let mut lb = LineBuffer::default();
        lb.push(b"{\"op\":");
        assert_eq!(lb.next_line(), Ok(None));
        lb.push(b"1}\nrest");
        assert_eq!(lb.next_line(), Ok(Some("{\"op\":1}".into())));
        assert_eq!(lb.next_line(), Ok(None));
        let mut lb = LineBuffer::default();
        lb.push(&vec![b'x'; MAX_LINE]);
        assert_eq!(lb.next_line(), Err(LineError::TooLong));
        let mut lb = LineBuffer::default();
        lb.push(&[0xff, 0xfe, b'\n']);
        assert_eq!(lb.next_line(), Err(LineError::NotUtf8));
    }
}
