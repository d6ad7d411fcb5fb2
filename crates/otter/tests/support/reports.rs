//! A `tracing` subscriber for the tests that read otter's reports (`otter::report`):
//! one global subscriber per test binary keeps every event of an `otter::` target;
//! each test looks only at the events that name its own processes or peers.
//!
//! Used as `#[path = "support/reports.rs"] mod reports;`.

#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// One report: its target and its fields, as text.
#[derive(Debug, Clone)]
pub struct Report {
    pub target: String,
    pub fields: BTreeMap<String, String>,
}

impl Report {
    pub fn get(&self, field: &str) -> &str {
        self.fields.get(field).map_or("", String::as_str)
    }
}

/// The subscriber: keeps every event of otter's targets.
struct Collect(Mutex<Vec<Report>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

impl Subscriber for Collect {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target().starts_with("otter::")
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let report = Report {
            target: event.metadata().target().to_string(),
            fields,
        };
        self.0.lock().unwrap().push(report);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// The reports so far (installing the collector on first use).
pub fn reports() -> Vec<Report> {
    static COLLECT: OnceLock<&'static Collect> = OnceLock::new();
    let c = COLLECT.get_or_init(|| {
        let c: &'static Collect = Box::leak(Box::new(Collect(Mutex::new(Vec::new()))));
        tracing::subscriber::set_global_default(Forward(c)).unwrap();
        c
    });
    c.0.lock().unwrap().clone()
}

/// The global subscriber: forwards to the leaked collector.
struct Forward(&'static Collect);

impl Subscriber for Forward {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        self.0.enabled(m)
    }
    fn new_span(&self, a: &Attributes<'_>) -> Id {
        self.0.new_span(a)
    }
    fn record(&self, s: &Id, r: &Record<'_>) {
        self.0.record(s, r)
    }
    fn record_follows_from(&self, s: &Id, f: &Id) {
        self.0.record_follows_from(s, f)
    }
    fn event(&self, e: &Event<'_>) {
        self.0.event(e)
    }
    fn enter(&self, s: &Id) {
        self.0.enter(s)
    }
    fn exit(&self, s: &Id) {
        self.0.exit(s)
    }
}
