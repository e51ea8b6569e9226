//! TLS on the real binary: certificates made in the test (`tls_common`), clients that
//! are Debian's redis-cli, the `redis` crate and a bare rustls session (to see what was
//! negotiated).

mod common;
mod tls_common;

use common::{free_port, strata};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;
use tls_common::{tls_server, Pki};

/// What a bare rustls client connection ended up with.
struct Session {
    stream: rustls::StreamOwned<rustls::ClientConnection, TcpStream>,
}

impl Session {
    fn version(&self) -> Option<rustls::ProtocolVersion> {
        self.stream.conn.protocol_version()
    }

    fn suite(&self) -> Option<rustls::CipherSuite> {
        self.stream
            .conn
            .negotiated_cipher_suite()
            .map(|s| s.suite())
    }

    fn resumed(&self) -> bool {
        self.stream.conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed)
    }

    /// Sends one inline command and reads the first line of the answer.
    fn command(&mut self, cmd: &str) -> std::io::Result<String> {
        self.stream.write_all(format!("{cmd}\r\n").as_bytes())?;
        self.stream.flush()?;
        let mut line = Vec::new();
        let mut b = [0u8; 1];
        while !line.ends_with(b"\r\n") {
            if self.stream.read(&mut b)? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            line.push(b[0]);
        }
        Ok(String::from_utf8_lossy(&line).trim_end().to_string())
    }
}

/// How a test's rustls client is set up.
struct ClientSetup<'a> {
    ca: &'a str,
    cert: Option<&'a str>,
    versions: &'a [&'static rustls::SupportedProtocolVersion],
    suites: Option<Vec<rustls::SupportedCipherSuite>>,
    resumption: Option<rustls::client::Resumption>,
}

impl<'a> ClientSetup<'a> {
    fn new(ca: &'a str, cert: Option<&'a str>) -> Self {
        ClientSetup {
            ca,
            cert,
            versions: rustls::ALL_VERSIONS,
            suites: None,
            resumption: None,
        }
    }

    fn config(&self, pki: &Pki) -> Arc<rustls::ClientConfig> {
        let mut provider = rustls::crypto::ring::default_provider();
        if let Some(s) = &self.suites {
            provider.cipher_suites = s.clone();
        }
        let mut roots = rustls::RootCertStore::empty();
        for c in CertificateDer::pem_file_iter(pki.path(&format!("{}-ca.crt", self.ca))).unwrap() {
            roots.add(c.unwrap()).unwrap();
        }
        let b = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
            .with_protocol_versions(self.versions)
            .unwrap()
            .with_root_certificates(roots);
        let mut config = match self.cert {
            Some(who) => {
                let certs = CertificateDer::pem_file_iter(pki.path(&format!("{who}.crt")))
                    .unwrap()
                    .map(|c| c.unwrap())
                    .collect();
                let key = PrivateKeyDer::from_pem_file(pki.path(&format!("{who}.key"))).unwrap();
                b.with_client_auth_cert(certs, key).unwrap()
            }
            None => b.with_no_client_auth(),
        };
        if let Some(r) = &self.resumption {
            config.resumption = r.clone();
        }
        Arc::new(config)
    }

    /// Connects and runs PING through the session (a refused client certificate shows
    /// only once the server reads the client's last flight).
    fn connect_with(
        &self,
        config: Arc<rustls::ClientConfig>,
        port: u16,
    ) -> std::io::Result<Session> {
        let tcp = TcpStream::connect(("127.0.0.1", port))?;
        tcp.set_read_timeout(Some(Duration::from_secs(5)))?;
        let name = ServerName::try_from("127.0.0.1").unwrap();
        let conn = rustls::ClientConnection::new(config, name).map_err(std::io::Error::other)?;
        let mut s = Session {
            stream: rustls::StreamOwned::new(conn, tcp),
        };
        let pong = s.command("PING")?;
        if pong != "+PONG" {
            return Err(std::io::Error::other(format!("PING answered {pong}")));
        }
        Ok(s)
    }

    fn connect(&self, pki: &Pki, port: u16) -> std::io::Result<Session> {
        self.connect_with(self.config(pki), port)
    }
}

fn redis_cli_tls(pki: &Pki, port: u16, client: Option<&str>, args: &[&str]) -> (bool, String) {
    let mut cmd = Command::new("redis-cli");
    cmd.args([
        "-p",
        &port.to_string(),
        "--tls",
        "--cacert",
        &pki.path("a-ca.crt"),
    ]);
    if let Some(who) = client {
        cmd.args(["--cert", &pki.path(&format!("{who}.crt"))]);
        cmd.args(["--key", &pki.path(&format!("{who}.key"))]);
    }
    let out = cmd
        .args(args)
        .output()
        .expect("redis-cli (Debian's redis-tools) is required");
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (
        out.status.success() && !text.contains("rror"),
        text.trim().to_string(),
    )
}

