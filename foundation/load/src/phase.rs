//! Arrival phases, as Tsung's `<arrivalphase>` has them, and the schedule of intended
//! session starts they imply.
//!
//! A phase lasts `duration` and brings new sessions at `rate` per second, at most
//! `max_users` of them. Arrivals are a Poisson process by default (exponential gaps, as
//! Tsung draws them) or evenly spaced. The schedule is a pure function of the phases and
//! a seed, so every generator worker computes the same one and takes its share (user `i`
//! goes to worker `i mod W`): the intended start of every session is fixed before the run,
//! which is what makes the timing open-loop (a latency counts from the intended start, so
//! a stalled server or generator shows in the percentiles instead of slowing the arrivals
//! down).

use std::time::Duration;

/// How gaps between arrivals are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    /// Exponential gaps with mean 1/rate (Tsung's behaviour).
    Poisson,
    /// Gaps of exactly 1/rate.
    Uniform,
}

/// One arrival phase.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Phase {
    pub duration: Duration,
    /// New sessions per second.
    pub rate: f64,
    /// At most this many arrivals in the phase (Tsung's `maxnumber`).
    pub max_users: Option<u64>,
}

/// Why phases cannot make a schedule.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PhaseError {
    #[error("no arrival phase given")]
    Empty,
    #[error("phase {0}: the arrival rate must be a number of sessions per second, 0 or more")]
    Rate(usize),
    #[error("the phases bring no session (every rate is 0, or every phase too short)")]
    NoSession,
    #[error("phase {0}: the duration must be more than 0")]
    Duration(usize),
    #[error("the phases bring {0} sessions, more than the {1} a run may have")]
    TooMany(u64, u64),
}

/// Most sessions one run may schedule: the schedule is held in memory (8 bytes a session).
pub const MAX_SESSIONS: u64 = 50_000_000;

/// Consecutive arrivals that go to the same two workers. In blocks rather than one by
/// one, the arrivals of any short stretch of time meet two generator processes (and two
/// server workers, see [`Schedule::worker_of`]), so that few processes do the logins at a
/// time and batch their events while the rest sleep holding their sessions: at 100,000
/// sessions this cut the CPU per login of both sides by a quarter (docs/performance.md).
pub const SHARE_BLOCK: usize = 1024;

/// Intended start times of every session, in arrival order.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// Offsets from the run's start, nanoseconds, non-decreasing.
    starts: Vec<u64>,
    /// Index of the first session of each phase, and the phase's start offset.
    phase_starts: Vec<(usize, Duration)>,
    end: Duration,
}

