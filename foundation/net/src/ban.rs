//! Sources that keep sending what our servers refuse are banned for a while, the way
//! fail2ban (and ejabberd's `mod_fail2ban`) bans an address after repeated failures.
//!
//! A server calls [`strike`] when it refuses a connection for what the client sent:
//! bytes that are not its protocol, a frame or head over its cap. Never for a timeout, a
//! reset or a close: our own load generators end their runs with resets, and an
//! overloaded server times clients out through no fault of theirs. A source with
//! [`Policy::strikes`] strikes within [`Policy::window`] is banned for
//! [`Policy::lifetime`], one line on stderr saying so.
//!
//! A ban is enforced twice:
//! - in the kernel: every listener kept under [`guard`] carries a classic BPF socket
//!   filter (`SO_ATTACH_FILTER`) that drops the banned sources' packets, SYNs included,
//!   so a banned client's connection attempts cost the server nothing (they time out at
//!   the client, as behind fail2ban's firewall rule);
//! - at `accept` ([`banned`]): a connection that was queued before the ban, or a
//!   listener the filter could not be attached to, is closed unread.
//!
//! The bans live in one table per process: a source refused on one port of `wirebench
//! serve` is banned from all of them, as one operator would want. The table is bounded
//! ([`MAX_SOURCES`] sources with strikes, [`MAX_BANS`] bans), so a crowd of sources costs
//! memory in proportion to the bound, not to the crowd.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use socket2::{SockFilter, SockRef};
use wirebench_model::clock::monotonic_ns;

use crate::cap::LogLimit;

/// When a source is banned, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Refusals within [`Policy::window`] that ban a source (0: never ban).
    pub strikes: u32,
    pub window: Duration,
    pub lifetime: Duration,
}

/// 100 refusals within 10 s ban a source for a minute. No client that speaks the
/// protocol is refused 100 times in 10 s; `bench/hostile.sh`'s garbage and oversized
/// attacks are refused 5,000-15,000 times a second.
pub const DEFAULT_POLICY: Policy = Policy {
    strikes: 100,
    window: Duration::from_secs(10),
    lifetime: Duration::from_secs(60),
};

/// Sources whose strikes are counted at once; beyond it, the oldest count is forgotten.
pub const MAX_SOURCES: usize = 4096;

/// Sources banned at once; beyond it, a new ban replaces the one that ends soonest.
pub const MAX_BANS: usize = 1024;

/// Sets the process's policy (`wirebench serve --ban-after`, `--ban-for`). Bans made
/// under the old policy keep their end.
pub fn configure(policy: Policy) {
    table().lock().policy = policy;
}

/// The policy in force.
pub fn policy() -> Policy {
    table().lock().policy
}

/// Never strikes `ip`: the address an in-process gateway (WebSocket, BOSH, SockJS)
/// connects to the XMPP server from. What the gateway relays for its clients is theirs,
/// and a ban on the gateway's own address would lock every client out (the process's
/// listeners all share the table) where it should reach only the one misbehaving; the
/// gateway's own listener strikes that client's address.
pub fn trust(ip: IpAddr) {
    table().lock().trusted.insert(ip);
}

/// A connection from `ip` was refused for what it sent (see the module doc).
pub fn strike(ip: IpAddr) {
    let t = table();
    let mut inner = t.lock();
    let now = monotonic_ns();
    if let Some(ban) = inner.strike(ip, now) {
        t.banned.store(inner.bans.len(), Ordering::Relaxed);
        inner.refilter();
        drop(inner);
        t.wake.notify_all();
        t.log.eprint(|| {
            format!(
                "wirebench: banned {ip} for {}s: {} connections refused within {}s \
                 (its packets are dropped until then)",
                ban.lifetime.as_secs(),
                ban.strikes,
                ban.window.as_secs()
            )
        });
    }
}

/// [`strike`] against the peer of connection `s`, when it still has one.
pub fn strike_peer(s: &impl AsFd) {
    if let Some(ip) = peer_ip(s) {
        strike(ip);
    }
}

/// Whether the peer of connection `s` is banned ([`banned`]).
pub fn peer_banned(s: &impl AsFd) -> bool {
    peer_ip(s).is_some_and(banned)
}

fn peer_ip(s: &impl AsFd) -> Option<IpAddr> {
    let peer = SockRef::from(s).peer_addr().ok()?;
    peer.as_socket().map(|a| a.ip())
}

