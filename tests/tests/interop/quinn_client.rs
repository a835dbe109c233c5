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

/// A quinn client configuration for hq-interop with `cache` as the token
/// store.
pub fn client_config(cert: &Path, cache: Arc<WatchedCache>) -> quinn::ClientConfig {
    crate::quinn_tls::client_config(cert, b"hq-interop", cache)
}