/// splitmix64 (Steele, Lea, Flood 2014): a seeded stream of uniform 64-bit values, enough
/// for exponential gaps; reproducible on every worker without a shared generator.
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Schedule {
    /// The schedule of `phases`, one after the other; `seed` draws Poisson gaps.
    pub fn new(phases: &[Phase], arrivals: Arrivals, seed: u64) -> Result<Schedule, PhaseError> {
        if phases.is_empty() {
            return Err(PhaseError::Empty);
        }
        let mut starts = Vec::new();
        let mut phase_starts = Vec::new();
        let mut state = seed;
        let mut begin = 0u64;
        for (k, p) in phases.iter().enumerate() {
            if !(p.rate.is_finite() && p.rate >= 0.0) {
                return Err(PhaseError::Rate(k + 1));
            }
            if p.duration.is_zero() {
                return Err(PhaseError::Duration(k + 1));
            }
            let len = p.duration.as_nanos() as u64;
            let expected = (p.rate * p.duration.as_secs_f64()).ceil() as u64;
            let expected = p.max_users.map_or(expected, |m| m.min(expected));
            if starts.len() as u64 + expected > MAX_SESSIONS {
                return Err(PhaseError::TooMany(
                    starts.len() as u64 + expected,
                    MAX_SESSIONS,
                ));
            }
            phase_starts.push((starts.len(), Duration::from_nanos(begin)));
            if p.rate == 0.0 {
                // A hold phase: time passes, nobody arrives.
                begin += len;
                continue;
            }
            let gap = 1e9 / p.rate;
            let mut t = 0f64;
            let mut n = 0u64;
            loop {
                // The first arrival comes at the phase's start (Tsung launches one at once).
                if n > 0 {
                    t += match arrivals {
                        Arrivals::Uniform => gap,
                        Arrivals::Poisson => {
                            // 53 random bits in (0, 1]: never ln(0).
                            let u =
                                ((splitmix64(&mut state) >> 11) + 1) as f64 / (1u64 << 53) as f64;
                            -gap * u.ln()
                        }
                    };
                }
                if t >= len as f64 || p.max_users.is_some_and(|m| n >= m) {
                    break;
                }
                starts.push(begin + t as u64);
                n += 1;
            }
            begin += len;
        }
        if starts.is_empty() {
            return Err(PhaseError::NoSession);
        }
        Ok(Schedule {
            starts,
            phase_starts,
            end: Duration::from_nanos(begin),
        })
    }

    /// Sessions scheduled in all.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// When session `i` is meant to start, from the run's start.
    pub fn start(&self, i: usize) -> Duration {
        Duration::from_nanos(self.starts[i])
    }

    /// The end of the last phase: no arrival is scheduled after it.
    pub fn end(&self) -> Duration {
        self.end
    }

    /// The phase (numbered from 1) session `i` arrives in.
    pub fn phase_of(&self, i: usize) -> usize {
        self.phase_starts.partition_point(|&(first, _)| first <= i)
    }

    /// Worker `w` of `workers`'s share, in order: the sessions `i` with
    /// [`Schedule::worker_of`]`(i, workers) == w`.
    pub fn share(&self, w: usize, workers: usize) -> impl Iterator<Item = usize> + '_ {
        let workers = workers.max(1);
        let n = self.starts.len();
        // Only the blocks that hold some of `w`'s sessions are walked.
        (0..n.div_ceil(SHARE_BLOCK))
            .filter(move |b| b % workers == w || (b + 1) % workers == w)
            .flat_map(move |b| {
                (b * SHARE_BLOCK..((b + 1) * SHARE_BLOCK).min(n))
                    .filter(move |&i| Self::worker_of(i, workers) == w)
            })
    }

    /// The worker of `workers` that session `i` belongs to. Sessions come in blocks of
    /// [`SHARE_BLOCK`] consecutive arrivals: block `b`'s even sessions go to worker `b`,
    /// its odd ones to worker `b + 1` (modulo `workers`), so that partners (`2k`, `2k + 1`)
    /// are on two workers whenever there are two.
    pub fn worker_of(i: usize, workers: usize) -> usize {
        (i / SHARE_BLOCK + (i & 1)) % workers.max(1)
    }

    /// Most sessions alive at once if each stays `stay` from its intended start: the
    /// largest number of intended starts within any window of `stay`.
    pub fn peak(&self, stay: Duration) -> usize {
        let stay = stay.as_nanos() as u64;
        let mut first = 0;
        let mut peak = 0;
        for (i, &s) in self.starts.iter().enumerate() {
            while self.starts[first] + stay <= s {
                first += 1;
            }
            peak = peak.max(i + 1 - first);
        }
        peak
    }

    /// Sessions that arrive in the first `d` of the run.
    pub fn arrived_by(&self, d: Duration) -> usize {
        let t = d.as_nanos() as u64;
        self.starts.partition_point(|&s| s <= t)
    }
}

