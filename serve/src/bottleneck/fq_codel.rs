//! fq_codel (RFC 8290): a queue per flow, each under its own CoDel, served
//! in deficit round robin, with one byte limit shared by all.
//!
//! A flow that becomes active joins the new flows, which are served before
//! the old ones, with a quantum of credit; a flow that spent its credit
//! goes to the end of the old flows with a quantum more. When the shared
//! limit is reached the flow holding the most bytes loses datagrams from
//! its head. Flows are told apart by the caller's flow number (in cr-sim a
//! connection's, in cr-relay a client's address): a hash without
//! collisions, where Linux hashes the 5-tuple into 1024 buckets.

use std::collections::{BTreeMap, VecDeque};

use super::{Codel, Time};

/// A datagram waiting in its flow's queue.
#[derive(Debug)]
struct Queued<T> {
    at: Time,
    bytes: u64,
    payload: T,
}

/// One flow's queue and its scheduler state.
#[derive(Debug)]
struct FlowQueue<T> {
    packets: VecDeque<Queued<T>>,
    bytes: u64,
    /// Bytes it may still send in this round (DRR).
    deficit: i64,
    codel: Codel,
    /// Whether it is in the new or the old flows.
    listed: bool,
}

impl<T> FlowQueue<T> {
    fn pop(&mut self) -> Option<Queued<T>> {
        let head = self.packets.pop_front()?;
        self.bytes -= head.bytes;
        Some(head)
    }

    /// The head that CoDel lets through at `now`, the ones it drops going
    /// to `dropped`.
    fn codel_dequeue(&mut self, now: Time, dropped: &mut Vec<T>) -> Option<Queued<T>> {
        while let Some(head) = self.pop() {
            if !self.codel.on_dequeue(now.saturating_sub(head.at), now) {
                return Some(head);
            }
            dropped.push(head.payload);
        }
        self.codel.on_empty();
        None
    }
}

impl<T> Default for FlowQueue<T> {
    fn default() -> Self {
        FlowQueue {
            packets: VecDeque::new(),
            bytes: 0,
            deficit: 0,
            codel: Codel::default(),
            listed: false,
        }
    }
}

/// What one [`FqCodel::dequeue`] did.
#[derive(Debug, PartialEq, Eq)]
pub struct Dequeued<T> {
    /// The datagram to serialise now and its size, if any is left.
    pub sent: Option<(T, u64)>,
    /// Datagrams CoDel dropped at their flows' heads on the way.
    pub dropped: Vec<T>,
}

/// An fq_codel queue of datagrams carrying a `T` each.
#[derive(Debug)]
pub struct FqCodel<T> {
    limit: u64,
    quantum: i64,
    bytes: u64,
    /// Keyed by flow number; ordered, so that ties break the same way in
    /// every run.
    flows: BTreeMap<u64, FlowQueue<T>>,
    new_flows: VecDeque<u64>,
    old_flows: VecDeque<u64>,
}

