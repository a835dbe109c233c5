//! `cr-server --metrics`: the server's Careful Resume counters
//! ([`cr_endpoint::ServerMetrics`]) served over HTTP in the Prometheus
//! (OpenMetrics) text format, from a thread of their own so that a scrape
//! never delays a packet.
//!
//! Counters, each ending in `_total`: `cr_connections`,
//! `cr_handshakes_incomplete`,
//! `cr_tokens_presented`, `cr_addresses_validated`,
//! `cr_tokens_minted{kind="address"|"bdp"}`, `cr_resumes_refused{reason}`
//! (see [`cr_endpoint::Refusal`]), `cr_resumes_granted`, `cr_jumps`,
//! `cr_jumps_validated`, `cr_jumps_unused`, `cr_jumps_limited`,
//! `cr_jumps_retreated`, `cr_address_tokens_replayed`,
//! `cr_early_data{outcome}` (see [`cr_endpoint::EarlyData`]).
//!
//! With a Redis guard ([`MetricsEndpoint::serve_with_guard`]), the gauge
//! `cr_revocations_pending`: revocations of retreated saved sets Redis has
//! not taken yet ([`RedisGuard::pending_revocations`]). Anything but 0 for
//! longer than an outage of Redis needs looking into: until a revocation
//! lands, other servers may resume from its set.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::{self, JoinHandle};

use cr_endpoint::{EarlyData, MetricsSnapshot, Refusal, ServerMetrics};
use cr_guard_redis::RedisGuard;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use crate::error::AppError;

/// Reads the counters (and the guard's gauge) afresh at every scrape.
#[derive(Debug)]
struct Counters {
    metrics: Arc<ServerMetrics>,
    guard: Option<Arc<RedisGuard>>,
}

impl Collector for Counters {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        if let Some(guard) = &self.guard {
            let pending = i64::try_from(guard.pending_revocations()).unwrap_or(i64::MAX);
            let gauge = ConstGauge::new(pending);
            let metric = encoder.encode_descriptor(
                "cr_revocations_pending",
                "Revocations of retreated saved sets Redis has not taken yet",
                None,
                gauge.metric_type(),
            )?;
            gauge.encode(metric)?;
        }
        let s: MetricsSnapshot = self.metrics.snapshot();
        let single: [(&str, &str, u64); 11] = [
            ("cr_connections", "Connections accepted", s.connections),
            (
                "cr_handshakes_incomplete",
                "Connections that ended without completing their handshake",
                s.handshakes_incomplete,
            ),
            (
                "cr_tokens_presented",
                "Connections whose Initial carried a token",
                s.tokens_presented,
            ),
            (
                "cr_addresses_validated",
                "Connections whose token validated the client's address",
                s.addresses_validated,
            ),
            (
                "cr_resumes_granted",
                "Connections allowed to resume from a saved set (valid and unused)",
                s.resumes_granted,
            ),
            ("cr_jumps", "Careful Resume jumps made", s.jumps),
            (
                "cr_jumps_validated",
                "Careful Resume jumps the path validated",
                s.jumps_validated,
            ),
            (
                "cr_jumps_unused",
                "Careful Resume jumps that sent less than half of what they opened",
                s.jumps_unused,
            ),
            (
                "cr_jumps_limited",
                "Careful Resume jumps lowered to their share of the jump budget (clients resuming together)",
                s.jumps_limited,
            ),
            (
                "cr_jumps_retreated",
                "Careful Resume jumps that met congestion (Safe Retreat)",
                s.retreats,
            ),
            (
                "cr_address_tokens_replayed",
                "Tokens presented again from their address: not validating it a second time",
                s.address_tokens_replayed,
            ),
        ];
        for (name, help, value) in single {
            let counter = ConstCounter::new(value);
            let metric = encoder.encode_descriptor(name, help, None, counter.metric_type())?;
            counter.encode(metric)?;
        }

        let kind = ConstCounter::new(0u64).metric_type();
        let mut minted = encoder.encode_descriptor(
            "cr_tokens_minted",
            "Tokens sent with NEW_TOKEN, by kind",
            None,
            kind,
        )?;
        for (label, value) in [
            ("address", s.address_tokens_minted),
            ("bdp", s.bdp_tokens_minted),
        ] {
            ConstCounter::new(value).encode(minted.encode_family(&[("kind", label)])?)?;
        }

        let mut refused = encoder.encode_descriptor(
            "cr_resumes_refused",
            "Tokens with saved capacity that did not resume, by reason",
            None,
            kind,
        )?;
        for reason in Refusal::ALL {
            let counter = ConstCounter::new(s.refused(reason));
            counter.encode(refused.encode_family(&[("reason", reason.as_str())])?)?;
        }

