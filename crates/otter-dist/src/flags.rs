//! Distribution capability flags (`DFLAG_*`), exchanged in the handshake.
//!
//! Each node announces a 64-bit set; the connection uses what both announce. An
//! OTP 25 node refuses a peer lacking [`DistFlags::MANDATORY_25`] (and OTP 26 also
//! [`UNLINK_ID`](DistFlags::UNLINK_ID) and [`V4_NC`](DistFlags::V4_NC)).
//!
//! What otter announces, [`DistFlags::OURS`]: the mandatory set of OTP 25 and 26, its
//! digest bit, and what the rest of otter honours:
//!
//! | announced | why |
//! |---|---|
//! | `MANDATORY_25` (11 flags), `MANDATORY_25_DIGEST` | required by OTP 25; the digest by OTP 27 |
//! | `UNLINK_ID`, `V4_NC` | required by OTP 26 (the new link protocol; big pids, ports, refs) |
//! | `DIST_MONITOR`, `DIST_MONITOR_NAME` | otter processes monitor remote pids and names |
//! | `ALIAS` | otter handles the `ALIAS_SEND` control messages |
//! | `SPAWN` | otter answers `SPAWN_REQUEST` (`erpc`, `rpc`: `erpc.rs`) and sends it (`Node::erpc_call`) |
//! | `PUBLISHED` | only for a normal node: otter is a hidden node by default |
//!
//! Not announced: `DIST_HDR_ATOM_CACHE` and `FRAGMENTS` (otter sends and expects plain
//! pass-through `'p'` frames), `SEND_SENDER` (the peer sends `SEND`, which otter
//! handles anyway), `EXIT_PAYLOAD`, `BIG_SEQTRACE_LABELS`, `UNICODE_IO`,
//! `SMALL_ATOM_TAGS` (UTF-8 atoms are used instead), `NAME_ME`, and the obsolete ones.
//!
//! What otter requires of a peer, [`DistFlags::REQUIRED`]: `MANDATORY_25`, `UNLINK_ID`
//! and `V4_NC`, what any OTP 24 or later node announces. A peer that announces
//! `MANDATORY_25_DIGEST` is taken to have the 11 flags it stands for
//! ([`DistFlags::normalised`]).

use std::fmt;
use std::ops::{BitAnd, BitOr};

/// A set of distribution capability flags, as sent in the handshake (64 bits).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DistFlags(u64);

impl DistFlags {
    /// The node is to be published and part of the global namespace (clear: hidden).
    pub const PUBLISHED: DistFlags = DistFlags(0x01);
    /// The node implements an atom cache (obsolete).
    pub const ATOM_CACHE: DistFlags = DistFlags(0x02);
    /// Extended (3 × 32 bits) references (mandatory).
    pub const EXTENDED_REFERENCES: DistFlags = DistFlags(0x04);
    /// Distributed process monitoring.
    pub const DIST_MONITOR: DistFlags = DistFlags(0x08);
    /// Separate tags for funs (mandatory).
    pub const FUN_TAGS: DistFlags = DistFlags(0x10);
    /// Distributed monitoring of registered names.
    pub const DIST_MONITOR_NAME: DistFlags = DistFlags(0x20);
    /// The (hidden) node implements an atom cache (obsolete).
    pub const HIDDEN_ATOM_CACHE: DistFlags = DistFlags(0x40);
    /// `NEW_FUN_EXT` (mandatory).
    pub const NEW_FUN_TAGS: DistFlags = DistFlags(0x80);
    /// Extended pids and ports (mandatory).
    pub const EXTENDED_PIDS_PORTS: DistFlags = DistFlags(0x100);
    /// `EXPORT_EXT` (mandatory).
    pub const EXPORT_PTR_TAG: DistFlags = DistFlags(0x200);
    /// `BIT_BINARY_EXT` (mandatory).
    pub const BIT_BINARIES: DistFlags = DistFlags(0x400);
    /// `NEW_FLOAT_EXT` (mandatory).
    pub const NEW_FLOATS: DistFlags = DistFlags(0x800);
    /// Unicode I/O (no documented meaning on the wire).
    pub const UNICODE_IO: DistFlags = DistFlags(0x1000);
    /// The atom cache in the distribution header (`'D'` frames instead of `'p'`).
    pub const DIST_HDR_ATOM_CACHE: DistFlags = DistFlags(0x2000);
    /// `SMALL_ATOM_EXT`.
    pub const SMALL_ATOM_TAGS: DistFlags = DistFlags(0x4000);
    /// `ATOM_UTF8_EXT` and `SMALL_ATOM_UTF8_EXT` (mandatory).
    pub const UTF8_ATOMS: DistFlags = DistFlags(0x1_0000);
    /// `MAP_EXT` (mandatory).
    pub const MAP_TAG: DistFlags = DistFlags(0x2_0000);
    /// 32-bit creations: `NEW_PID_EXT`, `NEW_PORT_EXT`, `NEWER_REFERENCE_EXT` (mandatory).
    pub const BIG_CREATION: DistFlags = DistFlags(0x4_0000);
    /// `SEND_SENDER` control messages instead of `SEND`.
    pub const SEND_SENDER: DistFlags = DistFlags(0x8_0000);
    /// Any term as a seq-trace label.
    pub const BIG_SEQTRACE_LABELS: DistFlags = DistFlags(0x10_0000);
    /// `PAYLOAD_EXIT*` control messages instead of `EXIT*`.
    pub const EXIT_PAYLOAD: DistFlags = DistFlags(0x40_0000);
    /// Fragmented distribution messages (needs the distribution header).
    pub const FRAGMENTS: DistFlags = DistFlags(0x80_0000);
    /// The version 6 handshake of OTP 23 (mandatory since OTP 25).
    pub const HANDSHAKE_23: DistFlags = DistFlags(0x100_0000);
    /// The new link protocol, `UNLINK_ID` (mandatory since OTP 26).
    pub const UNLINK_ID: DistFlags = DistFlags(0x200_0000);
    /// Stands for all of [`DistFlags::MANDATORY_25`] (OTP 25; mandatory from OTP 27).
    pub const MANDATORY_25_DIGEST: DistFlags = DistFlags(0x400_0000);
    /// `SPAWN_REQUEST`/`SPAWN_REPLY` control messages.
    pub const SPAWN: DistFlags = DistFlags(1 << 32);
    /// A request for a dynamic node name (not a capability).
    pub const NAME_ME: DistFlags = DistFlags(1 << 33);
    /// Node containers version 4: 32-bit pid fields, 64-bit ports, 5-word refs (mandatory since OTP 26).
    pub const V4_NC: DistFlags = DistFlags(1 << 34);
    /// Process aliases: `ALIAS_SEND` and `ALIAS_SEND_TT` control messages (OTP 24).
    pub const ALIAS: DistFlags = DistFlags(1 << 35);

