//! A [`TokenGuard`] shared by a fleet of servers through one Redis: the
//! one-user-per-set rule of RFC 9959 across processes and restarts.
//!
//! This crate owns the claim's trip to Redis and back: the bounded queue
//! between a server's event loop and the one worker thread that owns the
//! Redis connection, the pipelining of queued claims, the deadline of each
//! claim, and reconnection. What a set id is, and when a token may be
//! claimed at all, belongs to `ex-token`.
//!
//! # How a claim is recorded
//!
//! [`RedisGuard::start_claim`](TokenGuard::start_claim) never blocks: it
//! queues the claim (or, when the queue is full, answers
//! [`ClaimOutcome::Unavailable`] at once) and returns a [`Claim`]. The worker
//! drains everything queued and sends it as one pipeline of
//!
//! ```text
//! SET <key prefix><id as 16 lower-case hex digits> 1 NX PXAT <set expiry, unix ms>
//! ```
//!
//! `OK` answers [`ClaimOutcome::Granted`], a nil reply (the key exists)
//! [`ClaimOutcome::Taken`], and anything else (an error reply, another
//! type, bytes that are not Redis protocol, no reply before the claim's
//! deadline, a broken connection) [`ClaimOutcome::Unavailable`]. The key is
//! derived only from the set id, which the server read from a token it
//! authenticated, never from bytes off the network, and it lives until the
//! set expires, when every token carrying it has expired too.
//!
//! Each claim has a deadline, [`RedisGuardConfig::claim_timeout`] after it
//! was started; the socket's connect, read and write timeouts never exceed
//! the time left to the earliest deadline of the batch, so every claim is
//! answered by about its deadline. After any connection error or
//! unexpected reply the worker answers its batch
//! [`ClaimOutcome::Unavailable`], drops the connection and reconnects on the
//! next batch after [`RedisGuardConfig::reconnect_backoff`] (claims arriving
//! meanwhile are answered [`ClaimOutcome::Unavailable`] at once): a server
//! recovers by itself when Redis comes back, and never resumes on a guess.
//!
//! # Consistency
//!
//! - **One Redis primary.** `SET NX` is atomic, so while the primary holds
//!   the key exactly one claim of a set is granted, whichever server of the
//!   fleet made it and however many claim at once.
//! - **Failover to an asynchronously replicated replica** (Sentinel,
//!   managed Redis) can let a replay through: a claim the old primary
//!   acknowledged but had not yet replicated is unknown to the new primary,
//!   which grants it again. That is at most one extra resumed connection per
//!   set per failover, each of which still validates its jump (RFC 9959's
//!   safety checks hold for every resumed connection). `WAIT` would narrow
//!   the window at the cost of a replica round trip per batch; this guard
//!   does not use it.
//! - **A restarted Redis** refuses a replay only if it kept its keys:
//!   persistence (`appendonly yes`; with `appendfsync always` even a crash
//!   loses no acknowledged claim, with the default `everysec` up to a second
//!   of claims on a machine crash) is what makes the claims outlive the
//!   process. Without persistence a restart forgets every claim, and each
//!   live set can be used once more.
//! - **Clocks.** `PXAT` is absolute: Redis forgets a claim at the set's
//!   expiry by its own clock. Servers and Redis need clocks that agree (NTP)
//!   to well within a set's lifetime; a claim whose expiry is already past by
//!   Redis's clock is granted and not remembered.
//! - **Unavailable is a refusal.** A connection whose claim is not granted,
//!   for whatever reason, does not resume from the set (fail closed); a
//!   claim answered [`ClaimOutcome::Unavailable`] after Redis recorded it
//!   (e.g. its reply came too late) uses up the set without resuming.
//!
//! Keys with the configured prefix belong to the guard: share the prefix
//! across the fleet, and give another deployment sharing the same Redis
//! another prefix.

use std::fmt;
use std::io::{self, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ex_token::{Claim, ClaimAnswer, ClaimOutcome, SetId, TokenGuard};
use redis::{ConnectionAddr, IntoConnectionInfo, Parser, Value};

#[cfg(feature = "testing")]
pub mod testing;

/// How a [`RedisGuard`] talks to Redis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisGuardConfig {
    /// How long a claim may take from [`TokenGuard::start_claim`] to its
    /// answer; a claim not answered by Redis in time is answered
    /// [`ClaimOutcome::Unavailable`]. Also bounds the connect, read and
    /// write timeouts of the Redis socket. Must not be zero. Choose it below
    /// the round-trip time at which the server would jump (a claim is needed
    /// only then). Default 50 ms.
    pub claim_timeout: Duration,
    /// Prepended to the 16 hex digits of a set id to make its key. Default
    /// `"cr:set:"`.
    pub key_prefix: String,
    /// How many claims may wait for the worker; a claim started while the
    /// queue is full is answered [`ClaimOutcome::Unavailable`] at once. Also
    /// the most claims sent in one pipeline. Must not be zero. Default 4096.
    pub queue_bound: usize,
    /// After a connection error, how long the worker waits before it
    /// connects again; claims started meanwhile are answered
    /// [`ClaimOutcome::Unavailable`] at once. Default 100 ms.
    pub reconnect_backoff: Duration,
}

