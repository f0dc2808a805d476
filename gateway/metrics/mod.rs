//! Metrics for an operator: a registry of counters, gauges and latency histograms with labels,
//! rendered in the Prometheus text exposition format 0.0.4
//! ([format](https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format)),
//! and in [`bridge`] the named metrics `mcp-bridge serve` records.
//!
//! It knows nothing of MCP, transports or sessions and depends on `std` alone; it lives in the
//! gateway (feature `gateway`), whose metrics it records. Serving the text is the HTTP server's job
//! ([`HttpServerConfig::route`](crate::transport::sse_http::HttpServerConfig::route) with
//! [`CONTENT_TYPE`]).
//!
//! The hot path: recording into a label set seen before takes a read lock on the family's map,
//! a lookup by the borrowed label values (no `String` is built) and an atomic add: no
//! allocation. A new label set takes the write lock once and allocates its series. A family
//! holds at most [`DEFAULT_MAX_SERIES`] label sets; beyond that, new ones are recorded into one
//! series whose labels are all [`OVERFLOW_LABEL`], so that label values taken from peers (tool
//! names of an upstream server) cannot grow memory without bound.
//!
//! Not here: summaries, timestamps, exemplars, the OpenMetrics format, pushing to a gateway,
//! process metrics (CPU, memory). A scrape reads each atomic on its own, so a histogram's
//! `_count` and buckets seen mid-update may disagree with its `_sum` by the observation in
//! flight (`_count` is the sum of the buckets, so those two always agree).

pub mod bridge;

use std::borrow::Borrow;
use std::fmt::{self, Write as _};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// The `Content-Type` of [`Registry::render`]'s text.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Label sets a family holds before new ones go to the overflow series: 10 000.
pub const DEFAULT_MAX_SERIES: usize = 10_000;

/// Every label value of the series that takes the label sets beyond a family's cap.
pub const OVERFLOW_LABEL: &str = "__overflow__";

/// Histogram buckets for latencies from 100 µs to 10 s, in seconds.
pub const LATENCY_BUCKETS: [f64; 16] =
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// Why a metric could not be registered.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetricsError {
    /// The metric name is not `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    BadName(String),
    /// A label name is not `[a-zA-Z_][a-zA-Z0-9_]*`, starts with `__`, repeats, or is `le` on a
    /// histogram.
    BadLabel(String),
    /// Histogram buckets that are empty, not finite or not strictly increasing.
    BadBuckets,
    /// A metric of that name is registered already (for a histogram, also its `_bucket`,
    /// `_sum` and `_count` names).
    Duplicate(String),
}

impl fmt::Display for MetricsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetricsError::BadName(n) => write!(f, "invalid metric name {n:?}"),
            MetricsError::BadLabel(n) => write!(f, "invalid label name {n:?}"),
            MetricsError::BadBuckets => f.write_str("histogram buckets must be finite and strictly increasing"),
            MetricsError::Duplicate(n) => write!(f, "metric {n} is registered already"),
        }
    }
}

impl std::error::Error for MetricsError {}

/// A monotonically increasing count.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds one.
    pub fn inc(&self) {
        self.inc_by(1);
    }

    /// Adds `n`.
    pub fn inc_by(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// The current count.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Raises the count to `total` when it is below: for a count kept elsewhere, copied at
    /// each scrape (never lowered).
    pub fn raise_to(&self, total: u64) {
        self.0.fetch_max(total, Ordering::Relaxed);
    }
}

/// A value that goes up and down (whole numbers: sessions open, 0/1 for up).
#[derive(Debug, Default)]
pub struct Gauge(AtomicI64);

impl Gauge {
    /// Sets the value.
    pub fn set(&self, value: i64) {
        self.0.store(value, Ordering::Relaxed);
    }

    /// Adds one.
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// Subtracts one.
    pub fn dec(&self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }

