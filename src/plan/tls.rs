//! TLS to a server named by `--database-url`, with libpq's meaning of `sslmode` and
//! `sslrootcert` (<https://www.postgresql.org/docs/current/libpq-ssl.html>), over rustls.
//!
//! tokio-postgres knows only `disable`, `prefer` and `require` and no certificate options, so
//! Sluice takes `sslmode` and `sslrootcert` out of the connection string itself, hands the rest
//! to tokio-postgres, and builds the rustls verifier the mode asks for:
//!
//! | sslmode | TLS | certificate chain checked | host name checked |
//! |---|---|---|---|
//! | `disable` | never | | |
//! | `prefer` (the default) | when the server offers it | only when a root certificate is given | no |
//! | `require` | always | only when a root certificate is given (libpq: "same as verify-ca") | no |
//! | `verify-ca` | always | yes | no |
//! | `verify-full` | always | yes | yes |
//!
//! The root certificate is `sslrootcert` (a PEM file), else `~/.postgresql/root.crt` when it
//! exists; `sslrootcert=system` trusts the operating system's roots and, as in libpq, requires
//! `verify-full`. TLS is never attempted over a Unix socket (libpq ignores sslmode there).

use crate::error::{Error, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Result<SslMode> {
        match value {
            "disable" => Ok(SslMode::Disable),
            "prefer" => Ok(SslMode::Prefer),
            "require" => Ok(SslMode::Require),
            "verify-ca" => Ok(SslMode::VerifyCa),
            "verify-full" => Ok(SslMode::VerifyFull),
            "allow" => Err(usage(
                "sslmode=allow is not supported: Sluice tries TLS first when it may fall back; use sslmode=prefer (or disable)",
            )),
            other => Err(usage(&format!(
                "sslmode={other} is not a PostgreSQL sslmode; use disable, prefer, require, verify-ca or verify-full"
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// Whose certificates to trust.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootCert {
    File(PathBuf),
    /// `sslrootcert=system`: the operating system's trust store.
    System,
}

/// What the connection string asks of TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsOptions {
    pub mode: SslMode,
    pub root_cert: Option<RootCert>,
}

/// How the certificate the server presents is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verification {
    /// Encryption only (prefer/require without a root certificate).
    None,
    /// The chain must lead to a trusted root; any host name.
    Chain,
    /// The chain and the host name.
    Full,
}

fn usage(message: &str) -> Error {
    Error::Usage(format!("--database-url: {message}"))
}

/// The options Sluice handles itself; tokio-postgres rejects them as unknown.
const OWN_KEYS: [&str; 2] = ["sslmode", "sslrootcert"];
/// Options libpq has that Sluice does not support: named rather than silently ignored.
const UNSUPPORTED_KEYS: [&str; 6] = ["sslcert", "sslkey", "sslpassword", "sslcrl", "sslcrldir", "sslcertmode"];

/// One `key=value` of a connection string, with the text it was written as.
struct Pair<'a> {
    key: String,
    value: String,
    text: &'a str,
}

/// Splits `url` into the text tokio-postgres can parse (without `sslmode` and `sslrootcert`) and
/// the TLS options. Both forms are understood: `postgresql://…?sslmode=…` and `key=value …`.
pub fn split_options(url: &str) -> Result<(String, TlsOptions)> {
    split_options_with(url, default_root_cert().filter(|p| p.is_file()))
}

/// [`split_options`] with libpq's default root certificate (`~/.postgresql/root.crt`) when it exists.
fn split_options_with(url: &str, default_root: Option<PathBuf>) -> Result<(String, TlsOptions)> {
    let is_uri = url.starts_with("postgres://") || url.starts_with("postgresql://");
    let pairs = if is_uri { uri_pairs(url) } else { key_value_pairs(url)? };
    if let Some(p) = pairs.iter().find(|p| UNSUPPORTED_KEYS.contains(&p.key.as_str())) {
        return Err(usage(&format!(
            "{} is not supported: Sluice presents no client certificate and checks no revocation list; \
             authenticate with a password and use sslmode and sslrootcert for the server's certificate",
            p.key
        )));
    }
    let mut mode = None;
    let mut root_cert = None;
    for p in pairs.iter().filter(|p| OWN_KEYS.contains(&p.key.as_str())) {
        match (p.key.as_str(), p.value.as_str()) {
            ("sslmode", value) => mode = Some(SslMode::parse(value)?),
            (_, "system") => root_cert = Some(RootCert::System),
            (_, "") => root_cert = None,
            (_, value) => root_cert = Some(RootCert::File(expand_home(value))),
        }
    }
    let kept: Vec<&str> = pairs.iter().filter(|p| !OWN_KEYS.contains(&p.key.as_str())).map(|p| p.text).collect();
    let rest = if is_uri { rebuild_uri(url, &kept) } else { kept.join(" ") };
    // libpq's default root certificate is used only when it exists (verify-* then demand one).
    let root_cert = root_cert.or(default_root.map(RootCert::File));
    let mode = match (mode, &root_cert) {
        // libpq (16+): trusting the system's roots only makes sense with the host name checked.
        (None, Some(RootCert::System)) => SslMode::VerifyFull,
        (Some(m), Some(RootCert::System)) if m != SslMode::VerifyFull => {
            return Err(usage(&format!(
                "sslrootcert=system requires sslmode=verify-full (got sslmode={}): any certificate a public \
                 authority issued for any host would otherwise be accepted",
                m.as_str()
            )))
        }
        (m, _) => m.unwrap_or(SslMode::Prefer),
    };
    Ok((rest, TlsOptions { mode, root_cert }))
}

fn default_root_cert() -> Option<PathBuf> {
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".postgresql/root.crt"))
}

