//! A message from another node that did not decode into the receiver's type.

use std::fmt;

use crate::dist::etf::Term;

/// A term sent to a process from another node that does not decode into the
/// process's message type: the process gets `M::from(BadTerm)` in its place, so that
/// it sees what arrived and why it was refused. (A process of message type [`Term`]
/// takes anything.)
#[derive(Clone, Debug, PartialEq)]
pub struct BadTerm {
    /// The term as it arrived.
    pub term: Term,
    /// Why it did not decode.
    pub error: String,
}

impl fmt::Display for BadTerm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} does not decode: {}", self.term, self.error)
    }
}

impl std::error::Error for BadTerm {}

impl From<BadTerm> for Term {
    fn from(b: BadTerm) -> Term {
        b.term
    }
}
