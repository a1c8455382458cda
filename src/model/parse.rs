//! Strict parsing of model answers, repairing only harmless wrapping.

use serde::de::DeserializeOwned;

/// The JSON object inside `text`: the text itself, or the inside of a code
/// fence, or the span from the first `{` to its matching `}` when prose
/// surrounds it. Nothing else is repaired.
pub fn extract_json(text: &str) -> Option<&str> {
    let t = text.trim();
    let t = strip_fence(t).unwrap_or(t).trim();
    let start = t.find('{')?;
    let end = matching_brace(&t[start..])? + start;
    Some(&t[start..=end])
}

fn strip_fence(t: &str) -> Option<&str> {
    let open = t.find("```")?;
    let after = &t[open + 3..];
    let body_start = after.find('\n')? + 1;
    let body = &after[body_start..];
    let close = body.find("```")?;
    Some(&body[..close])
}

fn matching_brace(s: &str) -> Option<usize> {
    let (mut depth, mut in_str, mut escaped) = (0usize, false, false);
    for (i, c) in s.char_indices() {
        if in_str {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Parses `text` as the answer type `T`, strictly (unknown fields and wrong
/// types are errors), after [`extract_json`].
pub fn parse_answer<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    let json = extract_json(text).ok_or_else(|| "no JSON object in the answer".to_string())?;
    crate::codec::from_json(json).map_err(|e| format!("answer does not fit the schema: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct A {
        boundary: f32,
    }

    #[test]
    fn parse_repairs_fences_and_prose() {
        let want = A { boundary: 0.5 };
        assert_eq!(parse_answer::<A>("{\"boundary\": 0.5}").unwrap(), want);
        assert_eq!(
            parse_answer::<A>("```json\n{\"boundary\": 0.5}\n```").unwrap(),
            want
        );
        assert_eq!(
            parse_answer::<A>("Sure! {\"boundary\": 0.5} Hope it helps.").unwrap(),
            want
        );
    }

    #[test]
    fn parse_rejects_wrong_shapes() {
        assert!(parse_answer::<A>("{\"boundary\": \"high\"}").is_err());
        assert!(parse_answer::<A>("{\"boundary\": 0.5, \"why\": 1}").is_err());
        assert!(parse_answer::<A>("no json here").is_err());
        assert!(parse_answer::<A>("{\"boundary\": 0.5").is_err());
    }

    #[test]
    fn braces_inside_strings_do_not_confuse_extraction() {
        assert_eq!(extract_json("x {\"a\": \"}{\"} y"), Some("{\"a\": \"}{\"}"));
    }
}
