//! Reply addresses that come in terms: process aliases (`alias()`, OTP 24+) and the
//! `From` of a `gen_server` call.
//!
//! An alias is a reference that messages can be sent to (`Alias ! Msg`, the
//! `ALIAS_SEND` control message): the process that made it receives them while the
//! alias is active, and a message to an inactive alias (or to a reference that never
//! was one) is dropped by the node that made it, as Erlang does. Nothing on the wire
//! tells an alias from another reference, so any reference decodes into an [`Alias`];
//! what makes it one is the protocol the peer follows. The `From` of
//! `{'$gen_call', From, Request}` is `{Pid, Tag}`, where `Tag` is `[alias | Ref]` from
//! OTP 24+ callers (the reply goes to the alias) or a plain reference from older ones
//! (the reply goes to `Pid`, tagged): [`CallFrom::reply`] follows that rule, the rule
//! [`RemoteServer`](crate::dist::RemoteServer)s are answered by.

use std::fmt;
use std::sync::{Arc, Weak};

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

use crate::dist::connection;
use crate::dist::control::Control;
use crate::dist::etf::{self, EncodeError, ExternalPid, ExternalRef, Term};
use crate::dist::node::{Node, NodeShared};

/// A process alias of another node (or of this one), from a term: sending to it is
/// Erlang's `Alias ! Message` (module docs). Decodes from any reference; encodes as
/// that reference.
#[derive(Clone)]
pub struct Alias {
    reference: ExternalRef,
    node: Weak<NodeShared>,
}

impl Alias {
    /// The reference the alias is.
    pub fn reference(&self) -> &ExternalRef {
        &self.reference
    }

    /// Sends `message` to the alias (`Alias ! Message`), connecting to its node if
    /// needed. As in Erlang, a send to an alias that is no longer active, or to a node
    /// that cannot be reached, is dropped without a word; an error only if `message`
    /// cannot be encoded (or this node has stopped: [`AliasError::NoNode`]).
    pub fn send<M: Serialize + ?Sized>(&self, message: &M) -> Result<(), AliasError> {
        let node = self.node.upgrade().ok_or(AliasError::NoNode)?;
        let payload = crate::dist::with_node(&node, || etf::to_vec(message))?;
        send_to_alias(&node, &self.reference, &payload)?;
        Ok(())
    }
}

impl PartialEq for Alias {
    fn eq(&self, other: &Alias) -> bool {
        self.reference == other.reference
    }
}

impl Eq for Alias {}

impl std::hash::Hash for Alias {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.reference.hash(h);
    }
}

impl fmt::Debug for Alias {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Alias({})", Term::Ref(self.reference.clone()))
    }
}

impl Serialize for Alias {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.reference.serialize(s)
    }
}

/// Decodes a reference, on a node's connection (or a node's own delivery): outside
/// one, there is no node to send from, and decoding fails.
impl<'de> Deserialize<'de> for Alias {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Alias, D::Error> {
        let reference = ExternalRef::deserialize(d)?;
        let node = crate::dist::current_node()
            .ok_or_else(|| de::Error::custom("an Alias decodes only on a node"))?;
        Ok(Alias {
            reference,
            node: Arc::downgrade(&node),
        })
    }
}

impl Node {
    /// The alias `reference` names (a reference from a term), for sending to it.
    pub fn alias(&self, reference: ExternalRef) -> Alias {
        Alias {
            reference,
            node: Arc::downgrade(&self.shared),
        }
    }
}

/// Why a reply or a send to an alias was not sent.
#[derive(Debug)]
pub enum AliasError {
    /// The message does not encode.
    Encode(EncodeError),
    /// The node it came from has stopped.
    NoNode,
}

impl From<EncodeError> for AliasError {
    fn from(e: EncodeError) -> AliasError {
        AliasError::Encode(e)
    }
}

impl fmt::Display for AliasError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AliasError::Encode(e) => write!(f, "the message does not encode: {e}"),
            AliasError::NoNode => f.write_str("the node has stopped"),
        }
    }
}

