//! A [`TokenGuard`] shared by a fleet of servers through one Redis: the
//! one-user-per-set rule of RFC 9959 across processes and restarts.
//!
//! This crate owns the claim's trip to Redis and back: the bounded queue
//! between a server's event loop and the one worker thread that owns the
//! Redis connection, the pipelining of queued claims, the deadline of each
//! claim, and reconnection. What a set id is, and when a token may be
//! claimed at all, belongs to `ex-token`.
//!
//! # How the rules are kept
//!
//! The guard keeps one Redis hash per Remote Endpoint (the key prefix, then
//! `site/network/prefix length`, e.g. `cr:ep:0/192.0.2.0/24`) with the
//! current set's id, measurement time and state (`free`, `claimed`,
//! `revoked`), expiring with the set (`PEXPIREAT`). Every operation is one
//! call of one Lua script ([`SCRIPT`], loaded when the worker connects and
//! run by `EVALSHA`), which applies [`ex_token::decide`]'s rules atomically:
//! a claim is one compare-and-claim round trip, whichever server of the
//! fleet makes it and however many claim at once.
//!
//! [`RedisGuard::start_claim`](TokenGuard::start_claim) never blocks: it
//! queues the claim (or, when the queue is full, answers
//! [`ClaimOutcome::Unavailable`] at once) and returns a [`Claim`]; records
//! and releases are queued the same way and answer nothing. The worker
//! drains everything queued and sends it as one pipeline, in the order it
//! was queued. The script's reply `granted`, `taken`, `superseded`,
//! `revoked` or `ahead` (measured ahead of Redis's clock) answers a claim;
//! anything else (an error reply, another type, bytes that are not Redis
//! protocol, no reply before the claim's deadline, a broken connection)
//! answers [`ClaimOutcome::Unavailable`]. The key is
//! derived only from the Remote Endpoint and the set, which the server
//! read from a token it authenticated, never from bytes off the network.
//!
//! Revocations are never dropped. [`TokenGuard::revoke`] hands them to a
//! list of their own, unbounded (a revocation follows a Safe Retreat, which
//! is rare) and sent ahead of the queue; one Redis did not take is sent
//! again every [`RedisGuardConfig::reconnect_backoff`] until Redis takes it
//! or its set expires: a retreated set must not come back. While any wait,
//! the worker logs at error level (when they start waiting, then every ten
//! seconds) and [`RedisGuard::pending_revocations`] counts them; dropping
//! the guard makes one last attempt within a claim timeout.
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
//! - **One Redis primary.** A script runs atomically, so while the primary
//!   holds the record exactly one claim of a set is granted, whichever
//!   server of the fleet made it and however many claim at once.
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
//! - **Clocks.** `PEXPIREAT` is absolute: Redis forgets a record at the
//!   set's expiry by its own clock. Servers and Redis need clocks that agree (NTP)
//!   to well within a set's lifetime; a claim whose expiry is already past by
//!   Redis's clock is granted and not remembered. Redis's clock is also the
//!   fleet's reference for measurement times: a set measured more than
//!   [`ex_token::MAX_CLOCK_SKEW`] ahead of it (a server whose clock runs
//!   ahead) is refused ([`ClaimOutcome::ClockSkew`]) and never recorded as
//!   its Remote Endpoint's newest, so it cannot supersede the sets of the
//!   servers whose clocks are right (see [`SCRIPT`]).
//! - **Unavailable is a refusal.** A connection whose claim is not granted,
//!   for whatever reason, does not resume from the set (fail closed); a
//!   claim answered [`ClaimOutcome::Unavailable`] after Redis recorded it
//!   (e.g. its reply came too late) uses up the set without resuming.
//! - **Eviction.** A Redis whose `maxmemory-policy` evicts keys
//!   (`allkeys-lru`, `volatile-ttl`, ...) may drop a record under memory
//!   pressure, and with it a claim or a revocation: a retreated set could
//!   resume again. Run the guard's Redis with `maxmemory-policy noeviction`
//!   (Redis's default): when it is full, writes fail, claims are refused and
//!   revocations wait, which is safe. The guard reads the policy each time
//!   it connects ([`RedisGuard::eviction_policy`]) and logs a warning when
//!   it is anything else or cannot be read (`CONFIG` disabled).
//!
//! Keys with the configured prefix belong to the guard: share the prefix
//! across the fleet, and give another deployment sharing the same Redis
//! another prefix.

