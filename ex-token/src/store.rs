//! The client token store: tokens received in NEW_TOKEN frames, kept for
//! later connections to the same server.
//!
//! Tokens are keyed by server name *and* server address: two servers
//! sharing a name (a fleet behind DNS) hold different keys and would
//! reject each other's tokens. The store is bounded in total and per
//! server, forgets tokens older than a maximum age, and hands each token
//! out once (RFC 9000, Section 8.1.3: reuse would let connections be
//! linked).
//!
//! Beside its tokens, the store keeps the newest TLS session (ticket) of
//! each server, with which the next connection resumes TLS and may send
//! early data (0-RTT). A session is handed out once, as tokens are: a
//! server sends new tickets on every connection.
//!
//! Each token remembers whether the server announced the `ex_token`
//! transport parameter on the connection that delivered it. The next
//! connection's Initial, which carries the token, leaves before that
//! server's transport parameters arrive, so this is the only way for a
//! client to know whether it may read the token or lower its Requested
//! Capacity. A token from a server that did not announce `ex_token` is
//! opaque (RFC 9000, Section 8.1.3): the client echoes it unmodified.
//!
//! # File format
//!
//! [`TokenStore::save`] writes JSON, one object with a format version and
//! the tokens oldest first:
//!
//! ```json
//! {"version":1,"tokens":[{"server_name":"example.org",
//!   "server_addr":"192.0.2.1:443","received":1700000000,"token":"0a1b...",
//!   "ex_token":true}]}
//! ```
//!
//! `received` is in unix seconds and `token` is lowercase hex. `ex_token`
//! is written only when true: files written before it existed load with
//! every token opaque, the safe reading. Sessions follow under `sessions`
//! (`server_name`, `server_addr`, `received`, `session` in hex), written
//! only when there are some.
//!
//! The file is written with mode `0600` (its owner only): tokens identify
//! the client to their servers, and whoever reads them could link its
//! connections.

use std::fs;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::time::unix_secs;

/// Version written to and expected in token files.
const FILE_VERSION: u32 = 1;

/// Bounds of a [`TokenStore`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreConfig {
    /// Most tokens kept in total; the oldest goes first.
    pub max_tokens: usize,
    /// Most tokens kept per server; the oldest for that server goes first.
    pub max_per_server: usize,
    /// Age beyond which a token is forgotten (saved path parameters go
    /// stale, and servers expire tokens anyway).
    pub max_age: Duration,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            max_tokens: 64,
            max_per_server: 4,
            max_age: Duration::from_secs(24 * 60 * 60),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct StoredToken {
    server_name: String,
    server_addr: SocketAddr,
    /// Unix seconds.
    received: u64,
    #[serde(with = "hex")]
    token: Vec<u8>,
    /// Whether the issuing server announced the `ex_token` transport
    /// parameter.
    #[serde(default, skip_serializing_if = "is_false")]
    ex_token: bool,
}

fn is_false(value: &bool) -> bool {
    !value
}

impl StoredToken {
    fn is_for(&self, server_name: &str, server_addr: SocketAddr) -> bool {
        self.server_addr == server_addr && self.server_name == server_name
    }
}

/// A server's TLS session, as quiche serialises it
/// (`quiche::Connection::session`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct StoredSession {
    server_name: String,
    server_addr: SocketAddr,
    /// Unix seconds.
    received: u64,
    #[serde(with = "hex")]
    session: Vec<u8>,
}

impl StoredSession {
    fn is_for(&self, server_name: &str, server_addr: SocketAddr) -> bool {
        self.server_addr == server_addr && self.server_name == server_name
    }
}

#[derive(Serialize, Deserialize)]
struct TokenFile {
    version: u32,
    tokens: Vec<StoredToken>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    sessions: Vec<StoredSession>,
}

/// A token as a [`TokenStore`] keeps it and hands it out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldToken {
    /// The token, byte for byte as the server sent it.
    pub token: Vec<u8>,
    /// Whether the server that sent it announced the `ex_token` transport
    /// parameter (value 1) on that connection: only then is the token an
    /// extensible token the client may read, and lower the Requested
    /// Capacity of. Otherwise it is opaque and must be echoed unmodified.
    pub ex_token: bool,
}

impl HeldToken {
    /// An opaque token: the server did not announce `ex_token`.
    pub fn opaque(token: Vec<u8>) -> Self {
        HeldToken {
            token,
            ex_token: false,
        }
    }

