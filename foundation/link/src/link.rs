//! The link: one direction of an emulated path. See the crate docs for the model.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

use crate::outage::{self, Outage};
use crate::paths::PathRtts;
use crate::rng::Xoshiro256;
use crate::trace::{OPPORTUNITY_BYTES, Opportunity, Trace};

const NS_PER_S: u128 = 1_000_000_000;

/// netem's default `limit`: how many packets may wait for the serializer when the user
/// sets no bound. It bounds memory (at most this many MTU-sized packets) while being far
/// more than one bandwidth-delay product of the slow links wirebench studies.
pub const DEFAULT_QUEUE_PACKETS: usize = 1000;

/// Ethernet's MTU, the default largest packet.
pub const DEFAULT_MTU: u32 = 1500;

/// The parameters of one direction of a link.
///
/// `Default` is an ideal link (unlimited rate, no delay, no loss) with a
/// [`DEFAULT_QUEUE_PACKETS`]-packet queue, no byte bound and a [`DEFAULT_MTU`] MTU; the
/// same defaults as an empty [`LinkSpec`](crate::LinkSpec).
#[derive(Debug, Clone, PartialEq)]
pub struct LinkParams {
    /// Serialization rate in bits per second; `None` is unlimited (packets are
    /// serialized instantly). Ignored when `trace` is set.
    pub rate_bps: Option<u64>,
    /// One-way propagation delay added after serialization.
    pub delay_ns: u64,
    /// Each packet's extra delay is drawn uniformly from `[0, jitter_ns]`, both ends
    /// included, so `delay_ns` is the minimum and `delay_ns + jitter_ns / 2` the mean.
    /// (netem draws from `delay ± jitter`; its `delay 100ms 10ms` is `delay_ns` 90 ms
    /// with `jitter_ns` 20 ms here.) A floor keeps the propagation delay physical: no
    /// packet arrives before light could have carried it.
    pub jitter_ns: u64,
    /// Whether jitter may reorder packets. When false, a packet is never delivered
    /// before the one accepted ahead of it: its delivery time is
    /// `max(own, previous delivery)`, as on a single path whose delay varies.
    pub reorder: bool,
    /// Random loss, decided when the packet is offered.
    pub loss: Loss,
    /// Drop-tail bound on the bytes accepted and not yet serialized (including the
    /// packet being serialized); `None` is unbounded.
    pub queue_bytes: Option<u64>,
    /// Drop-tail bound on the number of such packets; `None` is unbounded.
    pub queue_packets: Option<usize>,
    /// Packets longer than this many bytes are dropped with [`DropCause::Mtu`].
    pub mtu: u32,
    /// A Mahimahi delivery trace; when set it replaces `rate_bps`.
    pub trace: Option<Arc<Trace>>,
    /// Scheduled outages, in time from the link's origin ([`Link::with_origin`]).
    pub outages: Vec<Outage>,
    /// Per-flow path round trips: a packet offered with [`Link::enqueue_on_path`] is
    /// held half its flow's round trip on top of `delay_ns` (see [`crate::paths`]).
    pub paths: Option<Arc<PathRtts>>,
}

impl Default for LinkParams {
    fn default() -> Self {
        LinkParams {
            rate_bps: None,
            delay_ns: 0,
            jitter_ns: 0,
            reorder: false,
            loss: Loss::None,
            queue_bytes: None,
            queue_packets: Some(DEFAULT_QUEUE_PACKETS),
            mtu: DEFAULT_MTU,
            trace: None,
            outages: Vec::new(),
            paths: None,
        }
    }
}

