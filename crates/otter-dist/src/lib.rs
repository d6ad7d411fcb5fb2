//! The Erlang distribution protocol, as the reference manual's `erl_dist_protocol` and
//! `erl_ext_dist` chapters describe it, with no runtime: bytes in, values out, and
//! the handshake over any `futures-io` stream. `otter-otp` builds its nodes on it
//! (`otter::dist`), and re-exports [`etf`] as `otter::dist::etf`.
//!
//! | module | what it is | reference |
//! |---|---|---|
//! | [`etf`] | the external term format (`term_to_binary`'s bytes): a [`Term`](etf::Term) tree and a serde mapping | `erl_ext_dist` |
//! | [`handshake`] | the connection handshake, version 6, both sides | `erl_dist_protocol`, "Distribution Handshake" |
//! | [`epmd`] | the port mapper's client: register a node, find one | `erl_dist_protocol`, "EPMD Protocol" |
//! | [`flags`] | the capability flags the handshake exchanges | `erl_dist_protocol`, "Distribution Flags" |
//! | [`control`] | the control messages that start every frame once connected | `erl_dist_protocol`, "Protocol between Connected Nodes" |
//!
//! # Invariants
//!
//! Bad input from a peer is an error value, never a panic, and nothing is allocated
//! past the limits each module states (a term's depth and atom length, a handshake
//! message's 65,535 bytes). Nothing here logs: errors carry what happened, and the
//! caller reports it.

pub mod control;
pub mod epmd;
pub mod etf;
pub mod flags;
pub mod handshake;