use std::fmt;
use std::io::{self, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ex_token::{
    Claim, ClaimAnswer, ClaimOutcome, OnceId, RemoteEndpoint, SavedSet, SetEvent, TokenGuard,
};
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
    /// Prepended to a Remote Endpoint to make the key of its record
    /// ([`record_key`]). Default `"cr:ep:"`.
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
            key_prefix: "cr:ep:".to_owned(),
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

/// The script every operation runs: [`ex_token::decide`]'s rules on the
/// record `KEYS[1]`, for `ARGV` = operation (`claim`, `mint`, `release`,
/// `revoke`), set id (16 hex digits), measured at and expiry (unix ms), and
/// the clock skew allowed ([`ex_token::MAX_CLOCK_SKEW`], ms).
///
/// One rule more than `decide`'s, by Redis's own clock (`TIME`): a set
/// measured later than Redis's now plus the skew was minted by a server
/// whose clock is ahead. Its claim is answered `ahead`
/// ([`ClaimOutcome::ClockSkew`]) and its mint is not recorded, so it
/// supersedes nothing. Its revocation is recorded as `decide` says: no set
/// measured ahead is granted here, so one comes only from a grant made
/// before (by a guard without this rule), and a retreated set must stay
/// dead. A free record measured beyond the horizon (a mint recorded by a
/// guard without this rule) gives way to any set: no connection used it.
/// A claimed or revoked one does not (the set must not be used again).
/// Writing after `TIME` needs the script's effects replicated rather than
/// the script, the default since Redis 5; the script asks for it on
/// Redis 4.
pub const SCRIPT: &str = r#"
local op, id, at, expiry = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
if redis.replicate_commands then redis.replicate_commands() end
local time = redis.call('TIME')
local horizon = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) + tonumber(ARGV[5])
local record = redis.call('HMGET', KEYS[1], 'id', 'at', 'state')
local rid, rat, state = record[1], tonumber(record[2]), record[3]
local current = rid == id
local ahead = at > horizon
local stale = rat ~= nil and rat > horizon and state == 'free'
local newer = (not rid) or at > rat or stale
local function write(s)
  redis.call('HSET', KEYS[1], 'id', id, 'at', ARGV[3], 'state', s)
  redis.call('PEXPIREAT', KEYS[1], expiry)
end
if op == 'claim' then
  if ahead then return 'ahead' end
  if current then
    if state == 'free' then
      redis.call('HSET', KEYS[1], 'state', 'claimed')
      return 'granted'
    end
    if state == 'revoked' then return 'revoked' end
    return 'taken'
  end
  if newer then
    write('claimed')
    return 'granted'
  end
  return 'superseded'
elseif op == 'mint' then
  if ahead then return 'ok' end
  if not rid or (not current and (at >= rat or stale)) then write('free') end
elseif op == 'release' then
  if current and state == 'claimed' then redis.call('HSET', KEYS[1], 'state', 'free') end
elseif op == 'revoke' then
  if current then
    redis.call('HSET', KEYS[1], 'state', 'revoked')
  elseif newer then
    write('revoked')
  end
end
return 'ok'
"#;

/// [`ex_token::MAX_CLOCK_SKEW`] in milliseconds, for the script.
const MAX_CLOCK_SKEW_MS: u64 = ex_token::MAX_CLOCK_SKEW.as_millis() as u64;

/// How often the worker repeats its error line while revocations wait.
const REVOCATION_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// The only `maxmemory-policy` under which Redis never drops a record.
const NO_EVICTION: &str = "noeviction";

/// What the worker receives.
enum Job {
    /// A claim, record or release.
    Request(Request),
    /// Revocations were added to [`Shared::revocations`].
    Revocations,
}

/// What the guard and its worker share.
#[derive(Default)]
struct Shared {
    stopping: AtomicBool,
    /// Revocations handed over by [`TokenGuard::revoke`], not yet taken by
    /// the worker.
    revocations: Mutex<Vec<Request>>,
    /// Revocations Redis has not taken yet (handed over, waiting for a
    /// retry or on their way), their sets not expired.
    pending_revocations: AtomicUsize,
    /// The `maxmemory-policy` read on the last connection.
    eviction_policy: Mutex<Option<String>>,
}

