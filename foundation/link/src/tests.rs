//! The link model's laws, checked in virtual time.

use std::collections::VecDeque;
use std::sync::Arc;

use proptest::prelude::*;

use crate::sim::simulate;
use crate::*;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

static ZEROS: [u8; 65_536] = [0; 65_536];

/// A test packet: an identity and a length, without allocating the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pkt {
    id: u32,
    len: usize,
}

impl AsRef<[u8]> for Pkt {
    fn as_ref(&self) -> &[u8] {
        &ZEROS[..self.len]
    }
}

fn pkt(id: u32, len: usize) -> Pkt {
    Pkt { id, len }
}

fn rate(bps: u64) -> LinkParams {
    LinkParams {
        rate_bps: Some(bps),
        queue_packets: None,
        ..LinkParams::default()
    }
}

/// Everything still held, in delivery order; in-flight losses are counted on the way.
fn drain<P: AsRef<[u8]>>(link: &mut Link<P>) -> Vec<Released<P>> {
    let mut out = Vec::new();
    while let Some(t) = link.next_event() {
        while let Some(r) = link.dequeue_ready(t) {
            out.push(r);
        }
    }
    out
}

fn ceil_div(a: u128, b: u128) -> u64 {
    a.div_ceil(b) as u64
}

// ---- per-connection paths ----

fn paths(spec: &str) -> Option<Arc<PathRtts>> {
    Some(Arc::new(PathRtts::parse(spec).unwrap()))
}

#[test]
fn a_flow_is_held_half_its_path_round_trip_on_top_of_the_delay() {
    let params = LinkParams {
        delay_ns: 10 * MS,
        paths: paths("fixed:40ms"),
        ..LinkParams::default()
    };
    let mut link = Link::new(params, 1);
    link.enqueue_on_path(pkt(1, 100), 0, Some(7)).unwrap();
    // Without a flow key (not IPv4, or a caller that does not know it) only the delay.
    link.enqueue_on_path(pkt(2, 100), 0, None).unwrap();
    link.enqueue(pkt(3, 100), 0).unwrap();
    let out = drain(&mut link);
    let due: Vec<(u32, u64)> = out.iter().map(|r| (r.packet.id, r.due_ns)).collect();
    assert_eq!(due, vec![(2, 10 * MS), (3, 10 * MS), (1, 30 * MS)]);
}

#[test]
fn flows_keep_their_order_without_waiting_for_each_other() {
    // Jitter without reorder: each flow's packets stay in order, and a short path's
    // packets are not held behind a long path's that left the serializer earlier.
    let params = LinkParams {
        rate_bps: Some(100_000_000),
        jitter_ns: 2 * MS,
        paths: paths("uniform:1ms..400ms"),
        queue_packets: None,
        ..LinkParams::default()
    };
    let mut link = Link::new(params.clone(), 3);
    let p = PathRtts::parse("uniform:1ms..400ms").unwrap();
    let keys: Vec<u64> = (0..20u16)
        .map(|i| path_key(6, ([198, 18, 0, 1], 40_000 + i)))
        .collect();
    let mut t = 0;
    for id in 0..2000u32 {
        let flow = id as usize % keys.len();
        link.enqueue_on_path(pkt(id, 200), t, Some(keys[flow]))
            .unwrap();
        t += 20_000;
    }
    let out = drain(&mut link);
    assert_eq!(out.len(), 2000);
    let mut last = vec![None; keys.len()];
    for r in &out {
        let flow = r.packet.id as usize % keys.len();
        let sent = u64::from(r.packet.id) * 20_000;
        let floor = sent + p.rtt_ns(keys[flow]) / 2;
        assert!(r.due_ns >= floor, "packet {} early", r.packet.id);
        assert!(last[flow] < Some(r.packet.id), "flow {flow} reordered");
        last[flow] = Some(r.packet.id);
    }
    // The shortest path's packets overtake the longest's: no head-of-line blocking
    // across flows.
    let (short, _) = keys
        .iter()
        .enumerate()
        .min_by_key(|(_, k)| p.rtt_ns(**k))
        .unwrap();
    let (long, _) = keys
        .iter()
        .enumerate()
        .max_by_key(|(_, k)| p.rtt_ns(**k))
        .unwrap();
    let pos = |flow: usize| {
        out.iter()
            .position(|r| r.packet.id as usize % keys.len() == flow)
            .unwrap()
    };
    assert!(pos(short) < pos(long));
    let first_short = out
        .iter()
        .find(|r| r.packet.id as usize % keys.len() == short)
        .unwrap();
    assert!(
        first_short.due_ns < p.rtt_ns(keys[short]) / 2 + 5 * MS,
        "the short path waited: {}",
        first_short.due_ns
    );
}

// ---- rate and delay ----

#[test]
fn back_to_back_packets_depart_exactly_bytes_times_8_over_rate_apart() {
    let mut link = Link::new(rate(1_000_000_000), 1);
    for i in 0..100 {
        link.enqueue(pkt(i, 1500), 0).unwrap();
    }
    let dues: Vec<u64> = drain(&mut link).iter().map(|r| r.due_ns).collect();
    let expected: Vec<u64> = (1..=100).map(|i| i * 12_000).collect();
    assert_eq!(dues, expected);

    // 100 B at 2400 bit/s is 333,333,333.33 ns: each departure is the exact cumulative
    // time rounded up, never a rounded step added up.
    let mut link = Link::new(rate(2400), 1);
    for i in 0..10 {
        link.enqueue(pkt(i, 100), 0).unwrap();
    }
    let dues: Vec<u64> = drain(&mut link).iter().map(|r| r.due_ns).collect();
    let expected: Vec<u64> = (1..=10u128)
        .map(|i| ceil_div(i * 100 * 8 * 1_000_000_000, 2400))
        .collect();
    assert_eq!(dues, expected);
    assert_eq!(dues[2], S);
}

#[test]
fn delay_is_added_after_serialization_and_an_idle_link_starts_at_arrival() {
    let mut p = rate(2400);
    p.delay_ns = 500 * MS;
    let mut link = Link::new(p, 1);
    link.enqueue(pkt(0, 300), 7).unwrap();
    assert_eq!(link.next_wakeup(), Some(7 + S + 500 * MS));
    // Arrives after the first has left: its own serialization starts at arrival.
    link.enqueue(pkt(1, 30), 10 * S).unwrap();
    let dues: Vec<u64> = drain(&mut link).iter().map(|r| r.due_ns).collect();
    assert_eq!(dues, [7 + S + 500 * MS, 10 * S + 100 * MS + 500 * MS]);
    assert_eq!(serialization_ns(300, 2400), S);
    assert_eq!(serialization_ns(1, 3), 2_666_666_667);
    assert_eq!(serialization_ns(1, 0), u64::MAX);
}