/// Random loss models. Probabilities are in `[0, 1]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Loss {
    None,
    /// Every packet is lost independently with probability `p`.
    Bernoulli {
        p: f64,
    },
    /// A two-state Markov chain, advanced once per offered packet (netem's `gemodel`).
    /// In state Good a packet is lost with probability `loss_good`, in Bad with
    /// `loss_bad`; after each packet the chain moves Good→Bad with probability `p_gb`
    /// and Bad→Good with `p_bg`. It starts in Good. The long-run loss rate is
    /// [`Loss::mean_loss`]. (netem's `gemodel p r 1-h 1-k` lists the bad-state loss
    /// before the good-state one; this order is `p_gb p_bg loss_good loss_bad`.)
    GilbertElliott {
        p_gb: f64,
        p_bg: f64,
        loss_good: f64,
        loss_bad: f64,
    },
}

impl Loss {
    /// The long-run fraction of packets lost. For Gilbert-Elliott this weighs each
    /// state's loss by its stationary probability, `π_bad = p_gb / (p_gb + p_bg)`.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            Loss::None => 0.0,
            Loss::Bernoulli { p } => p,
            Loss::GilbertElliott {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
            } => {
                if p_gb + p_bg == 0.0 {
                    // The chain never leaves Good, where it starts.
                    return loss_good;
                }
                let bad = p_gb / (p_gb + p_bg);
                (1.0 - bad) * loss_good + bad * loss_bad
            }
        }
    }

    fn probabilities(&self) -> Vec<(&'static str, f64)> {
        match *self {
            Loss::None => vec![],
            Loss::Bernoulli { p } => vec![("loss", p)],
            Loss::GilbertElliott {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
            } => vec![
                ("loss p_gb", p_gb),
                ("loss p_bg", p_bg),
                ("loss loss_good", loss_good),
                ("loss loss_bad", loss_bad),
            ],
        }
    }
}

/// Why a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropCause {
    /// The drop-tail queue was full.
    Queue,
    /// Random loss.
    Loss,
    /// Longer than the MTU.
    Mtu,
    /// Offered while the link was down, or still held by the link (queued, serializing
    /// or propagating) when an outage began.
    Outage,
}

impl DropCause {
    /// A short lowercase name for counters and logs: `queue`, `loss`, `mtu`, `outage`.
    pub fn as_str(self) -> &'static str {
        match self {
            DropCause::Queue => "queue",
            DropCause::Loss => "loss",
            DropCause::Mtu => "mtu",
            DropCause::Outage => "outage",
        }
    }
}

impl std::fmt::Display for DropCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Rejected [`LinkParams`]. Parameters parsed by [`LinkSpec`](crate::LinkSpec) are
/// always valid.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParamsError {
    #[error("link rate 0 bit/s would never deliver anything; use None for unlimited")]
    ZeroRate,
    #[error("{field} = {value} is not a probability between 0 and 1")]
    Probability { field: &'static str, value: f64 },
    #[error("{field} = 0 would drop every packet; use None for unbounded")]
    ZeroQueue { field: &'static str },
    #[error("mtu = 0 would drop every packet")]
    ZeroMtu,
    #[error("outage {outage:?}: {reason}")]
    Outage {
        outage: Outage,
        reason: &'static str,
    },
}

impl LinkParams {
    pub fn validate(&self) -> Result<(), ParamsError> {
        if self.trace.is_none() && self.rate_bps == Some(0) {
            return Err(ParamsError::ZeroRate);
        }
        for (field, value) in self.loss.probabilities() {
            if !(0.0..=1.0).contains(&value) {
                return Err(ParamsError::Probability { field, value });
            }
        }
        if self.queue_bytes == Some(0) {
            return Err(ParamsError::ZeroQueue {
                field: "queue_bytes",
            });
        }
        if self.queue_packets == Some(0) {
            return Err(ParamsError::ZeroQueue {
                field: "queue_packets",
            });
        }
        if self.mtu == 0 {
            return Err(ParamsError::ZeroMtu);
        }
        for &o in &self.outages {
            if let Some(reason) = o.problem() {
                return Err(ParamsError::Outage { outage: o, reason });
            }
        }
        Ok(())
    }
}

/// A packet and byte count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Counter {
    pub packets: u64,
    pub bytes: u64,
}

impl Counter {
    fn add(&mut self, bytes: u64) {
        self.packets += 1;
        self.bytes += bytes;
    }