    /// A token from a server that announced `ex_token`.
    pub fn extensible(token: Vec<u8>) -> Self {
        HeldToken {
            token,
            ex_token: true,
        }
    }
}

/// A bounded, expiring store of tokens received from servers.
#[derive(Clone, Debug, Default)]
pub struct TokenStore {
    /// Oldest first.
    tokens: Vec<StoredToken>,
    /// At most one per server, oldest first.
    sessions: Vec<StoredSession>,
    config: StoreConfig,
}

impl TokenStore {
    /// Creates an empty store.
    pub fn new(config: StoreConfig) -> Self {
        Self {
            tokens: Vec::new(),
            sessions: Vec::new(),
            config,
        }
    }

    /// Keeps `session`, the newest TLS session (with its ticket) from
    /// `server_name` at `server_addr`, received at `now`, in place of the
    /// one held for that server. Empty sessions are ignored; the store
    /// holds as many sessions as it may hold tokens.
    pub fn insert_session(
        &mut self,
        server_name: &str,
        server_addr: SocketAddr,
        session: Vec<u8>,
        now: SystemTime,
    ) {
        self.push_session(StoredSession {
            server_name: server_name.to_owned(),
            server_addr,
            received: unix_secs(now),
            session,
        });
        self.forget_expired(unix_secs(now));
    }

    fn push_session(&mut self, entry: StoredSession) {
        if entry.session.is_empty() || self.config.max_tokens == 0 {
            return;
        }
        self.sessions
            .retain(|s| !s.is_for(&entry.server_name, entry.server_addr));
        if self.sessions.len() >= self.config.max_tokens {
            self.sessions.remove(0);
        }
        self.sessions.push(entry);
    }

    /// Removes and returns the unexpired TLS session held for the server,
    /// for one connection attempt.
    pub fn take_session(
        &mut self,
        server_name: &str,
        server_addr: SocketAddr,
        now: SystemTime,
    ) -> Option<Vec<u8>> {
        self.forget_expired(unix_secs(now));
        let held = self
            .sessions
            .iter()
            .position(|s| s.is_for(server_name, server_addr))?;
        Some(self.sessions.remove(held).session)
    }

    /// Whether a TLS session is held for the server.
    pub fn has_session(&self, server_name: &str, server_addr: SocketAddr) -> bool {
        self.session(server_name, server_addr).is_some()
    }

    /// The TLS session held for the server, without removing it.
    pub fn session(&self, server_name: &str, server_addr: SocketAddr) -> Option<&[u8]> {
        self.sessions
            .iter()
            .find(|s| s.is_for(server_name, server_addr))
            .map(|s| s.session.as_slice())
    }

    /// Keeps `token`, received at `now` from `server_name` at
    /// `server_addr`, as an opaque token (see [`TokenStore::insert_held`]
    /// for one from a server that announced `ex_token`). Empty tokens are
    /// ignored.
    pub fn insert(
        &mut self,
        server_name: &str,
        server_addr: SocketAddr,
        token: Vec<u8>,
        now: SystemTime,
    ) {
        self.insert_held(server_name, server_addr, HeldToken::opaque(token), now);
    }

    /// Keeps `token`, received at `now` from `server_name` at
    /// `server_addr`, with whether that server announced `ex_token`. Empty
    /// tokens are ignored.
    pub fn insert_held(
        &mut self,
        server_name: &str,
        server_addr: SocketAddr,
        token: HeldToken,
        now: SystemTime,
    ) {
        self.push(StoredToken {
            server_name: server_name.to_owned(),
            server_addr,
            received: unix_secs(now),
            token: token.token,
            ex_token: token.ex_token,
        });
        self.forget_expired(unix_secs(now));
    }

    fn push(&mut self, entry: StoredToken) {
        if entry.token.is_empty() || self.config.max_per_server == 0 || self.config.max_tokens == 0
        {
            return;
        }
        let same_server = |t: &&StoredToken| t.is_for(&entry.server_name, entry.server_addr);
        if self.tokens.iter().filter(same_server).count() >= self.config.max_per_server {
            if let Some(oldest) = self
                .tokens
                .iter()
                .position(|t| t.is_for(&entry.server_name, entry.server_addr))
            {
                self.tokens.remove(oldest);
            }
        }
        if self.tokens.len() >= self.config.max_tokens {
            self.tokens.remove(0);
        }
        self.tokens.push(entry);
    }

    /// Removes and returns the newest unexpired token for the server, for
    /// one connection attempt.
    pub fn take(
        &mut self,
        server_name: &str,
        server_addr: SocketAddr,
        now: SystemTime,
    ) -> Option<Vec<u8>> {
        self.take_held(server_name, server_addr, now)
            .map(|held| held.token)
    }

