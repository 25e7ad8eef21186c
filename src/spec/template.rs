//! `{name}` templating of command arguments and environment values. `{{` and `}}` are literal
//! braces. An unknown name is an error rather than being passed through, so a typo never
//! reaches the job as a literal `{batchh}`.

use std::collections::BTreeMap;

pub type Vars = BTreeMap<String, String>;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TemplateError {
    #[error("{text:?}: unknown template variable {{{name}}}; known: {known}")]
    Unknown {
        text: String,
        name: String,
        known: String,
    },
    #[error("{text:?}: unbalanced brace (write {{{{ or }}}} for a literal one)")]
    Unbalanced { text: String },
}

pub fn render(text: &str, vars: &Vars) -> Result<String, TemplateError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let unbalanced = || TemplateError::Unbalanced {
        text: text.to_string(),
    };
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push_str(&tail[..1]);
            rest = &tail[2..];
        } else if tail.starts_with('}') {
            return Err(unbalanced());
        } else {
            let end = tail.find('}').ok_or_else(unbalanced)?;
            let name = &tail[1..end];
            let value = vars.get(name).ok_or_else(|| TemplateError::Unknown {
                text: text.to_string(),
                name: name.to_string(),
                known: vars
                    .keys()
                    .map(|k| format!("{{{k}}}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
            out.push_str(value);
            rest = &tail[end + 1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Vars {
        [("batch", "64"), ("cpus", "0.5")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn substitutes_known_names_and_escapes() {
        assert_eq!(render("--batch={batch}", &vars()).unwrap(), "--batch=64");
        assert_eq!(render("{{x}} {cpus}", &vars()).unwrap(), "{x} 0.5");
        assert_eq!(render("plain", &vars()).unwrap(), "plain");
    }

    #[test]
    fn unknown_and_unbalanced_are_errors() {
        let e = render("{batchh}", &vars()).unwrap_err();
        assert!(e.to_string().contains("{batchh}") && e.to_string().contains("{batch}"));
        assert!(matches!(
            render("{batch", &vars()),
            Err(TemplateError::Unbalanced { .. })
        ));
        assert!(matches!(
            render("a}b", &vars()),
            Err(TemplateError::Unbalanced { .. })
        ));
    }
}
