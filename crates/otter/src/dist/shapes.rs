//! Ready types for the shapes Erlang APIs return, so that a reply or a message needs
//! no hand-made enum for them.
//!
//! | Erlang | Rust | |
//! |---|---|---|
//! | `ok` | `()` | the [`etf`](crate::dist::etf) mapping's unit (decodes only from `ok`) |
//! | `{ok, T} \| {error, E}` | [`OkError<T, E>`] | a `Result<T, E>` |
//! | `ok \| {error, E}` | [`OkOrError<E>`] | a `Result<(), E>` (`file:write/2`'s shape) |
//! | `{Tag, T}`, any atom `Tag` | [`Tagged<T>`] | the tag kept as an [`Atom`] |
//! | `{tag, A, B}`, a known `tag` | a serde enum variant `Tag(A, B)` | `#[serde(rename_all = "snake_case")]` |
//! | `<<...>>`, a binary | [`Binary`] | a `Vec<u8>` (a plain `Vec<u8>` is a serde seq: it encodes as a list of bytes, twice the size, and Erlang takes it as a list) |
//!
//! ```
//! use otter::dist::etf::{self, Term};
//! use otter::dist::shapes::{OkError, OkOrError, Tagged};
//!
//! let ok: OkError<u32, Term> = OkError(Ok(7));
//! assert_eq!(etf::from_slice::<Term>(&etf::to_vec(&ok).unwrap()).unwrap().to_string(), "{ok,7}");
//! let bytes = etf::to_vec(&Term::tuple(vec![Term::atom("error"), Term::atom("enoent")])).unwrap();
//! let r: OkOrError<Term> = etf::from_slice(&bytes).unwrap();
//! assert_eq!(r.0, Err(Term::atom("enoent")));
//! let t = Tagged::new("reply", 1u8);
//! assert_eq!(etf::from_slice::<Term>(&etf::to_vec(&t).unwrap()).unwrap().to_string(), "{reply,1}");
//! ```
//!
//! With formats other than ETF the two result types are externally tagged enums
//! (`{"ok": T}` in JSON), and `Tagged` a pair.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, EnumAccess, VariantAccess, Visitor};
use serde::ser::{Serialize, SerializeTuple, Serializer};

use crate::dist::etf::Atom;

/// Erlang's `{ok, T} | {error, E}`: a `Result<T, E>` that encodes `Ok(t)` as `{ok, T}`
/// and `Err(e)` as `{error, E}` (and decodes only from those).
///
/// ```
/// use otter::dist::etf;
/// use otter::dist::shapes::OkError;
/// let r: OkError<i32, String> = OkError(Err("no".into()));
/// let back: OkError<i32, String> = etf::from_slice(&etf::to_vec(&r).unwrap()).unwrap();
/// assert_eq!(back.0, Err("no".to_string()));
/// assert_eq!(Result::from(back), Err("no".to_string()));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OkError<T, E>(pub Result<T, E>);

/// Erlang's `ok | {error, E}`: a `Result<(), E>` that encodes `Ok(())` as `ok` and
/// `Err(e)` as `{error, E}` (and decodes only from those).
///
/// ```
/// use otter::dist::etf::{self, Term};
/// use otter::dist::shapes::OkOrError;
/// let ok: OkOrError<Term> = OkOrError(Ok(()));
/// assert_eq!(etf::to_vec(&ok).unwrap(), etf::to_vec(&Term::atom("ok")).unwrap());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OkOrError<E>(pub Result<(), E>);

/// A tagged pair `{Tag, T}` whose tag is any atom (for a known set of tags, a serde
/// enum says more).
///
/// ```
/// use otter::dist::etf::{self, Term};
/// use otter::dist::shapes::Tagged;
/// let bytes = etf::to_vec(&Term::tuple(vec![Term::atom("temp"), Term::from(21)])).unwrap();
/// let t: Tagged<i64> = etf::from_slice(&bytes).unwrap();
/// assert_eq!((t.tag.as_str(), t.value), ("temp", 21));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Tagged<T> {
    /// The first element.
    pub tag: Atom,
    /// The second.
    pub value: T,
}

impl<T> Tagged<T> {
    /// `{Tag, Value}`.
    ///
    /// # Panics
    ///
    /// If `tag` is longer than an atom may be ([`MAX_ATOM_CHARS`](crate::dist::etf::MAX_ATOM_CHARS)).
    ///
    /// See [`Tagged`] for an example.
    pub fn new(tag: &str, value: T) -> Tagged<T> {
        Tagged {
            tag: Atom::new(tag),
            value,
        }
    }
}

// ===== impl From =====

impl<T, E> From<Result<T, E>> for OkError<T, E> {
    fn from(r: Result<T, E>) -> Self {
        OkError(r)
    }
}

impl<T, E> From<OkError<T, E>> for Result<T, E> {
    fn from(r: OkError<T, E>) -> Self {
        r.0
    }
}

impl<E> From<Result<(), E>> for OkOrError<E> {
    fn from(r: Result<(), E>) -> Self {
        OkOrError(r)
    }
}

impl<E> From<OkOrError<E>> for Result<(), E> {
    fn from(r: OkOrError<E>) -> Self {
        r.0
    }
}

// ===== impl Serialize =====

const OK_ERROR: &str = "OkError";
const OK_OR_ERROR: &str = "OkOrError";
const VARIANTS: &[&str] = &["ok", "error"];

