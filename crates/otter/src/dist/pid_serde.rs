//! `Pid<M>` in terms: a local pid leaving the node, a pid coming in.
//!
//! Both go through the codec's raw-term hook, and need the node doing the encoding
//! or decoding (`dist::with_node`).
//!
//! * **Encoding** a local `Pid<M>` exports it: the node records how to decode an `M`
//!   for it (`M: DeserializeOwned + From<BadTerm>`), so that the peer can send to it.
//! * **Decoding** a pid of another node interns it as a remote pid and records `M`'s
//!   encoder (`M: Serialize`). Decoding a pid of *this* node into `Pid<M>` succeeds
//!   only if that process was exported as a `Pid<M>`: a peer cannot make otter
//!   believe a process takes messages of a type it does not.

use std::any::TypeId;
use std::fmt;
use std::sync::PoisonError;

use serde::de::{self, DeserializeOwned, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::dist::bad_term::BadTerm;
use crate::dist::etf::{self, Term};
use crate::dist::node::{Exported, exported};
use crate::pid::{Pid, RawPid};

struct Bytes<'a>(&'a [u8]);

impl Serialize for Bytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

impl<M> Serialize for Pid<M>
where
    M: DeserializeOwned + From<BadTerm> + Send + 'static,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_pid(self.raw, exported::<M>, s)
    }
}

/// Serializes `raw` as a pid: a remote pid as its node's pid term, a local one as a
/// pid of this node, exported with the record `export` makes (how a message for it
/// decodes: `node.rs`'s `Exported`).
pub(crate) fn serialize_pid<S: Serializer>(
    raw: RawPid,
    export: impl FnOnce(RawPid) -> Exported,
    s: S,
) -> Result<S::Ok, S::Error> {
    let Some(node) = crate::dist::current_node() else {
        return Err(serde::ser::Error::custom(
            "a Pid is encoded only by a node's distribution",
        ));
    };
    let pid = match crate::dist::remote::resolve(raw) {
        Some((_, p)) => p,
        None if raw.is_remote() => {
            return Err(serde::ser::Error::custom(
                "a pid of another node whose connection has gone down",
            ));
        }
        None => {
            node.export(export(raw));
            node.external_pid(raw)
        }
    };
    let mut body = Vec::with_capacity(32);
    etf::encode_term_body(&Term::Pid(pid), &mut body);
    s.serialize_newtype_struct(etf::RAW_TERM, &Bytes(&body))
}

struct PidVisitor<M>(std::marker::PhantomData<fn(M)>);

impl<'de, M: Serialize + Send + 'static> Visitor<'de> for PidVisitor<M> {
    type Value = Pid<M>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a pid")
    }

    fn visit_bytes<E: de::Error>(self, b: &[u8]) -> Result<Pid<M>, E> {
        let Some(node) = crate::dist::current_node() else {
            return Err(E::custom("a Pid is decoded only by a node's distribution"));
        };
        let pid = match etf::decode_term_body(b).map_err(E::custom)? {
            Term::Pid(p) => p,
            other => return Err(E::custom(format!("expected a pid, got {other}"))),
        };
        if let Some(raw) = node.local_pid(&pid) {
            let ok = node
                .exported
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&raw)
                .is_some_and(|e| e.type_id == TypeId::of::<M>());
            if !ok {
                return Err(E::custom(format!(
                    "{pid:?} is a pid of this node that was not sent out as a Pid of this type"
                )));
            }
            return Ok(Pid::from_raw(raw));
        }
        if pid.node == node.name {
            return Err(E::custom(format!(
                "{pid:?} is a pid of an earlier run of this node"
            )));
        }
        crate::dist::route::register_encoder::<M>();
        let via = crate::dist::current_via().unwrap_or_else(|| pid.node.clone());
        Ok(Pid::from_raw(crate::dist::remote::intern(
            &node, &pid, &via,
        )))
    }

    fn visit_borrowed_bytes<E: de::Error>(self, b: &'de [u8]) -> Result<Pid<M>, E> {
        self.visit_bytes(b)
    }

    // Buffered by serde (an untagged or internally tagged enum), the raw term comes
    // back as newtypes around its bytes (`etf::de`'s `RawNewtype`): unwrap them.
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Pid<M>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, M: Serialize + Send + 'static> Deserialize<'de> for Pid<M> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Pid<M>, D::Error> {
        d.deserialize_newtype_struct(etf::RAW_TERM, PidVisitor(std::marker::PhantomData))
    }
}
