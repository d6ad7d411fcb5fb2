//! The serde serializer: values straight to bytes, no intermediate tree.

use serde::ser::{self, Serialize};

use super::RAW_TERM;
use super::encode;
use super::error::EncodeError;
use super::read::Reader;
use super::tags::*;
use super::term::atom_len_ok;

type Result<T> = std::result::Result<T, EncodeError>;

/// Writes one term (no version byte) into `out`.
#[derive(Debug)]
pub struct Serializer<'a> {
    pub out: &'a mut Vec<u8>,
}

fn atom(out: &mut Vec<u8>, s: &str) -> Result<()> {
    if !atom_len_ok(s) {
        return Err(EncodeError::AtomTooLong(s.to_owned()));
    }
    encode::atom(out, s);
    Ok(())
}

fn len32(n: usize, what: &'static str) -> Result<u32> {
    u32::try_from(n).map_err(|_| EncodeError::TooLarge(what))
}

impl<'a, 'b> ser::Serializer for &'b mut Serializer<'a> {
    type Ok = ();
    type Error = EncodeError;
    type SerializeSeq = List<'a, 'b>;
    type SerializeTuple = Tuple<'a, 'b>;
    type SerializeTupleStruct = Tuple<'a, 'b>;
    type SerializeTupleVariant = Tuple<'a, 'b>;
    type SerializeMap = Map<'a, 'b>;
    type SerializeStruct = Map<'a, 'b>;
    type SerializeStructVariant = Map<'a, 'b>;

