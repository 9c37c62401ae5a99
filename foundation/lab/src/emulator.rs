//! The emulator: moves IP packets between two TUN devices through the link model, one
//! model per direction, on a dedicated thread.
//!
//! Timing: the thread sleeps in `ppoll` (nanosecond timeout) until a packet arrives or
//! until [`SPIN_NS`] before the next packet is due, then spins, so packets leave within
//! microseconds of their due time instead of a timer tick later. Every packet's release
//! error (actual minus due time) is recorded, so the claim can be checked per run.
//!
//! Each case also gets its packets' one-way delays and a queue series ([`LinkTimes`]);
//! `WIREBENCH_LINK_TIMES=0` in the environment turns that accounting off, so a bench
//! can show what it costs (bench/link.sh).

use crate::pcap::{PcapStats, PcapWriter};
use crate::times::{LinkTimes, SAMPLE_NS};
use crate::tun::Tun;
use hdrhistogram::Histogram;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};
pub use wirebench_host::counters::{Counters, DirCounters, FlowKey};
use wirebench_link::{DropCause, Link, LinkParams};
use wirebench_model::clock::monotonic_ns;

/// Below this much time to the next due packet, spin instead of sleeping: a timed sleep
/// overshoots by up to several hundred microseconds on a virtual machine.
const SPIN_NS: u64 = 1_000_000;
/// Keep polling the TUN devices without sleeping for this long after any packet moved:
/// replies usually follow within microseconds, and noticing them at once keeps the
/// wake-up latency of a sleeping thread out of their arrival times (NAPI-style busy
/// polling, bounded so an idle link costs no CPU).
const BUSY_NS: u64 = 2_000_000;
/// Within this much of a due time, spin without yielding.
const TIGHT_NS: u64 = 20_000;
/// Longest sleep when nothing is held, so reconfiguration and stop are noticed.
const IDLE_NS: u64 = 10_000_000;
/// Distinct flows counted before the rest are lumped together.
const MAX_FLOWS: usize = 4096;

/// The flow a packet belongs to (the lump when it is not IPv4).
fn flow_key(pkt: &[u8]) -> FlowKey {
    let mut k = FlowKey {
        proto: 0,
        src: [0; 4],
        sport: 0,
        dst: [0; 4],
        dport: 0,
    };
    if pkt.len() < 20 || pkt[0] >> 4 != 4 {
        return k;
    }
    let ihl = ((pkt[0] & 0x0f) as usize) * 4;
    k.proto = pkt[9];
    k.src.copy_from_slice(&pkt[12..16]);
    k.dst.copy_from_slice(&pkt[16..20]);
    if (k.proto == 6 || k.proto == 17) && pkt.len() >= ihl + 4 {
        k.sport = u16::from_be_bytes([pkt[ihl], pkt[ihl + 1]]);
        k.dport = u16::from_be_bytes([pkt[ihl + 2], pkt[ihl + 3]]);
    }
    k
}

/// A flow's key for per-connection path round trips: its client-side endpoint, the
/// source of a packet going up (direction 0) and the destination of one coming down, so
/// both directions agree.
fn path_of(key: &FlowKey, direction: usize) -> u64 {
    let client = if direction == 0 {
        (key.src, key.sport)
    } else {
        (key.dst, key.dport)
    };
    wirebench_link::path_key(key.proto, client)
}

struct Shared {
    stop: AtomicBool,
    /// Kernel thread id of the emulator thread, for its CPU time.
    tid: std::sync::atomic::AtomicI64,
    pending: Mutex<Option<(LinkParams, LinkParams, u64)>>,
    counters: Mutex<Counters>,
    error: Mutex<Option<String>>,
    /// The capture's progress, published whenever it flushes or stops.
    pcap: Mutex<Option<PcapStats>>,
    /// The case's packet times; `None` when the accounting is off.
    times: Option<Mutex<LinkTimes>>,
}

/// Whether the per-packet time accounting is on (`WIREBENCH_LINK_TIMES` unset or not 0).
fn times_on() -> bool {
    std::env::var_os("WIREBENCH_LINK_TIMES").is_none_or(|v| v != "0")
}