    fn sub(&mut self, bytes: u64) {
        self.packets -= 1;
        self.bytes -= bytes;
    }

    fn take(&mut self) -> Counter {
        std::mem::take(self)
    }
}

impl std::ops::Add for Counter {
    type Output = Counter;
    fn add(self, o: Counter) -> Counter {
        Counter {
            packets: self.packets + o.packets,
            bytes: self.bytes + o.bytes,
        }
    }
}

impl std::ops::AddAssign for Counter {
    fn add_assign(&mut self, o: Counter) {
        *self = *self + o;
    }
}

impl std::ops::SubAssign for Counter {
    fn sub_assign(&mut self, o: Counter) {
        self.packets -= o.packets;
        self.bytes -= o.bytes;
    }
}

/// What happened to the packets offered to a link.
///
/// Conservation holds after every call: `offered = delivered + dropped() + held`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Every packet passed to [`Link::enqueue`].
    pub offered: Counter,
    /// Packets returned by [`Link::dequeue_ready`].
    pub delivered: Counter,
    pub dropped_queue: Counter,
    pub dropped_loss: Counter,
    pub dropped_mtu: Counter,
    /// Offered while the link was down, or lost in it when an outage began (counted at
    /// the outage's start, by the first call at or after it).
    pub dropped_outage: Counter,
    /// Accepted and not yet returned: queued, serializing or propagating.
    pub held: Counter,
    /// The most bytes ever waiting for or in serialization (the queue bound's measure).
    pub max_queue_bytes: u64,
    /// The most packets ever waiting for or in serialization.
    pub max_queue_packets: u64,
}

impl Stats {
    pub fn dropped(&self) -> Counter {
        self.dropped_queue + self.dropped_loss + self.dropped_mtu + self.dropped_outage
    }

    pub fn dropped_by(&self, cause: DropCause) -> Counter {
        match cause {
            DropCause::Queue => self.dropped_queue,
            DropCause::Loss => self.dropped_loss,
            DropCause::Mtu => self.dropped_mtu,
            DropCause::Outage => self.dropped_outage,
        }
    }

    /// `offered = delivered + dropped + held`, in packets and bytes.
    pub fn is_conserved(&self) -> bool {
        self.offered == self.delivered + self.dropped() + self.held
    }

    fn drop(&mut self, cause: DropCause, bytes: u64) {
        match cause {
            DropCause::Queue => self.dropped_queue.add(bytes),
            DropCause::Loss => self.dropped_loss.add(bytes),
            DropCause::Mtu => self.dropped_mtu.add(bytes),
            DropCause::Outage => self.dropped_outage.add(bytes),
        }
    }
}

/// A packet whose delivery time has come.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Released<P> {
    pub packet: P,
    /// When the model says it arrives; a real-time driver compares this with its clock
    /// to measure its own release error.
    pub due_ns: u64,
    /// When it was accepted (the time passed to `enqueue`, raised to the latest time
    /// seen): `due_ns - arrived_ns` is the packet's one-way delay through the link,
    /// queueing included.
    pub arrived_ns: u64,
}

/// One direction of an emulated link; see the crate docs for the model.
///
/// `P` is the packet buffer; the model reads only its length.
#[derive(Debug, Clone)]
pub struct Link<P> {
    params: LinkParams,
    stats: Stats,
    loss_rng: Xoshiro256,
    jitter_rng: Xoshiro256,
    good_state: bool,
    /// The latest time seen; earlier times passed in are raised to it.
    horizon_ns: u64,
    server: Server,
    /// Accepted packets whose serialization may not have finished: (departure time,
    /// running total of bytes accepted up to and including this packet). Departures
    /// are non-decreasing because the serializer is FIFO.
    serializing: VecDeque<(u64, u64)>,
    /// Running byte total at the last entry removed from `serializing`.
    serialized_total: u64,
    accepted_total: u64,
    /// Delivery time of the previously accepted packet, for order preservation.
    last_due_ns: u64,
    seq: u64,
    held: BinaryHeap<Reverse<Held<P>>>,
    /// Time zero of the trace and of the outage schedule.
    origin_ns: u64,
    /// The start of the outage that will take the `doomed` packets, while there are any.
    break_ns: Option<u64>,
    /// Accepted packets whose stay in the link reaches into the next outage: they are
    /// lost when it begins, at `break_ns`. Their buffers are not kept.
    doomed: Counter,
}

