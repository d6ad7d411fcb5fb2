//! A call's outcome that arrives before its future is first polled is the call's
//! outcome: the future holds its pending entry from the request on, so the entry
//! leaving the node's table when the answer is read does not lose the answer. A
//! peer played by hand (the real handshake, then frames) answers at once; the
//! caller awaits the call only after a message the peer sent behind its answer.
//!
//! And a connection's end ends the calls sent over it, not those a peer that came
//! back at once has on its next connection (for `erpc` here and for `gen_server`
//! calls, `call.rs`).

use std::sync::{Arc, Mutex};

use crate::dist::ErpcError;
use crate::dist::control::{Control, Target};
use crate::dist::etf::{Atom, ExternalPid, Term};
use crate::dist::tests::{In, WAIT, handshaken, hold_open, read_frame, test_node};
use crate::{Context, Runtime};

fn frame(c: &Control, payload: Option<&Term>) -> Vec<u8> {
    crate::dist::connection::frame(c, payload).unwrap()
}

/// Plays the peer: connects, greets `caller` with its node's name, then answers the first `SPAWN_REQUEST`
/// with its `SPAWN_REPLY`, the monitor's exit `{Res, return, 5}`, and a message
/// `answered` to `caller`, all in one write.
async fn answering_peer(target: String) {
    let (mut s, me) = handshaken(&target, "peer", 7).await;
    let to_caller = |what: &str| {
        frame(
            &Control::RegSend {
                from: me.clone(),
                to: Atom::new("caller"),
            },
            Some(&Term::atom(what)),
        )
    };
    s.write_all(&to_caller(me.node.as_str())).await.unwrap();
    let (control, payload) = loop {
        let (control, payload) = read_frame(&mut s).await;
        if let Ok(c @ Control::SpawnRequest { .. }) = Control::decode(&control, payload.as_ref()) {
            break (c, payload);
        }
    };
    let Control::SpawnRequest { req_id, from, .. } = control else {
        unreachable!()
    };
    // `[Res, erlang, abs, [-5]]`: `Res` tags the outcome.
    let Some(Term::List(args)) = payload else {
        panic!("an erpc request carries its arguments: {payload:?}")
    };
    let spawned = ExternalPid {
        node: me.node.clone(),
        id: 2,
        serial: 0,
        creation: 7,
    };
    let mut out = frame(
        &Control::SpawnReply {
            req_id: req_id.clone(),
            to: from.clone(),
            flags: 0,
            result: Term::Pid(spawned.clone()),
        },
        None,
    );
    out.extend(frame(
        &Control::MonitorExit {
            from: Target::Pid(spawned),
            to: from,
            reference: req_id,
            reason: Some(Term::Tuple(vec![
                args[0].clone(),
                Term::atom("return"),
                Term::Int(5),
            ])),
        },
        None,
    ));
    out.extend(to_caller("answered"));
    s.write_all(&out).await.unwrap();
    hold_open(&mut s).await;
}

#[test]
fn an_answer_read_before_the_call_is_awaited_is_the_calls_outcome() {
    for threads in [1, 2] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let node = test_node(&rt);
        let target = node.name().to_string();
        let n = node.clone();
        let outcome = rt
            .block_on(move |mut cx: Context<In>| async move {
                n.register("caller", cx.pid());
                cx.spawn(move |_: Context<()>| answering_peer(target));
                // The connection is up on this side once the greeting is here.
                let peer = match cx.recv().await {
                    In::Term(Term::Atom(a)) => a.as_str().to_string(),
                    other => panic!("{other:?}"),
                };
                let is = |m: In, what: &str| matches!(m, In::Term(t) if t == Term::atom(what));
                let call = n.erpc_call::<_, _, i64>(&cx, &peer, "erlang", "abs", &(-5i64,), WAIT);
                // The peer's message behind its answer: the reader has handled the answer.
                assert!(is(cx.recv().await, "answered"));
                call.await
            })
            .unwrap();
        assert_eq!(outcome, Ok::<i64, ErpcError>(5), "{threads} worker(s)");
    }
}

#[test]
fn a_connections_end_ends_the_calls_sent_over_it_and_no_others() {
    let rt = Runtime::builder().threads(1).build().unwrap();
    let node = test_node(&rt);
    let shared = &node.shared;
    let erpc = |conn| {
        Arc::new(Mutex::new(super::Pending {
            peer: Atom::new("peer@host"),
            conn,
            pid: None,
            outcome: None,
            waker: None,
        }))
    };
    let (old, new) = (erpc(1), erpc(2));
    let mut table = shared.erpc.pending.lock().unwrap();
    table.insert(vec![1], old.clone());
    table.insert(vec![2], new.clone());
    drop(table);
    let call = crate::dist::call::tests::pending_on;
    let (old_call, new_call) = (call(shared, 1, vec![1]), call(shared, 2, vec![2]));

    // The first connection to the peer goes down; the second is up.
    super::connection_down(shared, 1);
    crate::dist::call::connection_down(shared, 1);

    assert_eq!(
        old.lock().unwrap().outcome,
        Some(Err(ErpcError::Noconnection))
    );
    assert_eq!(new.lock().unwrap().outcome, None);
    let table = shared.erpc.pending.lock().unwrap();
    assert!(!table.contains_key(&vec![1]) && table.contains_key(&vec![2]));
    drop(table);
    assert!(crate::dist::call::tests::ended_with_noconnection(&old_call));
    assert!(!crate::dist::call::tests::ended_with_noconnection(
        &new_call
    ));
}