#[test]
fn a_released_packet_carries_its_arrival_so_its_one_way_delay_includes_the_queue() {
    let mut p = rate(2400);
    p.delay_ns = 500 * MS;
    let mut link = Link::new(p, 1);
    link.enqueue(pkt(0, 300), 0).unwrap();
    link.enqueue(pkt(1, 300), 200 * MS).unwrap();
    let out = drain(&mut link);
    let delays: Vec<u64> = out.iter().map(|r| r.due_ns - r.arrived_ns).collect();
    // The second waited 800 ms for the first's serialization, then took its own 1 s.
    assert_eq!(delays, [S + 500 * MS, 800 * MS + S + 500 * MS]);
    assert_eq!(out[1].arrived_ns, 200 * MS);
}

#[test]
fn unlimited_rate_only_delays() {
    let p = LinkParams {
        delay_ns: 10 * MS,
        ..LinkParams::default()
    };
    let mut link = Link::new(p, 1);
    for i in 0..5 {
        link.enqueue(pkt(i, 1500), 3).unwrap();
        assert_eq!(link.queued_bytes(3), 0);
    }
    assert!(drain(&mut link).iter().all(|r| r.due_ns == 3 + 10 * MS));
}

#[test]
fn a_million_full_packets_at_2400_bits_end_exactly_on_time() {
    let mut link = Link::new(rate(2400), 1);
    for i in 0..1_000_000u32 {
        link.enqueue(pkt(i, 1500), 0).unwrap();
    }
    let out = drain(&mut link);
    assert_eq!(out.len(), 1_000_000);
    assert_eq!(out[out.len() - 1].due_ns, 1_000_000 * 1500 * 8 / 2400 * S);
}

#[test]
fn no_drift_when_the_rate_does_not_divide_the_packet_time() {
    // 1 byte at 2400 bit/s is 3,333,333.33 ns; every departure must be the exact
    // cumulative time rounded up, the millionth included.
    let mut link = Link::new(rate(2400), 1);
    for i in 0..1_000_000u32 {
        link.enqueue(pkt(i, 1), 0).unwrap();
    }
    for (i, r) in (1..).zip(drain(&mut link)) {
        assert_eq!(
            r.due_ns,
            ceil_div(i * 8 * 1_000_000_000, 2400),
            "packet {i}"
        );
    }
    assert_eq!(link.stats().delivered.packets, 1_000_000);
}

// ---- jitter and order ----

#[test]
fn jitter_without_reorder_keeps_order_and_never_shortens_the_delay() {
    let p = LinkParams {
        rate_bps: Some(1_000_000),
        delay_ns: 10 * MS,
        jitter_ns: 50 * MS,
        queue_packets: None,
        ..LinkParams::default()
    };
    let arrivals = (0..2000u32).map(|i| (u64::from(i) * MS, pkt(i, 100)));
    let out = simulate(p, 9, arrivals).unwrap();
    assert_eq!(out.delivered.len(), 2000);
    for (i, d) in out.delivered.iter().enumerate() {
        assert_eq!(d.index, i);
        // 100 B at 1 Mbit/s is 0.8 ms, always done before the next arrival.
        assert!(d.due_ns >= i as u64 * MS + 800_000 + 10 * MS);
    }
    // Jitter did vary the delay.
    let spread: Vec<u64> = out
        .delivered
        .iter()
        .map(|d| d.due_ns - d.index as u64 * MS)
        .collect();
    assert!(spread.iter().max() > spread.iter().min());
}

#[test]
fn jitter_with_reorder_can_reorder_and_stays_within_its_bounds() {
    let p = LinkParams {
        delay_ns: 10 * MS,
        jitter_ns: 50 * MS,
        reorder: true,
        ..LinkParams::default()
    };
    let arrivals = (0..2000u32).map(|i| (u64::from(i) * MS, pkt(i, 100)));
    let out = simulate(p, 9, arrivals).unwrap();
    let inversions = out
        .delivered
        .windows(2)
        .filter(|w| w[1].index < w[0].index)
        .count();
    assert!(inversions > 100, "{inversions}");
    for d in &out.delivered {
        let sent = d.index as u64 * MS;
        assert!((sent + 10 * MS..=sent + 60 * MS).contains(&d.due_ns));
    }
    assert!(out.delivered.windows(2).all(|w| w[0].due_ns <= w[1].due_ns));
}

#[test]
fn jitter_is_uniform_over_its_closed_range() {
    let p = LinkParams {
        jitter_ns: 3,
        reorder: true,
        ..LinkParams::default()
    };
    let out = simulate(p, 5, (0..4000u32).map(|i| (u64::from(i) * 10, pkt(i, 1)))).unwrap();
    let mut counts = [0; 4];
    for d in &out.delivered {
        counts[(d.due_ns - d.index as u64 * 10) as usize] += 1;
    }
    assert!(
        counts.iter().all(|&c| (850..1150).contains(&c)),
        "{counts:?}"
    );
}

// ---- queue ----

#[test]
fn packet_bound_drops_the_tail_and_frees_as_packets_finish() {
    // 8000 bit/s: 100 B take 100 ms.
    let p = LinkParams {
        rate_bps: Some(8000),
        queue_packets: Some(3),
        ..LinkParams::default()
    };
    let mut link = Link::new(p, 1);
    let results: Vec<_> = (0..10).map(|i| link.enqueue(pkt(i, 100), 0)).collect();
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 3);
    assert!(results[3..].iter().all(|r| *r == Err(DropCause::Queue)));
    assert_eq!(link.queued_packets(0), 3);
    assert_eq!(link.queued_bytes(0), 300);
    // The first finishes at exactly 100 ms, making room for one.
    assert_eq!(link.queued_packets(100 * MS - 1), 3);
    assert_eq!(link.queued_bytes(100 * MS), 200);
    assert_eq!(link.enqueue(pkt(10, 100), 100 * MS), Ok(()));
    assert_eq!(link.enqueue(pkt(11, 100), 100 * MS), Err(DropCause::Queue));
    let s = link.stats();
    assert_eq!(
        s.dropped_queue,
        Counter {
            packets: 8,
            bytes: 800
        }
    );
    assert_eq!(s.max_queue_packets, 3);
    assert_eq!(s.max_queue_bytes, 300);
    assert!(s.is_conserved());
    let dues: Vec<u64> = drain(&mut link).iter().map(|r| r.due_ns).collect();
    assert_eq!(dues, [100 * MS, 200 * MS, 300 * MS, 400 * MS]);
}

