//! The idempotency window in force: derived from how long clients are seen to keep retrying,
//! never a guess (DESIGN.md section 9). Pure: the reaper gathers the [`Evidence`] from the
//! allocation database and calls [`derive`] every pass.
//!
//! With `--idempotency-window auto` (the default) the window is the longer of
//! - the observed p99 retry span (slot creation to last attempt, of the slots created within the
//!   last `max`, [`Setting::period`]) times [`MARGIN`], and
//! - the longest *late* retry of the period times [`MARGIN`]: one that landed in the second
//!   half of the window in force when it arrived, eating into the margin ([`is_late`]), or after it (a key whose slot
//!   had already been failed). These are the retries a too-short window hides from the p99
//!   (censoring), so each pushes the window up on its own, however rare. They are recorded as
//!   they arrive, with the window of that moment, so a window grown to cover them does not fall
//!   back (and grow again) while they are within the period;
//!
//! clamped to `[min, max]`. It never shrinks below the age of a slot still pending (a client
//! may still be retrying it), and a fixed `--idempotency-window 10m` stays 10 minutes.
use std::time::Duration;

/// How far past the observed retry spans the window sits.
pub const MARGIN: f64 = 2.0;
/// A retry later than this share of the window in force counts as late (censored) evidence:
/// it ate into the margin.
pub const LATE_SHARE: f64 = 1.0 / MARGIN;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    Fixed(Duration),
    Auto { min: Duration, max: Duration },
}

impl Setting {
    pub const DEFAULT_MIN: Duration = Duration::from_secs(24 * 3600);
    pub const DEFAULT_MAX: Duration = Duration::from_secs(7 * 24 * 3600);

    /// The window to start from before any evidence: the fixed one, or the minimum.
    pub fn initial(&self) -> Duration {
        match *self {
            Setting::Fixed(d) => d,
            Setting::Auto { min, .. } => min,
        }
    }

    /// How far back the evidence reaches.
    pub fn period(&self) -> Duration {
        match *self {
            Setting::Fixed(d) => d,
            Setting::Auto { max, .. } => max,
        }
    }
}

/// What the server has seen, all in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Evidence {
    /// Retry spans of slots seen more than once within the period, sorted ascending.
    pub spans_ms: Vec<i64>,
    /// Spans of the late retries recorded within the period ([`is_late`], or a key whose slot
    /// had already been failed).
    pub late_ms: Vec<i64>,
    /// The age of the oldest slot still pending.
    pub oldest_pending_ms: Option<i64>,
}

/// What decided the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// `--idempotency-window DURATION`.
    Fixed,
    /// The observed p99 times the margin.
    Observed,
    /// The longest late retry times the margin.
    Late,
    /// Clamped up to the minimum.
    Min,
    /// Clamped down to the maximum.
    Max,
    /// Kept up to the age of a slot still pending.
    Pending,
}

impl Basis {
    pub fn parse(s: &str) -> Option<Basis> {
        Basis::ALL.into_iter().find(|b| b.as_str() == s)
    }

    pub const ALL: [Basis; 6] = [
        Basis::Fixed,
        Basis::Observed,
        Basis::Late,
        Basis::Min,
        Basis::Max,
        Basis::Pending,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Basis::Fixed => "fixed",
            Basis::Observed => "observed",
            Basis::Late => "late",
            Basis::Min => "min",
            Basis::Max => "max",
            Basis::Pending => "pending",
        }
    }
}

/// The window in force and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub ms: i64,
    pub basis: Basis,
    /// The observed p99 retry span.
    pub p99_ms: Option<i64>,
    /// The longest late retry.
    pub late_ms: Option<i64>,
}

impl Window {
    pub fn fixed(d: Duration) -> Window {
        Window {
            ms: ms(d),
            basis: Basis::Fixed,
            p99_ms: None,
            late_ms: None,
        }
    }

    pub fn duration(&self) -> Duration {
        Duration::from_millis(self.ms.max(0) as u64)
    }
}

impl std::fmt::Display for Window {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = |ms: i64| humantime::format_duration(Duration::from_secs((ms / 1000) as u64));
        write!(f, "{} ({}", secs(self.ms), self.basis.as_str())?;
        if let Some(p) = self.p99_ms {
            write!(f, "; observed p99 {}", secs(p))?;
        }
        if let Some(l) = self.late_ms {
            write!(f, "; longest late retry {}", secs(l))?;
        }
        write!(f, "; margin ×{MARGIN})")
    }
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn times_margin(ms: i64) -> i64 {
    (ms as f64 * MARGIN).min(i64::MAX as f64) as i64
}

/// The window to use from now on, given the one in force (`current_ms`) and the evidence.
pub fn derive(setting: &Setting, current_ms: i64, ev: &Evidence) -> Window {
    let (min, max) = match *setting {
        Setting::Fixed(d) => return Window::fixed(d),
        Setting::Auto { min, max } => (ms(min), ms(max).max(ms(min))),
    };
    let p99_ms = quantile(&ev.spans_ms, 0.99);
    let late_ms = ev.late_ms.iter().copied().max();
    let observed = p99_ms.map_or(0, times_margin);
    let late = late_ms.map_or(0, times_margin);
    let (mut window, mut basis) = if late > observed {
        (late, Basis::Late)
    } else {
        (observed, Basis::Observed)
    };
    if window < min {
        (window, basis) = (min, Basis::Min);
    } else if window > max {
        (window, basis) = (max, Basis::Max);
    }
    if window < current_ms {
        // Shrinking: never below the age of a slot still pending.
        if let Some(age) = ev.oldest_pending_ms {
            let floor = age.min(current_ms);
            if floor > window {
                (window, basis) = (floor, Basis::Pending);
            }
        }
    }
    Window {
        ms: window,
        basis,
        p99_ms,
        late_ms,
    }
}

