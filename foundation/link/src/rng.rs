//! The link's pseudo-random numbers: xoshiro256** seeded through SplitMix64.
//!
//! Written out here rather than taken from a crate because a recorded seed must replay
//! the same losses and jitter in every future version of wirebench; a dependency may
//! change its algorithm or its seeding in a minor release. The test vectors below pin
//! both algorithms to their published reference outputs (Blackman and Vigna,
//! <https://prng.di.unimi.it/>).

/// One SplitMix64 step: advances `state` and returns the next output.
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// xoshiro256**: fast, 256 bits of state, passes BigCrush; more than enough for loss
/// and jitter draws.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Xoshiro256 {
    s: [u64; 4],
}

impl Xoshiro256 {
    #[cfg(test)]
    pub(crate) fn from_state(s: [u64; 4]) -> Self {
        Xoshiro256 { s }
    }

    /// The four state words are the next four outputs of `splitmix` (the seeding the
    /// xoshiro authors recommend); SplitMix64 never yields an all-zero state from four
    /// consecutive outputs, so the generator cannot get stuck.
    pub(crate) fn from_splitmix(splitmix: &mut u64) -> Self {
        let s = [
            splitmix64(splitmix),
            splitmix64(splitmix),
            splitmix64(splitmix),
            splitmix64(splitmix),
        ];
        Xoshiro256 { s }
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in `[0, 1)` with 53 bits of precision, so `p = 1.0` always hits and
    /// `p = 0.0` never does.
    pub(crate) fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `[0, max]`, inclusive, without modulo bias (Lemire's multiply-shift
    /// with rejection).
    pub(crate) fn up_to(&mut self, max: u64) -> u64 {
        let Some(n) = max.checked_add(1) else {
            return self.next_u64();
        };
        let mut m = u128::from(self.next_u64()) * u128::from(n);
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = u128::from(self.next_u64()) * u128::from(n);
            }
        }
        (m >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_published_outputs_for_seed_0() {
        let mut s = 0;
        let out: Vec<u64> = (0..4).map(|_| splitmix64(&mut s)).collect();
        assert_eq!(
            out,
            [
                0xe220_a839_7b1d_cdaf,
                0x6e78_9e6a_a1b9_65f4,
                0x06c4_5d18_8009_454f,
                0xf88b_b8a8_724c_81ec
            ]
        );
    }

    #[test]
    fn xoshiro256starstar_matches_the_published_outputs_for_state_1_2_3_4() {
        let mut r = Xoshiro256::from_state([1, 2, 3, 4]);
        let out: Vec<u64> = (0..10).map(|_| r.next_u64()).collect();
        assert_eq!(
            out,
            [
                11520,
                0,
                1509978240,
                1215971899390074240,
                1216172134540287360,
                607988272756665600,
                16172922978634559625,
                8476171486693032832,
                10595114339597558777,
                2904607092377533576,
            ]
        );
    }

    #[test]
    fn up_to_is_inclusive_and_in_range() {
        let mut sm = 7;
        let mut r = Xoshiro256::from_splitmix(&mut sm);
        let mut seen = [false; 4];
        for _ in 0..1000 {
            let v = r.up_to(3);
            assert!(v <= 3);
            seen[v as usize] = true;
        }
        assert_eq!(seen, [true; 4]);
        assert_eq!(r.up_to(0), 0);
        let _ = r.up_to(u64::MAX);
    }

    #[test]
    fn next_f64_is_in_unit_interval() {
        let mut sm = 1;
        let mut r = Xoshiro256::from_splitmix(&mut sm);
        for _ in 0..10_000 {
            let x = r.next_f64();
            assert!((0.0..1.0).contains(&x));
        }
    }
}