#[test]
fn byte_bound_counts_the_packet_being_offered() {
    let p = LinkParams {
        rate_bps: Some(8000),
        queue_bytes: Some(250),
        queue_packets: None,
        ..LinkParams::default()
    };
    let mut link = Link::new(p, 1);
    assert_eq!(link.enqueue(pkt(0, 100), 0), Ok(()));
    assert_eq!(link.enqueue(pkt(1, 100), 0), Ok(()));
    assert_eq!(link.enqueue(pkt(2, 100), 0), Err(DropCause::Queue));
    // A smaller one still fits.
    assert_eq!(link.enqueue(pkt(3, 50), 0), Ok(()));
    assert_eq!(link.queued_bytes(0), 250);
    assert_eq!(link.stats().max_queue_bytes, 250);
    assert_eq!(link.stats().dropped_by(DropCause::Queue).packets, 1);
}

#[test]
fn packets_in_propagation_do_not_fill_the_queue() {
    let p = LinkParams {
        rate_bps: Some(8000),
        delay_ns: 10 * S,
        queue_packets: Some(1),
        ..LinkParams::default()
    };
    let mut link = Link::new(p, 1);
    for i in 0..50 {
        assert_eq!(link.enqueue(pkt(i, 100), u64::from(i) * 100 * MS), Ok(()));
    }
    assert_eq!(link.held_packets(), 50);
}

// ---- loss ----

fn loss_pattern(loss: Loss, seed: u64, n: u32) -> Vec<bool> {
    let p = LinkParams {
        loss,
        ..LinkParams::default()
    };
    let mut link = Link::new(p, seed);
    (0..n)
        .map(|i| {
            let lost = link.enqueue(pkt(i, 100), 0) == Err(DropCause::Loss);
            while link.dequeue_ready(0).is_some() {}
            lost
        })
        .collect()
}

#[test]
fn bernoulli_loss_rate_is_within_statistical_bounds() {
    let n = 100_000;
    for (p, seed) in [(0.01, 1), (0.1, 2), (0.5, 3)] {
        let lost = loss_pattern(Loss::Bernoulli { p }, seed, n)
            .iter()
            .filter(|&&l| l)
            .count() as f64;
        let sigma = (p * (1.0 - p) / f64::from(n)).sqrt();
        let rate = lost / f64::from(n);
        assert!((rate - p).abs() < 5.0 * sigma, "p={p} measured {rate}");
    }
    assert!(
        loss_pattern(Loss::Bernoulli { p: 0.0 }, 1, 1000)
            .iter()
            .all(|l| !l)
    );
    assert!(
        loss_pattern(Loss::Bernoulli { p: 1.0 }, 1, 1000)
            .iter()
            .all(|l| *l)
    );
}

#[test]
fn loss_is_reproducible_from_the_seed() {
    let loss = Loss::Bernoulli { p: 0.2 };
    assert_eq!(
        loss_pattern(loss, 42, 100_000),
        loss_pattern(loss, 42, 100_000)
    );
    assert_ne!(
        loss_pattern(loss, 42, 100_000),
        loss_pattern(loss, 43, 100_000)
    );
    // Jitter draws from its own generator, so it leaves the loss sequence alone.
    let with_jitter = LinkParams {
        loss,
        jitter_ns: 5 * MS,
        ..LinkParams::default()
    };
    let mut link = Link::new(with_jitter, 42);
    let lost: Vec<bool> = (0..1000)
        .map(|i| link.enqueue(pkt(i, 100), 0) == Err(DropCause::Loss))
        .collect();
    assert_eq!(lost, loss_pattern(loss, 42, 1000));
}

#[test]
fn the_loss_sequence_of_a_seed_never_changes() {
    // Golden bits: a changed generator or seeding would silently change every
    // recorded run's losses. An independent transcription (Python, from the reference
    // C code) gives the same bits.
    let bits: String = loss_pattern(Loss::Bernoulli { p: 0.5 }, 42, 64)
        .iter()
        .map(|&l| if l { '1' } else { '0' })
        .collect();
    assert_eq!(bits, GOLDEN_SEED_42);
}

const GOLDEN_SEED_42: &str = "1100000000010100000011101110011000000110000001000001101100000010";

#[test]
fn gilbert_elliott_average_loss_matches_the_stationary_formula() {
    let cases = [
        (0.01, 0.3, 0.0, 0.5),
        (0.05, 0.5, 0.01, 0.9),
        (0.1, 0.1, 0.0, 1.0),
    ];
    let n = 1_000_000;
    for (i, &(p_gb, p_bg, loss_good, loss_bad)) in cases.iter().enumerate() {
        let loss = Loss::GilbertElliott {
            p_gb,
            p_bg,
            loss_good,
            loss_bad,
        };
        let expected = loss.mean_loss();
        let bad = p_gb / (p_gb + p_bg);
        assert!((expected - ((1.0 - bad) * loss_good + bad * loss_bad)).abs() < 1e-15);
        let pattern = loss_pattern(loss, i as u64, n);
        let rate = pattern.iter().filter(|&&l| l).count() as f64 / f64::from(n);
        // Bursty losses vary more than independent ones; 10 % is still many sigmas.
        assert!(
            (rate - expected).abs() < 0.1 * expected,
            "{loss:?}: expected {expected}, measured {rate}"
        );
    }
    // Bursts: with no loss in Good, losses cluster, so a loss follows a loss far more
    // often than the average rate.
    let loss = Loss::GilbertElliott {
        p_gb: 0.01,
        p_bg: 0.3,
        loss_good: 0.0,
        loss_bad: 0.5,
    };
    let pattern = loss_pattern(loss, 7, n);
    let after_loss = pattern.windows(2).filter(|w| w[0]).count() as f64;
    let both = pattern.windows(2).filter(|w| w[0] && w[1]).count() as f64;
    assert!(both / after_loss > 5.0 * loss.mean_loss());
}

// ---- MTU ----

#[test]
fn packets_above_the_mtu_are_dropped_and_counted() {
    let p = LinkParams {
        mtu: 1500,
        loss: Loss::Bernoulli { p: 1.0 },
        ..LinkParams::default()
    };
    let mut link = Link::new(p, 1);
    assert_eq!(link.enqueue(pkt(0, 1501), 0), Err(DropCause::Mtu));
    // The MTU check comes before loss.
    assert_eq!(link.enqueue(pkt(1, 1500), 0), Err(DropCause::Loss));
    let s = link.stats();
    assert_eq!(
        s.dropped_mtu,
        Counter {
            packets: 1,
            bytes: 1501
        }
    );
    assert_eq!(
        s.offered,
        Counter {
            packets: 2,
            bytes: 3001
        }
    );
    assert!(s.is_conserved());
}

