//! Erlang's External Term Format (ETF, `term_to_binary`'s bytes), with a serde
//! mapping.
//!
//! Two ways in:
//!
//! - **serde**, the fast path: [`to_vec`] / [`encode_into`] write a `Serialize`
//!   value straight to bytes, [`from_slice`] / [`from_prefix`] read a
//!   `Deserialize` value straight from the slice (borrowing `&str` and `&[u8]`
//!   where the target allows); no [`Term`] tree in between.
//! - **[`Term`]**, a tree of any Erlang term: [`Term::encode`], [`Term::decode`],
//!   [`Term::decode_prefix`]; and without the version byte, for code that
//!   composes encodings, [`encode_term_body`] and [`decode_term_body`].
//!
//! [`skip_prefix`] validates and measures one term without building anything.
//! Every function that takes bytes with a "131" reads (or writes) the version
//! byte 131 first; the `*_body` ones do not.
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use otter_dist::etf;
//!
//! #[derive(Serialize, Deserialize, Debug, PartialEq)]
//! #[serde(rename_all = "snake_case")]
//! enum Request {
//!     Get { key: String },
//!     Put(String, i64),
//!     Stop,
//! }
//!
//! let bytes = etf::to_vec(&Request::Put("a".into(), 1)).unwrap();
//! // {put, <<"a">>, 1}
//! assert_eq!(bytes, [131, 104, 3, 119, 3, b'p', b'u', b't', 109, 0, 0, 0, 1, b'a', 97, 1]);
//! assert_eq!(etf::from_slice::<Request>(&bytes).unwrap(), Request::Put("a".into(), 1));
//! ```
//!
//! # The serde mapping
//!
//! | Rust (serde data model) | Erlang term | Notes |
//! |---|---|---|
//! | `bool` | `true` / `false` | atoms |
//! | `i8`..`i128`, `u8`..`u128` | integer | smallest encoding: `SMALL_INTEGER_EXT`, `INTEGER_EXT`, `SMALL_BIG_EXT`. Decoding a value the target cannot hold is an error, never a wrap. |
//! | `char` | integer | the code point |
//! | `f32`, `f64` | float | `NEW_FLOAT_EXT`; decoding also reads `FLOAT_EXT` and integers |
//! | `str`, `String` | binary (UTF-8) | decoding also reads a charlist (`STRING_EXT`, a list of code points, `[]`) and an atom; invalid UTF-8 is an error |
//! | bytes (`serialize_bytes`) | binary | decoding also reads `STRING_EXT` and a list of bytes |
//! | seq (`Vec<T>`, ...) | proper list | a list of bytes is written as `STRING_EXT`, as Erlang does; decoding also reads a binary or `STRING_EXT` as a seq of `u8` (so `Vec<u8>` reads a binary), and a tuple |
//! | `Option<T>` | `undefined` / the value | `Some(x)` is `x`: `Some(None)` does not round-trip |
//! | `()` | `ok` | gen_server's usual reply |
//! | unit struct `Foo` | `'Foo'` | the name verbatim |
//! | newtype struct `N(x)` | `x` | |
//! | tuple, tuple struct | tuple | decoding also reads a list of the right length |
//! | map | map | any term can be a key |
//! | struct | map with atom keys | field names verbatim; decoding also reads binary keys; unknown keys are skipped unless the struct has `deny_unknown_fields` |
//! | unit variant `V` | `'V'` | |
//! | newtype variant `V(x)` | `{'V', x}` | |
//! | tuple variant `V(a, b)` | `{'V', a, b}` | flat |
//! | struct variant `V { a, b }` | `{'V', #{a => .., b => ..}}` | |
//! | [`Term`], [`Atom`], [`ExternalPid`], [`ExternalRef`], [`ExternalPort`] | themselves | through the [`RAW_TERM`] hook: exact |
//!
//! Names (struct fields, variants, unit structs) are used verbatim: Rust's
//! `Stop` is the atom `'Stop'`. Write `#[serde(rename_all = "snake_case")]` to get
//! Erlang's `stop`.
//!
//! Enums decode from an atom (a unit variant) or from a tuple whose first
//! element is an atom: one more element is a newtype variant (or, if it is a
//! map, a struct variant), more are a tuple variant.
//!
//! ## `deserialize_any` (self-describing targets)
//!
//! What `serde_json::Value`, `#[serde(untagged)]` and `#[serde(flatten)]` see:
//!
//! | Erlang term | serde event |
//! |---|---|
//! | `true`, `false` | bool |
//! | `undefined` | none |
//! | other atoms | str |
//! | integers that fit `i64`/`u64` | i64 / u64 |
//! | floats | f64 |
//! | binaries | bytes |
//! | proper lists (and `STRING_EXT`) | seq |
//! | maps | map |
//! | `{Tag, X}` with `Tag` an atom | a map of one entry: `Tag` (an owned string) => `X` |
//! | `{Tag, X, Y, ...}` with `Tag` an atom | a map of one entry: `Tag` (owned bytes) => seq `[X, Y, ...]` |
//! | anything else: pids, refs, ports, funs, bitstrings, improper lists, integers beyond 64 bits, tuples that do not start with an atom (`{}`, `{1, 2}`, `{a}`) | a newtype struct around a newtype struct around the term's encoding (bytes, no version byte) |
//!
//! The tagged-tuple rows make serde's buffered enums work: an externally tagged
//! enum with a `#[serde(untagged)]` catch-all variant, the way a process receives
//! "known messages, or anything":
//!
//! ```
//! use serde::Deserialize;
//! use otter_dist::etf::{self, Term};
//!
//! #[derive(Deserialize, Debug, PartialEq)]
//! enum Msg {
//!     #[serde(rename = "ping")]
//!     Ping(u32),
//!     #[serde(untagged)]
//!     Other(Term),
//! }
//! let ping = etf::to_vec(&Term::tuple(vec![Term::atom("ping"), Term::from(7)])).unwrap();
//! assert_eq!(etf::from_slice::<Msg>(&ping).unwrap(), Msg::Ping(7));
//! let other = Term::tuple(vec![Term::atom("pong"), Term::from(1), Term::from("x")]);
//! let bytes = etf::to_vec(&other).unwrap();
//! assert_eq!(etf::from_slice::<Msg>(&bytes).unwrap(), Msg::Other(other));
//! ```
//!
//! [`Term`]'s `Deserialize` rebuilds the term from those events (str → atom,
//! bytes → binary, the one-entry maps → tuples, the newtypes → their encoding),
//! so a `Term` inside serde's buffer comes out as it went in, with one known
//! loss: a map of one entry whose key is an atom with non-ASCII characters
//! written in the old Latin-1 encodings (`ATOM_EXT`/`SMALL_ATOM_EXT`, which
//! OTP 26 and later no longer write) comes out as a 2-tuple. A typed target in
//! an untagged variant sees the events above: `(i32, i32)` cannot be read from
//! `{1, 2}` there (it is raw), `String` reads a binary, `HashMap` reads a map.
//! To tell a proper list from an improper one, `deserialize_any` looks ahead to
//! a list's tail before visiting it; that walk records which lists nested in it
//! are improper, so each byte is walked once and decoding stays linear in the
//! input (`de/lists.rs`). The typed paths do not look ahead.
//!
//! ## The raw-term hook
//!
//! [`RAW_TERM`] is the name of a newtype struct that carries one term's
//! encoding (no version byte) as bytes. The serializer writes such bytes
//! verbatim (after checking that they are exactly one term); the deserializer,
//! asked for a newtype struct of that name, hands over the exact encoding of the
//! next term (`visit_borrowed_bytes`) and moves past it. [`serialize_raw_term`]
//! and [`deserialize_raw_term`] are the two halves, for types that are terms of
//! their own (otter's pids). With other formats (serde_json, ...) these types
//! serialize as a newtype around bytes (their ETF encoding); reading them back
//! from such a format is not supported.
//!
//! # Bounds (the input is untrusted)
//!
//! Decoding never panics, whatever the bytes, and never allocates more than the
//! input can back: a length field is checked against the remaining input before
//! anything is reserved (a list may claim at most one element per remaining
//! byte, a map one pair per two), and a [`Term`] tree reserves at most 1024
//! elements ahead and grows with what actually arrives (serde's collections
//! bound their own reservations the same way).
//! Nesting (lists, tuples, maps, enums) deeper than [`MAX_DEPTH`] is an error
//! ([`DecodeError::TooDeep`]) in the paths that build values ([`Term::decode`],
//! serde), so hostile nesting cannot exhaust the stack; [`skip_prefix`], which
//! builds nothing, walks a term of any depth without recursing (a node's reader
//! uses it to find a message's end, so a message nested too deeply for its
//! receiver is refused alone, not with its connection). An atom has at most [`MAX_ATOM_CHARS`] characters,
//! as in Erlang. otter has no global atom table: an atom from the wire is a
//! value that costs its bytes and is freed with its last clone, so atoms from
//! the network cannot exhaust anything.
//!
//! Refused tags, each a [`DecodeError::UnsupportedTag`]: `COMPRESSED` (80),
//! `ATOM_CACHE_REF` (82: it only means something after a distribution header
//! with an atom cache, which otter does not negotiate), `LOCAL_EXT` (121) and
//! the long-gone `FUN_EXT` (117). Funs (`NEW_FUN_EXT`, `EXPORT_EXT`) are kept
//! whole as [`Term::Fun`] and re-encoded verbatim; the serde mapping has no type
//! for them beyond [`Term`].
//!
//! # Errors
//!
//! [`DecodeError`] says what is wrong and at which byte offset (counted from
//! the start of the slice given, version byte included); [`EncodeError`] covers
//! what a value can do wrong (a `Serialize` impl's custom error, a name longer
//! than an atom can be, a tuple of the wrong length, a bad raw term).
//! [`Term::encode`] cannot fail: it panics only if a binary, list, tuple or map
//! has more than `u32::MAX` bytes or elements.