fn expand_home(value: &str) -> PathBuf {
    match (value.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(value),
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The query parameters of `postgresql://…?a=1&b=2#fragment`.
fn uri_pairs(url: &str) -> Vec<Pair<'_>> {
    let Some((_, query)) = url.split_once('?') else {
        return Vec::new();
    };
    let query = query.split_once('#').map_or(query, |(q, _)| q);
    query
        .split('&')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let (key, value) = part.split_once('=').unwrap_or((part, ""));
            Pair { key: percent_decode(key), value: percent_decode(value), text: part }
        })
        .collect()
}

/// The URI with only the `kept` query parameters.
fn rebuild_uri(url: &str, kept: &[&str]) -> String {
    let (base, fragment) = match url.split_once('?') {
        Some((base, query)) => (base, query.split_once('#').map(|(_, f)| f)),
        None => return url.to_string(),
    };
    let mut rest = base.to_string();
    if !kept.is_empty() {
        rest.push('?');
        rest.push_str(&kept.join("&"));
    }
    if let Some(f) = fragment {
        rest.push('#');
        rest.push_str(f);
    }
    rest
}

/// libpq's `key = value …` form; values may be single-quoted with `\` escapes.
fn key_value_pairs(text: &str) -> Result<Vec<Pair<'_>>> {
    let mut pairs = Vec::new();
    let mut chars = text.char_indices().peekable();
    loop {
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let Some(&(start, _)) = chars.peek() else { break };
        let mut key = String::new();
        while let Some((_, c)) = chars.next_if(|(_, c)| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        if chars.next_if(|(_, c)| *c == '=').is_none() {
            return Err(usage(&format!("missing \"=\" after \"{key}\" in the connection string")));
        }
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if(|(_, c)| *c == '\'').is_some() {
            loop {
                match chars.next() {
                    Some((_, '\\')) => value.extend(chars.next().map(|(_, c)| c)),
                    Some((_, '\'')) => break,
                    Some((_, c)) => value.push(c),
                    None => return Err(usage(&format!("unterminated quoted value for \"{key}\""))),
                }
            }
        } else {
            while let Some((_, c)) = chars.next_if(|(_, c)| !c.is_whitespace()) {
                value.push(c);
            }
        }
        let end = chars.peek().map_or(text.len(), |&(i, _)| i);
        pairs.push(Pair { key, value, text: text[start..end].trim_end() });
    }
    Ok(pairs)
}

