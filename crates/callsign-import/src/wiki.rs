//! Jira wiki markup (what Jira's CSV export writes in `Description`) as Markdown: headings
//! (`h2. `), lists (`* `, `# `, nested `** `), `{code}` and `{noformat}` blocks, `{quote}`,
//! `*bold*`, `_italic_`, `{{monospace}}`, links (`[text|url]`, `[url]`) and images
//! (`!shot.png|width=640!`). Anything else is kept as written.

/// `text` (Jira wiki markup) as Markdown.
pub fn to_markdown(text: &str) -> String {
    let text = text.replace("\r\n", "\n");
    let mut out = Vec::new();
    let mut in_code = false;
    let mut in_quote = false;
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(rest) = block_tag(t, "code").or_else(|| block_tag(t, "noformat")) {
            out.push(if in_code {
                "```".to_owned()
            } else {
                format!("```{rest}")
            });
            in_code = !in_code;
            continue;
        }
        if in_code {
            out.push(line.to_owned());
            continue;
        }
        // `{quote}` opens or closes a quote, also around text on the same line.
        let (opens, t) = match t.strip_prefix("{quote}") {
            Some(rest) => (true, rest.trim_start()),
            None => (false, t),
        };
        let (closes, t) = match t.strip_suffix("{quote}") {
            Some(rest) => (true, rest.trim_end()),
            None => (false, t),
        };
        if opens {
            in_quote = !in_quote;
        }
        if !(t.is_empty() && (opens || closes)) {
            let md = block(t);
            out.push(if in_quote { format!("> {md}") } else { md });
        }
        if closes {
            in_quote = !in_quote;
        }
    }
    if in_code {
        out.push("```".to_owned());
    }
    out.join("\n").trim_end().to_owned()
}

/// `{code}`, `{code:rust}`, `{code:title=x.rs|borderStyle=solid}`: the language, if any.
fn block_tag<'a>(t: &'a str, tag: &str) -> Option<&'a str> {
    let rest = t.strip_prefix('{')?.strip_prefix(tag)?;
    let (args, after) = rest.split_once('}')?;
    if !after.trim().is_empty() {
        return None;
    }
    let lang = args.strip_prefix(':').unwrap_or("");
    Some(if lang.contains('=') {
        ""
    } else {
        lang.split('|').next().unwrap_or("")
    })
}

/// One line outside code: a heading, a list item, or text.
fn block(t: &str) -> String {
    for level in 1..=6 {
        if let Some(rest) = t.strip_prefix(&format!("h{level}. ")) {
            return format!("{} {}", "#".repeat(level), inline(rest));
        }
    }
    let marks = t.chars().take_while(|c| *c == '*' || *c == '#').count();
    if marks > 0 && t[marks..].starts_with(' ') {
        let indent = "  ".repeat(marks - 1);
        let bullet = if t[..marks].ends_with('#') { "1." } else { "-" };
        return format!("{indent}{bullet} {}", inline(t[marks..].trim_start()));
    }
    inline(t)
}

/// Inline markup of one line.
fn inline(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len() + 8);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if !matches!(c, '{' | '[' | '!' | '*' | '_') {
            out.push(c);
            i += 1;
            continue;
        }
        let rest: String = chars[i..].iter().collect();
        if let Some(inner) = rest.strip_prefix("{{") {
            if let Some(end) = inner.find("}}") {
                out.push('`');
                out.push_str(&inner[..end]);
                out.push('`');
                i += inner[..end].chars().count() + 4;
                continue;
            }
        }
        if c == '[' {
            if let Some(end) = rest.find(']') {
                let inner = &rest[1..end];
                let md = match inner.split_once('|') {
                    Some((text, url)) => format!("[{text}]({url})"),
                    None if inner.contains("://") => format!("<{inner}>"),
                    None => format!("[{inner}]"),
                };
                out.push_str(&md);
                i += rest[..=end].chars().count();
                continue;
            }
        }
        if c == '!' && word_start(&chars, i) {
            if let Some(end) = rest[1..].find('!') {
                let inner = &rest[1..1 + end];
                let name = inner.split('|').next().unwrap_or(inner);
                if !name.is_empty() && !name.contains(' ') {
                    out.push_str(&format!("![{name}]({name})"));
                    i += rest[..end + 2].chars().count();
                    continue;
                }
            }
        }
        if (c == '*' || c == '_') && word_start(&chars, i) {
            if let Some(len) = emphasis(&chars[i + 1..], c) {
                let text: String = chars[i + 1..i + 1 + len].iter().collect();
                let mark = if c == '*' { "**" } else { "*" };
                out.push_str(&format!("{mark}{text}{mark}"));
                i += len + 2;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// Whether position `i` starts a word (markup opens only there).
fn word_start(chars: &[char], i: usize) -> bool {
    i == 0 || !chars[i - 1].is_alphanumeric()
}

/// The length of an emphasis run after its opening `mark`: it closes at the next `mark` that
/// ends a word, with no space just inside either end.
fn emphasis(after: &[char], mark: char) -> Option<usize> {
    if after.first().is_none_or(|c| c.is_whitespace()) {
        return None;
    }
    let end = after.iter().position(|c| *c == mark)?;
    let closes = after.get(end + 1).is_none_or(|c| !c.is_alphanumeric());
    (end > 0 && !after[end - 1].is_whitespace() && closes).then_some(end)
}

#[cfg(test)]
mod tests {
    use super::to_markdown;

    #[test]
    fn blocks_and_inline_markup_become_markdown() {
        let wiki = "h2. Steps\r\n# Open *checkout*\r\n## then _pay_\r\n* a {{flag}}\r\n\
                    See [the runbook|https://example.com/rb] or [https://example.com].\r\n\
                    !shot.png|width=640!\r\n{code:sql}\r\nSELECT * FROM t WHERE a_b = 1;\r\n{code}\r\n\
                    {quote}Customers *hate* it{quote}";
        assert_eq!(
            to_markdown(wiki),
            "## Steps\n1. Open **checkout**\n  1. then *pay*\n- a `flag`\n\
             See [the runbook](https://example.com/rb) or <https://example.com>.\n\
             ![shot.png](shot.png)\n```sql\nSELECT * FROM t WHERE a_b = 1;\n```\n\
             > Customers **hate** it"
        );
    }

    #[test]
    fn text_that_only_looks_like_markup_is_kept() {
        for plain in [
            "2 * 3 * 4",
            "snake_case_name",
            "a*b*c",
            "Wow! Really!",
            "price: 5*",
        ] {
            assert_eq!(to_markdown(plain), plain);
        }
    }
}
