//! The table and column names of the policy files, written as SQL writes identifiers (`orders`,
//! `audit.events`, `"Account"`, `app."Events"`) and resolved as PostgreSQL resolves them
//! (`scan.l`, `downcase_identifier`, `truncate_identifier`): unquoted parts fold ASCII letters to
//! lower case, quoted ones are kept (`""` is a quote), every part is cut to 63 bytes, and the
//! default `public` schema is dropped, as Sluice names relations.

/// PostgreSQL's longest identifier, in bytes (`NAMEDATALEN - 1`).
const MAX_BYTES: usize = 63;

/// `text` resolved to the name PostgreSQL gives it; `None` when it is not an identifier or a
/// schema-qualified one.
pub fn resolve(text: &str) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    let mut chars = text.trim().chars().peekable();
    loop {
        let mut part = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next()? {
                    '"' if chars.peek() == Some(&'"') => {
                        chars.next();
                        part.push('"');
                    }
                    '"' => break,
                    c => part.push(c),
                }
            }
            if part.is_empty() {
                return None;
            }
        } else {
            while let Some(&c) = chars.peek().filter(|c| c.is_alphanumeric() || **c == '_' || **c == '$') {
                part.push(c.to_ascii_lowercase());
                chars.next();
            }
            if part.is_empty() || part.starts_with(|c: char| c.is_ascii_digit() || c == '$') {
                return None;
            }
        }
        parts.push(truncate(part));
        match chars.next() {
            None => break,
            Some('.') => continue,
            Some(_) => return None,
        }
    }
    match parts.as_slice() {
        [name] => Some(name.clone()),
        [schema, name] if schema == "public" => Some(name.clone()),
        [schema, name] => Some(format!("{schema}.{name}")),
        _ => None,
    }
}

fn truncate(mut name: String) -> String {
    let mut end = MAX_BYTES.min(name.len());
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name.truncate(end);
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_as_postgresql_resolves_identifiers() {
        assert_eq!(resolve("Account").as_deref(), Some("account"));
        assert_eq!(resolve("\"Account\"").as_deref(), Some("Account"));
        assert_eq!(resolve("public.\"Account\"").as_deref(), Some("Account"));
        assert_eq!(resolve("Audit.\"Events\"").as_deref(), Some("audit.Events"));
        assert_eq!(resolve("\"we\"\"ird\"").as_deref(), Some("we\"ird"));
        assert_eq!(resolve(" orders ").as_deref(), Some("orders"));
        assert_eq!(resolve(&"x".repeat(70)).map(|n| n.len()), Some(63));
        for bad in ["not a name", "", "\"\"", "a.b.c", "\"open", "1abc", "a-b"] {
            assert_eq!(resolve(bad), None, "{bad}");
        }
    }
}
