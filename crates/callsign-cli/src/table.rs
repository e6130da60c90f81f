//! Fitting a table's lines to a width: pure functions of display widths, with no terminal in
//! them (the caller measures it: [`limit`]).
//!
//! Widths are display columns (`unicode-width`): a CJK character or an emoji takes two, a
//! combining mark none, so cut and padded cells line up whatever the script. A cell is a list of
//! styled [`Span`]s, cut as one text: a cut cell ends in `…` and is never wider than asked.
//! Columns that must stay whole (keys, UUIDs, dates) are [`Fit::Keep`]; when even the shrinkable
//! ones at their floors leave the line too wide, it runs over the limit rather than lose a key.
use anstyle::Style;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// What ends a cut cell.
pub const ELLIPSIS: char = '…';

/// How wide a table may be: `COLUMNS` when it holds a width (so a script or a test chooses),
/// else the terminal's width when standard output is one (`terminal` is only asked then), else
/// no limit: a pipe gets whole lines.
pub fn limit(columns_env: Option<&str>, terminal: impl FnOnce() -> Option<usize>) -> Option<usize> {
    match columns_env.and_then(|c| c.trim().parse::<usize>().ok()) {
        Some(n) if n > 0 => Some(n),
        _ => terminal(),
    }
}

/// How a column gives up room when a line is too wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// Never cut (keys, UUIDs, dates): the line runs over instead.
    Keep,
    /// Cut with `…` down to `floor` columns (or its own width, when narrower). Columns of
    /// `rank` 0 shrink to their floors before those of rank 1 give up anything, and so on; within
    /// a rank, left to right.
    Shrink { floor: usize, rank: u8 },
}

/// The width of each column so that a line of them, plus `gaps` columns of separators, fits in
/// `limit`: `natural` is each column's widest cell. With no limit, or room enough, every column
/// keeps its natural width; otherwise the shrinkable columns give up what the line is over, in
/// rank order, each down to its floor and no further.
pub fn widths(natural: &[usize], fits: &[Fit], gaps: usize, limit: Option<usize>) -> Vec<usize> {
    let mut w = natural.to_vec();
    let Some(limit) = limit else { return w };
    let mut over = (w.iter().sum::<usize>() + gaps).saturating_sub(limit);
    let max_rank = fits
        .iter()
        .filter_map(|f| match f {
            Fit::Shrink { rank, .. } => Some(*rank),
            Fit::Keep => None,
        })
        .max();
    for r in 0..=max_rank.unwrap_or(0) {
        for (i, fit) in fits.iter().enumerate() {
            if over == 0 {
                return w;
            }
            if let Fit::Shrink { floor, rank } = *fit {
                if rank == r {
                    let give = over.min(w[i].saturating_sub(floor.min(natural[i])));
                    w[i] -= give;
                    over -= give;
                }
            }
        }
    }
    w
}

/// A run of text in one style (`Style::new()`: plain).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub text: String,
    pub style: Style,
}

impl Span {
    pub fn plain(text: impl Into<String>) -> Span {
        Span::styled(text, Style::new())
    }

    pub fn styled(text: impl Into<String>, style: Style) -> Span {
        Span {
            text: text.into(),
            style,
        }
    }
}

/// One cell: spans shown one after another.
pub type Cell = Vec<Span>;

/// Display columns of a cell.
pub fn width(cell: &[Span]) -> usize {
    cell.iter().map(|s| s.text.width()).sum()
}

/// `cell` in at most `max` columns: as it is when it fits, else cut after as many characters
/// as leave room for `…` (a wide character that would straddle the limit goes whole, so the
/// cut cell may be a column narrower than `max`). Styles stay with their text.
pub fn cut(cell: &[Span], max: usize) -> Cell {
    if width(cell) <= max {
        return cell.to_vec();
    }
    if max == 0 {
        return Vec::new();
    }
    let mut room = max - 1;
    let mut out = Vec::new();
    let mut last_style = Style::new();
    'spans: for span in cell {
        last_style = span.style;
        let mut text = String::new();
        for c in span.text.chars() {
            let w = c.width().unwrap_or(0);
            if w > room {
                if !text.is_empty() {
                    out.push(Span::styled(text, span.style));
                }
                break 'spans;
            }
            room -= w;
            text.push(c);
        }
        if !text.is_empty() {
            out.push(Span::styled(text, span.style));
        }
    }
    out.push(Span::styled(ELLIPSIS.to_string(), last_style));
    out
}

