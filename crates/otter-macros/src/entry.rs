//! `#[otter::test]` and `#[otter::main]`: an `async fn` that runs as the root process
//! of a runtime built for it (see their docs in `lib.rs`).

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{FnArg, ItemFn, LitInt, ReturnType, Token};

/// Which macro: a test may ask for several worker counts, `main` for one.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Test,
    Main,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Test => "#[otter::test]",
            Kind::Main => "#[otter::main]",
        }
    }
}

/// `workers = N` or (tests) `workers = [N, M, ...]`; an empty list means the default.
fn parse_args(kind: Kind, args: TokenStream) -> syn::Result<Vec<(usize, Span)>> {
    let mut workers = Vec::new();
    let parser = syn::meta::parser(|meta| {
        if !meta.path.is_ident("workers") {
            return Err(meta.error(format!(
                "{} takes `workers = N`{}",
                kind.name(),
                if kind == Kind::Test {
                    " or `workers = [N, M, ...]`"
                } else {
                    ""
                }
            )));
        }
        if !workers.is_empty() {
            return Err(meta.error("`workers` is given twice"));
        }
        let value = meta.value()?;
        let lits: Vec<LitInt> = if value.peek(syn::token::Bracket) {
            if kind == Kind::Main {
                return Err(meta.error("#[otter::main] runs on one runtime: `workers = N`"));
            }
            let content;
            syn::bracketed!(content in value);
            content
                .parse_terminated(|p| p.parse::<LitInt>(), Token![,])?
                .into_iter()
                .collect()
        } else {
            vec![value.parse()?]
        };
        if lits.is_empty() {
            return Err(meta.error("`workers = []` names no worker count"));
        }
        for lit in lits {
            let n: usize = lit.base10_parse()?;
            if n == 0 {
                return Err(syn::Error::new(
                    lit.span(),
                    "a runtime needs at least one worker",
                ));
            }
            if workers.iter().any(|&(m, _)| m == n) {
                return Err(syn::Error::new(
                    lit.span(),
                    "this worker count is given twice",
                ));
            }
            workers.push((n, lit.span()));
        }
        Ok(())
    });
    parser.parse2(args)?;
    Ok(workers)
}