    fn serialize_bool(self, v: bool) -> Result<()> {
        encode::atom(self.out, if v { "true" } else { "false" });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<()> {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<()> {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<()> {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<()> {
        encode::int(self.out, v);
        Ok(())
    }
    fn serialize_i128(self, v: i128) -> Result<()> {
        encode::int128(self.out, v);
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> Result<()> {
        self.serialize_i64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<()> {
        self.serialize_i64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<()> {
        self.serialize_i64(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<()> {
        encode::uint128(self.out, v.into());
        Ok(())
    }
    fn serialize_u128(self, v: u128) -> Result<()> {
        encode::uint128(self.out, v);
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> Result<()> {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<()> {
        encode::float(self.out, v);
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<()> {
        self.serialize_i64(i64::from(u32::from(v)))
    }
    fn serialize_str(self, v: &str) -> Result<()> {
        self.serialize_bytes(v.as_bytes())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<()> {
        len32(v.len(), "binary")?;
        encode::binary(self.out, v);
        Ok(())
    }
    fn serialize_none(self) -> Result<()> {
        encode::atom(self.out, "undefined");
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<()> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<()> {
        encode::atom(self.out, "ok");
        Ok(())
    }
    fn serialize_unit_struct(self, name: &'static str) -> Result<()> {
        atom(self.out, name)
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<()> {
        atom(self.out, variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<()> {
        if name == RAW_TERM {
            value.serialize(RawTerm { out: self.out })
        } else {
            value.serialize(self)
        }
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<()> {
        encode::tuple_header(self.out, 2);
        atom(self.out, variant)?;
        value.serialize(self)
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<List<'a, 'b>> {
        let start = self.out.len();
        self.out.push(LIST_EXT);
        self.out.extend_from_slice(&[0; 4]);
        Ok(List {
            ser: self,
            start,
            count: 0,
            bytes: true,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Tuple<'a, 'b>> {
        len32(len, "tuple")?;
        encode::tuple_header(self.out, len);
        Ok(Tuple {
            ser: self,
            expected: len,
            count: 0,
        })
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Tuple<'a, 'b>> {
        self.serialize_tuple(len)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Tuple<'a, 'b>> {
        let n = len.checked_add(1).ok_or(EncodeError::TooLarge("tuple"))?;
        len32(n, "tuple")?;
        encode::tuple_header(self.out, n);
        atom(self.out, variant)?;
        Ok(Tuple {
            ser: self,
            expected: len,
            count: 0,
        })
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Map<'a, 'b>> {
        let start = self.out.len();
        self.out.push(MAP_EXT);
        self.out.extend_from_slice(&[0; 4]);
        Ok(Map {
            ser: self,
            start,
            count: 0,
        })
    }
    fn serialize_struct(self, _: &'static str, _len: usize) -> Result<Map<'a, 'b>> {
        self.serialize_map(None)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Map<'a, 'b>> {
        encode::tuple_header(self.out, 2);
        atom(self.out, variant)?;
        self.serialize_map(None)
    }
    fn is_human_readable(&self) -> bool {
        false
    }
}

/// A list being written: `LIST_EXT` with its count patched at the end (or
/// rewritten as `NIL_EXT`, or as `STRING_EXT` when every element is a byte).
#[derive(Debug)]
pub struct List<'a, 'b> {
    ser: &'b mut Serializer<'a>,
    start: usize,
    count: usize,
    bytes: bool,
}

impl ser::SerializeSeq for List<'_, '_> {
    type Ok = ();
    type Error = EncodeError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        let before = self.ser.out.len();
        value.serialize(&mut *self.ser)?;
        if self.bytes {
            let out = &self.ser.out;
            self.bytes = out.len() == before + 2 && out.get(before) == Some(&SMALL_INTEGER_EXT);
        }
        self.count += 1;
        Ok(())
    }
    fn end(self) -> Result<()> {
        let out = &mut *self.ser.out;
        if self.count == 0 {
            out.truncate(self.start);
            out.push(NIL_EXT);
            return Ok(());
        }
        if self.bytes
            && let Ok(n) = u16::try_from(self.count)
        {
            encode::compact_string(out, self.start, n);
            return Ok(());
        }
        let n = len32(self.count, "list")?;
        out[self.start + 1..self.start + 5].copy_from_slice(&n.to_be_bytes());
        out.push(NIL_EXT);
        Ok(())
    }
}

/// A tuple being written (its arity was written first).
#[derive(Debug)]
pub struct Tuple<'a, 'b> {
    ser: &'b mut Serializer<'a>,
    expected: usize,
    count: usize,
}

impl Tuple<'_, '_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.count += 1;
        if self.count > self.expected {
            return Err(EncodeError::TupleLength {
                expected: self.expected,
                found: self.count,
            });
        }
        value.serialize(&mut *self.ser)
    }
    fn finish(self) -> Result<()> {
        if self.count == self.expected {
            Ok(())
        } else {
            Err(EncodeError::TupleLength {
                expected: self.expected,
                found: self.count,
            })
        }
    }
}

impl ser::SerializeTuple for Tuple<'_, '_> {
    type Ok = ();
    type Error = EncodeError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.element(value)
    }
    fn end(self) -> Result<()> {
        self.finish()
    }
}

impl ser::SerializeTupleStruct for Tuple<'_, '_> {
    type Ok = ();
    type Error = EncodeError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.element(value)
    }
    fn end(self) -> Result<()> {
        self.finish()
    }
}

impl ser::SerializeTupleVariant for Tuple<'_, '_> {
    type Ok = ();
    type Error = EncodeError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.element(value)
    }
    fn end(self) -> Result<()> {
        self.finish()
    }
}

/// A map being written: `MAP_EXT` with its count patched at the end.
#[derive(Debug)]
pub struct Map<'a, 'b> {
    ser: &'b mut Serializer<'a>,
    start: usize,
    count: usize,
}

impl Map<'_, '_> {
    fn finish(self) -> Result<()> {
        let n = len32(self.count, "map")?;
        self.ser.out[self.start + 1..self.start + 5].copy_from_slice(&n.to_be_bytes());
        Ok(())
    }
}

impl ser::SerializeMap for Map<'_, '_> {
    type Ok = ();
    type Error = EncodeError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<()> {
        self.count += 1;
        key.serialize(&mut *self.ser)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        value.serialize(&mut *self.ser)
    }
    fn end(self) -> Result<()> {
        self.finish()
    }
}

impl ser::SerializeStruct for Map<'_, '_> {
    type Ok = ();
    type Error = EncodeError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<()> {
        self.count += 1;
        atom(self.ser.out, key)?;
        value.serialize(&mut *self.ser)
    }
    fn end(self) -> Result<()> {
        self.finish()
    }
}

impl ser::SerializeStructVariant for Map<'_, '_> {
    type Ok = ();
    type Error = EncodeError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<()> {
        ser::SerializeStruct::serialize_field(self, key, value)
    }
    fn end(self) -> Result<()> {
        self.finish()
    }
}

/// The serializer under the [`RAW_TERM`] hook: takes one term's encoding as
/// bytes, checks it is exactly one term, and appends it.
struct RawTerm<'a> {
    out: &'a mut Vec<u8>,
}

fn not_bytes<T>() -> Result<T> {
    Err(EncodeError::RawTermNotBytes)
}

impl ser::Serializer for RawTerm<'_> {
    type Ok = ();
    type Error = EncodeError;
    type SerializeSeq = ser::Impossible<(), EncodeError>;
    type SerializeTuple = ser::Impossible<(), EncodeError>;
    type SerializeTupleStruct = ser::Impossible<(), EncodeError>;
    type SerializeTupleVariant = ser::Impossible<(), EncodeError>;
    type SerializeMap = ser::Impossible<(), EncodeError>;
    type SerializeStruct = ser::Impossible<(), EncodeError>;
    type SerializeStructVariant = ser::Impossible<(), EncodeError>;

    fn serialize_bytes(self, v: &[u8]) -> Result<()> {
        let mut r = Reader::new(v);
        r.skip(0).map_err(EncodeError::InvalidRawTerm)?;
        if r.pos != v.len() {
            return Err(EncodeError::InvalidRawTerm(
                super::error::DecodeError::TrailingBytes { offset: r.pos },
            ));
        }
        self.out.extend_from_slice(v);
        Ok(())
    }
    fn serialize_bool(self, _: bool) -> Result<()> {
        not_bytes()
    }
    fn serialize_i8(self, _: i8) -> Result<()> {
        not_bytes()
    }
    fn serialize_i16(self, _: i16) -> Result<()> {
        not_bytes()
    }
    fn serialize_i32(self, _: i32) -> Result<()> {
        not_bytes()
    }
    fn serialize_i64(self, _: i64) -> Result<()> {
        not_bytes()
    }
    fn serialize_u8(self, _: u8) -> Result<()> {
        not_bytes()
    }
    fn serialize_u16(self, _: u16) -> Result<()> {
        not_bytes()
    }
    fn serialize_u32(self, _: u32) -> Result<()> {
        not_bytes()
    }
    fn serialize_u64(self, _: u64) -> Result<()> {
        not_bytes()
    }
    fn serialize_f32(self, _: f32) -> Result<()> {
        not_bytes()
    }
    fn serialize_f64(self, _: f64) -> Result<()> {
        not_bytes()
    }
    fn serialize_char(self, _: char) -> Result<()> {
        not_bytes()
    }
    fn serialize_str(self, _: &str) -> Result<()> {
        not_bytes()
    }
    fn serialize_none(self) -> Result<()> {
        not_bytes()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<()> {
        not_bytes()
    }
    fn serialize_unit(self) -> Result<()> {
        not_bytes()
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<()> {
        not_bytes()
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<()> {
        not_bytes()
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, _: &T) -> Result<()> {
        not_bytes()
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<()> {
        not_bytes()
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq> {
        not_bytes()
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple> {
        not_bytes()
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        not_bytes()
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        not_bytes()
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> {
        not_bytes()
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
        not_bytes()
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant> {
        not_bytes()
    }
}