    /// The current value.
    pub fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Observations counted into fixed buckets, with their sum.
#[derive(Debug)]
pub struct Histogram {
    bounds: Arc<[f64]>,
    /// One count per bound (observations `<=` it and above the bound before), then `+Inf`.
    counts: Box<[AtomicU64]>,
    /// The sum of the observations, as `f64` bits.
    sum: AtomicU64,
}

impl Histogram {
    fn new(bounds: Arc<[f64]>) -> Histogram {
        let counts = (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect();
        Histogram { bounds, counts, sum: AtomicU64::new(0f64.to_bits()) }
    }

    /// Records one observation (in the histogram's unit: seconds for latencies). NaN is
    /// ignored.
    pub fn observe(&self, value: f64) {
        if value.is_nan() {
            return;
        }
        let bucket = self.bounds.iter().position(|b| value <= *b).unwrap_or(self.bounds.len());
        self.counts[bucket].fetch_add(1, Ordering::Relaxed);
        let mut current = self.sum.load(Ordering::Relaxed);
        loop {
            let next = (f64::from_bits(current) + value).to_bits();
            match self.sum.compare_exchange_weak(current, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => break,
                Err(seen) => current = seen,
            }
        }
    }

    /// Records a duration in seconds.
    pub fn observe_duration(&self, elapsed: Duration) {
        self.observe(elapsed.as_secs_f64());
    }

    /// How many observations were recorded.
    pub fn count(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// The sum of the observations.
    pub fn sum(&self) -> f64 {
        f64::from_bits(self.sum.load(Ordering::Relaxed))
    }
}

/// What a family is made of: one series type per metric type.
pub trait Series: Send + Sync + fmt::Debug + 'static {
    /// The `# TYPE` word.
    const TYPE: &'static str;
    /// What a new series needs (a histogram's buckets).
    #[doc(hidden)]
    type Options: Send + Sync + fmt::Debug + 'static;
    #[doc(hidden)]
    fn create(options: &Self::Options) -> Self;
    /// Writes this series' sample lines; `labels` is `k="v",…` (escaped) or empty.
    #[doc(hidden)]
    fn write_samples(&self, out: &mut String, name: &str, labels: &str);
}

impl Series for Counter {
    const TYPE: &'static str = "counter";
    type Options = ();
    fn create(_: &()) -> Counter {
        Counter::default()
    }
    fn write_samples(&self, out: &mut String, name: &str, labels: &str) {
        sample(out, name, "", labels, None, &self.get().to_string());
    }
}

impl Series for Gauge {
    const TYPE: &'static str = "gauge";
    type Options = ();
    fn create(_: &()) -> Gauge {
        Gauge::default()
    }
    fn write_samples(&self, out: &mut String, name: &str, labels: &str) {
        sample(out, name, "", labels, None, &self.get().to_string());
    }
}

impl Series for Histogram {
    const TYPE: &'static str = "histogram";
    type Options = Arc<[f64]>;
    fn create(bounds: &Arc<[f64]>) -> Histogram {
        Histogram::new(bounds.clone())
    }
    fn write_samples(&self, out: &mut String, name: &str, labels: &str) {
        let mut cumulative = 0u64;
        for (i, count) in self.counts.iter().enumerate() {
            cumulative += count.load(Ordering::Relaxed);
            let le = self.bounds.get(i).map_or_else(|| "+Inf".to_owned(), |b| float(*b));
            sample(out, name, "_bucket", labels, Some(&le), &cumulative.to_string());
        }
        sample(out, name, "_sum", labels, None, &float(self.sum()));
        sample(out, name, "_count", labels, None, &cumulative.to_string());
    }
}

/// One sample line: `name{labels[,le="…"]} value`.
fn sample(out: &mut String, name: &str, suffix: &str, labels: &str, le: Option<&str>, value: &str) {
    out.push_str(name);
    out.push_str(suffix);
    if !labels.is_empty() || le.is_some() {
        out.push('{');
        out.push_str(labels);
        if let Some(le) = le {
            if !labels.is_empty() {
                out.push(',');
            }
            let _ = write!(out, "le=\"{le}\"");
        }
        out.push('}');
    }
    out.push(' ');
    out.push_str(value);
    out.push('\n');
}

/// A float as the format writes it: `+Inf`, `-Inf`, `NaN`, else the shortest decimal that
/// reads back the same (`1`, `0.25`).
fn float(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        v.to_string()
    }
}

/// A label value escaped for the format: `\` → `\\`, `"` → `\"`, line feed → `\n`.
fn escape_label_value(value: &str, out: &mut String) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// `# HELP` text escaped for the format: `\` → `\\`, line feed → `\n`.
fn escape_help(help: &str) -> String {
    help.replace('\\', "\\\\").replace('\n', "\\n")
}

/// Label values as a map key, owned or borrowed, compared and hashed alike so that a lookup
/// by `[&str; N]` finds the owned `[Box<str>; N]` without building one.
trait LabelKey {
    fn value(&self, i: usize) -> &str;
    fn len(&self) -> usize;
}

struct Owned<const N: usize>([Box<str>; N]);
struct Borrowed<'a, const N: usize>([&'a str; N]);

