//! Marsaglia's xorshift64: a few lines, no dependency, the same sequence for the same seed.
//!
//! One generator for the whole program: the tests spread their generated inputs with it,
//! and chapter 8 scrambles the clock with it to jitter a retry. It lives beside the chapters,
//! compiled in every chapter's state, so the earliest chapter that wants it can reach it.

/// The generator's state; never zero (zero is xorshift's one fixed point).
#[derive(Clone, Debug)]
pub struct XorShift(u64);

impl XorShift {
    /// A generator starting from `seed` (zero becomes one).
    pub fn new(seed: u64) -> XorShift {
        XorShift(seed.max(1))
    }

    /// The generator for one generated test: `default_seed`, unless the environment variable
    /// `MINI_AGENT_ROBUSTNESS_SEED` names another; the seed is printed so a failure replays.
    pub fn seeded(default_seed: u64) -> XorShift {
        let seed = std::env::var("MINI_AGENT_ROBUSTNESS_SEED")
            .ok()
            .and_then(|text| text.parse().ok())
            .unwrap_or(default_seed);
        eprintln!("robustness seed: {seed} (replay with MINI_AGENT_ROBUSTNESS_SEED={seed})");
        XorShift::new(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A number in `0..bound` (0 when `bound` is 0).
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound.max(1) as u64) as usize
    }

    /// One of `items`, which must not be empty.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// `len` random bytes (the low byte of each draw).
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }

    /// A number in `[0, 1)`, from the top 53 bits of a draw.
    pub fn fraction(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// How many generated cases a test runs: `default`, unless `MINI_AGENT_ROBUSTNESS_CASES`
/// says otherwise.
pub fn cases(default: usize) -> usize {
    std::env::var("MINI_AGENT_ROBUSTNESS_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(default)
}

/// `{"a":{"a":…1…}}` or `[[…1…]]`, `depth` levels deep: JSON no parser should recurse into.
pub fn nested_json(depth: usize, objects: bool) -> String {
    let (open, close) = if objects { ("{\"a\":", "}") } else { ("[", "]") };
    format!("{}1{}", open.repeat(depth), close.repeat(depth))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequence_is_marsaglias_and_zero_is_not_a_seed() {
        // The first draw from 1 by hand: 1 ^ 1<<13 = 0x2001; ^ >>7 = 0x2041; ^ <<17 = 0x40822041.
        assert_eq!(XorShift::new(1).next_u64(), 0x4082_2041);
        // Zero would repeat zero for ever; it starts from one instead.
        assert_eq!(XorShift::new(0).next_u64(), XorShift::new(1).next_u64());
        let mut random = XorShift::new(7);
        assert_eq!(random.below(0), 0, "an empty range is not a division by zero");
        assert!((0..1000).all(|_| (0.0..1.0).contains(&random.fraction())));
    }
}