impl Default for RedisGuardConfig {
    fn default() -> Self {
        Self {
            claim_timeout: Duration::from_millis(50),
            key_prefix: "cr:set:".to_owned(),
            queue_bound: 4096,
            reconnect_backoff: Duration::from_millis(100),
        }
    }
}

/// Why a [`RedisGuard`] could not be created.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The Redis URL is not one this guard can use:
    /// `redis://[[user]:password@]host[:port][/db]` (plain TCP; no TLS, no
    /// Unix socket).
    Url(String),
    /// A configuration value is out of range; the message names it.
    Config(&'static str),
    /// The worker thread could not be started.
    Spawn(std::io::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Url(why) => write!(f, "invalid Redis URL: {why}"),
            Error::Config(why) => write!(f, "invalid Redis guard configuration: {why}"),
            Error::Spawn(e) => write!(f, "cannot start the Redis guard's worker thread: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Spawn(e) => Some(e),
            _ => None,
        }
    }
}

/// A claim on its way to the worker.
struct Request {
    id: SetId,
    /// The set's expiry, unix milliseconds (> 0).
    expiry_ms: u64,
    deadline: Instant,
    answer: ClaimAnswer,
}

/// A [`TokenGuard`] recording claims in Redis, shared by every server of a
/// fleet that uses the same Redis and key prefix (see the crate docs for
/// what it guarantees).
///
/// One worker thread per guard owns the connection; share one guard between
/// all connections of a server (it is `Sync`; wrap it in an `Arc`). Dropping
/// the guard stops and joins the worker; claims still waiting are answered
/// [`ClaimOutcome::Unavailable`].
pub struct RedisGuard {
    queue: Option<SyncSender<Request>>,
    stopping: Arc<AtomicBool>,
    worker: Option<JoinHandle<()>>,
    claim_timeout: Duration,
}

impl fmt::Debug for RedisGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisGuard")
            .field("claim_timeout", &self.claim_timeout)
            .finish_non_exhaustive()
    }
}

impl RedisGuard {
    /// Creates a guard for the Redis at `url` (`redis://host:port/db`) and
    /// starts its worker, which connects at once in the background.
    ///
    /// An unreachable Redis is not an error: claims are answered
    /// [`ClaimOutcome::Unavailable`] until it can be reached, so servers can
    /// start before Redis and outlive its restarts. Errors are an unusable
    /// URL or configuration and a failure to start the thread. Prefer an IP
    /// address in `url`: a host name is resolved on every connection, by
    /// the worker, and a slow resolver delays the answers.
    pub fn connect(url: &str, config: RedisGuardConfig) -> Result<RedisGuard, Error> {
        if config.claim_timeout.is_zero() {
            return Err(Error::Config("claim_timeout must not be zero"));
        }
        if config.queue_bound == 0 {
            return Err(Error::Config("queue_bound must not be zero"));
        }
        let target = Target::from_url(url)?;
        let (queue, requests) = mpsc::sync_channel(config.queue_bound);
        let stopping = Arc::new(AtomicBool::new(false));
        let claim_timeout = config.claim_timeout;
        let mut worker = Worker {
            target,
            config,
            connection: None,
            retry_at: None,
            stopping: stopping.clone(),
            keys: String::new(),
            failing: false,
        };
        let worker = std::thread::Builder::new()
            .name("cr-guard-redis".to_owned())
            .spawn(move || worker.run(requests))
            .map_err(Error::Spawn)?;
        Ok(RedisGuard {
            queue: Some(queue),
            stopping,
            worker: Some(worker),
            claim_timeout,
        })
    }

    /// The configured [`RedisGuardConfig::claim_timeout`].
    pub fn claim_timeout(&self) -> Duration {
        self.claim_timeout
    }
}