// ---- traces ----

fn trace_params(ms: &[u64]) -> LinkParams {
    LinkParams {
        trace: Some(Arc::new(Trace::from_millis(ms).unwrap())),
        // Ignored when a trace is set.
        rate_bps: Some(1),
        queue_packets: None,
        mtu: 9000,
        ..LinkParams::default()
    }
}

#[test]
fn trace_delivery_times_on_a_hand_computed_trace() {
    // Opportunities at 1, 3, 3, 5 ms, then every 5 ms again: 6, 8, 8, 10, 11, ...
    let mut p = trace_params(&[1, 3, 3, 5]);
    p.delay_ns = 10 * MS;
    let arrivals = vec![
        // Idle: the first opportunity after 0, at 1 ms, carries all 1500 B.
        (0, pkt(0, 1500)),
        // Queued behind A, which left nothing at 1 ms: next opportunity, 3 ms; leaves
        // 1400 B of it.
        (MS / 2, pkt(1, 100)),
        // Queued (2 < 3 ms): 1400 B at 3 ms, the other 100 B from the second 3 ms one.
        (2 * MS, pkt(2, 1500)),
        // Arrives exactly at 3 ms: those opportunities are gone (Mahimahi burns them
        // before enqueueing), so 5 ms.
        (3 * MS, pkt(3, 100)),
        // Idle at 5.5 ms: 1500 B at 6 ms, 1500 B at 8 ms.
        (5 * MS + MS / 2, pkt(4, 3000)),
        // Queued behind it with nothing left: the second 8 ms opportunity.
        (7 * MS, pkt(5, 1)),
        // Idle at 9 ms: 10 ms; several small packets share one opportunity.
        (9 * MS, pkt(6, 700)),
        (9 * MS, pkt(7, 800)),
        (9 * MS, pkt(8, 1)),
    ];
    let out = simulate(p, 1, arrivals).unwrap();
    let got: Vec<(usize, u64)> = out
        .delivered
        .iter()
        .map(|d| (d.index, d.due_ns - 10 * MS))
        .collect();
    assert_eq!(
        got,
        [
            (0, MS),
            (1, 3 * MS),
            (2, 3 * MS),
            (3, 5 * MS),
            (4, 8 * MS),
            (5, 8 * MS),
            (6, 10 * MS),
            (7, 10 * MS),
            (8, 11 * MS),
        ]
    );
}

#[test]
fn trace_origin_shifts_the_schedule_and_queue_counts_unfinished_packets() {
    let p = trace_params(&[10]);
    let mut link = Link::new(p, 1).with_origin(1_000 * MS);
    link.enqueue(pkt(0, 1500), 995 * MS).unwrap();
    link.enqueue(pkt(1, 1500), 995 * MS).unwrap();
    assert_eq!(link.queued_packets(995 * MS), 2);
    assert_eq!(link.next_wakeup(), Some(1_010 * MS));
    assert_eq!(link.queued_bytes(1_010 * MS), 1500);
    let dues: Vec<u64> = drain(&mut link).iter().map(|r| r.due_ns).collect();
    assert_eq!(dues, [1_010 * MS, 1_020 * MS]);
}

/// A line-by-line port of Mahimahi's `LinkQueue::rationalize` and `read_packet`
/// (opportunities of 1500 bytes), returning each packet's departure time.
fn mahimahi_departures(trace_ms: &[u64], arrivals: &[(u64, usize)]) -> Vec<u64> {
    let n = trace_ms.len();
    let period = trace_ms[n - 1] * MS;
    let mut next = 0;
    let mut base = 0;
    let mut queue: VecDeque<(usize, i64)> = VecDeque::new();
    let mut in_transit: Option<(usize, i64)> = None;
    let mut out = vec![u64::MAX; arrivals.len()];
    let mut rationalize = |now: u64,
                           next: &mut usize,
                           base: &mut u64,
                           queue: &mut VecDeque<(usize, i64)>,
                           in_transit: &mut Option<(usize, i64)>| {
        while *base + trace_ms[*next] * MS <= now {
            let this_delivery = *base + trace_ms[*next] * MS;
            let mut left = 1500i64;
            *next = (*next + 1) % n;
            if *next == 0 {
                *base += period;
            }
            while left > 0 {
                if in_transit.is_none() {
                    *in_transit = queue.pop_front();
                    if in_transit.is_none() {
                        break;
                    }
                }
                let Some((id, bytes)) = in_transit.as_mut() else {
                    break;
                };
                *bytes -= left;
                left = 0;
                if *bytes <= 0 {
                    left += -*bytes;
                    out[*id] = this_delivery;
                    *in_transit = None;
                }
            }
        }
    };
    for (i, &(at, len)) in arrivals.iter().enumerate() {
        rationalize(at, &mut next, &mut base, &mut queue, &mut in_transit);
        queue.push_back((i, len as i64));
    }
    while !queue.is_empty() || in_transit.is_some() {
        let t = base + trace_ms[next] * MS;
        rationalize(t, &mut next, &mut base, &mut queue, &mut in_transit);
    }
    out
}

fn trace_strategy() -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(0u64..20, 1..12).prop_map(|mut v| {
        v.sort_unstable();
        if let Some(last) = v.last_mut() {
            *last = (*last).max(1);
        }
        v
    })
}

proptest! {
    #[test]
    fn trace_departures_match_mahimahi(
        trace_ms in trace_strategy(),
        gaps in prop::collection::vec((0u64..4 * MS, 0usize..4000), 1..60),
    ) {
        let mut t = 0;
        let arrivals: Vec<(u64, usize)> = gaps
            .iter()
            .map(|&(gap, len)| {
                // Some arrivals land exactly on millisecond opportunity times.
                t += if gap % 3 == 0 { gap / MS * MS } else { gap };
                (t, len)
            })
            .collect();
        let expected = mahimahi_departures(&trace_ms, &arrivals);
        let out = simulate(
            trace_params(&trace_ms),
            1,
            arrivals.iter().enumerate().map(|(i, &(at, len))| (at, pkt(i as u32, len))),
        )
        .unwrap();
        let mut got = vec![u64::MAX; arrivals.len()];
        for d in &out.delivered {
            got[d.index] = d.due_ns;
        }
        prop_assert_eq!(got, expected);
    }
}

