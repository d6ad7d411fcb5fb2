//! The codec's errors.

use std::fmt;

/// Why some bytes are not a term (or not the term asked for).
///
/// Every variant says at which byte offset of the input the problem was found
/// (offsets count from the start of the slice handed to the codec, the 131
/// version byte included when there is one).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ended inside a term.
    UnexpectedEof {
        /// The input's length: where more bytes were needed.
        offset: usize,
    },
    /// The first byte is not the version byte 131.
    BadVersion {
        /// Always 0.
        offset: usize,
        /// The byte found instead.
        found: u8,
    },
    /// A byte that is no term tag.
    UnknownTag {
        /// Where the tag is.
        offset: usize,
        /// The byte.
        tag: u8,
    },
    /// A tag the codec refuses: `COMPRESSED` (80), `ATOM_CACHE_REF` (82, only
    /// meaningful with a distribution header's atom cache, which otter does not
    /// negotiate), `LOCAL_EXT` (121) and the obsolete `FUN_EXT` (117).
    UnsupportedTag {
        /// Where the tag is.
        offset: usize,
        /// The byte.
        tag: u8,
        /// The tag's name in the spec.
        name: &'static str,
    },
    /// Terms nested deeper than [`MAX_DEPTH`](super::MAX_DEPTH).
    TooDeep {
        /// Where the too-deep term starts.
        offset: usize,
    },
    /// An atom of more than [`MAX_ATOM_CHARS`](super::MAX_ATOM_CHARS) characters.
    AtomTooLong {
        /// Where the atom starts.
        offset: usize,
    },
    /// Bytes that must be UTF-8 (a UTF-8 atom; a binary decoded as a string) are not.
    InvalidUtf8 {
        /// Where the text starts.
        offset: usize,
    },
    /// A field with an impossible value.
    Malformed {
        /// Where the term starts.
        offset: usize,
        /// What is wrong.
        what: &'static str,
    },
    /// Bytes follow the term where the input should have ended.
    TrailingBytes {
        /// Where the first extra byte is.
        offset: usize,
    },
    /// The term is not of the kind the target type needs.
    UnexpectedType {
        /// Where the term starts.
        offset: usize,
        /// What was needed.
        expected: &'static str,
        /// What was found.
        found: &'static str,
    },
    /// An integer that does not fit the target type.
    IntegerOutOfRange {
        /// Where the integer starts.
        offset: usize,
        /// The target type.
        target: &'static str,
    },
    /// A message from a `Deserialize` implementation (`serde::de::Error::custom`).
    Custom {
        /// Where the deserializer was when the error arose, when known.
        offset: Option<usize>,
        /// The message.
        message: String,
    },
}

impl DecodeError {
    /// The byte offset the error was found at, when known.
    pub fn offset(&self) -> Option<usize> {
        match *self {
            DecodeError::UnexpectedEof { offset }
            | DecodeError::BadVersion { offset, .. }
            | DecodeError::UnknownTag { offset, .. }
            | DecodeError::UnsupportedTag { offset, .. }
            | DecodeError::TooDeep { offset }
            | DecodeError::AtomTooLong { offset }
            | DecodeError::InvalidUtf8 { offset }
            | DecodeError::Malformed { offset, .. }
            | DecodeError::TrailingBytes { offset }
            | DecodeError::UnexpectedType { offset, .. }
            | DecodeError::IntegerOutOfRange { offset, .. } => Some(offset),
            DecodeError::Custom { offset, .. } => offset,
        }
    }