impl<const N: usize> LabelKey for Owned<N> {
    fn value(&self, i: usize) -> &str {
        &self.0[i]
    }
    fn len(&self) -> usize {
        N
    }
}

impl<const N: usize> LabelKey for Borrowed<'_, N> {
    fn value(&self, i: usize) -> &str {
        self.0[i]
    }
    fn len(&self) -> usize {
        N
    }
}

impl Hash for dyn LabelKey + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        for i in 0..self.len() {
            self.value(i).hash(state);
        }
    }
}

impl PartialEq for dyn LabelKey + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && (0..self.len()).all(|i| self.value(i) == other.value(i))
    }
}

impl Eq for dyn LabelKey + '_ {}

impl<const N: usize> Hash for Owned<N> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self as &dyn LabelKey).hash(state);
    }
}

impl<const N: usize> PartialEq for Owned<N> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl<const N: usize> Eq for Owned<N> {}

impl<'a, const N: usize> Borrow<dyn LabelKey + 'a> for Owned<N> {
    fn borrow(&self) -> &(dyn LabelKey + 'a) {
        self
    }
}

/// A metric: a name, a help text, label names, and one series per label set seen.
pub struct Family<S: Series, const N: usize> {
    name: &'static str,
    help: String,
    label_names: [&'static str; N],
    options: S::Options,
    max_series: usize,
    series: RwLock<super::view::OwnKeyMap<Owned<N>, Arc<S>>>,
}

/// Counters with `N` labels.
pub type CounterVec<const N: usize> = Family<Counter, N>;
/// Gauges with `N` labels.
pub type GaugeVec<const N: usize> = Family<Gauge, N>;
/// Histograms with `N` labels.
pub type HistogramVec<const N: usize> = Family<Histogram, N>;

impl<S: Series, const N: usize> fmt::Debug for Family<S, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Family").field("name", &self.name).field("type", &S::TYPE).finish_non_exhaustive()
    }
}

impl<S: Series, const N: usize> Family<S, N> {
    /// Runs `f` on the series of `labels` (values in the order of the label names), creating
    /// it the first time. No allocation once the label set exists.
    pub fn with<R>(&self, labels: [&str; N], f: impl FnOnce(&S) -> R) -> R {
        {
            let map = self.series.read().unwrap_or_else(|e| e.into_inner());
            if let Some(series) = map.get(&Borrowed(labels) as &dyn LabelKey) {
                return f(series);
            }
        }
        f(&self.series(labels))
    }

    /// The series of `labels`, created the first time: a handle to keep where the same label
    /// set is recorded again and again.
    pub fn series(&self, labels: [&str; N]) -> Arc<S> {
        let mut map = self.series.write().unwrap_or_else(|e| e.into_inner());
        if let Some(series) = map.get(&Borrowed(labels) as &dyn LabelKey) {
            return series.clone();
        }
        let key = if map.len() >= self.max_series {
            Owned(std::array::from_fn(|_| OVERFLOW_LABEL.into()))
        } else {
            Owned(labels.map(Box::from))
        };
        map.entry(key).or_insert_with(|| Arc::new(S::create(&self.options))).clone()
    }

