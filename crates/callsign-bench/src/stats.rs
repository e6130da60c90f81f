//! Figures: samples, percentiles, median and spread over runs, and the printed table.
use serde::Serialize;

/// The `p`-th percentile (0..=100) of `xs` by nearest rank; 0 for no samples.
pub fn percentile(xs: &[f64], p: f64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// One figure over several runs: median and spread (min..max).
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    pub name: String,
    pub unit: String,
    pub runs: Vec<f64>,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub baseline: Option<String>,
    pub target: String,
    pub met: Option<bool>,
}

impl Figure {
    pub fn new(name: &str, unit: &str, runs: Vec<f64>) -> Figure {
        Figure {
            name: name.into(),
            unit: unit.into(),
            median: percentile(&runs, 50.0),
            min: runs.iter().copied().fold(f64::INFINITY, f64::min),
            max: runs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            runs,
            baseline: None,
            target: String::new(),
            met: None,
        }
    }

    pub fn baseline(mut self, b: impl Into<String>) -> Figure {
        self.baseline = Some(b.into());
        self
    }

    /// A target and whether the median meets it.
    pub fn target(mut self, t: impl Into<String>, met: impl Fn(f64) -> bool) -> Figure {
        self.target = t.into();
        self.met = Some(met(self.median));
        self
    }
}

fn num(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// A Markdown table: figure, median, spread, baseline, target, met.
pub fn table(figures: &[Figure]) -> String {
    let mut out = String::from(
        "| figure | median | spread (min..max) | baseline (same run) | target | met |\n|---|---|---|---|---|---|\n",
    );
    for f in figures {
        out.push_str(&format!(
            "| {} | {} {} | {}..{} | {} | {} | {} |\n",
            f.name,
            num(f.median),
            f.unit,
            num(f.min),
            num(f.max),
            f.baseline.as_deref().unwrap_or("–"),
            if f.target.is_empty() {
                "–"
            } else {
                &f.target
            },
            match f.met {
                Some(true) => "yes",
                Some(false) => "**no**",
                None => "–",
            }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&xs, 50.0), 50.0);
        assert_eq!(percentile(&xs, 99.0), 99.0);
        assert_eq!(percentile(&xs, 100.0), 100.0);
        assert_eq!(percentile(&[3.0, 1.0, 2.0], 50.0), 2.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }

    #[test]
    fn a_figure_knows_its_median_spread_and_target() {
        let f = Figure::new("x", "ms", vec![5.0, 1.0, 3.0]).target("≤ 4 ms", |m| m <= 4.0);
        assert_eq!((f.median, f.min, f.max), (3.0, 1.0, 5.0));
        assert_eq!(f.met, Some(true));
        assert!(table(&[f]).contains("| x | 3.00 ms | 1.00..5.00 |"));
    }
}
