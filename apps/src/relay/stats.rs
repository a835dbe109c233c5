//! What the relay counts besides its links: the datagrams the kernel dropped
//! on its sockets before the relay could read them, and its flows. The
//! counters are shared with the threads that update them; [`RelayStats`] is
//! what the relay reports.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use super::link::LinkStats;
use crate::net::DropCountingReceiver;

/// What the relay did, per direction and for its flows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RelayStats {
    /// Client to server: what the emulated link did.
    pub up: LinkStats,
    /// Server to client: what the emulated link did.
    pub down: LinkStats,
    /// Client-to-server datagrams the kernel dropped on the relay's
    /// client-facing socket because its receive buffer was full, before the
    /// link saw them; `None` where the kernel does not count.
    pub kernel_drops_up: Option<u64>,
    /// Server-to-client datagrams the kernel dropped on the relay's upstream
    /// sockets; `None` where the kernel does not count.
    pub kernel_drops_down: Option<u64>,
    /// Flows whose thread is still running.
    pub flows_open: usize,
    /// Flows closed after carrying nothing for the idle timeout.
    pub flows_expired: u64,
    /// Datagrams from new clients dropped because the most flows were open.
    pub flow_limit_drops: u64,
}

impl fmt::Display for RelayStats {
    /// One line: `up <link>, <n> kernel drops; down <link>, <n> kernel
    /// drops; flows <open> open, <expired> expired` (and the flow-limit
    /// drops when there were any).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, link, kernel) in [
            ("up", &self.up, self.kernel_drops_up),
            ("down", &self.down, self.kernel_drops_down),
        ] {
            write!(
                f,
                "{name} {} forwarded, {} queue drops, {} policed, {} random drops, \
                 {} send errors, ",
                link.forwarded, link.queue_drops, link.policed, link.random_drops, link.send_errors
            )?;
            match kernel {
                Some(drops) => write!(f, "{drops} kernel drops; ")?,
                None => write!(f, "unknown kernel drops; ")?,
            }
        }
        write!(
            f,
            "flows {} open, {} expired",
            self.flows_open, self.flows_expired
        )?;
        if self.flow_limit_drops > 0 {
            write!(
                f,
                ", {} datagrams over the flow limit",
                self.flow_limit_drops
            )?;
        }
        Ok(())
    }
}

/// The kernel's drops on the sockets receiving one direction.
#[derive(Debug, Default)]
pub(super) struct KernelDrops {
    dropped: AtomicU64,
    /// Set once a socket of this direction could not count.
    unknown: AtomicBool,
}

impl KernelDrops {
    /// Takes in a socket receiving this direction.
    pub(super) fn watch(&self, receiver: &DropCountingReceiver) {
        if !receiver.counts_drops() {
            self.unknown.store(true, Ordering::Relaxed);
        }
    }

    pub(super) fn add(&self, dropped: u64) {
        if dropped > 0 {
            self.dropped.fetch_add(dropped, Ordering::Relaxed);
        }
    }

    fn get(&self) -> Option<u64> {
        (!self.unknown.load(Ordering::Relaxed)).then(|| self.dropped.load(Ordering::Relaxed))
    }
}

/// The relay's counters, shared with its threads.
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) kernel_drops_up: KernelDrops,
    pub(super) kernel_drops_down: KernelDrops,
    flows_open: AtomicUsize,
    flows_expired: AtomicU64,
    flow_limit_drops: AtomicU64,
}

impl Counters {
    /// Counts a flow's thread as running until the guard is dropped (when
    /// the thread ends, or with the thread's body if it never starts).
    pub(super) fn flow_running(self: &Arc<Self>) -> FlowRunning {
        self.flows_open.fetch_add(1, Ordering::Relaxed);
        FlowRunning(Arc::clone(self))
    }

    pub(super) fn flow_expired(&self) {
        self.flows_expired.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn flow_limit_drop(&self) {
        self.flow_limit_drops.fetch_add(1, Ordering::Relaxed);
    }

    /// The stats, with the links' own.
    pub(super) fn snapshot(&self, up: LinkStats, down: LinkStats) -> RelayStats {
        RelayStats {
            up,
            down,
            kernel_drops_up: self.kernel_drops_up.get(),
            kernel_drops_down: self.kernel_drops_down.get(),
            flows_open: self.flows_open.load(Ordering::Relaxed),
            flows_expired: self.flows_expired.load(Ordering::Relaxed),
            flow_limit_drops: self.flow_limit_drops.load(Ordering::Relaxed),
        }
    }
}

/// A running flow thread, counted in [`RelayStats::flows_open`].
pub(super) struct FlowRunning(Arc<Counters>);

impl Drop for FlowRunning {
    fn drop(&mut self) {
        self.0.flows_open.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_tells_unknown_kernel_drops_from_none() {
        let stats = RelayStats {
            up: LinkStats {
                forwarded: 10,
                ..LinkStats::default()
            },
            kernel_drops_up: Some(0),
            kernel_drops_down: None,
            flows_open: 1,
            ..RelayStats::default()
        };
        assert_eq!(
            stats.to_string(),
            "up 10 forwarded, 0 queue drops, 0 policed, 0 random drops, 0 send errors, 0 kernel drops; \
             down 0 forwarded, 0 queue drops, 0 policed, 0 random drops, 0 send errors, unknown kernel drops; \
             flows 1 open, 0 expired"
        );
    }

    #[test]
    fn a_flow_is_open_while_its_guard_lives() {
        let counters = Arc::new(Counters::default());
        let running = counters.flow_running();
        assert_eq!(
            counters
                .snapshot(LinkStats::default(), LinkStats::default())
                .flows_open,
            1
        );
        drop(running);
        assert_eq!(
            counters
                .snapshot(LinkStats::default(), LinkStats::default())
                .flows_open,
            0
        );
    }
}
