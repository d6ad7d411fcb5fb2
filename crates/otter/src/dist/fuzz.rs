//! Seeded fuzzing for the decoders' unit tests (`pg/tests.rs`, `erpc/tests.rs`): a
//! small generator and byte-by-byte mutations of well-formed input, so that a failing
//! seed reproduces. Each suite names the tag bytes its mutations favour.
//!
//! `tests/dist_etf.rs` keeps its own generator: an integration test cannot reach a
//! `#[cfg(test)]` module of the crate.

use crate::dist::etf::{Atom, ExternalPid, Term};

/// A small seeded generator (xorshift); the seed must not be 0.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Below `n` (0 when `n` is 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    pub(crate) fn usize(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }
}

/// One to four random edits: a byte changed (often to one of `interesting`: a tag or
/// a length byte), a byte inserted or removed, a cut, a run duplicated.
pub(crate) fn mutate(rng: &mut Rng, bytes: &[u8], interesting: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    for _ in 0..=rng.below(4) {
        if b.is_empty() {
            b.push(131);
        }
        let i = rng.usize(b.len());
        match rng.below(6) {
            0 => b[i] = rng.next() as u8,
            1 => b[i] = interesting[rng.usize(interesting.len())],
            2 => b.insert(i, interesting[rng.usize(interesting.len())]),
            3 => {
                b.remove(i);
            }
            4 => b.truncate(i),
            _ => {
                let end = (i + 1 + rng.usize(8)).min(b.len());
                let run = b[i..end].to_vec();
                b.splice(i..i, run);
            }
        }
    }
    b
}

/// A pid of the Erlang node `erl@host`.
pub(crate) fn pid(n: u32) -> ExternalPid {
    ExternalPid {
        node: Atom::new("erl@host"),
        id: n,
        serial: 0,
        creation: 7,
    }
}

/// `t` in the external term format, with its version byte.
pub(crate) fn encode(t: &Term) -> Vec<u8> {
    let mut out = Vec::new();
    t.encode(&mut out);
    out
}
