//! Seeded pseudo-random bytes: the bodies a case sends, the same for the same seed on
//! both ends and in every repeat (a body checked on arrival needs no copy of what was
//! sent, only the seed). Marsaglia's xorshift64 (13, 7, 17): not for keys or nonces,
//! only for payloads a run must be able to reproduce.

/// One step of the generator; `state` must not be 0 (it would stay 0).
pub fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// `len` bytes from the generator, one per step (bits 24-31: the low bits of xorshift
/// are its weakest).
pub fn random_bytes(state: &mut u64, len: usize) -> Vec<u8> {
    (0..len).map(|_| (xorshift(state) >> 24) as u8).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_bytes_and_the_sequence_moves_on() {
        let (mut a, mut b) = (7u64, 7u64);
        let x = random_bytes(&mut a, 100);
        assert_eq!(x, random_bytes(&mut b, 100));
        assert_ne!(x, random_bytes(&mut a, 100));
        // From state 1: 0x2001 after << 13, 0x2041 after >> 7, then << 17.
        let mut s = 1u64;
        assert_eq!(xorshift(&mut s), 0x0000_0000_4082_2041);
    }
}
