//! Two engines against each other over the link model in virtual time (the netsim idea of
//! smoltcp): `a`'s packets cross the `up` link to `b`, `b`'s cross `down` back. Nothing
//! here reads a clock, so every timing a test asserts is exact: a 2400 bit/s ping-pong's
//! round trip must equal two delays plus each frame serialized once each way.
//!
//! A side is either kind of engine ([`Side`]). A byte-stream [`Engine`] stands for a TCP
//! connection: its transmits may be cut into segments ([`Pair::with_mss`]) and none may
//! be lost (the harness has no retransmission, so a drop fails the test). A
//! [`DatagramEngine`], wrapped in [`Datagrams`], stands for a UDP socket: each datagram
//! of a transmit is one packet, never cut, and a packet the link drops (random loss, the
//! MTU, a full queue, an outage) is lost whole, as UDP loses it; [`Pair::up_stats`] and
//! [`Pair::down_stats`] count the losses.
//!
//! Time moves only when neither engine has anything to do: to the next packet the links
//! release or the next engine timer, whichever comes first. Engine errors fail the test
//! (this is a test harness: a panic names the side and the error).

use crate::{DatagramEngine, Engine, Received};
use std::fmt::Debug;
use std::ops::{Deref, DerefMut};
use wirebench_link::{Link, LinkParams, Stats};

/// Steps before [`Pair::run_until`] gives up: a script that never ends is a test bug.
const MAX_STEPS: usize = 10_000_000;

/// Datagrams one transmit of a [`Datagrams`] side may hold: a GSO batch's limit
/// (UDP_MAX_SEGMENTS in Linux's `include/linux/udp.h`).
const MAX_DATAGRAMS: usize = 64;

/// One side of a [`Pair`]: how its engine's output becomes packets on a link and packets
/// become its input. Implemented for every byte-stream [`Engine`] and for a
/// [`DatagramEngine`] in [`Datagrams`].
pub trait Side {
    type Error: Debug;

    /// Offers what the engine transmits at `now` to `link` (`mss`: [`Pair::with_mss`]);
    /// true if it transmitted anything.
    fn transmit(
        &mut self,
        now: u64,
        buf: &mut Vec<u8>,
        link: &mut Link<Vec<u8>>,
        mss: Option<usize>,
    ) -> bool;

    /// A packet the link delivered at `at`.
    fn deliver(&mut self, at: u64, packet: &[u8]) -> Result<(), Self::Error>;

    fn timer(&self) -> Option<u64>;

    fn fire(&mut self, now: u64) -> Result<(), Self::Error>;
}

impl<E: Engine> Side for E
where
    E::Error: Debug,
{
    type Error = E::Error;

    fn transmit(
        &mut self,
        now: u64,
        buf: &mut Vec<u8>,
        link: &mut Link<Vec<u8>>,
        mss: Option<usize>,
    ) -> bool {
        buf.clear();
        if self.poll_transmit(now, buf) == 0 {
            return false;
        }
        for chunk in buf.chunks(mss.unwrap_or(buf.len()).max(1)) {
            link.enqueue(chunk.to_vec(), now)
                .unwrap_or_else(|cause| panic!("the test link dropped a packet: {cause:?}"));
        }
        true
    }

    fn deliver(&mut self, at: u64, packet: &[u8]) -> Result<(), E::Error> {
        self.handle_input(at, packet)
    }

    fn timer(&self) -> Option<u64> {
        self.poll_timeout()
    }

    fn fire(&mut self, now: u64) -> Result<(), E::Error> {
        self.handle_timeout(now)
    }
}

/// A [`DatagramEngine`] as a side of a [`Pair`]: one packet per datagram, lost whole.
/// It derefs to the engine, so a script calls the engine's methods on it directly.
#[derive(Debug)]
pub struct Datagrams<E>(pub E);

impl<E> Deref for Datagrams<E> {
    type Target = E;
    fn deref(&self) -> &E {
        &self.0
    }
}

impl<E> DerefMut for Datagrams<E> {
    fn deref_mut(&mut self) -> &mut E {
        &mut self.0
    }
}

