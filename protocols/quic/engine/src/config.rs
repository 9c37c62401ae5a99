//! The transport knobs a case turns (RFC 9000 §18 transport parameters, RFC 9002's
//! recovery constants), checked before any endpoint is built so that a value that
//! cannot take is an error and not a silent default.

use quinn_proto::congestion::{BbrConfig, CubicConfig, NewRenoConfig};
use quinn_proto::{AckFrequencyConfig, IdleTimeout, TransportConfig, VarInt};
use std::sync::Arc;
use std::time::Duration;

/// The smallest datagram a QUIC path must carry (RFC 9000 §14): the client pads its
/// Initial datagrams to it, and no endpoint may assume less.
pub const MIN_DATAGRAM: u16 = 1200;

/// The largest UDP payload an IPv4 datagram can hold (65535 - 20 - 8).
pub const MAX_DATAGRAM: u16 = 65507;

/// kInitialRtt of RFC 9002 §6.2.2: the round trip assumed before one is measured.
pub const INITIAL_RTT: Duration = Duration::from_millis(333);

/// A congestion controller quinn-proto ships.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cc {
    /// RFC 9438's CUBIC, quinn's default.
    Cubic,
    /// RFC 9002 §7's NewReno, QUIC's reference controller.
    NewReno,
    /// BBR (v1, draft-cardwell-iccrg-bbr-congestion-control-00), marked experimental
    /// by quinn.
    Bbr,
}

impl Cc {
    pub const ALL: [Cc; 3] = [Cc::Cubic, Cc::NewReno, Cc::Bbr];

    pub fn from_word(word: &str) -> Option<Cc> {
        Cc::ALL.into_iter().find(|c| c.name() == word)
    }

    pub fn name(self) -> &'static str {
        match self {
            Cc::Cubic => "cubic",
            Cc::NewReno => "newreno",
            Cc::Bbr => "bbr",
        }
    }
}

/// What a case sets on both endpoints' transport.
#[derive(Debug, Clone, PartialEq)]
pub struct Transport {
    pub cc: Cc,
    /// RFC 9002 §6.2.2's initial RTT, which sets the first probe timeout.
    pub initial_rtt: Duration,
    /// The UDP payload every datagram is held to: quinn's initial and minimum MTU, with
    /// path MTU discovery off (the sockets do not set Don't Fragment, and a size the
    /// case asked for should be the size on the wire).
    pub max_datagram: u16,
    /// The idle timeout each endpoint advertises (RFC 9000 §10.1); `None`: none.
    pub idle_timeout: Option<Duration>,
    /// 0-RTT (RFC 9001 §4.6): a server accepts early data on a resumed connection, and a
    /// client holding a ticket from an earlier connection to the same server may send it.
    /// Resumption itself (RFC 8446 §2.2) needs no knob: a client endpoint keeps its
    /// tickets across its connections.
    pub zero_rtt: bool,
    /// Flow control (RFC 9000 §4): the window each endpoint grants a peer's stream
    /// (initial_max_stream_data_*, §18.2) and the most it sends unacknowledged; `None`:
    /// quinn's, 1.25 MB per stream (a download then moves at most that per round trip)
    /// and 10 MB in flight.
    pub window: Option<u64>,
    /// ACK frequency (draft-ietf-quic-ack-frequency-04, quinn-proto's): the ack-eliciting
    /// packets each endpoint asks its peer to receive before acknowledging (or its
    /// max_ack_delay to pass); `None`: not asked, RFC 9000 §13.2.2's every second one.
    pub ack_threshold: Option<u64>,
    /// A server validates each client's address with a Retry before its handshake
    /// (RFC 9000 §8.1.2): one round trip more, and the client's Initial then carries the
    /// token. A client ignores it (it follows any Retry it gets).
    pub retry: bool,
}

impl Default for Transport {
    fn default() -> Self {
        Transport {
            cc: Cc::Cubic,
            initial_rtt: INITIAL_RTT,
            max_datagram: MIN_DATAGRAM,
            idle_timeout: Some(Duration::from_secs(30)),
            zero_rtt: false,
            window: None,
            ack_threshold: None,
            retry: false,
        }
    }
}

/// A transport setting quinn-proto could not take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "a datagram of {0} bytes is outside QUIC's range: at least {MIN_DATAGRAM} (RFC 9000 §14) and at most {MAX_DATAGRAM}"
    )]
    Datagram(u64),
    #[error("an idle timeout of {0:?} does not fit QUIC's 62-bit milliseconds (RFC 9000 §18.2)")]
    IdleTimeout(Duration),
    #[error("an initial RTT of zero: RFC 9002 §6.2.2 needs a positive one")]
    InitialRtt,
    #[error(
        "a flow-control window of {0} bytes: give {MIN_WINDOW} to {MAX_WINDOW} (less than a datagram stalls every stream)"
    )]
    Window(u64),
    #[error("an ACK threshold of {0} packets: give 0 to {MAX_ACK_THRESHOLD}")]
    AckThreshold(u64),
}