#[test]
fn redis_cli_and_the_redis_crate_over_tls_beside_the_plain_port() {
    let pki = Pki::new();
    let (p, tls_port) = tls_server(&pki, true, &[]);
    assert_ne!(p.port, tls_port);

    let (ok, out) = redis_cli_tls(&pki, tls_port, Some("a-client"), &["SET", "k", "over tls"]);
    assert!(ok, "redis-cli --tls: {out}");
    assert_eq!(out, "OK");

    let mut tls_conn = pki.client(tls_port);
    let v: String = redis::cmd("GET").arg("k").query(&mut tls_conn).unwrap();
    assert_eq!(v, "over tls");
    // A value larger than a TLS record and the socket buffers both ways.
    let big = "x".repeat(3 << 20);
    let _: () = redis::cmd("SET")
        .arg("big")
        .arg(&big)
        .query(&mut tls_conn)
        .unwrap();
    let back: String = redis::cmd("GET").arg("big").query(&mut tls_conn).unwrap();
    assert_eq!(back.len(), big.len());

    // The plain port serves the same data, and speaks no TLS.
    let mut plain = p.client();
    let v: String = redis::cmd("GET").arg("k").query(&mut plain).unwrap();
    assert_eq!(v, "over tls");
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut plain).unwrap();
    let laddrs: Vec<&str> = list
        .lines()
        .filter_map(|l| l.split(' ').find_map(|f| f.strip_prefix("laddr=")))
        .collect();
    assert!(
        laddrs.contains(&format!("127.0.0.1:{tls_port}").as_str()),
        "{list}"
    );
    assert!(laddrs.contains(&p.addr().as_str()), "{list}");

    // A plain client on the TLS port gets no Redis reply.
    let mut raw = TcpStream::connect(("127.0.0.1", tls_port)).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    raw.write_all(b"PING\r\n").unwrap();
    let mut buf = [0u8; 64];
    let n = raw.read(&mut buf).unwrap_or(0);
    assert!(
        !buf[..n].starts_with(b"+PONG"),
        "plain PING on the TLS port answered"
    );
}

#[test]
fn tls_port_alone_and_mutual_tls_required_optional_or_off() {
    let pki = Pki::new();
    let (p, tls_port) = tls_server(&pki, false, &[]);
    assert_eq!(p.port, tls_port, "the only listener is the TLS one");

    let with_a = ClientSetup::new("a", Some("a-client"));
    let without = ClientSetup::new("a", None);
    let with_b = ClientSetup::new("a", Some("b-client"));
    let mut admin = with_a
        .connect(&pki, tls_port)
        .expect("client certificate of the CA");
    assert!(
        without.connect(&pki, tls_port).is_err(),
        "no certificate, refused"
    );
    assert!(
        with_b.connect(&pki, tls_port).is_err(),
        "unknown CA, refused"
    );
    let (ok, _) = redis_cli_tls(&pki, tls_port, None, &["PING"]);
    assert!(!ok, "redis-cli without a certificate is refused");

    assert_eq!(
        admin
            .command("CONFIG SET tls-auth-clients optional")
            .unwrap(),
        "+OK"
    );
    assert!(
        without.connect(&pki, tls_port).is_ok(),
        "optional: none is fine"
    );
    assert!(
        with_b.connect(&pki, tls_port).is_err(),
        "optional: a bad one is not"
    );
    assert_eq!(
        admin.command("CONFIG SET tls-auth-clients no").unwrap(),
        "+OK"
    );
    assert!(without.connect(&pki, tls_port).is_ok());
    let (ok, out) = redis_cli_tls(&pki, tls_port, None, &["PING"]);
    assert!(ok, "{out}");
    assert_eq!(out, "PONG");
}

