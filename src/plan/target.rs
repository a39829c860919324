//! A PostgreSQL server to connect to, and the server's own words for what went wrong: what the
//! server handling (`server`) and the signal handler that drops a run's databases (`cleanup`)
//! both need.

use super::postmaster::SUPERUSER;
use super::tls;
use crate::error::{Error, Result};
use std::path::Path;
use std::time::Duration;
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres::{Client, Config, NoTls};
use tokio_postgres_rustls::MakeRustlsConnect;

pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The server's own words for an error (message, detail, hint), not tokio-postgres's wrapper.
pub fn pg_message(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut text = db.message().to_string();
            if let Some(detail) = db.detail() {
                text.push_str(&format!(" ({detail})"));
            }
            if let Some(hint) = db.hint() {
                text.push_str(&format!("; hint: {hint}"));
            }
            text
        }
        // tokio-postgres's own text names only the kind ("error connecting to server"); the
        // cause (refused, timed out, certificate not trusted) is in the source chain.
        None => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(cause) = source {
                text.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            text
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Where a server is and how to reach it.

/// A server to connect to: its address (tokio-postgres's `Config`, with the database to connect
/// to for CREATE/DROP DATABASE) and how the connection is secured.
#[derive(Clone)]
pub struct Target {
    pub(super) config: Config,
    /// `None`: plain connections (a Unix socket, or `sslmode=disable`).
    tls: Option<MakeRustlsConnect>,
    /// `sslmode` as the user gave it, for messages.
    ssl_mode: Option<tls::SslMode>,
}

impl Target {
    /// The server named by `--database-url` / `SLUICE_DATABASE_URL`: a `postgresql://` URI or a
    /// `key=value` string, with libpq's `sslmode` and `sslrootcert` ([`tls`] says how each is
    /// honoured). Without a database in it, Sluice connects to `postgres`.
    pub fn from_url(url: &str, connect_timeout: Duration) -> Result<Target> {
        let (rest, tls_options) = tls::split_options(url)?;
        let mut config: Config = rest
            .parse()
            .map_err(|e| Error::Usage(format!("--database-url is not a PostgreSQL connection string: {e}")))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(connect_timeout);
        }
        if config.get_dbname().is_none() {
            config.dbname("postgres");
        }
        // libpq never negotiates TLS over a Unix socket, whatever sslmode says.
        let only_sockets =
            !config.get_hosts().is_empty() && config.get_hosts().iter().all(|h| matches!(h, Host::Unix(_)));
        let client_config = if only_sockets { None } else { tls_options.client_config()? };
        config.ssl_mode(match (tls_options.mode, &client_config) {
            (_, None) => SslMode::Disable,
            (tls::SslMode::Prefer, Some(_)) => SslMode::Prefer,
            (_, Some(_)) => SslMode::Require,
        });
        Ok(Target { config, tls: client_config.map(MakeRustlsConnect::new), ssl_mode: Some(tls_options.mode) })
    }

    /// The ephemeral server: a Unix socket in `socket_dir`, as the superuser, no TLS.
    pub(super) fn unix_socket(socket_dir: &Path, connect_timeout: Duration) -> Target {
        let mut config = Config::new();
        config.host_path(socket_dir).port(5432).user(SUPERUSER).dbname("postgres").connect_timeout(connect_timeout);
        Target { config, tls: None, ssl_mode: None }
    }

    /// Where the server is, for messages: `host:port` (or the socket directory) and the sslmode.
    pub fn describe(&self) -> String {
        let ports = self.config.get_ports();
        let hosts: Vec<String> = self
            .config
            .get_hosts()
            .iter()
            .enumerate()
            .map(|(i, host)| {
                let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
                match host {
                    Host::Tcp(name) => format!("{name}:{port}"),
                    Host::Unix(dir) => format!("{} (Unix socket, port {port})", dir.display()),
                }
            })
            .collect();
        let hosts = if hosts.is_empty() { "the default host".to_string() } else { hosts.join(", ") };
        match self.ssl_mode {
            Some(mode) => format!("{hosts}, sslmode={}", mode.as_str()),
            None => hosts,
        }
    }

    /// The database Sluice connects to for CREATE/DROP DATABASE.
    pub fn maintenance_db(&self) -> &str {
        self.config.get_dbname().unwrap_or("postgres")
    }

    /// Connects to `dbname` on this server; the connection is driven by a task on the runtime.
    pub async fn connect(&self, dbname: &str) -> std::result::Result<Client, tokio_postgres::Error> {
        let mut config = self.config.clone();
        config.dbname(dbname);
        let client = match &self.tls {
            None => {
                let (client, connection) = config.connect(NoTls).await?;
                tokio::spawn(connection);
                client
            }
            Some(tls) => {
                let (client, connection) = config.connect(tls.clone()).await?;
                tokio::spawn(connection);
                client
            }
        };
        Ok(client)
    }

    /// [`Target::connect`] with an error that names the database, the server and the cause.
    pub async fn connect_or_explain(&self, dbname: &str) -> Result<Client> {
        self.connect(dbname).await.map_err(|e| {
            Error::Other(format!("cannot connect to database {dbname} at {}: {}", self.describe(), pg_message(&e)))
        })
    }

    pub async fn drop_database(&self, name: &str) -> Result<()> {
        let client = self.connect_or_explain(self.maintenance_db()).await?;
        client
            .batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", quote_ident(name)))
            .await
            .map_err(|e| Error::Other(format!("cannot drop database {name}: {}", pg_message(&e))))
    }
}
