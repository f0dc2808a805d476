//! Hash maps keyed by what this program chose itself ([`OwnKeyMap`]): the names an application
//! registered in its catalog, the gateway's routes, caller ids and metric labels. Their hasher
//! ([`OwnKeys`]) costs a few instructions per 8 bytes where the standard library's SipHash
//! costs about 150 on a short name, looked up on every call.
//!
//! Not here: maps whose keys a peer chooses (the ids of its requests, its session ids), which
//! keep SipHash and its resistance to keys lined up to collide; the peer's map of its own
//! request ids (`peer::OwnIds`, integers it numbers itself).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

/// A `HashMap` keyed by this program's own keys, hashed by [`OwnKeys`].
pub(crate) type OwnKeyMap<K, V> = HashMap<K, V, OwnKeys>;

/// The hasher of an [`OwnKeyMap`]: a multiply whose 128-bit product is folded (foldhash's
/// core: every input bit reaches the low bits a table indexes by), from a seed drawn per map
/// from the standard library's random keys, so that keys cannot be lined up to collide without
/// knowing it.
#[derive(Clone)]
pub(crate) struct OwnKeys {
    seed: u64,
}

impl Default for OwnKeys {
    fn default() -> Self {
        OwnKeys { seed: std::hash::RandomState::new().hash_one(0u64) }
    }
}

impl BuildHasher for OwnKeys {
    type Hasher = OwnKeysHasher;
    fn build_hasher(&self) -> OwnKeysHasher {
        OwnKeysHasher(self.seed)
    }
}

/// The state of [`OwnKeys`]' hasher.
pub(crate) struct OwnKeysHasher(u64);

impl OwnKeysHasher {
    /// An odd constant with well-spread bits (the fractional part of pi, as foldhash's).
    const K: u64 = 0x243f_6a88_85a3_08d3;

    fn add(&mut self, word: u64) {
        let product = u128::from(self.0 ^ word) * u128::from(Self::K);
        self.0 = (product as u64) ^ ((product >> 64) as u64);
    }
}

impl Hasher for OwnKeysHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.add(bytes.len() as u64);
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().expect("chunks of 8")));
        }
        if !chunks.remainder().is_empty() {
            let mut tail = [0u8; 8];
            tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
            self.add(u64::from_le_bytes(tail));
        }
    }
    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn keys_alike_but_for_one_place_spread_over_the_buckets() {
        // The table indexes by the hash's low bits: 1,024 names that differ only at their end,
        // their start, or past their first 8 bytes, and 1,024 consecutive integers, must fill
        // most of 1,024 buckets (random hashes fill about 647), whatever the seed.
        let alike: [fn(u32) -> String; 3] =
            [|n| format!("tool_{n:04}"), |n| format!("{n:04}_tool"), |n| format!("a_long_prefix_{n:04}_x")];
        for seed in [0, 1, 0x8000_0000_0000_0000, u64::MAX] {
            let keys = OwnKeys { seed };
            for make in alike {
                let buckets: HashSet<u64> = (0..1024).map(|n| keys.hash_one(make(n)) & 1023).collect();
                assert!(buckets.len() > 560, "{} of 1,024 buckets for {:?}, seed {seed}", buckets.len(), make(0));
            }
            let buckets: HashSet<u64> = (0..1024u64).map(|n| keys.hash_one(n) & 1023).collect();
            assert!(buckets.len() > 560, "{} of 1,024 buckets for integers, seed {seed}", buckets.len());
        }
        assert_ne!(OwnKeys { seed: 0 }.hash_one("a"), OwnKeys { seed: 1 }.hash_one("a"), "the seed keys the hash");
    }
}