#[test]
fn certificates_reload_with_config_set_for_new_connections() {
    let pki = Pki::new();
    let (_p, tls_port) = tls_server(&pki, false, &["--tls-auth-clients", "no"]);
    let trusts_a = ClientSetup::new("a", None);
    let trusts_b = ClientSetup::new("b", None);
    let mut old = trusts_a
        .connect(&pki, tls_port)
        .expect("CA a's server certificate");
    assert!(trusts_b.connect(&pki, tls_port).is_err());

    let set = format!(
        "CONFIG SET tls-cert-file {} tls-key-file {}",
        pki.path("b-server.crt"),
        pki.path("b-server.key")
    );
    assert_eq!(old.command(&set).unwrap(), "+OK");
    assert!(
        trusts_b.connect(&pki, tls_port).is_ok(),
        "new connections: new certificate"
    );
    assert!(trusts_a.connect(&pki, tls_port).is_err());
    assert_eq!(
        old.command("PING").unwrap(),
        "+PONG",
        "the open session goes on"
    );

    // A configuration that does not build is refused whole; the last good one stays.
    let bad = pki.path("missing.crt");
    let reply = old
        .command(&format!("CONFIG SET tls-cert-file {bad}"))
        .unwrap();
    assert!(reply.starts_with("-ERR CONFIG SET failed"), "{reply}");
    assert!(
        reply.contains("Unable to update TLS configuration"),
        "{reply}"
    );
    assert!(old
        .command("CONFIG GET tls-cert-file")
        .unwrap()
        .starts_with('*'));
    let mut check = trusts_b.connect(&pki, tls_port).expect("still CA b's");
    check
        .stream
        .write_all(b"CONFIG GET tls-cert-file\r\n")
        .unwrap();
    let mut got = vec![0u8; 512];
    let n = check.stream.read(&mut got).unwrap();
    let text = String::from_utf8_lossy(&got[..n]);
    assert!(text.contains("b-server.crt"), "value put back: {text}");
}

#[test]
fn protocols_cipher_suites_and_session_resumption() {
    let pki = Pki::new();
    let (_p, tls_port) = tls_server(&pki, false, &["--tls-auth-clients", "no"]);
    let mut admin = ClientSetup::new("a", None).connect(&pki, tls_port).unwrap();
    assert_eq!(
        admin.version(),
        Some(rustls::ProtocolVersion::TLSv1_3),
        "both versions on by default: the newest wins"
    );

    let tls13_only = ClientSetup {
        versions: &[&rustls::version::TLS13],
        ..ClientSetup::new("a", None)
    };
    let tls12_only = ClientSetup {
        versions: &[&rustls::version::TLS12],
        ..ClientSetup::new("a", None)
    };
    assert_eq!(
        admin.command("CONFIG SET tls-protocols TLSv1.2").unwrap(),
        "+OK"
    );
    assert!(tls13_only.connect(&pki, tls_port).is_err());
    let s = tls12_only.connect(&pki, tls_port).unwrap();
    assert_eq!(s.version(), Some(rustls::ProtocolVersion::TLSv1_2));

    // tls-ciphers picks TLS 1.2 suites by their OpenSSL names.
    assert_eq!(
        admin
            .command("CONFIG SET tls-ciphers ECDHE-ECDSA-CHACHA20-POLY1305")
            .unwrap(),
        "+OK"
    );
    let s = tls12_only.connect(&pki, tls_port).unwrap();
    assert_eq!(
        s.suite(),
        Some(rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256)
    );
    let reply = admin
        .command("CONFIG SET tls-ciphers AES128-SHA256")
        .unwrap();
    assert!(reply.contains("Unable to update TLS"), "{reply}");
    assert_eq!(
        admin.command("CONFIG SET tls-protocols TLSv1.3").unwrap(),
        "+OK"
    );
    assert!(tls12_only.connect(&pki, tls_port).is_err());
    assert_eq!(
        admin
            .command("CONFIG SET tls-ciphersuites TLS_AES_128_GCM_SHA256")
            .unwrap(),
        "+OK"
    );
    let s = tls13_only.connect(&pki, tls_port).unwrap();
    assert_eq!(
        s.suite(),
        Some(rustls::CipherSuite::TLS13_AES_128_GCM_SHA256)
    );

    // A client that keeps its sessions resumes while the server caches them.
    let resuming = ClientSetup {
        resumption: Some(rustls::client::Resumption::in_memory_sessions(16)),
        ..ClientSetup::new("a", None)
    };
    let config = resuming.config(&pki);
    let first = resuming.connect_with(config.clone(), tls_port).unwrap();
    assert!(!first.resumed());
    let second = resuming.connect_with(config, tls_port).unwrap();
    assert!(second.resumed(), "tls-session-caching yes resumes");
    assert_eq!(
        admin.command("CONFIG SET tls-session-caching no").unwrap(),
        "+OK"
    );
    let config = resuming.config(&pki);
    resuming.connect_with(config.clone(), tls_port).unwrap();
    let again = resuming.connect_with(config, tls_port).unwrap();
    assert!(
        !again.resumed(),
        "without the cache, every handshake is full"
    );
}