impl std::error::Error for AliasError {}

/// The `From` of a `gen_server` call (`{'$gen_call', From, Request}`): the caller's
/// pid and its tag. [`CallFrom::reply`] is `gen_server:reply(From, Reply)`.
#[derive(Clone)]
pub struct CallFrom {
    pid: ExternalPid,
    tag: Term,
    node: Weak<NodeShared>,
}

impl CallFrom {
    /// The calling process.
    pub fn pid(&self) -> &ExternalPid {
        &self.pid
    }

    /// The caller's alias, if its tag is `[alias | Ref]` (OTP 24+).
    pub fn alias(&self) -> Option<Alias> {
        alias_of(&self.tag).map(|reference| Alias {
            reference: reference.clone(),
            node: self.node.clone(),
        })
    }

    /// Sends `{Tag, Reply}` to the caller: to its alias if it has one, else to its pid
    /// (module docs). As in Erlang, a reply to a caller that has given up is dropped;
    /// an error only if `reply` cannot be encoded or the node has stopped.
    pub fn reply<R: Serialize + ?Sized>(&self, reply: &R) -> Result<(), AliasError> {
        let node = self.node.upgrade().ok_or(AliasError::NoNode)?;
        let payload = crate::dist::with_node(&node, || etf::to_vec(&(&self.tag, reply)))?;
        match alias_of(&self.tag) {
            Some(alias) => send_to_alias(&node, alias, &payload)?,
            None => send_to_pid(&node, &self.pid, &payload)?,
        }
        Ok(())
    }
}

impl fmt::Debug for CallFrom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CallFrom({})",
            Term::Tuple(vec![Term::Pid(self.pid.clone()), self.tag.clone()])
        )
    }
}

impl Serialize for CallFrom {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (&self.pid, &self.tag).serialize(s)
    }
}

/// Decodes `{Pid, Tag}`, on a node (as [`Alias`]).
impl<'de> Deserialize<'de> for CallFrom {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<CallFrom, D::Error> {
        let (pid, tag) = <(ExternalPid, Term)>::deserialize(d)?;
        let node = crate::dist::current_node()
            .ok_or_else(|| de::Error::custom("a CallFrom decodes only on a node"))?;
        Ok(CallFrom {
            pid,
            tag,
            node: Arc::downgrade(&node),
        })
    }
}

/// The reference of an `[alias | Ref]` tag.
pub(crate) fn alias_of(tag: &Term) -> Option<&ExternalRef> {
    match tag {
        Term::ImproperList(head, tail) if head.len() == 1 && head[0] == Term::atom("alias") => {
            match &**tail {
                Term::Ref(r) => Some(r),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `ALIAS_SEND` of an encoded `payload` to `alias`: over the connection to its node,
/// or here if it is one of this node's (`local.rs`).
pub(crate) fn send_to_alias(
    node: &Arc<NodeShared>,
    alias: &ExternalRef,
    payload: &[u8],
) -> Result<(), EncodeError> {
    let control = Control::AliasSend {
        from: connection::node_pid(node),
        alias: alias.clone(),
    };
    send(node, &alias.node, &control, payload)
}

/// `SEND` of an encoded `payload` to `pid`, as [`send_to_alias`].
pub(crate) fn send_to_pid(
    node: &Arc<NodeShared>,
    pid: &ExternalPid,
    payload: &[u8],
) -> Result<(), EncodeError> {
    let control = Control::Send { to: pid.clone() };
    send(node, &pid.node, &control, payload)
}

fn send(
    node: &Arc<NodeShared>,
    to: &etf::Atom,
    control: &Control,
    payload: &[u8],
) -> Result<(), EncodeError> {
    if *to == node.name {
        crate::dist::local::deliver(node, control, payload);
        return Ok(());
    }
    let frame = connection::frame_raw(control, payload)?;
    connection::get_or_connect(node, to).send_frame(frame);
    Ok(())
}
