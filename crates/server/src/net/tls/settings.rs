//! The `tls-*` directives made into rustls configurations: certificates and keys (with
//! PKCS#8 keys encrypted under `tls-key-file-pass`), CA roots, protocol versions, cipher
//! suites under OpenSSL's names, client authentication and the session cache.

use crate::config::{TlsAuthClients, Values};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{ring, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::server::{StoresServerSessions, WebPkiClientVerifier};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig,
    SignatureScheme, SupportedCipherSuite, SupportedProtocolVersion,
};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Both sides' configurations, built together from one set of values.
pub struct Built {
    pub server: Arc<ServerConfig>,
    /// None without CA certificates: a server it connects to could not be verified.
    pub client: Option<Arc<ClientConfig>>,
}

/// Builds the configurations, or says (in words for the log) what is wrong.
pub fn build(c: &Values) -> Result<Built, String> {
    if c.tls_cert_file.is_empty() {
        return Err("No tls-cert-file configured!".into());
    }
    if c.tls_key_file.is_empty() {
        return Err("No tls-key-file configured!".into());
    }
    let needs_ca = c.tls_auth_clients != TlsAuthClients::No || c.tls_replication || c.tls_cluster;
    if needs_ca && c.tls_ca_cert_file.is_empty() && c.tls_ca_cert_dir.is_empty() {
        return Err("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!".into());
    }
    if !c.tls_dh_params_file.is_empty() {
        // rustls offers no finite-field DH suites, only ECDHE: nothing would use them.
        tracing::warn!("tls-dh-params-file is ignored: rustls has no DHE cipher suites");
    }
    let versions = protocols(&c.tls_protocols)?;
    let mut suites = tls13_suites(&c.tls_ciphersuites)?;
    suites.extend(tls12_suites(&c.tls_ciphers)?);
    let provider = Arc::new(CryptoProvider {
        cipher_suites: suites,
        ..ring::default_provider()
    });
    let roots = roots(&c.tls_ca_cert_file, &c.tls_ca_cert_dir)?;
    let certs = certs(&c.tls_cert_file)?;
    let key = key(&c.tls_key_file, &c.tls_key_file_pass)?;

    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| format!("tls-protocols/tls-ciphers: {e}"))?;
    let verifier = |optional: bool| {
        let b = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone());
        let b = if optional {
            b.allow_unauthenticated()
        } else {
            b
        };
        b.build()
            .map_err(|e| format!("client certificate verifier: {e}"))
    };
    let builder = match c.tls_auth_clients {
        TlsAuthClients::No => builder.with_no_client_auth(),
        TlsAuthClients::Yes => builder.with_client_cert_verifier(verifier(false)?),
        TlsAuthClients::Optional => builder.with_client_cert_verifier(verifier(true)?),
    };
    let mut server = builder
        .with_single_cert(certs.clone(), key.clone_key())
        .map_err(|e| format!("Failed to load certificate or key: {e}"))?;
    server.ignore_client_order = c.tls_prefer_server_ciphers;
    if c.tls_session_caching {
        server.session_storage = Arc::new(SessionCache::new(
            c.tls_session_cache_size as usize,
            Duration::from_secs(u64::from(c.tls_session_cache_timeout)),
        ));
    } else {
        server.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
        server.send_tls13_tickets = 0;
    }

    // The replication link's side: Redis uses tls-client-cert-file/key when given, else
    // the server's own pair.
    if roots.is_empty() {
        return Ok(Built {
            server: Arc::new(server),
            client: None,
        });
    }
    let (client_certs, client_key) = if c.tls_client_cert_file.is_empty() {
        (certs, key)
    } else {
        (
            self::certs(&c.tls_client_cert_file)?,
            self::key(&c.tls_client_key_file, &c.tls_client_key_file_pass)?,
        )
    };
    let client = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| format!("tls-protocols/tls-ciphers: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyName(
            rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(|e| format!("server certificate verifier: {e}"))?,
        )))
        .with_client_auth_cert(client_certs, client_key)
        .map_err(|e| format!("Failed to load client certificate or key: {e}"))?;
    Ok(Built {
        server: Arc::new(server),
        client: Some(Arc::new(client)),
    })
}

/// `tls-protocols`: "TLSv1.2 TLSv1.3" in any case and order; empty means both.
fn protocols(text: &str) -> Result<Vec<&'static SupportedProtocolVersion>, String> {
    let mut v = Vec::new();
    for word in text.split_whitespace() {
        let p = match word.to_ascii_lowercase().as_str() {
            "tlsv1.2" => &rustls::version::TLS12,
            "tlsv1.3" => &rustls::version::TLS13,
            "tlsv1" | "tlsv1.1" => {
                return Err(format!(
                    "tls-protocols: {word} is not supported (rustls speaks TLSv1.2 and TLSv1.3)"
                ))
            }
            _ => {
                return Err(format!(
                    "Invalid tls-protocols configuration string: {word}"
                ))
            }
        };
        if !v.contains(&p) {
            v.push(p);
        }
    }
    if v.is_empty() {
        v = vec![&rustls::version::TLS13, &rustls::version::TLS12];
    }
    Ok(v)
}

