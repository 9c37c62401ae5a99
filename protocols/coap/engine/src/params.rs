//! The transmission parameters of RFC 7252 §4.8, their derived times (§4.8.2), and the
//! seeded random numbers that spread the first retransmission timeout (§4.2).
//!
//! The defaults suit a terrestrial Internet path. On a link whose round trip is longer
//! than ACK_TIMEOUT (2 s) — a 1 s one-way delay is a round trip of 2 s plus the time the
//! bytes take at the link's rate — the first retransmission fires before the ACK of the
//! original can arrive: a spurious retransmission that doubles the load. §4.8.1 allows
//! changing ACK_TIMEOUT where the path is known; [`TransmissionParams::for_round_trip`]
//! picks one above a known round trip.

const SECOND: u64 = 1_000_000_000;

/// Why a set of transmission parameters cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum ParamsError {
    /// ACK_RANDOM_FACTOR below 1 (§4.8: "MUST NOT be decreased below 1.0") or not finite.
    #[error("ACK_RANDOM_FACTOR {0} is not a finite number of at least 1.0 (RFC 7252 §4.8)")]
    RandomFactor(f64),
    /// An ACK_TIMEOUT of 0, or one whose doubling overflows.
    #[error("ACK_TIMEOUT of {0} ns is 0 or too large to double MAX_RETRANSMIT times")]
    AckTimeout(u64),
    /// NSTART 0 would never send.
    #[error("NSTART 0 would never send a request (RFC 7252 §4.7)")]
    Nstart,
    /// MAX_RETRANSMIT over 20 (the doubled timeout would span years).
    #[error("MAX_RETRANSMIT {0} is over 20")]
    MaxRetransmit(u32),
}

/// The CoAP transmission parameters (RFC 7252 §4.8), times in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TransmissionParams {
    /// ACK_TIMEOUT: the shortest first retransmission timeout of a Confirmable message.
    pub ack_timeout_ns: u64,
    /// ACK_RANDOM_FACTOR: the first timeout is drawn from
    /// `[ACK_TIMEOUT, ACK_TIMEOUT * ACK_RANDOM_FACTOR]` so that many clients do not
    /// retransmit in step (§4.2).
    pub ack_random_factor: f64,
    /// MAX_RETRANSMIT: retransmissions of one Confirmable message before giving up.
    pub max_retransmit: u32,
    /// NSTART: outstanding interactions per server (§4.7).
    pub nstart: u32,
    /// MAX_LATENCY (§4.8.2): the longest a datagram is assumed to be in flight; used for
    /// the lifetimes of the deduplication state.
    pub max_latency_ns: u64,
}

impl Default for TransmissionParams {
    /// The values of RFC 7252 §4.8: 2 s, 1.5, 4, 1 (and MAX_LATENCY 100 s, §4.8.2).
    fn default() -> TransmissionParams {
        TransmissionParams {
            ack_timeout_ns: 2 * SECOND,
            ack_random_factor: 1.5,
            max_retransmit: 4,
            nstart: 1,
            max_latency_ns: 100 * SECOND,
        }
    }
}

impl TransmissionParams {
    /// The defaults with ACK_TIMEOUT above a known round trip (§4.8.1): a quarter more
    /// than `round_trip_ns`, so the ACK of an original that was not lost arrives before
    /// the first retransmission even with some jitter; never below the default 2 s, which
    /// §4.8.1 warns against.
    pub fn for_round_trip(round_trip_ns: u64) -> TransmissionParams {
        let default = TransmissionParams::default();
        let with_margin = round_trip_ns.saturating_add(round_trip_ns / 4);
        TransmissionParams {
            ack_timeout_ns: with_margin.max(default.ack_timeout_ns),
            ..default
        }
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), ParamsError> {
        if !self.ack_random_factor.is_finite() || self.ack_random_factor < 1.0 {
            return Err(ParamsError::RandomFactor(self.ack_random_factor));
        }
        if self.max_retransmit > 20 {
            return Err(ParamsError::MaxRetransmit(self.max_retransmit));
        }
        if self.nstart == 0 {
            return Err(ParamsError::Nstart);
        }
        let largest = (self.ack_timeout_ns as f64) * self.ack_random_factor;
        if self.ack_timeout_ns == 0 || largest * f64::from(1u32 << self.max_retransmit) > 1e18 {
            return Err(ParamsError::AckTimeout(self.ack_timeout_ns));
        }
        Ok(())
    }