    /// What OTP 25 requires of every peer (`?MANDATORY_DFLAGS_25` in OTP's `dist.hrl`).
    pub const MANDATORY_25: DistFlags = DistFlags(
        Self::EXTENDED_REFERENCES.0
            | Self::FUN_TAGS.0
            | Self::EXTENDED_PIDS_PORTS.0
            | Self::NEW_FUN_TAGS.0
            | Self::EXPORT_PTR_TAG.0
            | Self::BIT_BINARIES.0
            | Self::NEW_FLOATS.0
            | Self::UTF8_ATOMS.0
            | Self::MAP_TAG.0
            | Self::BIG_CREATION.0
            | Self::HANDSHAKE_23.0,
    );

    /// What otter requires of a peer: a peer lacking any is refused.
    pub const REQUIRED: DistFlags =
        DistFlags(Self::MANDATORY_25.0 | Self::UNLINK_ID.0 | Self::V4_NC.0);

    /// What an otter node announces when hidden (the default); a normal node adds
    /// [`DistFlags::PUBLISHED`]. See the module docs for the choice.
    pub const OURS: DistFlags = DistFlags(
        Self::REQUIRED.0
            | Self::MANDATORY_25_DIGEST.0
            | Self::DIST_MONITOR.0
            | Self::DIST_MONITOR_NAME.0
            | Self::ALIAS.0
            | Self::SPAWN.0,
    );

    /// What otter announces: [`DistFlags::OURS`], plus `PUBLISHED` for a normal node.
    pub const fn ours(hidden: bool) -> DistFlags {
        if hidden {
            Self::OURS
        } else {
            DistFlags(Self::OURS.0 | Self::PUBLISHED.0)
        }
    }

    /// The flags of these bits, unknown ones kept.
    pub const fn from_bits(bits: u64) -> DistFlags {
        DistFlags(bits)
    }

    /// The bits.
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// Whether every flag of `other` is set here.
    pub const fn contains(self, other: DistFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// The flags of `other` not set here.
    pub const fn missing(self, other: DistFlags) -> DistFlags {
        DistFlags(other.0 & !self.0)
    }

    /// Whether no flag is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether the node announcing these flags is hidden (`PUBLISHED` clear).
    pub const fn is_hidden(self) -> bool {
        !self.contains(Self::PUBLISHED)
    }

    /// These flags with [`DistFlags::MANDATORY_25`] added if `MANDATORY_25_DIGEST` is
    /// set: what a peer's flags mean.
    pub const fn normalised(self) -> DistFlags {
        if self.contains(Self::MANDATORY_25_DIGEST) {
            DistFlags(self.0 | Self::MANDATORY_25.0)
        } else {
            self
        }
    }

    /// The name of each known flag set here, low bits first, then the unknown bits.
    fn names(self) -> impl Iterator<Item = &'static str> {
        let unknown = self.0 & !NAMES.iter().fold(0, |all, (f, _)| all | f.0);
        NAMES
            .iter()
            .filter(move |(f, _)| self.contains(*f))
            .map(|(_, n)| *n)
            .chain((unknown != 0).then_some("(unknown bits)"))
    }
}

