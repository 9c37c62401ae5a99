//! The one shape of wirebench's sans-IO protocol engines, and what runs them.
//!
//! Every session engine (raw's data connection, the IRC, MQTT and XMPP clients, the XMPP
//! server session, x2x's link) implements [`Engine`], the shape of quinn-proto's
//! `Connection` and of smoltcp's sockets: bytes in with the time they were read
//! ([`Engine::handle_input`]), bytes out ([`Engine::poll_transmit`]), a timer
//! ([`Engine::poll_timeout`] / [`Engine::handle_timeout`]) and events
//! ([`Engine::poll_event`]). Times are CLOCK_MONOTONIC nanoseconds as the driver reads
//! them; engines only compare and subtract them, so virtual time works as well.
//!
//! # Datagrams
//!
//! An engine over UDP (QUIC, CoAP) needs what a byte stream does not have: the boundary
//! of each datagram and where it goes. [`DatagramEngine`] is the same shape with
//! quinn-proto's transmit (`Connection::poll_transmit(now, max_datagrams, buf) ->
//! Option<Transmit>`): the engine appends one or more datagrams to the buffer and says,
//! in a [`Transmit`], how many bytes, how long each datagram is (a GSO batch of equal
//! segments, Linux's UDP_SEGMENT, udp(7)), where they go and with which ECN codepoint
//! (RFC 3168); what comes in is one datagram at a time, with its source and ECN
//! ([`Received`]).
//!
//! Why a trait beside [`Engine`] and not a transmit type inside it: a byte stream has no
//! boundaries to keep, so every TCP engine would carry a `Transmit` whose fields are
//! always "no destination, no segments", and every stream driver would branch on them
//! per write. Two traits keep the stream engines and their drivers as they are, byte for
//! byte, while the drivers that differ by transport are exactly the ones that must:
//! [`blocking::Driver`] over a stream [`blocking::Io`], [`blocking::datagram::DatagramDriver`]
//! over a [`blocking::datagram::DatagramIo`] (its socket, [`blocking::datagram::Udp`], with GSO
//! and GRO where the kernel has them), and the harness, which takes either kind of side
//! ([`harness::Side`]): a stream's transmits cut into segments that may not be lost, a
//! datagram engine's ([`harness::Datagrams`]) one packet per datagram, lost whole.
//!
//! - [`blocking`]: the one blocking driver (a socket, read-timeout ticks, the engine's
//!   timer served between reads), for the client drivers on the measurement path, and
//!   [`blocking::datagram`], its twin for datagram engines.
//! - [`edge`]: the one non-blocking driver, an engine's socket in an edge-triggered
//!   readiness loop that holds many sessions per thread (the load generators, the XMPP
//!   server's workers).
//! - [`harness`]: two engines against each other over [`wirebench_link::Link`] in virtual
//!   time, where a round trip can be checked against the link's arithmetic to the
//!   nanosecond.

use std::net::SocketAddr;

pub mod blocking;
pub mod edge;
pub mod harness;

/// A sans-IO session engine: no sockets, clocks or threads.
pub trait Engine {
    /// What the engine tells its driver (a message arrived, the session is up, ...).
    type Event;
    /// A broken session: the peer broke the protocol, or the session failed.
    type Error;

    /// Bytes read from the connection at `now`.
    fn handle_input(&mut self, now: u64, data: &[u8]) -> Result<(), Self::Error>;

    /// The peer closed its side; an error if that cut the session short.
    fn handle_eof(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }

    /// Appends what to write at `now` to `buf` and returns how many bytes it appended
    /// (0: nothing to send). The driver writes all of them.
    fn poll_transmit(&mut self, now: u64, buf: &mut Vec<u8>) -> usize;

    /// When [`Engine::handle_timeout`] wants to be called, if ever.
    fn poll_timeout(&self) -> Option<u64> {
        None
    }

    /// The time of [`Engine::poll_timeout`] has come (`now` is at or after it).
    fn handle_timeout(&mut self, _now: u64) -> Result<(), Self::Error> {
        Ok(())
    }

    /// The next event, if any.
    fn poll_event(&mut self) -> Option<Self::Event>;
}

/// A borrowed engine is an engine: a test or driver can run one it keeps owning.
impl<E: Engine + ?Sized> Engine for &mut E {
    type Event = E::Event;
    type Error = E::Error;

    fn handle_input(&mut self, now: u64, data: &[u8]) -> Result<(), Self::Error> {
        (**self).handle_input(now, data)
    }

    fn handle_eof(&mut self) -> Result<(), Self::Error> {
        (**self).handle_eof()
    }

    fn poll_transmit(&mut self, now: u64, buf: &mut Vec<u8>) -> usize {
        (**self).poll_transmit(now, buf)
    }

    fn poll_timeout(&self) -> Option<u64> {
        (**self).poll_timeout()
    }

    fn handle_timeout(&mut self, now: u64) -> Result<(), Self::Error> {
        (**self).handle_timeout(now)
    }

    fn poll_event(&mut self) -> Option<Self::Event> {
        (**self).poll_event()
    }
}

/// An ECN codepoint of the IP header's two ECN bits (RFC 3168 §5), as quinn-proto's
/// `EcnCodepoint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Ecn {
    /// ECT(0), `0b10`.
    Ect0 = 0b10,
    /// ECT(1), `0b01`.
    Ect1 = 0b01,
    /// Congestion Experienced, `0b11`.
    Ce = 0b11,
}

impl Ecn {
    /// The codepoint of a TOS or traffic-class byte's low two bits (`None`: Not-ECT).
    pub fn from_bits(tos: u8) -> Option<Ecn> {
        match tos & 0b11 {
            0b10 => Some(Ecn::Ect0),
            0b01 => Some(Ecn::Ect1),
            0b11 => Some(Ecn::Ce),
            _ => None,
        }
    }
}