impl<T> FqCodel<T> {
    /// An empty queue holding at most `limit` bytes, giving each flow
    /// `quantum` bytes a round (RFC 8290: one MTU).
    pub fn new(limit: u64, quantum: u64) -> FqCodel<T> {
        FqCodel {
            limit,
            quantum: i64::try_from(quantum.max(1)).unwrap_or(i64::MAX),
            bytes: 0,
            flows: BTreeMap::new(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
        }
    }

    /// Changes the shared limit; what is queued stays, and the next
    /// datagram queued enforces it.
    pub fn set_limit(&mut self, limit: u64) {
        self.limit = limit;
    }

    /// Bytes queued.
    pub fn backlog(&self) -> u64 {
        self.bytes
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// Queues a datagram of `bytes` of `flow` at `now`; returns what the
    /// shared limit dropped to make room (the fattest flow's head, which
    /// may be this datagram).
    pub fn enqueue(&mut self, now: Time, flow: u64, bytes: u64, payload: T) -> Vec<T> {
        let queue = self.flows.entry(flow).or_default();
        queue.packets.push_back(Queued {
            at: now,
            bytes,
            payload,
        });
        queue.bytes += bytes;
        self.bytes += bytes;
        if !queue.listed {
            queue.listed = true;
            queue.deficit = self.quantum;
            self.new_flows.push_back(flow);
        }
        let mut dropped = Vec::new();
        while self.bytes > self.limit {
            let Some(fattest) = self.fattest() else {
                break;
            };
            if let Some(head) = self.pop_head(fattest) {
                dropped.push(head.payload);
            }
        }
        dropped
    }

    /// Picks the datagram to serialise at `now` (RFC 8290, section 4.2).
    pub fn dequeue(&mut self, now: Time) -> Dequeued<T> {
        let mut dropped = Vec::new();
        loop {
            let (id, new) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&id), _) => (id, true),
                (None, Some(&id)) => (id, false),
                (None, None) => {
                    return Dequeued {
                        sent: None,
                        dropped,
                    }
                }
            };
            let list = if new {
                &mut self.new_flows
            } else {
                &mut self.old_flows
            };
            let flow = self.flows.entry(id).or_default();
            if flow.deficit <= 0 {
                flow.deficit += self.quantum;
                list.pop_front();
                self.old_flows.push_back(id);
                continue;
            }
            let before = flow.bytes;
            let head = flow.codel_dequeue(now, &mut dropped);
            self.bytes -= before - flow.bytes;
            let Some(head) = head else {
                // An empty new flow goes behind the old ones, so that it
                // cannot come back as new at once; an empty old flow leaves
                // the lists.
                list.pop_front();
                if new && !self.old_flows.is_empty() {
                    self.old_flows.push_back(id);
                } else {
                    flow.listed = false;
                }
                continue;
            };
            // It stays at the front of its list until its credit runs out.
            flow.deficit -= i64::try_from(head.bytes).unwrap_or(i64::MAX);
            return Dequeued {
                sent: Some((head.payload, head.bytes)),
                dropped,
            };
        }
    }

    /// Takes the head of `id`'s queue.
    fn pop_head(&mut self, id: u64) -> Option<Queued<T>> {
        let head = self.flows.get_mut(&id)?.pop()?;
        self.bytes -= head.bytes;
        Some(head)
    }

    /// The flow holding the most bytes (the lowest number among equals).
    fn fattest(&self) -> Option<u64> {
        self.flows
            .iter()
            .filter(|(_, flow)| flow.bytes > 0)
            .max_by(|a, b| a.1.bytes.cmp(&b.1.bytes).then(b.0.cmp(a.0)))
            .map(|(&id, _)| id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn two_backlogged_flows_take_turns() {
        let mut q = FqCodel::new(1_000_000, 1000);
        for i in 0..50 {
            q.enqueue(Time::ZERO, 1, 1000, ('a', i));
            q.enqueue(Time::ZERO, 2, 1000, ('b', i));
        }
        let order: Vec<char> = (0..20)
            .map(|_| q.dequeue(Time::ZERO).sent.expect("queued").0 .0)
            .collect();
        assert_eq!(order.iter().filter(|&&c| c == 'a').count(), 10);
        assert!(order.windows(2).all(|w| w[0] != w[1]), "{order:?}");
    }

    #[test]
    fn a_flow_of_small_datagrams_gets_the_same_bytes() {
        let mut q = FqCodel::new(1_000_000, 1000);
        for i in 0..100 {
            q.enqueue(Time::ZERO, 1, 1000, (1, i));
            q.enqueue(Time::ZERO, 2, 250, (2, i));
        }
        let mut bytes = [0u64; 3];
        for _ in 0..50 {
            let (payload, size) = q.dequeue(Time::ZERO).sent.expect("queued");
            bytes[payload.0] += size;
        }
        // Ten rounds: 1000 bytes a round each.
        assert_eq!((bytes[1], bytes[2]), (10_000, 10_000));
    }

    #[test]
    fn a_sparse_flow_goes_first() {
        let mut q = FqCodel::new(1_000_000, 1000);
        for i in 0..10 {
            q.enqueue(Time::ZERO, 1, 1000, i);
        }
        for _ in 0..3 {
            q.dequeue(Time::ZERO);
        }
        q.enqueue(Time::ZERO, 2, 100, 99);
        assert_eq!(q.dequeue(Time::ZERO).sent, Some((99, 100)));
    }

    #[test]
    fn the_shared_limit_drops_the_fattest_flows_head() {
        let mut q = FqCodel::new(5000, 1000);
        for i in 0..4 {
            assert!(q.enqueue(Time::ZERO, 1, 1000, i).is_empty());
        }
        assert!(q.enqueue(Time::ZERO, 2, 1000, 10).is_empty());
        assert_eq!(q.enqueue(Time::ZERO, 2, 1000, 11), vec![0]);
        assert_eq!(q.backlog(), 5000);
    }

    #[test]
    fn codel_drops_only_the_flow_that_keeps_a_standing_queue() {
        // A bulk flow with 50 ms of standing queue and a sparse flow whose
        // datagrams leave at once, dequeued one a millisecond.
        let mut q = FqCodel::new(10_000_000, 1000);
        let ms = Duration::from_millis;
        let mut dropped = Vec::new();
        for t in 0..400u64 {
            q.enqueue(ms(t), 1, 1000, (1, t));
            if t % 10 == 0 {
                q.enqueue(ms(t), 2, 100, (2, t));
            }
            if t >= 50 {
                dropped.extend(q.dequeue(ms(t)).dropped);
            }
        }
        assert!(!dropped.is_empty());
        assert!(dropped.iter().all(|&(flow, _)| flow == 1), "{dropped:?}");
    }
}
