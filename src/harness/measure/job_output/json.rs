//! The progress-file protocol: one JSON object a line, `{"samples": N, "t": unix_s}`.

use super::captures::{MAX_SAMPLES, Reject};

/// One progress-file line, checked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JsonLine {
    pub samples: f64,
    /// When the job says it was written; the time of reading when absent.
    pub t: Option<f64>,
    pub iterations: Option<f64>,
}

fn malformed(line: &str, why: &str) -> Reject {
    Reject::Malformed(format!(
        "{why}: {}",
        line.chars().take(200).collect::<String>()
    ))
}

pub fn parse_json_line(line: &str) -> Result<JsonLine, Reject> {
    let v: serde_json::Value =
        serde_json::from_str(line).map_err(|_| malformed(line, "not JSON"))?;
    let field = |name: &'static str| -> Result<Option<f64>, Reject> {
        match v.get(name) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(x) => match x.as_f64() {
                Some(n) if n.is_finite() && (0.0..=MAX_SAMPLES).contains(&n) => Ok(Some(n)),
                _ => Err(Reject::NotANumber {
                    name,
                    text: x.to_string().chars().take(40).collect(),
                }),
            },
        }
    };
    let samples = field("samples")?.ok_or_else(|| malformed(line, "no \"samples\""))?;
    let t = match v.get("t") {
        None | Some(serde_json::Value::Null) => None,
        Some(x) => match x.as_f64() {
            Some(t) if t.is_finite() => Some(t),
            _ => {
                return Err(Reject::Time {
                    t: f64::NAN,
                    why: "not a number",
                });
            }
        },
    };
    Ok(JsonLine {
        samples,
        t,
        iterations: field("iterations")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_checks_fields() {
        assert_eq!(
            parse_json_line(r#"{"samples": 40960, "iterations": 160, "t": 1763782212.25}"#),
            Ok(JsonLine {
                samples: 40960.0,
                t: Some(1763782212.25),
                iterations: Some(160.0)
            })
        );
        assert!(parse_json_line(r#"{"samples": 10}"#).unwrap().t.is_none());
        for bad in [
            "not json",
            r#"{"iterations": 3}"#,
            r#"{"samples": -1}"#,
            r#"{"samples": "12"}"#,
            r#"{"samples": 1e300}"#,
            r#"{"samples": 1, "t": "now"}"#,
            r#"{"samples": 1, "iterations": -2}"#,
        ] {
            assert!(parse_json_line(bad).is_err(), "{bad}");
        }
    }
}
