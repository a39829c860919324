//! Application code as a query source (`[queries] code`): the files below the code
//! directories that [`code::language_of`] reads, each handed to [`code::extract`], and what it
//! found made [`Query`] values; what it could not read exactly becomes one note per file,
//! with the line numbers.

use super::code::{self, Extraction};
use super::code_listing;
pub use super::scan_cache::ScanCache;
use super::scan_cache::{text_digest, Entries, Entry, Extracted, Known, Stat};
use super::{Place, Query, Source};
use crate::cache::Key;
use crate::error::{read_text, Error, Result};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// (file, note): SQL at database calls that could not be read exactly, or query text that is
/// not SQL, one note per file.
pub type FileNote = (String, String);

/// One host file's queries and its note.
pub type FileScan = (Vec<Query>, Option<FileNote>);

/// What the code of a project yielded.
#[derive(Debug, Default)]
pub struct Scanned {
    pub queries: Vec<Query>,
    pub notes: Vec<FileNote>,
    /// Files read (of a language Sluice reads SQL from).
    pub files: usize,
}

/// The files below `dirs` that hold code of a language Sluice reads SQL from
/// ([`code_listing::list`]), sorted.
pub fn list(dirs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    Ok(code_listing::list(dirs, &Entries::default())?.files)
}

/// Reads and scans the code below `dirs` on disk, in parallel; `display` names a file as
/// findings show it.
pub fn on_disk(dirs: &[PathBuf], display: &(dyn Fn(&Path) -> String + Sync)) -> Result<Scanned> {
    on_disk_cached(dirs, &Project::default(), display, &ScanCache::disabled())
}

/// What the project's configuration adds to the scan: its migrations directory (code under it is
/// migration code) and its own functions that take SQL (`[queries] calls`).
#[derive(Debug, Default)]
pub struct Project<'a> {
    pub migrations: Option<&'a Path>,
    pub calls: code::ProjectCalls,
}

/// One file as the scan read it, unless the cache knows it unchanged and inert: its name as
/// findings show it, its extraction, its text (unless the cache vouched for a file without
/// queries), and the digest of that text, when known.
struct Read {
    shown: String,
    extracted: Extracted,
    text: Option<Arc<str>>,
    digest: Option<Key>,
}

