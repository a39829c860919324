//! Go constants of another file of the package: a Go package is one scope, and applications keep
//! their SQL in a `query.go` of package-level constants that the repository files of the same
//! directory pass to their database calls (boundary: `const estimateCount = `select …``
//! in `query.go`, `r.reader.Query(ctx, estimateCount, nil)` in `repository_alias_list.go`).
//!
//! Each file is still read on its own (and cached on its own): it offers its package-level SQL
//! constants and the names its database calls pass that it does not define ([`GoPackageSide`]).
//! Once every file of a scan is known, [`resolve`] joins them per package — the files of one
//! directory with the same `package` clause — and a constant some other file passes becomes a
//! query of the file that holds its text, once, named after its first call. A test file sees the
//! constants of its package; a file that is not a test sees no test file's.

use super::extraction::{EmbeddedQuery, GoPackageSide, HostPosition, PackageConstant, Unreadable};
use std::collections::BTreeMap;
use std::path::Path;

/// What [`resolve`] adds to one file.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Resolved {
    /// Its constants that other files pass to database calls.
    pub queries: Vec<EmbeddedQuery>,
    /// Its uses the package cannot answer, of calls that take only SQL.
    pub unreadable: Vec<Unreadable>,
}

/// For each of `files` (a path and its side, if it is Go), what its package adds to it; one entry
/// per file, in order. `queries_at` says where a file's own queries already start (a constant
/// passed in its own file too is not added twice).
pub fn resolve(
    files: &[(&Path, Option<&GoPackageSide>)],
    queries_at: &dyn Fn(usize) -> Vec<HostPosition>,
) -> Vec<Resolved> {
    let mut out: Vec<Resolved> = files.iter().map(|_| Resolved::default()).collect();
    let mut packages: BTreeMap<(&Path, &str), Vec<usize>> = BTreeMap::new();
    for (i, (path, side)) in files.iter().enumerate() {
        if let Some(side) = side.filter(|s| !s.is_empty()) {
            packages.entry((path.parent().unwrap_or(Path::new("")), side.package.as_str())).or_default().push(i);
        }
    }
    for members in packages.values() {
        // name → the files defining it (index, constant).
        let mut defined: BTreeMap<&str, Vec<(usize, &PackageConstant)>> = BTreeMap::new();
        for &i in members {
            for constant in files[i].1.map_or(&[][..], |s| s.constants.as_slice()) {
                defined.entry(constant.name.as_str()).or_default().push((i, constant));
            }
        }
        let mut added: Vec<(usize, &str)> = Vec::new();
        for &user in members {
            let Some(side) = files[user].1 else { continue };
            let user_is_test = is_test(files[user].0);
            for used in &side.uses {
                let visible: Vec<&(usize, &PackageConstant)> = defined
                    .get(used.name.as_str())
                    .into_iter()
                    .flatten()
                    .filter(|(i, _)| *i != user && (user_is_test || !is_test(files[*i].0)))
                    .collect();
                match visible.as_slice() {
                    [(owner, constant)] => {
                        if added.contains(&(*owner, constant.name.as_str()))
                            || queries_at(*owner).contains(&constant.map.start())
                        {
                            continue;
                        }
                        added.push((*owner, constant.name.as_str()));
                        let file =
                            files[user].0.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                        out[*owner].queries.push(EmbeddedQuery {
                            sql: constant.sql.clone(),
                            source: format!("{} in {file}:{}", used.source, used.at.line),
                            map: constant.map.clone(),
                        });
                    }
                    [] if used.certain => out[user].unreadable.push(Unreadable {
                        at: used.at,
                        source: used.source.clone(),
                        reason: format!("`{}` is not an SQL constant of this package", used.name),
                    }),
                    [] => {}
                    _ => {
                        // Defined in several files: build tags pick one (`query_postgres.go`,
                        // `query_sqlite.go`), which a reader of the source cannot know.
                        if used.certain {
                            out[user].unreadable.push(Unreadable {
                                at: used.at,
                                source: used.source.clone(),
                                reason: format!("`{}` is defined in more than one file of the package", used.name),
                            });
                        }
                    }
                }
            }
        }
    }
    for resolved in &mut out {
        resolved.queries.sort_by_key(|q| q.map.start());
    }
    out
}

