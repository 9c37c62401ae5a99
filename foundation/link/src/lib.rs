//! wirebench's link model: one direction of an emulated link as a pure, deterministic
//! queue in nanosecond virtual time, and the link spec users write (`2400bit/500ms`).
//!
//! No I/O, clock or thread lives here: time is an argument (`u64` nanoseconds) and
//! randomness comes from a seed. A TUN driver feeds it packets read from a network
//! namespace and writes them out when [`Link::dequeue_ready`] releases them, sleeping
//! until [`Link::next_wakeup`]; tests and the [`sim`] simulator drive the same code in
//! virtual time, so what a run measured can be checked against theory to the nanosecond.
//!
//! ```
//! use wirebench_link::{Link, LinkSpec};
//!
//! let params = LinkSpec::parse("2400bit/500ms")?.to_params();
//! let mut link = Link::new(params, 1);
//! // 300 bytes take exactly 1 s at 2400 bit/s, then 500 ms of propagation.
//! link.enqueue(vec![0u8; 300], 0).expect("an empty queue accepts it");
//! assert_eq!(link.next_wakeup(), Some(1_500_000_000));
//! assert!(link.dequeue_ready(1_499_999_999).is_none());
//! let released = link.dequeue_ready(1_500_000_000).expect("due now");
//! assert_eq!(released.due_ns, 1_500_000_000);
//! assert!(link.stats().is_conserved());
//! # Ok::<(), wirebench_link::SpecError>(())
//! ```
//!
//! # The model
//!
//! A packet of `b` bytes offered at time `a` goes through these stages:
//!
//! 0. **Outage.** If a scheduled outage has the link down at `a`, the packet is dropped
//!    ([`DropCause::Outage`]) before any other check, and draws no random numbers.
//! 1. **MTU.** If `b > mtu` it is dropped ([`DropCause::Mtu`]).
//! 2. **Random loss**, decided now from the seeded generator, as netem does at enqueue
//!    ([`DropCause::Loss`]). A lost packet takes neither queue space nor link time
//!    (unlike a real radio, where a corrupted frame did use airtime).
//! 3. **Drop-tail queue.** The queue holds the packets accepted whose serialization has
//!    not finished at `a` (the one being serialized included). If accepting the packet
//!    would make it hold more than `queue_bytes` bytes or `queue_packets` packets, the
//!    packet is dropped ([`DropCause::Queue`]); packets in propagation do not count.
//!    This is Linux's `bfifo`/`pfifo` rule, applied to the serializer only.
//! 4. **Serialization**, one packet at a time in arrival order:
//!    `departure = max(a, link_free) + b * 8 / rate`, and `link_free = departure`.
//!    `link_free` is kept exactly, as nanoseconds plus a remainder over `rate`, so
//!    rounding never accumulates: a million 1500-byte packets at 2400 bit/s leave at
//!    exactly 5,000,000 s. A departure is reported rounded up to the nanosecond (the
//!    last bit has left by then). With a [`Trace`], departures follow the trace's
//!    delivery opportunities instead (see [`trace`]). An unlimited rate departs at `a`.
//! 5. **Propagation**: `due = departure + delay + jitter`, the jitter drawn uniformly
//!    from `[0, jitter]` (so `delay` is a floor, see [`LinkParams::jitter_ns`]). Unless
//!    `reorder` is on, `due = max(due, previous packet's due)`, so jitter never
//!    reorders: it is a path whose delay varies, not packets overtaking.
//!
//! 6. **Outages in flight.** A packet accepted at `a` is in the link until `due`, both
//!    included. If an outage begins at `s` with `a < s <= due`, the packet is lost when
//!    the outage begins ([`DropCause::Outage`], counted at `s`): a broken link loses what
//!    is queued, being serialized or propagating. See below.
//!
//! [`Link::dequeue_ready`] releases packets whose `due <= now` in order of `due` (ties in
//! acceptance order), reporting `due` so a real-time driver can measure how late it was.
//! [`Stats`] counts every packet: `offered = delivered + dropped + held` always holds.
//!
//! # Outages
//!
//! [`LinkParams::outages`] schedules windows `[start, start + duration)` (and periodic
//! series of them, see [`Outage`]) in time from the link's origin
//! ([`Link::with_origin`]). While a window is open the link is down: every packet offered
//! is dropped. When a window opens, everything the link holds is lost at once: the
//! packets waiting in the queue, the one being serialized and those propagating. The
//! link comes back empty, its serializer free, and carries traffic as before; a trace
//! link takes the trace's next opportunity after the packet's arrival, as ever.
//!
//! Losing the queue too (not only what is "in the air") is a choice: it models the
//! whole link, modem buffer included, going away, and it keeps the model exact and
//! simple, since every departure and delivery time is still fixed when the packet is
//! accepted. Keeping queued packets across an outage would instead reschedule them
//! after it, so their times could not be known at acceptance.
//!
//! Because the schedule is fixed, whether an accepted packet will be lost is decided
//! when it is accepted (`a < s <= due`). Such a packet is never returned; it stays in
//! [`Stats::held`] until the outage begins and then moves to [`Stats::dropped_outage`],
//! counted by the first call to [`Link::enqueue`] or [`Link::dequeue_ready`] at or
//! after `s` ([`Link::next_event`] tells a driver when that is). Its buffer is released
//! at acceptance. It still took its place in the queue and drew its jitter, so the
//! packets around it see the same times as on a link without the outage, until it
//! begins.
//!
//! Time never goes backwards: an `enqueue` at an earlier time than one already seen is
//! taken to happen at the latest time seen.
//!
//! # Why exact
//!
//! Mahimahi (Netravali et al., "Mahimahi: Accurate Record-and-Replay for HTTP", USENIX
//! ATC 2015) runs its link on 1 ms ticks, which makes a 1 Gbit/s link's 12 µs
//! serialization time invisible and quantizes every delay. netem works in kernel time
//! but couples delay and rate in one qdisc whose `limit` counts packets in propagation.
//! Here every quantity is an integer nanosecond and the rate arithmetic carries its
//! remainder, so the model is exact and a long run does not drift; only the driver's
//! wake-up latency separates emulation from theory, and `due_ns` measures it.
//!
//! # Conventions borrowed
//!
//! * Loss at enqueue, loss before the queue check, Gilbert-Elliott as netem's `gemodel`
//!   (Linux `sch_netem.c`, `loss_gilb_ell`).
//! * Drop-tail queue; the default bound is netem's 1000 packets, where Mahimahi's
//!   default is unbounded (see [`spec`]).
//! * Trace format and opportunity semantics from Mahimahi's `mm-link`.
//!
//! What a message becomes on the wire, headers, segments and fragments included, is
//! [`Transport`]'s (TCP or UDP over IPv4).
//!
//! # Reproducibility
//!
//! The random generators are xoshiro256** seeded through SplitMix64, written out in this
//! crate and pinned by the published test vectors, so a recorded seed replays the same
//! losses and jitter in every version (see [`Link::try_new`] for the derivation).

mod link;
pub mod named;
pub mod outage;
pub mod paths;
mod rng;
pub mod sim;
pub mod spec;
pub mod trace;
pub mod transport;

pub use link::{
    Counter, DEFAULT_MTU, DEFAULT_QUEUE_PACKETS, DropCause, Link, LinkParams, Loss, ParamsError,
    Released, Stats, serialization_ns,
};
pub use named::{Direction, NAMED_LINKS, NamedLink, named_link};
pub use outage::Outage;
pub use paths::{PathRtts, PathsError, path_key};
pub use spec::{LinkSpec, SpecError};
pub use trace::{OPPORTUNITY_BYTES, Trace, TraceError};
pub use transport::Transport;

#[cfg(test)]
mod tests;
