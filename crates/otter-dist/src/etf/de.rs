//! The serde deserializer: straight from the slice, borrowing strs and bytes.

use std::borrow::Cow;

use serde::de::{self, Visitor};

use super::RAW_TERM;
use super::error::DecodeError;
use super::read::{Int, Reader, latin1};
use super::tags::*;
use super::term::mag_to_u128;

mod access;
mod lists;

use access::{BytesSeq, Elements, Enum, Pairs, RawNewtype, TaggedTuple};
use lists::Properness;

type Result<T> = std::result::Result<T, DecodeError>;

/// Reads one term (no version byte) for a `Deserialize` implementation.
#[derive(Debug)]
pub struct Deserializer<'de> {
    pub r: Reader<'de>,
    depth: usize,
    /// What `deserialize_any`'s look-ahead learnt of the lists ahead (`lists.rs`).
    lists: Properness,
}

impl<'de> Deserializer<'de> {
    pub fn new(r: Reader<'de>) -> Self {
        Deserializer {
            r,
            depth: 0,
            lists: Properness::default(),
        }
    }

    fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        self.r.depth(self.depth)
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    fn mismatch(&self, expected: &'static str) -> DecodeError {
        self.r.mismatch(self.r.pos, expected)
    }

    fn custom(&self, at: usize, message: String) -> DecodeError {
        DecodeError::Custom {
            offset: Some(at),
            message,
        }
    }

    /// An integer as sign and magnitude, or an error if it exceeds 128 bits.
    fn int(&mut self, target: &'static str) -> Result<(usize, bool, u128)> {
        let at = self.r.pos;
        match self.r.int()? {
            Int::Small(v) => Ok((at, v < 0, u128::from(v.unsigned_abs()))),
            Int::Big { negative, mag } => match mag_to_u128(mag) {
                Some(m) => Ok((at, negative && m != 0, m)),
                None => Err(DecodeError::IntegerOutOfRange { offset: at, target }),
            },
        }
    }

    fn signed(&mut self, target: &'static str) -> Result<(usize, i128)> {
        let (at, neg, m) = self.int(target)?;
        let v = if neg {
            if m > 1u128 << 127 {
                None
            } else {
                Some(0i128.wrapping_sub_unsigned(m))
            }
        } else {
            i128::try_from(m).ok()
        };
        v.map(|v| (at, v))
            .ok_or(DecodeError::IntegerOutOfRange { offset: at, target })
    }

    fn unsigned(&mut self, target: &'static str) -> Result<(usize, u128)> {
        let (at, neg, m) = self.int(target)?;
        if neg {
            Err(DecodeError::IntegerOutOfRange { offset: at, target })
        } else {
            Ok((at, m))
        }
    }

    /// Reads an atom if the next term is one.
    fn peek_atom(&self) -> Option<Cow<'de, str>> {
        if self.r.at_atom() {
            self.r.clone().atom().ok()
        } else {
            None
        }
    }

    /// Reads a count that must be coverable by the remaining input (`per` bytes each at least).
    fn count(&mut self, n: usize, per: usize) -> Result<usize> {
        if n > self.r.remaining() / per {
            Err(self.r.eof())
        } else {
            Ok(n)
        }
    }

    /// Visits `n` elements as a seq, one level down; all must be consumed.
    fn visit_elements<V: Visitor<'de>>(&mut self, n: usize, visitor: V) -> Result<V::Value> {
        let at = self.r.pos;
        self.enter()?;
        let mut acc = Elements { de: self, left: n };
        let v = visitor.visit_seq(&mut acc)?;
        let left = acc.left;
        if left != 0 {
            return Err(self.custom(at, format!("{left} elements left over")));
        }
        self.leave();
        Ok(v)
    }

    /// Checks that a list's tail (next) is `[]`.
    fn nil_tail(&mut self) -> Result<()> {
        let at = self.r.pos;
        if self.r.u8()? == NIL_EXT {
            Ok(())
        } else {
            Err(DecodeError::UnexpectedType {
                offset: at,
                expected: "a proper list",
                found: "an improper list",
            })
        }
    }

    /// A charlist's text (the list header read, `n` elements to go).
    fn charlist(&mut self, n: usize) -> Result<String> {
        let n = self.count(n, 2)?;
        let mut s = String::with_capacity(n);
        for _ in 0..n {
            let (at, c) = self.unsigned("char")?;
            let c = u32::try_from(c).ok().and_then(char::from_u32).ok_or(
                DecodeError::IntegerOutOfRange {
                    offset: at,
                    target: "char",
                },
            )?;
            s.push(c);
        }
        self.nil_tail()?;
        Ok(s)
    }

    /// Whether the list whose header is at `at` is proper (header read, `n` elements,
    /// reader unmoved): from the record of an earlier look-ahead, or by walking it
    /// (`lists.rs`: each byte is walked once).
    fn list_is_proper(&mut self, at: usize, n: usize) -> Result<bool> {
        // The deserializer could not enter it: refused before any walk.
        self.r.depth(self.depth + 1)?;
        match self.lists.known(at) {
            Some(proper) => Ok(proper),
            None => self.lists.walk(self.r, at, n, self.depth),
        }
    }

    /// Hands the next term's encoding over wrapped twice in a newtype (see the
    /// module doc: how `deserialize_any` passes what serde has no word for).
    fn visit_raw_any<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        let raw = self.r.raw(self.depth)?;
        visitor.visit_newtype_struct(RawNewtype { raw, inner: true })
    }
}