    /// Removes and returns the newest unexpired token for the server, with
    /// whether that server announced `ex_token`, for one connection
    /// attempt.
    pub fn take_held(
        &mut self,
        server_name: &str,
        server_addr: SocketAddr,
        now: SystemTime,
    ) -> Option<HeldToken> {
        self.forget_expired(unix_secs(now));
        let newest = self
            .tokens
            .iter()
            .rposition(|t| t.is_for(server_name, server_addr))?;
        let stored = self.tokens.remove(newest);
        Some(HeldToken {
            token: stored.token,
            ex_token: stored.ex_token,
        })
    }

    /// The newest token held for the server (the one [`TokenStore::take`]
    /// would hand out), without removing it; expired ones included until
    /// the next `insert` or `take` forgets them.
    pub fn newest(&self, server_name: &str, server_addr: SocketAddr) -> Option<&[u8]> {
        self.tokens
            .iter()
            .rfind(|t| t.is_for(server_name, server_addr))
            .map(|t| t.token.as_slice())
    }

    /// Number of tokens held.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether the store holds no token.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    fn forget_expired(&mut self, now: u64) {
        let max_age = self.config.max_age.as_secs();
        self.tokens
            .retain(|t| now < t.received.saturating_add(max_age));
        self.sessions
            .retain(|s| now < s.received.saturating_add(max_age));
    }

    /// Loads a store saved by [`TokenStore::save`], applying `config` and
    /// dropping tokens expired at `now`. A missing file gives an empty
    /// store; a malformed one is an [`io::ErrorKind::InvalidData`] error.
    pub fn load(path: &Path, config: StoreConfig, now: SystemTime) -> io::Result<Self> {
        let mut store = Self::new(config);
        let text = match fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(store),
            Err(e) => return Err(e),
        };
        let file: TokenFile = serde_json::from_str(&text)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        if file.version != FILE_VERSION {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("token file version {} is not {FILE_VERSION}", file.version),
            ));
        }
        for entry in file.tokens {
            store.push(entry);
        }
        for entry in file.sessions {
            store.push_session(entry);
        }
        store.forget_expired(unix_secs(now));
        Ok(store)
    }

    /// Writes the store to `path`, replacing it atomically, readable and
    /// writable by its owner only (mode `0600` on Unix): tokens identify the
    /// client to the servers that issued them and would let whoever reads
    /// them link its connections.
    ///
    /// The contents go to `<path>.tmp`, created exclusively (a file or link
    /// left there is removed, never written through) with the mode set on
    /// the descriptor whatever the umask, then renamed over `path`.
    pub fn save(&self, path: &Path) -> io::Result<()> {
        let file = TokenFile {
            version: FILE_VERSION,
            tokens: self.tokens.clone(),
            sessions: self.sessions.clone(),
        };
        let json = serde_json::to_string(&file).map_err(io::Error::other)?;
        let mut temporary = path.as_os_str().to_owned();
        temporary.push(".tmp");
        let temporary = PathBuf::from(temporary);
        let mut out = match create_private(&temporary) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                fs::remove_file(&temporary)?;
                create_private(&temporary)
            }
            created => created,
        }?;
        let written = out.write_all(json.as_bytes()).and_then(|()| out.sync_all());
        if let Err(e) = written {
            let _ = fs::remove_file(&temporary);
            return Err(e);
        }
        fs::rename(&temporary, path)
    }
}

/// Creates `path` for writing, failing if anything (even a link) is there,
/// with mode `0600` on Unix.
fn create_private(path: &Path) -> io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    // `create_new` is O_CREAT | O_EXCL: it never follows a link.
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options.open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // The umask can only have removed bits; set exactly 0600.
        file.set_permissions(fs::Permissions::from_mode(0o600))?;
    }
    Ok(file)
}

/// Lowercase hex for token bytes in the JSON file.
mod hex {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        let text: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        s.serialize_str(&text)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        let (pairs, odd) = text.as_bytes().as_chunks::<2>();
        if !odd.is_empty() {
            return Err(D::Error::custom("odd number of hex digits"));
        }
        let digit = |c: u8| {
            char::from(c)
                .to_digit(16)
                .ok_or_else(|| D::Error::custom("invalid hex digit"))
        };
        pairs
            .iter()
            .map(|&[high, low]| Ok((digit(high)? * 16 + digit(low)?) as u8))
            .collect()
    }
}