    /// `ACK_TIMEOUT * ACK_RANDOM_FACTOR * factor`, in ns.
    fn scaled(&self, factor: u64) -> u64 {
        ((self.ack_timeout_ns as f64) * self.ack_random_factor * factor as f64) as u64
    }

    /// MAX_TRANSMIT_SPAN (§4.8.2): first transmission to last retransmission, at most.
    pub fn max_transmit_span_ns(&self) -> u64 {
        self.scaled((1u64 << self.max_retransmit) - 1)
    }

    /// MAX_TRANSMIT_WAIT (§4.8.2): first transmission to giving up, at most.
    pub fn max_transmit_wait_ns(&self) -> u64 {
        self.scaled((1u64 << (self.max_retransmit + 1)) - 1)
    }

    /// PROCESSING_DELAY (§4.8.2): set to ACK_TIMEOUT, as the RFC does.
    pub fn processing_delay_ns(&self) -> u64 {
        self.ack_timeout_ns
    }

    /// EXCHANGE_LIFETIME (§4.8.2): how long a Confirmable message's Message ID may see a
    /// duplicate or an ACK.
    pub fn exchange_lifetime_ns(&self) -> u64 {
        self.max_transmit_span_ns() + 2 * self.max_latency_ns + self.processing_delay_ns()
    }

    /// NON_LIFETIME (§4.8.2): the same for a Non-confirmable message.
    pub fn non_lifetime_ns(&self) -> u64 {
        self.max_transmit_span_ns() + self.max_latency_ns
    }

    /// The first retransmission timeout of a Confirmable message (§4.2): uniform in
    /// `[ACK_TIMEOUT, ACK_TIMEOUT * ACK_RANDOM_FACTOR]`.
    pub fn initial_timeout_ns(&self, rng: &mut Rng) -> u64 {
        let span = ((self.ack_timeout_ns as f64) * (self.ack_random_factor - 1.0)) as u64;
        self.ack_timeout_ns + rng.below(span.saturating_add(1))
    }
}

/// SplitMix64: small, fast, and the same sequence for the same seed, so that a run
/// (its timeouts, Message IDs and tokens) can be repeated.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 if `n` is 0); the modulo bias is below 2^-40 for the spans
    /// used here.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// §4.8.2's table for the defaults: 45 s, 93 s, 247 s, 145 s.
    #[test]
    fn derived_times_of_the_defaults() {
        let p = TransmissionParams::default();
        p.validate().unwrap();
        assert_eq!(p.max_transmit_span_ns(), 45 * SECOND);
        assert_eq!(p.max_transmit_wait_ns(), 93 * SECOND);
        assert_eq!(p.exchange_lifetime_ns(), 247 * SECOND);
        assert_eq!(p.non_lifetime_ns(), 145 * SECOND);
    }

    #[test]
    fn initial_timeout_in_range_and_seeded() {
        let p = TransmissionParams::default();
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let (mut lo, mut hi) = (u64::MAX, 0);
        for _ in 0..10_000 {
            let t = p.initial_timeout_ns(&mut a);
            assert_eq!(t, p.initial_timeout_ns(&mut b));
            assert!((2 * SECOND..=3 * SECOND).contains(&t), "{t}");
            lo = lo.min(t);
            hi = hi.max(t);
        }
        // The draws spread over the range, not one end of it.
        assert!(lo < 2 * SECOND + SECOND / 10 && hi > 3 * SECOND - SECOND / 10);
    }

    #[test]
    fn tuned_for_a_long_round_trip() {
        let p = TransmissionParams::for_round_trip(2_400_000_000);
        assert_eq!(p.ack_timeout_ns, 3_000_000_000);
        assert_eq!(
            TransmissionParams::for_round_trip(1).ack_timeout_ns,
            2 * SECOND
        );
    }

    #[test]
    fn invalid_params() {
        let d = TransmissionParams::default();
        let bad = [
            TransmissionParams {
                ack_random_factor: 0.5,
                ..d
            },
            TransmissionParams {
                ack_random_factor: f64::NAN,
                ..d
            },
            TransmissionParams { nstart: 0, ..d },
            TransmissionParams {
                ack_timeout_ns: 0,
                ..d
            },
            TransmissionParams {
                max_retransmit: 21,
                ..d
            },
        ];
        for p in bad {
            assert!(p.validate().is_err(), "{p:?}");
        }
    }
}
