//! Rates and the capacities they make: bytes per second from bytes over a
//! time, and the bytes a rate carries in a time (a rate times an RTT is a
//! bandwidth-delay product). Both saturate rather than overflow.

use std::time::Duration;

/// `bytes` spread over `over`, in bytes per second (`over` of zero counts
/// as one nanosecond).
pub(crate) fn bytes_per_second(bytes: usize, over: Duration) -> u64 {
    let rate = bytes as u128 * 1_000_000_000 / over.as_nanos().max(1);
    u64::try_from(rate).unwrap_or(u64::MAX)
}

/// The bytes `rate` (bytes per second) carries in `time`.
pub(crate) fn bytes_in(rate: u64, time: Duration) -> usize {
    let bytes = u128::from(rate).saturating_mul(time.as_nanos()) / 1_000_000_000;
    usize::try_from(bytes).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_over_a_time_gives_back_the_bytes() {
        let rtt = Duration::from_millis(800);
        assert_eq!(bytes_per_second(1_000_000, rtt), 1_250_000);
        assert_eq!(bytes_in(1_250_000, rtt), 1_000_000);
        assert_eq!(bytes_per_second(1, Duration::ZERO), 1_000_000_000);
        assert_eq!(
            bytes_in(u64::MAX, Duration::from_secs(u64::MAX)),
            usize::MAX
        );
    }
}
