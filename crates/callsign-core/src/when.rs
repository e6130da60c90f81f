//! Due dates as people type them (`--due tomorrow`, `due:fri`, `due:2026-12-01`), in the forms
//! Taskwarrior users know, and priorities (`H`, `M`, `L`, as Taskwarrior names them).
//!
//! Pure: the caller passes the current time in the user's time zone. Named days mean that
//! day's start (`tomorrow` is 00:00 tomorrow, local), as in Taskwarrior; `eod`, `eow`, `eom`
//! and `eoy` mean the last second of the day, week, month or year. Weeks start on Monday.
use chrono::{
    DateTime, Datelike, Days, Duration, Months, NaiveDate, NaiveDateTime, NaiveTime, SubsecRound,
    TimeZone, Utc, Weekday,
};
use serde::{Deserialize, Serialize};

/// A task's priority, as Taskwarrior's `priority` property holds it.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
pub enum Priority {
    /// Low.
    L,
    /// Medium.
    M,
    /// High.
    H,
}

impl Priority {
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::H => "H",
            Priority::M => "M",
            Priority::L => "L",
        }
    }

    /// `H`, `M`, `L`, or the words, in any case.
    pub fn parse(s: &str) -> Result<Priority, WhenError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "h" | "high" => Ok(Priority::H),
            "m" | "medium" | "med" => Ok(Priority::M),
            "l" | "low" => Ok(Priority::L),
            _ => Err(WhenError::Priority(s.to_owned())),
        }
    }
}

impl std::fmt::Display for Priority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WhenError {
    #[error(
        "'{0}' is not a date: use a date (2026-12-01, 2026-12-01T14:30), a day (today, \
         tomorrow, monday, fri), an end (eod, eow, eom, eoy) or a span from now (3d, 2w, 4h, 1mo)"
    )]
    Date(String),
    #[error("'{0}' is not a priority: use H, M or L")]
    Priority(String),
    #[error("'{0}' is out of range: a due date lies between the years 1970 and 9999")]
    Range(String),
}

/// The earliest and latest due date the API takes.
pub fn in_range(t: DateTime<Utc>) -> bool {
    (1970..=9999).contains(&t.year())
}

/// A priority, or `None` for `none` / an empty string (clear it).
pub fn parse_priority_or_none(s: &str) -> Result<Option<Priority>, WhenError> {
    match s.trim().to_ascii_lowercase().as_str() {
        "" | "none" => Ok(None),
        _ => Priority::parse(s).map(Some),
    }
}

/// A due date, or `None` for `none` / an empty string (clear it).
pub fn parse_due_or_none<Tz: TimeZone>(
    s: &str,
    now: DateTime<Tz>,
) -> Result<Option<DateTime<Utc>>, WhenError> {
    match s.trim().to_ascii_lowercase().as_str() {
        "" | "none" => Ok(None),
        _ => parse_due(s, now).map(Some),
    }
}

/// A due date, relative to `now` and in its time zone.
pub fn parse_due<Tz: TimeZone>(s: &str, now: DateTime<Tz>) -> Result<DateTime<Utc>, WhenError> {
    let word = s.trim().to_ascii_lowercase();
    let bad = || WhenError::Date(s.trim().to_owned());
    let tz = now.timezone();
    let today = now.date_naive();
    let at = |d: NaiveDate, t: NaiveTime| local(&tz, d.and_time(t)).ok_or_else(bad);
    let start = |d: NaiveDate| at(d, NaiveTime::MIN);
    let end = |d: NaiveDate| at(d, NaiveTime::from_hms_opt(23, 59, 59).expect("valid time"));
    let t = match word.as_str() {
        "now" => now.with_timezone(&Utc),
        "today" | "sod" => start(today)?,
        "tomorrow" => start(today.succ_opt().ok_or_else(bad)?)?,
        "yesterday" => start(today.pred_opt().ok_or_else(bad)?)?,
        "eod" => end(today)?,
        "sow" => start(week_start(today))?,
        "eow" => end(week_start(today) + Days::new(6))?,
        "som" => start(today.with_day(1).ok_or_else(bad)?)?,
        "eom" => end(month_end(today).ok_or_else(bad)?)?,
        "soy" => start(NaiveDate::from_ymd_opt(today.year(), 1, 1).ok_or_else(bad)?)?,
        "eoy" => end(NaiveDate::from_ymd_opt(today.year(), 12, 31).ok_or_else(bad)?)?,
        w => {
            if let Some(day) = weekday(w) {
                // The next such day, never today (Taskwarrior's `monday` on a Monday is the
                // next one).
                let ahead =
                    (7 + day.num_days_from_monday() - today.weekday().num_days_from_monday()) % 7;
                let ahead = if ahead == 0 { 7 } else { ahead };
                start(today + Days::new(u64::from(ahead)))?
            } else if let Some(t) = span(w, &now) {
                t
            } else if let Ok(t) = DateTime::parse_from_rfc3339(s.trim()) {
                t.with_timezone(&Utc)
            } else if let Ok(d) = NaiveDate::parse_from_str(&word, "%Y-%m-%d") {
                start(d)?
            } else if let Some(dt) = ["%Y-%m-%dt%H:%M", "%Y-%m-%dt%H:%M:%S", "%Y-%m-%d %H:%M"]
                .iter()
                .find_map(|f| NaiveDateTime::parse_from_str(&word, f).ok())
            {
                local(&tz, dt).ok_or_else(bad)?
            } else {
                return Err(bad());
            }
        }
    };
    // Whole seconds: what the server keeps (Taskwarrior's Unix seconds), so every device
    // shows the same value while an edit is on its way.
    let t = t.trunc_subsecs(0);
    if in_range(t) {
        Ok(t)
    } else {
        Err(WhenError::Range(s.trim().to_owned()))
    }
}

