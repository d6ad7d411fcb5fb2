//! `Serialize`/`Deserialize` for the term types, through the raw-term hook.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::ser::{Serialize, Serializer};

use super::term::{Atom, BigInt, ExternalPid, ExternalPort, ExternalRef, Term};
use super::{RAW_TERM, decode_term_body, encode, encode_term_body};

/// One term's encoding (no version byte), serialized as bytes.
struct RawBytes<'a>(&'a [u8]);

impl Serialize for RawBytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

/// Serializes one term's encoding (`body`, no version byte) through the
/// [`RAW_TERM`] hook: the ETF serializer writes it verbatim (after checking it is
/// exactly one term); other serializers see a newtype struct around bytes.
///
/// This is how a type that is a term of its own (a pid, say) implements `Serialize`:
///
/// ```
/// use otter_dist::etf::{self, Atom, ExternalPid, Term};
/// struct MyPid(ExternalPid);
/// impl serde::Serialize for MyPid {
///     fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
///         let mut body = Vec::new();
///         etf::encode_term_body(&Term::Pid(self.0.clone()), &mut body);
///         etf::serialize_raw_term(&body, s)
///     }
/// }
/// let p = ExternalPid { node: Atom::new("a@h"), id: 1, serial: 0, creation: 7 };
/// let bytes = etf::to_vec(&MyPid(p.clone())).unwrap();
/// assert_eq!(Term::decode(&bytes).unwrap(), Term::Pid(p));
/// ```
pub fn serialize_raw_term<S: Serializer>(body: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_newtype_struct(RAW_TERM, &RawBytes(body))
}

/// Deserializes one whole term through the [`RAW_TERM`] hook (the way
/// [`Term`]'s `Deserialize` does): exact from the ETF deserializer, rebuilt from
/// serde's events when serde has buffered the input (`#[serde(untagged)]`,
/// `#[serde(flatten)]`; see the module doc for what that loses).
pub fn deserialize_raw_term<'de, D: Deserializer<'de>>(d: D) -> Result<Term, D::Error> {
    d.deserialize_newtype_struct(RAW_TERM, TermVisitor)
}

fn ser_term<S: Serializer>(t: &Term, s: S) -> Result<S::Ok, S::Error> {
    let mut body = Vec::new();
    encode_term_body(t, &mut body);
    serialize_raw_term(&body, s)
}

impl Serialize for Term {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ser_term(self, s)
    }
}

impl<'de> de::Deserialize<'de> for Term {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Term, D::Error> {
        deserialize_raw_term(d)
    }
}

impl Serialize for Atom {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut body = Vec::with_capacity(self.as_str().len() + 2);
        encode::atom(&mut body, self.as_str());
        serialize_raw_term(&body, s)
    }
}

impl<'de> de::Deserialize<'de> for Atom {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Atom, D::Error> {
        match deserialize_raw_term(d)? {
            Term::Atom(a) => Ok(a),
            other => Err(de::Error::custom(format_args!(
                "expected an atom, found {other}"
            ))),
        }
    }
}

macro_rules! via_term {
    ($ty:ident, $variant:ident, $what:literal) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                ser_term(&Term::$variant(self.clone()), s)
            }
        }

        impl<'de> de::Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<$ty, D::Error> {
                match deserialize_raw_term(d)? {
                    Term::$variant(x) => Ok(x),
                    other => Err(de::Error::custom(format_args!(
                        concat!("expected ", $what, ", found {}"),
                        other
                    ))),
                }
            }
        }
    };
}

via_term!(ExternalPid, Pid, "a pid");
via_term!(ExternalRef, Ref, "a reference");
via_term!(ExternalPort, Port, "a port");

/// The hook's visitor: the exact encoding (ETF deserializer), or serde's
/// buffered events.
struct TermVisitor;

impl<'de> Visitor<'de> for TermVisitor {
    type Value = Term;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an Erlang term")
    }
    fn visit_bytes<E: de::Error>(self, b: &[u8]) -> Result<Term, E> {
        decode_term_body(b).map_err(E::custom)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Term, D::Error> {
        d.deserialize_any(ContentVisitor { key: false })
            .map(Piece::term)
    }
}

/// What [`ContentVisitor`] builds: a term, or (as a map's first key) the tag of
/// a tuple `deserialize_any` presented as a one-entry map.
enum Piece {
    Term(Term),
    Tag2(Atom),
    TagN(Atom),
}