        let mut early_data = encoder.encode_descriptor(
            "cr_early_data",
            "First flights with early data (0-RTT), by outcome: accepted, replayed, \
             guard_unavailable (both wait for the handshake), refused_by_tls (1-RTT)",
            None,
            kind,
        )?;
        for (outcome, value) in [
            (EarlyData::Accepted, s.early_data_accepted),
            (EarlyData::Replayed, s.early_data_replayed),
            (EarlyData::GuardUnavailable, s.early_data_unchecked),
            (EarlyData::RefusedByTls(0), s.early_data_refused_by_tls),
        ] {
            let counter = ConstCounter::new(value);
            counter.encode(early_data.encode_family(&[("outcome", outcome.as_str())])?)?;
        }
        Ok(())
    }
}

/// The counters in the OpenMetrics text format.
pub fn render(metrics: &Arc<ServerMetrics>) -> String {
    render_with_guard(metrics, None)
}

/// The counters, and the gauge of `guard` if there is one, in the
/// OpenMetrics text format.
pub fn render_with_guard(metrics: &Arc<ServerMetrics>, guard: Option<&Arc<RedisGuard>>) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Counters {
        metrics: Arc::clone(metrics),
        guard: guard.cloned(),
    }));
    let mut text = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
    text
}

/// An HTTP endpoint serving [`render`] at every path; dropping it stops it.
pub struct MetricsEndpoint {
    server: Arc<tiny_http::Server>,
    local: SocketAddr,
    thread: Option<JoinHandle<()>>,
}

impl MetricsEndpoint {
    /// Listens on `listen` and serves `metrics` from a new thread.
    pub fn serve(listen: SocketAddr, metrics: Arc<ServerMetrics>) -> Result<Self, AppError> {
        MetricsEndpoint::serve_with_guard(listen, metrics, None)
    }

    /// Listens on `listen` and serves `metrics`, and the gauge of the Redis
    /// `guard` the server claims in if it has one, from a new thread.
    pub fn serve_with_guard(
        listen: SocketAddr,
        metrics: Arc<ServerMetrics>,
        guard: Option<Arc<RedisGuard>>,
    ) -> Result<Self, AppError> {
        let server = tiny_http::Server::http(listen)
            .map_err(|e| AppError::Invalid(format!("metrics endpoint on {listen}: {e}")))?;
        let local = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| AppError::Invalid("metrics endpoint has no IP address".into()))?;
        let server = Arc::new(server);
        let serving = Arc::clone(&server);
        let content_type = tiny_http::Header::from_bytes(
            "Content-Type",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )
        .map_err(|()| AppError::Invalid("metrics content type".into()))?;
        let thread = thread::Builder::new()
            .name("cr-metrics".into())
            .spawn(move || {
                for request in serving.incoming_requests() {
                    let page = render_with_guard(&metrics, guard.as_ref());
                    let response =
                        tiny_http::Response::from_string(page).with_header(content_type.clone());
                    if let Err(e) = request.respond(response) {
                        log::debug!("metrics scrape not answered: {e}");
                    }
                }
            })
            .map_err(|e| AppError::io("starting the metrics thread", e))?;
        Ok(MetricsEndpoint {
            server,
            local,
            thread: Some(thread),
        })
    }

    /// The address the endpoint listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }
}

impl Drop for MetricsEndpoint {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cr_endpoint::ex_token::{
        AddressPrefixes, RemoteEndpoint, SavedSet, SetId, SiteId, TokenGuard,
    };
    use cr_guard_redis::testing::RedisServer;
    use cr_guard_redis::RedisGuardConfig;
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    fn set() -> SavedSet {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("after 1970");
        let expiry = UNIX_EPOCH + Duration::from_secs(now.as_secs() + 3600);
        SavedSet {
            id: SetId(1),
            endpoint: RemoteEndpoint::new(
                SiteId(0),
                [192, 0, 2, 1].into(),
                AddressPrefixes::SAME_NETWORK,
            ),
            measured_at: expiry - Duration::from_secs(3600),
            expiry,
        }
    }

    #[test]
    fn a_redis_guard_shows_its_revocations_waiting_for_redis() {
        let metrics = Arc::new(ServerMetrics::default());
        assert!(!render(&metrics).contains("cr_revocations_pending"));

        let mut redis = RedisServer::start();
        let config = RedisGuardConfig {
            claim_timeout: Duration::from_secs(2),
            ..Default::default()
        };
        let guard = Arc::new(RedisGuard::connect(&redis.url(), config).expect("guard"));
        let gauge = |guard: &Arc<RedisGuard>| {
            render_with_guard(&metrics, Some(guard))
                .lines()
                .find(|line| line.starts_with("cr_revocations_pending "))
                .map(str::to_owned)
        };
        assert_eq!(gauge(&guard).as_deref(), Some("cr_revocations_pending 0"));
        redis.stop();
        guard.revoke(&set(), SystemTime::now());
        assert_eq!(gauge(&guard).as_deref(), Some("cr_revocations_pending 1"));
    }
}
