//! [`RedisBuckets`]: the rate limits' buckets in Redis (feature `redis`), shared by every
//! replica of the gateway, so that the calls all replicas accept together keep to each
//! bucket's budget.
//!
//! One Lua script per call, run atomically by Redis (`EVALSHA`, or `EVAL` when Redis has
//! forgotten the script, after a restart): it refills every bucket the call needs at its rate
//! up to its burst, takes a token from each when all have one, else none and answers how long
//! to wait for the emptiest. The time is Redis's (`TIME`), so the replicas' clocks do not
//! matter. A bucket is a hash (`tokens`, `at` in ms) under `<prefix>ratelimit:<key>` (the key
//! of [`SharedBucket`]) that expires once it would be full again, so idle callers cost nothing.
//!
//! It uses the connection of the session store ([`RedisStore`]): one client, one multiplexed
//! connection, reconnected when it breaks, every call bounded by the store's timeout. When
//! Redis cannot be asked the call fails with [`StoreUnavailable`], and the gateway falls back
//! to the replica's own buckets in memory (see [`super::Gateway::share_rate_limits`]).
//!
//! Not here: which limits apply and the keys ([`super::rate_limit`]).

use std::time::Duration;

use redis::aio::ConnectionManager;
use redis::{ErrorKind, RedisError};

use super::rate_limit::{Refused, SharedBucket, SharedBuckets, SharedTake, StoreUnavailable};
use crate::transport::sse_http::redis_store::RedisStore;

/// The token bucket over several keys at once. KEYS: the buckets; ARGV: each bucket's rate
/// (per second) and burst, in turn. Answers `{0, 0}` when every bucket gave a token, else
/// `{i, ms}`: the 1-based bucket to wait longest for, and the wait (-1: never).
const SCRIPT: &str = r"
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local levels = {}
local worst, wait = 0, 0
for i = 1, #KEYS do
  local rate, burst = tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i])
  local held = redis.call('HMGET', KEYS[i], 'tokens', 'at')
  local tokens = burst
  if held[1] and held[2] then
    local elapsed = math.max(0, now - tonumber(held[2])) / 1000
    tokens = math.min(burst, tonumber(held[1]) + elapsed * rate)
  end
  levels[i] = tokens
  if tokens < 1 then
    local ms = -1
    if rate > 0 then ms = math.ceil((1 - tokens) / rate * 1000) end
    if worst == 0 or wait ~= -1 and (ms == -1 or ms > wait) then worst, wait = i, ms end
  end
end
if worst > 0 then return {worst, wait} end
for i = 1, #KEYS do
  local rate, burst = tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i])
  redis.call('HSET', KEYS[i], 'tokens', tostring(levels[i] - 1), 'at', now)
  if rate > 0 then
    redis.call('PEXPIRE', KEYS[i], math.ceil((burst - levels[i] + 1) / rate * 1000) + 1000)
  end
end
return {0, 0}
";

/// The buckets of the gateway's rate limits in Redis.
pub struct RedisBuckets {
    connection: ConnectionManager,
    prefix: String,
    timeout: Duration,
    /// The script's SHA-1 as Redis gave it (`SCRIPT LOAD`), for `EVALSHA`.
    sha: String,
}

impl std::fmt::Debug for RedisBuckets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBuckets").field("prefix", &self.prefix).finish_non_exhaustive()
    }
}

fn unavailable(error: RedisError) -> StoreUnavailable {
    // Its kind and text, which name neither the URL nor credentials.
    StoreUnavailable(error.to_string())
}

impl RedisBuckets {
    /// The buckets in the Redis of `store`, over its connection, under its key prefix
    /// (`<prefix>ratelimit:`), within its timeout; the script loaded.
    ///
    /// # Errors
    /// [`StoreUnavailable`]: Redis did not load the script in time.
    pub async fn new(store: &RedisStore) -> Result<RedisBuckets, StoreUnavailable> {
        let options = store.options();
        let mut buckets = RedisBuckets {
            connection: store.connection(),
            prefix: format!("{}ratelimit:", options.key_prefix),
            timeout: options.timeout,
            sha: String::new(),
        };
        let mut load = redis::cmd("SCRIPT");
        load.arg("LOAD").arg(SCRIPT);
        buckets.sha = buckets.run(load).await?;
        Ok(buckets)
    }

    async fn run<T: redis::FromRedisValue>(&self, command: redis::Cmd) -> Result<T, StoreUnavailable> {
        let mut connection = self.connection.clone();
        match tokio::time::timeout(self.timeout, command.query_async::<T>(&mut connection)).await {
            Ok(result) => result.map_err(unavailable),
            Err(_) => Err(StoreUnavailable("Redis did not answer in time".into())),
        }
    }

    /// The script run on `buckets`: `EVALSHA`, then `EVAL` if Redis lost the script (which
    /// loads it again).
    async fn eval(&self, buckets: &[SharedBucket]) -> Result<(i64, i64), StoreUnavailable> {
        let command = |first: &str, script: &str| {
            let mut command = redis::cmd(first);
            command.arg(script).arg(buckets.len());
            for bucket in buckets {
                command.arg(format!("{}{}", self.prefix, bucket.key));
            }
            for bucket in buckets {
                command.arg(bucket.rate).arg(bucket.burst);
            }
            command
        };
        let mut connection = self.connection.clone();
        let by_sha = command("EVALSHA", &self.sha);
        match tokio::time::timeout(self.timeout, by_sha.query_async::<(i64, i64)>(&mut connection)).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(e)) if e.kind() == ErrorKind::NoScriptError => self.run(command("EVAL", SCRIPT)).await,
            Ok(Err(e)) => Err(unavailable(e)),
            Err(_) => Err(StoreUnavailable("Redis did not answer in time".into())),
        }
    }
}

impl SharedBuckets for RedisBuckets {
    fn take(&self, buckets: Vec<SharedBucket>) -> SharedTake<'_> {
        Box::pin(async move {
            if buckets.is_empty() {
                return Ok(Ok(()));
            }
            let (worst, wait_ms) = self.eval(&buckets).await?;
            if worst == 0 {
                return Ok(Ok(()));
            }
            let Some(bucket) = usize::try_from(worst).ok().and_then(|i| i.checked_sub(1)).and_then(|i| buckets.get(i))
            else {
                return Err(StoreUnavailable(format!("the script answered bucket {worst} of {}", buckets.len())));
            };
            let retry_after = u64::try_from(wait_ms).map_or(Duration::MAX, Duration::from_millis);
            Ok(Err(Refused { limit: bucket.limit.clone(), retry_after }))
        })
    }
}
