//! The serde access types the deserializer hands to visitors: sequences, maps, the
//! tuple-as-enum, and the raw-term newtype.

use serde::de::value::{BytesDeserializer, StringDeserializer, U8Deserializer};
use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};
use serde::forward_to_deserialize_any;

use super::super::RAW_TERM;
use super::super::error::DecodeError;
use super::{Deserializer, Result};

/// The elements of a list or tuple.
pub(super) struct Elements<'a, 'de> {
    pub(super) de: &'a mut Deserializer<'de>,
    pub(super) left: usize,
}

impl<'de> de::SeqAccess<'de> for Elements<'_, 'de> {
    type Error = DecodeError;
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.de).map(Some)
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

/// The bytes of a binary or `STRING_EXT` as a seq of `u8`.
pub(super) struct BytesSeq<'a>(pub(super) std::slice::Iter<'a, u8>);

impl<'de> de::SeqAccess<'de> for BytesSeq<'_> {
    type Error = DecodeError;
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        match self.0.next() {
            None => Ok(None),
            Some(&b) => {
                let d: U8Deserializer<DecodeError> = b.into_deserializer();
                seed.deserialize(d).map(Some)
            }
        }
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

/// The pairs of a map.
pub(super) struct Pairs<'a, 'de> {
    pub(super) de: &'a mut Deserializer<'de>,
    pub(super) left: usize,
    pub(super) value_next: bool,
}

impl<'de> de::MapAccess<'de> for Pairs<'_, 'de> {
    type Error = DecodeError;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        self.value_next = true;
        seed.deserialize(&mut *self.de).map(Some)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        self.value_next = false;
        seed.deserialize(&mut *self.de)
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

/// `{Tag, X}` / `{Tag, X, Y, ...}` seen by `deserialize_any`: a map of one entry
/// whose key is the tag (an owned string for 2-tuples, owned bytes beyond) and
/// whose value is `X` (2-tuples) or the seq `[X, Y, ...]`.
pub(super) struct TaggedTuple<'a, 'de> {
    pub(super) de: &'a mut Deserializer<'de>,
    pub(super) head: Option<String>,
    pub(super) rest: usize,
}

impl<'de> de::MapAccess<'de> for TaggedTuple<'_, 'de> {
    type Error = DecodeError;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        let Some(head) = self.head.take() else {
            return Ok(None);
        };
        if self.rest == 1 {
            seed.deserialize(StringDeserializer::<DecodeError>::new(head))
                .map(Some)
        } else {
            seed.deserialize(BytesDeserializer::<DecodeError>::new(head.as_bytes()))
                .map(Some)
        }
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        let n = std::mem::take(&mut self.rest);
        if n == 1 {
            seed.deserialize(&mut *self.de)
        } else {
            seed.deserialize(RestOfTuple { de: self.de, n })
        }
    }
    fn size_hint(&self) -> Option<usize> {
        Some(usize::from(self.head.is_some()))
    }
}

/// The elements after a tuple's tag, as a seq.
pub(super) struct RestOfTuple<'a, 'de> {
    pub(super) de: &'a mut Deserializer<'de>,
    pub(super) n: usize,
}

impl<'de> de::Deserializer<'de> for RestOfTuple<'_, 'de> {
    type Error = DecodeError;
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.de.visit_elements(self.n, visitor)
    }
    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

/// A term `deserialize_any` has no serde word for (pid, port, reference, fun,
/// bitstring, improper list, integer beyond 64 bits, tuple that is not tagged):
/// a newtype around a newtype around its encoding's bytes.
pub(super) struct RawNewtype<'de> {
    pub(super) raw: &'de [u8],
    pub(super) inner: bool,
}

impl<'de> de::Deserializer<'de> for RawNewtype<'de> {
    type Error = DecodeError;
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if self.inner {
            visitor.visit_newtype_struct(RawNewtype {
                raw: self.raw,
                inner: false,
            })
        } else {
            visitor.visit_borrowed_bytes(self.raw)
        }
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        if name == RAW_TERM {
            visitor.visit_borrowed_bytes(self.raw)
        } else {
            self.deserialize_any(visitor)
        }
    }
    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

/// An enum: its variant is the atom (or the tuple's first element), `rest` the
/// tuple's remaining element count.
pub(super) struct Enum<'a, 'de> {
    pub(super) de: &'a mut Deserializer<'de>,
    pub(super) rest: usize,
}

impl<'de> de::EnumAccess<'de> for Enum<'_, 'de> {
    type Error = DecodeError;
    type Variant = Self;
    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self)> {
        let v = seed.deserialize(&mut *self.de)?;
        Ok((v, self))
    }
}

impl<'de> de::VariantAccess<'de> for Enum<'_, 'de> {
    type Error = DecodeError;
    fn unit_variant(self) -> Result<()> {
        if self.rest == 0 {
            Ok(())
        } else {
            Err(self.de.custom(
                self.de.r.pos,
                "expected a unit variant (an atom), found a tuple".into(),
            ))
        }
    }
    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value> {
        if self.rest != 1 {
            return Err(self.de.custom(
                self.de.r.pos,
                format!(
                    "expected a newtype variant {{Tag, Value}}, found {} values",
                    self.rest
                ),
            ));
        }
        seed.deserialize(&mut *self.de)
    }
    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value> {
        if self.rest != len {
            return Err(self.de.custom(
                self.de.r.pos,
                format!(
                    "expected a tuple variant of {len} values, found {}",
                    self.rest
                ),
            ));
        }
        let mut acc = Elements {
            de: self.de,
            left: len,
        };
        let v = visitor.visit_seq(&mut acc)?;
        if acc.left != 0 {
            return Err(acc
                .de
                .custom(acc.de.r.pos, "tuple variant values left over".into()));
        }
        Ok(v)
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        if self.rest != 1 {
            return Err(self.de.custom(
                self.de.r.pos,
                format!(
                    "expected a struct variant {{Tag, #{{...}}}}, found {} values",
                    self.rest
                ),
            ));
        }
        de::Deserializer::deserialize_map(&mut *self.de, visitor)
    }
}
