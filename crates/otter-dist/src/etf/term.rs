//! The term tree: [`Term`] and its parts.

use std::fmt;
use std::sync::Arc;

use super::MAX_ATOM_CHARS;

/// An atom: its text, UTF-8.
///
/// otter has no global atom table: an atom is a value (an `Arc<str>`, so a clone
/// is a reference-count increment), and an atom read from the wire costs its
/// bytes and is freed with its last clone. Display and Debug print it as Erlang
/// does: `ok`, `'EXIT'`, `'hello world'`.
///
/// ```
/// use otter_dist::etf::Atom;
/// let a = Atom::new("EXIT");
/// assert_eq!(a.as_str(), "EXIT");
/// assert_eq!(a.to_string(), "'EXIT'");
/// assert_eq!(Atom::from("ok").to_string(), "ok");
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Atom(Arc<str>);

impl Atom {
    /// An atom with the text `s`.
    ///
    /// # Panics
    ///
    /// If `s` has more than [`MAX_ATOM_CHARS`] characters (Erlang's
    /// `system_limit`); [`Atom::try_new`] does not panic.
    pub fn new(s: &str) -> Atom {
        match Atom::try_new(s) {
            Some(a) => a,
            None => panic!("atom longer than {MAX_ATOM_CHARS} characters"),
        }
    }

    /// An atom with the text `s`, or `None` if `s` has more than
    /// [`MAX_ATOM_CHARS`] characters.
    pub fn try_new(s: &str) -> Option<Atom> {
        if atom_len_ok(s) {
            Some(Atom(Arc::from(s)))
        } else {
            None
        }
    }

    /// The atom's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whether `s` is short enough for an atom.
pub(super) fn atom_len_ok(s: &str) -> bool {
    s.len() <= MAX_ATOM_CHARS || s.chars().count() <= MAX_ATOM_CHARS
}

impl From<&str> for Atom {
    /// Panics as [`Atom::new`] does.
    fn from(s: &str) -> Atom {
        Atom::new(s)
    }
}

impl From<String> for Atom {
    /// Panics as [`Atom::new`] does.
    fn from(s: String) -> Atom {
        Atom::new(&s)
    }
}

impl AsRef<str> for Atom {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Whether Erlang prints the atom without quotes.
fn atom_is_bare(s: &str) -> bool {
    const RESERVED: &[&str] = &[
        "after", "and", "andalso", "band", "begin", "bnot", "bor", "bsl", "bsr", "bxor", "case",
        "catch", "cond", "div", "end", "fun", "if", "let", "not", "of", "or", "orelse", "receive",
        "rem", "try", "when", "xor",
    ];
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_lowercase() => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '@') && !RESERVED.contains(&s)
}

impl fmt::Display for Atom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if atom_is_bare(&self.0) {
            return f.write_str(&self.0);
        }
        f.write_str("'")?;
        for c in self.0.chars() {
            match c {
                '\'' => f.write_str("\\'")?,
                '\\' => f.write_str("\\\\")?,
                '\n' => f.write_str("\\n")?,
                '\t' => f.write_str("\\t")?,
                c => write!(f, "{c}")?,
            }
        }
        f.write_str("'")
    }
}

impl fmt::Debug for Atom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A process identifier from (or for) another node: `NEW_PID_EXT`.
///
/// Decoding also reads the older `PID_EXT` (its one-byte creation widened).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExternalPid {
    /// The node the process lives on.
    pub node: Atom,
    /// The process number (15 bits significant in Erlang).
    pub id: u32,
    /// The serial (13 bits significant in Erlang).
    pub serial: u32,
    /// The node's incarnation.
    pub creation: u32,
}

/// A reference: `NEWER_REFERENCE_EXT` (1 to 5 words).
///
/// Decoding also reads `NEW_REFERENCE_EXT` and `REFERENCE_EXT`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExternalRef {
    /// The node that made the reference.
    pub node: Atom,
    /// The node's incarnation.
    pub creation: u32,
    /// The reference's words, first word first as on the wire (1 to 5 of them).
    pub id: Vec<u32>,
}

/// A port identifier: `NEW_PORT_EXT` when the id fits 32 bits, `V4_PORT_EXT` otherwise.
///
/// Decoding also reads `PORT_EXT`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExternalPort {
    /// The node the port lives on.
    pub node: Atom,
    /// The port number.
    pub id: u64,
    /// The node's incarnation.
    pub creation: u32,
}

