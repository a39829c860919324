//! `--database-url` over TLS, against a real local PostgreSQL listening on localhost with a
//! certificate this test issues (rcgen): sslmode and sslrootcert behave as libpq documents.

mod plan_support;

use plan_support::*;
use sluice::plan::server::Target;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A certificate authority and the files the test writes from it.
struct Authority {
    ca_pem: String,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

impl Authority {
    fn new(name: &str) -> Authority {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.distinguished_name.push(rcgen::DnType::CommonName, name);
        params.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::CrlSign];
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = params.self_signed(&key).expect("self-signed CA");
        Authority { ca_pem: cert.pem(), issuer: rcgen::Issuer::new(params, key) }
    }

    /// A server certificate for `localhost` only (not for 127.0.0.1): (certificate, key) PEM.
    fn issue_for_localhost(&self) -> (String, String) {
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).expect("params");
        params.distinguished_name.push(rcgen::DnType::CommonName, "localhost");
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &self.issuer).expect("signed");
        (cert.pem(), key.serialize_pem())
    }
}

/// A PostgreSQL server on 127.0.0.1 that accepts only TLS connections over TCP.
struct TlsServer {
    _dir: tempfile::TempDir,
    child: Child,
    port: u16,
    /// The CA that issued the server's certificate, and one that did not.
    ca: PathBuf,
    other_ca: PathBuf,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// Runs as the unprivileged `postgres` user when the tests run as root (initdb refuses root).
fn as_server_user(cmd: &mut Command) -> Option<(u32, u32)> {
    use std::os::unix::process::CommandExt;
    if !nix::unistd::Uid::effective().is_root() {
        return None;
    }
    let user = nix::unistd::User::from_name("postgres").ok().flatten().expect("a postgres user");
    cmd.uid(user.uid.as_raw()).gid(user.gid.as_raw());
    Some((user.uid.as_raw(), user.gid.as_raw()))
}

fn chown_to(path: &Path, owner: Option<(u32, u32)>) {
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(path, Some(uid), Some(gid)).expect("chown");
    }
}