/// Reads phases written `DURATION@RATE[:max=N]`, joined by `+`: `30s@1000/s+10m@0` is
/// 30 s of 1,000 arrivals a second, then 10 minutes with none. RATE is sessions per
/// second, or per minute or hour with `/min`, `/h`; `:max=N` caps the phase's arrivals
/// (Tsung's `maxnumber`). Errors name the phase and what is wrong with it.
pub fn parse_phases(text: &str) -> Result<Vec<Phase>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("no phase: write DURATION@RATE, e.g. 30s@1000/s".into());
    }
    text.split('+')
        .enumerate()
        .map(|(k, p)| {
            let p = p.trim();
            let bad = |why: String| {
                format!("phase {} ({p:?}): {why} (expected DURATION@RATE[:max=N], e.g. 30s@1000/s:max=20000)", k + 1)
            };
            let (d, rest) = p.split_once('@').ok_or_else(|| bad("no '@' between duration and rate".into()))?;
            let duration = wirebench_duration(d.trim()).map_err(bad)?;
            let (rate, max) = match rest.split_once(':') {
                Some((r, m)) => {
                    let n = m
                        .trim()
                        .strip_prefix("max=")
                        .ok_or_else(|| bad(format!("unknown option {m:?}")))?;
                    let n: u64 = n.trim().replace('_', "").parse().map_err(|_| bad(format!("max={n} is not a whole number")))?;
                    (r, Some(n))
                }
                None => (rest, None),
            };
            let rate = rate.trim();
            let (num, per) = match rate.split_once('/') {
                Some((n, "s")) => (n, 1.0),
                Some((n, "min")) => (n, 60.0),
                Some((n, "h")) => (n, 3600.0),
                Some((_, u)) => return Err(bad(format!("unknown rate unit /{u} (use /s, /min or /h)"))),
                None => (rate, 1.0),
            };
            let n: f64 = num.trim().parse().map_err(|_| bad(format!("rate {num:?} is not a number")))?;
            if !(n.is_finite() && n >= 0.0) {
                return Err(bad(format!("rate {num} must be 0 or more")));
            }
            Ok(Phase {
                duration,
                rate: n / per,
                max_users: max,
            })
        })
        .collect()
}

