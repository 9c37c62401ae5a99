//! What a transport puts in front of a message on an IPv4 link: the bytes a message of
//! a given length becomes on the wire, and the packets the transport adds of its own
//! (a connection's opening, acknowledgements), for the link arithmetic of the runner's
//! models and the planner's estimates.
//!
//! TCP: a message is cut into segments of at most one MSS (the MTU less the headers),
//! each behind IPv4 (RFC 791, 20 bytes), TCP (RFC 9293, 20) and the timestamp option
//! Linux puts on every segment between two Linux hosts (RFC 7323, 12 with padding).
//! UDP: a message is one datagram behind IPv4 and UDP (RFC 768, 8); one longer than the
//! MTU is cut into IPv4 fragments (RFC 791 §3.2), each with an IPv4 header of its own
//! and data in multiples of 8 bytes, the UDP header in the first only.

/// The transport of a flow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Transport {
    #[default]
    Tcp,
    Udp,
}

/// The IPv4 header without options.
const IPV4_HEADER: u64 = 20;

impl Transport {
    /// The IP protocol number (IANA): what the emulator's flow records carry.
    pub const fn ip_proto(self) -> u8 {
        match self {
            Transport::Tcp => 6,
            Transport::Udp => 17,
        }
    }

    /// Header bytes in front of each packet of an unfragmented message over IPv4:
    /// 52 for TCP with timestamps, 28 for UDP.
    pub const fn ipv4_overhead(self) -> u64 {
        match self {
            Transport::Tcp => IPV4_HEADER + 20 + 12,
            Transport::Udp => IPV4_HEADER + 8,
        }
    }

    /// The bytes of the packets that open a connection (SYN, SYN-ACK), headers included:
    /// TCP's 20-byte header plus Linux's options (MSS 4, SACK permitted 2, timestamps 10,
    /// window scale 3 and one NOP) behind IPv4. UDP opens nothing: a protocol over it
    /// counts its own handshake (QUIC's Initial packets) in its own figures.
    pub const fn open_packet(self) -> Option<u64> {
        match self {
            Transport::Tcp => Some(IPV4_HEADER + 20 + 20),
            Transport::Udp => None,
        }
    }

    /// The bytes of the bare acknowledgement the transport itself sends for received
    /// data (at most one per segment), headers included. UDP acknowledges nothing: a
    /// protocol over it (QUIC's ACK frames, CoAP's ACK messages) counts its own.
    pub const fn ack_packet(self) -> Option<u64> {
        match self {
            Transport::Tcp => Some(self.ipv4_overhead()),
            Transport::Udp => None,
        }
    }

    /// The IPv4 packets and their bytes, headers included, that a message of `message`
    /// bytes becomes on a link of `mtu` bytes (at least one packet, even when empty).
    pub fn ipv4_packets(self, message: u64, mtu: u64) -> (u64, u64) {
        match self {
            Transport::Tcp => {
                let mss = mtu.saturating_sub(self.ipv4_overhead()).max(1);
                let segments = message.div_ceil(mss).max(1);
                (segments, message + segments * self.ipv4_overhead())
            }
            Transport::Udp => {
                let datagram = message + 8;
                let per_fragment = (mtu.saturating_sub(IPV4_HEADER) / 8 * 8).max(8);
                let fragments = datagram.div_ceil(per_fragment).max(1);
                (fragments, datagram + fragments * IPV4_HEADER)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_pays_52_bytes_a_segment() {
        assert_eq!(Transport::Tcp.ipv4_packets(23, 1500), (1, 75));
        assert_eq!(Transport::Tcp.ipv4_packets(0, 1500), (1, 52));
        // MSS 500 at MTU 552: 1000 bytes are two full segments.
        assert_eq!(Transport::Tcp.ipv4_packets(1000, 552), (2, 1104));
        assert_eq!(Transport::Tcp.ipv4_packets(1001, 552), (3, 1157));
    }

    #[test]
    fn udp_pays_28_bytes_and_fragments_past_the_mtu() {
        assert_eq!(Transport::Udp.ipv4_packets(23, 1500), (1, 51));
        assert_eq!(Transport::Udp.ipv4_packets(1472, 1500), (1, 1500));
        // 1473 + 8 bytes of UDP: 1480 in the first fragment, 1 in the second.
        assert_eq!(Transport::Udp.ipv4_packets(1473, 1500), (2, 1473 + 8 + 40));
        // MTU 552: 528 data bytes a fragment (532 rounded down to a multiple of 8).
        assert_eq!(Transport::Udp.ipv4_packets(1000, 552), (2, 1048));
    }

    #[test]
    fn only_tcp_opens_and_acknowledges() {
        assert_eq!(Transport::Tcp.open_packet(), Some(60));
        assert_eq!(Transport::Tcp.ack_packet(), Some(52));
        assert_eq!(Transport::Udp.open_packet(), None);
        assert_eq!(Transport::Udp.ack_packet(), None);
    }

    #[test]
    fn protocol_numbers() {
        assert_eq!(
            (Transport::Tcp.ip_proto(), Transport::Udp.ip_proto()),
            (6, 17)
        );
    }
}
