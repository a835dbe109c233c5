//! An unmodified quinn client: hq-interop downloads, quinn's own
//! `TokenMemoryCache` keeping NEW_TOKEN tokens between connections.
//!
//! The cache is wrapped only to watch it: every call goes to quinn's
//! implementation unchanged, and the wrapper records what went in and came
//! out so the test can say which token the second connection presented.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use quinn::{TokenMemoryCache, TokenStore};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// quinn's token cache, observed.
#[derive(Debug, Default)]
pub struct WatchedCache {
    inner: TokenMemoryCache,
    /// Tokens stored, in arrival order.
    pub stored: Mutex<Vec<Vec<u8>>>,
    /// What each `take` returned, in call order.
    pub taken: Mutex<Vec<Option<Vec<u8>>>>,
}

impl TokenStore for WatchedCache {
    fn insert(&self, server_name: &str, token: Bytes) {
        self.stored.lock().unwrap().push(token.to_vec());
        self.inner.insert(server_name, token);
    }

    fn take(&self, server_name: &str) -> Option<Bytes> {
        let token = self.inner.take(server_name);
        self.taken
            .lock()
            .unwrap()
            .push(token.as_ref().map(|t| t.to_vec()));
        token
    }
}

/// Accepts exactly one certificate, the test's self-signed one.
///
/// rustls' WebPKI verifier refuses it as a root for itself (it is marked
/// CA:TRUE, and an end entity must not be a CA), so the test pins it
/// instead; handshake signatures are still checked with ring.
#[derive(Debug)]
struct PinnedCertificate {
    certificate: CertificateDer<'static>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for PinnedCertificate {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if end_entity.as_ref() == self.certificate.as_ref() {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::UnknownIssuer,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// A quinn client configuration: TLS 1.3 trusting `cert`, ALPN
/// `hq-interop`, quinn's transport defaults, `cache` as the token store.
pub fn client_config(cert: &Path, cache: Arc<WatchedCache>) -> quinn::ClientConfig {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let certificate = CertificateDer::from_pem_file(cert).expect("certs/cert.pem");
    let mut tls = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(PinnedCertificate {
            certificate,
            provider,
        }))
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"hq-interop".to_vec()];
    let quic = quinn::crypto::rustls::QuicClientConfig::try_from(tls).expect("QUIC TLS");
    let mut config = quinn::ClientConfig::new(Arc::new(quic));
    config.token_store(cache);
    config
}

/// One hq-interop download through quinn.
#[derive(Clone, Copy, Debug)]
pub struct QuinnDownload {
    /// Body bytes received.
    pub bytes: u64,
    /// From `connect` to the last byte.
    pub completion: Duration,
}

/// Downloads `/<size>` from `server` on a new connection of `endpoint`,
/// stays `linger` for late NEW_TOKEN frames, then closes.
pub async fn download(
    endpoint: &quinn::Endpoint,
    server: SocketAddr,
    size: u64,
    linger: Duration,
) -> Result<QuinnDownload, String> {
    let start = Instant::now();
    let connection = endpoint
        .connect(server, "localhost")
        .map_err(|e| format!("connect: {e}"))?
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    let (mut send, mut recv) = connection
        .open_bi()
        .await
        .map_err(|e| format!("open stream: {e}"))?;
    send.write_all(format!("GET /{size}\r\n").as_bytes())
        .await
        .map_err(|e| format!("request: {e}"))?;
    send.finish().map_err(|e| format!("finish: {e}"))?;
    let mut bytes = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    while let Some(read) = recv
        .read(&mut buf)
        .await
        .map_err(|e| format!("response: {e}"))?
    {
        bytes += read as u64;
    }
    let completion = start.elapsed();
    tokio::time::sleep(linger).await;
    connection.close(0u32.into(), b"done");
    Ok(QuinnDownload { bytes, completion })
}