mod de;
mod decode;
mod encode;
mod error;
mod read;
mod ser;
mod serde_impls;
mod tags;
mod term;

pub use error::{DecodeError, EncodeError};
pub use serde_impls::{deserialize_raw_term, serialize_raw_term};
pub use term::{Atom, BigInt, BigIntOutOfRange, ExternalPid, ExternalPort, ExternalRef, Term};

use read::Reader;

/// The name of the raw-term newtype struct (see the module doc's "raw-term hook").
pub const RAW_TERM: &str = "$otter::etf::RawTerm";

/// One term's encoding (131 included), read through the [`RAW_TERM`] hook, decoding
/// nothing: what a connection hands on whole (an erpc call's arguments, a `gen_server`
/// request kept for an error reply).
#[derive(Debug)]
pub struct Raw(pub Vec<u8>);

impl<'de> serde::Deserialize<'de> for Raw {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Raw, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Raw;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a term")
            }
            fn visit_bytes<E: serde::de::Error>(self, b: &[u8]) -> Result<Raw, E> {
                let mut v = Vec::with_capacity(b.len() + 1);
                v.push(131);
                v.extend_from_slice(b);
                Ok(Raw(v))
            }
            fn visit_newtype_struct<D: serde::Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<Raw, D::Error> {
                d.deserialize_any(self)
            }
        }
        d.deserialize_newtype_struct(RAW_TERM, V)
    }
}