impl<E: DatagramEngine> Side for Datagrams<E>
where
    E::Error: Debug,
{
    type Error = E::Error;

    /// Every datagram is offered, even after the link dropped one: UDP does not stop.
    /// Destinations are ignored: the pair has two peers only.
    fn transmit(
        &mut self,
        now: u64,
        buf: &mut Vec<u8>,
        link: &mut Link<Vec<u8>>,
        _mss: Option<usize>,
    ) -> bool {
        buf.clear();
        let Some(t) = self.0.poll_transmit(now, MAX_DATAGRAMS, buf) else {
            return false;
        };
        for datagram in t.split(buf) {
            let _lost = link.enqueue(datagram.to_vec(), now);
        }
        true
    }

    fn deliver(&mut self, at: u64, packet: &[u8]) -> Result<(), E::Error> {
        let datagram = Received {
            from: None,
            ecn: None,
            data: packet,
        };
        self.0.handle_datagram(at, datagram)
    }

    fn timer(&self) -> Option<u64> {
        self.0.poll_timeout()
    }

    fn fire(&mut self, now: u64) -> Result<(), E::Error> {
        self.0.handle_timeout(now)
    }
}

/// Two engines, `a` and `b`, and the two links between them.
pub struct Pair<A, B> {
    pub a: A,
    pub b: B,
    /// Virtual time (ns).
    pub now: u64,
    up: Link<Vec<u8>>,
    down: Link<Vec<u8>>,
    /// Largest chunk of a stream put on a link as one packet; `None`: each transmit is
    /// one packet.
    mss: Option<usize>,
    buf: Vec<u8>,
}

impl<A: Side, B: Side> Pair<A, B> {
    /// `a` sends over `up` (link seed 1), `b` over `down` (seed 2), from time 0.
    pub fn new(a: A, b: B, up: LinkParams, down: LinkParams) -> Self {
        Pair {
            a,
            b,
            now: 0,
            up: Link::try_new(up, 1).expect("valid uplink parameters"),
            down: Link::try_new(down, 2).expect("valid downlink parameters"),
            mss: None,
            buf: Vec::new(),
        }
    }

    /// Cuts a stream's transmits into packets of at most `mss` bytes (a TCP segment's
    /// payload). Datagrams are never cut.
    pub fn with_mss(mut self, mss: usize) -> Self {
        self.mss = Some(mss.max(1));
        self
    }

    /// Nothing in flight on either link.
    pub fn drained(&self) -> bool {
        self.up.next_wakeup().is_none() && self.down.next_wakeup().is_none()
    }

    /// What the link from `a` to `b` carried and dropped.
    pub fn up_stats(&self) -> &Stats {
        self.up.stats()
    }

    /// What the link from `b` to `a` carried and dropped.
    pub fn down_stats(&self) -> &Stats {
        self.down.stats()
    }

