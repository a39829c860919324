//! The SQL front end: splitting files into statements, parsing them, and the small typed
//! view of statements the schema model and the rules work with. Only this module knows sqlparser.

pub mod split;