/// How deeply terms may nest (a list in a list in a tuple ... counts each
/// level) before decoding refuses the input.
///
/// Decoding recurses, so this bounds its stack: at the limit, the deepest path
/// (a `#[serde(untagged)]` enum, which serde buffers) takes under 1 MiB of
/// stack in a debug build (measured; much less in release), within the 2 MiB a
/// spawned thread (an otter worker) has. Real messages nest a few levels;
/// Erlang's balanced trees (`gb_trees`) some forty for a trillion keys.
pub const MAX_DEPTH: usize = 128;

/// The most characters an atom may have (Erlang's limit).
pub const MAX_ATOM_CHARS: usize = 255;

/// The most words a reference may have.
pub const MAX_REF_WORDS: usize = 5;

/// Encodes `value` as the version byte 131 and one term.
///
/// ```
/// assert_eq!(otter_dist::etf::to_vec(&(true, 1u8)).unwrap(),
///            [131, 104, 2, 119, 4, b't', b'r', b'u', b'e', 97, 1]);
/// ```
pub fn to_vec<T: serde::Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, EncodeError> {
    let mut out = Vec::new();
    encode_into(value, &mut out)?;
    Ok(out)
}

/// Appends the version byte 131 and `value`'s encoding to `out` (a reused
/// buffer, say). On error `out` is left as it was.
pub fn encode_into<T: serde::Serialize + ?Sized>(
    value: &T,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    let start = out.len();
    out.push(tags::VERSION);
    let r = value.serialize(&mut ser::Serializer { out: &mut *out });
    if r.is_err() {
        out.truncate(start);
    }
    r
}

