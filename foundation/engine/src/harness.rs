//! Two engines against each other over the link model in virtual time (the netsim idea of
//! smoltcp): `a`'s bytes cross the `up` link to `b`, `b`'s cross `down` back. Nothing
//! here reads a clock, so every timing a test asserts is exact: a 2400 bit/s ping-pong's
//! round trip must equal two delays plus each frame serialized once each way.
//!
//! Time moves only when neither engine has anything to do: to the next packet the links
//! release or the next engine timer, whichever comes first. Engine errors fail the test
//! (this is a test harness: a panic names the side and the error).

use crate::Engine;
use std::fmt::Debug;
use wirebench_link::{Link, LinkParams};

/// Steps before [`Pair::run_until`] gives up: a script that never ends is a test bug.
const MAX_STEPS: usize = 10_000_000;

/// Two engines, `a` and `b`, and the two links between them.
pub struct Pair<A, B> {
    pub a: A,
    pub b: B,
    /// Virtual time (ns).
    pub now: u64,
    up: Link<Vec<u8>>,
    down: Link<Vec<u8>>,
    /// Largest chunk put on a link as one packet; `None`: each transmit is one packet.
    mss: Option<usize>,
    buf: Vec<u8>,
}

impl<A, B> Pair<A, B>
where
    A: Engine,
    B: Engine,
    A::Error: Debug,
    B::Error: Debug,
{
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

    /// Cuts transmits into packets of at most `mss` bytes (a TCP segment's payload).
    pub fn with_mss(mut self, mss: usize) -> Self {
        self.mss = Some(mss.max(1));
        self
    }

    /// Nothing in flight on either link.
    pub fn drained(&self) -> bool {
        self.up.next_wakeup().is_none() && self.down.next_wakeup().is_none()
    }

    /// Runs until `done(now, a, b)` is true with both links drained; returns the virtual
    /// time then. `done` is called whenever something may have changed: it may read
    /// events, act on either engine (send) and record times.
    pub fn run_until(&mut self, mut done: impl FnMut(u64, &mut A, &mut B) -> bool) -> u64 {
        for _ in 0..MAX_STEPS {
            let finished = done(self.now, &mut self.a, &mut self.b);
            if finished && self.drained() {
                return self.now;
            }
            if !self.step() {
                self.advance();
            }
        }
        panic!("no end after {MAX_STEPS} steps");
    }

    /// Everyone acts on what `now` brought; true if anything moved.
    fn step(&mut self) -> bool {
        let now = self.now;
        let mut acted = false;
        self.buf.clear();
        if self.a.poll_transmit(now, &mut self.buf) > 0 {
            enqueue(&mut self.up, &self.buf, self.mss, now);
            acted = true;
        }
        self.buf.clear();
        if self.b.poll_transmit(now, &mut self.buf) > 0 {
            enqueue(&mut self.down, &self.buf, self.mss, now);
            acted = true;
        }
        while let Some(r) = self.up.dequeue_ready(now) {
            self.b
                .handle_input(r.due_ns, &r.packet)
                .unwrap_or_else(|e| panic!("b failed at {now} ns: {e:?}"));
            acted = true;
        }
        while let Some(r) = self.down.dequeue_ready(now) {
            self.a
                .handle_input(r.due_ns, &r.packet)
                .unwrap_or_else(|e| panic!("a failed at {now} ns: {e:?}"));
            acted = true;
        }
        acted
    }

    fn next_time(&self) -> Option<u64> {
        [
            self.up.next_wakeup(),
            self.down.next_wakeup(),
            self.a.poll_timeout(),
            self.b.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Moves time to the next packet or timer and fires the timers due then.
    fn advance(&mut self) {
        let Some(t) = self.next_time() else {
            panic!(
                "stuck at {} ns: nothing in flight, no timer, and the script is not done",
                self.now
            );
        };
        self.now = self.now.max(t);
        let now = self.now;
        if self.a.poll_timeout().is_some_and(|t| t <= now) {
            self.a
                .handle_timeout(now)
                .unwrap_or_else(|e| panic!("a's timer failed at {now} ns: {e:?}"));
        }
        if self.b.poll_timeout().is_some_and(|t| t <= now) {
            self.b
                .handle_timeout(now)
                .unwrap_or_else(|e| panic!("b's timer failed at {now} ns: {e:?}"));
        }
    }
}

fn enqueue(link: &mut Link<Vec<u8>>, bytes: &[u8], mss: Option<usize>, now: u64) {
    for chunk in bytes.chunks(mss.unwrap_or(bytes.len()).max(1)) {
        link.enqueue(chunk.to_vec(), now)
            .unwrap_or_else(|cause| panic!("the test link dropped a packet: {cause:?}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