impl<T: Serialize, E: Serialize> Serialize for OkError<T, E> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Ok(t) => s.serialize_newtype_variant(OK_ERROR, 0, "ok", t),
            Err(e) => s.serialize_newtype_variant(OK_ERROR, 1, "error", e),
        }
    }
}

impl<E: Serialize> Serialize for OkOrError<E> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Ok(()) => s.serialize_unit_variant(OK_OR_ERROR, 0, "ok"),
            Err(e) => s.serialize_newtype_variant(OK_OR_ERROR, 1, "error", e),
        }
    }
}

impl<T: Serialize> Serialize for Tagged<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut t = s.serialize_tuple(2)?;
        t.serialize_element(&self.tag)?;
        t.serialize_element(&self.value)?;
        t.end()
    }
}

// ===== impl Deserialize =====

/// The tag of `ok`/`error`.
enum Tag {
    Ok,
    Error,
}

impl<'de> Deserialize<'de> for Tag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Tag, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Tag;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("ok or error")
            }
            fn visit_str<Er: de::Error>(self, s: &str) -> Result<Tag, Er> {
                match s {
                    "ok" => Ok(Tag::Ok),
                    "error" => Ok(Tag::Error),
                    other => Err(Er::unknown_variant(other, VARIANTS)),
                }
            }
            fn visit_bytes<Er: de::Error>(self, b: &[u8]) -> Result<Tag, Er> {
                match b {
                    b"ok" => Ok(Tag::Ok),
                    b"error" => Ok(Tag::Error),
                    other => Err(Er::unknown_variant(
                        &String::from_utf8_lossy(other),
                        VARIANTS,
                    )),
                }
            }
            fn visit_u64<Er: de::Error>(self, n: u64) -> Result<Tag, Er> {
                match n {
                    0 => Ok(Tag::Ok),
                    1 => Ok(Tag::Error),
                    _ => Err(Er::invalid_value(de::Unexpected::Unsigned(n), &self)),
                }
            }
        }
        d.deserialize_identifier(V)
    }
}

impl<'de, T: Deserialize<'de>, E: Deserialize<'de>> Deserialize<'de> for OkError<T, E> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T, E>(PhantomData<(T, E)>);
        impl<'de, T: Deserialize<'de>, E: Deserialize<'de>> Visitor<'de> for V<T, E> {
            type Value = OkError<T, E>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("{ok, T} or {error, E}")
            }
            fn visit_enum<A: EnumAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
                match a.variant()? {
                    (Tag::Ok, v) => v.newtype_variant().map(|t| OkError(Ok(t))),
                    (Tag::Error, v) => v.newtype_variant().map(|e| OkError(Err(e))),
                }
            }
        }
        d.deserialize_enum(OK_ERROR, VARIANTS, V(PhantomData))
    }
}

impl<'de, E: Deserialize<'de>> Deserialize<'de> for OkOrError<E> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<E>(PhantomData<E>);
        impl<'de, E: Deserialize<'de>> Visitor<'de> for V<E> {
            type Value = OkOrError<E>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("ok or {error, E}")
            }
            fn visit_enum<A: EnumAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
                match a.variant()? {
                    (Tag::Ok, v) => v.unit_variant().map(|()| OkOrError(Ok(()))),
                    (Tag::Error, v) => v.newtype_variant().map(|e| OkOrError(Err(e))),
                }
            }
        }
        d.deserialize_enum(OK_OR_ERROR, VARIANTS, V(PhantomData))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Tagged<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (tag, value) = <(Atom, T)>::deserialize(d)?;
        Ok(Tagged { tag, value })
    }
}

/// An Erlang binary (`BINARY_EXT`): bytes that encode as a binary and decode from one
/// (or from a list of bytes). A plain `Vec<u8>` is a serde sequence, so it encodes as
/// an Erlang list of bytes, twice the size on the wire and a list to Erlang; large
/// messages of bytes want this type.
///
/// ```
/// use otter::dist::etf::{self, Term};
/// use otter::dist::shapes::Binary;
/// let b = Binary(vec![1, 2, 3]);
/// let bytes = etf::to_vec(&b).unwrap();
/// assert_eq!(etf::from_slice::<Term>(&bytes).unwrap(), Term::Binary(vec![1, 2, 3]));
/// assert_eq!(etf::from_slice::<Binary>(&bytes).unwrap(), b);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Binary(pub Vec<u8>);

impl From<Vec<u8>> for Binary {
    fn from(v: Vec<u8>) -> Binary {
        Binary(v)
    }
}

impl From<Binary> for Vec<u8> {
    fn from(b: Binary) -> Vec<u8> {
        b.0
    }
}

impl Serialize for Binary {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for Binary {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Binary, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Binary;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a binary")
            }
            fn visit_bytes<E: de::Error>(self, b: &[u8]) -> Result<Binary, E> {
                Ok(Binary(b.to_vec()))
            }
            fn visit_byte_buf<E: de::Error>(self, b: Vec<u8>) -> Result<Binary, E> {
                Ok(Binary(b))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Binary, A::Error> {
                let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 16));
                while let Some(b) = seq.next_element::<u8>()? {
                    v.push(b);
                }
                Ok(Binary(v))
            }
        }
        d.deserialize_byte_buf(V)
    }
}