/// Decodes a value from the version byte 131 and one term that fills `bytes`.
pub fn from_slice<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    let (v, n) = from_prefix(bytes)?;
    if n != bytes.len() {
        return Err(DecodeError::TrailingBytes { offset: n });
    }
    Ok(v)
}

/// Decodes a value from the version byte 131 and one term at the start of
/// `bytes`; returns it and the bytes consumed (a distribution message is a
/// control term followed by a payload term).
pub fn from_prefix<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
) -> Result<(T, usize), DecodeError> {
    let mut r = Reader::new(bytes);
    r.version()?;
    let mut de = de::Deserializer::new(r);
    match T::deserialize(&mut de) {
        Ok(v) => Ok((v, de.r.pos)),
        Err(e) => Err(e.at(de.r.pos)),
    }
}

/// Validates the version byte 131 and one term at the start of `bytes`, without
/// building it, and returns the bytes it takes (version byte included).
///
/// ```
/// let mut bytes = otter_dist::etf::to_vec(&[1, 2, 3]).unwrap();
/// let n = bytes.len();
/// bytes.extend_from_slice(b"rest");
/// assert_eq!(otter_dist::etf::skip_prefix(&bytes), Ok(n));
/// ```
pub fn skip_prefix(bytes: &[u8]) -> Result<usize, DecodeError> {
    let mut r = Reader::new(bytes);
    r.version()?;
    r.skip(0)?;
    Ok(r.pos)
}

/// Appends `term`'s encoding, without the version byte, to `out`.
///
/// # Panics
///
/// As [`Term::encode`].
pub fn encode_term_body(term: &Term, out: &mut Vec<u8>) {
    encode::term(out, term);
}

/// Decodes one term, without a version byte, that fills `bytes`.
pub fn decode_term_body(bytes: &[u8]) -> Result<Term, DecodeError> {
    let mut r = Reader::new(bytes);
    let t = decode::term(&mut r, 0)?;
    if r.pos != bytes.len() {
        return Err(DecodeError::TrailingBytes { offset: r.pos });
    }
    Ok(t)
}

