//! What a console of the gateway shows (the `/ui` page of `mcp-bridge serve`), as JSON
//! documents: each upstream's state, and the merged catalog under the names served downstream
//! with the server behind each entry.
//!
//! Upstream text (errors, stderr lines) is escaped as the logs escape it ([`printable`]); the
//! stderr tail is what an application hands to [`StderrTails::push`] (the set's
//! [`ChildStderr::Lines`](crate::client::connection_set::ChildStderr::Lines) gives each line its
//! server's name).
//!
//! Not here: serving these documents, guarding them, the page itself (the application's).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use serde_json::{json, Value};

use super::{printable, Gateway};

/// How many stderr lines are kept per upstream by [`StderrTails::default`].
pub const DEFAULT_STDERR_TAIL: usize = 50;

/// The last lines each upstream wrote to its stderr, a bounded number per upstream.
#[derive(Debug)]
pub struct StderrTails {
    keep: usize,
    lines: Mutex<HashMap<String, VecDeque<String>>>,
}

impl Default for StderrTails {
    fn default() -> Self {
        StderrTails::new(DEFAULT_STDERR_TAIL)
    }
}

impl StderrTails {
    /// Tails of `keep` lines each.
    pub fn new(keep: usize) -> StderrTails {
        StderrTails { keep, lines: Mutex::default() }
    }

    /// Adds `line` to `server`'s tail (escaped, at most 1,000 characters), dropping its oldest
    /// line past the bound.
    pub fn push(&self, server: &str, line: &str) {
        if self.keep == 0 {
            return;
        }
        let line: String = printable(line).chars().take(1000).collect();
        let mut lines = self.lines.lock().expect("stderr tails lock");
        let tail = lines.entry(server.to_owned()).or_default();
        if tail.len() == self.keep {
            tail.pop_front();
        }
        tail.push_back(line);
    }

    /// `server`'s tail, oldest line first.
    pub fn tail(&self, server: &str) -> Vec<String> {
        let lines = self.lines.lock().expect("stderr tails lock");
        lines.get(server).map(|tail| tail.iter().cloned().collect()).unwrap_or_default()
    }
}

impl Gateway {
    /// Every shared upstream as it is now: `{"upstreams": [{"name", "state", "required",
    /// "era" ("legacy" for the initialize handshake, else the stateless version),
    /// "protocolVersion", "serverInfo", "tools", "prompts", "resources", "templates",
    /// "restarts" (connections made after the first), "failedAttempts", "error", "stderr"}]}`,
    /// the stderr lines from `tails`.
    pub fn console_upstreams(&self, tails: Option<&StderrTails>) -> Value {
        let catalog = self.set.catalog();
        let upstreams: Vec<Value> = self
            .set
            .summary()
            .servers
            .iter()
            .map(|s| {
                let name = s.name.as_str();
                json!({
                    "name": s.name,
                    "state": s.state.as_str(),
                    "required": s.required,
                    "era": s.protocol_version.map(|v| if v.has_initialize_handshake() { "legacy" } else { v.as_str() }),
                    "protocolVersion": s.protocol_version.map(|v| v.as_str()),
                    "serverInfo": s.server_info,
                    "tools": catalog.tools.iter().filter(|t| t.server == name).count(),
                    "prompts": catalog.prompts.iter().filter(|(server, _)| server == name).count(),
                    "resources": catalog.resources.iter().filter(|(server, _)| server == name).count(),
                    "templates": catalog.resource_templates.iter().filter(|(server, _)| server == name).count(),
                    "restarts": s.connections.saturating_sub(1),
                    "failedAttempts": s.failed_attempts,
                    "error": s.error.as_deref().map(printable),
                    "stderr": tails.map(|tails| tails.tail(name)).unwrap_or_default(),
                })
            })
            .collect();
        json!({ "upstreams": upstreams })
    }

    /// The catalog served downstream, each entry with its server: `{"tools": [{"server",
    /// "tool"}], "prompts": [{"server", "prompt"}], "resources": [{"server", "resource"}],
    /// "resourceTemplates": [{"server", "resourceTemplate"}]}`, in the names and URIs a
    /// downstream client lists (and calls) them by.
    pub fn console_catalog(&self) -> Value {
        let view = self.view();
        let tools: Vec<Value> = view
            .tools
            .iter()
            .map(|t| json!({"server": view.tool_routes.get(&t.name).map(|(s, _)| s), "tool": t}))
            .collect();
        let prompts: Vec<Value> = view
            .prompts
            .iter()
            .map(|p| json!({"server": view.prompt_routes.get(&p.name).map(|(s, _)| s), "prompt": p}))
            .collect();
        let resources: Vec<Value> = view
            .resources
            .iter()
            .map(|r| json!({"server": view.resolve_uri(&r.uri).map(|(s, _)| s), "resource": r}))
            .collect();
        let templates: Vec<Value> = view
            .templates
            .iter()
            .map(|t| json!({"server": view.resolve_uri(&t.uri_template).map(|(s, _)| s), "resourceTemplate": t}))
            .collect();
        json!({"tools": tools, "prompts": prompts, "resources": resources, "resourceTemplates": templates})
    }
}

#[cfg(test)]
mod tests {
    use super::StderrTails;

    #[test]
    fn a_tail_keeps_the_last_lines_escaped() {
        let tails = StderrTails::new(2);
        for line in ["one", "two", "three\x1b[31m"] {
            tails.push("a", line);
        }
        tails.push("b", "other");
        assert_eq!(tails.tail("a"), ["two", "three\\u{1b}[31m"]);
        assert_eq!(tails.tail("b"), ["other"]);
        assert!(tails.tail("c").is_empty());
        let none = StderrTails::new(0);
        none.push("a", "x");
        assert!(none.tail("a").is_empty());
    }
}