/// The serializer's state between packets.
#[derive(Debug, Clone)]
enum Server {
    /// Packets leave instantly.
    Unlimited,
    /// The exact time the serializer is next free is `free_ns + free_rem / rate_bps`
    /// nanoseconds: keeping the remainder makes a long run land on the exact time
    /// however the packet lengths and rate divide.
    Rate {
        rate_bps: u64,
        free_ns: u64,
        free_rem: u64,
    },
    Trace {
        trace: Arc<Trace>,
        /// Where the previous packet departed, the budget it left there, and when.
        last: Option<(Opportunity, u64, u64)>,
    },
}

#[derive(Debug, Clone)]
struct Held<P> {
    due_ns: u64,
    seq: u64,
    arrived_ns: u64,
    packet: P,
}

impl<P> PartialEq for Held<P> {
    fn eq(&self, o: &Self) -> bool {
        (self.due_ns, self.seq) == (o.due_ns, o.seq)
    }
}
impl<P> Eq for Held<P> {}
impl<P> PartialOrd for Held<P> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<P> Ord for Held<P> {
    /// Delivery order; equal times leave in the order they were accepted.
    fn cmp(&self, o: &Self) -> Ordering {
        (self.due_ns, self.seq).cmp(&(o.due_ns, o.seq))
    }
}

impl<P: AsRef<[u8]>> Link<P> {
    /// A link whose random processes are all derived from `seed`.
    ///
    /// # Panics
    ///
    /// If `params` are invalid (see [`LinkParams::validate`]); use [`Link::try_new`]
    /// for parameters that did not come from [`LinkSpec`](crate::LinkSpec).
    pub fn new(params: LinkParams, seed: u64) -> Self {
        match Link::try_new(params, seed) {
            Ok(link) => link,
            Err(e) => panic!("invalid link parameters: {e}"),
        }
    }

    /// A link whose random processes are all derived from `seed`: the state of the loss
    /// generator is the first four outputs of SplitMix64 seeded with `seed`, that of
    /// the jitter generator the next four. Separate generators keep the loss sequence
    /// the same whatever the jitter (and the reverse).
    pub fn try_new(params: LinkParams, seed: u64) -> Result<Self, ParamsError> {
        params.validate()?;
        let mut sm = seed;
        let loss_rng = Xoshiro256::from_splitmix(&mut sm);
        let jitter_rng = Xoshiro256::from_splitmix(&mut sm);
        let server = match (&params.trace, params.rate_bps) {
            (Some(trace), _) => Server::Trace {
                trace: Arc::clone(trace),
                last: None,
            },
            (None, Some(rate_bps)) => Server::Rate {
                rate_bps,
                free_ns: 0,
                free_rem: 0,
            },
            (None, None) => Server::Unlimited,
        };
        Ok(Link {
            params,
            stats: Stats::default(),
            loss_rng,
            jitter_rng,
            good_state: true,
            horizon_ns: 0,
            server,
            serializing: VecDeque::new(),
            serialized_total: 0,
            accepted_total: 0,
            last_due_ns: 0,
            seq: 0,
            held: BinaryHeap::new(),
            origin_ns: 0,
            break_ns: None,
            doomed: Counter::default(),
        })
    }

    /// Sets time zero of the delivery trace and of the outage schedule (0 by default).
    /// A real-time driver passes its clock's reading when the link comes up, as
    /// Mahimahi does; call before the first packet.
    pub fn with_origin(mut self, origin_ns: u64) -> Self {
        self.origin_ns = origin_ns;
        self
    }