/// The suites rustls offers, under OpenSSL's names (the names Redis's directives take),
/// with the OpenSSL cipher-string words each one matches (`tls-ciphers ECDHE+AESGCM`).
const SUITES: &[(&str, &[&str], SupportedCipherSuite)] = &[
    (
        "TLS_AES_256_GCM_SHA384",
        &[],
        ring::cipher_suite::TLS13_AES_256_GCM_SHA384,
    ),
    (
        "TLS_AES_128_GCM_SHA256",
        &[],
        ring::cipher_suite::TLS13_AES_128_GCM_SHA256,
    ),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        &[],
        ring::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256,
    ),
    (
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        &[
            "ECDHE", "EECDH", "kECDHE", "ECDSA", "aECDSA", "AES", "AES256", "AESGCM", "SHA384",
        ],
        ring::cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        &[
            "ECDHE", "EECDH", "kECDHE", "ECDSA", "aECDSA", "AES", "AES128", "AESGCM", "SHA256",
        ],
        ring::cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        &["ECDHE", "EECDH", "kECDHE", "ECDSA", "aECDSA", "CHACHA20"],
        ring::cipher_suite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "ECDHE-RSA-AES256-GCM-SHA384",
        &[
            "ECDHE", "EECDH", "kECDHE", "RSA", "aRSA", "AES", "AES256", "AESGCM", "SHA384",
        ],
        ring::cipher_suite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-RSA-AES128-GCM-SHA256",
        &[
            "ECDHE", "EECDH", "kECDHE", "RSA", "aRSA", "AES", "AES128", "AESGCM", "SHA256",
        ],
        ring::cipher_suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ECDHE-RSA-CHACHA20-POLY1305",
        &["ECDHE", "EECDH", "kECDHE", "RSA", "aRSA", "CHACHA20"],
        ring::cipher_suite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
];

fn is_tls13(s: &SupportedCipherSuite) -> bool {
    matches!(s, SupportedCipherSuite::Tls13(_))
}

/// `tls-ciphersuites` (TLS 1.3): a colon-separated list of suite names; empty means all.
fn tls13_suites(text: &str) -> Result<Vec<SupportedCipherSuite>, String> {
    let all = SUITES.iter().filter(|s| is_tls13(&s.2));
    if text.trim().is_empty() {
        return Ok(all.map(|s| s.2).collect());
    }
    let mut out = Vec::new();
    for name in text.split(':').map(str::trim).filter(|n| !n.is_empty()) {
        let Some(s) = SUITES.iter().find(|s| is_tls13(&s.2) && s.0 == name) else {
            let offered: Vec<&str> = all.clone().map(|s| s.0).collect();
            return Err(format!(
                "tls-ciphersuites: {name} is not a TLSv1.3 suite rustls offers ({})",
                offered.join(":")
            ));
        };
        if !out.contains(&s.2) {
            out.push(s.2);
        }
    }
    Ok(out)
}

/// `tls-ciphers` (TLS 1.2) in OpenSSL's cipher-string syntax, as far as it concerns the
/// suites rustls has: names, `DEFAULT`/`ALL`/`HIGH`, words joined by `+` (every word
/// must match), and `!`/`-` to remove. Removing what rustls lacks is harmless; asking
/// for it alone is refused. Empty means all.
fn tls12_suites(text: &str) -> Result<Vec<SupportedCipherSuite>, String> {
    let all: Vec<_> = SUITES.iter().filter(|s| !is_tls13(&s.2)).collect();
    if text.trim().is_empty() {
        return Ok(all.iter().map(|s| s.2).collect());
    }
    let mut chosen: Vec<SupportedCipherSuite> = Vec::new();
    let mut removed: Vec<SupportedCipherSuite> = Vec::new();
    for token in text.split([':', ',', ' ']).filter(|t| !t.is_empty()) {
        if token.starts_with('@') {
            continue; // @STRENGTH, @SECLEVEL=n: ordering and policy, nothing to select
        }
        let (remove, word) = match token.as_bytes()[0] {
            b'!' | b'-' => (true, &token[1..]),
            b'+' => (false, &token[1..]),
            _ => (false, token),
        };
        let matched: Vec<SupportedCipherSuite> = all
            .iter()
            .filter(|(name, tags, _)| {
                matches!(word, "DEFAULT" | "ALL" | "HIGH" | "SECURE")
                    || *name == word
                    || word.split('+').all(|w| tags.contains(&w))
            })
            .map(|s| s.2)
            .collect();
        if remove {
            removed.extend(matched);
        } else if matched.is_empty() {
            let offered: Vec<&str> = all.iter().map(|s| s.0).collect();
            return Err(format!(
                "tls-ciphers: {word} matches no TLSv1.2 cipher rustls offers ({})",
                offered.join(":")
            ));
        } else {
            for s in matched {
                if !chosen.contains(&s) {
                    chosen.push(s);
                }
            }
        }
    }
    // OpenSSL's `!` removes for good; `-` only what is there: both amount to the same
    // when applied at the end, since nothing here re-adds a removed suite on purpose.
    chosen.retain(|s| !removed.contains(s));
    if chosen.is_empty() {
        return Err("tls-ciphers: no TLSv1.2 cipher left".into());
    }
    Ok(chosen)
}