/// Durations as the rest of wirebench writes them: `500ms`, `30s`, `10m`, `1h`, `1.5s`.
pub(crate) fn wirebench_duration(s: &str) -> Result<Duration, String> {
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n: f64 = n
        .parse()
        .map_err(|_| format!("duration {s:?} is not a number with a unit"))?;
    let secs = match unit {
        "ms" => n / 1e3,
        "s" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        "" => return Err(format!("duration {s:?} needs a unit (ms, s, m, h)")),
        u => {
            return Err(format!(
                "unknown duration unit {u:?} in {s:?} (ms, s, m, h)"
            ));
        }
    };
    if !(secs.is_finite() && secs > 0.0) {
        return Err(format!("duration {s:?} must be more than 0"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn phase(secs: u64, rate: f64, max: Option<u64>) -> Phase {
        Phase {
            duration: Duration::from_secs(secs),
            rate,
            max_users: max,
        }
    }

    #[test]
    fn uniform_phases_follow_each_other() {
        let s = Schedule::new(
            &[phase(2, 10.0, None), phase(1, 100.0, Some(30))],
            Arrivals::Uniform,
            0,
        )
        .unwrap();
        // 20 in the first two seconds (t = 0, 0.1, ... 1.9), then 30 capped by max_users.
        assert_eq!(s.len(), 50);
        assert_eq!(s.start(1), Duration::from_millis(100));
        assert_eq!(s.start(20), Duration::from_secs(2));
        assert_eq!(s.phase_of(19), 1);
        assert_eq!(s.phase_of(20), 2);
        assert_eq!(s.end(), Duration::from_secs(3));
        assert_eq!(s.arrived_by(Duration::from_millis(250)), 3);
        // Block 0's odd sessions are worker 1's, its even ones worker 0's.
        let mine: Vec<usize> = s.share(1, 4).take(3).collect();
        assert_eq!(mine, vec![1, 3, 5]);
        assert_eq!(s.share(0, 4).take(3).collect::<Vec<_>>(), vec![0, 2, 4]);
        assert_eq!(s.share(0, 1).count(), 50);
    }

    #[test]
    fn poisson_arrivals_average_the_rate_and_repeat_with_the_seed() {
        let p = [phase(100, 1000.0, None)];
        let a = Schedule::new(&p, Arrivals::Poisson, 7).unwrap();
        let b = Schedule::new(&p, Arrivals::Poisson, 7).unwrap();
        assert_eq!(a.starts, b.starts);
        // 100,000 expected; a Poisson count's sd is ~316.
        assert!((a.len() as i64 - 100_000).abs() < 2_000, "{}", a.len());
        let c = Schedule::new(&p, Arrivals::Poisson, 8).unwrap();
        assert_ne!(a.starts, c.starts);
    }

    #[test]
    fn bad_phases_are_named() {
        assert_eq!(
            Schedule::new(&[], Arrivals::Uniform, 0).unwrap_err(),
            PhaseError::Empty
        );
        let e = Schedule::new(
            &[phase(1, 1.0, None), phase(1, -1.0, None)],
            Arrivals::Uniform,
            0,
        );
        assert_eq!(e.unwrap_err(), PhaseError::Rate(2));
        let e = Schedule::new(&[phase(0, 1.0, None)], Arrivals::Uniform, 0);
        assert_eq!(e.unwrap_err(), PhaseError::Duration(1));
        let e = Schedule::new(&[phase(1000, 1e6, None)], Arrivals::Uniform, 0);
        assert!(matches!(e.unwrap_err(), PhaseError::TooMany(..)));
    }

    #[test]
    fn phases_parse_and_errors_name_the_phase() {
        let p = parse_phases("30s@1000/s + 10m@0+1h@60/min:max=50").unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p[0], phase(30, 1000.0, None));
        assert_eq!(p[1].duration, Duration::from_secs(600));
        assert_eq!(p[1].rate, 0.0);
        assert_eq!(p[2], phase(3600, 1.0, Some(50)));
        for (bad, needle) in [
            ("", "no phase"),
            ("30s", "phase 1"),
            ("30s@10/s+5@1", "phase 2"),
            ("30s@10/d", "/d"),
            ("30s@ten", "not a number"),
            ("30s@10:maxi=3", "unknown option"),
            ("0s@10", "more than 0"),
        ] {
            let e = parse_phases(bad).unwrap_err();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }

    #[test]
    fn hold_phases_bring_nobody_and_peak_counts_overlap() {
        let s = Schedule::new(
            &[phase(2, 10.0, None), phase(5, 0.0, None)],
            Arrivals::Uniform,
            0,
        )
        .unwrap();
        assert_eq!(s.len(), 20);
        assert_eq!(s.end(), Duration::from_secs(7));
        assert_eq!(s.peak(Duration::from_secs(10)), 20);
        assert_eq!(s.peak(Duration::from_millis(250)), 3);
        assert_eq!(
            Schedule::new(&[phase(1, 0.0, None)], Arrivals::Uniform, 0).unwrap_err(),
            PhaseError::NoSession
        );
    }

    proptest! {
        #[test]
        fn any_text_parses_or_is_refused_without_panicking(t in ".{0,40}") {
            let _ = parse_phases(&t);
        }

        #[test]
        fn starts_are_ordered_within_their_phase_and_shares_partition(
            secs in 1u64..5, rate in 0.5f64..500.0, max in proptest::option::of(0u64..300),
            workers in 1usize..7, poisson: bool, seed: u64,
        ) {
            let how = if poisson { Arrivals::Poisson } else { Arrivals::Uniform };
            let s = Schedule::new(&[phase(secs, rate, max), phase(1, rate, None)], how, seed).unwrap();
            for i in 1..s.len() {
                prop_assert!(s.start(i - 1) <= s.start(i));
            }
            for i in 0..s.len() {
                let end = if s.phase_of(i) == 1 { Duration::from_secs(secs) } else { s.end() };
                prop_assert!(s.start(i) < end);
            }
            if let Some(m) = max {
                prop_assert!(s.len() as u64 <= m + (rate.ceil() as u64) * 3 + 16);
            }
            let mut all: Vec<usize> = (0..workers).flat_map(|w| s.share(w, workers)).collect();
            all.sort_unstable();
            prop_assert_eq!(all, (0..s.len()).collect::<Vec<_>>());
        }
    }
}
