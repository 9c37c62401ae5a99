//! A bounded, expiring map keyed by peer and Message ID: the deduplication state of
//! RFC 7252 §4.5 (a Message ID is remembered for EXCHANGE_LIFETIME or NON_LIFETIME) and
//! the client's record of acknowledged messages. Bounded so that a peer flooding new
//! Message IDs costs memory up to the capacity only: past it the oldest entry goes, which
//! at worst lets one late duplicate through as new.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;

pub(crate) type Key = (SocketAddr, u16);

#[derive(Debug)]
pub(crate) struct Recent<V> {
    map: HashMap<Key, (u64, V)>,
    order: VecDeque<(u64, Key)>,
    capacity: usize,
}

impl<V> Recent<V> {
    pub(crate) fn new(capacity: usize) -> Recent<V> {
        Recent {
            map: HashMap::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// Forgets the entries expired at `now`. Entries are inserted with non-decreasing
    /// expiry times when the lifetime is fixed; one inserted out of order is dropped
    /// late, never early.
    pub(crate) fn purge(&mut self, now: u64) {
        while let Some(&(expires, key)) = self.order.front() {
            if expires > now && self.order.len() <= self.capacity {
                break;
            }
            self.order.pop_front();
            if self.map.get(&key).is_some_and(|(e, _)| *e == expires) {
                self.map.remove(&key);
            }
        }
    }

    pub(crate) fn insert(&mut self, now: u64, key: Key, expires: u64, value: V) {
        self.purge(now);
        if self.map.insert(key, (expires, value)).is_none() && self.map.len() > self.capacity {
            // Evict the oldest live entry.
            while let Some((e, k)) = self.order.pop_front() {
                if self.map.get(&k).is_some_and(|(x, _)| *x == e) {
                    self.map.remove(&k);
                    break;
                }
            }
        }
        self.order.push_back((expires, key));
        // Stale order entries of replaced keys are dropped as they reach the front.
        while self.order.len() > 2 * self.capacity {
            let Some((e, k)) = self.order.pop_front() else {
                break;
            };
            if self.map.get(&k).is_some_and(|(x, _)| *x == e) {
                self.map.remove(&k);
            }
        }
    }

    pub(crate) fn get_mut(&mut self, now: u64, key: &Key) -> Option<&mut V> {
        match self.map.get_mut(key) {
            Some((expires, v)) if *expires > now => Some(v),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(mid: u16) -> Key {
        ("127.0.0.1:5683".parse().unwrap(), mid)
    }

    #[test]
    fn expires_and_stays_bounded() {
        let mut r = Recent::new(4);
        for mid in 0..100u16 {
            r.insert(u64::from(mid), key(mid), u64::from(mid) + 1000, mid);
            assert!(r.len() <= 4);
            assert!(r.order.len() <= 8);
        }
        assert_eq!(r.get_mut(100, &key(99)), Some(&mut 99));
        assert_eq!(r.get_mut(100, &key(10)), None);
        assert_eq!(r.get_mut(1099, &key(99)), None);
        r.purge(5000);
        assert_eq!(r.len(), 0);
    }

    #[test]
    fn replaced_key_keeps_its_new_expiry() {
        let mut r = Recent::new(8);
        r.insert(0, key(1), 10, 'a');
        r.insert(5, key(1), 20, 'b');
        r.purge(15);
        assert_eq!(r.get_mut(15, &key(1)), Some(&mut 'b'));
    }
}
