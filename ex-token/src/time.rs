//! Wall-clock conversions. The crate never reads the clock itself: callers
//! pass the current time in, so simulations stay deterministic.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Latest expiry a token carries (early 2106), representable as a
/// `SystemTime` on every platform.
const MAX_UNIX_SECS: u64 = u32::MAX as u64;

/// Whole seconds since the unix epoch; times before it count as 0.
pub(crate) fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// Whole milliseconds since the unix epoch; times before it count as 0,
/// and times after [`MAX_UNIX_SECS`] as that.
pub(crate) fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |since| {
        u64::try_from(since.as_millis())
            .unwrap_or(u64::MAX)
            .min(MAX_UNIX_SECS * 1000)
    })
}

/// The instant `ms` milliseconds after the unix epoch, clamped to
/// [`MAX_UNIX_SECS`].
pub(crate) fn from_unix_ms(ms: u64) -> SystemTime {
    UNIX_EPOCH
        .checked_add(Duration::from_millis(ms.min(MAX_UNIX_SECS * 1000)))
        .unwrap_or(UNIX_EPOCH)
}

/// Expiry, in unix seconds, of something created at `now` to live for
/// `lifetime` (whole seconds), clamped to [`MAX_UNIX_SECS`].
pub(crate) fn expiry(now: SystemTime, lifetime: Duration) -> u64 {
    unix_secs(now)
        .saturating_add(lifetime.as_secs())
        .min(MAX_UNIX_SECS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_truncate_to_seconds_and_clamp() {
        let t = UNIX_EPOCH + Duration::from_millis(10_999);
        assert_eq!(unix_secs(t), 10);
        assert_eq!(unix_secs(UNIX_EPOCH - Duration::from_secs(5)), 0);
        assert_eq!(expiry(t, Duration::from_millis(2_500)), 12);
        assert_eq!(expiry(t, Duration::MAX), MAX_UNIX_SECS);
        assert_eq!(unix_ms(t), 10_999);
        assert_eq!(unix_ms(from_unix_ms(1_234)), 1_234);
        assert_eq!(unix_ms(UNIX_EPOCH - Duration::from_secs(5)), 0);
        assert_eq!(from_unix_ms(u64::MAX), from_unix_ms(MAX_UNIX_SECS * 1000));
        assert_eq!(unix_secs(from_unix_ms(77_999)), 77);
    }
}
