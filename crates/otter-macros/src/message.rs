//! `#[derive(Message)]`: finds the variants that hold a runtime message and writes
//! the impls (see the derive's docs in `lib.rs`).

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Type, Variant};

/// The runtime messages a variant may hold: the attribute that names each, the type
/// name that finds it, and what the derive writes for it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    Exit,
    Down,
    Tcp,
    BadTerm,
    NodeEvent,
}

const ROLES: [Role; 5] = [
    Role::Exit,
    Role::Down,
    Role::Tcp,
    Role::BadTerm,
    Role::NodeEvent,
];

impl Role {
    /// The attribute's word (`#[otter(down)]`).
    fn word(self) -> &'static str {
        match self {
            Role::Exit => "exit",
            Role::Down => "down",
            Role::Tcp => "tcp",
            Role::BadTerm => "bad_term",
            Role::NodeEvent => "node_event",
        }
    }

    /// The type name (the last segment of the field's type path) that finds it.
    fn type_name(self) -> &'static str {
        match self {
            Role::Exit => "Exit",
            Role::Down => "Down",
            Role::Tcp => "Tcp",
            Role::BadTerm => "BadTerm",
            Role::NodeEvent => "NodeEvent",
        }
    }

    fn by_type(ty: &Type) -> Option<Role> {
        let Type::Path(p) = ty else { return None };
        if p.qself.is_some() {
            return None;
        }
        let last = p.path.segments.last()?;
        if !last.arguments.is_none() {
            return None;
        }
        ROLES.into_iter().find(|r| last.ident == r.type_name())
    }
}

/// What a variant's `#[otter(..)]` attribute says.
enum Mark {
    None,
    Skip,
    Role(Role),
}

fn mark(v: &Variant) -> syn::Result<Mark> {
    let mut mark = Mark::None;
    for attr in v.attrs.iter().filter(|a| a.path().is_ident("otter")) {
        attr.parse_nested_meta(|meta| {
            if !matches!(mark, Mark::None) {
                return Err(meta.error("one `#[otter(..)]` word per variant"));
            }
            if meta.path.is_ident("skip") {
                mark = Mark::Skip;
                return Ok(());
            }
            match ROLES.into_iter().find(|r| meta.path.is_ident(r.word())) {
                Some(r) => {
                    mark = Mark::Role(r);
                    Ok(())
                }
                None => Err(meta.error(
                    "expected one of `exit`, `down`, `tcp`, `bad_term`, `node_event`, `skip`",
                )),
            }
        })?;
    }
    Ok(mark)
}

/// A variant found for a role: its name, its one field's type, and whether that field
/// is named.
struct Found<'a> {
    variant: &'a Variant,
    ty: &'a Type,
    field: Option<&'a syn::Ident>,
}