/// Whether `ip` is banned now. Cheap when nobody is.
pub fn banned(ip: IpAddr) -> bool {
    let t = table();
    if t.banned.load(Ordering::Relaxed) == 0 {
        return false;
    }
    let inner = t.lock();
    inner
        .bans
        .get(&ip)
        .is_some_and(|until| *until > monotonic_ns())
}

/// Keeps `listener`'s BPF filter in step with the bans while the guard lives: the
/// listener must outlive it (the borrow says so), since the table writes to its
/// descriptor from other threads until the guard is dropped.
pub fn guard<'a>(listener: &'a impl AsFd) -> Guard<'a> {
    let fd = listener.as_fd().as_raw_fd();
    let mut inner = table().lock();
    inner.listeners.push(fd);
    // SAFETY: `fd` is `listener`'s, borrowed for the call.
    let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
    let filter = inner.filter();
    apply(borrowed, &filter);
    Guard {
        fd,
        _listener: std::marker::PhantomData,
    }
}

/// See [`guard`].
#[must_use = "the filter is kept current only while the guard lives"]
pub struct Guard<'a> {
    fd: RawFd,
    _listener: std::marker::PhantomData<&'a ()>,
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        let mut inner = table().lock();
        if let Some(i) = inner.listeners.iter().position(|f| *f == self.fd) {
            inner.listeners.swap_remove(i);
        }
    }
}

struct Table {
    inner: Mutex<Inner>,
    /// `inner.bans.len()`, read without the lock on every accept.
    banned: AtomicUsize,
    /// Wakes the thread that lifts bans when one is added.
    wake: Condvar,
    log: LogLimit,
}

impl Table {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        // The thread that lifts bans when they end: nothing else would, since a banned
        // source's packets never reach the server to remind it.
        let _ = std::thread::Builder::new()
            .name("wb-bans".into())
            .spawn(lift_bans);
        Table {
            inner: Mutex::new(Inner {
                policy: DEFAULT_POLICY,
                strikes: HashMap::new(),
                bans: HashMap::new(),
                trusted: HashSet::new(),
                listeners: Vec::new(),
            }),
            banned: AtomicUsize::new(0),
            wake: Condvar::new(),
            log: LogLimit::new(),
        }
    })
}

fn lift_bans() {
    let t = table();
    let mut inner = t.lock();
    loop {
        let now = monotonic_ns();
        let before = inner.bans.len();
        inner.bans.retain(|_, until| *until > now);
        if inner.bans.len() != before {
            t.banned.store(inner.bans.len(), Ordering::Relaxed);
            inner.refilter();
        }
        inner = match inner.bans.values().min() {
            Some(end) => {
                let wait = Duration::from_nanos(end.saturating_sub(now));
                t.wake
                    .wait_timeout(inner, wait)
                    .unwrap_or_else(|p| p.into_inner())
                    .0
            }
            None => t.wake.wait(inner).unwrap_or_else(|p| p.into_inner()),
        };
    }
}

struct Strikes {
    count: u32,
    since_ns: u64,
}

struct Inner {
    policy: Policy,
    strikes: HashMap<IpAddr, Strikes>,
    /// Banned sources and when their bans end (monotonic ns).
    bans: HashMap<IpAddr, u64>,
    /// Sources [`trust`]ed: never struck.
    trusted: HashSet<IpAddr>,
    /// The guarded listeners' descriptors.
    listeners: Vec<RawFd>,
}

impl Inner {
    /// Counts a strike at `now`; `Some(policy)` when it bans `ip`.
    fn strike(&mut self, ip: IpAddr, now: u64) -> Option<Policy> {
        let p = self.policy;
        if p.strikes == 0
            || self.trusted.contains(&ip)
            || self.bans.get(&ip).is_some_and(|until| *until > now)
        {
            return None;
        }
        let window = p.window.as_nanos() as u64;
        if self.strikes.len() >= MAX_SOURCES && !self.strikes.contains_key(&ip) {
            self.strikes
                .retain(|_, s| now.saturating_sub(s.since_ns) < window);
            if self.strikes.len() >= MAX_SOURCES
                && let Some(oldest) = self
                    .strikes
                    .iter()
                    .min_by_key(|(_, s)| s.since_ns)
                    .map(|(ip, _)| *ip)
            {
                self.strikes.remove(&oldest);
            }
        }
        let s = self.strikes.entry(ip).or_insert(Strikes {
            count: 0,
            since_ns: now,
        });
        if now.saturating_sub(s.since_ns) >= window {
            *s = Strikes {
                count: 0,
                since_ns: now,
            };
        }
        s.count += 1;
        if s.count < p.strikes {
            return None;
        }
        self.strikes.remove(&ip);
        if self.bans.len() >= MAX_BANS
            && let Some(soonest) = self
                .bans
                .iter()
                .min_by_key(|(_, until)| **until)
                .map(|(ip, _)| *ip)
        {
            self.bans.remove(&soonest);
        }
        self.bans
            .insert(ip, now.saturating_add(p.lifetime.as_nanos() as u64));
        Some(p)
    }

