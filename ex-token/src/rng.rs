//! Injectable randomness for nonces, saved-set ids and GREASE.

use std::fmt;

use ring::rand::{SecureRandom, SystemRandom};

/// The random source failed to produce bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RandomError;

impl fmt::Display for RandomError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("random source failed")
    }
}

impl std::error::Error for RandomError {}

/// A source of random bytes.
///
/// Minting draws AEAD nonces and saved-set ids from it. Production servers use
/// [`SystemRng`]; a deterministic simulator supplies its own seeded source
/// (such as [`SimRng`]) so that runs repeat bit for bit.
pub trait Rng {
    /// Fills `dest` entirely with random bytes.
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), RandomError>;
}

/// The operating system's cryptographically secure generator, through ring.
#[derive(Debug)]
pub struct SystemRng(SystemRandom);

impl SystemRng {
    /// Creates a handle to the system generator.
    pub fn new() -> Self {
        Self(SystemRandom::new())
    }
}

impl Default for SystemRng {
    fn default() -> Self {
        Self::new()
    }
}

impl Rng for SystemRng {
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), RandomError> {
        self.0.fill(dest).map_err(|_| RandomError)
    }
}

/// A seeded, deterministic generator (SplitMix64) for simulations and tests.
///
/// Not cryptographically secure: nonces it produces are predictable and may
/// repeat across runs with the same seed, which breaks ChaCha20-Poly1305's
/// confidentiality. Never use it with keys that protect real traffic.
#[derive(Clone, Debug)]
pub struct SimRng {
    state: u64,
}

impl SimRng {
    /// Creates a generator from a seed.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

impl Rng for SimRng {
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), RandomError> {
        for chunk in dest.chunks_mut(8) {
            for (byte, random) in chunk.iter_mut().zip(self.next_u64().to_le_bytes()) {
                *byte = random;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sim_rng_matches_splitmix64_reference_output() {
        // First outputs of SplitMix64 seeded with 0 (reference implementation).
        let mut rng = SimRng::new(0);
        assert_eq!(rng.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(rng.next_u64(), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn sim_rng_is_reproducible_and_fills_odd_lengths() {
        let (mut a, mut b) = ([0u8; 13], [0u8; 13]);
        SimRng::new(7).fill(&mut a).unwrap();
        SimRng::new(7).fill(&mut b).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, [0u8; 13]);
    }
}
