//! Error collection: every error found is reported, each at its own span.

use proc_macro2::{Span, TokenStream};

/// Collects `syn::Error`s so that one expansion reports all of them at once.
#[derive(Default)]
pub struct Errors {
    error: Option<syn::Error>,
}

impl Errors {
    /// Records an error at `span`.
    pub fn push(&mut self, span: Span, message: impl std::fmt::Display) {
        self.add(syn::Error::new(span, message));
    }

    /// Records an already-built error.
    pub fn add(&mut self, error: syn::Error) {
        match &mut self.error {
            Some(existing) => existing.combine(error),
            None => self.error = Some(error),
        }
    }

    /// Records copies of all errors of `other`.
    pub fn add_all(&mut self, other: &Errors) {
        if let Some(e) = &other.error {
            self.add(e.clone());
        }
    }

    /// Whether no error was recorded.
    pub fn is_empty(&self) -> bool {
        self.error.is_none()
    }

    /// The `compile_error!` invocations of all recorded errors.
    pub fn into_compile_errors(self) -> TokenStream {
        self.error.map(|e| e.to_compile_error()).unwrap_or_default()
    }
}