/// Debian's openssl writes the encrypted keys (rcgen does not encrypt).
fn openssl(args: &[&str]) {
    let st = Command::new("openssl")
        .args(args)
        .status()
        .expect("openssl (Debian's package) is required");
    assert!(st.success(), "openssl {args:?}");
}

#[test]
fn encrypted_pkcs8_keys_open_with_their_pass_and_legacy_ones_are_refused_clearly() {
    let pki = Pki::new();
    let (_p, tls_port) = tls_server(&pki, false, &["--tls-auth-clients", "no"]);
    let mut admin = ClientSetup::new("a", None).connect(&pki, tls_port).unwrap();
    let plain_key = pki.path("b-server.key");
    let encrypted = pki.path("b-server.key.p8");
    openssl(&[
        "pkcs8",
        "-topk8",
        "-v2",
        "aes-256-cbc",
        "-in",
        &plain_key,
        "-out",
        &encrypted,
        "-passout",
        "pass:1234",
    ]);
    let cert = pki.path("b-server.crt");
    let reply = admin
        .command(&format!(
            "CONFIG SET tls-cert-file {cert} tls-key-file {encrypted}"
        ))
        .unwrap();
    assert!(reply.contains("Unable to update TLS"), "no pass: {reply}");
    let reply = admin
        .command(&format!(
            "CONFIG SET tls-key-file-pass 1234 tls-cert-file {cert} tls-key-file {encrypted}"
        ))
        .unwrap();
    assert_eq!(reply, "+OK");
    assert!(ClientSetup::new("b", None).connect(&pki, tls_port).is_ok());

    // OpenSSL's older encrypted PEM: the start fails and says what to do.
    let legacy = pki.path("a-server.key.legacy");
    let ec = pki.path("a-server.key");
    openssl(&[
        "ec",
        "-in",
        &ec,
        "-out",
        &legacy,
        "-aes256",
        "-passout",
        "pass:1234",
    ]);
    let text = std::fs::read_to_string(&legacy).unwrap();
    assert!(text.contains("Proc-Type: 4,ENCRYPTED"), "{text}");
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "serve",
            "--port",
            "0",
            "--tls-port",
            &free_port().to_string(),
        ])
        .args(["--tls-cert-file", &pki.path("a-server.crt")])
        .args(["--tls-key-file", &legacy, "--tls-key-file-pass", "1234"])
        .args(["--tls-auth-clients", "no", "--dir", &pki.path("data")])
        .output()
        .expect("strata");
    assert!(!out.status.success());
    let log =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("openssl pkcs8 -topk8"), "{log}");
}

/// tls-port at run time: refused without certificates as redis-server refuses it; with
/// them a TLS listener opens, follows CONFIG SET bind, and closes with tls-port 0.
#[test]
fn config_set_tls_port_opens_a_tls_listener_that_follows_bind() {
    let redis = common::redis(&[]);
    let bare = strata(&[]);
    let port = free_port().to_string();
    let set = ["CONFIG", "SET", "tls-port", port.as_str()];
    let want = common::RespConn::new(&redis).call(&set).unwrap();
    let got = common::RespConn::new(&bare).call(&set).unwrap();
    assert!(want.shown().contains("'tls-port'"), "{}", want.shown());
    assert_eq!(
        got.raw,
        want.raw,
        "strata {} redis {}",
        got.shown(),
        want.shown()
    );

    let pki = Pki::new();
    let args = pki.server_args("a");
    let p = strata(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let mut c = p.client();
    let tls_port = free_port();
    let set = |c: &mut redis::Connection, name: &str, value: &str| -> String {
        redis::cmd("CONFIG")
            .arg("SET")
            .arg(name)
            .arg(value)
            .query::<String>(c)
            .unwrap_or_else(|e| e.to_string())
    };
    assert_eq!(set(&mut c, "tls-port", &tls_port.to_string()), "OK");
    let ping = |host: &str| redis_cli_tls(&pki, tls_port, Some("a-client"), &["-h", host, "PING"]);
    assert_eq!(ping("127.0.0.1"), (true, "PONG".to_string()));

    assert_eq!(set(&mut c, "bind", "127.0.0.2"), "OK");
    assert_eq!(ping("127.0.0.2"), (true, "PONG".to_string()));
    assert!(
        TcpStream::connect(("127.0.0.1", tls_port)).is_err(),
        "the old TLS address still accepts"
    );
    assert_eq!(set(&mut c, "tls-port", "0"), "OK");
    assert!(TcpStream::connect(("127.0.0.2", tls_port)).is_err());
    assert!(
        TcpStream::connect(("127.0.0.2", p.port)).is_ok(),
        "the plain port moved too"
    );
}