// ---- outages ----

/// `params` with the outages given as `(start, duration)` pairs.
fn with_outages(mut params: LinkParams, windows: &[(u64, u64)]) -> LinkParams {
    params.outages = windows.iter().map(|&(s, d)| Outage::once(s, d)).collect();
    params
}

#[test]
fn an_outage_drops_every_packet_offered_exactly_within_its_window() {
    // Down on [1000 + 30 s, 1000 + 40 s): from the origin, half-open.
    let origin = 1000;
    let p = with_outages(LinkParams::default(), &[(30 * S, 10 * S)]);
    let mut link = Link::new(p, 1).with_origin(origin);
    assert_eq!(link.origin(), origin);
    let at = |t: u64| origin + t;
    let offers = [
        (0, Ok(())),
        (30 * S - 1, Ok(())),
        (30 * S, Err(DropCause::Outage)),
        (35 * S, Err(DropCause::Outage)),
        (40 * S - 1, Err(DropCause::Outage)),
        (40 * S, Ok(())),
        (100 * S, Ok(())),
    ];
    for (i, &(t, want)) in offers.iter().enumerate() {
        assert_eq!(link.is_down(at(t)), want.is_err(), "at {t}");
        assert_eq!(link.enqueue(pkt(i as u32, 1500), at(t)), want, "at {t}");
        assert!(link.stats().is_conserved());
    }
    // Before the origin the schedule has not started.
    assert!(
        !Link::<Pkt>::new(with_outages(LinkParams::default(), &[(0, S)]), 1)
            .with_origin(S)
            .is_down(S - 1)
    );
    let s = link.stats();
    assert_eq!(
        s.dropped_outage,
        Counter {
            packets: 3,
            bytes: 4500
        }
    );
    assert_eq!(s.dropped_by(DropCause::Outage), s.dropped_outage);
    assert_eq!(s.dropped().packets, 3);
    assert_eq!(DropCause::Outage.to_string(), "outage");
    let out = drain(&mut link);
    assert_eq!(
        out.iter().map(|r| r.packet.id).collect::<Vec<_>>(),
        [0, 1, 5, 6]
    );
    assert!(link.stats().is_conserved());
}

#[test]
fn an_outage_loses_what_is_queued_serializing_or_propagating() {
    // 300 B take 1 s at 2400 bit/s; 500 ms of propagation; down on [10 s, 12 s).
    let mut p = rate(2400);
    p.delay_ns = 500 * MS;
    let p = with_outages(p, &[(10 * S, 2 * S)]);
    // Due 1 ns before the outage begins: delivered. Due exactly when it begins: lost
    // (the link must be up from offer to arrival, both included), though accepted.
    let mut link = Link::new(p.clone(), 1);
    link.enqueue(pkt(0, 300), 8 * S + 500 * MS).unwrap();
    assert_eq!(link.next_wakeup(), None);
    assert_eq!(link.next_event(), Some(10 * S));
    assert!(drain(&mut link).is_empty());
    assert_eq!(link.stats().dropped_outage.packets, 1);
    let mut link = Link::new(p, 1);
    link.enqueue(pkt(0, 300), 8 * S + 500 * MS - 1).unwrap();
    assert_eq!(link.next_wakeup(), Some(10 * S - 1));
    assert_eq!(link.next_event(), Some(10 * S - 1));
    // Queued when the outage begins (behind packet 0, then behind each other), then
    // serializing: lost.
    link.enqueue(pkt(1, 300), 8 * S + 500 * MS).unwrap();
    assert_eq!(link.queued_packets(9 * S), 2);
    link.enqueue(pkt(2, 300), 9 * S + 600 * MS).unwrap();
    link.enqueue(pkt(3, 300), 9 * S + 700 * MS).unwrap();
    assert_eq!(link.queued_packets(9 * S + 700 * MS), 3);
    assert_eq!(link.held_packets(), 4);
    assert_eq!(link.next_wakeup(), Some(10 * S - 1));
    assert_eq!(link.next_event(), Some(10 * S - 1));
    let r = link.dequeue_ready(10 * S - 1).unwrap();
    assert_eq!((r.packet.id, r.due_ns), (0, 10 * S - 1));
    // Nothing more will be delivered; the losses happen at 10 s.
    assert_eq!(link.next_wakeup(), None);
    assert_eq!(link.next_event(), Some(10 * S));
    let s = link.stats();
    assert_eq!((s.held.packets, s.dropped_outage.packets), (3, 0));
    assert!(s.is_conserved());
    // The outage empties the queue at once, even before the link is called again.
    assert_eq!(link.queued_bytes(10 * S), 0);
    assert_eq!(link.queued_packets(10 * S - 1), 3);
    assert!(link.dequeue_ready(10 * S).is_none());
    assert_eq!(
        (link.queued_packets(10 * S), link.queued_bytes(10 * S)),
        (0, 0)
    );
    let s = link.stats();
    assert_eq!(s.held, Counter::default());
    assert_eq!(
        s.dropped_outage,
        Counter {
            packets: 3,
            bytes: 900
        }
    );
    assert!(s.is_conserved());
    assert_eq!((link.next_event(), link.held_packets()), (None, 0));
    // Offered during the outage: dropped, and the serializer stays free.
    assert_eq!(link.enqueue(pkt(4, 300), 11 * S), Err(DropCause::Outage));
    // After it the serializer is free: the lost packets' booking (until 12 s) is gone.
    link.enqueue(pkt(5, 300), 12 * S).unwrap();
    link.enqueue(pkt(6, 300), 12 * S).unwrap();
    let dues: Vec<(u32, u64)> = drain(&mut link)
        .iter()
        .map(|r| (r.packet.id, r.due_ns))
        .collect();
    assert_eq!(dues, [(5, 13 * S + 500 * MS), (6, 14 * S + 500 * MS)]);
    let s = link.stats();
    assert_eq!(s.dropped_outage.packets, 4);
    assert_eq!(s.delivered.packets, 3);
    assert!(s.is_conserved());
}