fn is_test(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with("_test.go"))
}

#[cfg(test)]
mod tests {
    use super::super::extraction::{PackageUse, SourceMap};
    use super::*;

    fn constant(name: &str, sql: &str, line: usize) -> PackageConstant {
        let mut map = SourceMap::default();
        map.push(0, HostPosition { line, column: 2 });
        PackageConstant { name: name.into(), sql: sql.into(), map }
    }

    fn uses(name: &str, line: usize, certain: bool) -> PackageUse {
        PackageUse { name: name.into(), at: HostPosition { line, column: 30 }, source: "pgx Query".into(), certain }
    }

    fn side(package: &str, constants: Vec<PackageConstant>, used: Vec<PackageUse>) -> GoPackageSide {
        GoPackageSide { package: package.into(), constants, uses: used }
    }

    #[test]
    fn a_constant_passed_in_another_file_of_the_package_is_a_query_of_its_own_file() {
        let query = side("target", vec![constant("listAliases", "SELECT * FROM alias", 7)], vec![]);
        let repository = side("target", vec![], vec![uses("listAliases", 40, false), uses("listAliases", 90, false)]);
        let elsewhere = side("other", vec![], vec![uses("listAliases", 3, true)]);
        let files = [
            (Path::new("internal/alias/query.go"), Some(&query)),
            (Path::new("internal/alias/repository.go"), Some(&repository)),
            (Path::new("internal/other/repository.go"), Some(&elsewhere)),
        ];
        let resolved = resolve(&files, &|_| Vec::new());
        assert_eq!(resolved[0].queries.len(), 1, "once, named after its first call");
        assert_eq!(resolved[0].queries[0].source, "pgx Query in repository.go:40");
        assert_eq!(resolved[0].queries[0].map.start(), HostPosition { line: 7, column: 2 });
        assert_eq!(resolved[1], Resolved::default());
        // Another package does not see it; a call that takes only SQL says so.
        assert_eq!(resolved[2].unreadable.len(), 1);
        assert_eq!(resolved[2].unreadable[0].reason, "`listAliases` is not an SQL constant of this package");
    }

    #[test]
    fn tests_see_the_package_and_the_package_does_not_see_tests() {
        let query = side("store", vec![constant("q", "SELECT 1 FROM t", 3)], vec![uses("fixture", 9, false)]);
        let test = side("store", vec![constant("fixture", "DELETE FROM t", 5)], vec![uses("q", 12, false)]);
        let files = [(Path::new("store/query.go"), Some(&query)), (Path::new("store/query_test.go"), Some(&test))];
        let resolved = resolve(&files, &|_| Vec::new());
        assert_eq!(resolved[0].queries.len(), 1);
        assert!(resolved[1].queries.is_empty(), "{:?}", resolved[1]);
    }

    #[test]
    fn a_name_defined_in_two_files_or_already_read_in_its_own_is_not_added() {
        let postgres = side("store", vec![constant("q", "SELECT 1 FROM t", 3)], vec![]);
        let sqlite = side("store", vec![constant("q", "SELECT 1 FROM t", 3)], vec![]);
        let caller = side("store", vec![], vec![uses("q", 4, false)]);
        let files = [
            (Path::new("store/q_postgres.go"), Some(&postgres)),
            (Path::new("store/q_sqlite.go"), Some(&sqlite)),
            (Path::new("store/repo.go"), Some(&caller)),
        ];
        assert!(resolve(&files, &|_| Vec::new()).iter().all(|r| r.queries.is_empty()));
        let files = [(Path::new("store/q_postgres.go"), Some(&postgres)), (Path::new("store/repo.go"), Some(&caller))];
        let already = resolve(&files, &|i| if i == 0 { vec![HostPosition { line: 3, column: 2 }] } else { Vec::new() });
        assert!(already[0].queries.is_empty());
    }
}