    /// Forgets the series of `labels` (an upstream server removed from the configuration);
    /// `true` if it existed.
    pub fn remove(&self, labels: [&str; N]) -> bool {
        self.series.write().unwrap_or_else(|e| e.into_inner()).remove(&Borrowed(labels) as &dyn LabelKey).is_some()
    }

    /// How many label sets this family holds.
    pub fn len(&self) -> usize {
        self.series.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether this family holds no label set yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<const N: usize> Family<Counter, N> {
    /// Adds one to the counter of `labels`.
    pub fn inc(&self, labels: [&str; N]) {
        self.with(labels, Counter::inc);
    }

    /// Raises the counter of `labels` to `total` ([`Counter::raise_to`]).
    pub fn raise_to(&self, labels: [&str; N], total: u64) {
        self.with(labels, |c| c.raise_to(total));
    }

    /// The count of `labels` (0 when never recorded), without creating the series.
    pub fn get(&self, labels: [&str; N]) -> u64 {
        let map = self.series.read().unwrap_or_else(|e| e.into_inner());
        map.get(&Borrowed(labels) as &dyn LabelKey).map_or(0, |c| c.get())
    }
}

impl<const N: usize> Family<Gauge, N> {
    /// Sets the gauge of `labels`.
    pub fn set(&self, labels: [&str; N], value: i64) {
        self.with(labels, |g| g.set(value));
    }

    /// The value of `labels` (0 when never set), without creating the series.
    pub fn get(&self, labels: [&str; N]) -> i64 {
        let map = self.series.read().unwrap_or_else(|e| e.into_inner());
        map.get(&Borrowed(labels) as &dyn LabelKey).map_or(0, |g| g.get())
    }
}

impl<const N: usize> Family<Histogram, N> {
    /// Records a duration, in seconds, into the histogram of `labels`.
    pub fn observe_duration(&self, labels: [&str; N], elapsed: Duration) {
        self.with(labels, |h| h.observe_duration(elapsed));
    }

    /// Records `value` into the histogram of `labels`.
    pub fn observe(&self, labels: [&str; N], value: f64) {
        self.with(labels, |h| h.observe(value));
    }
}

/// What the registry needs of a family to render it.
trait Render: Send + Sync {
    fn render(&self, out: &mut String);
}

impl<S: Series, const N: usize> Render for Family<S, N> {
    fn render(&self, out: &mut String) {
        let _ = writeln!(out, "# HELP {} {}", self.name, escape_help(&self.help));
        let _ = writeln!(out, "# TYPE {} {}", self.name, S::TYPE);
        let map = self.series.read().unwrap_or_else(|e| e.into_inner());
        let mut series: Vec<(&Owned<N>, &Arc<S>)> = map.iter().collect();
        series.sort_unstable_by(|a, b| a.0 .0.cmp(&b.0 .0));
        let mut labels = String::new();
        for (key, series) in series {
            labels.clear();
            for (i, (name, value)) in self.label_names.iter().zip(&key.0).enumerate() {
                if i > 0 {
                    labels.push(',');
                }
                let _ = write!(labels, "{name}=\"");
                escape_label_value(value, &mut labels);
                labels.push('"');
            }
            series.write_samples(out, self.name, &labels);
        }
    }
}

/// A registered family: the sample names it takes (a histogram's `_bucket`, `_sum` and
/// `_count` too), and the family.
type Registered = (Vec<String>, Arc<dyn Render>);

/// The metrics of one process, rendered in registration order.
pub struct Registry {
    families: RwLock<Vec<Registered>>,
    max_series: usize,
}

impl Default for Registry {
    fn default() -> Registry {
        Registry { families: RwLock::new(Vec::new()), max_series: DEFAULT_MAX_SERIES }
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let families = self.families.read().unwrap_or_else(|e| e.into_inner());
        let names: Vec<&str> = families.iter().map(|(names, _)| names[0].as_str()).collect();
        f.debug_struct("Registry").field("families", &names).finish()
    }
}

fn is_metric_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_' || b == b':')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':')
}

fn is_label_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !name.starts_with("__")
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// A registry whose families hold at most `max_series` label sets each (at least 1)
    /// before new ones go to the overflow series.
    pub fn with_max_series(max_series: usize) -> Registry {
        Registry { max_series: max_series.max(1), ..Registry::default() }
    }

