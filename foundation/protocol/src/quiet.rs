//! Waiting for the link to be quiet before a case: no packet held by the emulator and no
//! socket in either host with something left to send, TCP or UDP, so that a previous
//! case's tail (seconds per segment at 2400 bit/s) does not delay this case's set-up.

use crate::hosts::{Hosts, enter};
use crate::{Ctx, WorkloadError};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// TCP states that still expect an answer across the link (include/net/tcp_states.h):
/// SYN_SENT, SYN_RECV, FIN_WAIT1, LAST_ACK, CLOSING.
const TCP_OPENING_OR_CLOSING: [u8; 5] = [0x02, 0x03, 0x04, 0x09, 0x0B];
const TCP_LISTEN: u8 = 0x0A;

/// Sockets in a `/proc/net/{tcp,udp}` table with data still to send: a UDP socket with
/// datagrams queued, a TCP one with unacknowledged data or opening or closing (a
/// listener's `tx_queue` is its backlog, not data).
pub fn busy_in(table: &str, tcp: bool) -> usize {
    table
        .lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (Some(st), Some(queues)) = (f.get(3), f.get(4)) else {
                return false;
            };
            let st = u8::from_str_radix(st, 16).unwrap_or(0);
            let tx = queues
                .split(':')
                .next()
                .and_then(|x| u64::from_str_radix(x, 16).ok())
                .unwrap_or(0);
            match tcp {
                true => st != TCP_LISTEN && (tx > 0 || TCP_OPENING_OR_CLOSING.contains(&st)),
                false => tx > 0,
            }
        })
        .count()
}

/// Busy sockets of the calling thread's network namespace, TCP and UDP.
fn busy_here() -> usize {
    let read = |t: &str| std::fs::read_to_string(format!("/proc/thread-self/net/{t}"));
    read("tcp").map_or(0, |t| busy_in(&t, true)) + read("udp").map_or(0, |t| busy_in(&t, false))
}

/// [`busy_here`] in the host whose namespace is `name`, from a thread of its own.
fn busy_in_host(name: &str) -> usize {
    std::thread::scope(|s| {
        s.spawn(|| enter(name).ok().map(|()| busy_here()))
            .join()
            .ok()
            .flatten()
    })
    .unwrap_or(0)
}

impl Hosts<'_> {
    /// Waits until nothing from earlier cases is left on the link (100 ms without a held
    /// packet or a busy socket in either host), at most `limit`; then the case goes ahead
    /// and its figures show the disturbance. Returns how long it waited.
    pub fn wait_quiet(&self, limit: Duration, ctx: &Ctx) -> Result<Duration, WorkloadError> {
        let t = Instant::now();
        let server = self.server().name();
        let mut quiet_since: Option<Instant> = None;
        loop {
            if ctx.shutdown.load(Ordering::Relaxed) {
                return Err(WorkloadError::Interrupted);
            }
            let c = self.counters();
            let held = [&c.up, &c.down]
                .iter()
                .any(|d| d.offered_packets > d.delivered_packets + d.dropped());
            // The case loop's thread is in the client host.
            let busy = held || busy_here() > 0 || busy_in_host(server) > 0;
            match (busy, quiet_since) {
                (true, _) => quiet_since = None,
                (false, None) => quiet_since = Some(Instant::now()),
                (false, Some(q)) if q.elapsed() >= Duration::from_millis(100) => {
                    return Ok(t.elapsed());
                }
                (false, Some(_)) => {}
            }
            if t.elapsed() > limit {
                return Ok(t.elapsed());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockets_with_something_to_send_are_busy_and_listeners_are_not() {
        let tcp = "  sl  local_address rem_address   st tx_queue:rx_queue tr tm->when\n\
                   0: 0100007F:1F90 00000000:0000 0A 00000080:00000000 00:00000000\n\
                   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000\n\
                   2: 0100007F:1F90 0100007F:C351 01 00000010:00000000 00:00000000\n\
                   3: 0100007F:1F90 0100007F:C352 04 00000000:00000000 00:00000000\n";
        assert_eq!(busy_in(tcp, true), 2);
        let udp = "  sl  local_address rem_address   st tx_queue:rx_queue\n\
                   0: 0100007F:1633 00000000:0000 07 00000000:00000000\n\
                   1: 0100007F:1634 0100007F:1633 01 00000400:00000000\n";
        assert_eq!(busy_in(udp, false), 1);
        assert_eq!(busy_in("", true), 0);
    }
}