#[test]
fn losses_are_counted_by_the_first_call_after_the_outage_begins() {
    // A long queue booked far past the outage: all of it is lost at its start, counted
    // by an enqueue after the outage as well as by a dequeue.
    let p = with_outages(rate(8000), &[(S, S)]);
    let mut link = Link::new(p, 1);
    for i in 0..20 {
        link.enqueue(pkt(i, 100), 0).unwrap(); // 100 ms each: 0.1 s .. 2 s
    }
    assert_eq!(link.stats().held.packets, 20);
    // 9 leave before 1 s, the 10th is due exactly at 1 s: lost.
    let mut link2 = link.clone();
    link.enqueue(pkt(20, 100), 3 * S).unwrap();
    let s = link.stats();
    assert_eq!((s.held.packets, s.dropped_outage.packets), (10, 11));
    assert!(s.is_conserved());
    let ids: Vec<u32> = drain(&mut link).iter().map(|r| r.packet.id).collect();
    assert_eq!(ids, [0, 1, 2, 3, 4, 5, 6, 7, 8, 20]);
    // The new packet started at once: the serializer was free.
    assert_eq!(link.stats().delivered.packets, 10);
    let mut out = Vec::new();
    while let Some(t) = link2.next_event() {
        while let Some(r) = link2.dequeue_ready(t) {
            out.push(r.due_ns);
        }
    }
    assert_eq!(out, (1..10).map(|i| i * 100 * MS).collect::<Vec<_>>());
    assert_eq!(link2.stats().dropped_outage.packets, 11);
    assert!(link2.stats().is_conserved());
    link2.enqueue(pkt(21, 100), 3 * S).unwrap();
    assert_eq!(drain(&mut link2)[0].due_ns, 3 * S + 100 * MS);
}

#[test]
fn jitter_without_reorder_keeps_order_across_a_loss() {
    // A packet held back behind one that is lost is lost too (it cannot overtake it),
    // and a later packet does not wait for the lost one's delivery time.
    let mut p = LinkParams {
        delay_ns: 100 * MS,
        jitter_ns: 900 * MS,
        ..LinkParams::default()
    };
    p.outages = vec![Outage::once(S, S)];
    for seed in 0..50 {
        let arrivals: Vec<(u64, Pkt)> = (0..40u32)
            .map(|i| (u64::from(i) * 50 * MS, pkt(i, 100)))
            .collect();
        let out = simulate(p.clone(), seed, arrivals).unwrap();
        let lost: Vec<usize> = out
            .dropped
            .iter()
            .filter(|d| d.at_ns == S && d.index < 20)
            .map(|d| d.index)
            .collect();
        // Lost packets form a tail of those that arrived before 1 s.
        if let Some(&first) = lost.first() {
            assert_eq!(lost, (first..20).collect::<Vec<_>>(), "seed {seed}");
        }
        let ids: Vec<usize> = out.delivered.iter().map(|d| d.index).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "seed {seed}: {ids:?}");
        // After the outage (2 s) delivery is at most delay + jitter after arrival.
        for d in out.delivered.iter().filter(|d| d.index >= 40) {
            assert!(d.due_ns <= d.index as u64 * 50 * MS + S);
        }
        assert!(out.stats.is_conserved());
        assert_eq!(out.stats.dropped_outage.packets as usize, out.dropped.len());
    }
}

#[test]
fn a_trace_link_comes_back_on_the_trace_schedule() {
    // One opportunity every 10 ms; down on [25 ms, 40 ms).
    let p = with_outages(trace_params(&[10]), &[(25 * MS, 15 * MS)]);
    let arrivals = vec![
        (0, pkt(0, 1500)),       // 10 ms
        (0, pkt(1, 1500)),       // 20 ms
        (0, pkt(2, 1500)),       // would leave at 30 ms: lost
        (0, pkt(3, 1500)),       // would leave at 40 ms: lost
        (30 * MS, pkt(4, 1500)), // down
        (41 * MS, pkt(5, 1500)), // 50 ms: not 50 + the lost packets' opportunities
    ];
    let out = simulate(p, 1, arrivals).unwrap();
    let got: Vec<(usize, u64)> = out.delivered.iter().map(|d| (d.index, d.due_ns)).collect();
    assert_eq!(got, [(0, 10 * MS), (1, 20 * MS), (5, 50 * MS)]);
    let dropped: Vec<(usize, u64, DropCause)> = out
        .dropped
        .iter()
        .map(|d| (d.index, d.at_ns, d.cause))
        .collect();
    assert_eq!(
        dropped,
        [
            (2, 25 * MS, DropCause::Outage),
            (3, 25 * MS, DropCause::Outage),
            (4, 30 * MS, DropCause::Outage)
        ]
    );
}

#[test]
fn periodic_outages_and_several_windows() {
    // Down on [1 s, 1.1 s), [2 s, 2.1 s), ... and on [2.05 s, 2.5 s).
    let p = LinkParams {
        outages: vec![
            Outage::periodic(S, 100 * MS, S),
            Outage::once(2 * S + 50 * MS, 450 * MS),
        ],
        ..LinkParams::default()
    };
    let arrivals: Vec<(u64, Pkt)> = (0..400u32)
        .map(|i| (u64::from(i) * 10 * MS, pkt(i, 10)))
        .collect();
    let out = simulate(p, 1, arrivals).unwrap();
    let down =
        |t: u64| (t >= S && t % S < 100 * MS) || (2 * S + 50 * MS..2 * S + 500 * MS).contains(&t);
    for d in &out.dropped {
        assert!(down(d.at_ns), "{d:?}");
        assert_eq!(d.cause, DropCause::Outage);
    }
    for d in &out.delivered {
        assert!(!down(d.due_ns));
    }
    // 3 periodic windows of 10 arrivals, plus 2.1 s .. 2.49 s.
    assert_eq!(out.dropped.len(), 3 * 10 + 40);
    assert!(out.stats.is_conserved());
}

#[test]
fn invalid_outages_are_rejected() {
    let bad = |o: Outage| {
        Link::<Pkt>::try_new(
            LinkParams {
                outages: vec![o],
                ..LinkParams::default()
            },
            0,
        )
        .err()
    };
    assert!(matches!(
        bad(Outage::once(S, 0)),
        Some(ParamsError::Outage { .. })
    ));
    assert!(matches!(
        bad(Outage::periodic(S, S, 0)),
        Some(ParamsError::Outage { .. })
    ));
    assert!(bad(Outage::once(0, 1)).is_none());
    let spec = LinkSpec::parse("2400bit/500ms,outage=30s+10s").unwrap();
    assert_eq!(spec.to_params().outages, [Outage::once(30 * S, 10 * S)]);
}

fn outages_strategy() -> impl Strategy<Value = Vec<Outage>> {
    let once = (0u64..300 * MS, 1u64..100 * MS).prop_map(|(s, d)| Outage::once(s, d));
    let periodic = (1u64..100 * MS, 1u64..200 * MS, 0u64..300 * MS)
        .prop_map(|(d, extra, from)| Outage::periodic(d + extra, d, from));
    prop::collection::vec(prop_oneof![3 => once, 1 => periodic], 0..3)
}

