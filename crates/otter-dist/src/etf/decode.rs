//! Decoding bytes into a [`Term`] tree.

use super::error::DecodeError;
use super::read::{Int, Reader};
use super::tags::*;
use super::term::{Atom, BigInt, ExternalPid, ExternalPort, ExternalRef, Term, mag_to_u128, trim};

type Result<T> = std::result::Result<T, DecodeError>;

/// The most elements reserved ahead of decoding them.
const PREALLOC: usize = 1024;

/// The integer as a term: `Int` when it fits `i64`.
pub(super) fn int_term(i: Int<'_>) -> Term {
    match i {
        Int::Small(v) => Term::Int(v),
        Int::Big { negative, mag } => {
            if let Some(m) = mag_to_u128(mag) {
                let v = if negative {
                    i128::try_from(m).ok().map(|m| -m)
                } else {
                    i128::try_from(m).ok()
                };
                if let Some(v) = v.and_then(|v| i64::try_from(v).ok()) {
                    return Term::Int(v);
                }
            }
            Term::BigInt(BigInt {
                negative,
                magnitude: trim(mag).to_vec(),
            })
        }
    }
}

fn node(r: &mut Reader<'_>) -> Result<Atom> {
    let at = r.pos;
    let s = r.atom()?;
    // The reader enforces the length limit.
    Atom::try_new(&s).ok_or(DecodeError::AtomTooLong { offset: at })
}

/// Decodes one term (no version byte) at nesting `depth`.
///
/// The recursive path (this function and the compound ones) keeps its frames
/// small: leaves are decoded out of line, so that [`MAX_DEPTH`](super::MAX_DEPTH)
/// levels fit a thread's stack.
pub(super) fn term(r: &mut Reader<'_>, depth: usize) -> Result<Term> {
    r.depth(depth)?;
    match r.peek()? {
        SMALL_TUPLE_EXT => {
            r.u8()?;
            let n = usize::from(r.u8()?);
            Ok(Term::Tuple(elements(r, n, depth)?))
        }
        LARGE_TUPLE_EXT => {
            r.u8()?;
            let n = r.len32()?;
            Ok(Term::Tuple(elements(r, n, depth)?))
        }
        LIST_EXT => list(r, depth),
        MAP_EXT => map(r, depth),
        _ => leaf(r, depth),
    }
}

#[inline(never)]
fn list(r: &mut Reader<'_>, depth: usize) -> Result<Term> {
    r.u8()?;
    let n = r.len32()?;
    let mut items = elements(r, n, depth)?;
    Ok(match term(r, depth + 1)? {
        Term::List(rest) => {
            items.extend(rest);
            Term::List(items)
        }
        Term::ImproperList(rest, tail) => {
            items.extend(rest);
            Term::ImproperList(items, tail)
        }
        tail if items.is_empty() => tail,
        tail => Term::ImproperList(items, Box::new(tail)),
    })
}

#[inline(never)]
fn map(r: &mut Reader<'_>, depth: usize) -> Result<Term> {
    r.u8()?;
    let n = r.len32()?;
    if n > r.remaining() / 2 {
        return Err(r.eof());
    }
    let mut pairs = Vec::with_capacity(n.min(PREALLOC));
    for _ in 0..n {
        let k = term(r, depth + 1)?;
        let v = term(r, depth + 1)?;
        pairs.push((k, v));
    }
    Ok(Term::Map(pairs))
}

/// Every term that holds no terms (funs aside: they are kept raw).
#[inline(never)]
fn leaf(r: &mut Reader<'_>, depth: usize) -> Result<Term> {
    let at = r.pos;
    let tag = r.peek()?;
    Ok(match tag {
        SMALL_INTEGER_EXT | INTEGER_EXT | SMALL_BIG_EXT | LARGE_BIG_EXT => int_term(r.int()?),
        NEW_FLOAT_EXT | FLOAT_EXT => Term::Float(r.float()?),
        ATOM_EXT | SMALL_ATOM_EXT | ATOM_UTF8_EXT | SMALL_ATOM_UTF8_EXT => Term::Atom(node(r)?),
        NEW_FUN_EXT | EXPORT_EXT => Term::Fun(r.raw(depth)?.to_vec()),
        _ => {
            r.u8()?;
            match tag {
                NIL_EXT => Term::List(Vec::new()),
                STRING_EXT => {
                    let n = usize::from(r.u16()?);
                    Term::List(r.take(n)?.iter().map(|&b| Term::Int(b.into())).collect())
                }
                BINARY_EXT => {
                    let n = r.len32()?;
                    Term::Binary(r.take(n)?.to_vec())
                }
                BIT_BINARY_EXT => {
                    let (n, bits) = r.bit_binary_header(at)?;
                    Term::BitBinary {
                        bytes: r.take(n)?.to_vec(),
                        bits,
                    }
                }
                NEW_PID_EXT | PID_EXT => {
                    let node = node(r)?;
                    let id = r.u32()?;
                    let serial = r.u32()?;
                    let creation = if tag == NEW_PID_EXT {
                        r.u32()?
                    } else {
                        r.u8()?.into()
                    };
                    Term::Pid(ExternalPid {
                        node,
                        id,
                        serial,
                        creation,
                    })
                }
                NEW_PORT_EXT | PORT_EXT | V4_PORT_EXT => {
                    let node = node(r)?;
                    let id = if tag == V4_PORT_EXT {
                        r.u64()?
                    } else {
                        r.u32()?.into()
                    };
                    let creation = if tag == PORT_EXT {
                        r.u8()?.into()
                    } else {
                        r.u32()?
                    };
                    Term::Port(ExternalPort { node, id, creation })
                }
                NEWER_REFERENCE_EXT | NEW_REFERENCE_EXT => {
                    let n = r.ref_len(at)?;
                    let node = node(r)?;
                    let creation = if tag == NEWER_REFERENCE_EXT {
                        r.u32()?
                    } else {
                        r.u8()?.into()
                    };
                    if n > r.remaining() / 4 {
                        return Err(r.eof());
                    }
                    let mut id = Vec::with_capacity(n);
                    for _ in 0..n {
                        id.push(r.u32()?);
                    }
                    Term::Ref(ExternalRef { node, creation, id })
                }
                REFERENCE_EXT => {
                    let node = node(r)?;
                    let id = r.u32()?;
                    let creation = r.u8()?.into();
                    Term::Ref(ExternalRef {
                        node,
                        creation,
                        id: vec![id],
                    })
                }
                _ => return Err(Reader::bad_tag(at, tag)),
            }
        }
    })
}

/// `n` terms one level down; the allocation is bounded by the remaining input.
fn elements(r: &mut Reader<'_>, n: usize, depth: usize) -> Result<Vec<Term>> {
    if n > r.remaining() {
        return Err(r.eof());
    }
    // A `Term` is some 50 times larger than its smallest encoding: reserve a
    // bounded amount and let the vector grow with what actually arrives.
    let mut items = Vec::with_capacity(n.min(PREALLOC));
    for _ in 0..n {
        items.push(term(r, depth + 1)?);
    }
    Ok(items)
}
