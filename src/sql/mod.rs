//! The SQL front end: splitting files into statements, parsing them, and the small typed
//! view of statements the schema model and the rules work with. Only this module knows sqlparser.

pub mod catalog;
pub mod ddl;
pub mod depth;
pub mod dialect;
pub mod fingerprint;
pub mod from_ast;
pub mod lex;
pub mod names;
pub mod parse;
pub mod parser_gaps;
pub mod placeholders;
pub mod plain_tokens;
pub mod plpgsql;
pub mod psql;
pub mod query;
pub mod recognize;
pub mod source;
pub mod split;
pub mod statement;
pub mod types;