/// A local wall-clock time; in a gap (spring forward) the same time an hour or more later
/// (02:30 in a gap from 02:00 to 03:00 is 03:30), in a fold the earlier of the two.
fn local<Tz: TimeZone>(tz: &Tz, dt: NaiveDateTime) -> Option<DateTime<Utc>> {
    (0..=4)
        .find_map(|h| {
            tz.from_local_datetime(&(dt + Duration::hours(h)))
                .earliest()
        })
        .map(|t| t.with_timezone(&Utc))
}

fn week_start(d: NaiveDate) -> NaiveDate {
    d - Days::new(u64::from(d.weekday().num_days_from_monday()))
}

fn month_end(d: NaiveDate) -> Option<NaiveDate> {
    d.with_day(1)?
        .checked_add_months(Months::new(1))?
        .pred_opt()
}

fn weekday(w: &str) -> Option<Weekday> {
    Some(match w {
        "monday" | "mon" => Weekday::Mon,
        "tuesday" | "tue" | "tues" => Weekday::Tue,
        "wednesday" | "wed" => Weekday::Wed,
        "thursday" | "thu" | "thur" | "thurs" => Weekday::Thu,
        "friday" | "fri" => Weekday::Fri,
        "saturday" | "sat" => Weekday::Sat,
        "sunday" | "sun" => Weekday::Sun,
        _ => return None,
    })
}

