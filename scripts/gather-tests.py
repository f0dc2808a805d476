#!/usr/bin/env python3
"""Gathers the root package's integration tests into one binary per area.

Every `tests/NAME.rs` is moved to `tests/AREA/NAME.rs` (a module of the `AREA` test binary,
`tests/AREA/main.rs`), and its declarations of the shared support modules become `use crate::…`
of the modules that main.rs declares once. Run from the repository root; a file it does not
know stops it (add it to AREAS). Idempotent: files already gathered are left as they are, and
each main.rs is written again from the files its folder holds.
"""
import os, re, sys

AREAS = {
    "wire": ["roundtrip_recordings", "per_request_era", "mrtr_processes"],
    "transports": ["http_client", "http_client_authorizer", "http_client_stateless", "http_server",
                   "http_server_auth", "http_stateless_server", "http_tls", "http_principal",
                   "http_oauth", "oauth_client_e2e"],
    "client": ["client_bad_servers", "client_callers", "client_eras", "client_everything",
               "client_listen", "client_stdio", "connection_set", "catalog_lazy", "catalog_limits",
               "catalog_reload", "catalog_scopes", "catalog_sources"],
    "server": ["server_backpressure", "server_context", "server_features", "server_stdio",
               "typed_tools", "examples", "agent", "demo_schemas"],
    "gateway": ["bridge_bounds", "bridge_soak", "bridge_cli", "bridge_config_cli", "bridge_faults", "bridge_login",
                "bridge_oauth", "bridge_reload", "bridge_serve", "recording_tee"],
    "conformance": ["conformance_check", "conformance_client", "conformance_client_http", "conformance_http",
                    "conformance_record_http", "conformance_replay"],
    "interop": ["http_interop", "interop_clients", "interop_eras"],
    # Tests that count what the process holds (fds, children) take turns through
    # reliability::Baseline: they share a binary with no test that does not.
    "reliability": ["faults", "hostile_input", "large_messages", "load", "scale_out_stateless",
                    "shared_sessions"],
}
# Binaries of their own: a global allocator that counts (metrics_alloc), and the Redis
# scale-out test that needs the `redis` features (scripts/test runs it with them).
ALONE = {"metrics_alloc", "scale_out"}
# A test module whose name a support module has.
RENAMED = {"examples": "example_programs"}
# Support modules: the name main.rs declares, and the path from tests/AREA/.
SUPPORT = {
    "support": "../support/mod.rs",
    "examples": "../support/examples.rs",
    "serving": "../support/bridge.rs",
    "client": "../support/client.rs",
    "echo": "../../bridge/demo/echo.rs",
    "http_support": "../support/http.rs",
    "oauth_support": "../support/oauth.rs",
    "reliability": "../support/reliability.rs",
}
# Which support module a declaration in tests/NAME.rs means.
PATHS = {
    "support/mod.rs": "support", "support/examples.rs": "examples", "support/bridge.rs": "serving",
    "support/client.rs": "client", "../bridge/demo/echo.rs": "echo",
}
# Support modules that use others.
NEEDS = {"serving": {"examples"}, "oauth_support": {"http_support", "support"}}
FEATURES = {"http_tls": 'feature = "tls"', "typed_tools": 'all(feature = "schema", feature = "validation")'}

area_of = {name: area for area, names in AREAS.items() for name in names}
DECL = re.compile(r'^(?:#\[path = "([^"]+)"\]\n)?mod (\w+);\n', re.M)


def gather(name):
    area = area_of.get(name)
    if area is None:
        sys.exit(f"gather-tests: tests/{name}.rs belongs to no area: add it to AREAS")
    text = open(f"tests/{name}.rs").read()

    def use(m):
        path, module = m.group(1), m.group(2)
        support = PATHS[path] if path else module
        if support not in SUPPORT:
            sys.exit(f"gather-tests: tests/{name}.rs declares `mod {module}` ({path}): not a support module")
        return f"use crate::{support};\n" if support == module else f"use crate::{support} as {module};\n"

    text = DECL.sub(use, text)
    # A module the test names only as `crate::…` (or not at all) needs no import.
    for line in re.findall(r"^use crate::\w+(?: as \w+)?;\n", text, re.M):
        imported = re.split(r"::| as ", line.strip().rstrip(";"))[-1]
        if not re.search(rf"(?<![:\w]){imported}::", text):
            text = text.replace(line, "", 1)
    os.makedirs(f"tests/{area}", exist_ok=True)
    target = f"tests/{area}/{RENAMED.get(name, name)}.rs"
    open(target, "w").write(text)
    os.remove(f"tests/{name}.rs")
    os.system(f"git add -A tests/{name}.rs {target} 2>/dev/null")