/// Whether a retry `span_ms` after its slot was made arrived late for the window in force
/// (`window_ms`): in its second half (eating into the margin), or after it.
pub fn is_late(span_ms: i64, window_ms: i64) -> bool {
    span_ms as f64 > window_ms as f64 * LATE_SHARE
}

/// Nearest-rank quantile of sorted values.
pub fn quantile(sorted: &[i64], q: f64) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 3_600_000;
    const DAY: Duration = Duration::from_secs(24 * 3600);

    fn auto(min_h: u64, max_h: u64) -> Setting {
        Setting::Auto {
            min: Duration::from_secs(min_h * 3600),
            max: Duration::from_secs(max_h * 3600),
        }
    }

    /// What the server records when `hours` retries arrive one by one under an evolving
    /// window: every span, and the late ones with the window of their moment.
    fn observe(setting: &Setting, hours: &[f64]) -> (Evidence, Window) {
        let mut ev = Evidence::default();
        let mut w = derive(setting, ms(setting.initial()), &ev);
        for &h in hours {
            let span = (h * H as f64) as i64;
            if is_late(span, w.ms) {
                ev.late_ms.push(span);
            }
            ev.spans_ms.push(span);
            ev.spans_ms.sort();
            w = derive(setting, w.ms, &ev);
        }
        (ev, w)
    }

    #[test]
    fn retries_up_to_3h_settle_the_window_above_3h_times_the_margin() {
        // 1000 slots retried, most within minutes, ten for 2-3 h.
        let mut h: Vec<f64> = (0..990).map(|i| (i % 30) as f64 / 60.0).collect();
        h.extend((0..10).map(|i| 2.1 + i as f64 / 10.0));
        let (ev, w) = observe(&auto(1, 168), &h);
        assert!(w.ms >= 6 * H, "{w}");
        assert_eq!(w.basis, Basis::Late, "{w}");
        // It stays there: deriving again from the same evidence changes nothing.
        assert_eq!(derive(&auto(1, 168), w.ms, &ev), w);
        // With the default minimum (24 h) the clamp applies.
        let (_, w) = observe(&auto(24, 168), &h);
        assert_eq!((w.ms, w.basis), (24 * H, Basis::Min));
        // When the long retries are common, the p99 itself covers them.
        let (_, w) = observe(&auto(1, 168), &[3.0; 50]);
        assert!(w.ms >= 6 * H && w.p99_ms == Some(3 * H), "{w}");
    }

    #[test]
    fn retries_for_30h_against_a_24h_window_grow_it() {
        let mut h = vec![0.01; 999];
        h.push(30.0);
        let (_, w) = observe(&auto(24, 168), &h);
        assert_eq!(w.basis, Basis::Late, "{w}");
        assert_eq!(w.ms, 60 * H);
        // A retry for a key whose slot was already failed counts too.
        let ev = Evidence {
            late_ms: vec![31 * H],
            ..Default::default()
        };
        assert_eq!(derive(&auto(24, 168), 24 * H, &ev).ms, 62 * H);
        // Within the clamp.
        let ev = Evidence {
            late_ms: vec![200 * H],
            ..Default::default()
        };
        let w = derive(&auto(24, 168), 24 * H, &ev);
        assert_eq!((w.ms, w.basis), (168 * H, Basis::Max));
        // A retry well inside the window is not late.
        assert!(!is_late(11 * H, 24 * H) && is_late(13 * H, 24 * H));
    }

    #[test]
    fn short_retries_never_shrink_it_below_a_pending_slots_age() {
        let ev = Evidence {
            spans_ms: vec![1_000; 500],
            oldest_pending_ms: Some(40 * H),
            ..Default::default()
        };
        let w = derive(&auto(24, 168), 60 * H, &ev);
        assert_eq!((w.ms, w.basis), (40 * H, Basis::Pending), "{w}");
        // Nothing pending: back to the minimum.
        let ev = Evidence {
            oldest_pending_ms: None,
            ..ev
        };
        assert_eq!(derive(&auto(24, 168), 60 * H, &ev).ms, 24 * H);
        // A pending slot never pushes the window up by itself.
        let ev = Evidence {
            oldest_pending_ms: Some(100 * H),
            ..Default::default()
        };
        assert_eq!(derive(&auto(24, 168), 24 * H, &ev).ms, 24 * H);
    }

    #[test]
    fn a_fixed_window_stays_fixed() {
        let ev = Evidence {
            spans_ms: vec![30 * H],
            late_ms: vec![40 * H],
            oldest_pending_ms: Some(50 * H),
        };
        let ten = Duration::from_secs(600);
        let w = derive(&Setting::Fixed(ten), 600_000, &ev);
        assert_eq!((w.duration(), w.basis), (ten, Basis::Fixed));
        assert_eq!(Setting::Fixed(ten).initial(), ten);
        assert_eq!(auto(24, 168).initial(), DAY);
    }

    #[test]
    fn no_evidence_is_the_minimum() {
        let w = derive(&auto(24, 168), 24 * H, &Evidence::default());
        assert_eq!((w.ms, w.basis, w.p99_ms), (24 * H, Basis::Min, None));
    }
}