pub struct Emulator {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Emulator {
    /// Starts forwarding between `a` and `b`.
    pub fn start(
        a: Tun,
        b: Tun,
        up: LinkParams,
        down: LinkParams,
        seed: u64,
        pcap: Option<PcapWriter>,
    ) -> io::Result<Emulator> {
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            tid: std::sync::atomic::AtomicI64::new(0),
            pending: Mutex::new(None),
            counters: Mutex::new(Counters {
                release_error: new_hist(),
                ..Default::default()
            }),
            error: Mutex::new(None),
            pcap: Mutex::new(pcap.as_ref().map(|p| p.stats().clone())),
            times: times_on().then(|| Mutex::new(LinkTimes::default())),
        });
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name("wb-emulator".into())
            .spawn(move || {
                // SAFETY: gettid has no preconditions.
                sh.tid
                    .store(unsafe { libc::gettid() } as i64, Ordering::SeqCst);
                let mut w = Worker::new(a, b, up, down, seed, pcap, sh.clone());
                if let Err(e) = w.run() {
                    *sh.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
                }
            })?;
        Ok(Emulator {
            shared,
            thread: Some(thread),
        })
    }

    /// Replaces both directions' models (between cases). Held packets are discarded
    /// and counted as `dropped_reset`. The new models' origin (time zero of their
    /// traces and outage schedules) is the moment they take over.
    ///
    /// Returns once the emulator has switched (within one idle period, 10 ms), so a case
    /// started afterwards never runs on the previous case's link.
    pub fn configure(&self, up: LinkParams, down: LinkParams, seed: u64) -> io::Result<()> {
        *self
            .shared
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some((up, down, seed));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while self
            .shared
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
        {
            if std::time::Instant::now() > deadline
                || self.thread.as_ref().is_none_or(|t| t.is_finished())
            {
                return Err(io::Error::other(
                    self.error()
                        .unwrap_or_else(|| "the emulator thread is not running".into()),
                ));
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        Ok(())
    }

    pub fn counters(&self) -> Counters {
        self.shared
            .counters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Clears the release-error histogram (per case).
    pub fn reset_release_error(&self) {
        self.shared
            .counters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .release_error = new_hist();
    }

    /// The packet times of the case so far (since the last [`Emulator::configure`]);
    /// `None` when the accounting is off.
    pub fn times(&self) -> Option<LinkTimes> {
        let t = self.shared.times.as_ref()?;
        Some(t.lock().unwrap_or_else(|p| p.into_inner()).clone())
    }

    /// CPU time the emulator thread has used, from the kernel's scheduler statistics.
    pub fn cpu_ns(&self) -> Option<u64> {
        let tid = self.shared.tid.load(Ordering::SeqCst);
        let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
        text.split_whitespace().next()?.parse().ok()
    }

    /// What the capture has written so far (as of its last flush, which happens
    /// whenever the link goes idle), if there is one.
    pub fn pcap_stats(&self) -> Option<PcapStats> {
        self.shared
            .pcap
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Why the emulator thread stopped, if it failed.
    pub fn error(&self) -> Option<String> {
        self.shared
            .error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Each direction draws its own loss and jitter from the run's seed, so the two
/// directions are independent but both reproducible.
fn dir_seed(seed: u64, direction: usize) -> u64 {
    if direction == 0 {
        seed
    } else {
        seed ^ 0x5bd1_e995
    }
}

/// Adds the outage drops `link` counted since the last call to `dir`.
fn sync_outage(link: &Link<Vec<u8>>, seen: &mut u64, dir: &mut DirCounters) {
    let now = link.stats().dropped_outage.packets;
    dir.dropped_outage += now - *seen;
    *seen = now;
}

fn new_hist() -> Option<Histogram<u64>> {
    Histogram::new(3).ok()
}

struct Worker {
    tuns: [Tun; 2],
    links: [Link<Vec<u8>>; 2],
    /// Each model's `dropped_outage` packets already added to the counters: the model
    /// counts packets lost in flight when an outage begins on its own.
    outage_seen: [u64; 2],
    pcap: Option<PcapWriter>,
    /// The capture's stop has been published.
    pcap_stop_seen: bool,
    shared: Arc<Shared>,
    /// Unix time minus CLOCK_MONOTONIC, for pcap timestamps.
    unix_offset_ns: u64,
    /// When the case's models took over (time zero of its queue series), and the next
    /// sample's time.
    case_origin_ns: u64,
    next_sample_ns: u64,
}

impl Worker {
    fn new(
        a: Tun,
        b: Tun,
        up: LinkParams,
        down: LinkParams,
        seed: u64,
        pcap: Option<PcapWriter>,
        shared: Arc<Shared>,
    ) -> Worker {
        let unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let origin = monotonic_ns();
        Worker {
            tuns: [a, b],
            links: [
                Link::new(up, dir_seed(seed, 0)).with_origin(origin),
                Link::new(down, dir_seed(seed, 1)).with_origin(origin),
            ],
            outage_seen: [0; 2],
            pcap,
            pcap_stop_seen: false,
            shared,
            unix_offset_ns: unix.saturating_sub(monotonic_ns()),
            case_origin_ns: origin,
            next_sample_ns: origin + SAMPLE_NS,
        }
    }

    fn run(&mut self) -> io::Result<()> {
        // Timed sleeps end as close to their deadline as the kernel can manage.
        // SAFETY: PR_SET_TIMERSLACK only affects the calling thread.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
        let mut buf = vec![0u8; 65_536];
        let mut last_activity = 0u64;
        while !self.shared.stop.load(Ordering::Relaxed) {
            self.apply_pending();
            let moved = self.ingest(&mut buf)? + self.release()?;
            let now = monotonic_ns();
            if moved > 0 {
                last_activity = now;
            }
            if now >= self.next_sample_ns {
                self.sample(now);
            }
            if now.saturating_sub(last_activity) < BUSY_NS {
                // Yield, not spin: a host thread woken by the packet we just delivered
                // is often placed on this CPU, and must not wait for our time slice.
                std::thread::yield_now();
                continue;
            }
            // `next_event`: also an outage beginning, so its losses are counted then.
            let next = [self.links[0].next_event(), self.links[1].next_event()]
                .into_iter()
                .flatten()
                .min();
            let wait = match next {
                Some(t) if t <= now + SPIN_NS => {
                    // Close to the deadline, spin; further out, let co-located host
                    // threads run (a yield costs a few microseconds when they do).
                    if t > now + TIGHT_NS {
                        std::thread::yield_now();
                    } else {
                        std::hint::spin_loop();
                    }
                    continue;
                }
                Some(t) => t - now - SPIN_NS,
                None => IDLE_NS,
            };
            // Woken for the queue's samples too, on their clock.
            let wait = match &self.shared.times {
                Some(_) => wait.min(self.next_sample_ns.saturating_sub(now).max(1)),
                None => wait,
            };
            // About to sleep: a good moment to make the capture durable.
            self.flush_pcap();
            self.wait(wait)?;
        }
        self.flush_pcap();
        Ok(())
    }

    /// Closes the current interval of the queue series.
    fn sample(&mut self, now: u64) {
        self.next_sample_ns = now - (now - self.case_origin_ns) % SAMPLE_NS + SAMPLE_NS;
        let Some(times) = &self.shared.times else {
            return;
        };
        let queue = [0, 1].map(|i| {
            let l = &self.links[i];
            (l.queued_packets(now), l.queued_bytes(now))
        });
        times
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .sample(now - self.case_origin_ns, queue);
    }

    /// Records in the case's times what happened to a packet.
    fn time(&self, what: impl FnOnce(&mut LinkTimes)) {
        if let Some(t) = &self.shared.times {
            what(&mut t.lock().unwrap_or_else(|p| p.into_inner()));
        }
    }

    fn flush_pcap(&mut self) {
        if let Some(p) = &mut self.pcap {
            p.flush();
            *self.shared.pcap.lock().unwrap_or_else(|p| p.into_inner()) = Some(p.stats().clone());
        }
    }

    fn apply_pending(&mut self) {
        let Some((up, down, seed)) = self
            .shared
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        else {
            return;
        };
        let mut c = self
            .shared
            .counters
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let origin = monotonic_ns();
        for (i, params) in [up, down].into_iter().enumerate() {
            let dir = if i == 0 { &mut c.up } else { &mut c.down };
            // Whatever the old model still holds is lost with it.
            sync_outage(&self.links[i], &mut self.outage_seen[i], dir);
            dir.dropped_reset += self.links[i].held_packets() as u64;
            self.links[i] = Link::new(params, dir_seed(seed, i)).with_origin(origin);
            self.outage_seen[i] = 0;
        }
        drop(c);
        self.case_origin_ns = origin;
        self.next_sample_ns = origin + SAMPLE_NS;
        if let Some(t) = &self.shared.times {
            *t.lock().unwrap_or_else(|p| p.into_inner()) = LinkTimes::default();
        }
    }

    /// Reads every waiting packet into the models; returns how many.
    fn ingest(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut moved = 0;
        for i in 0..2 {
            while let Some(n) = self.tuns[i].recv(buf)? {
                moved += 1;
                let now = monotonic_ns();
                let pkt = buf[..n].to_vec();
                let key = flow_key(&pkt);
                let path = self.links[i]
                    .params()
                    .paths
                    .is_some()
                    .then(|| path_of(&key, i));
                let verdict = self.links[i].enqueue_on_path(pkt, now, path);
                let mut c = self
                    .shared
                    .counters
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                let dir = if i == 0 { &mut c.up } else { &mut c.down };
                dir.offered_packets += 1;
                dir.offered_bytes += n as u64;
                match verdict {
                    Ok(()) => {}
                    Err(DropCause::Queue) => dir.dropped_queue += 1,
                    Err(DropCause::Loss) => dir.dropped_loss += 1,
                    Err(DropCause::Mtu) => dir.dropped_mtu += 1,
                    // Counted from the model's stats, with the losses in flight.
                    Err(DropCause::Outage) => {}
                }
                let outage = dir.dropped_outage;
                sync_outage(&self.links[i], &mut self.outage_seen[i], dir);
                let dropped = u64::from(matches!(
                    verdict,
                    Err(DropCause::Queue | DropCause::Loss | DropCause::Mtu)
                )) + dir.dropped_outage
                    - outage;
                if dir.flows.len() < MAX_FLOWS || dir.flows.contains_key(&key) {
                    let f = dir.flows.entry(key).or_default();
                    f.0 += 1;
                    f.1 += n as u64;
                }
                drop(c);
                if dropped > 0 {
                    self.time(|t| t.dropped(i, dropped));
                }
            }
        }
        Ok(moved)
    }

    /// Delivers every due packet; returns how many.
    fn release(&mut self) -> io::Result<usize> {
        let mut moved = 0;
        for i in 0..2 {
            let now = monotonic_ns();
            while let Some(r) = self.links[i].dequeue_ready(now) {
                moved += 1;
                let out = &self.tuns[1 - i];
                // The release error is how late we start handing the packet over; the
                // TUN write itself is the "wire" into the host, like a NIC's DMA.
                let late = monotonic_ns().saturating_sub(r.due_ns);
                let sent = out.send(&r.packet);
                let at = monotonic_ns();
                // A capture that stops (its size limit, a full disk) never stops the link.
                if let Some(p) = &mut self.pcap {
                    if !p.write(at + self.unix_offset_ns, &r.packet) && !self.pcap_stop_seen {
                        self.pcap_stop_seen = true;
                        *self.shared.pcap.lock().unwrap_or_else(|p| p.into_inner()) =
                            Some(p.stats().clone());
                    }
                }
                let mut c = self
                    .shared
                    .counters
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                if let Some(h) = &mut c.release_error {
                    let _ = h.record(late.max(1));
                }
                let dir = if i == 0 { &mut c.up } else { &mut c.down };
                let len = r.packet.len() as u64;
                let ok = sent.is_ok();
                if ok {
                    dir.delivered_packets += 1;
                    dir.delivered_bytes += len;
                } else {
                    dir.dropped_tx += 1;
                }
                drop(c);
                // From the TUN read to the TUN write: what the packet's receiver saw.
                let delay = at.saturating_sub(r.arrived_ns);
                self.time(|t| match ok {
                    true => t.delivered(i, len, delay),
                    false => t.dropped(i, 1),
                });
            }
            // An outage that began may have taken packets without releasing any.
            if self.links[i].stats().dropped_outage.packets != self.outage_seen[i] {
                let mut c = self
                    .shared
                    .counters
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                let dir = if i == 0 { &mut c.up } else { &mut c.down };
                let before = dir.dropped_outage;
                sync_outage(&self.links[i], &mut self.outage_seen[i], dir);
                let lost = dir.dropped_outage - before;
                drop(c);
                self.time(|t| t.dropped(i, lost));
            }
        }
        Ok(moved)
    }

    /// Sleeps up to `ns`, returning early when either TUN device has a packet.
    fn wait(&self, ns: u64) -> io::Result<()> {
        let mut fds = [
            libc::pollfd {
                fd: self.tuns[0].fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.tuns[1].fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let ts = libc::timespec {
            tv_sec: (ns / 1_000_000_000) as _,
            tv_nsec: (ns % 1_000_000_000) as _,
        };
        // SAFETY: two valid pollfds, a valid timespec, no signal mask change.
        let r = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, &ts, std::ptr::null()) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        Ok(())
    }
}