    /// Runs until `done(now, a, b)` is true with both links drained; returns the virtual
    /// time then. `done` is called whenever something may have changed: it may read
    /// events, act on either engine (send) and record times. A failure panics, naming it:
    /// this is the tests' form ([`Pair::try_run_until`] is the one that returns it).
    pub fn run_until(&mut self, mut done: impl FnMut(u64, &mut A, &mut B) -> bool) -> u64 {
        self.try_run_until(u64::MAX, true, &mut done)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// As [`Pair::run_until`], but a failure is returned, time stops at `deadline_ns`, and
    /// with `drain` false it ends as soon as `done` is true, whatever is still in flight:
    /// for a model that runs real engines over a link (an estimate), where a peer's error or
    /// a connection that never finishes must not end the process.
    pub fn try_run_until(
        &mut self,
        deadline_ns: u64,
        drain: bool,
        mut done: impl FnMut(u64, &mut A, &mut B) -> bool,
    ) -> Result<u64, Stopped> {
        for _ in 0..MAX_STEPS {
            let finished = done(self.now, &mut self.a, &mut self.b);
            if finished && (!drain || self.drained()) {
                return Ok(self.now);
            }
            if !self.step()? {
                self.advance()?;
            }
            if self.now > deadline_ns {
                return Err(Stopped::Deadline(deadline_ns));
            }
        }
        Err(Stopped::Steps)
    }

    /// Everyone acts on what `now` brought; true if anything moved.
    fn step(&mut self) -> Result<bool, Stopped> {
        let now = self.now;
        let mut acted = self.a.transmit(now, &mut self.buf, &mut self.up, self.mss);
        acted |= self
            .b
            .transmit(now, &mut self.buf, &mut self.down, self.mss);
        while let Some(r) = self.up.dequeue_ready(now) {
            self.b
                .deliver(r.due_ns, &r.packet)
                .map_err(|e| Stopped::failed("b", now, e))?;
            acted = true;
        }
        while let Some(r) = self.down.dequeue_ready(now) {
            self.a
                .deliver(r.due_ns, &r.packet)
                .map_err(|e| Stopped::failed("a", now, e))?;
            acted = true;
        }
        Ok(acted)
    }

    fn next_time(&self) -> Option<u64> {
        [
            self.up.next_wakeup(),
            self.down.next_wakeup(),
            self.a.timer(),
            self.b.timer(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Moves time to the next packet or timer and fires the timers due then.
    fn advance(&mut self) -> Result<(), Stopped> {
        let t = self.next_time().ok_or(Stopped::Stuck(self.now))?;
        self.now = self.now.max(t);
        let now = self.now;
        if self.a.timer().is_some_and(|t| t <= now) {
            self.a
                .fire(now)
                .map_err(|e| Stopped::failed("a's timer", now, e))?;
        }
        if self.b.timer().is_some_and(|t| t <= now) {
            self.b
                .fire(now)
                .map_err(|e| Stopped::failed("b's timer", now, e))?;
        }
        Ok(())
    }
}

/// Why [`Pair::try_run_until`] stopped before `done`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Stopped {
    #[error("not done by {0} ns of virtual time")]
    Deadline(u64),
    #[error("no end after {MAX_STEPS} steps")]
    Steps,
    #[error("stuck at {0} ns: nothing in flight, no timer, and the script is not done")]
    Stuck(u64),
    /// A side's engine failed: which, when, and its error.
    #[error("{side} failed at {at_ns} ns: {error}")]
    Failed {
        side: &'static str,
        at_ns: u64,
        error: String,
    },
}

impl Stopped {
    fn failed(side: &'static str, at_ns: u64, e: impl Debug) -> Stopped {
        Stopped::Failed {
            side,
            at_ns,
            error: format!("{e:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Transmit;
    use std::collections::VecDeque;
    use wirebench_link::serialization_ns;

    /// Echoes every byte back; sends `ping` once at start.
    struct Echo {
        greet: Option<Vec<u8>>,
        out: Vec<u8>,
        got: Vec<(u64, Vec<u8>)>,
    }

    impl Engine for Echo {
        type Event = (u64, Vec<u8>);
        type Error = std::convert::Infallible;
        fn handle_input(&mut self, now: u64, data: &[u8]) -> Result<(), Self::Error> {
            self.out.extend_from_slice(data);
            self.got.push((now, data.to_vec()));
            Ok(())
        }
        fn poll_transmit(&mut self, _now: u64, buf: &mut Vec<u8>) -> usize {
            let mut n = 0;
            if let Some(g) = self.greet.take() {
                n += g.len();
                buf.extend(g);
            }
            n += self.out.len();
            buf.append(&mut self.out);
            n
        }
        fn poll_event(&mut self) -> Option<Self::Event> {
            if self.got.is_empty() {
                None
            } else {
                Some(self.got.remove(0))
            }
        }
    }

    fn echo(greet: Option<&[u8]>) -> Echo {
        Echo {
            greet: greet.map(<[u8]>::to_vec),
            out: Vec::new(),
            got: Vec::new(),
        }
    }

    #[test]
    fn a_round_trip_is_the_link_arithmetic() {
        let link = LinkParams {
            rate_bps: Some(2400),
            delay_ns: 500_000_000,
            queue_packets: None,
            ..Default::default()
        };
        let mut p = Pair::new(echo(Some(b"hello")), echo(None), link.clone(), link);
        let mut back = None;
        p.run_until(|now, a, _| {
            if a.poll_event().is_some() {
                back = Some(now);
            }
            back.is_some()
        });
        assert_eq!(
            back,
            Some(2 * 500_000_000 + 2 * serialization_ns(5, 2400)),
            "two delays and five bytes serialized each way"
        );
    }

    /// Sends `out` (equal lengths go out as one GSO batch) and records what it receives.
    #[derive(Default)]
    struct Dgram {
        out: VecDeque<Vec<u8>>,
        got: Vec<(u64, Vec<u8>)>,
    }

    impl DatagramEngine for Dgram {
        type Event = (u64, Vec<u8>);
        type Error = std::convert::Infallible;
        fn handle_datagram(&mut self, now: u64, d: Received<'_>) -> Result<(), Self::Error> {
            self.got.push((now, d.data.to_vec()));
            Ok(())
        }
        fn poll_transmit(&mut self, _now: u64, max: usize, buf: &mut Vec<u8>) -> Option<Transmit> {
            let first = self.out.pop_front()?;
            let segment = first.len();
            buf.extend_from_slice(&first);
            let mut n = 1;
            while n < max && self.out.front().is_some_and(|d| d.len() <= segment) {
                let d = self.out.pop_front().unwrap();
                buf.extend_from_slice(&d);
                n += 1;
                if d.len() < segment {
                    break;
                }
            }
            Some(Transmit {
                segment_size: (n > 1).then_some(segment),
                ..Transmit::single(buf.len())
            })
        }
        fn poll_event(&mut self) -> Option<Self::Event> {
            (!self.got.is_empty()).then(|| self.got.remove(0))
        }
    }

    #[test]
    fn datagrams_are_lost_whole_and_keep_their_boundaries() {
        // Lengths 1..=40 alternate so that batches and single datagrams both occur;
        // each datagram is its index repeated, so a piece of one is recognisable.
        let sent: Vec<Vec<u8>> = (0..200u8)
            .map(|i| vec![i; 1 + (i as usize * 7) % 40])
            .collect();
        let lossy = LinkParams {
            loss: wirebench_link::Loss::Bernoulli { p: 0.2 },
            delay_ns: 10_000_000,
            ..Default::default()
        };
        let a = Dgram {
            out: sent.iter().cloned().collect(),
            ..Default::default()
        };
        let mut p = Pair::new(
            Datagrams(a),
            Datagrams(Dgram::default()),
            lossy,
            LinkParams::default(),
        )
        // A stream would be cut into 8-byte segments; datagrams must not be.
        .with_mss(8);
        p.run_until(|_, a, _| a.out.is_empty());
        let got: Vec<Vec<u8>> = p.b.got.iter().map(|(_, d)| d.clone()).collect();
        let lost = p.up_stats().dropped_loss.packets;
        assert!(
            lost > 0 && !got.is_empty(),
            "the seed loses some and delivers some"
        );
        assert_eq!(
            got.len() as u64 + lost,
            sent.len() as u64,
            "every datagram arrives or is lost"
        );
        assert_eq!(p.up_stats().delivered.packets, got.len() as u64);
        let mut last = None;
        for d in &got {
            let i = d[0];
            assert_eq!(d, &sent[i as usize], "datagram {i} arrived whole");
            assert!(last < Some(i), "in order, each once");
            last = Some(i);
        }
    }

    #[test]
    fn a_gso_batch_is_one_packet_per_segment() {
        let link = LinkParams {
            rate_bps: Some(2400),
            delay_ns: 500_000_000,
            ..Default::default()
        };
        let a = Dgram {
            out: [vec![1; 10], vec![2; 10], vec![3; 10], vec![4; 4]].into(),
            ..Default::default()
        };
        let mut p = Pair::new(
            Datagrams(a),
            Datagrams(Dgram::default()),
            link.clone(),
            link,
        );
        p.run_until(|_, _, b| b.got.len() == 4);
        // The serializer runs back to back from time 0: segment k is out after the
        // first k segments' bytes.
        let out = |bytes| 500_000_000 + serialization_ns(bytes, 2400);
        let times: Vec<u64> = p.b.got.iter().map(|(t, _)| *t).collect();
        assert_eq!(
            times,
            [out(10), out(20), out(30), out(34)],
            "each segment serialized as a packet of its own"
        );
        let lens: Vec<usize> = p.b.got.iter().map(|(_, d)| d.len()).collect();
        assert_eq!(lens, [10, 10, 10, 4]);
        assert_eq!(p.up_stats().delivered.packets, 4);
    }

    #[test]
    fn a_stream_may_not_lose_a_segment() {
        let r = std::panic::catch_unwind(|| {
            let lossy = LinkParams {
                loss: wirebench_link::Loss::Bernoulli { p: 1.0 },
                ..Default::default()
            };
            let mut p = Pair::new(echo(Some(b"hi")), echo(None), lossy, LinkParams::default());
            p.run_until(|_, _, b| !b.got.is_empty());
        });
        assert!(
            r.is_err(),
            "a lost segment fails the test: the pair has no retransmission"
        );
    }

    #[test]
    fn a_stuck_script_panics_instead_of_spinning() {
        let r = std::panic::catch_unwind(|| {
            let mut p = Pair::new(
                echo(None),
                echo(None),
                LinkParams::default(),
                LinkParams::default(),
            );
            p.run_until(|_, _, _| false);
        });
        assert!(r.is_err());
    }
}