impl TlsServer {
    fn start() -> TlsServer {
        require_postgres();
        let bindir = sluice::plan::server::find_bindir().unwrap_or_else(|e| panic!("{e}"));
        let dir = cache_dir();
        let root = dir.path();
        let authority = Authority::new("Sluice test CA");
        let other = Authority::new("Somebody else's CA");
        let (cert, key) = authority.issue_for_localhost();
        write(&root.join("ca.pem"), &authority.ca_pem);
        write(&root.join("other-ca.pem"), &other.ca_pem);
        let data = root.join("data");

        let mut initdb = Command::new(bindir.join("initdb"));
        let owner = as_server_user(&mut initdb);
        chown_to(root, owner);
        let out = initdb
            .args(["-U", "sluice", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "-D"])
            .arg(&data)
            .output()
            .expect("initdb");
        assert!(out.status.success(), "initdb: {}", String::from_utf8_lossy(&out.stderr));
        // TLS or nothing over TCP, as managed services are configured.
        write(
            &data.join("pg_hba.conf"),
            "local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostssl all all ::1/128 trust\n",
        );
        for (name, text) in [("server.crt", cert.as_str()), ("server.key", key.as_str())] {
            let path = data.join(name);
            write(&path, text);
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
            chown_to(&path, owner);
        }
        chown_to(&data.join("pg_hba.conf"), owner);

        let port = free_port();
        let mut postgres = Command::new(bindir.join("postgres"));
        as_server_user(&mut postgres);
        let child = postgres
            .arg("-D")
            .arg(&data)
            .args(["-c", "listen_addresses=localhost", "-c", &format!("port={port}"), "-c", "ssl=on"])
            .args(["-c", "fsync=off", "-c", "max_connections=20"])
            .arg("-c")
            .arg(format!("unix_socket_directories={}", root.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start postgres");
        let socket_dir = root.to_path_buf();
        let server = TlsServer { ca: root.join("ca.pem"), other_ca: root.join("other-ca.pem"), _dir: dir, child, port };
        // Accepting connections, not merely listening (a server still starting up refuses them).
        let ready = || {
            Command::new(bindir.join("pg_isready"))
                .arg("-q")
                .arg("-h")
                .arg(&socket_dir)
                .args(["-p", &port.to_string()])
                .status()
                .is_ok_and(|s| s.success())
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !ready() {
            assert!(Instant::now() < deadline, "the TLS server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    fn url(&self, host: &str, options: &str) -> String {
        format!("postgresql://sluice@{host}:{}/postgres?{options}", self.port)
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
        let _ = self.child.wait();
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
}

/// Connects with `url`; Ok(whether the session is encrypted) or the error's text.
fn session_ssl(rt: &tokio::runtime::Runtime, url: &str) -> Result<bool, String> {
    rt.block_on(async {
        let target = Target::from_url(url, Duration::from_secs(10)).map_err(|e| e.to_string())?;
        let client = target.connect_or_explain("postgres").await.map_err(|e| e.to_string())?;
        let row = client
            .query_one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &[])
            .await
            .map_err(|e| e.to_string())?;
        Ok(row.get::<_, bool>(0))
    })
}

#[test]
fn sslmodes_follow_libpq_against_a_server_with_a_certificate_from_a_private_ca() {
    let server = TlsServer::start();
    let rt = runtime();
    let ca = server.ca.display().to_string();
    let other = server.other_ca.display().to_string();
    let ok = |url: String| match session_ssl(&rt, &url) {
        Ok(ssl) => assert!(ssl, "{url}: connected without TLS"),
        Err(e) => panic!("{url}: {e}"),
    };
    let refused = |url: String, why: &str| match session_ssl(&rt, &url) {
        Ok(_) => panic!("{url}: connected, but should have been refused ({why})"),
        Err(e) => assert!(e.contains(why), "{url}: expected {why:?} in: {e}"),
    };

    // The server accepts only TLS: disable is refused by the server itself, and says where.
    refused(server.url("127.0.0.1", "sslmode=disable"), &format!("127.0.0.1:{}", server.port));
    refused(server.url("127.0.0.1", "sslmode=disable"), "no encryption");
    // prefer (the default) and require encrypt without checking the certificate.
    ok(server.url("127.0.0.1", ""));
    ok(server.url("127.0.0.1", "sslmode=prefer"));
    ok(server.url("127.0.0.1", "sslmode=require"));
    // verify-ca checks the chain, not the name (the certificate is for localhost only).
    ok(server.url("127.0.0.1", &format!("sslmode=verify-ca&sslrootcert={ca}")));
    refused(server.url("127.0.0.1", &format!("sslmode=verify-ca&sslrootcert={other}")), "UnknownIssuer");
    // require with a root certificate behaves as verify-ca (libpq).
    refused(server.url("127.0.0.1", &format!("sslmode=require&sslrootcert={other}")), "UnknownIssuer");
    // verify-full checks the name too.
    ok(server.url("localhost", &format!("sslmode=verify-full&sslrootcert={ca}")));
    refused(
        server.url("127.0.0.1", &format!("sslmode=verify-full&sslrootcert={ca}")),
        "not valid for name \"127.0.0.1\"",
    );
    // The key=value form works the same way.
    ok(format!(
        "host=localhost port={} user=sluice dbname=postgres sslmode=verify-full sslrootcert='{ca}'",
        server.port
    ));
}

#[test]
fn sluice_plan_builds_its_fixture_over_a_verified_tls_connection() {
    let server = TlsServer::start();
    let scale = tempfile::tempdir().expect("tempdir");
    let scale_path = scale.path().join("scale.toml");
    write(&scale_path, "[tables.customers]\nrows = 200\n[tables.orders]\nrows = 5_000\n");
    let url = server.url("localhost", &format!("sslmode=verify-full&sslrootcert={}", server.ca.display()));
    let run = |url: &str| {
        assert_cmd::Command::cargo_bin("sluice")
            .expect("binary")
            .current_dir(fixture("reporting"))
            .args(["plan", "--base-dir", "base", "--head-dir", "head-regression", "--queries", "queries"])
            .args(["--format", "json", "--seq-scan-rows", "1000", "--scale"])
            .arg(&scale_path)
            .env_remove("DATABASE_URL")
            .env("SLUICE_DATABASE_URL", url)
            .output()
            .expect("run")
    };
    let out = run(&url);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(1), "{doc:#}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(findings(&doc, "plan-regression").len(), 1, "{doc:#}");
    assert!(doc["notes"].to_string().contains("sslmode=verify-full"), "{doc:#}");

    // An untrusted certificate is exit 2 with the cause, the host and the port.
    let untrusted = server.url("localhost", &format!("sslmode=verify-full&sslrootcert={}", server.other_ca.display()));
    let out = run(&untrusted);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("localhost:{}", server.port)) && stderr.contains("UnknownIssuer"), "{stderr}");
}