/// The most ack-eliciting packets a case may ask a peer to take before acknowledging:
/// far beyond any congestion window of 1200-byte datagrams on the links emulated here.
pub const MAX_ACK_THRESHOLD: u64 = 10_000;

/// The flow-control windows a case may set: a datagram's payload at least, and 1 GiB
/// at most (what an endpoint may have to buffer per stream).
pub const MIN_WINDOW: u64 = 1200;
pub const MAX_WINDOW: u64 = 1 << 30;

impl Transport {
    /// Checks what [`Transport::config`] would refuse or silently change.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(MIN_DATAGRAM..=MAX_DATAGRAM).contains(&self.max_datagram) {
            return Err(ConfigError::Datagram(u64::from(self.max_datagram)));
        }
        if self.initial_rtt.is_zero() {
            return Err(ConfigError::InitialRtt);
        }
        if let Some(t) = self.idle_timeout {
            IdleTimeout::try_from(t).map_err(|_| ConfigError::IdleTimeout(t))?;
        }
        if let Some(w) = self.window
            && !(MIN_WINDOW..=MAX_WINDOW).contains(&w)
        {
            return Err(ConfigError::Window(w));
        }
        if let Some(n) = self.ack_threshold
            && n > MAX_ACK_THRESHOLD
        {
            return Err(ConfigError::AckThreshold(n));
        }
        Ok(())
    }

    /// quinn-proto's transport configuration for these settings.
    pub fn config(&self) -> Result<TransportConfig, ConfigError> {
        self.validate()?;
        let mut c = TransportConfig::default();
        c.initial_rtt(self.initial_rtt)
            .initial_mtu(self.max_datagram)
            .min_mtu(self.max_datagram)
            .mtu_discovery_config(None)
            .max_idle_timeout(
                self.idle_timeout
                    .map(IdleTimeout::try_from)
                    .transpose()
                    .map_err(|_| ConfigError::IdleTimeout(self.idle_timeout.unwrap_or_default()))?,
            )
            // A case opens one stream per message at most; the default 100 would make a
            // fast ping-pong wait for MAX_STREAMS credit (RFC 9000 §4.6) now and then.
            .max_concurrent_bidi_streams(VarInt::from_u32(1024));
        if let Some(w) = self.window {
            // The connection-wide receive window stays quinn's (unlimited): one stream's
            // is the bound a download meets.
            c.stream_receive_window(VarInt::from_u64(w).map_err(|_| ConfigError::Window(w))?)
                .send_window(w);
        }
        if let Some(n) = self.ack_threshold {
            let mut a = AckFrequencyConfig::default();
            a.ack_eliciting_threshold(
                VarInt::from_u64(n).map_err(|_| ConfigError::AckThreshold(n))?,
            );
            c.ack_frequency_config(Some(a));
        }
        match self.cc {
            Cc::Cubic => c.congestion_controller_factory(Arc::new(CubicConfig::default())),
            Cc::NewReno => c.congestion_controller_factory(Arc::new(NewRenoConfig::default())),
            Cc::Bbr => c.congestion_controller_factory(Arc::new(BbrConfig::default())),
        };
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_controller_has_a_word() {
        for c in Cc::ALL {
            assert_eq!(Cc::from_word(c.name()), Some(c));
        }
        assert_eq!(Cc::from_word("reno"), None);
    }

    #[test]
    fn a_datagram_below_the_minimum_is_refused() {
        let t = Transport {
            max_datagram: 1000,
            ..Transport::default()
        };
        assert_eq!(t.validate(), Err(ConfigError::Datagram(1000)));
        assert!(Transport::default().config().is_ok());
    }

    #[test]
    fn a_window_outside_its_range_is_refused() {
        let with = |w| Transport {
            window: Some(w),
            ..Transport::default()
        };
        assert_eq!(with(100).validate(), Err(ConfigError::Window(100)));
        assert_eq!(
            with(MAX_WINDOW + 1).config().err(),
            Some(ConfigError::Window(MAX_WINDOW + 1))
        );
        assert!(with(32 << 20).config().is_ok());
        let acks = |n| Transport {
            ack_threshold: Some(n),
            ..Transport::default()
        };
        assert_eq!(
            acks(MAX_ACK_THRESHOLD + 1).validate(),
            Err(ConfigError::AckThreshold(MAX_ACK_THRESHOLD + 1))
        );
        assert!(acks(10).config().is_ok());
    }
}