fn read(path: &str, what: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("Failed to load {what}: {path}: {e}"))
}

/// Every certificate in a PEM file (a chain: the leaf first).
fn certs(path: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = read(path, "certificate")?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("Failed to load certificate: {path}: {e}"))?;
    if certs.is_empty() {
        return Err(format!(
            "Failed to load certificate: {path}: no certificate in it"
        ));
    }
    Ok(certs)
}

const ENCRYPTED_PKCS8: &str = "ENCRYPTED PRIVATE KEY";

/// The private key in a PEM file: PKCS#8, PKCS#1 (RSA) or SEC1 (EC), or an encrypted
/// PKCS#8 key (PBES2, as `openssl pkcs8 -topk8` and OpenSSL 3's `openssl rsa -aes256`
/// write them) opened with `pass`. OpenSSL's older encrypted PEM (`Proc-Type: 4,ENCRYPTED`
/// headers) is refused, with the command that converts it.
fn key(path: &str, pass: &str) -> Result<PrivateKeyDer<'static>, String> {
    let pem = read(path, "private key")?;
    let failed = |why: String| format!("Failed to load private key: {path}: {why}");
    let text = String::from_utf8_lossy(&pem);
    if text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(failed(
            "legacy OpenSSL-encrypted PEM is not supported; convert it with `openssl pkcs8 -topk8 -v2 aes-256-cbc`".into(),
        ));
    }
    if let Some(block) = pem_block(&text, ENCRYPTED_PKCS8) {
        if pass.is_empty() {
            return Err(failed(
                "the key is encrypted and tls-key-file-pass is not set".into(),
            ));
        }
        let (_, der) = pkcs8::der::pem::decode_vec(block.as_bytes())
            .map_err(|e| failed(format!("bad PEM: {e}")))?;
        let info = pkcs8::EncryptedPrivateKeyInfo::try_from(der.as_slice())
            .map_err(|e| failed(format!("bad encrypted key: {e}")))?;
        let plain = info
            .decrypt(pass)
            .map_err(|e| failed(format!("cannot decrypt it with tls-key-file-pass: {e}")))?;
        return Ok(PrivatePkcs8KeyDer::from(plain.as_bytes().to_vec()).into());
    }
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| failed(e.to_string()))
}

/// The text of the first PEM block labelled `label`, armour included.
fn pem_block<'a>(text: &'a str, label: &str) -> Option<&'a str> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let from = text.find(&begin)?;
    let to = text[from..].find(&end)? + from + end.len();
    Some(&text[from..to])
}

/// CA certificates from `tls-ca-cert-file` and every PEM file of `tls-ca-cert-dir`.
fn roots(file: &str, dir: &str) -> Result<Arc<RootCertStore>, String> {
    let mut store = RootCertStore::empty();
    let mut add = |path: &str, strict: bool| -> Result<(), String> {
        let list = match certs(path) {
            Ok(l) => l,
            // A CA directory may hold files that are not certificates (CRLs, notes).
            Err(_) if !strict => return Ok(()),
            Err(e) => return Err(e),
        };
        for c in list {
            store.add(c).map_err(|e| {
                format!("Failed to configure CA certificate(s) file/directory: {path}: {e}")
            })?;
        }
        Ok(())
    };
    if !file.is_empty() {
        add(file, true)?;
    }
    if !dir.is_empty() {
        let entries = std::fs::read_dir(dir).map_err(|e| {
            format!("Failed to configure CA certificate(s) file/directory: {dir}: {e}")
        })?;
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| !t.is_dir()) {
                add(&entry.path().to_string_lossy(), false)?;
            }
        }
    }
    Ok(Arc::new(store))
}