impl TokenGuard for RedisGuard {
    /// Queues the claim for the worker without blocking. Answered
    /// [`ClaimOutcome::Unavailable`] at once when the set has expired
    /// already (`expiry <= now`), when the queue is full, and while the
    /// worker waits to reconnect.
    fn start_claim(&self, id: SetId, expiry: SystemTime, now: SystemTime) -> Claim {
        let Some(expiry_ms) = unix_ms(expiry).filter(|_| expiry > now) else {
            return Claim::answered(ClaimOutcome::Unavailable);
        };
        let Some(queue) = &self.queue else {
            return Claim::answered(ClaimOutcome::Unavailable);
        };
        let (claim, answer) = Claim::pending();
        let request = Request {
            id,
            expiry_ms,
            deadline: Instant::now() + self.claim_timeout,
            answer,
        };
        match queue.try_send(request) {
            Ok(()) => {}
            Err(TrySendError::Full(r) | TrySendError::Disconnected(r)) => {
                r.answer.answer(ClaimOutcome::Unavailable)
            }
        }
        claim
    }
}

impl Drop for RedisGuard {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::Release);
        // Closing the queue wakes the worker; it answers what is left
        // Unavailable and returns (within one claim timeout if it is
        // waiting for Redis).
        self.queue = None;
        if let Some(worker) = self.worker.take() {
            // A worker that panicked has dropped (so answered) its claims.
            let _ = worker.join();
        }
    }
}

/// The unix time of `t` in whole milliseconds, if after the epoch and
/// representable.
fn unix_ms(t: SystemTime) -> Option<u64> {
    let ms = t.duration_since(UNIX_EPOCH).ok()?.as_millis();
    u64::try_from(ms).ok().filter(|&ms| ms > 0)
}

/// The Redis key of set `id`: the prefix and the id's 16 hex digits.
pub fn claim_key(prefix: &str, id: SetId) -> String {
    format!("{prefix}{:016x}", id.0)
}

/// The worker's half: owns the connection, batches and answers claims.
struct Worker {
    target: Target,
    config: RedisGuardConfig,
    connection: Option<Connection>,
    /// While set and in the future, claims are refused without trying.
    retry_at: Option<Instant>,
    stopping: Arc<AtomicBool>,
    /// Scratch space for formatting keys.
    keys: String,
    /// Whether the last attempt failed: an outage is logged once when it
    /// starts and once when it ends, never per claim.
    failing: bool,
}

impl Worker {
    fn run(&mut self, requests: Receiver<Request>) {
        // Connect before the first claim arrives, so that it does not pay
        // for the handshake.
        self.ensure_connection(Instant::now() + self.config.claim_timeout);
        let mut batch = Vec::with_capacity(self.config.queue_bound.min(1024));
        loop {
            // A connection that died while idle shows on the next batch.
            let Ok(first) = requests.recv() else {
                return;
            };
            batch.push(first);
            while batch.len() < self.config.queue_bound {
                match requests.try_recv() {
                    Ok(r) => batch.push(r),
                    Err(_) => break,
                }
            }
            if self.stopping.load(Ordering::Acquire) {
                answer_all(&mut batch, ClaimOutcome::Unavailable);
                continue;
            }
            self.serve(&mut batch);
        }
    }

    /// Answers every claim of `batch`, leaving it empty.
    fn serve(&mut self, batch: &mut Vec<Request>) {
        let now = Instant::now();
        // Claims out of time already, or arriving while we back off, are
        // refused without a round trip.
        batch.retain_mut(|r| r.deadline > now);
        if batch.is_empty() {
            return;
        }
        if self.retry_at.is_some_and(|at| now < at) {
            answer_all(batch, ClaimOutcome::Unavailable);
            return;
        }
        let Some(earliest) = batch.iter().map(|r| r.deadline).min() else {
            return;
        };
        let reused = self.connection.is_some();
        if !self.ensure_connection(earliest) {
            answer_all(batch, ClaimOutcome::Unavailable);
            return;
        }
        let mut replies = Vec::with_capacity(batch.len());
        let mut sent = self.send(batch, earliest, &mut replies);
        if sent.is_err() && replies.is_empty() && reused && Instant::now() < earliest {
            // A connection that sat idle may have been closed meanwhile (a
            // Redis restart, its idle timeout, a proxy): try once more on a
            // fresh one. Never a second grant: a SET that reached Redis
            // the first time makes the second answer Taken.
            self.connection = None;
            if self.ensure_connection(earliest) {
                sent = self.send(batch, earliest, &mut replies);
            }
        }
        let answered = Instant::now();
        // Replies read before a failure are good: answer them.
        let mut healthy = sent.is_ok();
        for (request, reply) in batch.drain(..replies.len()).zip(replies) {
            let outcome = match reply {
                Value::Okay => ClaimOutcome::Granted,
                Value::SimpleString(s) if s == "OK" => ClaimOutcome::Granted,
                Value::Nil => ClaimOutcome::Taken,
                _ => {
                    healthy = false;
                    ClaimOutcome::Unavailable
                }
            };
            let outcome = if answered < request.deadline {
                outcome
            } else {
                ClaimOutcome::Unavailable
            };
            request.answer.answer(outcome);
        }
        if !healthy {
            // Broken, out of time (the replies still to come would be
            // taken for the next batch's), or answering SET NX with
            // something else: not a connection to go on with.
            self.fail();
        }
        answer_all(batch, ClaimOutcome::Unavailable);
    }