/// [`on_disk`], skipping what `cache` knows of files that have not changed: a file whose
/// metadata is what it was is neither read nor parsed (most of an application's code, which
/// holds no SQL, is not even named); one that holds queries is read but neither parsed nor
/// hashed (a finding quotes its text; its metadata vouches for it, as for git's index); any
/// other is read, and parsed unless its text is what the cache read.
pub fn on_disk_cached(
    dirs: &[PathBuf],
    project: &Project,
    display: &(dyn Fn(&Path) -> String + Sync),
    cache: &ScanCache,
) -> Result<Scanned> {
    let observed = Entries::starting_now();
    // Absolute paths: showing each of 7,000 files relative to the project's root then asks the
    // kernel for no working directory.
    let dirs: Vec<PathBuf> = dirs.iter().map(|d| absolute(d)).collect();
    let migrations = project.migrations.map(absolute);
    let known = if cache.is_enabled() { cache.load(&dirs, &project.calls) } else { Entries::default() };
    let listed = code_listing::list(&dirs, &known)?;
    let files = &listed.files;
    let each: Vec<(Kept<'_>, Option<Read>)> = files
        .par_iter()
        .map(|path| {
            // Metadata before the text: a write after the `stat` shows at the next run.
            let stat = cache.is_enabled().then(|| std::fs::metadata(path).ok().map(|m| Stat::of(&m))).flatten();
            // Most of an application's code: unchanged, and known to yield nothing.
            if let Some(entry) = known.unchanged_inert(path, stat.as_ref()) {
                return Ok((Kept::Known(entry), None));
            }
            let shown = display(path);
            let entry = match known.lookup(path, &shown, stat.as_ref()) {
                Known::Unchanged(entry) => {
                    let text = match entry.extracted.queries.is_empty() {
                        true => None,
                        false => Some(read_text(path)?.into()),
                    };
                    let extracted = entry.extracted.clone();
                    return Ok((Kept::Known(entry), Some(Read { shown, extracted, text, digest: Some(entry.digest) })));
                }
                Known::Suspect(entry) => Some(entry),
                Known::Unknown => None,
            };
            let text: Arc<str> = read_text(path)?.into();
            let digest = text_digest(&text);
            let extracted = match entry.filter(|e| e.digest == digest) {
                Some(entry) => entry.extracted.clone(),
                None => extract(&shown, path, &text, &project.calls)?,
            };
            // A racily clean entry proved unchanged is fresh too: saved as observed now, it is
            // trusted on its metadata next time.
            let kept = match stat {
                Some(stat) => {
                    Kept::Fresh(Box::new(Entry { display: shown.clone(), stat, digest, extracted: extracted.clone() }))
                }
                None => Kept::Nothing,
            };
            Ok((kept, Some(Read { shown, extracted, text: Some(text), digest: Some(digest) })))
        })
        .collect::<Result<_>>()?;
    let (kept, reads): (Vec<Kept<'_>>, Vec<Option<Read>>) = each.into_iter().unzip();
    // The files that yield something, or may for their package; the inert ones play no part.
    let mut live: Vec<(&Path, Read)> =
        files.iter().zip(reads).filter_map(|(path, read)| Some((path.as_path(), read?))).collect();
    join_packages(live.iter_mut().map(|(path, read)| (*path, read.shown.as_str(), &mut read.extracted)).collect(), &[]);
    let decided = code::other_databases(live.iter().map(|(p, read)| (*p, read.extracted.databases.as_slice())));
    let mut scanned = Scanned { files: files.len(), ..Scanned::default() };
    for ((path, read), other) in live.into_iter().zip(decided) {
        let Read { shown, extracted, text, digest } = read;
        // Below the directories scanned (a `migrations` directory under `internal`), or, when
        // findings name files from the project's root, below that (`code = ["migrations"]`).
        let below_dir = dirs.iter().find_map(|dir| path.strip_prefix(dir).ok()).unwrap_or(path);
        let relative = if Path::new(&shown).is_relative() { Path::new(&shown) } else { below_dir };
        let extracted = match set_aside_as(path, relative, migrations.as_deref(), &extracted, other) {
            Some(what) => set_aside(&shown, extracted, what),
            None => extracted,
        };
        // A file the cache vouched for without queries, given some by its package: its text is
        // quoted by findings.
        let text = match text {
            Some(text) => text,
            None if !extracted.queries.is_empty() => read_text(path)?.into(),
            None => Arc::from(""),
        };
        let (queries, note) = to_scan(shown, extracted, Host { text, digest });
        scanned.queries.extend(queries);
        scanned.notes.extend(note);
    }
    // Nothing to write when every file and directory was served as the cache has it: most warm
    // runs build no new cache.
    let fresh = kept.iter().any(|k| matches!(k, Kept::Fresh(_)));
    let same_files = kept.iter().filter(|k| matches!(k, Kept::Known(_))).count() == known.files.len();
    if cache.is_enabled() && (fresh || !same_files || listed.changed(&known)) {
        let mut entries = Entries { dirs: listed.dirs(), outside: listed.outside.clone(), ..observed };
        for (path, entry) in files.iter().zip(kept) {
            match entry {
                Kept::Known(entry) => entries.insert(path, entry.clone()),
                Kept::Fresh(entry) => entries.insert(path, *entry),
                Kept::Nothing => {}
            }
        }
        cache.save(&dirs, &project.calls, &entries);
    }
    Ok(scanned)
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// What the cache keeps of a file after a run.
enum Kept<'a> {
    /// The entry it had.
    Known(&'a Entry),
    /// A new one (the file changed, is new, or was racily clean and proved unchanged).
    Fresh(Box<Entry>),
    /// None: its metadata cannot be read.
    Nothing,
}

/// The queries of host files (`display` names each, and gives its language), and their notes:
/// a Go file is judged with its package, the other files of its directory given by `siblings`
/// (each as [`sibling`] reads it) when they are not among `files`.
pub fn scan(
    files: Vec<(String, Arc<str>)>,
    siblings: &[(String, Sibling)],
    project: &Project,
) -> Result<Vec<FileScan>> {
    let extracted: Vec<Extracted> = files
        .par_iter()
        .map(|(display, text)| extract(display, Path::new(display), text, &project.calls))
        .collect::<Result<_>>()?;
    let files = files.into_iter().zip(extracted).map(|((display, text), extracted)| (display, extracted, text));
    Ok(finish(files.collect(), siblings, project))
}

/// What [`extract`] found in host files (display, extraction, text) made queries and notes, once
/// the whole set is known: a Go file's SQL is its package's database's (the other files of its
/// directory among `files` or `siblings`), and migration code is set aside.
pub fn finish(
    mut files: Vec<(String, Extracted, Arc<str>)>,
    siblings: &[(String, Sibling)],
    project: &Project,
) -> Vec<FileScan> {
    join_packages(
        files.iter_mut().map(|(display, e, _)| (Path::new(display.as_str()), display.as_str(), e)).collect(),
        siblings,
    );
    let all = files
        .iter()
        .map(|(display, e, _)| (Path::new(display.as_str()), e.databases.as_slice()))
        .chain(siblings.iter().map(|(display, s)| (Path::new(display.as_str()), s.evidence.as_slice())));
    let decided = code::other_databases(all);
    files
        .into_iter()
        .zip(decided)
        .map(|((display, extracted, text), other)| {
            let path = Path::new(&display);
            let extracted = match set_aside_as(path, path, project.migrations, &extracted, other) {
                Some(what) => set_aside(&display, extracted, what),
                None => extracted,
            };
            to_scan(display, extracted, Host { text, digest: None })
        })
        .collect()
}

/// What a sibling of a scanned Go file shows and offers (its text read, not its queries).
pub fn sibling(display: &str, text: &str, calls: &code::ProjectCalls) -> Sibling {
    match code::extract_with(Path::new(display), text, calls) {
        Ok(extraction) => Sibling { evidence: extraction.databases, go_package: extraction.go_package },
        Err(_) => Sibling::default(),
    }
}

/// What one host file's extraction keeps: its queries, its note and its signs of a database.
pub fn extract(display: &str, path: &Path, text: &str, calls: &code::ProjectCalls) -> Result<Extracted> {
    let extraction = code::extract_with(path, text, calls).map_err(|e| match e {
        Error::Invalid { line, message, .. } => Error::invalid(display, line, message),
        other => other,
    })?;
    let note = note(display, &extraction);
    Ok(Extracted {
        statements: extraction.queries.len() + extraction.unreadable.len(),
        queries: extraction.queries,
        note,
        databases: extraction.databases,
        migration: extraction.migration,
        go_package: extraction.go_package,
    })
}

/// A file whose code is another database's or a migration's (`what`: "SQLite code (the package
/// imports modernc.org/sqlite)"): no query, and one note that says so.
fn set_aside(display: &str, extracted: Extracted, what: String) -> Extracted {
    let note = (extracted.statements > 0)
        .then(|| format!("{display}: {what}: {} statement(s) not checked.", extracted.statements));
    Extracted { queries: Vec::new(), note, statements: 0, ..extracted }
}

/// What sets a file's code aside, if anything: it is migration code (`relative` is its path below
/// the directory scanned; `migrations` the configured migrations directory), test code, or its
/// package's or its own code is another database's.
fn set_aside_as(
    path: &Path,
    relative: &Path,
    migrations: Option<&Path>,
    extracted: &Extracted,
    other: Option<code::OtherDatabase>,
) -> Option<String> {
    let under_migrations = migrations.is_some_and(|dir| path.starts_with(dir));
    let migration = code::migration_code::by_path(relative)
        .or_else(|| under_migrations.then(|| "under the migrations directory".to_string()))
        .or_else(|| extracted.migration.clone());
    if let Some(why) = migration {
        return Some(format!("migration code ({why})"));
    }
    if let Some(why) = code::test_code::by_path(relative) {
        return Some(format!("test code ({why})"));
    }
    other.map(|other| format!("{} code ({})", other.database, other.shown_by))
}

/// A host file's text, and its digest when the scan already knows it ([`text_digest`]).
pub struct Host {
    pub text: Arc<str>,
    pub digest: Option<Key>,
}

/// The queries of `extracted` as the rules take them, read out of `host`.
pub fn to_scan(display: String, extracted: Extracted, host: Host) -> FileScan {
    let note = extracted.note.map(|note| (display.clone(), note));
    let queries = extracted
        .queries
        .into_iter()
        .map(|q| Query {
            file: display.clone(),
            sql: q.sql.into(),
            source: Source::Code(q.source),
            place: Place::Embedded { map: q.map, host: Arc::clone(&host.text), digest: host.digest },
        })
        .collect();
    (queries, note)
}

/// "src/db.go: 2 SQL strings at database calls are built at run time and were not checked:
/// line 12 (pgx Query: identifier interpolated with fmt.Sprintf), line 40 (…)."
fn note(display: &str, extraction: &Extraction) -> Option<String> {
    let mut parts = Vec::new();
    if !extraction.unreadable.is_empty() {
        parts.push(unreadable_part(&extraction.unreadable));
    }
    for other in &extraction.other_database {
        parts.push(format!(
            "{} statement(s) for {} ({}) were not checked",
            other.statements, other.database, other.shown_by
        ));
    }
    if extraction.test_statements > 0 {
        parts.push(format!(
            "{} statement(s) in test code (a `#[cfg(test)]` module) were not checked",
            extraction.test_statements
        ));
    }
    if !extraction.skipped.is_empty() {
        let lines: Vec<String> =
            extraction.skipped.iter().map(|s| format!("line {} ({})", s.at.line, s.reason)).collect();
        parts.push(format!(
            "{} query text(s) that are not SQL were skipped: {}",
            extraction.skipped.len(),
            lines.join(", ")
        ));
    }
    (!parts.is_empty()).then(|| format!("{display}: {}.", parts.join("; ")))
}

fn unreadable_part(unreadable: &[code::Unreadable]) -> String {
    let lines: Vec<String> =
        unreadable.iter().map(|u| format!("line {} ({}: {})", u.at.line, u.source, u.reason)).collect();
    format!(
        "{} SQL string(s) at database calls are built at run time and were not checked: {}",
        unreadable.len(),
        lines.join(", ")
    )
}

/// Adds what the file's Go package adds to it (the queries its constants are in other files,
/// the names of its calls the package cannot answer) to what its own extraction kept.
fn add_package(display: &str, extracted: &mut Extracted, resolved: code::go_package::Resolved) {
    extracted.statements += resolved.queries.len() + resolved.unreadable.len();
    extracted.queries.extend(resolved.queries);
    extracted.queries.sort_by_key(|q| q.map.start());
    if !resolved.unreadable.is_empty() {
        let part = unreadable_part(&resolved.unreadable);
        extracted.note = Some(match extracted.note.take() {
            Some(note) => format!("{}; {part}.", note.trim_end_matches('.')),
            None => format!("{display}: {part}."),
        });
    }
}

/// Joins the Go files among `files` (path, display, what was extracted) with their packages
/// ([`code::go_package::resolve`]); `siblings` are other files of their packages, not scanned.
fn join_packages(mut files: Vec<(&Path, &str, &mut Extracted)>, siblings: &[(String, Sibling)]) {
    let resolved = {
        let sides: Vec<(&Path, Option<&code::GoPackageSide>)> = files
            .iter()
            .map(|(path, _, e)| (*path, e.go_package.as_ref()))
            .chain(siblings.iter().map(|(display, s)| (Path::new(display.as_str()), s.go_package.as_ref())))
            .collect();
        if sides.iter().all(|(_, side)| side.is_none()) {
            return;
        }
        let starts =
            |i: usize| files.get(i).map_or_else(Vec::new, |f| f.2.queries.iter().map(|q| q.map.start()).collect());
        code::go_package::resolve(&sides, &starts)
    };
    for ((_, display, extracted), resolved) in files.iter_mut().zip(resolved) {
        if resolved != code::go_package::Resolved::default() {
            add_package(display, extracted, resolved);
        }
    }
}

/// Another file of a scanned Go file's package, not scanned itself: what it shows of its
/// database, and what it offers its package and asks of it.
#[derive(Debug, Clone, Default)]
pub struct Sibling {
    pub evidence: Vec<code::Evidence>,
    pub go_package: Option<code::GoPackageSide>,
}

impl Sibling {
    /// What the cache kept of it.
    pub fn of(extracted: &Extracted) -> Sibling {
        Sibling { evidence: extracted.databases.clone(), go_package: extracted.go_package.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    const QUERY: &str =
        "package store\n\nfunc Get(s *Store) {\n\ts.pool.Query(ctx, \"SELECT id FROM users WHERE id = $1\", id)\n}\n";
    /// The same length as [`QUERY`], another table.
    const OTHER: &str =
        "package store\n\nfunc Get(s *Store) {\n\ts.pool.Query(ctx, \"SELECT id FROM teams WHERE id = $1\", id)\n}\n";
    const NOTE: &str = "package store\n\nfunc Purge(s *Store, t string) {\n\ts.pool.Exec(ctx, fmt.Sprintf(\"DELETE FROM %s WHERE id = 1\", t))\n}\n";
    const NONE: &str = "package store\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n";

    struct App {
        _root: tempfile::TempDir,
        dir: PathBuf,
        cache: ScanCache,
    }

    impl App {
        fn new(files: &[(&str, &str)]) -> App {
            let root = tempfile::tempdir().unwrap();
            let dir = root.path().join("app");
            std::fs::create_dir(&dir).unwrap();
            for (name, text) in files {
                std::fs::write(dir.join(name), text).unwrap();
            }
            let cache = ScanCache::in_cache_dir(Some(&root.path().join("cache")));
            App { dir, cache, _root: root }
        }

        fn path(&self, name: &str) -> PathBuf {
            self.dir.join(name)
        }

        /// (file, SQL) of every query, and the files with a note.
        fn scan(&self) -> (Vec<(String, String)>, Vec<String>) {
            let display = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
            let scanned =
                on_disk_cached(std::slice::from_ref(&self.dir), &Project::default(), &display, &self.cache).unwrap();
            let mut queries: Vec<_> = scanned.queries.iter().map(|q| (q.file.clone(), q.sql.to_string())).collect();
            queries.sort();
            let mut notes: Vec<_> = scanned.notes.iter().map(|(file, _)| file.clone()).collect();
            notes.sort();
            (queries, notes)
        }

        fn entries(&self) -> Entries {
            self.cache.load(std::slice::from_ref(&self.dir), &code::ProjectCalls::default())
        }

        /// As if the cache had observed every file long after it was written: metadata is
        /// trusted from now on (the tests then wait out the file system's timestamp tick before
        /// each change, which the racy window covers in real runs).
        fn observed_long_after(&self) {
            let mut entries = self.entries();
            assert!(!entries.files.is_empty(), "the first scan filled the cache");
            entries.observed = Stamp::of_now_plus(Duration::from_secs(3600));
            self.cache.save(std::slice::from_ref(&self.dir), &code::ProjectCalls::default(), &entries);
        }

        /// Makes the cache believe `name`'s current metadata is what it saw when it read it.
        fn forge_metadata(&self, name: &str) {
            let mut entries = self.entries();
            let key = self.path(name).as_os_str().as_bytes().to_vec();
            let stat = Stat::of(&std::fs::metadata(self.path(name)).unwrap());
            entries.files.get_mut(&key).unwrap().stat = stat;
            self.cache.save(std::slice::from_ref(&self.dir), &code::ProjectCalls::default(), &entries);
        }
    }

    use super::super::scan_cache::Stamp;
    use std::os::unix::ffi::OsStrExt;

    fn query(file: &str, table: &str) -> (String, String) {
        (file.to_string(), format!("SELECT id FROM {table} WHERE id = $1"))
    }

    fn tick() {
        std::thread::sleep(Duration::from_millis(30));
    }

    #[test]
    fn a_warm_scan_finds_what_a_cold_one_does() {
        let app = App::new(&[("a.go", QUERY), ("b.go", NOTE), ("c.go", NONE)]);
        let cold = app.scan();
        assert_eq!(cold, (vec![query("a.go", "users")], vec!["b.go".to_string()]));
        assert_eq!(app.entries().files.len(), 3, "every file has an entry, queries and note kept");
        assert_eq!(app.scan(), cold, "racily clean: checked by content");
        app.observed_long_after();
        assert_eq!(app.scan(), cold, "served from the metadata");
        let disabled = on_disk(std::slice::from_ref(&app.dir), &|p| p.file_name().unwrap().to_string_lossy().into());
        assert_eq!(disabled.unwrap().queries.len(), 1);
    }

    #[test]
    fn an_unchanged_file_is_not_read_and_one_with_queries_is_not_parsed() {
        let app = App::new(&[("a.go", QUERY), ("c.go", NONE)]);
        app.scan();
        tick();
        // c.go gains a query the cache cannot know of from metadata it is told is unchanged.
        std::fs::write(app.path("c.go"), QUERY).unwrap();
        app.forge_metadata("c.go");
        // a.go changes, keeping its metadata as the cache saw it (forged).
        std::fs::write(app.path("a.go"), OTHER).unwrap();
        app.forge_metadata("a.go");
        app.observed_long_after();
        // Both trusted on their metadata, as git trusts its index: c.go is not read, a.go is
        // read (a finding quotes it) but neither hashed nor parsed again.
        assert_eq!(app.scan().0, vec![query("a.go", "users")], "a.go's stored queries; c.go not read");
    }

    #[test]
    fn a_racily_clean_file_is_read_again() {
        // git's case: written again within the timestamp tick of the read, so its metadata is
        // what the cache recorded (forged here: the race is hard to time).
        let app = App::new(&[("a.go", NONE)]);
        assert_eq!(app.scan().0, vec![]);
        std::fs::write(app.path("a.go"), QUERY).unwrap();
        app.forge_metadata("a.go");
        assert_eq!(app.scan().0, vec![query("a.go", "users")]);
        // Checked by content and found unchanged, it is recorded as observed by this run, so
        // that once its timestamps are old enough it is trusted on them again.
        let first = app.entries().observed;
        tick();
        assert_eq!(app.scan().0, vec![query("a.go", "users")]);
        assert!(app.entries().observed > first, "observed again");
    }

    /// `text` with a comment that makes it as long as [`QUERY`].
    fn as_long_as_query(text: &str) -> String {
        let padding = QUERY.len() - text.len() - 3;
        format!("{text}//{}\n", "x".repeat(padding))
    }

    fn set_modified(path: &Path, to: SystemTime) {
        std::fs::File::options().append(true).open(path).unwrap().set_modified(to).unwrap();
    }

    #[test]
    fn a_changed_file_is_always_read_again() {
        // The files without queries are the ones trusted on their metadata alone, so each change
        // turns one into a file with a query, keeping its size.
        let none = as_long_as_query(NONE);
        assert_eq!(none.len(), QUERY.len());
        let app = App::new(&[("a.go", &none), ("b.go", NOTE), ("c.go", &none), ("d.go", &none), ("e.go", &none)]);
        let changed = |app: &App| {
            app.observed_long_after();
            tick();
        };
        assert_eq!(app.scan(), (vec![], vec!["b.go".to_string()]));
        changed(&app);
        // Edited, same size.
        std::fs::write(app.path("a.go"), QUERY).unwrap();
        assert_eq!(app.scan().0, vec![query("a.go", "users")]);
        changed(&app);
        // Edited, same size, its modification time set back (the change time tells).
        let before = std::fs::metadata(app.path("c.go")).unwrap().modified().unwrap();
        std::fs::write(app.path("c.go"), OTHER).unwrap();
        set_modified(&app.path("c.go"), before);
        assert_eq!(std::fs::metadata(app.path("c.go")).unwrap().modified().unwrap(), before);
        assert_eq!(app.scan().0, vec![query("a.go", "users"), query("c.go", "teams")]);
        changed(&app);
        // Touched: read again, found the same.
        set_modified(&app.path("d.go"), SystemTime::now());
        assert_eq!(app.scan(), (vec![query("a.go", "users"), query("c.go", "teams")], vec!["b.go".to_string()]));
        changed(&app);
        // Renamed: found under its new name only.
        std::fs::rename(app.path("a.go"), app.path("f.go")).unwrap();
        assert_eq!(app.scan().0, vec![query("c.go", "teams"), query("f.go", "users")]);
        changed(&app);
        // Another file renamed over one (same size, modification time copied: the inode tells).
        std::fs::write(app.path("new.tmp"), QUERY).unwrap();
        set_modified(&app.path("new.tmp"), std::fs::metadata(app.path("e.go")).unwrap().modified().unwrap());
        std::fs::rename(app.path("new.tmp"), app.path("e.go")).unwrap();
        let found = vec![query("c.go", "teams"), query("e.go", "users"), query("f.go", "users")];
        assert_eq!(app.scan().0, found);
        changed(&app);
        // Deleted: its note goes with it.
        std::fs::remove_file(app.path("b.go")).unwrap();
        assert_eq!(app.scan(), (found, vec![]));
        assert_eq!(app.entries().files.len(), 4, "c.go, d.go, e.go, f.go");
    }

    #[test]
    fn a_new_file_in_a_listed_directory_is_found() {
        let app = App::new(&[("a.go", NONE)]);
        std::fs::create_dir(app.path("pkg")).unwrap();
        std::fs::write(app.path("pkg/b.go"), NONE).unwrap();
        assert_eq!(app.scan(), (vec![], vec![]));
        app.observed_long_after();
        tick();
        assert!(!app.entries().dirs.is_empty(), "the listing is kept");
        std::fs::write(app.path("pkg/c.go"), QUERY).unwrap();
        assert_eq!(app.scan().0, vec![query("c.go", "users")]);
        app.observed_long_after();
        tick();
        std::fs::write(app.path("pkg/.gitignore"), "c.go\n").unwrap();
        assert_eq!(app.scan().0, vec![], "ignored from now on");
    }

    #[test]
    fn a_corrupt_cache_is_ignored_and_written_afresh() {
        let app = App::new(&[("a.go", QUERY), ("b.go", NOTE)]);
        let cold = app.scan();
        let file = app.cache.file(std::slice::from_ref(&app.dir), &code::ProjectCalls::default()).unwrap();
        let bytes = std::fs::read(&file).unwrap();
        for corrupt in [bytes[..bytes.len() / 2].to_vec(), b"garbage".to_vec(), Vec::new(), {
            let mut flipped = bytes.clone();
            let last = flipped.len() - 1;
            flipped[last] ^= 0xff;
            flipped
        }] {
            std::fs::write(&file, &corrupt).unwrap();
            assert_eq!(app.scan(), cold);
            assert_eq!(app.entries().files.len(), 2, "written afresh");
        }
    }

    #[test]
    fn a_disabled_cache_writes_nothing() {
        let app = App::new(&[("a.go", QUERY)]);
        let display = |p: &Path| p.display().to_string();
        on_disk_cached(std::slice::from_ref(&app.dir), &Project::default(), &display, &ScanCache::disabled()).unwrap();
        assert!(!app.cache.file(std::slice::from_ref(&app.dir), &code::ProjectCalls::default()).unwrap().exists());
    }
}