impl Shared {
    fn revocations(&self) -> MutexGuard<'_, Vec<Request>> {
        // A panic elsewhere while holding it leaves a list still usable.
        self.revocations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn eviction_policy(&self) -> MutexGuard<'_, Option<String>> {
        self.eviction_policy
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// An operation on its way to the worker.
struct Request {
    subject: Subject,
    /// The record's expiry, unix milliseconds (> 0): the set's, or the
    /// once-record's.
    expiry_ms: u64,
    op: Op,
}

/// What a request records.
enum Subject {
    /// A saved set, through [`SCRIPT`].
    Set(SavedSet),
    /// Something done at most once (a 0-RTT first flight, an address
    /// token): one `SET NX PXAT`, which only the first writer wins.
    Once(OnceId),
}

enum Op {
    /// A claim, answered by `deadline`.
    Claim {
        deadline: Instant,
        answer: ClaimAnswer,
    },
    /// A record, release or revocation: nothing to answer.
    Write(SetEvent),
}

impl Request {
    fn deadline(&self) -> Option<Instant> {
        match &self.op {
            Op::Claim { deadline, .. } => Some(*deadline),
            Op::Write(_) => None,
        }
    }

    fn is_revocation(&self) -> bool {
        matches!(self.op, Op::Write(SetEvent::Revoked))
    }

    /// Answers a claim; a write has no one to tell.
    fn answer(self, outcome: ClaimOutcome) {
        if let Op::Claim { answer, .. } = self.op {
            answer.answer(outcome);
        }
    }
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
    queue: Option<SyncSender<Job>>,
    shared: Arc<Shared>,
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
        let shared = Arc::new(Shared::default());
        let claim_timeout = config.claim_timeout;
        let mut worker = Worker {
            target,
            config,
            connection: None,
            retry_at: None,
            shared: shared.clone(),
            keys: String::new(),
            revocations: Vec::new(),
            failing: false,
            revocations_logged: None,
            policy_logged: None,
        };
        let worker = std::thread::Builder::new()
            .name("cr-guard-redis".to_owned())
            .spawn(move || worker.run(requests))
            .map_err(Error::Spawn)?;
        Ok(RedisGuard {
            queue: Some(queue),
            shared,
            worker: Some(worker),
            claim_timeout,
        })
    }

    /// The configured [`RedisGuardConfig::claim_timeout`].
    pub fn claim_timeout(&self) -> Duration {
        self.claim_timeout
    }

    /// Revocations Redis has not taken yet, of sets not expired: each is
    /// sent again until Redis takes it. Non-zero for longer than an outage
    /// of Redis means Redis refuses them (e.g. it is out of memory).
    pub fn pending_revocations(&self) -> usize {
        self.shared.pending_revocations.load(Ordering::Acquire)
    }

    /// Redis's `maxmemory-policy`, as read when the guard last connected:
    /// `None` before the first connection or when Redis would not tell
    /// (`CONFIG` renamed or not permitted). Anything but `noeviction` lets
    /// Redis drop records, revocations included (see the crate docs).
    pub fn eviction_policy(&self) -> Option<String> {
        self.shared.eviction_policy().clone()
    }
}

impl RedisGuard {
    /// Queues `op` on `set` without blocking; false when it cannot be
    /// queued (the set has expired, the queue is full, the guard is
    /// stopping). A claim not queued is dropped, which answers it
    /// [`ClaimOutcome::Unavailable`].
    fn queue(&self, set: &SavedSet, now: SystemTime, op: Op) -> bool {
        let Some(expiry_ms) = unix_ms(set.expiry).filter(|_| set.expiry > now) else {
            return false;
        };
        let Some(queue) = &self.queue else {
            return false;
        };
        let request = Request {
            subject: Subject::Set(*set),
            expiry_ms,
            op,
        };
        queue.try_send(Job::Request(request)).is_ok()
    }

    fn write(&self, set: &SavedSet, now: SystemTime, event: SetEvent) {
        if !self.queue(set, now, Op::Write(event)) {
            log::debug!("Redis guard: queue full, {event:?} of a saved set dropped");
        }
    }
}

