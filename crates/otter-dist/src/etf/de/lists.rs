//! Whether a list is proper, known before it is visited (`deserialize_any` hands a
//! proper list over as a seq and an improper one as a raw term, so it must know
//! which before it starts), at a cost linear in the input.
//!
//! # The walk and its record
//!
//! The first list `deserialize_any` meets is walked to its tail, and the walk records
//! every list nested in it that is improper ([`Properness`]): a list met later inside
//! the walked span is answered from the record, not walked again. Without the record a
//! list nested `k` deep would be walked `k` times, once for each enclosing list:
//! quadratic in the nesting (at most [`MAX_DEPTH`] walks per input byte).
//!
//! The record is complete for every list the deserializer can still ask about:
//!
//! 1. Every path of the deserializer into a compound's elements (list, tuple, map,
//!    enum) enters it (`Deserializer::enter`), one level or more, so a list `k`
//!    levels inside the walked list is asked about at a depth of at least the walked
//!    list's depth plus `k`.
//! 2. A list is asked about only if it can be entered (its depth plus one is within
//!    [`MAX_DEPTH`]); the walk records every list at a level where that can hold, and
//!    skips deeper ones whole (stack bounded by [`MAX_DEPTH`] frames).
//! 3. The deserializer moves forward: after the walked span it never comes back into
//!    it, so a new walk replaces the record.
//!
//! The record is a bitset over the walked span's bytes (one bit per byte, allocated
//! only once an improper nested list is found): a list is improper if its header's
//! bit is set.

use super::super::MAX_DEPTH;
use super::super::read::{Reader, step};
use super::super::tags::*;
use super::Result;

/// The improper lists of the last walked span (module docs).
#[derive(Debug, Default)]
pub(super) struct Properness {
    /// The walked list's header.
    from: usize,
    /// Its tail: the lists whose headers lie strictly between `from` and `to` are
    /// recorded.
    to: usize,
    /// Bit `p - from` set: the list whose header is at `p` is improper.
    improper: Vec<u64>,
    /// The walk's open compounds (kept to reuse the allocation).
    stack: Vec<Frame>,
}

/// A compound the walk is inside.
#[derive(Debug)]
struct Frame {
    /// Elements still to walk (a map counts keys and values).
    left: usize,
    /// A list's header position: its tail comes after its elements.
    list: Option<usize>,
}

impl Properness {
    /// Whether the list whose header is at `at` is proper, if a walk recorded it.
    pub(super) fn known(&self, at: usize) -> Option<bool> {
        if at <= self.from || at >= self.to {
            return None;
        }
        let i = at - self.from;
        let set = self
            .improper
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0);
        Some(!set)
    }

    fn mark(&mut self, at: usize) {
        let i = at - self.from;
        if self.improper.len() <= i / 64 {
            self.improper.resize(i / 64 + 1, 0);
        }
        self.improper[i / 64] |= 1 << (i % 64);
    }

    /// Walks the list whose header is at `at` (`n` elements, `r` at the first one) at
    /// the deserializer's `depth` to its tail; records its nested lists (module docs)
    /// and says whether it is proper. `r` is a copy: the deserializer does not move.
    pub(super) fn walk(
        &mut self,
        mut r: Reader<'_>,
        at: usize,
        n: usize,
        depth: usize,
    ) -> Result<bool> {
        self.from = at;
        self.to = at;
        self.improper.clear();
        self.stack.clear();
        self.stack.push(Frame {
            left: n,
            list: Some(at),
        });
        // Terms still to walk, tails included: a count beyond what the input can hold
        // fails at its header (as `Reader::skip` does).
        let mut pending = n + 1;
        loop {
            step();
            let level = self.stack.len();
            let Some(top) = self.stack.last_mut() else {
                unreachable!("the walk returns when its first frame closes")
            };
            if top.left == 0 {
                let list = top.list;
                self.stack.pop();
                let Some(header) = list else { continue };
                pending -= 1;
                let proper = r.peek()? == NIL_EXT;
                if self.stack.is_empty() {
                    self.to = r.pos;
                    return Ok(proper);
                }
                if !proper {
                    self.mark(header);
                }
                r.skip(depth + 1)?;
                continue;
            }
            top.left -= 1;
            pending -= 1;
            let tag = r.peek()?;
            let compound = matches!(tag, LIST_EXT | SMALL_TUPLE_EXT | LARGE_TUPLE_EXT | MAP_EXT);
            // Elements at `level`; a compound's own elements one further. Deeper than
            // the deserializer can enter, a compound is skipped whole (module docs, 2).
            if !compound || depth + level >= MAX_DEPTH {
                r.skip(depth + 1)?;
                continue;
            }
            let header = r.pos;
            r.u8()?;
            let n = if tag == SMALL_TUPLE_EXT {
                usize::from(r.u8()?)
            } else {
                r.len32()?
            };
            let per = if tag == MAP_EXT { 2 } else { 1 };
            if n > r.remaining().saturating_sub(pending) / per {
                return Err(r.eof());
            }
            let left = n * per;
            let list = (tag == LIST_EXT).then_some(header);
            pending += left + usize::from(list.is_some());
            self.stack.push(Frame { left, list });
        }
    }
}
