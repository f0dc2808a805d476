//! The server's method table: one row per request method the server answers, built from
//! proto's method constants ([`Method`]: the name, the revision that added it, the one that
//! removed it), plus what only the server knows — which handler serves it (grouped by
//! feature), the capability it needs, whether a [`Forwarder`](super::forward::Forwarder) may
//! answer it, and whether the 2026-07-28 tasks extension brings it back.
//!
//! The dispatch routes every request of both eras through [`find`] and [`Route::serves`]: a
//! method with no row, or with a row its era does not serve, is -32601; so is one whose
//! capability the server does not advertise. Forwarding is the fallback route of the
//! forwardable rows when the server has a forwarder.
//!
//! Not here: the handlers themselves (`dispatch` and its feature modules), the forwarding API
//! (`forward`), notifications.

use crate::proto::mcp_types::{
    CallTool, CancelTask, Complete, Discover, GetPrompt, GetTask, GetTaskPayload, Initialize, ListPrompts,
    ListResourceTemplates, ListResources, ListTasks, ListTools, Method, Ping, ReadResource, SetLevel, Subscribe,
    SubscriptionsListen, Unsubscribe,
};
use crate::proto::version::ProtocolVersion;
use crate::server::registry::Features;

/// The first revision served per request, without a handshake.
const PER_REQUEST_ERA: ProtocolVersion = ProtocolVersion::V2026_07_28;

/// Which handler answers a method, grouped by feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Feature {
    Lifecycle(Lifecycle),
    Tools(Tools),
    Resources(Resources),
    Prompts(Prompts),
    Completion,
    Logging,
    Tasks(Tasks),
    Subscriptions,
}

/// `initialize`, `ping`, `server/discover`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lifecycle {
    Initialize,
    Ping,
    Discover,
}

/// `tools/list`, `tools/call`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tools {
    List,
    Call,
}

/// `resources/*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resources {
    List,
    ListTemplates,
    Read,
    Subscribe,
    Unsubscribe,
}

/// `prompts/list`, `prompts/get`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Prompts {
    List,
    Get,
}

/// `tasks/*`: the session's task store in the handshake era, the tasks extension's registry in
/// the per-request era.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tasks {
    Get,
    Cancel,
    List,
    Result,
    Update,
}

/// The server capability a method needs: without it the method is -32601.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Capability {
    /// Always served (`tools`, `logging`, the lifecycle, tasks, subscriptions).
    Always,
    /// `resources`.
    Resources,
    /// `resources.subscribe` (which a forwarding server does not advertise).
    ResourceSubscriptions,
    /// `prompts`.
    Prompts,
    /// `completions`.
    Completions,
}

impl Capability {
    /// Whether a server with these features advertises it.
    pub(crate) fn offered_by(self, features: Features) -> bool {
        match self {
            Capability::Always => true,
            Capability::Resources => features.resources,
            Capability::ResourceSubscriptions => features.resources && !features.forwarded,
            Capability::Prompts => features.prompts,
            Capability::Completions => features.completions,
        }
    }
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Route {
    /// The `method` string on the wire.
    pub(crate) name: &'static str,
    /// The first revision that has it.
    pub(crate) since: ProtocolVersion,
    /// The first revision that no longer has it.
    pub(crate) removed_in: Option<ProtocolVersion>,
    pub(crate) handler: Feature,
    pub(crate) capability: Capability,
    /// Answered by the server's forwarder, when it has one.
    pub(crate) forwardable: bool,
    /// Served per request by the 2026-07-28 tasks extension (the client must declare it),
    /// whatever the core revisions say.
    pub(crate) tasks_extension: bool,
    /// Answered in the handshake era too, although a per-request revision added it.
    pub(crate) in_both_eras: bool,
}

impl Route {
    /// The row of proto's method `M`, answered by `handler`.
    const fn of<M: Method>(handler: Feature) -> Route {
        Route {
            name: M::NAME,
            since: M::SINCE,
            removed_in: M::REMOVED_IN,
            handler,
            capability: Capability::Always,
            forwardable: false,
            tasks_extension: false,
            in_both_eras: false,
        }
    }

    const fn needs(self, capability: Capability) -> Route {
        Route { capability, ..self }
    }

    const fn forwardable(self) -> Route {
        Route { forwardable: true, ..self }
    }

    const fn in_tasks_extension(self) -> Route {
        Route { tasks_extension: true, ..self }
    }

    const fn in_both_eras(self) -> Route {
        Route { in_both_eras: true, ..self }
    }

