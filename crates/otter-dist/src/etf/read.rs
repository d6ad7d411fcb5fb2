//! The byte reader: bounds-checked primitives, atoms, integers, and `skip`
//! (validate and measure one term without building it).

use std::borrow::Cow;

use super::error::DecodeError;
use super::tags::*;
use super::{MAX_ATOM_CHARS, MAX_DEPTH, MAX_REF_WORDS};

type Result<T> = std::result::Result<T, DecodeError>;

/// A cursor over the input. `pos <= buf.len()` always holds.
#[derive(Debug, Clone, Copy)]
pub struct Reader<'de> {
    pub buf: &'de [u8],
    pub pos: usize,
}

/// An integer as read: small, or a sign and a little-endian magnitude.
#[derive(Debug, Clone, Copy)]
pub enum Int<'de> {
    Small(i64),
    Big { negative: bool, mag: &'de [u8] },
}

impl<'de> Reader<'de> {
    pub fn new(buf: &'de [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    pub fn eof(&self) -> DecodeError {
        DecodeError::UnexpectedEof {
            offset: self.buf.len(),
        }
    }

    pub fn peek(&self) -> Result<u8> {
        self.buf.get(self.pos).copied().ok_or_else(|| self.eof())
    }

    pub fn u8(&mut self) -> Result<u8> {
        let b = self.peek()?;
        self.pos += 1;
        Ok(b)
    }