    fn filter(&self) -> Vec<SockFilter> {
        let mut ips: Vec<IpAddr> = self.bans.keys().copied().collect();
        ips.sort();
        program(&ips)
    }

    /// Attaches the current filter to every guarded listener.
    fn refilter(&self) {
        let filter = self.filter();
        for fd in &self.listeners {
            // SAFETY: a guarded listener's descriptor stays open until its guard is
            // dropped, which takes this table's lock first.
            apply(unsafe { BorrowedFd::borrow_raw(*fd) }, &filter);
        }
    }
}

/// Attaches `filter` (or detaches any, when empty). A listener that refuses it keeps
/// the accept-time check.
fn apply(fd: BorrowedFd<'_>, filter: &[SockFilter]) {
    let s = SockRef::from(&fd);
    let _ = if filter.is_empty() {
        s.detach_filter()
    } else {
        s.attach_filter(filter)
    };
}

const LD_B_ABS: u16 = (libc::BPF_LD | libc::BPF_B | libc::BPF_ABS) as u16;
const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const RSH_K: u16 = (libc::BPF_ALU | libc::BPF_RSH | libc::BPF_K) as u16;
const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JA: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;
const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
/// Offsets from the network header, whatever the link layer (`SKF_NET_OFF`).
const NET: u32 = libc::SKF_NET_OFF as u32;
/// The longest program the kernel takes (`BPF_MAXINSNS`) less the fixed part.
const MAX_PROGRAM: usize = 4000;

