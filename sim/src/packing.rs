//! How well a sender packs its data into packets: the sizes of the
//! datagrams it sent, and the report comparing the packets that carried
//! stream data with the fewest full-sized ones that could have.
//!
//! Short packets cost a sender a packet's processing each, the path a
//! header each, and the receiver an ACK for every two; a download that
//! fills whatever room its congestion window has left with a packet of that
//! size sends several times the packets it needs.

use serde::Serialize;

use crate::link::MAX_DATAGRAM;

/// Stream bytes a full-sized 1-RTT datagram carries in the simulation:
/// [`MAX_DATAGRAM`] less the short header (1 byte of flags, a 16-byte
/// connection ID, a 2-byte packet number), the AEAD tag (16) and a STREAM
/// frame's header (type, stream ID and length in 1, 1 and 2 bytes, the
/// offset in 4, enough for offsets up to 1 GiB).
pub const FULL_STREAM_PAYLOAD: u64 = MAX_DATAGRAM as u64 - (1 + 16 + 2) - 16 - (1 + 1 + 4 + 2);

/// The sizes of the datagrams one endpoint sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DatagramSizes {
    /// Datagrams sent.
    pub count: u64,
    /// Their bytes (UDP payload).
    pub bytes: u64,
    /// Those shorter than half of [`MAX_DATAGRAM`].
    pub below_half: u64,
    /// Those shorter than 90 % of [`MAX_DATAGRAM`].
    pub below_90pct: u64,
}

impl DatagramSizes {
    /// Counts a datagram of `len` bytes.
    pub fn add(&mut self, len: usize) {
        self.count += 1;
        self.bytes += len as u64;
        if len * 2 < MAX_DATAGRAM {
            self.below_half += 1;
        }
        if len * 10 < MAX_DATAGRAM * 9 {
            self.below_90pct += 1;
        }
    }
}

/// How well the server packed one connection's data.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PackingReport {
    /// Packets that carried STREAM frames.
    pub stream_packets: u64,
    /// The fewest full-sized packets that carry the stream bytes sent: the
    /// body and what was retransmitted, over [`FULL_STREAM_PAYLOAD`]
    /// (HTTP/3 framing is left out, so this errs low).
    pub stream_packets_needed: u64,
    /// `stream_packets / stream_packets_needed` (1: every packet was full).
    pub stream_packet_ratio: f64,
    /// Packets that carried only control frames (ACK, CRYPTO, flow control,
    /// NEW_TOKEN, PING, ...).
    pub control_packets: u64,
    /// Datagrams the server sent.
    pub datagrams: u64,
    /// Share of them shorter than half the maximum datagram size.
    pub below_half_share: f64,
    /// Share of them shorter than 90 % of the maximum datagram size.
    pub below_90pct_share: f64,
    /// Bytes the server put on the wire (UDP payload) per body byte.
    pub wire_bytes_per_body_byte: f64,
}

impl PackingReport {
    /// The report of a server that sent `sizes`, with quiche's `stats`, for
    /// a body of `body` bytes.
    pub fn of(sizes: &DatagramSizes, stats: &quiche::Stats, body: u64) -> PackingReport {
        let stream_packets = stats.sent_stream_packets as u64;
        let needed = (body + stats.stream_retrans_bytes).div_ceil(FULL_STREAM_PAYLOAD);
        let share = |part: u64| ratio(part, sizes.count);
        PackingReport {
            stream_packets,
            stream_packets_needed: needed,
            stream_packet_ratio: ratio(stream_packets, needed),
            control_packets: (stats.sent as u64).saturating_sub(stream_packets),
            datagrams: sizes.count,
            below_half_share: share(sizes.below_half),
            below_90pct_share: share(sizes.below_90pct),
            wire_bytes_per_body_byte: ratio(sizes.bytes, body),
        }
    }
}

/// `part / whole` to three decimals (0 when `whole` is 0).
fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    (part as f64 / whole as f64 * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_stream_packet_fits_the_datagram() {
        assert_eq!(FULL_STREAM_PAYLOAD, 1307);
    }

    #[test]
    fn sizes_count_short_datagrams_against_the_maximum() {
        let mut sizes = DatagramSizes::default();
        for len in [MAX_DATAGRAM, 1215, 1214, 675, 674, 40] {
            sizes.add(len);
        }
        assert_eq!(
            sizes,
            DatagramSizes {
                count: 6,
                bytes: (MAX_DATAGRAM + 1215 + 1214 + 675 + 674 + 40) as u64,
                below_half: 2,
                below_90pct: 4,
            }
        );
    }
}