def write_main(area):
    folder = f"tests/{area}"
    modules = sorted(f[:-3] for f in os.listdir(folder) if f.endswith(".rs") and f != "main.rs")
    used = set()
    for m in modules:
        used |= set(re.findall(r"\bcrate::(\w+)", open(f"{folder}/{m}.rs").read())) & set(SUPPORT)
    for module, needs in NEEDS.items():
        if module in used:
            used |= needs
    lines = [f"//! The {area} integration tests, one module per file of this folder",
             "//! (`cargo test --test " + area + " -- MODULE::`); the shared support modules are declared here once.",
             ""]
    for s in sorted(used):
        lines += [f'#[path = "{SUPPORT[s]}"]', f"mod {s};"]
    lines.append("")
    for m in modules:
        feature = FEATURES.get(m)
        if feature:
            lines.append(f"#[cfg({feature})]")
        lines.append(f"mod {m};")
    open(f"{folder}/main.rs", "w").write("\n".join(lines) + "\n")
    os.system(f"git add {folder}/main.rs")


# The support modules that had folders of their own join tests/support/.
for old, new in [("http_support/mod.rs", "http.rs"), ("oauth_support/mod.rs", "oauth.rs"),
                 ("reliability/mod.rs", "reliability.rs")]:
    if os.path.exists(f"tests/{old}"):
        os.system(f"git mv tests/{old} tests/support/{new}")
        os.rmdir(f"tests/{os.path.dirname(old)}")
for f in sorted(os.listdir("tests")):
    if f.endswith(".rs") and f[:-3] not in ALONE:
        gather(f[:-3])
# The binaries of their own name the moved support modules by path.
for name in ALONE:
    text = open(f"tests/{name}.rs").read()
    for module, path in [("http_support", "support/http.rs"), ("oauth_support", "support/oauth.rs"),
                         ("reliability", "support/reliability.rs")]:
        text = re.sub(rf"^(?:#\[path = [^\n]*\n)*mod {module};$", f'#[path = "{path}"]\nmod {module};', text, flags=re.M)
    open(f"tests/{name}.rs", "w").write(text)
for area in AREAS:
    if os.path.isdir(f"tests/{area}"):
        write_main(area)
# A gathered file's own [[test]] entry goes: its feature is now a cfg on its module.
manifest = open("Cargo.toml").read()
for name in area_of:
    manifest = re.sub(rf'\[\[test\]\]\nname = "{name}"\npath = "[^"]*"\n(required-features = \[[^\]]*\]\n)?\n', "", manifest)
open("Cargo.toml", "w").write(manifest)
# Commands in the documents and comments that name a gathered file's old binary.
def retarget(m):
    locked, name, rest = m.group(1) or "", m.group(2), m.group(3) or ""
    area = area_of.get(name)
    if area is None:
        return m.group(0)
    if rest.startswith(" -- "):
        return f"cargo test{locked} --test {area}{rest} {name}::"
    if rest.startswith(" ") and rest.strip():
        return f"cargo test{locked} --test {area} {name}::{rest.strip()}"
    return f"cargo test{locked} --test {area} {name}::"


for folder in ["docs", "tests", ".ci", "scripts", "README.md", "bridge", "conformance"]:
    paths = [folder] if os.path.isfile(folder) else [
        os.path.join(d, f) for d, _, fs in os.walk(folder) for f in fs if f.endswith((".md", ".rs", "run"))]
    for path in paths:
        text = open(path).read()
        new = re.sub(r"cargo test( --locked)? --test (\w+)((?: -- [-\w= ]+)|(?: \w+))?", retarget, text)
        if new != text:
            open(path, "w").write(new)
os.system("cargo fmt")