    /// Sends the batch as one pipeline and reads its replies into
    /// `replies`, one per claim, each read by `deadline`; on failure
    /// `replies` holds those read before it.
    fn send(
        &mut self,
        batch: &[Request],
        deadline: Instant,
        replies: &mut Vec<Value>,
    ) -> Result<(), Broken> {
        let Some(connection) = self.connection.as_mut() else {
            return Err(Broken);
        };
        let mut pipe = redis::pipe();
        for r in batch {
            self.keys.clear();
            self.keys.push_str(&self.config.key_prefix);
            push_hex(&mut self.keys, r.id.0);
            pipe.cmd("SET")
                .arg(self.keys.as_str())
                .arg(1)
                .arg("NX")
                .arg("PXAT")
                .arg(r.expiry_ms);
        }
        connection.request(&pipe.get_packed_pipeline(), batch.len(), deadline, replies)
    }

    /// Makes sure there is a connection, connecting within the time left to
    /// `deadline` (at most the claim timeout) if needed.
    fn ensure_connection(&mut self, deadline: Instant) -> bool {
        if self.connection.is_some() {
            return true;
        }
        let deadline = deadline.min(Instant::now() + self.config.claim_timeout);
        match Connection::open(&self.target, deadline) {
            Ok(connection) => {
                self.connection = Some(connection);
                self.retry_at = None;
                if std::mem::take(&mut self.failing) {
                    log::info!(
                        "Redis guard {}:{} answers again: Careful Resume is back",
                        self.target.host,
                        self.target.port
                    );
                }
                true
            }
            Err(_) => {
                self.fail();
                false
            }
        }
    }

    /// Drops the connection and backs off.
    fn fail(&mut self) {
        if !std::mem::replace(&mut self.failing, true) {
            log::warn!(
                "Redis guard {}:{} unreachable or misbehaving: no connection resumes \
                 (fail closed) until it answers",
                self.target.host,
                self.target.port
            );
        }
        self.connection = None;
        self.retry_at = Some(Instant::now() + self.config.reconnect_backoff);
    }
}

fn answer_all(batch: &mut Vec<Request>, outcome: ClaimOutcome) {
    for r in batch.drain(..) {
        r.answer.answer(outcome);
    }
}

/// The time left until `deadline`, at least a millisecond (a zero socket
/// timeout would mean none).
fn time_left(deadline: Instant) -> Duration {
    deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1))
}

fn push_hex(out: &mut String, id: u64) {
    use std::fmt::Write;
    // Writing to a String cannot fail.
    let _ = write!(out, "{id:016x}");
}

/// Where the worker connects, from the URL.
#[derive(Debug)]
struct Target {
    host: String,
    port: u16,
    /// `AUTH [user] password` after connecting.
    auth: Option<(Option<String>, String)>,
    /// `SELECT db` after connecting, unless 0.
    db: i64,
}

impl Target {
    fn from_url(url: &str) -> Result<Target, Error> {
        let info = url
            .into_connection_info()
            .map_err(|e| Error::Url(e.to_string()))?;
        let ConnectionAddr::Tcp(host, port) = info.addr().clone() else {
            return Err(Error::Url(format!(
                "{}: only redis:// over TCP is supported",
                info.addr()
            )));
        };
        let redis = info.redis_settings();
        Ok(Target {
            host,
            port,
            auth: redis
                .password()
                .map(|p| (redis.username().map(str::to_owned), p.to_owned())),
            db: redis.db(),
        })
    }
}

/// A connection is broken (closed, timed out, or not speaking RESP).
#[derive(Debug)]
struct Broken;

impl From<io::Error> for Broken {
    fn from(_: io::Error) -> Broken {
        Broken
    }
}

/// One TCP connection to Redis, speaking RESP2.
///
/// The guard does its own I/O (the redis crate encodes and parses): it must
/// stop at the first reply that does not come in time, where a pipelined
/// read of the redis crate waits out the socket timeout once per command.
struct Connection {
    stream: TcpStream,
    /// Keeps bytes read past one reply for the next.
    parser: Parser,
}

