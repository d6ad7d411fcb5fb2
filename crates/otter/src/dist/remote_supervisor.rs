//! An otter [`supervisor`](crate::supervisor) seen from other nodes: the calls
//! [`SupervisorRequest`] lists (`supervisor:which_children/1`, `count_children/1`),
//! served as a [`RemoteServer`]'s calls (`remote_server.rs`), their replies encoded in
//! OTP's shapes ([`SupervisorReply`]). The rules and the differences from OTP are
//! written once, on [`SupervisorRequest`].

use serde::ser::{SerializeSeq, SerializeTuple};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::dist::bad_term::BadTerm;
use crate::dist::etf::{Atom, Term};
use crate::dist::node::Node;
use crate::dist::remote_server::RemoteServer;
use crate::server::{CallError, ServerRef};
use crate::supervisor::{ChildCounts, ChildError, ChildInfo, ChildKind, Supervisor, SupervisorRef};

/// A call from another node to an otter supervisor, decoded from the request of
/// `gen_server:call`: `supervisor:which_children({Name, OtterNode})` and
/// `supervisor:count_children({Name, OtterNode})` from an Erlang shell (or `observer`).
///
/// A supervisor is a server ([`Supervisor`] implements [`RemoteServer`]), so it is made
/// reachable as one: [`Node::register_supervisor`] for a supervisor by its handle,
/// [`Node::register_server_name::<Supervisor>`](Node::register_server_name) for
/// whichever supervisor holds a registered name (one restarted by its own supervisor
/// is reached again). Its pid in a term is reachable the same way. OTP's system
/// messages (`sys:get_state`, `sys:get_status`, `sys:suspend` ...) are answered as for
/// any server (the [`dist`](crate::dist) docs, "System messages").
///
/// | Erlang | reply |
/// |---|---|
/// | `supervisor:which_children(S)` | `[{Id, Child, Type, Modules}]`, in start order |
/// | `supervisor:count_children(S)` | `[{specs, N}, {active, N}, {supervisors, N}, {workers, N}]` |
/// | any other call (`start_child`, `terminate_child` ...) | `{error, {bad_call, Request}}`: an Erlang child spec names Erlang code, which otter cannot start |
///
/// The shapes of `which_children`, and where they differ from OTP's:
///
/// * **`Id`**: the child spec's id as an atom (an id of more than 255 characters, past
///   Erlang's atom limit, as a binary). A `simple_one_for_one` child has its spec's id
///   too, where OTP gives `undefined`.
/// * **`Child`**: its pid, or `undefined` when it is not running: stopped, and also
///   while a failed restart is being retried, where OTP gives `restarting`
///   ([`ChildInfo::pid`] is `None` for both). A child that is a supervisor is exported
///   as one, so `which_children` works on its pid in turn (a walk of the whole tree);
///   a worker's pid can be monitored, linked to and sent exit signals, and a message
///   sent to it is dropped unless its process was sent out as a typed pid elsewhere
///   (only those are known to decode: the [`dist`](crate::dist) docs).
/// * **`Type`**: `worker` or `supervisor`.
/// * **`Modules`**: `[]`. OTP's `[Module]` names the callback module that a release
///   upgrade suspends; no Erlang module runs in an otter child, and `dynamic` would
///   make the release handler ask the child for its modules with a system message it
///   does not answer.
///
/// A name that no supervisor holds is answered as for any name: the caller's monitor
/// reports `noproc`, and `supervisor:which_children` exits with `{noproc,
/// {gen_server, call, [..]}}`, as against an Erlang node. Casts and plain messages to
/// a supervisor from another node are dropped.
///
/// ```no_run
/// use otter::dist::Node;
/// use otter::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
/// use otter::{Context, Runtime};
///
/// let rt = Runtime::new();
/// let node = Node::builder("otter@localhost").cookie("secret").start(&rt.handle()).unwrap();
/// rt.block_on(move |cx: Context<()>| async move {
///     let spec = SupervisorSpec::new(Strategy::OneForOne)
///         .child(ChildSpec::process("worker", || |mut c: Context<()>| async move { c.recv().await }));
///     let top = supervisor::start_link(&cx, spec).await.unwrap();
///     node.register_supervisor("top", top);
///     // erl> supervisor:which_children({top, 'otter@localhost'}).
///     // [{worker,<13922.5.0>,worker,[]}]
///     // erl> supervisor:count_children({top, 'otter@localhost'}).
///     // [{specs,1},{active,1},{supervisors,0},{workers,1}]
///     # drop(top);
/// })
/// .unwrap();
/// ```
///
/// [`Supervisor`]: crate::supervisor::Supervisor
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SupervisorRequest {
    /// `supervisor:which_children/1`.
    WhichChildren,
    /// `supervisor:count_children/1`.
    CountChildren,
}