pub(crate) fn derive(input: DeriveInput) -> syn::Result<TokenStream> {
    let Data::Enum(data) = &input.data else {
        return Err(syn::Error::new(
            input.ident.span(),
            "`#[derive(otter::Message)]` works on an enum (a message type with a variant per kind of message)",
        ));
    };
    let mut found: Vec<(Role, Found<'_>)> = Vec::new();
    let mut errors: Option<syn::Error> = None;
    let mut push_err = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    for v in &data.variants {
        let mark = match mark(v) {
            Ok(m) => m,
            Err(e) => {
                push_err(e);
                continue;
            }
        };
        let fields: Vec<&syn::Field> = v.fields.iter().collect();
        let role = match mark {
            Mark::Skip => continue,
            Mark::Role(r) => Some(r),
            Mark::None => fields.iter().find_map(|f| Role::by_type(&f.ty)),
        };
        let Some(role) = role else { continue };
        if fields.len() != 1 {
            push_err(syn::Error::new(
                v.span(),
                format!(
                    "variant `{}` holds a `{}` with {} field(s): it must hold the `{}` alone (or mark it `#[otter(skip)]`)",
                    v.ident,
                    role.type_name(),
                    fields.len(),
                    role.type_name()
                ),
            ));
            continue;
        }
        if let Some((_, first)) = found.iter().find(|(r, _)| *r == role) {
            push_err(syn::Error::new(
                v.span(),
                format!(
                    "two variants hold a `{}`: `{}` and `{}` (the runtime needs one; mark the other `#[otter(skip)]`)",
                    role.type_name(),
                    first.variant.ident,
                    v.ident
                ),
            ));
            continue;
        }
        let field = match &v.fields {
            Fields::Named(_) => fields[0].ident.as_ref(),
            _ => None,
        };
        found.push((
            role,
            Found {
                variant: v,
                ty: &fields[0].ty,
                field,
            },
        ));
    }
    if let Some(e) = errors {
        return Err(e);
    }
    if found.is_empty() {
        return Err(syn::Error::new(
            input.ident.span(),
            "`#[derive(otter::Message)]` found no variant holding an `Exit`, `Down`, `Tcp`, `BadTerm` or `NodeEvent` (name the type so, or mark the variant, e.g. `#[otter(down)]`)",
        ));
    }
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let mut out = TokenStream::new();
    for (role, f) in &found {
        let (variant, ty) = (&f.variant.ident, f.ty);
        let build = match f.field {
            Some(field) => quote!(#name::#variant { #field: m }),
            None => quote!(#name::#variant(m)),
        };
        out.extend(quote! {
            impl #impl_generics ::core::convert::From<#ty> for #name #ty_generics #where_clause {
                fn from(m: #ty) -> Self {
                    #build
                }
            }
        });
        if *role == Role::Down {
            let pattern = match f.field {
                Some(field) => quote!(#name::#variant { #field: d }),
                None => quote!(#name::#variant(d)),
            };
            out.extend(quote! {
                impl #impl_generics ::otter::DownMessage for #name #ty_generics #where_clause {
                    #[allow(unreachable_patterns)]
                    fn as_down(&self) -> ::core::option::Option<&::otter::Down> {
                        match self {
                            #pattern => ::core::option::Option::Some(d),
                            _ => ::core::option::Option::None,
                        }
                    }
                }
            });
        }
    }
    Ok(out.into_token_stream())
}

#[cfg(test)]
mod tests {
    use super::derive;
    use syn::parse_quote;

    fn error(input: syn::DeriveInput) -> String {
        derive(input).unwrap_err().to_string()
    }

    #[test]
    fn a_struct_is_refused() {
        let e = error(parse_quote!(
            struct S {
                d: Down,
            }
        ));
        assert!(e.contains("works on an enum"), "{e}");
    }

    #[test]
    fn two_down_variants_are_refused() {
        let e = error(parse_quote!(
            enum M {
                A(Down),
                B(otter::Down),
            }
        ));
        assert!(e.contains("two variants hold a `Down`: `A` and `B`"), "{e}");
    }

    #[test]
    fn a_variant_with_two_fields_is_refused() {
        let e = error(parse_quote!(
            enum M {
                A(Down, u32),
            }
        ));
        assert!(e.contains("holds a `Down` with 2 field(s)"), "{e}");
        let e = error(parse_quote!(
            enum M {
                #[otter(exit)]
                A(u8, u32),
            }
        ));
        assert!(e.contains("holds a `Exit` with 2 field(s)"), "{e}");
    }

    #[test]
    fn an_unknown_attribute_word_is_refused() {
        let e = error(parse_quote!(
            enum M {
                #[otter(dwon)]
                A(Down),
            }
        ));
        assert!(e.contains("expected one of `exit`, `down`"), "{e}");
    }

    #[test]
    fn an_enum_with_no_runtime_message_is_refused() {
        let e = error(parse_quote!(
            enum M {
                A(u32),
            }
        ));
        assert!(e.contains("found no variant"), "{e}");
    }

    #[test]
    fn skip_and_attributes_choose_the_variant() {
        let out = derive(parse_quote!(
            enum M {
                #[otter(skip)]
                Mine(Down),
                #[otter(down)]
                Theirs(Watched),
                Exit {
                    e: Exit,
                },
            }
        ))
        .unwrap()
        .to_string();
        assert!(out.contains("From < Watched > for M"), "{out}");
        assert!(out.contains("M :: Exit { e : m }"), "{out}");
        assert!(!out.contains("From < Down >"), "{out}");
        assert!(out.contains("DownMessage for M"), "{out}");
    }
}