/// `cell` cut to `w` columns and, when `pad`, filled out to exactly `w` with spaces (unstyled,
/// after the text), appended to `line`; painted when `colour`.
pub fn write_cell(line: &mut String, cell: &[Span], w: usize, pad: bool, colour: bool) {
    let cell = cut(cell, w);
    for span in &cell {
        if colour && span.style != Style::new() {
            line.push_str(&format!("{}{}{:#}", span.style, span.text, span.style));
        } else {
            line.push_str(&span.text);
        }
    }
    if pad {
        line.extend(std::iter::repeat_n(' ', w.saturating_sub(width(&cell))));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(cell: &[Span]) -> String {
        cell.iter().map(|s| s.text.as_str()).collect()
    }

    fn cut_text(s: &str, max: usize) -> String {
        text(&cut(&[Span::plain(s)], max))
    }

    #[test]
    fn cutting_ends_in_an_ellipsis_within_the_width() {
        assert_eq!(cut_text("Buy milk", 8), "Buy milk", "fits: unchanged");
        assert_eq!(cut_text("Buy milk", 20), "Buy milk");
        assert_eq!(cut_text("Buy milk", 5), "Buy …");
        assert_eq!(cut_text("Buy milk", 1), "…");
        assert_eq!(cut_text("Buy milk", 0), "");
    }

    /// Wide characters count two columns; one that would straddle the limit is left out whole,
    /// and a combining mark stays with its letter.
    #[test]
    fn wide_characters_are_measured_and_never_split() {
        assert_eq!(width(&[Span::plain("北京 ok")]), 7);
        assert_eq!(width(&[Span::plain("🎉 done")]), 7);
        assert_eq!(
            cut_text("北京上海", 6),
            "北京…",
            "5 columns: no half character"
        );
        assert_eq!(width(&cut(&[Span::plain("北京上海")], 6)), 5);
        assert_eq!(cut_text("北京上海", 5), "北京…");
        assert_eq!(cut_text("🎉🎉🎉", 4), "🎉…");
        assert_eq!(cut_text("Cafe\u{301} au lait", 6), "Cafe\u{301} …");
        for max in 0..12 {
            for s in ["北京上海 office", "🎉 party 🎉", "plain text here"] {
                assert!(width(&cut(&[Span::plain(s)], max)) <= max, "{s:?} in {max}");
            }
        }
    }

    #[test]
    fn a_cut_keeps_each_spans_style() {
        let red = anstyle::AnsiColor::Red.on_default();
        let cell = vec![Span::plain("due "), Span::styled("Fri (overdue)", red)];
        assert_eq!(
            cut(&cell, 9),
            vec![
                Span::plain("due "),
                Span::styled("Fri ", red),
                Span::styled("…", red)
            ]
        );
    }

    #[test]
    fn cells_pad_by_display_width_and_paint_only_when_asked() {
        let mut line = String::new();
        write_cell(&mut line, &[Span::plain("北京")], 6, true, false);
        line.push('|');
        assert_eq!(line, "北京  |", "two wide characters are four columns");
        let bold = Style::new().bold();
        let mut plain = String::new();
        write_cell(&mut plain, &[Span::styled("DEV-1", bold)], 5, true, false);
        assert_eq!(plain, "DEV-1");
        let mut painted = String::new();
        write_cell(&mut painted, &[Span::styled("DEV-1", bold)], 7, true, true);
        assert_eq!(
            painted,
            format!("{bold}DEV-1{bold:#}  "),
            "padding unstyled"
        );
    }

    const DESC: Fit = Fit::Shrink { floor: 10, rank: 0 };
    const TAGS: Fit = Fit::Shrink { floor: 4, rank: 1 };

    #[test]
    fn widths_shrink_the_first_rank_then_the_next_and_never_kept_columns() {
        let fits = [Fit::Keep, DESC, TAGS];
        // key 6, description 30, tags 12, two gaps of 2: 52 columns.
        let natural = [6, 30, 12];
        assert_eq!(widths(&natural, &fits, 4, None), natural, "no limit");
        assert_eq!(widths(&natural, &fits, 4, Some(52)), natural, "just fits");
        assert_eq!(widths(&natural, &fits, 4, Some(40)), [6, 18, 12]);
        assert_eq!(
            widths(&natural, &fits, 4, Some(32)),
            [6, 10, 12],
            "desc floor"
        );
        assert_eq!(
            widths(&natural, &fits, 4, Some(28)),
            [6, 10, 8],
            "then tags"
        );
        // Too narrow even for the floors: the key stays whole and the line runs over.
        assert_eq!(widths(&natural, &fits, 4, Some(10)), [6, 10, 4]);
        assert_eq!(widths(&natural, &fits, 4, Some(1)), [6, 10, 4]);
    }

    #[test]
    fn a_column_narrower_than_its_floor_is_left_alone() {
        let fits = [Fit::Keep, DESC, TAGS];
        assert_eq!(widths(&[20, 6, 3], &fits, 4, Some(20)), [20, 6, 3]);
    }

    #[test]
    fn within_a_rank_the_left_column_gives_first() {
        let a = Fit::Shrink { floor: 2, rank: 0 };
        assert_eq!(widths(&[10, 10], &[a, a], 0, Some(15)), [5, 10]);
        assert_eq!(widths(&[10, 10], &[a, a], 0, Some(8)), [2, 6]);
    }

    #[test]
    fn columns_env_wins_then_the_terminal_then_no_limit() {
        assert_eq!(limit(Some("40"), || Some(120)), Some(40));
        assert_eq!(limit(Some(" 40 "), || None), Some(40), "also in a pipe");
        assert_eq!(limit(None, || Some(120)), Some(120));
        assert_eq!(limit(Some("wide"), || Some(120)), Some(120), "not a width");
        assert_eq!(limit(Some("0"), || None), None);
        assert_eq!(limit(None, || None), None, "a pipe: whole lines");
    }
}