const NAMES: [(DistFlags, &str); 31] = [
    (DistFlags::PUBLISHED, "PUBLISHED"),
    (DistFlags::ATOM_CACHE, "ATOM_CACHE"),
    (DistFlags::EXTENDED_REFERENCES, "EXTENDED_REFERENCES"),
    (DistFlags::DIST_MONITOR, "DIST_MONITOR"),
    (DistFlags::FUN_TAGS, "FUN_TAGS"),
    (DistFlags::DIST_MONITOR_NAME, "DIST_MONITOR_NAME"),
    (DistFlags::HIDDEN_ATOM_CACHE, "HIDDEN_ATOM_CACHE"),
    (DistFlags::NEW_FUN_TAGS, "NEW_FUN_TAGS"),
    (DistFlags::EXTENDED_PIDS_PORTS, "EXTENDED_PIDS_PORTS"),
    (DistFlags::EXPORT_PTR_TAG, "EXPORT_PTR_TAG"),
    (DistFlags::BIT_BINARIES, "BIT_BINARIES"),
    (DistFlags::NEW_FLOATS, "NEW_FLOATS"),
    (DistFlags::UNICODE_IO, "UNICODE_IO"),
    (DistFlags::DIST_HDR_ATOM_CACHE, "DIST_HDR_ATOM_CACHE"),
    (DistFlags::SMALL_ATOM_TAGS, "SMALL_ATOM_TAGS"),
    (DistFlags::UTF8_ATOMS, "UTF8_ATOMS"),
    (DistFlags::MAP_TAG, "MAP_TAG"),
    (DistFlags::BIG_CREATION, "BIG_CREATION"),
    (DistFlags::SEND_SENDER, "SEND_SENDER"),
    (DistFlags::BIG_SEQTRACE_LABELS, "BIG_SEQTRACE_LABELS"),
    (DistFlags::EXIT_PAYLOAD, "EXIT_PAYLOAD"),
    (DistFlags::FRAGMENTS, "FRAGMENTS"),
    (DistFlags::HANDSHAKE_23, "HANDSHAKE_23"),
    (DistFlags::UNLINK_ID, "UNLINK_ID"),
    (DistFlags::MANDATORY_25_DIGEST, "MANDATORY_25_DIGEST"),
    (DistFlags::SPAWN, "SPAWN"),
    (DistFlags::NAME_ME, "NAME_ME"),
    (DistFlags::V4_NC, "V4_NC"),
    (DistFlags::ALIAS, "ALIAS"),
    // Bits OTP uses internally or reserves: named so that a dump reads whole.
    (DistFlags(0x8000), "ETS_COMPRESSED (internal)"),
    (DistFlags(0x20_0000), "PENDING_CONNECT (internal)"),
];

impl BitOr for DistFlags {
    type Output = DistFlags;
    fn bitor(self, rhs: DistFlags) -> DistFlags {
        DistFlags(self.0 | rhs.0)
    }
}

impl BitAnd for DistFlags {
    type Output = DistFlags;
    fn bitand(self, rhs: DistFlags) -> DistFlags {
        DistFlags(self.0 & rhs.0)
    }
}

/// The flag names joined by `|` (`(none)` when empty).
impl fmt::Display for DistFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("(none)");
        }
        for (i, name) in self.names().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            f.write_str(name)?;
        }
        Ok(())
    }
}

impl fmt::Debug for DistFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DistFlags({:#x}: {self})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_otter_announces_covers_what_otp_25_and_26_require() {
        for hidden in [true, false] {
            let ours = DistFlags::ours(hidden);
            assert!(ours.contains(DistFlags::MANDATORY_25));
            assert!(ours.contains(DistFlags::UNLINK_ID | DistFlags::V4_NC));
            assert!(ours.contains(DistFlags::REQUIRED));
            assert_eq!(ours.is_hidden(), hidden);
            // Plain 'p' frames only.
            assert!(!ours.contains(DistFlags::DIST_HDR_ATOM_CACHE));
            assert!(!ours.contains(DistFlags::FRAGMENTS));
        }
    }

    #[test]
    fn the_values_are_those_of_otp_dist_hrl() {
        assert_eq!(DistFlags::MANDATORY_25.bits(), 0x0107_0f94);
        assert_eq!(DistFlags::HANDSHAKE_23.bits(), 0x0100_0000);
        assert_eq!(DistFlags::V4_NC.bits(), 0x4_0000_0000);
        assert_eq!(DistFlags::ALIAS.bits(), 0x8_0000_0000);
    }

    #[test]
    fn the_digest_stands_for_the_mandatory_25_flags() {
        let peer = DistFlags::MANDATORY_25_DIGEST | DistFlags::UNLINK_ID | DistFlags::V4_NC;
        assert!(peer.missing(DistFlags::REQUIRED).bits() != 0);
        assert!(peer.normalised().missing(DistFlags::REQUIRED).is_empty());
    }

    #[test]
    fn display_names_the_flags() {
        let f = DistFlags::V4_NC | DistFlags::UNLINK_ID;
        assert_eq!(f.to_string(), "UNLINK_ID | V4_NC");
        assert_eq!(DistFlags::default().to_string(), "(none)");
        assert_eq!(DistFlags::from_bits(1 << 63).to_string(), "(unknown bits)");
    }
}
