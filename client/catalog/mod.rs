//! The server catalog: which server definitions a host runs, from which sources, and what
//! the host already knows about them before they start.
//!
//! - [`sources`]: server definitions from several sources (the user's config, a project
//!   file, files imported from other hosts, servers an embedding program adds), resolved by
//!   precedence and each source's conflict action into one [`McpConfig`](super::config::McpConfig)
//!   for the [connection set](super::connection_set), with the outcome for every name
//!   (which definition won, which were shadowed or disabled, and why).
//!
//! Not here: starting, reloading or calling servers (the connection set), reading one file
//! (the `config` module).

pub mod sources;

pub use sources::{CatalogBuilder, ConflictAction, Resolution, ResolvedCatalog, Shadowed, SourceKind, SourceRef};
