//! Why a message to one of the node's own protocol servers (`global`'s name server,
//! a `pg` scope) did not decode: one error for every such protocol, named by it. Each
//! protocol's decoder (`global/wire.rs`, `pg/wire.rs`) turns any bytes into a message or
//! this, never a panic; its server reports it once (`report::dist_fault`) and goes on.

use std::fmt;

/// A message of the protocol named in it that did not decode.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum WireError {
    /// The bytes are not one term.
    NotATerm(String),
    /// A term, but none of the protocol's messages (the protocol's name, and the term's
    /// head, printed and cut at 200 characters).
    Unknown(&'static str, String),
    /// One of the protocol's tags with a part of the wrong shape (the protocol's name,
    /// and which part).
    Malformed(&'static str, &'static str),
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::NotATerm(e) => write!(f, "not a term: {e}"),
            WireError::Unknown(protocol, t) => write!(f, "not a {protocol} message: {t}"),
            WireError::Malformed(protocol, what) => {
                write!(f, "a malformed {protocol} message: {what}")
            }
        }
    }
}
