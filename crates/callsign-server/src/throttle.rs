//! A limit on failed authentications per client address: a token bucket per IP that holds
//! `per_minute` failures and refills at `per_minute` a minute.
//!
//! Only failures take from a bucket. While an address's bucket is empty, a request from it
//! whose token is not already known to be good (the token cache, filled only by a successful
//! database lookup) is answered `429` without being checked, so guessing gets no answers; a
//! device whose token was accepted in the last minute keeps working. Time comes in as a
//! parameter, so the arithmetic is tested without waiting.
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Addresses tracked at most; past this, buckets that have refilled are dropped, and if that
/// is not enough, all of them.
const MAX_ADDRESSES: usize = 100_000;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

pub struct FailureLimit {
    per_minute: u32,
    buckets: Mutex<HashMap<IpAddr, Bucket>>,
}

impl FailureLimit {
    pub fn new(per_minute: u32) -> FailureLimit {
        FailureLimit {
            per_minute: per_minute.max(1),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    fn capacity(&self) -> f64 {
        f64::from(self.per_minute)
    }

    /// Tokens added per second.
    fn rate(&self) -> f64 {
        self.capacity() / 60.0
    }

    fn refilled(&self, b: Bucket, now: Instant) -> Bucket {
        let secs = now.saturating_duration_since(b.at).as_secs_f64();
        Bucket {
            tokens: (b.tokens + secs * self.rate()).min(self.capacity()),
            at: now,
        }
    }

    /// `None` while `ip` may fail again; else how long until it may.
    pub fn blocked(&self, ip: IpAddr, now: Instant) -> Option<Duration> {
        let buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let b = self.refilled(*buckets.get(&ip)?, now);
        (b.tokens < 1.0).then(|| Duration::from_secs_f64((1.0 - b.tokens) / self.rate()))
    }

    /// Records a failed authentication from `ip`.
    pub fn failed(&self, ip: IpAddr, now: Instant) {
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() >= MAX_ADDRESSES && !buckets.contains_key(&ip) {
            let full = self.capacity();
            buckets.retain(|_, b| self.refilled(*b, now).tokens < full);
            if buckets.len() >= MAX_ADDRESSES {
                buckets.clear();
            }
        }
        let b = buckets.entry(ip).or_insert(Bucket {
            tokens: self.capacity(),
            at: now,
        });
        let mut next = self.refilled(*b, now);
        next.tokens = (next.tokens - 1.0).max(0.0);
        *b = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));

    #[test]
    fn twenty_failures_a_minute_then_blocked_until_one_refills() {
        let limit = FailureLimit::new(20);
        let t0 = Instant::now();
        for _ in 0..20 {
            assert_eq!(limit.blocked(A, t0), None);
            limit.failed(A, t0);
        }
        let wait = limit.blocked(A, t0).expect("the 21st is over the limit");
        assert!(
            wait > Duration::from_secs(2) && wait <= Duration::from_secs(3),
            "{wait:?}"
        );
        assert_eq!(limit.blocked(B, t0), None, "per address");
        assert_eq!(
            limit.blocked(A, t0 + Duration::from_secs(3)),
            None,
            "one refilled"
        );
        limit.failed(A, t0 + Duration::from_secs(3));
        assert!(limit.blocked(A, t0 + Duration::from_secs(3)).is_some());
        assert_eq!(limit.blocked(A, t0 + Duration::from_secs(61)), None);
    }

    #[test]
    fn slow_failures_never_block() {
        let limit = FailureLimit::new(20);
        let t0 = Instant::now();
        for i in 0..100 {
            let t = t0 + Duration::from_secs(3 * i);
            assert_eq!(limit.blocked(A, t), None, "failure {i}");
            limit.failed(A, t);
        }
    }

    #[test]
    fn the_table_is_bounded() {
        let limit = FailureLimit::new(20);
        let t0 = Instant::now();
        for i in 0..(MAX_ADDRESSES as u32 + 10) {
            limit.failed(IpAddr::V4(i.into()), t0);
        }
        assert!(limit.buckets.lock().unwrap().len() <= MAX_ADDRESSES);
    }
}