/// An integer of any size, as `SMALL_BIG_EXT`/`LARGE_BIG_EXT` carry it: a sign
/// and a little-endian magnitude.
///
/// Equality compares values (trailing zero bytes of the magnitude and the sign
/// of zero do not matter).
///
/// ```
/// use otter_dist::etf::BigInt;
/// let b = BigInt::from(-(1i128 << 100));
/// assert!(b.negative);
/// assert_eq!(i128::try_from(&b), Ok(-(1i128 << 100)));
/// ```
#[derive(Debug, Clone, Default)]
pub struct BigInt {
    /// Whether the integer is below zero.
    pub negative: bool,
    /// The absolute value, least significant byte first.
    pub magnitude: Vec<u8>,
}

impl BigInt {
    /// The magnitude without its trailing (most significant) zero bytes.
    pub fn trimmed_magnitude(&self) -> &[u8] {
        trim(&self.magnitude)
    }

    /// The absolute value, if it fits 128 bits.
    pub fn magnitude_u128(&self) -> Option<u128> {
        mag_to_u128(&self.magnitude)
    }
}

pub(super) fn trim(mag: &[u8]) -> &[u8] {
    let mut n = mag.len();
    while n > 0 && mag[n - 1] == 0 {
        n -= 1;
    }
    &mag[..n]
}

/// A little-endian magnitude as a `u128`, if it fits.
pub(super) fn mag_to_u128(mag: &[u8]) -> Option<u128> {
    let m = trim(mag);
    if m.len() > 16 {
        return None;
    }
    let mut v = 0u128;
    for (i, b) in m.iter().enumerate() {
        v |= u128::from(*b) << (8 * i);
    }
    Some(v)
}

/// The little-endian bytes of `v`, without trailing zeros.
pub(super) fn u128_to_mag(v: u128) -> Vec<u8> {
    let bytes = v.to_le_bytes();
    trim(&bytes).to_vec()
}

impl PartialEq for BigInt {
    fn eq(&self, other: &BigInt) -> bool {
        let (a, b) = (self.trimmed_magnitude(), other.trimmed_magnitude());
        a == b && (a.is_empty() || self.negative == other.negative)
    }
}

impl Eq for BigInt {}

impl From<i128> for BigInt {
    fn from(v: i128) -> BigInt {
        BigInt {
            negative: v < 0,
            magnitude: u128_to_mag(v.unsigned_abs()),
        }
    }
}

impl From<u128> for BigInt {
    fn from(v: u128) -> BigInt {
        BigInt {
            negative: false,
            magnitude: u128_to_mag(v),
        }
    }
}

impl From<i64> for BigInt {
    fn from(v: i64) -> BigInt {
        BigInt::from(i128::from(v))
    }
}

/// The error of converting a [`BigInt`] that does not fit the target integer type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BigIntOutOfRange;

impl fmt::Display for BigIntOutOfRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("big integer out of range for the target type")
    }
}

impl std::error::Error for BigIntOutOfRange {}

impl TryFrom<&BigInt> for i128 {
    type Error = BigIntOutOfRange;
    fn try_from(b: &BigInt) -> Result<i128, BigIntOutOfRange> {
        let m = b.magnitude_u128().ok_or(BigIntOutOfRange)?;
        if b.negative {
            if m <= 1u128 << 127 {
                Ok(0i128.wrapping_sub_unsigned(m))
            } else {
                Err(BigIntOutOfRange)
            }
        } else {
            i128::try_from(m).map_err(|_| BigIntOutOfRange)
        }
    }
}

impl TryFrom<&BigInt> for u128 {
    type Error = BigIntOutOfRange;
    fn try_from(b: &BigInt) -> Result<u128, BigIntOutOfRange> {
        let m = b.magnitude_u128().ok_or(BigIntOutOfRange)?;
        if b.negative && m != 0 {
            Err(BigIntOutOfRange)
        } else {
            Ok(m)
        }
    }
}

