//! Writes the seed corpus of every fuzz target into `fuzz/seeds/<target>/`, so that a short run
//! starts from meaningful inputs: tokens of every kind for the token targets, and event
//! sequences that walk the Careful Resume state machine through each of its endings for
//! `cr_events`. Run it again after a change of the token format or of the event encoding:
//!
//! ```sh
//! cd fuzz && cargo +nightly run --example write_seeds
//! ```

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant, UNIX_EPOCH};

use careful_resume::{Ack, CarefulResume, Config, Congestion, PacketSent, Phase, SavedState};
use ex_token::{
    lower_requested_capacity, ExTokenBuilder, ExtensionId, KeyRing, SavedPath, ServerConfig,
    SimRng, TokenKey, TokenServer,
};

const MSS: usize = 1200;
const IW: usize = 10 * MSS;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds");
    let tokens = tokens()?;
    for target in ["token_decode", "token_validate"] {
        write_all(&seeds.join(target), &tokens)?;
    }
    write_all(&seeds.join("cr_events"), &event_sequences())?;
    Ok(())
}

fn write_all(dir: &Path, seeds: &[(&str, Vec<u8>)]) -> std::io::Result<()> {
    if dir.exists() {
        fs::remove_dir_all(dir)?;
    }
    fs::create_dir_all(dir)?;
    for (name, bytes) in seeds {
        fs::write(dir.join(name), bytes)?;
    }
    println!("{}: {} seeds", dir.display(), seeds.len());
    Ok(())
}

/// Tokens of every kind. They are sealed with keys other than the one `token_validate` holds,
/// which asserts that nothing validates without its key; they still take it through decoding,
/// key selection and opening.
fn tokens() -> Result<Vec<(&'static str, Vec<u8>)>, Box<dyn std::error::Error>> {
    let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let hour = Duration::from_secs(3600);
    let mut server = TokenServer::new(
        KeyRing::new(TokenKey::from_bytes(1, &[0xa5; 32])?),
        SimRng::new(7),
        ServerConfig::default(),
    );
    let v4 = "192.0.2.1:4433".parse()?;
    let v6 = "[2001:db8::1]:4433".parse()?;
    let geo = SavedPath {
        capacity: 1_250_000,
        rtt: Duration::from_millis(600),
        extras: b"",
    };
    let with_extras = SavedPath {
        extras: b"pop=lhr;cc=cubic",
        ..geo
    };

    let set = server.new_saved_set(v4, now)?;
    let set_v6 = server.new_saved_set(v6, now)?;
    let expired = server.new_saved_set(v4, now - 2 * hour)?;
    let mut lowered = server.mint_bdp_token(v4, &geo, &set)?;
    lower_requested_capacity(&mut lowered, 300_000)?;
    let mut other_key = TokenServer::new(
        KeyRing::new(TokenKey::from_bytes(9, &[0x33; 32])?),
        SimRng::new(8),
        ServerConfig::default(),
    );
    let other_set = other_key.new_saved_set(v4, now)?;
    let mut grease = ExTokenBuilder::new(&[0x01; 40])?;
    grease
        .extension(ExtensionId::private_use(0).expect("in range"), b"private")?
        .grease(&mut SimRng::new(9))?;

    Ok(vec![
        ("address-v4", server.mint_address_token(v4, now, hour)?),
        ("address-v6", server.mint_address_token(v6, now, hour)?),
        ("bdp-v4", server.mint_bdp_token(v4, &geo, &set)?),
        ("bdp-v6", server.mint_bdp_token(v6, &geo, &set_v6)?),
        ("bdp-extras", server.mint_bdp_token(v4, &with_extras, &set)?),
        ("bdp-lowered", lowered),
        (
            "bdp-other-key-id",
            other_key.mint_bdp_token(v4, &geo, &other_set)?,
        ),
        ("bdp-expired", server.mint_bdp_token(v4, &geo, &expired)?),
        ("extensions-grease", grease.finish()?),
        ("empty", ExTokenBuilder::new(&[])?.finish()?),
    ])
}

/// Encodes events in `cr_events`' input format while applying them to a [`CarefulResume`], so
/// each seed is checked to reach the phase it is named for.
struct Sequence {
    bytes: Vec<u8>,
    cr: CarefulResume,
    now: Instant,
    next_pn: u64,
    flight: usize,
}