    /// Whether the era of this request serves the method: the handshake era the methods of
    /// the handshake revisions, the per-request era those 2026-07-28 has (and the tasks
    /// extension's).
    pub(crate) fn serves(&self, per_request: bool) -> bool {
        if per_request {
            self.tasks_extension || self.removed_in.is_none_or(|removed| removed > PER_REQUEST_ERA)
        } else {
            self.in_both_eras || self.since < PER_REQUEST_ERA
        }
    }
}

/// `tasks/update` (the 2026-07-28 tasks extension, not a core revision's method: no proto type).
const UPDATE_TASK: Route = Route {
    name: "tasks/update",
    since: PER_REQUEST_ERA,
    removed_in: None,
    handler: Feature::Tasks(Tasks::Update),
    capability: Capability::Always,
    forwardable: false,
    tasks_extension: true,
    in_both_eras: false,
};

/// Every method the server answers; `tools/call` first, the hot path's lookup.
static ROUTES: [Route; 20] = [
    Route::of::<CallTool>(Feature::Tools(Tools::Call)).forwardable(),
    Route::of::<ListTools>(Feature::Tools(Tools::List)).forwardable(),
    Route::of::<Initialize>(Feature::Lifecycle(Lifecycle::Initialize)),
    Route::of::<Ping>(Feature::Lifecycle(Lifecycle::Ping)),
    Route::of::<Discover>(Feature::Lifecycle(Lifecycle::Discover)).in_both_eras(),
    Route::of::<ListResources>(Feature::Resources(Resources::List)).needs(Capability::Resources).forwardable(),
    Route::of::<ListResourceTemplates>(Feature::Resources(Resources::ListTemplates))
        .needs(Capability::Resources)
        .forwardable(),
    Route::of::<ReadResource>(Feature::Resources(Resources::Read)).needs(Capability::Resources).forwardable(),
    Route::of::<Subscribe>(Feature::Resources(Resources::Subscribe)).needs(Capability::ResourceSubscriptions),
    Route::of::<Unsubscribe>(Feature::Resources(Resources::Unsubscribe)).needs(Capability::ResourceSubscriptions),
    Route::of::<ListPrompts>(Feature::Prompts(Prompts::List)).needs(Capability::Prompts).forwardable(),
    Route::of::<GetPrompt>(Feature::Prompts(Prompts::Get)).needs(Capability::Prompts).forwardable(),
    Route::of::<Complete>(Feature::Completion).needs(Capability::Completions).forwardable(),
    Route::of::<SetLevel>(Feature::Logging),
    Route::of::<GetTask>(Feature::Tasks(Tasks::Get)).in_tasks_extension(),
    Route::of::<CancelTask>(Feature::Tasks(Tasks::Cancel)).in_tasks_extension(),
    Route::of::<ListTasks>(Feature::Tasks(Tasks::List)),
    Route::of::<GetTaskPayload>(Feature::Tasks(Tasks::Result)),
    UPDATE_TASK,
    Route::of::<SubscriptionsListen>(Feature::Subscriptions),
];

/// The row of `method`, if the server answers it in some era.
pub(crate) fn find(method: &str) -> Option<&'static Route> {
    ROUTES.iter().find(|route| route.name == method)
}

/// The methods a [`Forwarder`](super::forward::Forwarder) answers.
pub(crate) fn forwarded_methods() -> impl Iterator<Item = &'static str> {
    ROUTES.iter().filter(|route| route.forwardable).map(|route| route.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(per_request: bool) -> Vec<&'static str> {
        let mut names: Vec<_> = ROUTES.iter().filter(|r| r.serves(per_request)).map(|r| r.name).collect();
        names.sort_unstable();
        names
    }

    #[test]
    fn the_handshake_era_serves_the_handshake_revisions_methods_and_discover() {
        assert_eq!(
            served(false),
            [
                "completion/complete",
                "initialize",
                "logging/setLevel",
                "ping",
                "prompts/get",
                "prompts/list",
                "resources/list",
                "resources/read",
                "resources/subscribe",
                "resources/templates/list",
                "resources/unsubscribe",
                "server/discover",
                "tasks/cancel",
                "tasks/get",
                "tasks/list",
                "tasks/result",
                "tools/call",
                "tools/list",
            ]
        );
    }

    #[test]
    fn the_per_request_era_serves_2026_07_28_and_the_tasks_extension() {
        assert_eq!(
            served(true),
            [
                "completion/complete",
                "prompts/get",
                "prompts/list",
                "resources/list",
                "resources/read",
                "resources/templates/list",
                "server/discover",
                "subscriptions/listen",
                "tasks/cancel",
                "tasks/get",
                "tasks/update",
                "tools/call",
                "tools/list",
            ]
        );
    }

    #[test]
    fn rows_carry_proto_facts_and_names_are_unique() {
        for route in &ROUTES {
            assert_eq!(ROUTES.iter().filter(|r| r.name == route.name).count(), 1, "{}", route.name);
            if let Some(info) = crate::proto::mcp_types::find_method(route.name) {
                assert_eq!((route.since, route.removed_in), (info.since, info.removed_in), "{}", route.name);
            } else {
                assert_eq!(route.name, "tasks/update", "only the extension's method has no proto row");
            }
        }
        assert!(find("vendor/thing").is_none());
        assert_eq!(find("tools/call").map(|r| r.handler), Some(Feature::Tools(Tools::Call)));
    }

    #[test]
    fn forwarded_methods_are_the_catalog_methods() {
        let forwarded: Vec<_> = forwarded_methods().collect();
        assert_eq!(
            forwarded,
            [
                "tools/call",
                "tools/list",
                "resources/list",
                "resources/templates/list",
                "resources/read",
                "prompts/list",
                "prompts/get",
                "completion/complete",
            ]
        );
    }

    #[test]
    fn capabilities_follow_the_features() {
        let none = Features::default();
        let resources = Features { resources: true, ..Features::default() };
        let forwarded = Features { resources: true, forwarded: true, ..Features::default() };
        assert!(Capability::Always.offered_by(none));
        assert!(!Capability::Resources.offered_by(none));
        assert!(Capability::Resources.offered_by(resources));
        assert!(Capability::ResourceSubscriptions.offered_by(resources));
        assert!(!Capability::ResourceSubscriptions.offered_by(forwarded));
        assert!(!Capability::Prompts.offered_by(resources));
        assert!(!Capability::Completions.offered_by(resources));
    }
}
