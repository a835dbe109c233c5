//! The observing policy: what is saved, and when a new saved set is emitted.

use std::time::{Duration, Instant};

use careful_resume::{BbrSample, Observation, Observer, ObserverConfig, WindowSample};

const MSS: usize = 1200;
const IW: usize = 10 * MSS;
const MS: Duration = Duration::from_millis(1);

struct Feed {
    observer: Observer,
    base: Instant,
}

impl Feed {
    fn new() -> Self {
        Feed {
            observer: Observer::new(ObserverConfig::new(IW)),
            base: Instant::now(),
        }
    }

    fn at(&self, secs: u64) -> Instant {
        self.base + Duration::from_secs(secs)
    }

    fn window(&mut self, secs: u64, cwnd: usize, rtt_ms: u32) -> Option<Observation> {
        self.sample(secs, cwnd, rtt_ms, false, false)
    }

    fn sample(
        &mut self,
        secs: u64,
        cwnd: usize,
        rtt_ms: u32,
        slow_start: bool,
        app_limited: bool,
    ) -> Option<Observation> {
        self.observer.on_window_sample(&WindowSample {
            cwnd,
            in_slow_start: slow_start,
            app_limited,
            rtt: MS * rtt_ms,
            now: self.at(secs),
        })
    }
}

#[test]
fn emits_the_first_eligible_observation() {
    let mut feed = Feed::new();
    // Below 4 x IW: not worth saving.
    assert_eq!(feed.window(0, 4 * IW - 1, 100), None);
    let first = feed.window(1, 4 * IW, 120).unwrap();
    // The minimum RTT of the window, not the latest sample.
    assert_eq!(
        first,
        Observation {
            saved_cwnd: 4 * IW,
            saved_rtt: MS * 100,
            at: feed.at(1)
        }
    );
    assert_eq!(feed.observer.last(), Some(first));
}

#[test]
fn saves_half_the_window_in_slow_start() {
    let mut feed = Feed::new();
    assert_eq!(feed.sample(0, 8 * IW - 2, 100, true, false), None);
    let obs = feed.sample(0, 8 * IW, 100, true, false).unwrap();
    assert_eq!(obs.saved_cwnd, 4 * IW);
}

#[test]
fn refreshes_after_sixty_seconds() {
    let mut feed = Feed::new();
    feed.window(0, 100 * MSS, 100).unwrap();
    assert_eq!(feed.window(59, 100 * MSS, 100), None);
    assert_eq!(
        feed.window(60, 100 * MSS, 100).map(|o| o.at),
        Some(feed.at(60))
    );
}

#[test]
fn a_window_change_larger_than_old_over_t_is_emitted_at_once() {
    let mut feed = Feed::new();
    feed.window(0, 120_000, 100).unwrap();
    // t = 10 s: the threshold is 120 000 / 10 = 12 000 bytes.
    assert_eq!(feed.window(10, 132_000, 100), None);
    assert_eq!(
        feed.window(10, 107_999, 100).map(|o| o.saved_cwnd),
        Some(107_999)
    );
}

#[test]
fn an_rtt_change_larger_than_old_over_t_is_emitted_at_once() {
    let mut feed = Feed::new();
    feed.window(0, 120_000, 100).unwrap();
    // t = 2 s: the threshold is 100 ms / 2 = 50 ms.
    assert_eq!(feed.window(2, 120_000, 50), None);
    let obs = feed.window(2, 120_000, 49).unwrap();
    assert_eq!(obs.saved_rtt, MS * 49);
}

#[test]
fn a_lower_app_limited_observation_does_not_replace_a_higher_one() {
    let mut feed = Feed::new();
    feed.window(0, 200 * MSS, 100).unwrap();
    assert_eq!(feed.sample(120, 60 * MSS, 100, false, true), None);
    assert_eq!(feed.observer.last().map(|o| o.saved_cwnd), Some(200 * MSS));
    // Higher while app-limited is still news.
    let obs = feed.sample(121, 300 * MSS, 100, false, true).unwrap();
    assert_eq!(obs.saved_cwnd, 300 * MSS);
    // Not app-limited: a lower window is saved.
    assert_eq!(
        feed.window(190, 60 * MSS, 100).map(|o| o.saved_cwnd),
        Some(60 * MSS)
    );
}

#[test]
fn the_min_rtt_forgets_samples_older_than_five_minutes() {
    let mut feed = Feed::new();
    feed.window(0, 100 * MSS, 50).unwrap();
    // A refresh: 50 ms is still within the window.
    assert_eq!(
        feed.window(299, 100 * MSS, 80).map(|o| o.saved_rtt),
        Some(MS * 50)
    );
    // 50 ms has expired; 80 ms moved by 30 ms > 50 ms / 2 s.
    let obs = feed.window(301, 100 * MSS, 90).unwrap();
    assert_eq!(obs.saved_rtt, MS * 80);
}

#[test]
fn bbr_saves_the_bandwidth_delay_product() {
    let mut observer = Observer::new(ObserverConfig::new(IW));
    let now = Instant::now();
    let obs = observer
        .on_bbr_sample(&BbrSample {
            max_bw: 12_000_000,
            app_limited: false,
            rtt: MS * 100,
            now,
        })
        .unwrap();
    assert_eq!((obs.saved_cwnd, obs.saved_rtt), (1_200_000, MS * 100));
    // 400 kB/s x 100 ms = 40 000 bytes < 4 x IW.
    let mut observer = Observer::new(ObserverConfig::new(IW));
    let small = BbrSample {
        max_bw: 400_000,
        app_limited: false,
        rtt: MS * 100,
        now,
    };
    assert_eq!(observer.on_bbr_sample(&small), None);
}

#[test]
fn extreme_values_do_not_overflow() {
    let mut observer = Observer::new(ObserverConfig::new(IW));
    let now = Instant::now();
    let hour = Duration::from_secs(3600);
    let obs = observer.on_bbr_sample(&BbrSample {
        max_bw: u64::MAX,
        app_limited: false,
        rtt: hour,
        now,
    });
    assert!(obs.is_some());
    let tiny = WindowSample {
        cwnd: 1 << 40,
        in_slow_start: false,
        app_limited: false,
        rtt: Duration::from_micros(1),
        now: now + hour,
    };
    assert_eq!(
        observer.on_window_sample(&tiny).map(|o| o.saved_cwnd),
        Some(1 << 40)
    );
}