impl Piece {
    fn term(self) -> Term {
        match self {
            Piece::Term(t) => t,
            Piece::Tag2(a) | Piece::TagN(a) => Term::Atom(a),
        }
    }
}

fn atom<E: de::Error>(s: &str) -> Result<Atom, E> {
    Atom::try_new(s).ok_or_else(|| E::custom("atom too long"))
}

/// Rebuilds a term from the events of the ETF deserializer's `deserialize_any`
/// (replayed by serde's buffer).
#[derive(Clone, Copy)]
struct ContentVisitor {
    key: bool,
}

impl<'de> de::DeserializeSeed<'de> for ContentVisitor {
    type Value = Piece;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Piece, D::Error> {
        d.deserialize_any(self)
    }
}

struct TermSeed;

impl<'de> de::DeserializeSeed<'de> for TermSeed {
    type Value = Term;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Term, D::Error> {
        d.deserialize_any(ContentVisitor { key: false })
            .map(Piece::term)
    }
}

impl<'de> Visitor<'de> for ContentVisitor {
    type Value = Piece;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an Erlang term")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Piece, E> {
        Ok(Piece::Term(Term::from(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Piece, E> {
        Ok(Piece::Term(Term::Int(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Piece, E> {
        Ok(Piece::Term(Term::from(v)))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Piece, E> {
        Ok(Piece::Term(match i64::try_from(v) {
            Ok(v) => Term::Int(v),
            Err(_) => Term::BigInt(BigInt::from(v)),
        }))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Piece, E> {
        Ok(Piece::Term(match i64::try_from(v) {
            Ok(v) => Term::Int(v),
            Err(_) => Term::BigInt(BigInt::from(v)),
        }))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Piece, E> {
        Ok(Piece::Term(Term::Float(v)))
    }
    fn visit_char<E: de::Error>(self, v: char) -> Result<Piece, E> {
        Ok(Piece::Term(Term::Int(i64::from(u32::from(v)))))
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Piece, E> {
        Ok(Piece::Term(Term::Atom(atom(v)?)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Piece, E> {
        let a = atom(v)?;
        Ok(if self.key {
            Piece::Tag2(a)
        } else {
            Piece::Term(Term::Atom(a))
        })
    }
    fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Piece, E> {
        Ok(Piece::Term(Term::Binary(v.to_vec())))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Piece, E> {
        if self.key {
            let s = std::str::from_utf8(v).map_err(E::custom)?;
            Ok(Piece::TagN(atom(s)?))
        } else {
            Ok(Piece::Term(Term::Binary(v.to_vec())))
        }
    }
    fn visit_none<E: de::Error>(self) -> Result<Piece, E> {
        Ok(Piece::Term(Term::atom("undefined")))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Piece, E> {
        Ok(Piece::Term(Term::atom("ok")))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Piece, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Piece, D::Error> {
        d.deserialize_any(RawVisitor).map(Piece::Term)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Piece, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(t) = seq.next_element_seed(TermSeed)? {
            items.push(t);
        }
        Ok(Piece::Term(Term::List(items)))
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Piece, A::Error> {
        let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(0).min(4096));
        match map.next_key_seed(ContentVisitor { key: true })? {
            None => return Ok(Piece::Term(Term::Map(pairs))),
            Some(Piece::Tag2(tag)) => {
                let v = map.next_value_seed(TermSeed)?;
                return Ok(Piece::Term(Term::Tuple(vec![Term::Atom(tag), v])));
            }
            Some(Piece::TagN(tag)) => {
                let rest = match map.next_value_seed(TermSeed)? {
                    Term::List(rest) => rest,
                    other => vec![other],
                };
                let mut items = Vec::with_capacity(rest.len() + 1);
                items.push(Term::Atom(tag));
                items.extend(rest);
                return Ok(Piece::Term(Term::Tuple(items)));
            }
            Some(Piece::Term(k)) => {
                let v = map.next_value_seed(TermSeed)?;
                pairs.push((k, v));
            }
        }
        while let Some(k) = map.next_key_seed(TermSeed)? {
            let v = map.next_value_seed(TermSeed)?;
            pairs.push((k, v));
        }
        Ok(Piece::Term(Term::Map(pairs)))
    }
}

/// Inside the newtype(s) `deserialize_any` wraps raw terms in: the encoding.
struct RawVisitor;

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Term;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a raw term's encoding")
    }
    fn visit_bytes<E: de::Error>(self, b: &[u8]) -> Result<Term, E> {
        decode_term_body(b).map_err(E::custom)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Term, D::Error> {
        d.deserialize_any(RawVisitor)
    }
}