impl Connection {
    /// Connects (and authenticates, and selects the database) by
    /// `deadline`.
    fn open(target: &Target, deadline: Instant) -> Result<Connection, Broken> {
        let mut last = Broken;
        for addr in (target.host.as_str(), target.port).to_socket_addrs()? {
            let stream = match TcpStream::connect_timeout(&addr, time_left(deadline)) {
                Ok(stream) => stream,
                Err(e) => {
                    last = e.into();
                    continue;
                }
            };
            // No Nagle delay on the small pipelines.
            stream.set_nodelay(true)?;
            let mut connection = Connection {
                stream,
                parser: Parser::new(),
            };
            connection.setup(target, deadline)?;
            return Ok(connection);
        }
        Err(last)
    }

    fn setup(&mut self, target: &Target, deadline: Instant) -> Result<(), Broken> {
        let mut pipe = redis::pipe();
        if let Some((user, password)) = &target.auth {
            pipe.cmd("AUTH");
            if let Some(user) = user {
                pipe.arg(user.as_str());
            }
            pipe.arg(password.as_str());
        }
        if target.db != 0 {
            pipe.cmd("SELECT").arg(target.db);
        }
        if pipe.is_empty() {
            return Ok(());
        }
        let mut replies = Vec::with_capacity(pipe.len());
        self.request(
            &pipe.get_packed_pipeline(),
            pipe.len(),
            deadline,
            &mut replies,
        )?;
        if replies.iter().all(|r| matches!(r, Value::Okay)) {
            Ok(())
        } else {
            Err(Broken)
        }
    }

    /// Writes `packed` (`count` commands) and reads `count` replies into
    /// `replies`, every byte by `deadline`; stops at the first failure.
    fn request(
        &mut self,
        packed: &[u8],
        count: usize,
        deadline: Instant,
        replies: &mut Vec<Value>,
    ) -> Result<(), Broken> {
        self.stream.set_write_timeout(Some(time_left(deadline)))?;
        self.stream.write_all(packed)?;
        for _ in 0..count {
            if Instant::now() >= deadline {
                return Err(Broken);
            }
            // Each read waits at most until the deadline.
            self.stream.set_read_timeout(Some(time_left(deadline)))?;
            let reply = self
                .parser
                .parse_value(&mut self.stream)
                .map_err(|_| Broken)?;
            replies.push(reply);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_the_prefix_and_sixteen_hex_digits() {
        assert_eq!(claim_key("cr:set:", SetId(0xab)), "cr:set:00000000000000ab");
        assert_eq!(claim_key("", SetId(u64::MAX)), "ffffffffffffffff");
        let mut s = String::from("p:");
        push_hex(&mut s, 0x0123_4567_89ab_cdef);
        assert_eq!(s, "p:0123456789abcdef");
    }

    #[test]
    fn expiry_in_unix_milliseconds() {
        assert_eq!(
            unix_ms(UNIX_EPOCH + Duration::from_millis(1_700_000_000_123)),
            Some(1_700_000_000_123)
        );
        assert_eq!(unix_ms(UNIX_EPOCH), None);
        assert_eq!(unix_ms(UNIX_EPOCH - Duration::from_secs(1)), None);
    }

    #[test]
    fn configuration_out_of_range_is_refused() {
        let zero_timeout = RedisGuardConfig {
            claim_timeout: Duration::ZERO,
            ..Default::default()
        };
        assert!(matches!(
            RedisGuard::connect("redis://127.0.0.1:1/", zero_timeout),
            Err(Error::Config(_))
        ));
        let zero_queue = RedisGuardConfig {
            queue_bound: 0,
            ..Default::default()
        };
        assert!(matches!(
            RedisGuard::connect("redis://127.0.0.1:1/", zero_queue),
            Err(Error::Config(_))
        ));
        assert!(matches!(
            RedisGuard::connect("http://example.invalid/", RedisGuardConfig::default()),
            Err(Error::Url(_))
        ));
    }

    #[test]
    fn one_guard_serves_every_thread() {
        fn shareable<T: Send + Sync>() {}
        shareable::<RedisGuard>();
    }

    #[test]
    fn an_expired_set_is_refused_at_once() {
        let guard = RedisGuard::connect("redis://127.0.0.1:1/", Default::default()).unwrap();
        let now = UNIX_EPOCH + Duration::from_secs(1_000);
        let claim = guard.start_claim(SetId(1), now, now);
        assert_eq!(claim.outcome(), ClaimOutcome::Unavailable);
    }
}