    /// Time zero of the trace and of the outage schedule.
    pub fn origin(&self) -> u64 {
        self.origin_ns
    }

    /// Whether a scheduled outage has the link down at `now_ns`.
    pub fn is_down(&self, now_ns: u64) -> bool {
        outage::down_at(&self.params.outages, self.origin_ns, now_ns)
    }

    /// The first time strictly after `now_ns` at which an outage begins, if any.
    pub fn next_outage_after(&self, now_ns: u64) -> Option<u64> {
        outage::next_start_after(&self.params.outages, self.origin_ns, now_ns)
    }

    pub fn params(&self) -> &LinkParams {
        &self.params
    }

    /// Offers a packet arriving at `now_ns`. On `Err` the packet is gone (counted in
    /// [`Stats`]); on `Ok` it will come out of [`Link::dequeue_ready`], unless an
    /// outage begins before it has arrived (then it is counted in
    /// [`Stats::dropped_outage`] at the outage's start).
    ///
    /// A link that is down drops every packet offered ([`DropCause::Outage`]). Otherwise
    /// checks run in netem's order: MTU, then random loss, then the drop-tail queue.
    /// Loss is drawn for every packet within the MTU offered while the link is up, so
    /// the loss sequence depends only on that sequence of packets, not on how full the
    /// queue was.
    pub fn enqueue(&mut self, pkt: P, now_ns: u64) -> Result<(), DropCause> {
        self.enqueue_on_path(pkt, now_ns, None)
    }

    /// [`Link::enqueue`] for a packet of the flow whose [`path_key`](crate::path_key)
    /// is `path`: with [`LinkParams::paths`] set, the packet is held half the flow's
    /// round trip longer. Order is kept per flow, not across flows: a packet of a short
    /// path does not wait behind one of a long path that left the serializer before it.
    pub fn enqueue_on_path(
        &mut self,
        pkt: P,
        now_ns: u64,
        path: Option<u64>,
    ) -> Result<(), DropCause> {
        let now = self.advance(now_ns);
        let len = pkt.as_ref().len() as u64;
        self.stats.offered.add(len);
        if self.is_down(now) {
            self.stats.drop(DropCause::Outage, len);
            return Err(DropCause::Outage);
        }
        if len > u64::from(self.params.mtu) {
            self.stats.drop(DropCause::Mtu, len);
            return Err(DropCause::Mtu);
        }
        if self.lose() {
            self.stats.drop(DropCause::Loss, len);
            return Err(DropCause::Loss);
        }
        let (queued_bytes, queued_packets) = self.occupancy(now);
        let over_bytes = self
            .params
            .queue_bytes
            .is_some_and(|b| queued_bytes.saturating_add(len) > b);
        let over_packets = self
            .params
            .queue_packets
            .is_some_and(|p| queued_packets >= p as u64);
        if over_bytes || over_packets {
            self.stats.drop(DropCause::Queue, len);
            return Err(DropCause::Queue);
        }

        let departure = self.serialize(now, len);
        self.accepted_total += len;
        // Pushed even when already finished (unlimited rate), so the running totals
        // stay in step; the next prune drops it.
        self.serializing.push_back((departure, self.accepted_total));
        if departure > now {
            let s = &mut self.stats;
            s.max_queue_bytes = s.max_queue_bytes.max(queued_bytes + len);
            s.max_queue_packets = s.max_queue_packets.max(queued_packets + 1);
        }

        let jitter = match self.params.jitter_ns {
            0 => 0,
            j => self.jitter_rng.up_to(j),
        };
        let mut due = departure
            .saturating_add(self.params.delay_ns)
            .saturating_add(jitter);
        if !self.params.reorder {
            due = due.max(self.last_due_ns);
        }
        self.last_due_ns = self.last_due_ns.max(due);
        // Added after the order rule: a flow's extra delay is constant, so its packets
        // stay in order among themselves, and no flow waits for another's path.
        if let (Some(paths), Some(key)) = (&self.params.paths, path) {
            due = due.saturating_add(paths.rtt_ns(key) / 2);
        }
        self.stats.held.add(len);
        // The packet is in the link from now to `due`, both included: an outage
        // beginning in that span takes it. The schedule is fixed, so this is known now.
        if let Some(start) = self.next_outage_after(now)
            && start <= due
        {
            self.break_ns = Some(start);
            self.doomed.add(len);
            self.seq += 1;
            return Ok(());
        }
        self.held.push(Reverse(Held {
            due_ns: due,
            seq: self.seq,
            arrived_ns: now,
            packet: pkt,
        }));
        self.seq += 1;
        Ok(())
    }

