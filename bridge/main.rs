//! The `mcp-bridge` binary: its code is the lib's [`mcpwire::bridge`] module, so that the lib's
//! generic code it uses is compiled once, in the lib, not again in this crate.

fn main() -> std::process::ExitCode {
    mcpwire::bridge::main()
}