pub(crate) fn expand(kind: Kind, args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let workers = parse_args(kind, args)?;
    let f: ItemFn = syn::parse2(item)?;
    let sig = &f.sig;
    if sig.asyncness.is_none() {
        return Err(syn::Error::new(
            sig.fn_token.span(),
            format!(
                "{} takes an `async fn` (its body runs as the root process)",
                kind.name()
            ),
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            sig.generics.span(),
            format!(
                "{} takes a function without generic parameters",
                kind.name()
            ),
        ));
    }
    if kind == Kind::Main && sig.ident != "main" {
        return Err(syn::Error::new(
            sig.ident.span(),
            "#[otter::main] goes on `async fn main`",
        ));
    }
    // The root process's context: `cx: Context<M>` (any pattern, any message type), or
    // none (a `Context<()>` the body does not see).
    let context = match sig.inputs.len() {
        0 => quote!(_: ::otter::Context<()>),
        1 => match &sig.inputs[0] {
            FnArg::Typed(t) => {
                let (pat, ty) = (&t.pat, &t.ty);
                quote!(#pat: #ty)
            }
            FnArg::Receiver(r) => {
                return Err(syn::Error::new(
                    r.span(),
                    "expected `cx: Context<M>`, not `self`",
                ));
            }
        },
        _ => {
            return Err(syn::Error::new(
                sig.inputs.span(),
                format!(
                    "{} passes one argument, the root process's `Context<M>`",
                    kind.name()
                ),
            ));
        }
    };
    let (attrs, vis, ident, body) = (&f.attrs, &f.vis, &sig.ident, &f.block);
    let output = match &sig.output {
        ReturnType::Default => quote!(),
        ReturnType::Type(arrow, ty) => quote!(#arrow #ty),
    };
    let run = |runtime: TokenStream| {
        let exited = match kind {
            Kind::Test => quote! {
                ::core::panic!("the test's root process exited: {:?}", reason)
            },
            Kind::Main => quote! {{
                ::std::eprintln!("the main process exited: {:?}", reason);
                ::std::process::exit(1)
            }},
        };
        quote! {
            let runtime: ::otter::Runtime = #runtime;
            match runtime.block_on(|#context| async move #body) {
                ::core::result::Result::Ok(value) => value,
                ::core::result::Result::Err(reason) => #exited,
            }
        }
    };
    let builder = |n: usize, span: Span| {
        quote::quote_spanned! {span=>
            ::otter::Runtime::builder()
                .threads(#n)
                .build()
                .unwrap_or_else(|e| ::core::panic!("otter: {}", e))
        }
    };
    let test_attr = match kind {
        Kind::Test => quote!(#[::core::prelude::v1::test]),
        Kind::Main => quote!(),
    };
    match workers.as_slice() {
        [] | [_] => {
            let runtime = match workers.first() {
                Some(&(n, span)) => builder(n, span),
                // A test runs on one worker unless it asks for more; `main` on all cores.
                None if kind == Kind::Test => builder(1, Span::call_site()),
                None => quote!(::otter::Runtime::new()),
            };
            let run = run(runtime);
            Ok(quote! {
                #test_attr
                #(#attrs)*
                #vis fn #ident() #output {
                    #run
                }
            })
        }
        many => {
            // One test per worker count, in a module named after the function:
            // `name::workers_1`, `name::workers_4`.
            let tests = many.iter().map(|&(n, span)| {
                let name = syn::Ident::new(&format!("workers_{n}"), span);
                let run = run(builder(n, span));
                quote! {
                    #test_attr
                    #(#attrs)*
                    fn #name() #output {
                        #run
                    }
                }
            });
            Ok(quote! {
                #vis mod #ident {
                    #[allow(unused_imports)]
                    use super::*;
                    #(#tests)*
                }
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Kind, expand};
    use quote::quote;

    fn error(kind: Kind, args: proc_macro2::TokenStream, item: proc_macro2::TokenStream) -> String {
        expand(kind, args, item).unwrap_err().to_string()
    }

    #[test]
    fn a_function_that_is_not_async_is_refused() {
        let e = error(
            Kind::Test,
            quote!(),
            quote!(
                fn t() {}
            ),
        );
        assert!(e.contains("takes an `async fn`"), "{e}");
    }

    #[test]
    fn bad_worker_counts_are_refused() {
        let item = quote!(
            async fn t() {}
        );
        let e = error(Kind::Test, quote!(workers = 0), item.clone());
        assert!(e.contains("at least one worker"), "{e}");
        let e = error(Kind::Test, quote!(workers = [1, 1]), item.clone());
        assert!(e.contains("given twice"), "{e}");
        let e = error(Kind::Test, quote!(threads = 2), item.clone());
        assert!(e.contains("takes `workers = N`"), "{e}");
        let e = error(
            Kind::Main,
            quote!(workers = [1, 2]),
            quote!(
                async fn main() {}
            ),
        );
        assert!(e.contains("one runtime"), "{e}");
    }

    #[test]
    fn main_goes_on_main_and_takes_one_context() {
        let e = error(
            Kind::Main,
            quote!(),
            quote!(
                async fn start() {}
            ),
        );
        assert!(e.contains("goes on `async fn main`"), "{e}");
        let e = error(
            Kind::Test,
            quote!(),
            quote!(
                async fn t(a: u8, b: u8) {}
            ),
        );
        assert!(e.contains("passes one argument"), "{e}");
    }

    #[test]
    fn several_worker_counts_make_a_module_of_tests() {
        let out = expand(
            Kind::Test,
            quote!(workers = [1, 4]),
            quote!(
                async fn t() {}
            ),
        )
        .unwrap()
        .to_string();
        assert!(out.contains("mod t"), "{out}");
        assert!(out.contains("fn workers_1"), "{out}");
        assert!(out.contains("fn workers_4"), "{out}");
    }
}