    /// The next packet due at or before `now_ns`, in delivery order (ties in the order
    /// accepted). Call until `None`.
    pub fn dequeue_ready(&mut self, now_ns: u64) -> Option<Released<P>> {
        // Not `advance`: a driver asking about an earlier time must not get packets
        // due later than it asked for.
        self.settle(now_ns);
        self.prune(now_ns);
        self.horizon_ns = self.horizon_ns.max(now_ns);
        if self.held.peek()?.0.due_ns > now_ns {
            return None;
        }
        let Reverse(h) = self.held.pop()?;
        let len = h.packet.as_ref().len() as u64;
        self.stats.held.sub(len);
        self.stats.delivered.add(len);
        Some(Released {
            packet: h.packet,
            due_ns: h.due_ns,
            arrived_ns: h.arrived_ns,
        })
    }

    /// The earliest delivery time of any packet held, if any: nothing is due before it
    /// and [`Link::dequeue_ready`] at that time returns a packet.
    pub fn next_wakeup(&self) -> Option<u64> {
        self.held.peek().map(|h| h.0.due_ns)
    }

    /// The earliest time anything happens to the packets held: a delivery
    /// ([`Link::next_wakeup`]) or an outage beginning that loses some of them (counted
    /// in [`Stats`] by the first call at or after it). A driver that keeps its counters
    /// from [`Stats`] wakes up at this time instead.
    pub fn next_event(&self) -> Option<u64> {
        match (self.next_wakeup(), self.break_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Bytes accepted whose serialization has not finished at `now_ns` (the measure the
    /// `queue_bytes` bound applies to). A time earlier than one already passed to
    /// `enqueue` or `dequeue_ready` reads as that latest time.
    pub fn queued_bytes(&self, now_ns: u64) -> u64 {
        self.occupancy(now_ns.max(self.horizon_ns)).0
    }

    /// Packets accepted whose serialization has not finished at `now_ns`.
    pub fn queued_packets(&self, now_ns: u64) -> u64 {
        self.occupancy(now_ns.max(self.horizon_ns)).1
    }

    /// Packets accepted and not yet returned by [`Link::dequeue_ready`] (nor lost in
    /// an outage).
    pub fn held_packets(&self) -> usize {
        self.held.len() + self.doomed.packets as usize
    }

    /// Raises `now` to the latest time seen (a monotonic clock never goes back; this
    /// only guards against misuse) and forgets finished serializations.
    fn advance(&mut self, now_ns: u64) -> u64 {
        let now = now_ns.max(self.horizon_ns);
        self.horizon_ns = now;
        self.settle(now);
        self.prune(now);
        now
    }

    /// If the outage that takes the doomed packets has begun by `now`, counts them as
    /// dropped and leaves the link empty: no queue, the serializer free, no delivery
    /// order to keep (every packet still held is due before the outage began).
    fn settle(&mut self, now: u64) {
        if self.break_ns.is_none_or(|b| b > now) {
            return;
        }
        self.break_ns = None;
        let lost = self.doomed.take();
        self.stats.held -= lost;
        self.stats.dropped_outage += lost;
        self.serializing.clear();
        self.serialized_total = self.accepted_total;
        self.last_due_ns = 0;
        match &mut self.server {
            Server::Unlimited => {}
            Server::Rate {
                free_ns, free_rem, ..
            } => (*free_ns, *free_rem) = (0, 0),
            Server::Trace { last, .. } => *last = None,
        }
    }

    fn prune(&mut self, now: u64) {
        while let Some(&(departure, total)) = self.serializing.front() {
            if departure > now {
                break;
            }
            self.serialized_total = total;
            self.serializing.pop_front();
        }
    }

    fn occupancy(&self, now: u64) -> (u64, u64) {
        if self.break_ns.is_some_and(|b| b <= now) {
            // An outage has emptied the queue; `settle` has not run yet.
            return (0, 0);
        }
        let finished = self.serializing.partition_point(|&(d, _)| d <= now);
        let done_total = match finished {
            0 => self.serialized_total,
            i => self.serializing[i - 1].1,
        };
        (
            self.accepted_total - done_total,
            (self.serializing.len() - finished) as u64,
        )
    }

    fn lose(&mut self) -> bool {
        match self.params.loss {
            Loss::None => false,
            Loss::Bernoulli { p } => self.loss_rng.next_f64() < p,
            Loss::GilbertElliott {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
            } => {
                // netem's order: draw the transition, then the loss, which uses the
                // state the packet found.
                let switch = self.loss_rng.next_f64();
                let lost = self.loss_rng.next_f64();
                let (p_switch, p_loss) = if self.good_state {
                    (p_gb, loss_good)
                } else {
                    (p_bg, loss_bad)
                };
                if switch < p_switch {
                    self.good_state = !self.good_state;
                }
                lost < p_loss
            }
        }
    }

    /// Books the serializer for a packet of `len` bytes arriving at `now` and returns
    /// the time its last bit leaves.
    fn serialize(&mut self, now: u64, len: u64) -> u64 {
        let origin_ns = self.origin_ns;
        match &mut self.server {
            Server::Unlimited => now,
            Server::Rate {
                rate_bps,
                free_ns,
                free_rem,
            } => {
                let rate = u128::from(*rate_bps);
                let (start_ns, start_rem) = if *free_ns < now || (*free_ns == now && *free_rem == 0)
                {
                    (now, 0)
                } else {
                    (*free_ns, *free_rem)
                };
                let num = u128::from(start_rem) + u128::from(len) * 8 * NS_PER_S;
                let end = u128::from(start_ns) + num / rate;
                // `num % rate < rate`, which came from a u64.
                let rem = (num % rate) as u64;
                *free_ns = u64::try_from(end).unwrap_or(u64::MAX);
                *free_rem = rem;
                // The last bit leaves inside the nanosecond that ends at the ceiling.
                free_ns.saturating_add(u64::from(rem > 0))
            }
            Server::Trace { trace, last } => {
                let (at, budget) = match *last {
                    // Queued behind the previous packet: it starts with what that
                    // packet left of its last opportunity.
                    Some((at, surplus, when)) if now < when => (at, surplus),
                    _ => (trace.first_after(origin_ns, now), OPPORTUNITY_BYTES),
                };
                let (at, surplus) = if budget > 0 && len <= budget {
                    (at, budget - len)
                } else {
                    let rest = len - budget.min(len);
                    let k = rest.div_ceil(OPPORTUNITY_BYTES).max(1);
                    (trace.advance(at, k), k * OPPORTUNITY_BYTES - rest)
                };
                let when = trace.time_of(origin_ns, at);
                *last = Some((at, surplus, when));
                when
            }
        }
    }
}

/// How long `bytes` take to serialize at `rate_bps`, rounded up to the nanosecond
/// (the model's departure times round the same way). `u64::MAX` for a zero rate.
pub fn serialization_ns(bytes: u64, rate_bps: u64) -> u64 {
    if rate_bps == 0 {
        return u64::MAX;
    }
    let ns = (u128::from(bytes) * 8 * NS_PER_S).div_ceil(u128::from(rate_bps));
    u64::try_from(ns).unwrap_or(u64::MAX)
}