impl TlsOptions {
    pub fn verification(&self) -> Verification {
        match (self.mode, &self.root_cert) {
            (SslMode::VerifyFull, _) => Verification::Full,
            (SslMode::VerifyCa, _) => Verification::Chain,
            (SslMode::Prefer | SslMode::Require, Some(_)) => Verification::Chain,
            _ => Verification::None,
        }
    }

    /// The rustls configuration for this mode; `None` for `disable`.
    pub fn client_config(&self) -> Result<Option<rustls::ClientConfig>> {
        if self.mode == SslMode::Disable {
            return Ok(None);
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verification = self.verification();
        let verifier: Arc<dyn ServerCertVerifier> = match verification {
            Verification::None => Arc::new(AnyCertificate { algorithms: provider.signature_verification_algorithms }),
            Verification::Chain | Verification::Full => {
                let roots = self.roots()?;
                let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                    .build()
                    .map_err(|e| usage(&format!("cannot use the root certificates: {e}")))?;
                if verification == Verification::Full {
                    webpki
                } else {
                    Arc::new(AnyHostName { inner: webpki })
                }
            }
        };
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| usage(&format!("cannot configure TLS: {e}")))?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(Some(config))
    }

    fn roots(&self) -> Result<RootCertStore> {
        let mut roots = RootCertStore::empty();
        match &self.root_cert {
            None => {
                let default =
                    default_root_cert().map(|p| p.display().to_string()).unwrap_or("~/.postgresql/root.crt".into());
                return Err(usage(&format!(
                    "sslmode={} checks the server's certificate, but there is no root certificate: the default \
                     {default} does not exist. Name the CA's certificate with sslrootcert=/path/to/ca.pem, trust \
                     the system's roots with sslrootcert=system, or use sslmode=require to encrypt without checking",
                    self.mode.as_str()
                )));
            }
            Some(RootCert::File(path)) => {
                let certs = read_pem_certificates(path)?;
                let (added, _ignored) = roots.add_parsable_certificates(certs);
                if added == 0 {
                    return Err(usage(&format!("sslrootcert={}: no usable certificate in the file", path.display())));
                }
            }
            Some(RootCert::System) => {
                let found = rustls_native_certs::load_native_certs();
                let (added, _ignored) = roots.add_parsable_certificates(found.certs);
                if added == 0 {
                    let why = found.errors.first().map(|e| format!(": {e}")).unwrap_or_default();
                    return Err(usage(&format!(
                        "sslrootcert=system: no trusted root certificates found on this system{why}"
                    )));
                }
            }
        }
        Ok(roots)
    }
}

fn read_pem_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let bytes = std::fs::read(path)
        .map_err(|e| usage(&format!("sslrootcert={}: cannot read the file: {e}", path.display())))?;
    let certs: std::result::Result<Vec<_>, _> = CertificateDer::pem_slice_iter(&bytes).collect();
    let certs =
        certs.map_err(|e| usage(&format!("sslrootcert={}: not a PEM certificate file: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(usage(&format!(
            "sslrootcert={}: no PEM certificate (BEGIN CERTIFICATE) in the file",
            path.display()
        )));
    }
    Ok(certs)
}

/// `require` / `prefer` without a root certificate: encryption against passive listening only,
/// as libpq does. The handshake signature is still checked against the presented certificate.
#[derive(Debug)]
struct AnyCertificate {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain must lead to a trusted root, whatever host name the certificate names.
#[derive(Debug)]
struct AnyHostName {
    inner: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for AnyHostName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        // webpki checks the chain first and the name last: a name error means the chain is good.
        match self.inner.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(url: &str) -> (String, TlsOptions) {
        split_options_with(url, None).expect("parses")
    }

    fn error(url: &str) -> String {
        split_options_with(url, None).expect_err("rejected").to_string()
    }