/// The reply to a [`SupervisorRequest`], encoded in OTP's shapes (see there).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SupervisorReply {
    /// `[{Id, Child, Type, Modules}]`.
    Children(Vec<ChildInfo>),
    /// `[{specs, N}, {active, N}, {supervisors, N}, {workers, N}]`.
    Counts(ChildCounts),
}

/// From the atoms `which_children` and `count_children`; anything else is a decoding
/// error (the caller gets `{error, {bad_call, Request}}`).
impl<'de> Deserialize<'de> for SupervisorRequest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SupervisorRequest, D::Error> {
        let a = Atom::deserialize(d)?;
        match a.as_str() {
            "which_children" => Ok(SupervisorRequest::WhichChildren),
            "count_children" => Ok(SupervisorRequest::CountChildren),
            other => Err(serde::de::Error::custom(format!(
                "not a supervisor request an otter supervisor serves: {other}"
            ))),
        }
    }
}

impl RemoteServer for Supervisor {
    type RemoteCall = SupervisorRequest;
    type RemoteReply = SupervisorReply;
    /// A supervisor takes no casts: whatever decodes is dropped.
    type RemoteCast = ();

    async fn remote_call(
        server: ServerRef<Self>,
        request: SupervisorRequest,
    ) -> Result<SupervisorReply, CallError> {
        let sup = SupervisorRef::from(server);
        let reply = match request {
            SupervisorRequest::WhichChildren => {
                sup.which_children().await.map(SupervisorReply::Children)
            }
            SupervisorRequest::CountChildren => {
                sup.count_children().await.map(SupervisorReply::Counts)
            }
        };
        reply.map_err(|e| match e {
            ChildError::Call(e) => e,
            // These two requests fail only as calls; were another error to come, no
            // reply goes, and the caller's monitor ends its call.
            _ => CallError::Noproc,
        })
    }

    fn remote_cast(_: ()) -> Option<()> {
        None
    }

    /// Plain messages to a supervisor from another node are dropped.
    fn bad_term(_: BadTerm) -> Option<crate::supervisor::TryAgain> {
        None
    }
}

impl Serialize for SupervisorReply {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SupervisorReply::Children(children) => {
                let mut list = s.serialize_seq(Some(children.len()))?;
                for c in children {
                    list.serialize_element(&WhichChild(c))?;
                }
                list.end()
            }
            SupervisorReply::Counts(c) => {
                let count = |k: &str, n: usize| (Atom::new(k), n as u64);
                // A slice: a list (an array would be a tuple).
                let counts = [
                    count("specs", c.specs),
                    count("active", c.active),
                    count("supervisors", c.supervisors),
                    count("workers", c.workers),
                ];
                counts[..].serialize(s)
            }
        }
    }
}

/// One child as `{Id, Child, Type, Modules}`.
struct WhichChild<'a>(&'a ChildInfo);

impl Serialize for WhichChild<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let c = self.0;
        let id = match Atom::try_new(&c.id) {
            Some(a) => Term::Atom(a),
            None => Term::binary(c.id.as_bytes().to_vec()),
        };
        let kind = match c.kind {
            ChildKind::Worker => "worker",
            ChildKind::Supervisor => "supervisor",
        };
        let mut t = s.serialize_tuple(4)?;
        t.serialize_element(&id)?;
        match (&c.supervisor, c.pid) {
            // Exported as a supervisor: its pid takes these requests in turn.
            (Some(sup), _) => t.serialize_element(&sup.server())?,
            (None, Some(pid)) => {
                let Some(node) = crate::dist::current_node() else {
                    return Err(serde::ser::Error::custom(
                        "a pid is encoded only by a node's distribution",
                    ));
                };
                t.serialize_element(&Term::Pid(node.external_pid(pid.0)))?
            }
            (None, None) => t.serialize_element(&Atom::new("undefined"))?,
        }
        t.serialize_element(&Atom::new(kind))?;
        t.serialize_element(&Term::list(Vec::new()))?;
        t.end()
    }
}

impl Node {
    /// Registers `sup` under `name` for other nodes: `supervisor:which_children({Name,
    /// Node})`, `supervisor:count_children` and `sys`'s requests reach it
    /// ([`SupervisorRequest`] gives the shapes). The same as
    /// `node.register_server(name, sup.server())`.
    ///
    /// # Panics
    ///
    /// If `name` is longer than 255 characters (Erlang's limit for an atom).
    pub fn register_supervisor(&self, name: &str, sup: SupervisorRef) {
        self.register_server(name, sup.server());
    }
}
