//! The project's own functions that take SQL (`[queries] calls` in sluice.toml): applications that
//! pass every query through a wrapper of their own (umami's `rawQuery(sql, params)` around
//! Prisma's `$queryRawUnsafe`) have no call Sluice knows, and read zero queries without it.
//!
//! An entry is a function or method name (`rawQuery`: any call whose callee ends in it,
//! `rawQuery(…)`, `prisma.rawQuery(…)`), or a dotted path (`prisma.rawQuery`: that callee only,
//! as written). The SQL is the call's first argument (in Go, after a context and destinations
//! written `&dest`: zdb's `zdb.Get(ctx, &u, query)`). Read in Go, TypeScript, JavaScript, Rust, Python and Java (not Kotlin).

/// The configured wrapper calls.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ProjectCalls {
    names: Vec<String>,
}

impl ProjectCalls {
    pub fn new(names: impl IntoIterator<Item = String>) -> ProjectCalls {
        ProjectCalls { names: names.into_iter().collect() }
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Whether `text` may call one of them (a prefilter: the grammar decides).
    pub fn may_be_called_in(&self, text: &str) -> bool {
        self.names.iter().any(|name| text.contains(name.rsplit('.').next().unwrap_or(name)))
    }

    /// Whether an entry ends in `name` (a call's function or method name): only then is the
    /// callee's path worth resolving for [`ProjectCalls::matching`].
    pub fn may_match(&self, name: &str) -> bool {
        self.names.iter().any(|entry| entry.rsplit('.').next() == Some(name))
    }

    /// The entry `callee` (a call's function as written, `prisma.rawQuery`) matches.
    pub fn matching(&self, callee: &str) -> Option<&str> {
        let callee: String = callee.chars().filter(|c| !c.is_whitespace()).collect();
        let last = callee.rsplit('.').next().unwrap_or(&callee);
        self.names
            .iter()
            .find(|name| if name.contains('.') { **name == callee } else { *name == last })
            .map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_matches_any_receiver_and_a_path_only_itself() {
        let calls = ProjectCalls::new(["rawQuery".to_string(), "store.run".to_string()]);
        assert_eq!(calls.matching("rawQuery"), Some("rawQuery"));
        assert_eq!(calls.matching("prisma.rawQuery"), Some("rawQuery"));
        assert_eq!(calls.matching("store.run"), Some("store.run"));
        assert_eq!(calls.matching("other.run"), None);
        assert_eq!(calls.matching("rawQueryAll"), None);
        assert!(calls.may_match("rawQuery") && calls.may_match("run") && !calls.may_match("rawQueryAll"));
    }
}
