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
//! - [`blocking`]: the one blocking driver (a socket, read-timeout ticks, the engine's
//!   timer served between reads), for the client drivers on the measurement path.
//! - [`harness`]: two engines against each other over [`wirebench_link::Link`] in virtual
//!   time, where a round trip can be checked against the link's arithmetic to the
//!   nanosecond.

pub mod blocking;
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
