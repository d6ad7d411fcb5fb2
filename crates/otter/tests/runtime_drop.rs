//! Rule: a `Runtime` dropped on any thread, its own workers and its timer thread
//! included, shuts down cleanly: every process still alive is ended (its future and
//! what it owns are dropped), and pids of that runtime stay safe to use afterwards.

#[path = "support/rt.rs"]
mod support;

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use otter::{Context, Pid, Runtime};
use support::MANY;

/// Tells the test when it is dropped, i.e. when the shutdown ends its process.
struct Guard(mpsc::Sender<()>);
impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// A process that waits for ever, holding a `Guard`.
fn spawn_waiter(rt: &Runtime) -> (Pid<()>, mpsc::Receiver<()>) {
    let (tx, rx) = mpsc::channel();
    let pid = rt.handle().spawn(move |_: Context<()>| async move {
        let _guard = Guard(tx);
        std::future::pending::<()>().await
    });
    (pid, rx)
}

/// Hands `rt` to the process `carrier` through a slot, then tells it to go on.
fn hand_over(rt: Runtime, carrier: Pid<()>, slot: &Mutex<Option<Runtime>>) {
    *slot.lock().unwrap() = Some(rt);
    carrier.send(());
}

fn after_shutdown(waiter: Pid<()>, ended: mpsc::Receiver<()>) {
    ended
        .recv_timeout(Duration::from_secs(30))
        .expect("the shutdown ended the waiting process");
    // The runtime is gone (or going): a send to its pid is dropped, nothing is read
    // from freed memory (valgrind saw an invalid read here before the fix).
    waiter.send(());
    assert!(!waiter.is_alive());
}

fn dropped_on_its_timer_thread(threads: usize) {
    let rt = Runtime::builder().threads(threads).build().unwrap();
    let (waiter, ended) = spawn_waiter(&rt);
    let slot: Arc<Mutex<Option<Runtime>>> = Arc::default();
    let s2 = slot.clone();
    let carrier = rt.handle().spawn(move |mut cx: Context<()>| async move {
        cx.recv().await;
        let rt = s2.lock().unwrap().take().unwrap();
        // A process that has already exited: the timer thread drops the message, and
        // with it the runtime.
        let gone: Pid<Runtime> = cx.spawn(|_: Context<Runtime>| async {});
        while gone.is_alive() {
            cx.yield_now().await;
        }
        cx.send_after(gone, rt, Duration::from_millis(1));
    });
    hand_over(rt, carrier, &slot);
    after_shutdown(waiter, ended);
}

#[test]
fn a_runtime_dropped_on_its_timer_thread_shuts_down_cleanly_one_worker() {
    dropped_on_its_timer_thread(1);
}

#[test]
fn a_runtime_dropped_on_its_timer_thread_shuts_down_cleanly_many_workers() {
    dropped_on_its_timer_thread(MANY);
}

fn dropped_by_its_own_process(threads: usize) {
    let rt = Runtime::builder().threads(threads).build().unwrap();
    let (waiter, ended) = spawn_waiter(&rt);
    let slot: Arc<Mutex<Option<Runtime>>> = Arc::default();
    let s2 = slot.clone();
    let carrier = rt.handle().spawn(move |mut cx: Context<()>| async move {
        cx.recv().await;
        let rt = s2.lock().unwrap().take().unwrap();
        drop(rt);
        // The shutdown ends this process at its next suspension point, or at the
        // latest when the shutdown thread ends every process still alive.
        cx.recv().await;
    });
    hand_over(rt, carrier, &slot);
    after_shutdown(waiter, ended);
    assert!(!carrier.is_alive());
}

#[test]
fn a_runtime_dropped_by_its_own_process_shuts_down_cleanly_one_worker() {
    dropped_by_its_own_process(1);
}

#[test]
fn a_runtime_dropped_by_its_own_process_shuts_down_cleanly_many_workers() {
    dropped_by_its_own_process(MANY);
}

/// A message that holds the runtime, dropped with the mailbox of a process that exits
/// with messages unread: the drop happens on a worker, in the middle of the exit.
fn dropped_with_an_unread_message(threads: usize) {
    let rt = Runtime::builder().threads(threads).build().unwrap();
    let (waiter, ended) = spawn_waiter(&rt);
    let slot: Arc<Mutex<Option<Runtime>>> = Arc::default();
    let s2 = slot.clone();
    let carrier = rt.handle().spawn(move |mut cx: Context<()>| async move {
        cx.recv().await;
        let rt = s2.lock().unwrap().take().unwrap();
        let sink: Pid<Runtime> = cx.spawn(|mut c: Context<Runtime>| async move {
            // Exits once told, leaving the runtime unread in its mailbox.
            c.recv_match(|_| false).await;
        });
        sink.send(rt);
        cx.exit(sink, otter::ExitReason::Shutdown);
    });
    hand_over(rt, carrier, &slot);
    after_shutdown(waiter, ended);
}

#[test]
fn a_runtime_dropped_with_an_unread_message_shuts_down_cleanly_one_worker() {
    dropped_with_an_unread_message(1);
}

#[test]
fn a_runtime_dropped_with_an_unread_message_shuts_down_cleanly_many_workers() {
    dropped_with_an_unread_message(MANY);
}