impl TokenGuard for RedisGuard {
    /// Queues the claim for the worker without blocking. Answered
    /// [`ClaimOutcome::Unavailable`] at once when the set has expired
    /// already (`expiry <= now`), when the queue is full, and while the
    /// worker waits to reconnect.
    fn start_claim(&self, set: &SavedSet, now: SystemTime) -> Claim {
        let (claim, answer) = Claim::pending();
        let op = Op::Claim {
            deadline: Instant::now() + self.claim_timeout,
            answer,
        };
        self.queue(set, now, op);
        claim
    }

    fn record(&self, set: &SavedSet, now: SystemTime) {
        self.write(set, now, SetEvent::Minted);
    }

    /// Queues the record for the worker without blocking, answered like a
    /// claim (within the claim timeout; [`ClaimOutcome::Unavailable`] when
    /// Redis cannot be reached, so the server acts as for a replay). Every
    /// server of the fleet sees the one record: `SET NX` lets only the
    /// first writer win.
    fn start_once(&self, id: &OnceId, until: SystemTime, now: SystemTime) -> Claim {
        let (claim, answer) = Claim::pending();
        let (Some(expiry_ms), Some(queue)) = (unix_ms(until).filter(|_| until > now), &self.queue)
        else {
            return claim;
        };
        let request = Request {
            subject: Subject::Once(*id),
            expiry_ms,
            op: Op::Claim {
                deadline: Instant::now() + self.claim_timeout,
                answer,
            },
        };
        let _ = queue.try_send(Job::Request(request));
        claim
    }

    fn release(&self, set: &SavedSet, now: SystemTime) {
        self.write(set, now, SetEvent::Released);
    }

    /// Hands the revocation to the worker, which sends it until Redis
    /// takes it or the set expires: never dropped, never blocking (see
    /// [`RedisGuard::pending_revocations`]). A set expired already needs
    /// none: nothing accepts it.
    fn revoke(&self, set: &SavedSet, now: SystemTime) {
        let Some(expiry_ms) = unix_ms(set.expiry).filter(|_| set.expiry > now) else {
            return;
        };
        let Some(queue) = &self.queue else {
            return;
        };
        self.shared.revocations().push(Request {
            subject: Subject::Set(*set),
            expiry_ms,
            op: Op::Write(SetEvent::Revoked),
        });
        self.shared
            .pending_revocations
            .fetch_add(1, Ordering::AcqRel);
        // Wakes the worker; when the queue is full, the worker is awake and
        // takes the list with its next batch.
        let _ = queue.try_send(Job::Revocations);
    }
}

impl Drop for RedisGuard {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::Release);
        // Closing the queue wakes the worker; it answers what is left
        // Unavailable, tries its revocations once more and returns (within
        // about two claim timeouts if it is waiting for Redis).
        self.queue = None;
        if let Some(worker) = self.worker.take() {
            // A worker that panicked has dropped (so answered) its claims.
            let _ = worker.join();
        }
        let lost = self.pending_revocations();
        if lost > 0 {
            log::error!(
                "Redis guard stopped with {lost} revocation(s) of retreated saved sets \
                 not delivered: other servers may resume from those sets"
            );
        }
    }
}

/// The unix time of `t` in whole milliseconds, if after the epoch and
/// representable.
fn unix_ms(t: SystemTime) -> Option<u64> {
    let ms = t.duration_since(UNIX_EPOCH).ok()?.as_millis();
    u64::try_from(ms).ok().filter(|&ms| ms > 0)
}

/// The Redis key of `endpoint`'s record: the prefix, then
/// `site/network/prefix length`.
pub fn record_key(prefix: &str, endpoint: &RemoteEndpoint) -> String {
    format!("{prefix}{endpoint}")
}

/// The script's name for an operation.
fn op_name(op: &Op) -> &'static str {
    match op {
        Op::Claim { .. } => "claim",
        Op::Write(SetEvent::Minted) => "mint",
        Op::Write(SetEvent::Released) => "release",
        Op::Write(SetEvent::Revoked) => "revoke",
        Op::Write(SetEvent::Claimed) => "claim",
    }
}