macro_rules! signed {
    ($($method:ident $ty:ident $visit:ident),*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
            let (at, v) = self.signed(stringify!($ty))?;
            let v = $ty::try_from(v).map_err(|_| DecodeError::IntegerOutOfRange {
                offset: at,
                target: stringify!($ty),
            })?;
            visitor.$visit(v)
        }
    )*};
}

macro_rules! unsigned {
    ($($method:ident $ty:ident $visit:ident),*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
            let (at, v) = self.unsigned(stringify!($ty))?;
            let v = $ty::try_from(v).map_err(|_| DecodeError::IntegerOutOfRange {
                offset: at,
                target: stringify!($ty),
            })?;
            visitor.$visit(v)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for &mut Deserializer<'de> {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        // A dispatcher: each kind is read out of line, so that the recursive
        // path's frames stay small.
        match self.r.peek()? {
            ATOM_EXT | SMALL_ATOM_EXT | ATOM_UTF8_EXT | SMALL_ATOM_UTF8_EXT => {
                self.any_atom(visitor)
            }
            SMALL_INTEGER_EXT | INTEGER_EXT | SMALL_BIG_EXT | LARGE_BIG_EXT => {
                self.any_int(visitor)
            }
            NEW_FLOAT_EXT | FLOAT_EXT => visitor.visit_f64(self.r.float()?),
            BINARY_EXT => self.deserialize_bytes(visitor),
            NIL_EXT | STRING_EXT | LIST_EXT => self.any_list(visitor),
            SMALL_TUPLE_EXT | LARGE_TUPLE_EXT => self.any_tuple(visitor),
            MAP_EXT => self.deserialize_map(visitor),
            _ => self.visit_raw_any(visitor),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.peek_atom().as_deref() {
            Some("true") => {
                self.r.atom()?;
                visitor.visit_bool(true)
            }
            Some("false") => {
                self.r.atom()?;
                visitor.visit_bool(false)
            }
            _ => {
                // An atom error (bad UTF-8, too long) is more useful than a mismatch.
                if self.r.at_atom() {
                    self.r.clone().atom()?;
                }
                Err(self.custom(self.r.pos, "expected the atom true or false".into()))
            }
        }
    }

    signed!(deserialize_i8 i8 visit_i8, deserialize_i16 i16 visit_i16, deserialize_i32 i32 visit_i32,
        deserialize_i64 i64 visit_i64, deserialize_i128 i128 visit_i128);
    unsigned!(deserialize_u8 u8 visit_u8, deserialize_u16 u16 visit_u16, deserialize_u32 u32 visit_u32,
        deserialize_u64 u64 visit_u64, deserialize_u128 u128 visit_u128);

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.r.peek()? {
            SMALL_INTEGER_EXT | INTEGER_EXT | SMALL_BIG_EXT | LARGE_BIG_EXT => {
                let (_, neg, m) = self.int("f64")?;
                #[allow(clippy::cast_precision_loss)]
                let v = m as f64;
                visitor.visit_f64(if neg { -v } else { v })
            }
            _ => visitor.visit_f64(self.r.float()?),
        }
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let (at, c) = self.unsigned("char")?;
        let c = u32::try_from(c).ok().and_then(char::from_u32).ok_or(
            DecodeError::IntegerOutOfRange {
                offset: at,
                target: "char",
            },
        )?;
        visitor.visit_char(c)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let at = self.r.pos;
        match self.r.peek()? {
            BINARY_EXT => {
                self.r.u8()?;
                let n = self.r.len32()?;
                let bytes = self.r.take(n)?;
                let s = std::str::from_utf8(bytes)
                    .map_err(|_| DecodeError::InvalidUtf8 { offset: at })?;
                visitor.visit_borrowed_str(s)
            }
            ATOM_EXT | SMALL_ATOM_EXT | ATOM_UTF8_EXT | SMALL_ATOM_UTF8_EXT => {
                match self.r.atom()? {
                    Cow::Borrowed(s) => visitor.visit_borrowed_str(s),
                    Cow::Owned(s) => visitor.visit_string(s),
                }
            }
            NIL_EXT => {
                self.r.u8()?;
                visitor.visit_borrowed_str("")
            }
            STRING_EXT => {
                self.r.u8()?;
                let n = usize::from(self.r.u16()?);
                match latin1(self.r.take(n)?) {
                    Cow::Borrowed(s) => visitor.visit_borrowed_str(s),
                    Cow::Owned(s) => visitor.visit_string(s),
                }
            }
            LIST_EXT => {
                self.r.u8()?;
                let n = self.r.len32()?;
                let s = self.charlist(n)?;
                visitor.visit_string(s)
            }
            _ => Err(self.mismatch("a string (binary, charlist or atom)")),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.r.peek()? {
            BINARY_EXT => {
                self.r.u8()?;
                let n = self.r.len32()?;
                visitor.visit_borrowed_bytes(self.r.take(n)?)
            }
            STRING_EXT => {
                self.r.u8()?;
                let n = usize::from(self.r.u16()?);
                visitor.visit_borrowed_bytes(self.r.take(n)?)
            }
            NIL_EXT => {
                self.r.u8()?;
                visitor.visit_borrowed_bytes(&[])
            }
            LIST_EXT => {
                self.r.u8()?;
                let n = self.r.len32()?;
                let n = self.count(n, 2)?;
                let mut v = Vec::with_capacity(n);
                for _ in 0..n {
                    v.push(self.deserialize_u8_value()?);
                }
                self.nil_tail()?;
                visitor.visit_byte_buf(v)
            }
            _ => Err(self.mismatch("a binary")),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if self.peek_atom().as_deref() == Some("undefined") {
            self.r.atom()?;
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if self.peek_atom().as_deref() == Some("ok") {
            self.r.atom()?;
            visitor.visit_unit()
        } else {
            Err(self.custom(self.r.pos, "expected the atom ok (unit)".into()))
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        if self.peek_atom().as_deref() == Some(name) {
            self.r.atom()?;
            visitor.visit_unit()
        } else {
            Err(self.custom(self.r.pos, format!("expected the atom {name}")))
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        if name == RAW_TERM {
            let raw = self.r.raw(self.depth)?;
            visitor.visit_borrowed_bytes(raw)
        } else {
            visitor.visit_newtype_struct(self)
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let tag = self.r.peek()?;
        match tag {
            NIL_EXT => {
                self.r.u8()?;
                self.visit_elements(0, visitor)
            }
            LIST_EXT => {
                self.r.u8()?;
                let n = self.r.len32()?;
                let n = self.count(n, 1)?;
                let v = self.visit_elements(n, visitor)?;
                self.nil_tail()?;
                Ok(v)
            }
            STRING_EXT | BINARY_EXT => {
                self.r.u8()?;
                let n = if tag == STRING_EXT {
                    usize::from(self.r.u16()?)
                } else {
                    self.r.len32()?
                };
                let bytes = self.r.take(n)?;
                let mut seq = BytesSeq(bytes.iter());
                let v = visitor.visit_seq(&mut seq)?;
                if seq.0.len() != 0 {
                    return Err(self.custom(self.r.pos, "bytes left over".into()));
                }
                Ok(v)
            }
            SMALL_TUPLE_EXT | LARGE_TUPLE_EXT => {
                self.r.u8()?;
                let n = if tag == SMALL_TUPLE_EXT {
                    usize::from(self.r.u8()?)
                } else {
                    self.r.len32()?
                };
                let n = self.count(n, 1)?;
                self.visit_elements(n, visitor)
            }
            _ => Err(self.mismatch("a list")),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value> {
        let at = self.r.pos;
        let tag = self.r.peek()?;
        match tag {
            SMALL_TUPLE_EXT | LARGE_TUPLE_EXT => {
                self.r.u8()?;
                let n = if tag == SMALL_TUPLE_EXT {
                    usize::from(self.r.u8()?)
                } else {
                    self.r.len32()?
                };
                if n != len {
                    return Err(
                        self.custom(at, format!("expected a tuple of {len} elements, found {n}"))
                    );
                }
                let n = self.count(n, 1)?;
                self.visit_elements(n, visitor)
            }
            NIL_EXT | LIST_EXT | STRING_EXT => self.deserialize_seq(visitor),
            _ => Err(self.mismatch("a tuple")),
        }
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value> {
        self.deserialize_tuple(len, visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let at = self.r.pos;
        if self.r.peek()? != MAP_EXT {
            return Err(self.mismatch("a map"));
        }
        self.r.u8()?;
        let n = self.r.len32()?;
        let n = self.count(n, 2)?;
        self.enter()?;
        let mut acc = Pairs {
            de: self,
            left: n,
            value_next: false,
        };
        let v = visitor.visit_map(&mut acc)?;
        if acc.left != 0 || acc.value_next {
            return Err(self.custom(at, "map entries left over".into()));
        }
        self.leave();
        Ok(v)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        let at = self.r.pos;
        let tag = self.r.peek()?;
        match tag {
            ATOM_EXT | SMALL_ATOM_EXT | ATOM_UTF8_EXT | SMALL_ATOM_UTF8_EXT => {
                visitor.visit_enum(Enum { de: self, rest: 0 })
            }
            SMALL_TUPLE_EXT | LARGE_TUPLE_EXT => {
                self.r.u8()?;
                let n = if tag == SMALL_TUPLE_EXT {
                    usize::from(self.r.u8()?)
                } else {
                    self.r.len32()?
                };
                if n == 0 {
                    return Err(self.custom(at, "expected a variant, found {}".into()));
                }
                let n = self.count(n, 1)?;
                self.enter()?;
                let v = visitor.visit_enum(Enum {
                    de: &mut *self,
                    rest: n - 1,
                })?;
                self.leave();
                Ok(v)
            }
            _ => Err(self.mismatch("an atom or a tagged tuple (an enum)")),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.r.peek()? {
            SMALL_INTEGER_EXT | INTEGER_EXT => self.deserialize_u64(visitor),
            BINARY_EXT | ATOM_EXT | SMALL_ATOM_EXT | ATOM_UTF8_EXT | SMALL_ATOM_UTF8_EXT => {
                self.deserialize_str(visitor)
            }
            _ => Err(self.mismatch("an atom (a field or variant name)")),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.r.skip(self.depth)?;
        visitor.visit_unit()
    }

    fn is_human_readable(&self) -> bool {
        false
    }
}

impl<'de> Deserializer<'de> {
    #[inline(never)]
    fn any_atom<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        match self.r.atom()? {
            Cow::Borrowed("true") => visitor.visit_bool(true),
            Cow::Borrowed("false") => visitor.visit_bool(false),
            Cow::Borrowed("undefined") => visitor.visit_none(),
            Cow::Borrowed(s) => visitor.visit_borrowed_str(s),
            Cow::Owned(s) => visitor.visit_string(s),
        }
    }

    #[inline(never)]
    fn any_int<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        let start = self.r;
        match self.int("an integer") {
            Ok((_, false, m)) => {
                if let Ok(v) = u64::try_from(m) {
                    return visitor.visit_u64(v);
                }
            }
            Ok((_, true, m)) => {
                if m <= 1u128 << 63 {
                    let v = 0i128.wrapping_sub_unsigned(m);
                    if let Ok(v) = i64::try_from(v) {
                        return visitor.visit_i64(v);
                    }
                }
            }
            Err(DecodeError::IntegerOutOfRange { .. }) => {}
            Err(e) => return Err(e),
        }
        self.r = start;
        self.visit_raw_any(visitor)
    }

    #[inline(never)]
    fn any_list<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        let at = self.r.pos;
        match self.r.u8()? {
            NIL_EXT => self.visit_elements(0, visitor),
            STRING_EXT => {
                let n = usize::from(self.r.u16()?);
                let bytes = self.r.take(n)?;
                self.enter()?;
                let v = visitor.visit_seq(BytesSeq(bytes.iter()))?;
                self.leave();
                Ok(v)
            }
            _ => {
                let n = self.r.len32()?;
                let n = self.count(n, 1)?;
                if self.list_is_proper(at, n)? {
                    let v = self.visit_elements(n, visitor)?;
                    self.nil_tail()?;
                    Ok(v)
                } else {
                    self.r.pos = at;
                    self.visit_raw_any(visitor)
                }
            }
        }
    }

    #[inline(never)]
    fn any_tuple<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        let at = self.r.pos;
        let n = if self.r.u8()? == SMALL_TUPLE_EXT {
            usize::from(self.r.u8()?)
        } else {
            self.r.len32()?
        };
        if n < 2 || !self.r.at_atom() {
            self.r.pos = at;
            return self.visit_raw_any(visitor);
        }
        let n = self.count(n, 1)?;
        self.enter()?;
        let head = self.r.atom()?.into_owned();
        let mut acc = TaggedTuple {
            de: self,
            head: Some(head),
            rest: n - 1,
        };
        let v = visitor.visit_map(&mut acc)?;
        if acc.head.is_some() || acc.rest != 0 {
            return Err(self.custom(at, "tagged tuple not consumed".into()));
        }
        self.leave();
        Ok(v)
    }
}

impl Deserializer<'_> {
    fn deserialize_u8_value(&mut self) -> Result<u8> {
        let (at, v) = self.unsigned("u8")?;
        u8::try_from(v).map_err(|_| DecodeError::IntegerOutOfRange {
            offset: at,
            target: "u8",
        })
    }
}