impl Sequence {
    /// The header: no jump limit, and the saved set.
    fn new(saved_cwnd: u64, saved_rtt: Duration) -> Self {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&(1u64 << 40).to_le_bytes());
        bytes.extend_from_slice(&saved_cwnd.to_le_bytes());
        bytes.extend_from_slice(&rtt_field(saved_rtt).to_le_bytes());
        let config = Config::new(IW, MSS)
            .expect("valid config")
            .with_max_jump(1 << 40);
        let saved = SavedState {
            cwnd: saved_cwnd as usize,
            rtt: saved_rtt,
        };
        Sequence {
            bytes,
            cr: CarefulResume::new(config, saved),
            now: Instant::now(),
            next_pn: 0,
            flight: 0,
        }
    }

    fn op(&mut self, op: u8, arg: u64, rtt: Duration) {
        self.bytes.push(op);
        self.bytes.extend_from_slice(&arg.to_le_bytes());
        self.bytes.extend_from_slice(&rtt_field(rtt).to_le_bytes());
    }

    /// `n` full-sized packets, cwnd-limited, with the window at `cwnd`.
    fn send(&mut self, n: usize, cwnd: usize) -> &mut Self {
        for _ in 0..n {
            self.op(
                0x80,
                ((cwnd as u64) << 32) | (MSS as u64 - 1),
                Duration::ZERO,
            );
            self.flight += MSS;
            self.cr.on_packet_sent(&PacketSent {
                pn: self.next_pn,
                bytes: MSS,
                bytes_in_flight: self.flight,
                cwnd,
                cwnd_limited: true,
                now: self.now,
            });
            self.next_pn += 1;
        }
        self
    }

    /// An ACK of everything sent so far (or of the handshake when nothing was), at `rtt`. The
    /// harness derives the window from the same argument, so it reports `acked << 24`'s top bits.
    fn ack_all(&mut self, rtt: Duration) -> &mut Self {
        let acked = self.flight.max(3 * MSS) as u64;
        let largest = self.next_pn.checked_sub(1);
        // Largest acked is `arg % next_pn`: choose the argument so that it is the last packet.
        let arg = match largest {
            Some(last) => {
                let modulus = self.next_pn;
                acked - acked % modulus + last
            }
            None => acked,
        };
        self.op(0x01, arg, rtt);
        self.flight = 0;
        self.cr.on_ack(&Ack {
            largest_acked: largest,
            acked_bytes: (arg % (1 << 40)) as usize,
            bytes_in_flight: 0,
            cwnd: (arg >> 24) as usize,
            min_rtt: rtt,
            smoothed_rtt: rtt,
            now: self.now,
        });
        self
    }

    fn loss(&mut self) -> &mut Self {
        self.op(0x02, 0, Duration::ZERO);
        self.cr.on_congestion(Congestion::Loss, self.now);
        self
    }

    fn wait(&mut self, by: Duration) -> &mut Self {
        self.op(0x07, by.as_micros() as u64, Duration::ZERO);
        self.now += by;
        self
    }

    fn expect(&mut self, phase: Phase) -> Vec<u8> {
        assert_eq!(self.cr.phase(), phase, "seed does not reach {phase:?}");
        std::mem::take(&mut self.bytes)
    }
}

/// The harness reads an RTT as `field % 3_700_000_000 + 1` microseconds.
fn rtt_field(rtt: Duration) -> u64 {
    (rtt.as_micros() as u64).saturating_sub(1)
}

fn event_sequences() -> Vec<(&'static str, Vec<u8>)> {
    let rtt = Duration::from_millis(600);
    let saved = 200 * MSS as u64;
    let jumped = |s: &mut Sequence| {
        s.ack_all(rtt).wait(rtt).send(10, IW);
    };

    let mut unvalidated = Sequence::new(saved, rtt);
    jumped(&mut unvalidated);
    let mut validated = Sequence::new(saved, rtt);
    jumped(&mut validated);
    validated.send(90, IW).wait(rtt).ack_all(rtt);
    let mut retreat = Sequence::new(saved, rtt);
    jumped(&mut retreat);
    retreat.send(90, IW).wait(rtt).loss();
    let mut too_fast = Sequence::new(saved, rtt);
    too_fast.ack_all(rtt / 4);
    let mut loss_early = Sequence::new(saved, rtt);
    loss_early.loss();

    vec![
        ("unvalidated", unvalidated.expect(Phase::Unvalidated)),
        ("validated", validated.expect(Phase::Normal)),
        ("safe-retreat", retreat.expect(Phase::SafeRetreat)),
        ("rtt-too-short", too_fast.expect(Phase::Normal)),
        ("loss-in-reconnaissance", loss_early.expect(Phase::Normal)),
    ]
}
