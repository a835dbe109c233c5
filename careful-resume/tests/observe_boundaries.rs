//! The observing policy at the exact values where its rules change their
//! answer: the smallest capacity worth saving, a measurement equal to the
//! saved set a connection started from, and which sender states end a burst.
//! Found by mutation testing (`make mutants`).

use std::time::{Duration, Instant};

use careful_resume::{CapacitySample, Observation, Observer, ObserverConfig};

const MSS: usize = 1200;
const IW: usize = 10 * MSS;
const MS: Duration = Duration::from_millis(1);
/// The min RTT of every sample: 100 ms, so a rate of R B/s measures R / 10 bytes.
const RTT: Duration = Duration::from_millis(100);

struct Feed {
    observer: Observer,
    base: Instant,
}

impl Feed {
    fn new(observer: Observer) -> Self {
        Feed {
            observer,
            base: Instant::now(),
        }
    }

    fn at(&self, ms: u64) -> Instant {
        self.base + MS * ms as u32
    }

    /// A sample measuring `capacity` bytes per 100 ms RTT.
    fn measure(&mut self, ms: u64, capacity: usize) -> Option<Observation> {
        self.measure_rtt(ms, capacity, RTT)
    }

    /// A sample of a delivery rate of `capacity` bytes per 100 ms, with an
    /// RTT sample of `rtt`.
    fn measure_rtt(&mut self, ms: u64, capacity: usize, rtt: Duration) -> Option<Observation> {
        self.observer.on_sample(&CapacitySample {
            delivery_rate: capacity as u64 * 10,
            round_delivery_rate: capacity as u64 * 10,
            rtt,
            acked_bytes: 0,
            now: self.at(ms),
        })
    }

    fn sender(&mut self, ms: u64, app_limited: bool, in_flight: usize) -> Option<Observation> {
        self.observer
            .on_sender_state(app_limited, in_flight, self.at(ms))
    }
}

fn observation(cwnd: usize, at: Instant, settled: bool, handed_on: bool) -> Option<Observation> {
    Some(Observation {
        saved_cwnd: cwnd,
        saved_rtt: RTT,
        at,
        settled,
        handed_on,
    })
}

#[test]
fn four_initial_windows_is_the_smallest_capacity_saved() {
    let mut feed = Feed::new(Observer::new(ObserverConfig::new(IW)));
    assert_eq!(feed.measure(0, 4 * IW - 1), None);
    assert_eq!(
        feed.measure(1, 4 * IW),
        observation(4 * IW, feed.at(1), false, false)
    );
}

/// A connection that measured exactly the saved set it started from saves
/// its own measurement: a new set, not the old one handed on.
#[test]
fn a_measurement_equal_to_the_floor_is_not_a_set_handed_on() {
    let floor = 8 * IW;
    let mut feed = Feed::new(Observer::with_floor(ObserverConfig::new(IW), floor));
    assert_eq!(
        feed.measure(0, floor),
        observation(floor, feed.at(0), true, false)
    );
}

/// A grant makes the floor the connection's, but what it already emitted
/// is not withdrawn for an equal set: nothing new goes out.
#[test]
fn a_grant_after_an_emission_equal_to_the_floor_emits_nothing_new() {
    let floor = 8 * IW;
    let mut observer = Observer::with_floor(ObserverConfig::new(IW), floor);
    observer.await_claim();
    let mut feed = Feed::new(observer);
    assert_eq!(
        feed.measure(0, floor),
        observation(floor, feed.at(0), false, false)
    );
    feed.observer.on_claim(true);
    assert_eq!(feed.measure(1, floor), None);
    assert_eq!(
        feed.observer.last(),
        observation(floor, feed.at(0), false, false)
    );
}

/// Congestion withdraws a set handed on only when it is more than what the
/// connection measured; one equal to the measurement stands.
#[test]
fn congestion_keeps_an_emission_equal_to_the_measurement() {
    let floor = 8 * IW;
    let mut feed = Feed::new(Observer::with_floor(ObserverConfig::new(IW), floor));
    feed.measure(0, floor).unwrap();
    feed.observer.on_congestion();
    assert_eq!(feed.measure(1, floor), None);
}

/// Without a floor, congestion changes nothing of what was emitted, even
/// when a later, lower min RTT makes the measurement smaller.
#[test]
fn congestion_without_a_floor_withdraws_nothing() {
    let mut feed = Feed::new(Observer::new(ObserverConfig::new(IW)));
    assert_eq!(
        feed.measure(0, 8 * IW),
        observation(8 * IW, feed.at(0), false, false)
    );
    // Half the RTT: the same rate now measures 4 IW.
    assert_eq!(feed.measure_rtt(1, 8 * IW, RTT / 2), None);
    feed.observer.on_congestion();
    assert_eq!(feed.measure_rtt(2, 8 * IW, RTT / 2), None);
    assert_eq!(feed.observer.last().map(|o| o.saved_cwnd), Some(8 * IW));
}

/// A burst ends when the sender becomes application-limited (with data
/// still in flight) or when, application-limited, everything is
/// acknowledged; a sender that is not application-limited is mid-burst,
/// whatever is in flight.
#[test]
fn which_sender_states_end_a_burst() {
    let mut feed = Feed::new(Observer::new(ObserverConfig::new(IW)));
    let first = feed.measure(0, 8 * IW).unwrap();
    assert!(!first.settled);
    // Not application-limited: mid-burst, with or without a flight.
    assert_eq!(feed.sender(1, false, 5 * MSS), None);
    assert_eq!(feed.sender(2, false, 0), None);
    // It ran out of data with 5 datagrams in flight: the burst ends, and its
    // estimate goes out settled.
    assert_eq!(
        feed.sender(3, true, 5 * MSS),
        observation(8 * IW, feed.at(3), true, false)
    );
    // Still application-limited with a flight: nothing new.
    assert_eq!(feed.sender(4, true, 2 * MSS), None);
    // A tenth more measured: not a quarter, nothing emitted yet...
    assert_eq!(feed.measure(5, 8 * IW + 8 * MSS), None);
    // ...until, still application-limited, the flight drains.
    assert_eq!(
        feed.sender(6, true, 0),
        observation(8 * IW + 8 * MSS, feed.at(6), true, false)
    );
}