/// The filter dropping `ips`' packets; empty for none. For each IP version in turn:
/// load the source address, compare with each banned one, and drop on a match. Every
/// jump is short (to the next instruction or the one after), so the program has no
/// jump-offset limit; sources past [`MAX_PROGRAM`] instructions are left to the
/// accept-time check.
fn program(ips: &[IpAddr]) -> Vec<SockFilter> {
    if ips.is_empty() {
        return Vec::new();
    }
    let keep = || SockFilter::new(RET_K, 0, 0, u32::MAX);
    let drop = || SockFilter::new(RET_K, 0, 0, 0);
    let (v4, v6): (Vec<_>, Vec<_>) = ips.iter().partition(|ip| ip.is_ipv4());
    let mut v4_part = vec![SockFilter::new(LD_W_ABS, 0, 0, NET + 12)];
    for ip in &v4 {
        let IpAddr::V4(a) = ip else { continue };
        if v4_part.len() + 2 > MAX_PROGRAM / 2 {
            break;
        }
        v4_part.push(SockFilter::new(JEQ_K, 0, 1, u32::from(*a)));
        v4_part.push(drop());
    }
    v4_part.push(keep());
    let mut v6_part = Vec::new();
    for ip in &v6 {
        let IpAddr::V6(a) = ip else { continue };
        if v6_part.len() + 9 > MAX_PROGRAM / 2 {
            break;
        }
        let o = a.octets();
        let word = |i: usize| u32::from_be_bytes([o[i], o[i + 1], o[i + 2], o[i + 3]]);
        // Four words of the source (offset 8); a mismatch skips to the next address.
        for (i, w) in (0..4).map(|i| (i, word(4 * i))) {
            v6_part.push(SockFilter::new(LD_W_ABS, 0, 0, NET + 8 + 4 * i as u32));
            v6_part.push(SockFilter::new(JEQ_K, 0, (8 - 2 * i - 1) as u8, w));
        }
        v6_part.push(drop());
    }
    v6_part.push(keep());
    // The version nibble: 4 runs the IPv4 part, anything else (6) the IPv6 part.
    let mut p = vec![
        SockFilter::new(LD_B_ABS, 0, 0, NET),
        SockFilter::new(RSH_K, 0, 0, 4),
        SockFilter::new(JEQ_K, 1, 0, 4),
        SockFilter::new(JA, 0, 0, v4_part.len() as u32),
    ];
    p.extend(v4_part);
    p.extend(v6_part);
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};

    fn inner(policy: Policy) -> Inner {
        Inner {
            policy,
            strikes: HashMap::new(),
            bans: HashMap::new(),
            trusted: HashSet::new(),
            listeners: Vec::new(),
        }
    }

    const S: u64 = 1_000_000_000;

    #[test]
    fn strikes_within_the_window_ban_and_older_ones_do_not_count() {
        let mut t = inner(Policy {
            strikes: 3,
            window: Duration::from_secs(10),
            lifetime: Duration::from_secs(60),
        });
        let ip: IpAddr = Ipv4Addr::new(127, 0, 0, 2).into();
        assert!(t.strike(ip, S).is_none());
        assert!(t.strike(ip, 2 * S).is_none());
        // The window began at 1 s: at 11 s it starts again.
        assert!(t.strike(ip, 11 * S).is_none());
        assert!(t.strike(ip, 12 * S).is_none());
        assert!(t.strike(ip, 13 * S).is_some(), "3 within 10 s");
        assert_eq!(t.bans.get(&ip), Some(&(73 * S)));
        assert!(
            t.strike(ip, 14 * S).is_none(),
            "a banned source is not banned again"
        );
        let other: IpAddr = Ipv4Addr::new(127, 0, 0, 3).into();
        assert!(!t.bans.contains_key(&other));
        // A gateway's own address is never struck, whatever it relays.
        t.trusted.insert(other);
        for i in 20..30 {
            assert!(t.strike(other, i * S).is_none());
        }
        assert!(!t.bans.contains_key(&other));
    }

    #[test]
    fn no_strikes_never_ban_and_the_tables_stay_bounded() {
        let mut t = inner(Policy {
            strikes: 0,
            ..DEFAULT_POLICY
        });
        let ip: IpAddr = Ipv4Addr::LOCALHOST.into();
        for i in 0..1000 {
            assert!(t.strike(ip, i).is_none());
        }
        let mut t = inner(Policy {
            strikes: 2,
            ..DEFAULT_POLICY
        });
        for i in 0..(MAX_SOURCES as u32 + MAX_BANS as u32) * 2 {
            let ip: IpAddr = Ipv4Addr::from(0x0a00_0000 + i).into();
            t.strike(ip, u64::from(i));
            t.strike(ip, u64::from(i));
            t.strike(Ipv4Addr::from(0x0b00_0000 + i).into(), u64::from(i));
        }
        assert!(t.strikes.len() <= MAX_SOURCES);
        assert!(t.bans.len() <= MAX_BANS);
    }

    /// A listener carrying the filter for `ips`, and whether a connection from `from`
    /// gets through within half a second.
    fn gets_through(filter: &[SockFilter], from: IpAddr, to: IpAddr) -> bool {
        let l = TcpListener::bind(SocketAddr::new(to, 0)).unwrap();
        if !filter.is_empty() {
            SockRef::from(&l).attach_filter(filter).unwrap();
        }
        let at = l.local_addr().unwrap();
        let s = socket2::Socket::new(
            socket2::Domain::for_address(at),
            socket2::Type::STREAM,
            None,
        )
        .unwrap();
        s.bind(&SocketAddr::new(from, 0).into()).unwrap();
        match s.connect_timeout(&at.into(), Duration::from_millis(500)) {
            Ok(()) => {
                let _ = TcpStream::from(s);
                true
            }
            Err(_) => false,
        }
    }

    #[test]
    fn the_filter_drops_banned_sources_and_only_them() {
        let banned: IpAddr = Ipv4Addr::new(127, 0, 0, 2).into();
        let other: IpAddr = Ipv4Addr::new(127, 0, 0, 3).into();
        let local: IpAddr = Ipv4Addr::LOCALHOST.into();
        let p = program(&[banned, Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 7).into()]);
        assert!(
            !gets_through(&p, banned, local),
            "a banned source's SYN is dropped"
        );
        assert!(gets_through(&p, other, local));
        assert!(gets_through(&p, local, local));
        // IPv6: ::1 is not banned, so it passes the IPv6 part.
        let v6: IpAddr = Ipv6Addr::LOCALHOST.into();
        if TcpListener::bind((Ipv6Addr::LOCALHOST, 0)).is_ok() {
            assert!(gets_through(&p, v6, v6));
            assert!(!gets_through(&program(&[v6]), v6, v6), "::1 banned");
        }
    }

    #[test]
    fn many_bans_make_a_program_the_kernel_takes() {
        let ips: Vec<IpAddr> = (0..MAX_BANS as u32)
            .map(|i| Ipv4Addr::from(0x0a00_0000 + i).into())
            .chain((0..200u16).map(|i| Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, i).into()))
            .collect();
        let p = program(&ips);
        assert!(p.len() <= libc::BPF_MAXINSNS as usize);
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        SockRef::from(&l).attach_filter(&p).unwrap();
    }
}
