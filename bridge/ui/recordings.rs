//! The downstream sessions of `mcp-bridge serve` as the console sees them to record them: each
//! live session with its recording switch ([`RecordingSwitch`]), and the recordings made.
//!
//! Every session is served over a [`SwitchedRecording`](mcpwire::recording::SwitchedRecording)
//! whose switch is kept here while the session lives ([`Sessions::open`]); with `--record DIR`
//! each starts on (every session recorded, as before), and the console starts and stops any
//! session's recording ([`Sessions::start`], [`Sessions::stop`]). A recording goes to the next
//! file of `--record DIR`, or without it of a directory made for this process under the
//! system's temporary directory. The console downloads a recording by its number, never by a
//! path it names.
//!
//! Not here: the routes (mod.rs), the recording format (`mcpwire::recording`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use mcpwire::proto::timestamp::utc_rfc3339;
use mcpwire::recording::{RecordingDir, RecordingSwitch, TeeOptions};
use serde_json::{json, Value};

/// The live sessions and the recordings made.
#[derive(Debug)]
pub(crate) struct Sessions {
    /// `--record DIR`: every session recorded from its start, into it.
    record_all: Option<Arc<RecordingDir>>,
    /// Where the console's recordings go without `--record`: made on the first one.
    on_demand: Mutex<Option<Arc<RecordingDir>>>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    next_session: u64,
    live: BTreeMap<u64, Live>,
    made: Vec<Made>,
}

#[derive(Debug)]
struct Live {
    carrier: &'static str,
    opened: String,
    switch: Arc<RecordingSwitch>,
    /// The recording under way, by number.
    recording: Option<u64>,
}

#[derive(Debug)]
struct Made {
    session: u64,
    path: PathBuf,
    started: String,
    stopped: Option<String>,
}

/// A session's place among the live ones, given up (its recording stopped) when dropped.
pub(crate) struct Opened {
    sessions: Arc<Sessions>,
    number: u64,
}

impl Drop for Opened {
    fn drop(&mut self) {
        let mut state = self.sessions.lock();
        if let Some(live) = state.live.remove(&self.number) {
            live.switch.stop();
            if let Some(made) = live.recording.and_then(|n| state.made.get_mut(n as usize - 1)) {
                made.stopped = Some(now());
            }
        }
    }
}

fn now() -> String {
    utc_rfc3339(SystemTime::now())
}

impl Sessions {
    /// Sessions recorded from their start into `record_all` (`--record DIR`) when given.
    pub(crate) fn new(record_all: Option<Arc<RecordingDir>>) -> Sessions {
        Sessions { record_all, on_demand: Mutex::default(), state: Mutex::default() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A session carried by `carrier` (`stdio`, `streamable-http`, `sse`) opened, recorded
    /// through `switch`: numbered, listed until the guard is dropped, and recording already
    /// with `--record`.
    pub(crate) fn open(self: &Arc<Self>, carrier: &'static str, switch: Arc<RecordingSwitch>) -> Opened {
        let number = {
            let mut state = self.lock();
            state.next_session += 1;
            let number = state.next_session;
            state.live.insert(number, Live { carrier, opened: now(), switch, recording: None });
            number
        };
        if self.record_all.is_some() {
            if let Err(e) = self.start(number) {
                tracing::warn!("cannot record this session: {e}");
            }
        }
        Opened { sessions: self.clone(), number }
    }

    /// Where a new recording goes.
    fn directory(&self) -> Result<Arc<RecordingDir>, String> {
        if let Some(dir) = &self.record_all {
            return Ok(dir.clone());
        }
        let mut on_demand = self.on_demand.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(dir) = on_demand.as_ref() {
            return Ok(dir.clone());
        }
        let path = std::env::temp_dir().join(format!("mcp-bridge-recordings-{}", std::process::id()));
        let dir = Arc::new(RecordingDir::new(&path).map_err(|e| format!("{}: {e}", path.display()))?);
        tracing::info!(directory = %path.display(), "the console's recordings go here");
        Ok(on_demand.insert(dir).clone())
    }

    /// Starts recording live session `number` (a recording under way is finished first); the
    /// recording's number.
    pub(crate) fn start(&self, number: u64) -> Result<u64, String> {
        let directory = self.directory()?;
        let mut state = self.lock();
        let State { live, made, .. } = &mut *state;
        let session = live.get_mut(&number).ok_or_else(|| format!("no live session {number}"))?;
        let description = format!("mcp-bridge serve: a {} session, recorded at the message level", session.carrier);
        let recorder = directory.next(TeeOptions::server_side().description(description)).map_err(|e| e.to_string())?;
        tracing::debug!(file = %recorder.path().display(), "recording a session");
        let path = recorder.path().to_owned();
        session.switch.start(recorder);
        if let Some(previous) = session.recording.and_then(|n| made.get_mut(n as usize - 1)) {
            previous.stopped = Some(now());
        }
        made.push(Made { session: number, path, started: now(), stopped: None });
        session.recording = Some(made.len() as u64);
        Ok(made.len() as u64)
    }

    /// Stops recording live session `number`; the recording's number, if one was under way.
    pub(crate) fn stop(&self, number: u64) -> Result<Option<u64>, String> {
        let mut state = self.lock();
        let State { live, made, .. } = &mut *state;
        let session = live.get_mut(&number).ok_or_else(|| format!("no live session {number}"))?;
        session.switch.stop();
        let stopped = session.recording.take();
        if let Some(made) = stopped.and_then(|n| made.get_mut(n as usize - 1)) {
            made.stopped = Some(now());
        }
        Ok(stopped)
    }

    /// The file of recording `number` and its name.
    pub(crate) fn recording(&self, number: u64) -> Option<(PathBuf, String)> {
        let state = self.lock();
        let made = state.made.get((number as usize).checked_sub(1)?)?;
        let name = made.path.file_name()?.to_string_lossy().into_owned();
        Some((made.path.clone(), name))
    }

    /// `{"sessions": [{"number", "carrier", "opened", "client" (its clientInfo, once
    /// initialized), "recording" (the number of the one under way)}], "recordings": [{"number",
    /// "session", "file" (the name), "started", "stopped", "bytes"}]}`.
    pub(crate) fn to_json(&self) -> Value {
        let state = self.lock();
        let sessions: Vec<Value> = state
            .live
            .iter()
            .map(|(number, live)| {
                json!({
                    "number": number,
                    "carrier": live.carrier,
                    "opened": live.opened,
                    "client": live.switch.client_info(),
                    "recording": live.recording,
                })
            })
            .collect();
        let recordings: Vec<Value> = state
            .made
            .iter()
            .enumerate()
            .map(|(i, made)| {
                json!({
                    "number": i + 1,
                    "session": made.session,
                    "file": made.path.file_name().map(|n| n.to_string_lossy()),
                    "started": made.started,
                    "stopped": made.stopped,
                    "bytes": std::fs::metadata(&made.path).map(|m| m.len()).ok(),
                })
            })
            .collect();
        json!({"sessions": sessions, "recordings": recordings})
    }
}