/// Links slow enough for queues to build up across outages.
fn outage_link_strategy() -> impl Strategy<Value = LinkParams> {
    let loss = prop_oneof![
        3 => Just(Loss::None),
        1 => (0.0..0.5f64).prop_map(|p| Loss::Bernoulli { p }),
    ];
    (
        prop_oneof![1 => Just(None), 4 => (20_000u64..5_000_000).prop_map(Some)],
        prop_oneof![Just(0u64), 0u64..50 * MS],
        prop_oneof![3 => Just(0u64), 1 => 0u64..20 * MS],
        any::<bool>(),
        loss,
        prop::option::of(1usize..60),
        prop::option::of(trace_strategy()),
    )
        .prop_map(
            |(rate_bps, delay_ns, jitter_ns, reorder, loss, qp, trace)| LinkParams {
                rate_bps,
                delay_ns,
                jitter_ns,
                reorder,
                loss,
                queue_packets: qp,
                trace: trace.map(|t| Arc::new(Trace::from_millis(&t).unwrap())),
                ..LinkParams::default()
            },
        )
}

proptest! {
    #[test]
    fn outages_drop_exactly_what_their_windows_touch(
        mut params in outage_link_strategy(),
        outages in outages_strategy(),
        seed in any::<u64>(),
        gaps in prop::collection::vec((0u64..5 * MS, 0usize..2000), 1..150),
    ) {
        params.outages = outages;
        let mut t = 0;
        let arrivals: Vec<(u64, Pkt)> = gaps
            .iter()
            .enumerate()
            .map(|(i, &(gap, len))| {
                t += gap;
                (t, pkt(i as u32, len))
            })
            .collect();
        let probe = Link::<Pkt>::new(params.clone(), seed);
        let out = simulate(params.clone(), seed, arrivals.clone()).unwrap();
        prop_assert!(out.stats.is_conserved());
        prop_assert_eq!(out.stats.held, Counter::default());
        prop_assert_eq!(
            out.stats.offered.packets as usize,
            out.delivered.len() + out.dropped.len()
        );
        let outage_drops = out.dropped.iter().filter(|d| d.cause == DropCause::Outage).count();
        prop_assert_eq!(out.stats.dropped_outage.packets as usize, outage_drops);
        // Delivered: the link was up from arrival to delivery, both included.
        for d in &out.delivered {
            let at = arrivals[d.index].0;
            prop_assert!(!probe.is_down(at));
            prop_assert!(probe.next_outage_after(at).is_none_or(|s| s > d.due_ns));
        }
        for d in &out.dropped {
            let at = arrivals[d.index].0;
            if d.cause == DropCause::Outage {
                if d.at_ns == at {
                    // Offered while down.
                    prop_assert!(probe.is_down(at));
                } else {
                    // Accepted, then lost when the next outage began.
                    prop_assert!(!probe.is_down(at));
                    prop_assert_eq!(probe.next_outage_after(at), Some(d.at_ns));
                }
            } else {
                prop_assert!(!probe.is_down(at));
            }
        }
        // Until the first outage, the link behaves exactly as without outages.
        let first = probe.next_outage_after(0).filter(|_| !probe.is_down(0)).unwrap_or(0);
        let plain = simulate(LinkParams { outages: vec![], ..params.clone() }, seed, arrivals.clone())
            .unwrap();
        let before = |o: &sim::Outcome<Pkt>| -> Vec<(usize, u64)> {
            o.delivered.iter().filter(|d| d.due_ns < first).map(|d| (d.index, d.due_ns)).collect()
        };
        prop_assert_eq!(before(&out), before(&plain));
        // After the last outage of a deterministic link, the link is as good as new: its
        // deliveries are those of a fresh link offered only the later packets.
        if params.outages.iter().all(|o| o.every_ns.is_none())
            && matches!(params.loss, Loss::None)
            && params.jitter_ns == 0
            && !params.outages.is_empty()
        {
            let end = params.outages.iter().map(|o| o.start_ns + o.duration_ns).max().unwrap_or(0);
            let later: Vec<(u64, Pkt)> = arrivals.iter().copied().filter(|a| a.0 >= end).collect();
            let fresh = simulate(LinkParams { outages: vec![], ..params.clone() }, seed, later).unwrap();
            let after: Vec<(u32, u64)> = out
                .delivered
                .iter()
                .filter(|d| arrivals[d.index].0 >= end)
                .map(|d| (d.packet.id, d.due_ns))
                .collect();
            let expected: Vec<(u32, u64)> =
                fresh.delivered.iter().map(|d| (d.packet.id, d.due_ns)).collect();
            prop_assert_eq!(after, expected);
        }
    }
}

// ---- conservation, next_wakeup, queue bound under arbitrary use ----

#[derive(Debug, Clone)]
enum Op {
    Enqueue { after: u64, len: usize },
    Dequeue { after: u64 },
    Wakeup,
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u64..20 * MS, 0usize..3000).prop_map(|(after, len)| Op::Enqueue { after, len }),
        2 => (0u64..50 * MS).prop_map(|after| Op::Dequeue { after }),
        1 => Just(Op::Wakeup),
    ]
}

/// Arbitrary parameters, with outages sometimes.
fn params_with_outages_strategy() -> impl Strategy<Value = LinkParams> {
    (params_strategy(), outages_strategy()).prop_map(|(p, outages)| LinkParams { outages, ..p })
}

fn params_strategy() -> impl Strategy<Value = LinkParams> {
    let loss = prop_oneof![
        Just(Loss::None),
        (0.0..=1.0f64).prop_map(|p| Loss::Bernoulli { p }),
        (0.0..=1.0f64, 0.0..=1.0f64, 0.0..=1.0f64, 0.0..=1.0f64).prop_map(
            |(p_gb, p_bg, loss_good, loss_bad)| Loss::GilbertElliott {
                p_gb,
                p_bg,
                loss_good,
                loss_bad
            }
        ),
    ];
    (
        prop::option::of(1u64..100_000_000),
        0u64..100 * MS,
        prop_oneof![Just(0u64), 0u64..100 * MS],
        any::<bool>(),
        loss,
        prop::option::of(1u64..20_000),
        prop::option::of(1usize..20),
        1u32..3000,
        prop::option::of(trace_strategy()),
    )
        .prop_map(
            |(rate_bps, delay_ns, jitter_ns, reorder, loss, qb, qp, mtu, trace)| LinkParams {
                outages: Vec::new(),
                paths: None,
                rate_bps,
                delay_ns,
                jitter_ns,
                reorder,
                loss,
                queue_bytes: qb,
                queue_packets: qp,
                mtu,
                trace: trace.map(|t| Arc::new(Trace::from_millis(&t).unwrap())),
            },
        )
}