/// The worker's half: owns the connection, batches and answers claims.
struct Worker {
    target: Target,
    config: RedisGuardConfig,
    connection: Option<Connection>,
    /// While set and in the future, claims are refused without trying.
    retry_at: Option<Instant>,
    shared: Arc<Shared>,
    /// Scratch space for formatting keys.
    keys: String,
    /// Revocations not delivered yet, tried again with the next batch.
    revocations: Vec<Request>,
    /// Whether the last attempt failed: an outage is logged once when it
    /// starts and once when it ends, never per claim.
    failing: bool,
    /// When waiting revocations were last logged, while any wait.
    revocations_logged: Option<Instant>,
    /// The eviction policy last logged about, so that each connection does
    /// not repeat it.
    policy_logged: Option<Option<String>>,
}

impl Worker {
    fn run(&mut self, requests: Receiver<Job>) {
        // Connect before the first claim arrives, so that it does not pay
        // for the handshake.
        self.ensure_connection(Instant::now() + self.config.claim_timeout);
        let mut batch = Vec::with_capacity(self.config.queue_bound.min(1024));
        loop {
            // A connection that died while idle shows on the next batch.
            // Revocations handed over go at once; revocations waiting to be
            // delivered wake the worker after the backoff.
            let handed_over = !self.shared.revocations().is_empty();
            let first = if handed_over {
                match requests.try_recv() {
                    Ok(job) => Some(job),
                    Err(TryRecvError::Empty) => None,
                    Err(TryRecvError::Disconnected) => break,
                }
            } else if self.revocations.is_empty() {
                match requests.recv() {
                    Ok(job) => Some(job),
                    Err(_) => break,
                }
            } else {
                match requests.recv_timeout(self.config.reconnect_backoff) {
                    Ok(job) => Some(job),
                    Err(mpsc::RecvTimeoutError::Timeout) => None,
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                }
            };
            self.take_revocations();
            batch.append(&mut self.revocations);
            if let Some(Job::Request(r)) = first {
                batch.push(r);
            }
            while batch.len() < self.config.queue_bound {
                match requests.try_recv() {
                    Ok(Job::Request(r)) => batch.push(r),
                    Ok(Job::Revocations) => {}
                    Err(_) => break,
                }
            }
            if self.shared.stopping.load(Ordering::Acquire) {
                self.give_up(&mut batch);
            } else {
                self.serve(&mut batch);
            }
            self.log_revocations();
        }
        // The guard is gone: one last try for the revocations still
        // waiting, within a claim timeout.
        self.take_revocations();
        if !self.revocations.is_empty() {
            self.retry_at = None;
            let mut batch = std::mem::take(&mut self.revocations);
            self.serve(&mut batch);
        }
    }

    /// Moves the revocations handed over into the worker's own list, and
    /// forgets those whose sets have expired (nothing accepts them now).
    fn take_revocations(&mut self) {
        let handed_over = std::mem::take(&mut *self.shared.revocations());
        self.revocations.extend(handed_over);
        let now = unix_ms(SystemTime::now()).unwrap_or(0);
        let before = self.revocations.len();
        self.revocations.retain(|r| now < r.expiry_ms);
        self.delivered(before - self.revocations.len());
    }

    /// Counts `n` revocations as no longer waiting.
    fn delivered(&self, n: usize) {
        if n > 0 {
            self.shared
                .pending_revocations
                .fetch_sub(n, Ordering::AcqRel);
        }
    }

    /// Logs at error level while revocations wait (when they start, then
    /// every [`REVOCATION_LOG_INTERVAL`]), and once when none is left.
    fn log_revocations(&mut self) {
        let waiting = self.revocations.len();
        let (host, port) = (&self.target.host, self.target.port);
        if waiting == 0 {
            if self.revocations_logged.take().is_some() {
                log::info!("Redis guard {host}:{port}: every waiting revocation delivered");
            }
            return;
        }
        let now = Instant::now();
        if self
            .revocations_logged
            .is_none_or(|at| now.duration_since(at) >= REVOCATION_LOG_INTERVAL)
        {
            self.revocations_logged = Some(now);
            log::error!(
                "Redis guard {host}:{port}: {waiting} revocation(s) of retreated saved sets \
                 not delivered yet, sent again every {:?} until Redis takes them; until \
                 then other servers may resume from those sets",
                self.config.reconnect_backoff
            );
        }
    }