/// An Erlang term.
///
/// Decoding normalizes where Erlang's terms are the same: an integer that fits
/// `i64` is always [`Term::Int`] (whatever its encoding), a `STRING_EXT` is a
/// [`Term::List`] of [`Term::Int`], a list whose tail is a list is flattened.
/// Equality follows: `Int(5) == BigInt(5.into())`, and floats compare by their
/// bits (so `NaN == NaN` and `0.0 != -0.0`; Erlang itself refuses NaN).
///
/// ```
/// use otter_dist::etf::Term;
/// let t = Term::tuple(vec![Term::atom("ok"), Term::from(42), Term::from("hi")]);
/// let mut bytes = Vec::new();
/// t.encode(&mut bytes);
/// assert_eq!(Term::decode(&bytes).unwrap(), t);
/// assert_eq!(t.to_string(), "{ok,42,<<\"hi\">>}");
/// ```
#[derive(Debug, Clone)]
pub enum Term {
    /// An atom.
    Atom(Atom),
    /// An integer that fits 64 bits.
    Int(i64),
    /// A larger integer.
    BigInt(BigInt),
    /// A float.
    Float(f64),
    /// A binary.
    Binary(Vec<u8>),
    /// A bitstring: `bytes`, the last of which holds `bits` (1 to 8) significant
    /// bits, the high ones.
    BitBinary {
        /// The bytes.
        bytes: Vec<u8>,
        /// How many bits of the last byte count (1 to 8).
        bits: u8,
    },
    /// A proper list; `[]` is `List(vec![])`.
    List(Vec<Term>),
    /// An improper list: its elements (at least one) and its tail (not a list).
    ImproperList(Vec<Term>, Box<Term>),
    /// A tuple.
    Tuple(Vec<Term>),
    /// A map, its pairs in wire order.
    Map(Vec<(Term, Term)>),
    /// A pid.
    Pid(ExternalPid),
    /// A reference.
    Ref(ExternalRef),
    /// A port.
    Port(ExternalPort),
    /// A fun (`NEW_FUN_EXT` or `EXPORT_EXT`), kept as its encoding, tag included,
    /// and re-encoded verbatim.
    Fun(Vec<u8>),
}

impl Term {
    /// The atom `s` (panics as [`Atom::new`] does).
    pub fn atom(s: &str) -> Term {
        Term::Atom(Atom::new(s))
    }

    /// A tuple.
    pub fn tuple(elements: Vec<Term>) -> Term {
        Term::Tuple(elements)
    }

    /// A proper list.
    pub fn list(elements: Vec<Term>) -> Term {
        Term::List(elements)
    }

    /// A binary.
    pub fn binary(bytes: impl Into<Vec<u8>>) -> Term {
        Term::Binary(bytes.into())
    }

    /// The atom's text, if the term is an atom.
    pub fn as_atom(&self) -> Option<&str> {
        match self {
            Term::Atom(a) => Some(a.as_str()),
            _ => None,
        }
    }

    /// The integer, if the term is an integer that fits `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Term::Int(i) => Some(*i),
            Term::BigInt(b) => i128::try_from(b).ok().and_then(|v| i64::try_from(v).ok()),
            _ => None,
        }
    }
}

impl PartialEq for Term {
    fn eq(&self, other: &Term) -> bool {
        match (self, other) {
            (Term::Atom(a), Term::Atom(b)) => a == b,
            (Term::Int(a), Term::Int(b)) => a == b,
            (Term::BigInt(a), Term::BigInt(b)) => a == b,
            (Term::Int(a), Term::BigInt(b)) | (Term::BigInt(b), Term::Int(a)) => {
                i128::try_from(b).ok() == Some(i128::from(*a))
            }
            (Term::Float(a), Term::Float(b)) => a.to_bits() == b.to_bits(),
            (Term::Binary(a), Term::Binary(b)) => a == b,
            (Term::BitBinary { bytes: a, bits: x }, Term::BitBinary { bytes: b, bits: y }) => {
                a == b && x == y
            }
            (Term::List(a), Term::List(b)) => a == b,
            (Term::ImproperList(a, t), Term::ImproperList(b, u)) => a == b && t == u,
            (Term::Tuple(a), Term::Tuple(b)) => a == b,
            (Term::Map(a), Term::Map(b)) => a == b,
            (Term::Pid(a), Term::Pid(b)) => a == b,
            (Term::Ref(a), Term::Ref(b)) => a == b,
            (Term::Port(a), Term::Port(b)) => a == b,
            (Term::Fun(a), Term::Fun(b)) => a == b,
            _ => false,
        }
    }
}

impl From<Atom> for Term {
    fn from(a: Atom) -> Term {
        Term::Atom(a)
    }
}

impl From<i64> for Term {
    fn from(v: i64) -> Term {
        Term::Int(v)
    }
}

impl From<i32> for Term {
    fn from(v: i32) -> Term {
        Term::Int(v.into())
    }
}

impl From<u32> for Term {
    fn from(v: u32) -> Term {
        Term::Int(v.into())
    }
}