impl Term {
    /// Decodes the version byte 131 and one term that fills `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<Term, DecodeError> {
        let (t, n) = Term::decode_prefix(bytes)?;
        if n != bytes.len() {
            return Err(DecodeError::TrailingBytes { offset: n });
        }
        Ok(t)
    }

    /// Decodes the version byte 131 and one term at the start of `bytes`;
    /// returns it and the bytes consumed.
    pub fn decode_prefix(bytes: &[u8]) -> Result<(Term, usize), DecodeError> {
        let mut r = Reader::new(bytes);
        r.version()?;
        let t = decode::term(&mut r, 0)?;
        Ok((t, r.pos))
    }

    /// Appends the version byte 131 and the term's encoding to `out`.
    ///
    /// Integers take their smallest encoding, atoms `SMALL_ATOM_UTF8_EXT` (or
    /// `ATOM_UTF8_EXT` beyond 255 bytes), lists of bytes `STRING_EXT`, pids
    /// `NEW_PID_EXT`, references `NEWER_REFERENCE_EXT`, ports `NEW_PORT_EXT` (or
    /// `V4_PORT_EXT` for ids beyond 32 bits). The term is written as given: a
    /// hand-built term with impossible parts (a `BitBinary` with `bits` outside
    /// 1..=8, a reference with no words or more than [`MAX_REF_WORDS`], a `Fun`
    /// whose bytes are no fun) encodes to bytes that decoding refuses.
    ///
    /// # Panics
    ///
    /// If a binary, list, tuple or map has more than `u32::MAX` bytes or elements.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(tags::VERSION);
        encode::term(out, self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_counts_beyond_what_the_input_can_hold_are_refused_at_once() {
        // Tuple headers each claiming as many elements as bytes remain: the claims add
        // up to far more terms than the input holds (quadratically many; past 2^32 in
        // a frame of 210 KB). The skip refuses the second header, beside the first's
        // pending claim, instead of counting on to the input's end.
        let mut v = Vec::new();
        for _ in 0..1000 {
            v.push(105); // LARGE_TUPLE_EXT
            v.extend_from_slice(&[0, 0, 0, 0]);
        }
        for i in 0..1000 {
            let at = 5 * i;
            let n = (v.len() - at - 5) as u32;
            v[at + 1..at + 5].copy_from_slice(&n.to_be_bytes());
        }
        let mut r = Reader::new(&v);
        assert!(matches!(r.skip(0), Err(DecodeError::UnexpectedEof { .. })));
        assert_eq!(r.pos, 10, "refused at the second header");
    }

    /// Terms stepped over while `f` decodes (`read::STEPS`).
    fn steps<T>(f: impl FnOnce() -> T) -> (T, u64) {
        read::STEPS.with(|s| s.set(0));
        let v = f();
        (v, read::STEPS.with(std::cell::Cell::get))
    }

    /// `[[[...[1, x]..., [1 | t], 1], [1 | t], 1]`: proper lists `depth` deep, each
    /// holding an improper one beside the next level.
    fn nested_lists(depth: usize) -> Term {
        let mut t = Term::List(vec![Term::Int(1), Term::atom("x")]);
        for _ in 0..depth {
            let improper = Term::ImproperList(vec![Term::Int(1)], Box::new(Term::atom("t")));
            t = Term::List(vec![t, improper, Term::Int(1)]);
        }
        t
    }

    #[test]
    fn decoding_nested_lists_takes_steps_linear_in_their_size() {
        // `deserialize_any` looks ahead to each list's tail: the lists nested in a
        // walked one must not be walked again (de/lists.rs).
        let mut per_term = Vec::new();
        for depth in [10, 40, MAX_DEPTH - 2] {
            let t = nested_lists(depth);
            let bytes = to_vec(&t).unwrap();
            // Untagged: serde buffers the input through `deserialize_any`.
            #[derive(serde::Deserialize, Debug, PartialEq)]
            #[serde(untagged)]
            enum Any {
                Term(Term),
            }
            let (back, n) = steps(|| from_slice::<Any>(&bytes).unwrap());
            assert_eq!(back, Any::Term(t), "depth {depth}");
            let terms = 5 * depth as u64 + 3;
            per_term.push(n as f64 / terms as f64);
            assert!(n <= 4 * terms, "depth {depth}: {n} steps for {terms} terms");
        }
        // Quadratic, the steps per term would grow with the depth (tenfold here).
        eprintln!("steps per term by depth: {per_term:?}");
        assert!(
            per_term[2] <= per_term[0] * 1.5,
            "steps per term by depth: {per_term:?}"
        );
    }

    #[test]
    fn atoms_print_as_erlang_does() {
        for (text, printed) in [
            ("ok", "ok"),
            ("node@host", "node@host"),
            ("a_B9", "a_B9"),
            ("EXIT", "'EXIT'"),
            ("", "''"),
            ("hello world", "'hello world'"),
            ("it's", "'it\\'s'"),
            ("receive", "'receive'"),
            ("9a", "'9a'"),
        ] {
            assert_eq!(Atom::new(text).to_string(), printed);
            assert_eq!(format!("{:?}", Atom::new(text)), printed);
        }
    }

    #[test]
    fn terms_print_as_erlang_does() {
        let t = Term::tuple(vec![
            Term::atom("ok"),
            Term::List(vec![Term::Int(1), Term::Float(2.5)]),
            Term::binary(vec![1, 2]),
            Term::Map(vec![(Term::atom("a"), Term::from("x"))]),
            Term::ImproperList(vec![Term::Int(1)], Box::new(Term::atom("t"))),
            Term::BitBinary {
                bytes: vec![255, 0b1010_0000],
                bits: 3,
            },
            Term::BitBinary {
                bytes: vec![1],
                bits: 0,
            },
        ]);
        assert_eq!(
            t.to_string(),
            "{ok,[1,2.5],<<1,2>>,#{a => <<\"x\">>},[1|t],<<255,5:3>>,<<0:0>>}"
        );
        assert_eq!(
            Term::from(BigInt::from(-(1i128 << 100))).to_string(),
            "-1267650600228229401496703205376"
        );
    }

    #[test]
    fn big_integers_convert_and_compare_by_value() {
        for v in [0i128, 1, -1, i128::MAX, i128::MIN, 1 << 64, -(1 << 64)] {
            assert_eq!(i128::try_from(&BigInt::from(v)), Ok(v));
        }
        assert_eq!(u128::try_from(&BigInt::from(u128::MAX)), Ok(u128::MAX));
        assert!(i128::try_from(&BigInt::from(u128::MAX)).is_err());
        assert!(u128::try_from(&BigInt::from(-1i128)).is_err());
        let padded = BigInt {
            negative: true,
            magnitude: vec![5, 0, 0],
        };
        assert_eq!(padded, BigInt::from(-5i128));
        assert_eq!(Term::BigInt(padded), Term::Int(-5));
        let zero = BigInt {
            negative: true,
            magnitude: vec![0],
        };
        assert_eq!(zero, BigInt::from(0i128));
        let mut out = Vec::new();
        Term::BigInt(zero).encode(&mut out);
        assert_eq!(out, [131, 97, 0]);
    }

    #[test]
    fn byte_lists_become_string_ext() {
        assert_eq!(
            to_vec(&vec![104u8, 105]).unwrap(),
            [131, 107, 0, 2, 104, 105]
        );
        assert_eq!(to_vec(&vec![104, 256]).unwrap()[1], tags::LIST_EXT);
        let long = vec![1u8; 70_000];
        let bytes = to_vec(&long).unwrap();
        assert_eq!(bytes[1], tags::LIST_EXT);
        assert_eq!(from_slice::<Vec<u8>>(&bytes).unwrap(), long);
    }

    #[test]
    fn errors_say_where() {
        assert_eq!(
            Term::decode(&[131, 104, 2, 97]).unwrap_err().to_string(),
            "input ends inside a term at byte 4"
        );
        assert_eq!(
            Term::decode(&[131, 80, 0]).unwrap_err().to_string(),
            "unsupported term tag 80 (COMPRESSED) at byte 1"
        );
        let e = from_slice::<u8>(&[131, 98, 0, 0, 1, 0]).unwrap_err();
        assert_eq!(e.to_string(), "integer out of range for u8 at byte 1");
    }
}
