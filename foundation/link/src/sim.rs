//! A deterministic simulator: run timed arrivals through a [`Link`] in virtual time and
//! read off what came out, when.
//!
//! The same code a real-time driver uses runs here with time as plain numbers, so a
//! theory (a spreadsheet's serialization and delay arithmetic) can be checked against
//! the emulator to the nanosecond, and a run replays exactly from its seed.

use crate::link::{DropCause, Link, LinkParams, ParamsError, Stats};

/// A packet that crossed the link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery<P> {
    /// Position of the packet in the arrivals.
    pub index: usize,
    pub due_ns: u64,
    pub packet: P,
}

/// A packet the link dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dropped {
    /// Position of the packet in the arrivals.
    pub index: usize,
    /// When: its arrival, or for a packet accepted and then lost in an outage, the
    /// outage's start.
    pub at_ns: u64,
    pub cause: DropCause,
}

/// Everything that happened in a simulation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome<P> {
    /// In delivery order.
    pub delivered: Vec<Delivery<P>>,
    /// In arrival order.
    pub dropped: Vec<Dropped>,
    pub stats: Stats,
}

impl<P> Outcome<P> {
    /// `(delivery time, packet)` pairs in delivery order.
    pub fn pairs(self) -> Vec<(u64, P)> {
        self.delivered
            .into_iter()
            .map(|d| (d.due_ns, d.packet))
            .collect()
    }
}

/// A packet tagged with its arrival position, so outcomes can name it.
#[derive(Debug, Clone)]
struct Tagged<P> {
    index: usize,
    packet: P,
}

impl<P: AsRef<[u8]>> AsRef<[u8]> for Tagged<P> {
    fn as_ref(&self) -> &[u8] {
        self.packet.as_ref()
    }
}

/// Runs `(arrival time, packet)` pairs through a link built from `params` and `seed`
/// (origin 0), then lets every accepted packet out.
///
/// Arrivals are taken in the order given and should be in non-decreasing time; an
/// earlier time is raised to the latest one seen, as [`Link`] does.
pub fn simulate<P, I>(params: LinkParams, seed: u64, arrivals: I) -> Result<Outcome<P>, ParamsError>
where
    P: AsRef<[u8]>,
    I: IntoIterator<Item = (u64, P)>,
{
    let mut link = Link::try_new(params, seed)?;
    let mut delivered = Vec::new();
    let mut dropped = Vec::new();
    let mut release = |link: &mut Link<Tagged<P>>, now: u64| {
        while let Some(r) = link.dequeue_ready(now) {
            delivered.push(Delivery {
                index: r.packet.index,
                due_ns: r.due_ns,
                packet: r.packet.packet,
            });
        }
    };
    let mut latest = 0;
    let mut accepted = Vec::new();
    for (index, (at_ns, packet)) in arrivals.into_iter().enumerate() {
        latest = latest.max(at_ns);
        // What is due by now leaves before the new packet is offered, as a driver
        // polling its timer first would do; it changes no due time either way.
        release(&mut link, latest);
        match link.enqueue(Tagged { index, packet }, latest) {
            Ok(()) => accepted.push((index, latest)),
            Err(cause) => dropped.push(Dropped {
                index,
                at_ns: latest,
                cause,
            }),
        }
    }
    // `next_event`, not `next_wakeup`: an outage's losses are counted at its start.
    while let Some(t) = link.next_event() {
        release(&mut link, t);
    }
    // Accepted and never delivered: lost when the next outage began.
    let mut came_out = vec![false; accepted.last().map_or(0, |a| a.0 + 1)];
    for d in &delivered {
        came_out[d.index] = true;
    }
    for &(index, at) in &accepted {
        if !came_out[index] {
            dropped.push(Dropped {
                index,
                at_ns: link.next_outage_after(at).unwrap_or(at),
                cause: DropCause::Outage,
            });
        }
    }
    dropped.sort_by_key(|d| d.index);
    Ok(Outcome {
        delivered,
        dropped,
        stats: link.stats().clone(),
    })
}
