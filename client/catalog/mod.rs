//! The server catalog: which server definitions a host runs, from which sources, and what
//! the host already knows about them before they start.
//!
//! - `sources` (feature `catalog`): server definitions from several sources (the user's config, a project
//!   file, files imported from other hosts, servers an embedding program adds), resolved by
//!   precedence and each source's conflict action into one [`McpConfig`](super::config::McpConfig)
//!   for the [connection set](super::connection_set), with the outcome for every name
//!   (which definition won, which were shadowed or disabled, and why).
//! - [`cache`]: what each server listed last time, in a file per configuration, so that a
//!   `startup = "lazy"` server is listed at once and started on its first call.
//!
//! Not here: starting, reloading or calling servers (the connection set), reading one file
//! (the `config` module).

pub mod cache;
#[cfg(feature = "catalog")]
pub mod sources;

pub use cache::{CachedListing, CatalogCache};
#[cfg(feature = "catalog")]
pub use sources::{CatalogBuilder, ConflictAction, Resolution, ResolvedCatalog, Shadowed, SourceKind, SourceRef};
