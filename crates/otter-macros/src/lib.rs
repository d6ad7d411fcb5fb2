//! Macros for [otter](https://docs.rs/otter), re-exported by it: use them as
//! `#[derive(otter::Message)]`, `#[otter::test]` and `#[otter::main]`, not from this
//! crate.
//!
//! The generated code names `::otter`: the `otter` crate must be a dependency under
//! that name.

use proc_macro::TokenStream;
use syn::parse_macro_input;

mod entry;
mod message;

/// Writes the conversions a process's message enum needs to receive the runtime's
/// messages: `From<Exit>` (for [`trap_exit`]), `From<Down>` and `DownMessage` (for
/// [`monitor`] and [`demonitor_flush`]), `From<Tcp>` (for active sockets), and with
/// distribution `From<BadTerm>` and `From<NodeEvent>`.
///
/// ```
/// use otter::{Context, Down, Exit, ExitReason, Runtime};
///
/// #[derive(otter::Message)]
/// enum Msg {
///     Work(u32),
///     Exit(Exit),
///     Down(Down),
/// }
///
/// let rt = Runtime::new();
/// let r = rt.block_on(|mut cx: Context<Msg>| async move {
///     cx.trap_exit(true);
///     let child = cx.spawn_link(|_: Context<()>| async { ExitReason::Shutdown });
///     let m = cx.monitor(child);
///     let Msg::Exit(e) = cx.recv_match(|m| matches!(m, Msg::Exit(_))).await else { unreachable!() };
///     cx.demonitor_flush(m); // needs `DownMessage`: its `Down` is gone from the mailbox
///     cx.pid().send(Msg::Work(1));
///     (e.reason, matches!(cx.recv().await, Msg::Work(1)))
/// });
/// assert_eq!(r.unwrap(), (ExitReason::Shutdown, true));
/// ```
///
/// # Which variants
///
/// A variant is found by **its field's type name**: a variant whose one field's type
/// is a path ending in `Exit`, `Down`, `Tcp`, `BadTerm` or `NodeEvent` (`Down`,
/// `otter::Down`, ...) gets the impls for that message. An attribute overrides the
/// name: `#[otter(exit)]`, `#[otter(down)]`, `#[otter(tcp)]`, `#[otter(bad_term)]`,
/// `#[otter(node_event)]` mark a variant whose field is that runtime type under
/// another name (an alias), and `#[otter(skip)]` leaves out a variant whose type is
/// named so but is not the runtime's. The impls convert with the field's type as
/// written, so a type of the same name that is not otter's fails to compile where
/// the runtime's is expected, rather than being taken silently.
///
/// # Errors
///
/// A compile error, at the item or variant at fault, for:
///
/// * a struct or union (a message type is an enum):
///
/// ```compile_fail
/// #[derive(otter::Message)]
/// struct Msg { down: otter::Down }
/// ```
///
/// * two variants holding the same message (`Down` goes to one variant):
///
/// ```compile_fail
/// use otter::Down;
/// #[derive(otter::Message)]
/// enum Msg { Watched(Down), Other(Down) }
/// ```
///
/// * a variant holding the message with other fields:
///
/// ```compile_fail
/// use otter::Down;
/// #[derive(otter::Message)]
/// enum Msg { Down(Down, u32) }
/// ```
///
/// * an unknown word in `#[otter(..)]`, and an enum with no variant to derive for:
///
/// ```compile_fail
/// #[derive(otter::Message)]
/// enum Msg { Work(u32) }
/// ```
///
/// The same enums without the fault compile:
///
/// ```
/// use otter::Down;
/// #[derive(otter::Message)]
/// enum Msg { Watched(Down), #[otter(skip)] Other(Down), Work(u32, u32) }
/// ```
///
/// [`trap_exit`]: https://docs.rs/otter/latest/otter/struct.Context.html#method.trap_exit
/// [`monitor`]: https://docs.rs/otter/latest/otter/struct.Context.html#method.monitor
/// [`demonitor_flush`]: https://docs.rs/otter/latest/otter/struct.Context.html#method.demonitor_flush
#[proc_macro_derive(Message, attributes(otter))]
pub fn derive_message(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as syn::DeriveInput);
    message::derive(input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Runs an `async fn` test as the root process of a runtime built for it:
/// `async fn name(cx: Context<M>)` (or with no argument) becomes a `#[test] fn name()`
/// that builds a [`Runtime`] and [`block_on`]s the body. The test's other attributes
/// (`#[should_panic]`, `#[ignore]`) carry over; do not add `#[test]` too.
///
/// * `#[otter::test]` runs on **one worker**;
/// * `#[otter::test(workers = 4)]` on four;
/// * `#[otter::test(workers = [1, 4])]` once per count: a module `name` with the
///   tests `name::workers_1` and `name::workers_4` (each rule checked on 1 and on N
///   workers).
///
/// The test fails if the body panics or its process exits otherwise (killed by a
/// linked process, ...): the panic names the exit reason. The body may return a value
/// (`Result<(), E>`, as `#[test]` allows), which the test returns.
///
/// ```
/// use otter::{Context, Down};
///
/// #[derive(otter::Message)]
/// enum Msg { Down(Down) }
///
/// #[otter::test(workers = [1, 4])]
/// async fn a_monitor_of_a_finished_child_fires(mut cx: Context<Msg>) {
///     let child = cx.spawn(|_: Context<()>| async {});
///     cx.monitor(child);
///     let Msg::Down(d) = cx.recv().await;
///     assert_eq!(d.pid, child.id());
/// }
/// ```
///
/// Misuse is a compile error: a function that is not `async`, a worker count of 0,
/// an argument that is not the one context:
///
/// ```compile_fail
/// #[otter::test(workers = 0)]
/// async fn t() {}
/// ```
///
/// [`Runtime`]: https://docs.rs/otter/latest/otter/struct.Runtime.html
/// [`block_on`]: https://docs.rs/otter/latest/otter/struct.Runtime.html#method.block_on
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(entry::Kind::Test, args.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Runs `async fn main` as the root process of a runtime: `#[otter::main]` on all
/// cores (`Runtime::new()`), `#[otter::main(workers = N)]` on `N` workers. `main` may
/// take the root process's `cx: Context<M>` and return what `fn main` may (`()`,
/// `Result<(), E>`). If the main process exits otherwise than by returning (a panic,
/// a link), the program prints the reason and exits with status 1.
///
/// ```
/// use otter::Context;
///
/// #[otter::main(workers = 2)]
/// async fn main(mut cx: Context<u32>) {
///     let me = cx.pid();
///     cx.spawn(move |_: Context<()>| async move { me.send(42) });
///     assert_eq!(cx.recv().await, 42);
/// }
/// ```
///
/// A main process that panics ends the program with status 1:
///
/// ```should_panic
/// #[otter::main]
/// async fn main() {
///     panic!("boom");
/// }
/// ```
///
/// ```compile_fail
/// #[otter::main]
/// fn main() {} // not async
/// ```
#[proc_macro_attribute]
pub fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(entry::Kind::Main, args.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