    /// Answers every claim of `batch` and delivers its writes, leaving it
    /// empty; revocations not delivered wait for the next batch.
    fn serve(&mut self, batch: &mut Vec<Request>) {
        let now = Instant::now();
        // Claims out of time already are refused without a round trip
        // (dropping an answer answers Unavailable).
        batch.retain(|r| r.deadline().is_none_or(|deadline| deadline > now));
        if batch.is_empty() {
            return;
        }
        if self.retry_at.is_some_and(|at| now < at) {
            self.give_up(batch);
            return;
        }
        let earliest = batch
            .iter()
            .filter_map(Request::deadline)
            .min()
            .unwrap_or(now + self.config.claim_timeout);
        let reused = self.connection.is_some();
        if !self.ensure_connection(earliest) {
            self.give_up(batch);
            return;
        }
        let mut replies = Vec::with_capacity(batch.len());
        let mut sent = self.send(batch, earliest, &mut replies);
        if sent.is_err() && replies.is_empty() && reused && Instant::now() < earliest {
            // A connection that sat idle may have been closed meanwhile (a
            // Redis restart, its idle timeout, a proxy): try once more on a
            // fresh one. Never a second grant: a claim that reached Redis
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
            let outcome = match (&request.subject, &reply) {
                (Subject::Once(_), Value::Okay) => ClaimOutcome::Granted,
                (Subject::Once(_), Value::Nil) => ClaimOutcome::Taken,
                (Subject::Once(_), _) => ClaimOutcome::Unavailable,
                (Subject::Set(_), Value::BulkString(s)) => match s.as_slice() {
                    b"granted" => ClaimOutcome::Granted,
                    b"taken" => ClaimOutcome::Taken,
                    b"superseded" => ClaimOutcome::Superseded,
                    b"revoked" => ClaimOutcome::Revoked,
                    b"ahead" => ClaimOutcome::ClockSkew,
                    b"ok" if request.deadline().is_none() => ClaimOutcome::Pending,
                    _ => ClaimOutcome::Unavailable,
                },
                _ => ClaimOutcome::Unavailable,
            };
            if outcome == ClaimOutcome::Unavailable {
                healthy = false;
                if request.is_revocation() {
                    self.revocations.push(request);
                    continue;
                }
            }
            if request.is_revocation() {
                self.delivered(1);
            }
            let in_time = request
                .deadline()
                .is_none_or(|deadline| answered < deadline);
            request.answer(if in_time {
                outcome
            } else {
                ClaimOutcome::Unavailable
            });
        }
        if !healthy {
            // Broken, out of time (the replies still to come would be
            // taken for the next batch's), or answering with something
            // else: not a connection to go on with.
            self.fail();
        }
        self.give_up(batch);
    }

    /// Answers the claims of `batch` Unavailable and keeps its revocations,
    /// every one, for the next attempt, leaving it empty.
    fn give_up(&mut self, batch: &mut Vec<Request>) {
        for request in batch.drain(..) {
            if request.is_revocation() {
                self.revocations.push(request);
            } else {
                request.answer(ClaimOutcome::Unavailable);
            }
        }
    }

    /// Sends the batch as one pipeline and reads its replies into
    /// `replies`, one per request, each read by `deadline`; on failure
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
            match &r.subject {
                Subject::Set(set) => {
                    push_endpoint(&mut self.keys, &set.endpoint);
                    pipe.cmd("EVALSHA")
                        .arg(connection.script.as_str())
                        .arg(1)
                        .arg(self.keys.as_str())
                        .arg(op_name(&r.op))
                        .arg(format!("{:016x}", set.id.0))
                        .arg(set.measured_at_ms())
                        .arg(r.expiry_ms)
                        .arg(MAX_CLOCK_SKEW_MS);
                }
                Subject::Once(id) => {
                    push_once(&mut self.keys, id);
                    pipe.cmd("SET")
                        .arg(self.keys.as_str())
                        .arg(1)
                        .arg("NX")
                        .arg("PXAT")
                        .arg(r.expiry_ms);
                }
            }
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
                self.check_eviction_policy(&connection);
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