    pub fn take(&mut self, n: usize) -> Result<&'de [u8]> {
        let end = self.pos.checked_add(n).ok_or_else(|| self.eof())?;
        let s = self.buf.get(self.pos..end).ok_or_else(|| self.eof())?;
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    pub fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    /// A u32 length, as usize.
    pub fn len32(&mut self) -> Result<usize> {
        // u32 always fits usize on the 32- and 64-bit targets otter supports.
        usize::try_from(self.u32()?).map_err(|_| self.eof())
    }

    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    pub fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_be_bytes(self.array()?))
    }

    /// Reads the version byte.
    pub fn version(&mut self) -> Result<()> {
        let at = self.pos;
        let v = self.u8()?;
        if v == VERSION {
            Ok(())
        } else {
            Err(DecodeError::BadVersion {
                offset: at,
                found: v,
            })
        }
    }

    /// The error for a tag the codec refuses or does not know, at `at`.
    pub fn bad_tag(at: usize, tag: u8) -> DecodeError {
        match tag {
            COMPRESSED | ATOM_CACHE_REF | LOCAL_EXT | FUN_EXT => DecodeError::UnsupportedTag {
                offset: at,
                tag,
                name: name(tag),
            },
            _ => DecodeError::UnknownTag { offset: at, tag },
        }
    }

    /// The type-mismatch error for the term at `at`.
    pub fn mismatch(&self, at: usize, expected: &'static str) -> DecodeError {
        match self.buf.get(at) {
            None => self.eof(),
            Some(&tag) => match kind(tag) {
                "an unknown term" => Reader::bad_tag(at, tag),
                found => DecodeError::UnexpectedType {
                    offset: at,
                    expected,
                    found,
                },
            },
        }
    }

    /// Whether the next term is an atom.
    pub fn at_atom(&self) -> bool {
        matches!(
            self.buf.get(self.pos),
            Some(&(ATOM_EXT | SMALL_ATOM_EXT | ATOM_UTF8_EXT | SMALL_ATOM_UTF8_EXT))
        )
    }

    /// Reads an atom (any of the four encodings), borrowing when it can.
    pub fn atom(&mut self) -> Result<Cow<'de, str>> {
        let at = self.pos;
        let tag = self.u8()?;
        let (len, utf8) = match tag {
            SMALL_ATOM_UTF8_EXT => (usize::from(self.u8()?), true),
            ATOM_UTF8_EXT => (usize::from(self.u16()?), true),
            SMALL_ATOM_EXT => (usize::from(self.u8()?), false),
            ATOM_EXT => (usize::from(self.u16()?), false),
            _ => {
                self.pos = at;
                return Err(match tag {
                    ATOM_CACHE_REF => Reader::bad_tag(at, tag),
                    _ => self.mismatch(at, "an atom"),
                });
            }
        };
        let bytes = self.take(len)?;
        if utf8 {
            let s =
                std::str::from_utf8(bytes).map_err(|_| DecodeError::InvalidUtf8 { offset: at })?;
            if len > MAX_ATOM_CHARS && s.chars().count() > MAX_ATOM_CHARS {
                return Err(DecodeError::AtomTooLong { offset: at });
            }
            Ok(Cow::Borrowed(s))
        } else {
            if len > MAX_ATOM_CHARS {
                return Err(DecodeError::AtomTooLong { offset: at });
            }
            Ok(latin1(bytes))
        }
    }

    /// Reads an integer term.
    pub fn int(&mut self) -> Result<Int<'de>> {
        let at = self.pos;
        match self.u8()? {
            SMALL_INTEGER_EXT => Ok(Int::Small(i64::from(self.u8()?))),
            INTEGER_EXT => Ok(Int::Small(i64::from(i32::from_be_bytes(self.array()?)))),
            SMALL_BIG_EXT => {
                let n = usize::from(self.u8()?);
                self.big_body(at, n)
            }
            LARGE_BIG_EXT => {
                let n = self.len32()?;
                self.big_body(at, n)
            }
            _ => {
                self.pos = at;
                Err(self.mismatch(at, "an integer"))
            }
        }
    }

    fn big_body(&mut self, at: usize, n: usize) -> Result<Int<'de>> {
        let negative = match self.u8()? {
            0 => false,
            1 => true,
            _ => {
                return Err(DecodeError::Malformed {
                    offset: at,
                    what: "big integer sign is neither 0 nor 1",
                });
            }
        };
        let mag = self.take(n)?;
        Ok(Int::Big { negative, mag })
    }

    /// Reads the `FLOAT_EXT` body (31 bytes of `"%.20e"` text).
    pub fn old_float(&mut self, at: usize) -> Result<f64> {
        let text = self.take(31)?;
        let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
        std::str::from_utf8(&text[..end])
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
            .ok_or(DecodeError::Malformed {
                offset: at,
                what: "FLOAT_EXT text is not a float",
            })
    }

    /// Reads a float term (either encoding).
    pub fn float(&mut self) -> Result<f64> {
        let at = self.pos;
        match self.u8()? {
            NEW_FLOAT_EXT => self.f64(),
            FLOAT_EXT => self.old_float(at),
            _ => {
                self.pos = at;
                Err(self.mismatch(at, "a float"))
            }
        }
    }

    /// Checks a nesting depth.
    pub fn depth(&self, depth: usize) -> Result<()> {
        if depth > MAX_DEPTH {
            Err(DecodeError::TooDeep { offset: self.pos })
        } else {
            Ok(())
        }
    }

    /// Reads the length word and validates the `BIT_BINARY_EXT` header; returns (len, bits).
    pub fn bit_binary_header(&mut self, at: usize) -> Result<(usize, u8)> {
        let len = self.len32()?;
        let bits = self.u8()?;
        if !(1..=8).contains(&bits) || len == 0 {
            return Err(DecodeError::Malformed {
                offset: at,
                what: "BIT_BINARY_EXT with a bit count outside 1..=8 or no bytes",
            });
        }
        Ok((len, bits))
    }

    /// Reads a reference's word count.
    pub fn ref_len(&mut self, at: usize) -> Result<usize> {
        let n = usize::from(self.u16()?);
        if n == 0 || n > MAX_REF_WORDS {
            return Err(DecodeError::Malformed {
                offset: at,
                what: "reference with no words or more than 5",
            });
        }
        Ok(n)
    }

    /// Skips a fun's body (after its tag at `at`).
    #[inline(never)]
    pub fn skip_fun(&mut self, at: usize, tag: u8, depth: usize) -> Result<()> {
        if tag == EXPORT_EXT {
            self.atom()?;
            self.atom()?;
            let a = self.pos;
            if self.u8()? != SMALL_INTEGER_EXT {
                return Err(DecodeError::Malformed {
                    offset: a,
                    what: "EXPORT_EXT arity is not a SMALL_INTEGER_EXT",
                });
            }
            self.u8()?;
            return Ok(());
        }
        // NEW_FUN_EXT: Size counts itself and everything after it.
        let start = self.pos;
        let size = self.len32()?;
        let end = start.checked_add(size).ok_or_else(|| self.eof())?;
        if end > self.buf.len() {
            return Err(self.eof());
        }
        self.take(1 + 16 + 4)?; // arity, uniq, index
        let num_free = self.len32()?;
        self.atom()?; // module
        self.int()?; // old index
        self.int()?; // old uniq
        let p = self.pos;
        match self.u8()? {
            NEW_PID_EXT | PID_EXT => {}
            _ => {
                return Err(DecodeError::Malformed {
                    offset: p,
                    what: "NEW_FUN_EXT without a pid",
                });
            }
        }
        self.pos = p;
        self.skip(depth + 1)?;
        for _ in 0..num_free {
            if self.pos >= end {
                break;
            }
            self.skip(depth + 1)?;
        }
        if self.pos != end {
            return Err(DecodeError::Malformed {
                offset: at,
                what: "NEW_FUN_EXT size does not match its contents",
            });
        }
        Ok(())
    }

    /// Validates and moves past one term (no version byte) at nesting `depth`, which
    /// must not exceed [`MAX_DEPTH`]. The term's own nesting has no limit here: it
    /// costs a count, not stack (only a fun inside a fun's free variables recurses,
    /// one level deeper each).
    pub fn skip(&mut self, depth: usize) -> Result<()> {
        self.depth(depth)?;
        // Terms still to skip: a compound adds its elements, so nesting costs a count,
        // not stack (a term of any depth is skipped; only funs in funs recurse).
        let mut pending: usize = 1;
        while pending > 0 {
            pending -= 1;
            step();
            let tag = self.peek()?;
            match tag {
                SMALL_TUPLE_EXT | LARGE_TUPLE_EXT | LIST_EXT | MAP_EXT => {
                    self.pos += 1;
                    let n = if tag == SMALL_TUPLE_EXT {
                        usize::from(self.u8()?)
                    } else {
                        self.len32()?
                    };
                    // Each term still to skip takes at least one byte: a count beyond
                    // what the remaining input can hold beside the terms already
                    // pending fails here rather than after a long loop (so `pending`
                    // stays within the input's length, plus a list's tail).
                    let per = if tag == MAP_EXT { 2 } else { 1 };
                    if n > self.remaining().saturating_sub(pending) / per {
                        return Err(self.eof());
                    }
                    pending += if tag == MAP_EXT { 2 * n } else { n };
                    if tag == LIST_EXT {
                        pending += 1;
                    }
                }
                NEW_FUN_EXT | EXPORT_EXT => {
                    let at = self.pos;
                    self.pos += 1;
                    self.skip_fun(at, tag, depth)?;
                }
                _ => self.skip_leaf()?,
            }
        }
        Ok(())
    }

    /// Skips a term that holds no terms.
    #[inline(never)]
    fn skip_leaf(&mut self) -> Result<()> {
        let at = self.pos;
        let tag = self.u8()?;
        match tag {
            SMALL_INTEGER_EXT => {
                self.take(1)?;
            }
            INTEGER_EXT => {
                self.take(4)?;
            }
            NEW_FLOAT_EXT => {
                self.take(8)?;
            }
            FLOAT_EXT => {
                self.old_float(at)?;
            }
            SMALL_BIG_EXT | LARGE_BIG_EXT => {
                self.pos = at;
                self.int()?;
            }
            ATOM_EXT | SMALL_ATOM_EXT | ATOM_UTF8_EXT | SMALL_ATOM_UTF8_EXT => {
                self.pos = at;
                self.atom()?;
            }
            NIL_EXT => {}
            STRING_EXT => {
                let n = usize::from(self.u16()?);
                self.take(n)?;
            }
            BINARY_EXT => {
                let n = self.len32()?;
                self.take(n)?;
            }
            BIT_BINARY_EXT => {
                let (n, _) = self.bit_binary_header(at)?;
                self.take(n)?;
            }
            NEW_PID_EXT | PID_EXT => {
                self.atom()?;
                self.take(if tag == NEW_PID_EXT { 12 } else { 9 })?;
            }
            NEW_PORT_EXT => {
                self.atom()?;
                self.take(8)?;
            }
            PORT_EXT => {
                self.atom()?;
                self.take(5)?;
            }
            V4_PORT_EXT => {
                self.atom()?;
                self.take(12)?;
            }
            NEWER_REFERENCE_EXT | NEW_REFERENCE_EXT => {
                let n = self.ref_len(at)?;
                self.atom()?;
                self.take(if tag == NEWER_REFERENCE_EXT { 4 } else { 1 })?;
                self.take(4 * n)?;
            }
            REFERENCE_EXT => {
                self.atom()?;
                self.take(5)?;
            }
            _ => return Err(Reader::bad_tag(at, tag)),
        }
        Ok(())
    }

    /// Moves past one term and returns its encoding.
    pub fn raw(&mut self, depth: usize) -> Result<&'de [u8]> {
        let start = self.pos;
        self.skip(depth)?;
        self.buf.get(start..self.pos).ok_or_else(|| self.eof())
    }
}

#[cfg(test)]
thread_local! {
    /// Terms stepped over by [`Reader::skip`] and the list walk (`de/lists.rs`) on
    /// this thread: what the tests count to show look-ahead is linear in the input.
    pub static STEPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts one step of a walk over terms (tests only; nothing otherwise).
#[inline(always)]
pub(super) fn step() {
    #[cfg(test)]
    STEPS.with(|s| s.set(s.get() + 1));
}

/// Latin-1 bytes as text, borrowed when they are ASCII.
pub(super) fn latin1(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) if bytes.is_ascii() => Cow::Borrowed(s),
        _ => Cow::Owned(bytes.iter().map(|&b| char::from(b)).collect()),
    }
}
