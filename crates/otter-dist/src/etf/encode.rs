//! Writing terms: the primitives the serializer shares, and [`Term`] encoding.

use super::tags::*;
use super::term::{Term, trim};

/// Writes an atom: `SMALL_ATOM_UTF8_EXT` up to 255 bytes, `ATOM_UTF8_EXT` beyond.
/// The caller has checked the length (at most 255 characters, so at most 1020 bytes).
pub(super) fn atom(out: &mut Vec<u8>, s: &str) {
    match u8::try_from(s.len()) {
        Ok(n) => {
            out.push(SMALL_ATOM_UTF8_EXT);
            out.push(n);
        }
        Err(_) => {
            out.push(ATOM_UTF8_EXT);
            let n = u16::try_from(s.len()).unwrap_or(u16::MAX);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }
    out.extend_from_slice(s.as_bytes());
}

/// Writes an integer in its smallest form.
pub(super) fn int(out: &mut Vec<u8>, v: i64) {
    if let Ok(b) = u8::try_from(v) {
        out.push(SMALL_INTEGER_EXT);
        out.push(b);
    } else if let Ok(i) = i32::try_from(v) {
        out.push(INTEGER_EXT);
        out.extend_from_slice(&i.to_be_bytes());
    } else {
        big(out, v < 0, &v.unsigned_abs().to_le_bytes());
    }
}

/// Writes a 128-bit integer in its smallest form.
pub(super) fn int128(out: &mut Vec<u8>, v: i128) {
    match i64::try_from(v) {
        Ok(v) => int(out, v),
        Err(_) => big(out, v < 0, &v.unsigned_abs().to_le_bytes()),
    }
}

/// Writes an unsigned 128-bit integer in its smallest form.
pub(super) fn uint128(out: &mut Vec<u8>, v: u128) {
    match i64::try_from(v) {
        Ok(v) => int(out, v),
        Err(_) => big(out, false, &v.to_le_bytes()),
    }
}

/// Writes a sign and little-endian magnitude: as an integer when it fits 32 bits,
/// else `SMALL_BIG_EXT` (or `LARGE_BIG_EXT` beyond 255 bytes).
///
/// # Panics
///
/// If the magnitude has more than `u32::MAX` bytes.
pub(super) fn big(out: &mut Vec<u8>, negative: bool, mag: &[u8]) {
    let mag = trim(mag);
    if mag.len() <= 4 {
        let mut m = [0u8; 8];
        m[..mag.len()].copy_from_slice(mag);
        let m = i64::from_le_bytes(m);
        let v = if negative { -m } else { m };
        if i32::try_from(v).is_ok() {
            return int(out, v);
        }
    }
    match u8::try_from(mag.len()) {
        Ok(n) => {
            out.push(SMALL_BIG_EXT);
            out.push(n);
        }
        Err(_) => {
            out.push(LARGE_BIG_EXT);
            out.extend_from_slice(&len32(mag.len()).to_be_bytes());
        }
    }
    out.push(u8::from(negative));
    out.extend_from_slice(mag);
}

pub(super) fn float(out: &mut Vec<u8>, v: f64) {
    out.push(NEW_FLOAT_EXT);
    out.extend_from_slice(&v.to_bits().to_be_bytes());
}

/// A length as the format's u32.
///
/// # Panics
///
/// Beyond `u32::MAX` (Term encoding only; the serializer checks first).
fn len32(n: usize) -> u32 {
    match u32::try_from(n) {
        Ok(n) => n,
        Err(_) => panic!("ETF: a length of {n} does not fit 32 bits"),
    }
}

/// Writes a binary (`BINARY_EXT`).
///
/// A large binary is most of its message: room for it (and for the few bytes that
/// usually follow it) is made once, so that the buffer is not grown by doubling and
/// copied on the way, the binary included.
pub(super) fn binary(out: &mut Vec<u8>, b: &[u8]) {
    if b.len() >= LARGE_BINARY {
        out.reserve(b.len() + 5 + LARGE_BINARY_SLACK);
    }
    out.push(BINARY_EXT);
    out.extend_from_slice(&len32(b.len()).to_be_bytes());
    out.extend_from_slice(b);
}

/// The size from which [`binary`] makes room for the whole binary at once.
const LARGE_BINARY: usize = 4096;
/// The bytes [`binary`] leaves free after a large binary, for the rest of its message.
const LARGE_BINARY_SLACK: usize = 256;

pub(super) fn tuple_header(out: &mut Vec<u8>, n: usize) {
    match u8::try_from(n) {
        Ok(n) => {
            out.push(SMALL_TUPLE_EXT);
            out.push(n);
        }
        Err(_) => {
            out.push(LARGE_TUPLE_EXT);
            out.extend_from_slice(&len32(n).to_be_bytes());
        }
    }
}

/// Rewrites the list written at `start` (`LIST_EXT`, `n` `SMALL_INTEGER_EXT`
/// elements, `NIL_EXT`) as the equivalent, shorter `STRING_EXT`, as Erlang does.
pub(super) fn compact_string(out: &mut Vec<u8>, start: usize, n: u16) {
    out[start] = STRING_EXT;
    out[start + 1..start + 3].copy_from_slice(&n.to_be_bytes());
    let first = start + 5;
    for i in 0..usize::from(n) {
        out[start + 3 + i] = out[first + 2 * i + 1];
    }
    out.truncate(start + 3 + usize::from(n));
}

/// Encodes `t` (no version byte).
///
/// # Panics
///
/// If a binary, list, tuple or map has more than `u32::MAX` bytes or elements.
pub(super) fn term(out: &mut Vec<u8>, t: &Term) {
    match t {
        Term::Atom(a) => atom(out, a.as_str()),
        Term::Int(v) => int(out, *v),
        Term::BigInt(b) => big(out, b.negative, &b.magnitude),
        Term::Float(v) => float(out, *v),
        Term::Binary(b) => binary(out, b),
        Term::BitBinary { bytes, bits } => {
            out.push(BIT_BINARY_EXT);
            out.extend_from_slice(&len32(bytes.len()).to_be_bytes());
            out.push(*bits);
            out.extend_from_slice(bytes);
        }
        Term::List(items) => {
            if items.is_empty() {
                out.push(NIL_EXT);
                return;
            }
            if let Ok(n) = u16::try_from(items.len())
                && items
                    .iter()
                    .all(|t| matches!(t, Term::Int(v) if (0..=255).contains(v)))
            {
                out.push(STRING_EXT);
                out.extend_from_slice(&n.to_be_bytes());
                out.extend(items.iter().map(|t| match t {
                    Term::Int(v) => u8::try_from(*v).unwrap_or(0),
                    _ => 0,
                }));
                return;
            }
            out.push(LIST_EXT);
            out.extend_from_slice(&len32(items.len()).to_be_bytes());
            for t in items {
                term(out, t);
            }
            out.push(NIL_EXT);
        }
        Term::ImproperList(items, tail) => {
            if !items.is_empty() {
                out.push(LIST_EXT);
                out.extend_from_slice(&len32(items.len()).to_be_bytes());
                for t in items {
                    term(out, t);
                }
            }
            term(out, tail);
        }
        Term::Tuple(items) => {
            tuple_header(out, items.len());
            for t in items {
                term(out, t);
            }
        }
        Term::Map(pairs) => {
            out.push(MAP_EXT);
            out.extend_from_slice(&len32(pairs.len()).to_be_bytes());
            for (k, v) in pairs {
                term(out, k);
                term(out, v);
            }
        }
        Term::Pid(p) => {
            out.push(NEW_PID_EXT);
            atom(out, p.node.as_str());
            out.extend_from_slice(&p.id.to_be_bytes());
            out.extend_from_slice(&p.serial.to_be_bytes());
            out.extend_from_slice(&p.creation.to_be_bytes());
        }
        Term::Port(p) => {
            match u32::try_from(p.id) {
                Ok(id) => {
                    out.push(NEW_PORT_EXT);
                    atom(out, p.node.as_str());
                    out.extend_from_slice(&id.to_be_bytes());
                }
                Err(_) => {
                    out.push(V4_PORT_EXT);
                    atom(out, p.node.as_str());
                    out.extend_from_slice(&p.id.to_be_bytes());
                }
            }
            out.extend_from_slice(&p.creation.to_be_bytes());
        }
        Term::Ref(r) => {
            out.push(NEWER_REFERENCE_EXT);
            let n = u16::try_from(r.id.len()).unwrap_or(u16::MAX);
            out.extend_from_slice(&n.to_be_bytes());
            atom(out, r.node.as_str());
            out.extend_from_slice(&r.creation.to_be_bytes());
            for w in r.id.iter().take(usize::from(n)) {
                out.extend_from_slice(&w.to_be_bytes());
            }
        }
        Term::Fun(raw) => out.extend_from_slice(raw),
    }
}
