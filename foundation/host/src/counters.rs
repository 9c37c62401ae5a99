//! What crossed the lab's link, each direction: packets and bytes offered and delivered,
//! drops by cause, per-flow bytes (TCP, UDP or any other IP protocol), and how late the
//! emulator released packets. The lab's emulator fills them; a case reads them through
//! [`crate::LabView::counters`].

use hdrhistogram::Histogram;
use std::collections::HashMap;

/// A TCP/UDP 5-tuple (IPv4), or the lump for anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    pub proto: u8,
    pub src: [u8; 4],
    pub sport: u16,
    pub dst: [u8; 4],
    pub dport: u16,
}

/// Counters of one direction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirCounters {
    /// Packets and IP bytes the sending host handed to its TUN device.
    pub offered_packets: u64,
    pub offered_bytes: u64,
    /// Packets and IP bytes delivered to the other host.
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
    pub dropped_queue: u64,
    pub dropped_loss: u64,
    pub dropped_mtu: u64,
    /// Offered while a scheduled outage had the link down, or held by the link (queued,
    /// serializing, propagating) when an outage began.
    pub dropped_outage: u64,
    /// The receiving TUN device refused a packet.
    pub dropped_tx: u64,
    /// Packets discarded when the link was reconfigured while holding them.
    pub dropped_reset: u64,
    pub flows: HashMap<FlowKey, (u64, u64)>,
}

impl DirCounters {
    pub fn dropped(&self) -> u64 {
        self.dropped_queue
            + self.dropped_loss
            + self.dropped_mtu
            + self.dropped_outage
            + self.dropped_tx
            + self.dropped_reset
    }

    /// `self - earlier`, for per-case figures (flows are not subtracted).
    pub fn since(&self, earlier: &DirCounters) -> DirCounters {
        DirCounters {
            offered_packets: self.offered_packets - earlier.offered_packets,
            offered_bytes: self.offered_bytes - earlier.offered_bytes,
            delivered_packets: self.delivered_packets - earlier.delivered_packets,
            delivered_bytes: self.delivered_bytes - earlier.delivered_bytes,
            dropped_queue: self.dropped_queue - earlier.dropped_queue,
            dropped_loss: self.dropped_loss - earlier.dropped_loss,
            dropped_mtu: self.dropped_mtu - earlier.dropped_mtu,
            dropped_outage: self.dropped_outage - earlier.dropped_outage,
            dropped_tx: self.dropped_tx - earlier.dropped_tx,
            dropped_reset: self.dropped_reset - earlier.dropped_reset,
            flows: HashMap::new(),
        }
    }
}

/// Both directions: `up` is A -> B (client to server), `down` is B -> A.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    pub up: DirCounters,
    pub down: DirCounters,
    /// Release error (ns late) of delivered packets since the last reset.
    pub release_error: Option<Histogram<u64>>,
}
