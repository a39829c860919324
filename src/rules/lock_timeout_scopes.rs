//! What `missing-lock-timeout` keeps of a file while its statements are checked (in
//! `MigrationState`): the scopes — explicit transaction and the tool's — that already have
//! their finding.

use crate::sql::ddl::Ddl;
use crate::sql::source::SourceFile;
use std::collections::HashSet;

/// The explicit `BEGIN … COMMIT` blocks of a file, as (first line, last line).
pub(super) fn transaction_blocks(file: &SourceFile) -> Vec<(usize, usize)> {
    let mut blocks: Vec<(usize, usize)> = Vec::new();
    let mut open = None;
    for statement in &file.parsed.statements {
        match statement.ddl {
            Ddl::Begin => open = Some(statement.span.line),
            Ddl::Commit | Ddl::Rollback => blocks.extend(open.take().map(|begin| (begin, statement.span.line))),
            _ => {}
        }
    }
    blocks.extend(open.map(|begin| (begin, usize::MAX)));
    blocks
}

/// Which of `blocks` holds `line` (`None`: outside any).
pub(super) fn block_of(blocks: &[(usize, usize)], line: usize) -> Option<usize> {
    blocks.iter().position(|(begin, end)| (*begin..=*end).contains(&line))
}

/// What one finding covers, and the key [`super::missing_lock_timeout`]'s `finish_file` folds by: the
/// explicit transaction (by its place in the file) and the migration tool's transaction (the
/// `transaction` fact). Checking and folding must key a statement alike: both use [`scope`].
type Scope = (Option<usize>, String);

pub(super) fn scope(blocks: &[(usize, usize)], line: usize, transaction: &str) -> Scope {
    (block_of(blocks, line), transaction.to_string())
}

/// The scopes of a file that already have their finding, kept while its statements are checked
/// (in `MigrationState`): later statements of a scope get a bare finding, with only what the
/// fold reads of them. The message and advice of each of Lemmy's 1,700 locking statements, of
/// which the fold keeps 293, were a percent of linting the history.
#[derive(Debug, Clone, Default)]
pub struct Scopes {
    /// The file's transaction blocks, found at its first finding.
    blocks: Option<Vec<(usize, usize)>>,
    reported: HashSet<Scope, foldhash::fast::FixedState>,
}

impl Scopes {
    /// Whether this is the first finding of its scope, which the fold keeps (and so must be whole).
    pub(super) fn first(&mut self, file: &SourceFile, line: usize, transaction: &str) -> bool {
        let blocks = self.blocks.get_or_insert_with(|| transaction_blocks(file));
        self.reported.insert(scope(blocks, line, transaction))
    }
}