    /// Fills in the offset of a `Custom` error that has none.
    pub fn at(mut self, pos: usize) -> Self {
        if let DecodeError::Custom {
            offset: o @ None, ..
        } = &mut self
        {
            *o = Some(pos);
        }
        self
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::UnexpectedEof { offset } => {
                write!(f, "input ends inside a term at byte {offset}")
            }
            DecodeError::BadVersion { offset, found } => write!(
                f,
                "expected the version byte 131 at byte {offset}, found {found}"
            ),
            DecodeError::UnknownTag { offset, tag } => {
                write!(f, "unknown term tag {tag} at byte {offset}")
            }
            DecodeError::UnsupportedTag { offset, tag, name } => {
                write!(f, "unsupported term tag {tag} ({name}) at byte {offset}")
            }
            DecodeError::TooDeep { offset } => write!(
                f,
                "terms nested deeper than {} levels at byte {offset}",
                super::MAX_DEPTH
            ),
            DecodeError::AtomTooLong { offset } => write!(
                f,
                "atom longer than {} characters at byte {offset}",
                super::MAX_ATOM_CHARS
            ),
            DecodeError::InvalidUtf8 { offset } => write!(f, "invalid UTF-8 at byte {offset}"),
            DecodeError::Malformed { offset, what } => {
                write!(f, "malformed term at byte {offset}: {what}")
            }
            DecodeError::TrailingBytes { offset } => {
                write!(f, "trailing bytes after the term at byte {offset}")
            }
            DecodeError::UnexpectedType {
                offset,
                expected,
                found,
            } => write!(f, "expected {expected}, found {found} at byte {offset}"),
            DecodeError::IntegerOutOfRange { offset, target } => {
                write!(f, "integer out of range for {target} at byte {offset}")
            }
            DecodeError::Custom {
                offset: Some(offset),
                message,
            } => write!(f, "{message} (at byte {offset})"),
            DecodeError::Custom {
                offset: None,
                message,
            } => f.write_str(message),
        }
    }
}

impl std::error::Error for DecodeError {}

impl serde::de::Error for DecodeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DecodeError::Custom {
            offset: None,
            message: msg.to_string(),
        }
    }
}

/// Why a value could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeError {
    /// A message from a `Serialize` implementation (`serde::ser::Error::custom`).
    Custom(String),
    /// A name that becomes an atom (struct field, variant, unit struct) has more
    /// than [`MAX_ATOM_CHARS`](super::MAX_ATOM_CHARS) characters.
    AtomTooLong(String),
    /// A length that the format cannot express (more than `u32::MAX` bytes or elements).
    TooLarge(&'static str),
    /// A tuple (or tuple struct, tuple variant) got another number of elements than announced.
    TupleLength {
        /// The announced length.
        expected: usize,
        /// The elements written.
        found: usize,
    },
    /// The value under the [`RAW_TERM`](super::RAW_TERM) hook did not serialize as bytes.
    RawTermNotBytes,
    /// The bytes under the [`RAW_TERM`](super::RAW_TERM) hook are not exactly one term.
    InvalidRawTerm(DecodeError),
    /// A message whose distribution frame would be larger than a node takes (an otter
    /// peer drops the connection of a frame over 64 MiB): refused before it is sent.
    FrameTooLarge {
        /// The frame's length.
        size: usize,
        /// The largest frame a node takes.
        max: usize,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::Custom(m) => f.write_str(m),
            EncodeError::AtomTooLong(a) => write!(
                f,
                "atom longer than {} characters: {a:?}",
                super::MAX_ATOM_CHARS
            ),
            EncodeError::TooLarge(what) => write!(f, "{what} too large for the format"),
            EncodeError::TupleLength { expected, found } => {
                write!(f, "tuple announced with {expected} elements got {found}")
            }
            EncodeError::RawTermNotBytes => {
                write!(f, "the raw-term hook's value did not serialize as bytes")
            }
            EncodeError::InvalidRawTerm(e) => write!(f, "invalid raw term: {e}"),
            EncodeError::FrameTooLarge { size, max } => write!(
                f,
                "a distribution frame of {size} bytes is over the limit of {max} bytes"
            ),
        }
    }
}

impl std::error::Error for EncodeError {}

impl serde::ser::Error for EncodeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        EncodeError::Custom(msg.to_string())
    }
}
