//! Rule: a `Context` moved out of its process to a plain thread still takes every
//! message that is there. Its receives are not woken by new messages (wake-ups go to
//! the process), but no turn budget applies off the runtime's workers, so a receive
//! polled there never returns `Pending` while a message waits.

#[path = "support/rt.rs"]
mod support;

use std::future::Future;
use std::pin::pin;
use std::sync::mpsc;
use std::task::{Context as TaskContext, Poll, Waker};

use otter::{Context, Runtime};

/// Polls `f` once on this thread.
fn poll_once<F: Future>(f: F) -> Poll<F::Output> {
    let mut f = pin!(f);
    f.as_mut().poll(&mut TaskContext::from_waker(Waker::noop()))
}

const MESSAGES: u32 = 1_000;

rt_test!(
    a_context_moved_to_a_plain_thread_takes_every_waiting_message,
    |rt: &Runtime| {
        let (tx, rx) = mpsc::channel();
        let pid = rt.handle().spawn(move |cx: Context<u32>| async move {
            tx.send(cx).unwrap();
            // The process stays alive without its context, so its pid takes messages.
            std::future::pending::<()>().await
        });
        let mut cx = rx.recv().unwrap();
        for i in 0..MESSAGES {
            pid.send(i);
        }
        for i in 0..MESSAGES {
            match poll_once(cx.recv()) {
                Poll::Ready(m) => assert_eq!(m, i),
                Poll::Pending => panic!("recv returned Pending with message {i} waiting"),
            }
        }
        for i in 0..MESSAGES {
            pid.send(i);
        }
        // Selective receive: the odd ones, then the even ones saved meanwhile.
        for i in (1..MESSAGES).step_by(2) {
            let got = poll_once(cx.recv_match(|m| m % 2 == 1));
            assert_eq!(got, Poll::Ready(i), "recv_match with {i} waiting");
        }
        for i in (0..MESSAGES).step_by(2) {
            assert_eq!(poll_once(cx.recv()), Poll::Ready(i), "recv with {i} saved");
        }
        drop(cx);
    }
);