/// `3d`, `+2w`, `4h`, `30min`, `1mo`, `1y` (and the words: `3days`, `2weeks`...): from now.
fn span<Tz: TimeZone>(w: &str, now: &DateTime<Tz>) -> Option<DateTime<Utc>> {
    let w = w.strip_prefix('+').unwrap_or(w);
    let digits = w.find(|c: char| !c.is_ascii_digit())?;
    if digits == 0 {
        return None;
    }
    let n: u32 = w[..digits].parse().ok()?;
    let now_utc = now.with_timezone(&Utc);
    let naive = now.naive_local();
    let months = |m: u32| local(&now.timezone(), naive.checked_add_months(Months::new(m))?);
    let days = |d: u64| local(&now.timezone(), naive.checked_add_days(Days::new(d))?);
    match &w[digits..] {
        "min" | "mins" | "minute" | "minutes" => {
            now_utc.checked_add_signed(Duration::minutes(n.into()))
        }
        "h" | "hr" | "hrs" | "hour" | "hours" => {
            now_utc.checked_add_signed(Duration::hours(n.into()))
        }
        "d" | "day" | "days" => days(n.into()),
        "w" | "wk" | "wks" | "week" | "weeks" => days(u64::from(n) * 7),
        "mo" | "mon" | "mons" | "month" | "months" => months(n),
        "y" | "yr" | "yrs" | "year" | "years" => months(n.checked_mul(12)?),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::FixedOffset;

    /// Wednesday 2026-11-25 15:30:00 at UTC+01:00.
    fn now() -> DateTime<FixedOffset> {
        FixedOffset::east_opt(3600)
            .unwrap()
            .with_ymd_and_hms(2026, 11, 25, 15, 30, 0)
            .unwrap()
    }

    fn due(s: &str) -> String {
        parse_due(s, now())
            .unwrap()
            .with_timezone(&now().timezone())
            .format("%a %Y-%m-%d %H:%M:%S")
            .to_string()
    }

    #[test]
    fn named_days_are_local_starts_and_ends() {
        assert_eq!(due("today"), "Wed 2026-11-25 00:00:00");
        assert_eq!(due("Tomorrow"), "Thu 2026-11-26 00:00:00");
        assert_eq!(due("yesterday"), "Tue 2026-11-24 00:00:00");
        assert_eq!(due("eod"), "Wed 2026-11-25 23:59:59");
        assert_eq!(due("sow"), "Mon 2026-11-23 00:00:00");
        assert_eq!(due("eow"), "Sun 2026-11-29 23:59:59");
        assert_eq!(due("eom"), "Mon 2026-11-30 23:59:59");
        assert_eq!(due("som"), "Sun 2026-11-01 00:00:00");
        assert_eq!(due("eoy"), "Thu 2026-12-31 23:59:59");
        assert_eq!(due("now"), "Wed 2026-11-25 15:30:00");
    }

    #[test]
    fn a_weekday_is_the_next_one_never_today() {
        assert_eq!(due("fri"), "Fri 2026-11-27 00:00:00");
        assert_eq!(due("monday"), "Mon 2026-11-30 00:00:00");
        assert_eq!(due("wed"), "Wed 2026-12-02 00:00:00");
    }

    #[test]
    fn spans_count_from_now() {
        assert_eq!(due("3d"), "Sat 2026-11-28 15:30:00");
        assert_eq!(due("+2w"), "Wed 2026-12-09 15:30:00");
        assert_eq!(due("4h"), "Wed 2026-11-25 19:30:00");
        assert_eq!(due("30min"), "Wed 2026-11-25 16:00:00");
        assert_eq!(due("1mo"), "Fri 2026-12-25 15:30:00");
        assert_eq!(due("1y"), "Thu 2027-11-25 15:30:00");
    }

    #[test]
    fn dates_and_times() {
        assert_eq!(due("2026-12-01"), "Tue 2026-12-01 00:00:00");
        assert_eq!(due("2026-12-01T14:30"), "Tue 2026-12-01 14:30:00");
        assert_eq!(due("2026-12-01 09:05"), "Tue 2026-12-01 09:05:00");
        assert_eq!(due("2026-12-01T14:30:00Z"), "Tue 2026-12-01 15:30:00");
    }

    #[test]
    fn nonsense_and_out_of_range_are_refused_with_the_forms() {
        for s in ["", "soon", "3", "d", "2026-13-01", "3x", "+"] {
            let e = parse_due(s, now()).unwrap_err();
            assert!(matches!(e, WhenError::Date(_)), "{s}: {e}");
            assert!(e.to_string().contains("tomorrow"), "{e}");
        }
        assert!(matches!(
            parse_due("1960-01-01", now()),
            Err(WhenError::Range(_))
        ));
        assert!(parse_due("99999y", now()).is_err());
    }

    #[test]
    fn a_due_date_keeps_whole_seconds() {
        let now = now() + chrono::Duration::milliseconds(1_234);
        for w in ["now", "4h", "30min", "3d"] {
            let t = parse_due(w, now).unwrap();
            assert_eq!(t.timestamp_subsec_nanos(), 0, "{w}");
        }
        assert_eq!(
            parse_due("now", now).unwrap().timestamp(),
            now.timestamp(),
            "truncated, not rounded"
        );
    }

    /// Berlin: clocks go 02:00 → 03:00 on 2026-03-29 and 03:00 → 02:00 on 2026-10-25.
    #[test]
    fn a_time_in_a_dst_gap_moves_on_and_one_in_a_fold_takes_the_first() {
        use chrono_tz::Europe::Berlin;
        let now = Berlin.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap();
        let gap = parse_due("2026-03-29T02:30", now)
            .unwrap()
            .with_timezone(&Berlin);
        assert_eq!(gap.format("%H:%M %Z").to_string(), "03:30 CEST");
        let fold = parse_due("2026-10-25T02:30", now)
            .unwrap()
            .with_timezone(&Berlin);
        assert_eq!(
            fold.format("%H:%M %Z").to_string(),
            "02:30 CEST",
            "the earlier one"
        );
        let spring = Berlin.with_ymd_and_hms(2026, 3, 28, 12, 0, 0).unwrap();
        let tomorrow = parse_due("tomorrow", spring)
            .unwrap()
            .with_timezone(&Berlin);
        assert_eq!(
            tomorrow.format("%Y-%m-%d %H:%M").to_string(),
            "2026-03-29 00:00"
        );
        assert_eq!(
            (parse_due("1d", spring).unwrap() - spring.to_utc()).num_hours(),
            23
        );
    }

    #[test]
    fn none_clears() {
        assert_eq!(parse_due_or_none("none", now()), Ok(None));
        assert_eq!(parse_due_or_none(" ", now()), Ok(None));
        assert_eq!(parse_priority_or_none("None"), Ok(None));
        assert_eq!(parse_priority_or_none("h"), Ok(Some(Priority::H)));
        assert!(parse_priority_or_none("x").is_err());
        assert!(parse_due_or_none("today", now()).unwrap().is_some());
    }

    #[test]
    fn priorities_in_any_case_and_order() {
        assert_eq!(Priority::parse("h"), Ok(Priority::H));
        assert_eq!(Priority::parse("Medium"), Ok(Priority::M));
        assert_eq!(Priority::parse("L"), Ok(Priority::L));
        assert!(Priority::parse("urgent").is_err());
        assert!(Priority::H > Priority::M && Priority::M > Priority::L);
        assert_eq!(serde_json::to_string(&Priority::H).unwrap(), "\"H\"");
        assert!(serde_json::from_str::<Priority>("\"X\"").is_err());
    }
}