proptest! {
    #[test]
    fn conservation_queue_bound_and_next_wakeup_hold_under_any_use(
        params in params_with_outages_strategy(),
        seed in any::<u64>(),
        ops in prop::collection::vec(op_strategy(), 0..200),
    ) {
        let mut link = Link::new(params.clone(), seed);
        let mut now = 0u64;
        let mut released_seq: Vec<u32> = Vec::new();
        let mut id = 0;
        let mut last_release = 0;
        for op in ops {
            match op {
                Op::Enqueue { after, len } => {
                    now += after;
                    let _ = link.enqueue(pkt(id, len), now);
                    id += 1;
                }
                Op::Dequeue { after } => {
                    now += after;
                    while let Some(r) = link.dequeue_ready(now) {
                        prop_assert!(r.due_ns <= now);
                        prop_assert!(r.due_ns >= last_release);
                        last_release = r.due_ns;
                        released_seq.push(r.packet.id);
                    }
                    // Nothing due is left behind.
                    prop_assert!(link.next_wakeup().is_none_or(|w| w > now));
                }
                Op::Wakeup => {
                    if let Some(w) = link.next_wakeup() {
                        // Nothing is due before the wake-up time...
                        let mut probe = link.clone();
                        if w > 0 {
                            prop_assert!(probe.dequeue_ready(w - 1).is_none());
                        }
                        // ... and something is at it.
                        let r = probe.dequeue_ready(w);
                        prop_assert_eq!(r.map(|r| r.due_ns), Some(w));
                    }
                }
            }
            let s = link.stats();
            prop_assert!(s.is_conserved(), "{:?}", s);
            prop_assert_eq!(s.held.packets, link.held_packets() as u64);
            if let Some(b) = params.queue_bytes {
                prop_assert!(link.queued_bytes(now) <= b);
                prop_assert!(s.max_queue_bytes <= b);
            }
            if let Some(p) = params.queue_packets {
                prop_assert!(link.queued_packets(now) <= p as u64);
                prop_assert!(s.max_queue_packets <= p as u64);
            }
        }
        for r in drain(&mut link) {
            released_seq.push(r.packet.id);
        }
        let s = link.stats();
        prop_assert!(s.is_conserved());
        prop_assert_eq!(s.held, Counter::default());
        prop_assert_eq!(s.offered.packets, u64::from(id));
        if !params.reorder {
            prop_assert!(released_seq.windows(2).all(|w| w[0] < w[1]), "{:?}", released_seq);
        }
    }

    #[test]
    fn same_seed_same_run(params in params_with_outages_strategy(), seed in any::<u64>()) {
        let arrivals: Vec<(u64, Pkt)> =
            (0..300u32).map(|i| (u64::from(i) * MS / 3, pkt(i, 40 + (i as usize * 37) % 1500))).collect();
        let a = simulate(params.clone(), seed, arrivals.clone()).unwrap();
        let b = simulate(params, seed, arrivals).unwrap();
        prop_assert_eq!(a, b);
    }

    #[test]
    fn rate_law_for_any_rate_and_lengths(
        bps in 1u64..10_000_000_000,
        lens in prop::collection::vec(0usize..9000, 1..50),
        delay in 0u64..S,
    ) {
        let p = LinkParams { rate_bps: Some(bps), delay_ns: delay, mtu: 9000, queue_packets: None, ..LinkParams::default() };
        let out = simulate(p, 0, lens.iter().enumerate().map(|(i, &l)| (0, pkt(i as u32, l)))).unwrap();
        let mut bits = 0u128;
        for (d, &len) in out.delivered.iter().zip(&lens) {
            bits += len as u128 * 8;
            prop_assert_eq!(d.due_ns, ceil_div(bits * 1_000_000_000, u128::from(bps)) + delay);
        }
    }
}

// ---- odds and ends ----

#[test]
fn time_never_goes_backwards() {
    let mut link = Link::new(rate(8000), 1);
    link.enqueue(pkt(0, 100), 10 * S).unwrap();
    // An earlier time is taken as the latest seen.
    link.enqueue(pkt(1, 100), S).unwrap();
    assert_eq!(link.queued_packets(0), 2);
    // But asking for an earlier time releases nothing due later.
    assert!(link.dequeue_ready(S).is_none());
    let dues: Vec<u64> = drain(&mut link).iter().map(|r| r.due_ns).collect();
    assert_eq!(dues, [10 * S + 100 * MS, 10 * S + 200 * MS]);
}

#[test]
fn invalid_params_are_rejected() {
    let bad = |f: fn(&mut LinkParams)| {
        let mut p = LinkParams::default();
        f(&mut p);
        Link::<Pkt>::try_new(p, 0).err()
    };
    assert_eq!(bad(|p| p.rate_bps = Some(0)), Some(ParamsError::ZeroRate));
    assert_eq!(bad(|p| p.mtu = 0), Some(ParamsError::ZeroMtu));
    assert!(matches!(
        bad(|p| p.loss = Loss::Bernoulli { p: 1.5 }),
        Some(ParamsError::Probability { .. })
    ));
    assert!(matches!(
        bad(|p| p.loss = Loss::Bernoulli { p: f64::NAN }),
        Some(ParamsError::Probability { .. })
    ));
    assert!(matches!(
        bad(|p| p.queue_packets = Some(0)),
        Some(ParamsError::ZeroQueue { .. })
    ));
    assert!(bad(|_| {}).is_none());
    assert_eq!(LinkSpec::default().to_params(), LinkParams::default());
}

#[test]
fn simulate_returns_delivery_pairs() {
    let p = LinkSpec::parse("2400bit/500ms").unwrap().to_params();
    let out = simulate(p, 1, vec![(0, vec![0u8; 300]), (0, vec![1u8; 300])]).unwrap();
    assert!(out.dropped.is_empty());
    assert_eq!(
        out.pairs(),
        [
            (S + 500 * MS, vec![0u8; 300]),
            (2 * S + 500 * MS, vec![1u8; 300])
        ]
    );
    let p = LinkSpec::parse("2400bit,mtu=100").unwrap().to_params();
    let out = simulate(p, 1, vec![(5, vec![0u8; 101])]).unwrap();
    assert_eq!(
        out.dropped,
        [sim::Dropped {
            index: 0,
            at_ns: 5,
            cause: DropCause::Mtu
        }]
    );
}
