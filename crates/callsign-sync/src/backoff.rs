//! Capped, jittered exponential backoff.
//!
//! Attempt `n` (0-based) waits `min(cap, base * 2^n)` scaled into `[1/2, 1]` of itself by the
//! jitter ("equal jitter": never zero, so a herd of clients spreads out but none hammers), and
//! never less than the server's `Retry-After`. `Retry-After` itself is honoured up to
//! [`Backoff::max_retry_after`] so a broken header cannot park the outbox for a day.
//! The jitter is a parameter in `[0, 1)`: the caller draws it, the tests fix it.
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub base: Duration,
    pub cap: Duration,
    pub max_retry_after: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base: Duration::from_millis(500),
            cap: Duration::from_secs(60),
            max_retry_after: Duration::from_secs(600),
        }
    }
}

impl Backoff {
    /// The wait before retry number `attempt + 1`.
    pub fn delay(&self, attempt: u32, jitter: f64, retry_after: Option<Duration>) -> Duration {
        let exp = self
            .base
            .checked_mul(1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX))
            .unwrap_or(self.cap)
            .min(self.cap);
        let jitter = jitter.clamp(0.0, 1.0);
        let jittered = exp.mul_f64(0.5 + 0.5 * jitter);
        match retry_after {
            Some(ra) => jittered.max(ra.min(self.max_retry_after)),
            None => jittered,
        }
    }
}

/// Parses a `Retry-After` header given in seconds (the server's form; an HTTP date is ignored).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[rstest]
    #[case::first_no_jitter(0, 0.0, None, MS(250))]
    #[case::first_full_jitter(0, 1.0, None, MS(500))]
    #[case::doubles(1, 1.0, None, MS(1000))]
    #[case::doubles_again(3, 1.0, None, MS(4000))]
    #[case::half_jitter(3, 0.5, None, MS(3000))]
    #[case::capped(7, 1.0, None, MS(60_000))]
    #[case::capped_low_jitter(20, 0.0, None, MS(30_000))]
    #[case::huge_attempt_no_overflow(u32::MAX, 1.0, None, MS(60_000))]
    #[case::retry_after_wins(0, 1.0, Some(MS(5_000)), MS(5_000))]
    #[case::backoff_beats_short_retry_after(6, 1.0, Some(MS(1_000)), MS(32_000))]
    #[case::retry_after_clamped(0, 0.0, Some(Duration::from_secs(86_400)), MS(600_000))]
    #[case::jitter_out_of_range_clamped(1, 7.0, None, MS(1000))]
    fn schedule(
        #[case] attempt: u32,
        #[case] jitter: f64,
        #[case] retry_after: Option<Duration>,
        #[case] want: Duration,
    ) {
        assert_eq!(Backoff::default().delay(attempt, jitter, retry_after), want);
    }

    #[rstest]
    #[case("3", Some(Duration::from_secs(3)))]
    #[case(" 10 ", Some(Duration::from_secs(10)))]
    #[case("Wed, 21 Oct 2015 07:28:00 GMT", None)]
    #[case("-1", None)]
    fn retry_after_header(#[case] v: &str, #[case] want: Option<Duration>) {
        assert_eq!(parse_retry_after(v), want);
    }
}