    /// Publishes the connection's eviction policy, and warns (once per
    /// policy seen) when Redis may evict the guard's records.
    fn check_eviction_policy(&mut self, connection: &Connection) {
        let policy = connection.eviction_policy.clone();
        self.shared.eviction_policy().clone_from(&policy);
        if self.policy_logged.as_ref() == Some(&policy) {
            return;
        }
        let (host, port) = (&self.target.host, self.target.port);
        match &policy {
            Some(p) if p == NO_EVICTION => {}
            Some(p) => log::warn!(
                "Redis guard {host}:{port}: maxmemory-policy is {p}: Redis may evict the \
                 guard's records, and a revocation lost so lets a retreated set resume \
                 again; set maxmemory-policy {NO_EVICTION}"
            ),
            None => log::warn!(
                "Redis guard {host}:{port}: cannot read maxmemory-policy (CONFIG GET \
                 refused); make sure it is {NO_EVICTION}, or Redis may evict the guard's \
                 records and let a retreated set resume again"
            ),
        }
        self.policy_logged = Some(policy);
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

/// The value of a `CONFIG GET` reply for one parameter (`[name, value]`);
/// `None` for anything else (an error when `CONFIG` is disabled).
fn config_value(reply: &Value) -> Option<String> {
    let Value::Array(pair) = reply else {
        return None;
    };
    match pair.as_slice() {
        [_, Value::BulkString(value)] => String::from_utf8(value.clone()).ok(),
        _ => None,
    }
}

/// The time left until `deadline`, at least a millisecond (a zero socket
/// timeout would mean none).
fn time_left(deadline: Instant) -> Duration {
    deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1))
}

fn push_endpoint(out: &mut String, endpoint: &RemoteEndpoint) {
    use std::fmt::Write;
    // Writing to a String cannot fail.
    let _ = write!(out, "{endpoint}");
}

/// The key of a once-record, after the prefix: `once/<kind>/<hex value>`
/// (kept apart from the saved sets' records, which are keyed by network).
fn push_once(out: &mut String, id: &OnceId) {
    use std::fmt::Write;
    let _ = write!(out, "once/{}/", id.kind.as_str());
    for byte in id.value {
        // Writing to a String cannot fail.
        let _ = write!(out, "{byte:02x}");
    }
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
    /// The SHA-1 Redis gave [`SCRIPT`] when it was loaded on this
    /// connection.
    script: String,
    /// Redis's `maxmemory-policy`, if it would say.
    eviction_policy: Option<String>,
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
                script: String::new(),
                eviction_policy: None,
            };
            connection.setup(target, deadline)?;
            return Ok(connection);
        }
        Err(last)
    }

    /// Authenticates, selects the database, reads the eviction policy and
    /// loads [`SCRIPT`].
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
        pipe.cmd("CONFIG").arg("GET").arg("maxmemory-policy");
        pipe.cmd("SCRIPT").arg("LOAD").arg(SCRIPT);
        let mut replies = Vec::with_capacity(pipe.len());
        self.request(
            &pipe.get_packed_pipeline(),
            pipe.len(),
            deadline,
            &mut replies,
        )?;
        let Some((Value::BulkString(sha), rest)) = replies.split_last() else {
            return Err(Broken);
        };
        let Some((policy, setup)) = rest.split_last() else {
            return Err(Broken);
        };
        self.eviction_policy = config_value(policy);
        if !setup.iter().all(|r| matches!(r, Value::Okay)) {
            return Err(Broken);
        }
        self.script = String::from_utf8(sha.clone()).map_err(|_| Broken)?;
        Ok(())
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

    fn set(expiry: SystemTime) -> SavedSet {
        let ip = "192.0.2.9".parse().unwrap();
        SavedSet {
            id: ex_token::SetId(1),
            endpoint: RemoteEndpoint::new(
                ex_token::SiteId(3),
                ip,
                ex_token::AddressPrefixes::SAME_NETWORK,
            ),
            measured_at: expiry - Duration::from_secs(3600),
            expiry,
        }
    }

    #[test]
    fn keys_are_the_prefix_and_the_remote_endpoint() {
        let endpoint = set(UNIX_EPOCH + Duration::from_secs(7200)).endpoint;
        assert_eq!(record_key("cr:ep:", &endpoint), "cr:ep:3/192.0.2.0/24");
        let mut s = String::from("p:");
        push_endpoint(&mut s, &endpoint);
        assert_eq!(s, "p:3/192.0.2.0/24");
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
        let claim = guard.start_claim(&set(now), now);
        assert_eq!(claim.outcome(), ClaimOutcome::Unavailable);
    }
}
