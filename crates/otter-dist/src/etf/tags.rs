//! The tag bytes of the External Term Format (`erl_ext_dist`).

pub(super) const VERSION: u8 = 131;

pub(super) const NEW_FLOAT_EXT: u8 = 70;
pub(super) const BIT_BINARY_EXT: u8 = 77;
pub(super) const COMPRESSED: u8 = 80;
pub(super) const ATOM_CACHE_REF: u8 = 82;
pub(super) const NEW_PID_EXT: u8 = 88;
pub(super) const NEW_PORT_EXT: u8 = 89;
pub(super) const NEWER_REFERENCE_EXT: u8 = 90;
pub(super) const SMALL_INTEGER_EXT: u8 = 97;
pub(super) const INTEGER_EXT: u8 = 98;
pub(super) const FLOAT_EXT: u8 = 99;
pub(super) const ATOM_EXT: u8 = 100;
pub(super) const REFERENCE_EXT: u8 = 101;
pub(super) const PORT_EXT: u8 = 102;
pub(super) const PID_EXT: u8 = 103;
pub(super) const SMALL_TUPLE_EXT: u8 = 104;
pub(super) const LARGE_TUPLE_EXT: u8 = 105;
pub(super) const NIL_EXT: u8 = 106;
pub(super) const STRING_EXT: u8 = 107;
pub(super) const LIST_EXT: u8 = 108;
pub(super) const BINARY_EXT: u8 = 109;
pub(super) const SMALL_BIG_EXT: u8 = 110;
pub(super) const LARGE_BIG_EXT: u8 = 111;
pub(super) const NEW_FUN_EXT: u8 = 112;
pub(super) const EXPORT_EXT: u8 = 113;
pub(super) const NEW_REFERENCE_EXT: u8 = 114;
pub(super) const SMALL_ATOM_EXT: u8 = 115;
pub(super) const MAP_EXT: u8 = 116;
pub(super) const FUN_EXT: u8 = 117;
pub(super) const ATOM_UTF8_EXT: u8 = 118;
pub(super) const SMALL_ATOM_UTF8_EXT: u8 = 119;
pub(super) const V4_PORT_EXT: u8 = 120;
pub(super) const LOCAL_EXT: u8 = 121;

/// A short name for a tag, for error messages.
pub(super) fn name(tag: u8) -> &'static str {
    match tag {
        NEW_FLOAT_EXT => "NEW_FLOAT_EXT",
        BIT_BINARY_EXT => "BIT_BINARY_EXT",
        COMPRESSED => "COMPRESSED",
        ATOM_CACHE_REF => "ATOM_CACHE_REF",
        NEW_PID_EXT => "NEW_PID_EXT",
        NEW_PORT_EXT => "NEW_PORT_EXT",
        NEWER_REFERENCE_EXT => "NEWER_REFERENCE_EXT",
        SMALL_INTEGER_EXT => "SMALL_INTEGER_EXT",
        INTEGER_EXT => "INTEGER_EXT",
        FLOAT_EXT => "FLOAT_EXT",
        ATOM_EXT => "ATOM_EXT",
        REFERENCE_EXT => "REFERENCE_EXT",
        PORT_EXT => "PORT_EXT",
        PID_EXT => "PID_EXT",
        SMALL_TUPLE_EXT => "SMALL_TUPLE_EXT",
        LARGE_TUPLE_EXT => "LARGE_TUPLE_EXT",
        NIL_EXT => "NIL_EXT",
        STRING_EXT => "STRING_EXT",
        LIST_EXT => "LIST_EXT",
        BINARY_EXT => "BINARY_EXT",
        SMALL_BIG_EXT => "SMALL_BIG_EXT",
        LARGE_BIG_EXT => "LARGE_BIG_EXT",
        NEW_FUN_EXT => "NEW_FUN_EXT",
        EXPORT_EXT => "EXPORT_EXT",
        NEW_REFERENCE_EXT => "NEW_REFERENCE_EXT",
        SMALL_ATOM_EXT => "SMALL_ATOM_EXT",
        MAP_EXT => "MAP_EXT",
        FUN_EXT => "FUN_EXT",
        ATOM_UTF8_EXT => "ATOM_UTF8_EXT",
        SMALL_ATOM_UTF8_EXT => "SMALL_ATOM_UTF8_EXT",
        V4_PORT_EXT => "V4_PORT_EXT",
        LOCAL_EXT => "LOCAL_EXT",
        _ => "unknown tag",
    }
}

/// What kind of term a tag starts, for type-mismatch messages.
pub(super) fn kind(tag: u8) -> &'static str {
    match tag {
        NEW_FLOAT_EXT | FLOAT_EXT => "a float",
        BIT_BINARY_EXT => "a bitstring",
        NEW_PID_EXT | PID_EXT => "a pid",
        NEW_PORT_EXT | PORT_EXT | V4_PORT_EXT => "a port",
        NEWER_REFERENCE_EXT | NEW_REFERENCE_EXT | REFERENCE_EXT => "a reference",
        SMALL_INTEGER_EXT | INTEGER_EXT | SMALL_BIG_EXT | LARGE_BIG_EXT => "an integer",
        ATOM_EXT | SMALL_ATOM_EXT | ATOM_UTF8_EXT | SMALL_ATOM_UTF8_EXT | ATOM_CACHE_REF => {
            "an atom"
        }
        SMALL_TUPLE_EXT | LARGE_TUPLE_EXT => "a tuple",
        NIL_EXT | STRING_EXT | LIST_EXT => "a list",
        BINARY_EXT => "a binary",
        NEW_FUN_EXT | EXPORT_EXT | FUN_EXT => "a fun",
        MAP_EXT => "a map",
        _ => "an unknown term",
    }
}