    #[test]
    fn uri_options_are_taken_out_and_the_rest_kept() {
        let (rest, tls) = split(
            "postgresql://u:p@db.example.com:5432/app?application_name=x&sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&connect_timeout=5",
        );
        assert_eq!(rest, "postgresql://u:p@db.example.com:5432/app?application_name=x&connect_timeout=5");
        assert_eq!(tls.mode, SslMode::VerifyFull);
        assert_eq!(tls.root_cert, Some(RootCert::File("/etc/ca.pem".into())));
        assert_eq!(split("postgres://localhost/app?sslmode=require").0, "postgres://localhost/app");
        assert_eq!(split("postgres://localhost/app").0, "postgres://localhost/app");
    }

    #[test]
    fn key_value_options_are_taken_out_with_quotes_and_escapes() {
        let (rest, tls) = split("host=db port=5433 sslmode = 'verify-ca' sslrootcert='/tmp/my ca\\'s.pem' user=me");
        assert_eq!(rest, "host=db port=5433 user=me");
        assert_eq!(tls.mode, SslMode::VerifyCa);
        assert_eq!(tls.root_cert, Some(RootCert::File("/tmp/my ca's.pem".into())));
        assert!(error("host=db sslmode='require").contains("unterminated quoted value for \"sslmode\""));
        assert!(error("host db").contains("missing \"=\" after \"host\""));
    }

    #[test]
    fn modes_follow_libpq() {
        assert_eq!(split("postgresql://h/db").1.mode, SslMode::Prefer, "libpq's default");
        assert_eq!(split("postgresql://h/db").1.verification(), Verification::None);
        let with_root = split("postgresql://h/db?sslmode=require&sslrootcert=/ca.pem").1;
        assert_eq!(with_root.verification(), Verification::Chain, "require with a root certificate is verify-ca");
        let default_root =
            split_options_with("postgresql://h/db?sslmode=require", Some("/home/u/.postgresql/root.crt".into()));
        assert_eq!(default_root.expect("parses").1.verification(), Verification::Chain, "so is an existing root.crt");
        assert_eq!(split("postgresql://h/db?sslmode=verify-ca").1.verification(), Verification::Chain);
        assert_eq!(split("postgresql://h/db?sslmode=verify-full").1.verification(), Verification::Full);
        assert!(split("postgresql://h/db?sslmode=disable").1.client_config().expect("config").is_none());
        assert_eq!(split("postgresql://h/db?sslrootcert=system").1.mode, SslMode::VerifyFull);
        assert!(error("postgresql://h/db?sslmode=require&sslrootcert=system").contains("requires sslmode=verify-full"));
        assert!(error("postgresql://h/db?sslmode=verify").contains("sslmode=verify is not a PostgreSQL sslmode"));
        assert!(error("postgresql://h/db?sslmode=allow").contains("sslmode=allow is not supported"));
        // verify-* without any root certificate says how to provide one.
        let err = split("postgresql://h/db?sslmode=verify-full").1.client_config().expect_err("no root");
        assert!(err.to_string().contains("sslrootcert=/path/to/ca.pem"), "{err}");
    }

    #[test]
    fn unsupported_options_are_named_not_ignored() {
        assert!(error("postgresql://h/db?sslcert=/c.pem").contains("sslcert is not supported"));
        assert!(error("host=h sslkey = /k.pem").contains("sslkey is not supported"));
    }

    #[test]
    fn a_root_certificate_file_that_is_not_pem_is_an_error_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, "not a certificate\n").expect("write");
        let options = TlsOptions { mode: SslMode::VerifyCa, root_cert: Some(RootCert::File(path.clone())) };
        let err = options.client_config().expect_err("not pem").to_string();
        assert!(err.contains(&path.display().to_string()) && err.contains("no PEM certificate"), "{err}");
        let missing =
            TlsOptions { mode: SslMode::VerifyCa, root_cert: Some(RootCert::File(dir.path().join("no.pem"))) };
        assert!(missing.client_config().expect_err("missing").to_string().contains("cannot read the file"));
    }
}
