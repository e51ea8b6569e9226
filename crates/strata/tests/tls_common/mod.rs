//! Shared by the TLS tests: certificates made in the test (rcgen), Strata started with TLS,
//! and `redis` crate connections over TLS.
#![allow(dead_code)]

use crate::common::{free_port, strata, temp_dir, Proc};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use std::path::{Path, PathBuf};

/// Two unrelated CAs written as PEM files into a directory (removed when dropped).
pub struct Pki {
    pub dir: PathBuf,
}

/// One CA's files: `<name>-ca.crt`, and `<name>-server.{crt,key}`, `<name>-client.{crt,key}`.
fn make_ca(dir: &Path, name: &str) {
    let ca_key = KeyPair::generate().expect("CA key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, format!("{name} test CA"));
    let ca = params.self_signed(&ca_key).expect("CA cert");
    std::fs::write(dir.join(format!("{name}-ca.crt")), ca.pem()).expect("write");
    for role in ["server", "client"] {
        let key = KeyPair::generate().expect("key");
        let mut params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
                .expect("params");
        params
            .distinguished_name
            .push(DnType::CommonName, format!("{name} {role}"));
        let cert = params.signed_by(&key, &ca, &ca_key).expect("signed");
        std::fs::write(dir.join(format!("{name}-{role}.crt")), cert.pem()).expect("write");
        std::fs::write(dir.join(format!("{name}-{role}.key")), key.serialize_pem()).expect("write");
    }
}

impl Pki {
    /// Two unrelated CAs, "a" and "b", each with a server and a client certificate.
    pub fn new() -> Pki {
        let dir = temp_dir("pki");
        std::fs::create_dir_all(&dir).expect("pki dir");
        make_ca(&dir, "a");
        make_ca(&dir, "b");
        Pki { dir }
    }

    pub fn path(&self, file: &str) -> String {
        self.dir.join(file).to_string_lossy().into_owned()
    }

    /// Server options for CA `ca`'s server certificate, trusting client certificates of
    /// CA "a".
    pub fn server_args(&self, ca: &str) -> Vec<String> {
        vec![
            "--tls-cert-file".into(),
            self.path(&format!("{ca}-server.crt")),
            "--tls-key-file".into(),
            self.path(&format!("{ca}-server.key")),
            "--tls-ca-cert-file".into(),
            self.path("a-ca.crt"),
        ]
    }

    /// Options of a replica (Strata or redis-server) whose link to its primary is TLS:
    /// CA "a"'s certificates, presenting its client certificate and trusting primaries
    /// whose certificate CA `trust` signed.
    pub fn replica_args(&self, trust: &str) -> Vec<String> {
        let mut args = self.server_args("a");
        if let Some(ca) = args.last_mut() {
            *ca = self.path(&format!("{trust}-ca.crt"));
        }
        args.extend([
            "--tls-client-cert-file".into(),
            self.path("a-client.crt"),
            "--tls-client-key-file".into(),
            self.path("a-client.key"),
            "--tls-replication".into(),
            "yes".into(),
        ]);
        args
    }

    /// A `redis` crate connection to a TLS port, with CA "a"'s client certificate.
    pub fn client(&self, port: u16) -> redis::Connection {
        let read = |f: &str| std::fs::read(self.path(f)).expect("read a PEM file");
        let client = redis::Client::build_with_tls(
            format!("rediss://127.0.0.1:{port}/"),
            redis::TlsCertificates {
                client_tls: Some(redis::ClientTlsConfig {
                    client_cert: read("a-client.crt"),
                    client_key: read("a-client.key"),
                }),
                root_cert: Some(read("a-ca.crt")),
            },
        )
        .expect("TLS client");
        client
            .get_connection_with_timeout(std::time::Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("TLS connection to {port}: {e}"))
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Strata with TLS on its own port (CA "a"'s server certificate) and `extra` options; the
/// plain port too when `plain`.
pub fn tls_server(pki: &Pki, plain: bool, extra: &[&str]) -> (Proc, u16) {
    let tls_port = free_port();
    let mut args: Vec<String> = vec!["--tls-port".into(), tls_port.to_string()];
    if plain {
        args.extend(["--port".into(), free_port().to_string()]);
    }
    args.extend(pki.server_args("a"));
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    (strata(&args), tls_port)
}