    /// Registers a counter family. Its name should end in `_total`.
    ///
    /// # Errors
    /// A bad metric or label name, or a name registered already.
    pub fn counter<const N: usize>(
        &self,
        name: &'static str,
        help: &str,
        labels: [&'static str; N],
    ) -> Result<Arc<CounterVec<N>>, MetricsError> {
        self.register(name, help, labels, (), vec![name.to_owned()])
    }

    /// Registers a gauge family.
    ///
    /// # Errors
    /// As [`Registry::counter`].
    pub fn gauge<const N: usize>(
        &self,
        name: &'static str,
        help: &str,
        labels: [&'static str; N],
    ) -> Result<Arc<GaugeVec<N>>, MetricsError> {
        self.register(name, help, labels, (), vec![name.to_owned()])
    }

    /// Registers a histogram family with `buckets` (upper bounds, strictly increasing; `+Inf`
    /// is added), e.g. [`LATENCY_BUCKETS`].
    ///
    /// # Errors
    /// As [`Registry::counter`]; also bad buckets, and a label named `le`.
    pub fn histogram<const N: usize>(
        &self,
        name: &'static str,
        help: &str,
        labels: [&'static str; N],
        buckets: &[f64],
    ) -> Result<Arc<HistogramVec<N>>, MetricsError> {
        let increasing = buckets.windows(2).all(|w| w[0] < w[1]);
        if buckets.is_empty() || !increasing || buckets.iter().any(|b| !b.is_finite()) {
            return Err(MetricsError::BadBuckets);
        }
        if labels.contains(&"le") {
            return Err(MetricsError::BadLabel("le".into()));
        }
        let names = ["", "_bucket", "_sum", "_count"].iter().map(|s| format!("{name}{s}")).collect();
        self.register(name, help, labels, buckets.into(), names)
    }

    fn register<S: Series, const N: usize>(
        &self,
        name: &'static str,
        help: &str,
        labels: [&'static str; N],
        options: S::Options,
        names: Vec<String>,
    ) -> Result<Arc<Family<S, N>>, MetricsError> {
        if !is_metric_name(name) {
            return Err(MetricsError::BadName(name.into()));
        }
        for (i, label) in labels.iter().enumerate() {
            if !is_label_name(label) || labels[..i].contains(label) {
                return Err(MetricsError::BadLabel((*label).into()));
            }
        }
        let mut families = self.families.write().unwrap_or_else(|e| e.into_inner());
        if let Some(taken) = names.iter().find(|n| families.iter().any(|(other, _)| other.contains(n))) {
            return Err(MetricsError::Duplicate(taken.clone()));
        }
        let family = Arc::new(Family {
            name,
            help: help.to_owned(),
            label_names: labels,
            options,
            max_series: self.max_series,
            series: RwLock::new(super::view::OwnKeyMap::default()),
        });
        if N == 0 {
            // A metric without labels has its one sample from the start.
            family.series([""; N]);
        }
        families.push((names, family.clone()));
        Ok(family)
    }

    /// Every family in registration order, in the text exposition format 0.0.4.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (_, family) in self.families.read().unwrap_or_else(|e| e.into_inner()).iter() {
            family.render(&mut out);
        }
        out
    }
}

#[cfg(test)]
mod tests;
