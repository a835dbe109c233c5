//! A small seeded pseudo-random generator (SplitMix64).
//!
//! The simulator needs reproducible randomness (loss, jitter) from a seed,
//! not cryptographic quality, so a 64-bit SplitMix generator written here is
//! enough and adds no dependency. Each link direction owns one generator
//! derived from the scenario seed, so the draws of one direction do not
//! depend on how much traffic the other carried.

/// SplitMix64 (Steele, Lea and Flood, 2014): one 64-bit word of state.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator for `seed`, separated into independent streams by `stream`.
    pub fn new(seed: u64, stream: u64) -> Rng {
        let mut rng = Rng {
            state: seed ^ stream.wrapping_mul(0xA076_1D64_78BD_642F),
        };
        // Mix once so that nearby seeds do not start with nearby outputs.
        rng.next_u64();
        rng
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform number in [0, 1) with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p` (0 never, 1 always).
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.next_f64() < p
    }

    /// A uniform number of nanoseconds in [0, max].
    pub fn below_inclusive(&mut self, max: u64) -> u64 {
        match max.checked_add(1) {
            Some(bound) => self.next_u64() % bound,
            None => self.next_u64(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_same_numbers() {
        let a: Vec<u64> = (0..5)
            .scan(Rng::new(7, 1), |r, _| Some(r.next_u64()))
            .collect();
        let b: Vec<u64> = (0..5)
            .scan(Rng::new(7, 1), |r, _| Some(r.next_u64()))
            .collect();
        assert_eq!(a, b);
        let c: Vec<u64> = (0..5)
            .scan(Rng::new(7, 2), |r, _| Some(r.next_u64()))
            .collect();
        assert_ne!(a, c);
    }

    #[test]
    fn chance_matches_probability_roughly() {
        let mut rng = Rng::new(42, 0);
        let hits = (0..100_000).filter(|_| rng.chance(0.3)).count();
        assert!((29_000..31_000).contains(&hits), "{hits}");
        assert!(!rng.chance(0.0));
        assert!(rng.chance(1.0));
    }

    #[test]
    fn uniform_values_stay_in_range() {
        let mut rng = Rng::new(1, 1);
        assert!((0..1000).all(|_| rng.below_inclusive(10) <= 10));
        assert!((0..1000).all(|_| (0.0..1.0).contains(&rng.next_f64())));
    }
}