/// What a [`DatagramEngine`] appended to its buffer: quinn-proto's `Transmit`, without
/// the source address (wirebench's hosts have one each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    /// Where the datagrams go; `None`: to the connected peer (a connected socket, the
    /// harness's other side).
    pub destination: Option<SocketAddr>,
    /// The ECN codepoint to send them with; `None`: Not-ECT.
    pub ecn: Option<Ecn>,
    /// Bytes appended to the buffer, all datagrams together.
    pub size: usize,
    /// `Some(s)`: the bytes are datagrams of `s` bytes each, the last one possibly
    /// shorter (one `sendmsg` with UDP_SEGMENT where the kernel has it); `None`: one
    /// datagram of `size` bytes.
    pub segment_size: Option<usize>,
}

impl Transmit {
    /// One datagram of `size` bytes to the connected peer.
    pub fn single(size: usize) -> Transmit {
        Transmit {
            destination: None,
            ecn: None,
            size,
            segment_size: None,
        }
    }

    /// The datagrams' length each (the last one may be shorter).
    pub fn segment(&self) -> usize {
        self.segment_size.unwrap_or(self.size).max(1)
    }

    /// How many datagrams the transmit holds.
    pub fn datagrams(&self) -> usize {
        self.size.div_ceil(self.segment()).max(1)
    }

    /// The datagrams of `bytes`, the transmit's `size` bytes, one slice each. A `size`
    /// of 0 is one empty datagram (UDP carries those; "nothing" is `None`).
    pub fn split<'b>(&self, bytes: &'b [u8]) -> impl Iterator<Item = &'b [u8]> + use<'b> {
        let bytes = &bytes[..self.size];
        let empty = bytes.is_empty().then_some(bytes);
        bytes.chunks(self.segment()).chain(empty)
    }
}

/// One datagram as it arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received<'a> {
    /// Who sent it; `None` where the driver has one peer only (the harness).
    pub from: Option<SocketAddr>,
    /// Its ECN codepoint, where the driver could read it.
    pub ecn: Option<Ecn>,
    pub data: &'a [u8],
}

/// A sans-IO engine over datagrams: [`Engine`]'s shape with boundaries and destinations
/// (see the crate docs for why it is a trait of its own). There is no end of input: a
/// datagram transport has no close, the protocol says when it is done.
pub trait DatagramEngine {
    /// What the engine tells its driver.
    type Event;
    /// The peer broke the protocol, or the exchange failed.
    type Error;

    /// One datagram received at `now`.
    fn handle_datagram(&mut self, now: u64, datagram: Received<'_>) -> Result<(), Self::Error>;

    /// Appends the next datagrams to send at `now` to `buf`, at most `max_datagrams` of
    /// them (more than 1 only as equal segments, [`Transmit::segment_size`]), and says
    /// what they are; `None`: nothing to send. The driver sends all of them.
    fn poll_transmit(
        &mut self,
        now: u64,
        max_datagrams: usize,
        buf: &mut Vec<u8>,
    ) -> Option<Transmit>;

    /// When [`DatagramEngine::handle_timeout`] wants to be called, if ever.
    fn poll_timeout(&self) -> Option<u64> {
        None
    }

    /// The time of [`DatagramEngine::poll_timeout`] has come.
    fn handle_timeout(&mut self, _now: u64) -> Result<(), Self::Error> {
        Ok(())
    }

    /// The next event, if any.
    fn poll_event(&mut self) -> Option<Self::Event>;
}

/// A borrowed datagram engine is one too, as for [`Engine`].
impl<E: DatagramEngine + ?Sized> DatagramEngine for &mut E {
    type Event = E::Event;
    type Error = E::Error;

    fn handle_datagram(&mut self, now: u64, datagram: Received<'_>) -> Result<(), Self::Error> {
        (**self).handle_datagram(now, datagram)
    }

    fn poll_transmit(
        &mut self,
        now: u64,
        max_datagrams: usize,
        buf: &mut Vec<u8>,
    ) -> Option<Transmit> {
        (**self).poll_transmit(now, max_datagrams, buf)
    }

    fn poll_timeout(&self) -> Option<u64> {
        (**self).poll_timeout()
    }

    fn handle_timeout(&mut self, now: u64) -> Result<(), Self::Error> {
        (**self).handle_timeout(now)
    }

    fn poll_event(&mut self) -> Option<Self::Event> {
        (**self).poll_event()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transmit_splits_into_its_segments() {
        let bytes: Vec<u8> = (0..25).collect();
        let t = Transmit {
            segment_size: Some(10),
            ..Transmit::single(25)
        };
        let parts: Vec<&[u8]> = t.split(&bytes).collect();
        assert_eq!(t.datagrams(), 3);
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [10, 10, 5]
        );
        assert_eq!(parts[2], &bytes[20..]);
        let one = Transmit::single(25);
        assert_eq!((one.datagrams(), one.split(&bytes).count()), (1, 1));
        let empty = Transmit::single(0);
        assert_eq!(empty.datagrams(), 1);
        assert_eq!(empty.split(&bytes).collect::<Vec<_>>(), [&[] as &[u8]]);
    }

    #[test]
    fn ecn_bits_round_trip() {
        for e in [Ecn::Ect0, Ecn::Ect1, Ecn::Ce] {
            assert_eq!(Ecn::from_bits(0xb8 | e as u8), Some(e));
        }
        assert_eq!(Ecn::from_bits(0xb8), None);
    }
}
