//! Errors of the MQTT engine, each saying who is at fault: the broker (bytes that break the
//! wire format, a valid packet at the wrong time, a refusal, a disconnect), the network
//! (no answer in time, the connection closed), the local configuration, or the caller.

/// Bytes that are not a valid MQTT packet: the sender is at fault and the stream cannot
/// be resynchronized (3.1.1 §4.8, 5.0 §4.13: close the connection).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// A Variable Byte Integer with a continuation bit on its fourth byte.
    #[error(
        "a variable byte integer runs past 4 bytes (3.1.1 §2.2.3, 5.0 §1.5.5: at most 268,435,455)"
    )]
    LengthOverflow,
    /// A Variable Byte Integer in more bytes than its value needs.
    #[error("a variable byte integer of {value} is not in the fewest bytes (5.0 §1.5.5)")]
    NonMinimalLength { value: u32 },
    /// Packet type 0 (and 15 in 3.1.1) is reserved.
    #[error("packet type {kind} is reserved in MQTT {version} (3.1.1 §2.2.1, 5.0 §2.1.2)")]
    ReservedType { kind: u8, version: &'static str },
    /// A packet larger than the receiver accepts (its Maximum Packet Size).
    #[error(
        "a {packet} packet of {size} bytes is over the {max}-byte limit (Maximum Packet Size, 5.0 §3.1.2.11.4)"
    )]
    TooLarge {
        packet: &'static str,
        size: u64,
        max: u32,
    },
    /// Anything else that breaks the packet's format: what, and the spec's section.
    #[error("malformed {packet}: {why} ({section})")]
    Malformed {
        packet: &'static str,
        why: String,
        section: &'static str,
    },
}

impl WireError {
    pub(crate) fn malformed(
        packet: &'static str,
        section: &'static str,
        why: impl Into<String>,
    ) -> Self {
        WireError::Malformed {
            packet,
            why: why.into(),
            section,
        }
    }
}

/// A packet the engine was asked to build that MQTT cannot carry (a string over 65,535
/// bytes, a packet over 268,435,455): the caller's fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot encode {packet}: {why}")]
pub struct EncodeError {
    pub packet: &'static str,
    pub why: String,
}

/// Why the client engine stopped or refused a command. After an error from
/// [`crate::Client::handle_input`], [`crate::Client::handle_timeout`] or
/// [`crate::Client::handle_eof`] the session is over: the engine is
/// [`crate::State::Closed`], has emitted [`crate::Event::Closed`] and (MQTT 5.0) queued a
/// DISCONNECT with the reason code that fits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MqttError {
    /// The broker sent bytes that are not MQTT.
    #[error("the broker sent a malformed packet: {0}")]
    Malformed(#[from] WireError),
    /// The broker sent a well-formed packet that the protocol does not allow here.
    #[error("the broker broke MQTT {version}: {why} ({section})")]
    Protocol {
        version: &'static str,
        why: String,
        section: &'static str,
    },
    /// CONNACK with a failure code.
    #[error("the broker refused the connection: {code:#04x} {name}{}", reason_suffix(.reason))]
    Refused {
        code: u8,
        name: &'static str,
        reason: Option<String>,
    },
    /// MQTT 5.0 DISCONNECT from the broker.
    #[error("the broker disconnected the session: {code:#04x} {name}{}", reason_suffix(.reason))]
    Disconnected {
        code: u8,
        name: &'static str,
        reason: Option<String>,
    },
    /// No CONNACK within [`crate::Config::connect_timeout_ns`].
    #[error("no CONNACK within {ms} ms of CONNECT (the broker or the path to it is not answering)")]
    ConnectTimeout { ms: u64 },
    /// No PINGRESP within [`crate::Config::pingresp_timeout_ns`] (3.1.1 §3.1.2.10, 5.0
    /// §3.1.2.10: the client should close the connection).
    #[error(
        "no PINGRESP within {ms} ms of PINGREQ (keep-alive: the broker or the path to it is not answering)"
    )]
    KeepAliveTimeout { ms: u64 },
    /// The connection ended while the session was open.
    #[error("the broker closed the connection {during}")]
    Eof { during: String },
    /// The configuration cannot produce a valid CONNECT.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The caller asked for something the state, the broker's limits or the spec forbid.
    #[error("not possible: {0}")]
    Usage(String),
    /// The session is over; the first error (or close) was reported before.
    #[error("the MQTT session is closed")]
    Closed,
}

fn reason_suffix(r: &Option<String>) -> String {
    match r {
        Some(r) => format!(" ({r})"),
        None => String::new(),
    }
}

impl MqttError {
    /// Whether the broker (or the network path to it) is at fault, rather than the local
    /// configuration or the caller.
    pub fn is_peer_fault(&self) -> bool {
        !matches!(
            self,
            MqttError::Config(_) | MqttError::Usage(_) | MqttError::Closed
        )
    }
}

impl From<EncodeError> for MqttError {
    fn from(e: EncodeError) -> Self {
        MqttError::Usage(e.to_string())
    }
}
