//! Builders shared by the integration tests: one MSS of 1200 bytes, IW of
//! ten datagrams, a 100 ms path remembered with a 200-datagram window.

#![allow(dead_code)]

use std::time::{Duration, Instant};

use careful_resume::{Ack, CarefulResume, Config, PacketSent, Phase, SavedState, Trigger};

pub const MSS: usize = 1200;
pub const IW: usize = 10 * MSS;
pub const RTT: Duration = Duration::from_millis(100);

pub fn config() -> Config {
    Config::new(IW, MSS).unwrap()
}

pub fn saved(packets: usize) -> SavedState {
    SavedState {
        cwnd: packets * MSS,
        rtt: RTT,
    }
}

/// `packets` datagrams.
pub fn pkts(packets: usize) -> usize {
    packets * MSS
}

/// A fixed origin for virtual time.
pub struct Clock {
    base: Instant,
}

impl Clock {
    pub fn new() -> Self {
        Clock {
            base: Instant::now(),
        }
    }

    pub fn at(&self, millis: u64) -> Instant {
        self.base + Duration::from_millis(millis)
    }
}

pub fn sent(pn: u64, flight: usize, cwnd_limited: bool, now: Instant) -> PacketSent {
    PacketSent {
        pn,
        bytes: MSS,
        bytes_in_flight: flight,
        cwnd: IW,
        cwnd_limited,
        now,
    }
}

pub fn ack(largest: Option<u64>, acked: usize, flight: usize, rtt: Duration, now: Instant) -> Ack {
    Ack {
        largest_acked: largest,
        acked_bytes: acked,
        bytes_in_flight: flight,
        cwnd: IW,
        min_rtt: rtt,
        smoothed_rtt: rtt,
        now,
    }
}

/// The handshake flight acknowledged at t = 100 ms with an RTT of `RTT`.
pub fn handshake_acked(cr: &mut CarefulResume, clock: &Clock) {
    assert_eq!(cr.on_ack(&ack(None, pkts(3), 0, RTT, clock.at(100))), None);
}

/// Reconnaissance with the first ten packets (pn 0..=9) filling IW at
/// t = 101 ms: the tenth, cwnd-limited, makes the sender jump.
pub fn jumped(saved_packets: usize, clock: &Clock) -> CarefulResume {
    jumped_with(config(), saved_packets, clock)
}

/// [`jumped`] with another configuration.
pub fn jumped_with(config: Config, saved_packets: usize, clock: &Clock) -> CarefulResume {
    jump(CarefulResume::new(config, saved(saved_packets)), clock)
}

/// Takes `cr`, fresh in Reconnaissance, through the handshake and the ten
/// packets of [`jumped`] into Unvalidated.
pub fn jump(mut cr: CarefulResume, clock: &Clock) -> CarefulResume {
    handshake_acked(&mut cr, clock);
    for pn in 0..9 {
        assert_eq!(
            cr.on_packet_sent(&sent(pn, pkts(pn as usize + 1), false, clock.at(101))),
            None
        );
    }
    let jump = cr.on_packet_sent(&sent(9, pkts(10), true, clock.at(101)));
    assert_eq!(jump.map(|t| t.to), Some(Phase::Unvalidated));
    cr
}

/// Sends `pns` while unvalidated, flight growing from `flight` by one MSS each;
/// no transition expected.
pub fn send_quietly(
    cr: &mut CarefulResume,
    pns: std::ops::RangeInclusive<u64>,
    mut flight: usize,
    now: Instant,
) {
    for pn in pns {
        flight += MSS;
        assert_eq!(
            cr.on_packet_sent(&sent(pn, flight, true, now)),
            None,
            "pn {pn}"
        );
    }
}

/// The jump of 100 datagrams (pn 10 to 99, 200 saved) validated at 300 ms,
/// after Validating's slow start sent pn 100 to 199: ssthresh is the saved
/// capacity, and the round after the validation is the packets after 199.
pub fn validated(cr: &mut CarefulResume, clock: &Clock) {
    send_quietly(cr, 10..=98, pkts(10), clock.at(110));
    let t = cr.on_packet_sent(&sent(99, pkts(100), true, clock.at(110)));
    assert_eq!(t.map(|t| t.to), Some(Phase::Validating));
    assert_eq!(
        cr.on_ack(&ack(Some(10), pkts(11), pkts(89), RTT, clock.at(210))),
        None
    );
    for pn in 100..=199 {
        assert_eq!(
            cr.on_packet_sent(&sent(pn, pkts(100), true, clock.at(220))),
            None
        );
    }
    let t = cr
        .on_ack(&ack(Some(99), pkts(89), pkts(100), RTT, clock.at(300)))
        .expect("validated");
    assert_eq!(
        (t.to, t.trigger, t.ssthresh),
        (
            Phase::Normal,
            Trigger::LastUnvalidatedPacketAcknowledged,
            Some(pkts(200))
        )
    );
}