/// Checks a server's certificate chain against the CAs but not its name, as Redis does
/// for its replication link (OpenSSL verifies no host name unless asked to).
#[derive(Debug)]
struct AnyName(Arc<rustls::client::WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The server's session cache: `tls-session-cache-size` entries at most (0: no bound, as
/// OpenSSL reads it), each forgotten after `tls-session-cache-timeout` seconds; the oldest
/// goes first when it is full.
#[derive(Debug)]
struct SessionCache {
    size: usize,
    timeout: Duration,
    inner: Mutex<Sessions>,
}

#[derive(Debug, Default)]
struct Sessions {
    map: HashMap<Vec<u8>, (Instant, Vec<u8>)>,
    order: VecDeque<(Instant, Vec<u8>)>,
}

impl SessionCache {
    fn new(size: usize, timeout: Duration) -> SessionCache {
        SessionCache {
            size,
            timeout,
            inner: Mutex::new(Sessions::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Sessions> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Drops expired entries and, past the size, the oldest ones.
    fn trim(&self, s: &mut Sessions, now: Instant) {
        while let Some((at, key)) = s.order.front() {
            let expired = now.duration_since(*at) >= self.timeout;
            let full = self.size > 0 && s.map.len() > self.size;
            if !expired && !full {
                break;
            }
            // The order list may name a key stored again later: remove only its own entry.
            if s.map.get(key).is_some_and(|(stored, _)| stored == at) {
                s.map.remove(key);
            }
            s.order.pop_front();
        }
    }
}

impl StoresServerSessions for SessionCache {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        let now = Instant::now();
        let mut s = self.lock();
        s.order.push_back((now, key.clone()));
        s.map.insert(key, (now, value));
        self.trim(&mut s, now);
        true
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        let mut s = self.lock();
        self.trim(&mut s, Instant::now());
        s.map.get(key).map(|(_, v)| v.clone())
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        let mut s = self.lock();
        self.trim(&mut s, Instant::now());
        s.map.remove(key).map(|(_, v)| v)
    }

    fn can_cache(&self) -> bool {
        !self.timeout.is_zero()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(suites: &[SupportedCipherSuite]) -> Vec<&'static str> {
        suites
            .iter()
            .map(|s| SUITES.iter().find(|x| x.2 == *s).map_or("?", |x| x.0))
            .collect()
    }

    #[test]
    fn protocol_words() {
        assert_eq!(protocols("").unwrap().len(), 2);
        assert_eq!(protocols("tlsv1.2").unwrap(), vec![&rustls::version::TLS12]);
        assert_eq!(protocols("TLSv1.3 TLSv1.2 TLSv1.3").unwrap().len(), 2);
        assert!(protocols("TLSv1.1").unwrap_err().contains("not supported"));
        assert!(protocols("SSLv3").unwrap_err().contains("Invalid"));
    }

    #[test]
    fn openssl_cipher_strings_select_what_rustls_has() {
        let all12 = tls12_suites("").unwrap().len();
        assert_eq!(tls12_suites("DEFAULT:-AES128-SHA256").unwrap().len(), all12);
        assert_eq!(
            names(&tls12_suites("ECDHE-RSA-AES128-GCM-SHA256").unwrap()),
            ["ECDHE-RSA-AES128-GCM-SHA256"]
        );
        assert_eq!(
            names(&tls12_suites("ECDHE+AESGCM:!ECDSA").unwrap()),
            ["ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-AES128-GCM-SHA256"]
        );
        assert_eq!(
            names(&tls12_suites("HIGH:!aNULL:!MD5:!CHACHA20:!AES256").unwrap()),
            [
                "ECDHE-ECDSA-AES128-GCM-SHA256",
                "ECDHE-RSA-AES128-GCM-SHA256"
            ]
        );
        let e = tls12_suites("AES128-SHA256").unwrap_err();
        assert!(e.contains("AES128-SHA256"), "{e}");
        assert!(tls12_suites("ALL:-ALL").is_err());
    }

    #[test]
    fn tls13_suite_names() {
        assert_eq!(tls13_suites("").unwrap().len(), 3);
        assert_eq!(
            names(&tls13_suites("TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256").unwrap()),
            ["TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_GCM_SHA256"]
        );
        assert!(tls13_suites("TLS_AES_128_CCM_SHA256").is_err());
    }

    #[test]
    fn session_cache_bounds_and_expires() {
        let c = SessionCache::new(2, Duration::from_secs(60));
        for k in 0..3u8 {
            c.put(vec![k], vec![k]);
        }
        assert_eq!(c.get(&[0]), None, "the oldest went when a third came");
        assert_eq!(c.get(&[2]), Some(vec![2]));
        assert_eq!(c.take(&[1]), Some(vec![1]));
        assert_eq!(c.take(&[1]), None);
        let short = SessionCache::new(0, Duration::from_millis(1));
        short.put(vec![1], vec![1]);
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(short.get(&[1]), None, "expired");
    }
}
