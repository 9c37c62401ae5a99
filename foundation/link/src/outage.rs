//! Scheduled outages: windows of time in which the link is down.
//!
//! An [`Outage`] is one window, `[start, start + duration)` in nanoseconds from the
//! link's origin ([`Link::with_origin`](crate::Link::with_origin)), or a periodic series
//! of such windows `every` nanoseconds apart. A link may have several; it is down
//! whenever any of them is (windows may overlap; the link is down on their union).
//!
//! Windows are half-open: the link is down at `start` and up again at
//! `start + duration`. See the crate docs for what an outage does to packets.

/// One scheduled outage, or a periodic series of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Outage {
    /// When the (first) window begins, in nanoseconds from the link's origin.
    pub start_ns: u64,
    /// How long each window lasts; must be positive.
    pub duration_ns: u64,
    /// `Some(period)`: the window repeats, beginning at `start_ns + k * period` for every
    /// `k >= 0`; the period must be longer than `duration_ns` (or the link would never
    /// come back).
    pub every_ns: Option<u64>,
}

impl Outage {
    /// Down on `[start_ns, start_ns + duration_ns)`.
    pub fn once(start_ns: u64, duration_ns: u64) -> Outage {
        Outage {
            start_ns,
            duration_ns,
            every_ns: None,
        }
    }

    /// Down for `duration_ns` every `every_ns`, the first time at `start_ns`.
    pub fn periodic(every_ns: u64, duration_ns: u64, start_ns: u64) -> Outage {
        Outage {
            start_ns,
            duration_ns,
            every_ns: Some(every_ns),
        }
    }

    /// Why this outage is not usable, if it is not.
    pub(crate) fn problem(&self) -> Option<&'static str> {
        if self.duration_ns == 0 {
            return Some("an outage of duration 0 would drop nothing");
        }
        match self.every_ns {
            Some(p) if p <= self.duration_ns => {
                Some("the period must be longer than the outage, or the link never comes back")
            }
            _ => None,
        }
    }

    /// Whether the link is down at `t` nanoseconds from the origin.
    pub fn is_down_at(&self, t: u64) -> bool {
        let Some(since) = t.checked_sub(self.start_ns) else {
            return false;
        };
        match self.every_ns {
            None => since < self.duration_ns,
            Some(p) => since % p.max(1) < self.duration_ns,
        }
    }

    /// The first window start at or after `t` (from the origin), if any.
    pub fn first_start_from(&self, t: u64) -> Option<u64> {
        if t <= self.start_ns {
            return Some(self.start_ns);
        }
        let p = self.every_ns?.max(1);
        let k = (t - self.start_ns).div_ceil(p);
        k.checked_mul(p)?.checked_add(self.start_ns)
    }
}

/// Whether any of `outages` has the link down at `now` (absolute), origin `origin`.
pub(crate) fn down_at(outages: &[Outage], origin: u64, now: u64) -> bool {
    match now.checked_sub(origin) {
        Some(t) => outages.iter().any(|o| o.is_down_at(t)),
        None => false,
    }
}

/// The first window start strictly after `now` (absolute), if any.
pub(crate) fn next_start_after(outages: &[Outage], origin: u64, now: u64) -> Option<u64> {
    let from = match now.checked_sub(origin) {
        Some(t) => t.checked_add(1)?,
        None => 0,
    };
    outages
        .iter()
        .filter_map(|o| o.first_start_from(from))
        .min()
        .map(|t| origin.saturating_add(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_half_open() {
        let o = Outage::once(30, 10);
        assert!(!o.is_down_at(29));
        assert!(o.is_down_at(30));
        assert!(o.is_down_at(39));
        assert!(!o.is_down_at(40));
        assert_eq!(o.first_start_from(0), Some(30));
        assert_eq!(o.first_start_from(30), Some(30));
        assert_eq!(o.first_start_from(31), None);
    }

    #[test]
    fn periodic_windows_repeat() {
        let o = Outage::periodic(60, 10, 60);
        let down: Vec<u64> = (0..200).filter(|&t| o.is_down_at(t)).collect();
        let expected: Vec<u64> = (60..70).chain(120..130).chain(180..190).collect();
        assert_eq!(down, expected);
        assert_eq!(o.first_start_from(0), Some(60));
        assert_eq!(o.first_start_from(61), Some(120));
        assert_eq!(o.first_start_from(120), Some(120));
        assert_eq!(o.first_start_from(u64::MAX), None);
    }

    #[test]
    fn absolute_times_count_from_the_origin() {
        let os = [Outage::once(30, 10), Outage::periodic(100, 5, 50)];
        assert!(!down_at(&os, 1000, 30));
        assert!(down_at(&os, 1000, 1030));
        assert!(down_at(&os, 1000, 1150));
        assert!(!down_at(&os, 1000, 1155));
        assert_eq!(next_start_after(&os, 1000, 0), Some(1030));
        assert_eq!(next_start_after(&os, 1000, 1030), Some(1050));
        assert_eq!(next_start_after(&os, 1000, 1050), Some(1150));
        assert_eq!(
            next_start_after(&[Outage::once(0, 1)], 1000, 999),
            Some(1000)
        );
        assert_eq!(next_start_after(&[Outage::once(0, 1)], 1000, 1000), None);
        assert_eq!(next_start_after(&[], 0, 0), None);
    }

    #[test]
    fn problems() {
        assert!(Outage::once(0, 0).problem().is_some());
        assert!(Outage::periodic(10, 10, 0).problem().is_some());
        assert!(Outage::periodic(0, 10, 0).problem().is_some());
        assert!(Outage::periodic(11, 10, 0).problem().is_none());
        assert!(Outage::once(0, 1).problem().is_none());
    }
}
