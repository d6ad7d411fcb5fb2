//! Distribution: an otter node in an Erlang cluster, over Erlang's distribution
//! protocol (feature `dist`).
//!
//! (Chapter to be written with the node.)

pub mod etf;

mod epmd;
mod flags;
mod handshake;
