//! [`forward_queries!`]: the [`Transport`](super::Transport) methods that ask a transport
//! something, written once for every wrapper that answers them as what it wraps (the boxed
//! transport and its erased trait, the recording wrappers).
//!
//! Not here: sending, receiving and closing, which each wrapper does its own way.

/// Writes every [`Transport`](super::Transport) method but `send`, `send_related`, `recv` and
/// `close` as a call of the method of the same name of trait `$via` on `$target`, an
/// expression in which `$this` stands for `self`. A method added to the trait is added here
/// once, and no wrapper silently falls back to the trait's default for it.
macro_rules! forward_queries {
    ($via:ident, |$this:ident| $target:expr) => {
        fn is_stateless(&self) -> bool {
            let $this = self;
            $via::is_stateless($target)
        }

        fn outlives_its_input(&self) -> bool {
            let $this = self;
            $via::outlives_its_input($target)
        }

        fn param_headers(&self, request: &crate::proto::jsonrpc::Id) -> Option<Vec<(String, String)>> {
            let $this = self;
            $via::param_headers($target, request)
        }

        fn principal(
            &self,
            request: &crate::proto::jsonrpc::Id,
        ) -> Option<std::sync::Arc<crate::transport::principal::Principal>> {
            let $this = self;
            $via::principal($target, request)
        }

        #[cfg(feature = "http")]
        fn http_request(
            &self,
            request: &crate::proto::jsonrpc::Id,
        ) -> Option<std::sync::Arc<crate::transport::sse_http::HttpRequestParts>> {
            let $this = self;
            $via::http_request($target, request)
        }

        fn related_request(&self, incoming: &crate::proto::jsonrpc::Id) -> Option<crate::proto::jsonrpc::Id> {
            let $this = self;
            $via::related_request($target, incoming)
        }

        fn set_protocol_version(&self, version: Option<crate::proto::version::ProtocolVersion>) {
            let $this = self;
            $via::set_protocol_version($target, version)
        }

        fn admit_tools(&self, tools: &mut Vec<crate::proto::mcp_types::Tool>) -> Vec<(String, String)> {
            let $this = self;
            $via::admit_tools($target, tools)
        }

        fn network_transport(&self) -> Option<&'static str> {
            let $this = self;
            $via::network_transport($target)
        }

        fn server_endpoint(&self) -> Option<(String, u16)> {
            let $this = self;
            $via::server_endpoint($target)
        }

        fn session_id(&self) -> Option<String> {
            let $this = self;
            $via::session_id($target)
        }

        fn child_pid(&self) -> Option<u32> {
            let $this = self;
            $via::child_pid($target)
        }

        fn exit_status(&self) -> Option<std::process::ExitStatus> {
            let $this = self;
            $via::exit_status($target)
        }
    };
}

pub(crate) use forward_queries;
