//! The host languages and formats SQL is read from.

/// The host languages and formats SQL is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Language {
    Go,
    Rust,
    Java,
    Kotlin,
    TypeScript,
    /// TypeScript with JSX (`.tsx`): its own grammar.
    Tsx,
    /// JavaScript, JSX included.
    JavaScript,
    Python,
    /// A MyBatis XML mapper (any `.xml` file whose root element is `<mapper>`).
    MyBatis,
    /// sqlx's offline data: `.sqlx/query-*.json` (sqlx 0.7 on) or `sqlx-data.json` (before).
    SqlxOffline,
}

impl Language {
    pub fn name(self) -> &'static str {
        match self {
            Language::Go => "Go",
            Language::Rust => "Rust",
            Language::Java => "Java",
            Language::Kotlin => "Kotlin",
            Language::TypeScript => "TypeScript",
            Language::Tsx => "TSX",
            Language::JavaScript => "JavaScript",
            Language::Python => "Python",
            Language::MyBatis => "MyBatis XML",
            Language::SqlxOffline => "sqlx offline data",
        }
    }
}
