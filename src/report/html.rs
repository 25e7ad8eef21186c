//! What every page is built from: escaping, the page's frame and tables.
//!
//! A page is one file with its style and script inline and a Content-Security-Policy that
//! forbids every request (no fonts, scripts or images from anywhere), so it opens the same from
//! a `file://` URL on an air-gapped server as anywhere else.

use std::fmt::Write;

const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("sort.js");
const POLICY: &str =
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:";

/// `text` with HTML's special characters escaped, for element content and attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(ch),
        }
    }
    out
}

/// A whole page: `<head>` with the style, the policy and the title, then `body`, then the
/// script that makes `table.sortable` sortable.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{POLICY}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n{body}\n\
         <script>\n{SCRIPT}</script>\n</body>\n</html>\n",
        esc(title)
    )
}

/// One table cell: its text, and the number it sorts by where it is one.
#[derive(Debug, Clone, PartialEq)]
pub struct Td {
    pub html: String,
    pub sort: Option<f64>,
    /// `data-*` name under which the number is kept for readers of the page (tests, scripts).
    pub name: Option<&'static str>,
}

impl Td {
    /// Text, escaped.
    pub fn text(text: impl AsRef<str>) -> Td {
        Td {
            html: esc(text.as_ref()),
            sort: None,
            name: None,
        }
    }

    /// Markup as given (links, line breaks).
    pub fn html(html: String) -> Td {
        Td {
            html,
            sort: None,
            name: None,
        }
    }

    /// A number shown as `shown`, sorted by `value`; `-` where there is none.
    pub fn num(value: Option<f64>, shown: impl Fn(f64) -> String) -> Td {
        match value.filter(|v| v.is_finite()) {
            Some(v) => Td {
                html: esc(&shown(v)),
                sort: Some(v),
                name: None,
            },
            None => Td::text("-"),
        }
    }

    /// Keeps the number in a `data-NAME` attribute of the cell as well.
    pub fn named(mut self, name: &'static str) -> Td {
        self.name = Some(name);
        self
    }
}

/// A table with a header row; `sortable` lets a click on a column's header sort by it.
pub fn table(class: &str, columns: &[&str], rows: &[(String, Vec<Td>)]) -> String {
    // Wrapped so that a wide table scrolls on its own instead of widening the page.
    let mut out = format!(
        "<div class=\"scroll\"><table class=\"{}\">\n<thead><tr>",
        esc(class)
    );
    for c in columns {
        let _ = write!(out, "<th>{}</th>", esc(c));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for (attrs, cells) in rows {
        let _ = write!(out, "<tr{attrs}>");
        for td in cells {
            out.push_str("<td");
            if let Some(v) = td.sort {
                let _ = write!(out, " data-sort=\"{v}\"");
                if let Some(name) = td.name {
                    let _ = write!(out, " data-{name}=\"{v}\"");
                }
            }
            let _ = write!(out, ">{}</td>", td.html);
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>\n");
    out
}

/// Two columns of names and values, for provenance and summaries.
pub fn facts(rows: &[(&str, String)]) -> String {
    let mut out = String::from("<table class=\"facts\">\n");
    for (name, value) in rows {
        let _ = writeln!(
            out,
            "<tr><th>{}</th><td>{}</td></tr>",
            esc(name),
            esc(value)
        );
    }
    out.push_str("</table>\n");
    out
}

/// A chart's SVG as it goes in the page: inline, scaled to the page's width, without the XML
/// declaration a standalone file starts with.
pub fn figure(svg: &str, caption: &str) -> String {
    let svg = match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    };
    format!(
        "<figure>\n{svg}\n<figcaption>{}</figcaption>\n</figure>\n",
        esc(caption)
    )
}

/// Seconds since the Unix epoch as `2026-12-02 15:04 UTC`.
pub fn utc(unix_s: u64) -> String {
    let days = (unix_s / 86_400) as i64;
    let secs = unix_s % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        secs / 3600,
        secs % 3600 / 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_html_would_read_as_markup() {
        assert_eq!(esc("a<b & \"c\"'"), "a&lt;b &amp; &quot;c&quot;&#39;");
    }

    #[test]
    fn dates_are_utc_calendar_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        // date -u -d @1764687840
        assert_eq!(utc(1_764_687_840), "2025-12-02 15:04 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00 UTC");
    }

    #[test]
    fn a_page_allows_no_request_and_keeps_its_numbers() {
        let rows = vec![(
            " data-cell=\"1\"".to_string(),
            vec![
                Td::text("<x>"),
                Td::num(Some(2.5), |v| format!("{v:.1}")).named("rate"),
            ],
        )];
        let html = page("t", &table("sortable", &["a", "b"], &rows));
        assert!(html.contains("default-src 'none'"));
        assert!(html.contains("<td>&lt;x&gt;</td>"));
        assert!(html.contains("data-rate=\"2.5\""));
        assert!(!html.contains("http://") && !html.contains("https://"));
    }
}