impl From<u64> for Term {
    fn from(v: u64) -> Term {
        match i64::try_from(v) {
            Ok(i) => Term::Int(i),
            Err(_) => Term::BigInt(BigInt::from(u128::from(v))),
        }
    }
}

impl From<BigInt> for Term {
    fn from(b: BigInt) -> Term {
        Term::BigInt(b)
    }
}

impl From<f64> for Term {
    fn from(v: f64) -> Term {
        Term::Float(v)
    }
}

impl From<bool> for Term {
    /// The atom `true` or `false`.
    fn from(v: bool) -> Term {
        Term::atom(if v { "true" } else { "false" })
    }
}

impl From<&str> for Term {
    /// A binary holding the UTF-8 text (Elixir's strings, Erlang's `<<"...">>`).
    fn from(s: &str) -> Term {
        Term::Binary(s.as_bytes().to_vec())
    }
}

impl From<String> for Term {
    /// A binary holding the UTF-8 text.
    fn from(s: String) -> Term {
        Term::Binary(s.into_bytes())
    }
}

impl From<Vec<Term>> for Term {
    /// A proper list.
    fn from(v: Vec<Term>) -> Term {
        Term::List(v)
    }
}

impl From<ExternalPid> for Term {
    fn from(p: ExternalPid) -> Term {
        Term::Pid(p)
    }
}

impl From<ExternalRef> for Term {
    fn from(r: ExternalRef) -> Term {
        Term::Ref(r)
    }
}

impl From<ExternalPort> for Term {
    fn from(p: ExternalPort) -> Term {
        Term::Port(p)
    }
}

fn write_seq(f: &mut fmt::Formatter<'_>, items: &[Term]) -> fmt::Result {
    for (i, t) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        write!(f, "{t}")?;
    }
    Ok(())
}

impl fmt::Display for Term {
    /// Roughly as Erlang's `~w` prints (binaries that are printable ASCII as
    /// `<<"text">>`, big integers in hexadecimal as `16#...`, funs as `#Fun<...>`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Term::Atom(a) => write!(f, "{a}"),
            Term::Int(i) => write!(f, "{i}"),
            Term::BigInt(b) => match i128::try_from(b) {
                Ok(v) => write!(f, "{v}"),
                Err(_) => {
                    f.write_str(if b.negative { "-16#" } else { "16#" })?;
                    for byte in b.trimmed_magnitude().iter().rev() {
                        write!(f, "{byte:02X}")?;
                    }
                    Ok(())
                }
            },
            Term::Float(x) => write!(f, "{x:?}"),
            Term::Binary(b) => {
                if !b.is_empty() && b.iter().all(|c| (b' '..=b'~').contains(c) && *c != b'"') {
                    write!(f, "<<\"{}\">>", String::from_utf8_lossy(b))
                } else {
                    f.write_str("<<")?;
                    for (i, c) in b.iter().enumerate() {
                        if i > 0 {
                            f.write_str(",")?;
                        }
                        write!(f, "{c}")?;
                    }
                    f.write_str(">>")
                }
            }
            Term::BitBinary { bytes, bits } => {
                f.write_str("<<")?;
                let n = bytes.len();
                for (i, c) in bytes.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    if i + 1 == n && *bits < 8 {
                        let shift = u32::from(8 - *bits);
                        write!(f, "{}:{bits}", c.checked_shr(shift).unwrap_or(0))?;
                    } else {
                        write!(f, "{c}")?;
                    }
                }
                f.write_str(">>")
            }
            Term::List(items) => {
                f.write_str("[")?;
                write_seq(f, items)?;
                f.write_str("]")
            }
            Term::ImproperList(items, tail) => {
                f.write_str("[")?;
                write_seq(f, items)?;
                write!(f, "|{tail}]")
            }
            Term::Tuple(items) => {
                f.write_str("{")?;
                write_seq(f, items)?;
                f.write_str("}")
            }
            Term::Map(pairs) => {
                f.write_str("#{")?;
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{k} => {v}")?;
                }
                f.write_str("}")
            }
            Term::Pid(p) => write!(f, "<{}.{}.{}.{}>", p.node, p.id, p.serial, p.creation),
            Term::Ref(r) => {
                write!(f, "#Ref<{}.{}", r.node, r.creation)?;
                for w in r.id.iter().rev() {
                    write!(f, ".{w}")?;
                }
                f.write_str(">")
            }
            Term::Port(p) => write!(f, "#Port<{}.{}.{}>", p.node, p.id, p.creation),
            Term::Fun(b) => write!(f, "#Fun<{} bytes>", b.len()),
        }
    }
}
