//! Recycled body buffers: a large message is written into a buffer taken from a small shared
//! pool, handed to hyper as [`Bytes`], and the buffer goes back to the pool when the last
//! `Bytes` of it is dropped (once hyper has written it, or the replay buffer has let it go).
//!
//! Why: a 64 KiB answer written into fresh memory for every call makes the heap grow and shrink
//! on every call under glibc's defaults (the freed answer tops the heap past its trim
//! threshold), and each grow pays page faults again. A kept buffer is already mapped.
//!
//! Small messages are not pooled: the allocator serves them from its bins for less than the
//! pool's lock costs. Not here: anything about what the bytes mean.

use std::sync::Mutex;

use bytes::Bytes;

use crate::proto::jsonrpc::Message;

/// Messages expected to be shorter than this are written into a fresh `Vec`.
const POOLED_FROM_BYTES: usize = 16 * 1024;
/// Buffers kept for reuse, at most.
const KEPT_BUFFERS: usize = 8;
/// A buffer that grew past this is freed instead of kept.
const MAX_KEPT_CAPACITY: usize = 1024 * 1024;

/// The pool every HTTP body is written through.
pub(crate) static BODIES: BufferPool = BufferPool::new();

/// A few buffers kept for reuse.
pub(crate) struct BufferPool {
    kept: Mutex<Vec<Vec<u8>>>,
}

impl BufferPool {
    pub(crate) const fn new() -> BufferPool {
        BufferPool { kept: Mutex::new(Vec::new()) }
    }

    /// The compact JSON text of `message`, in a recycled buffer when it is large.
    pub(crate) fn encode(&'static self, message: &Message) -> Bytes {
        let hint = message.encoded_len_hint();
        if hint < POOLED_FROM_BYTES {
            return Bytes::from(message.to_vec());
        }
        let mut buf = self.kept.lock().map(|mut kept| kept.pop()).ok().flatten().unwrap_or_default();
        buf.reserve(hint);
        message.write_to(&mut buf);
        Bytes::from_owner(Recycled { buf, pool: self })
    }

    fn put_back(&self, mut buf: Vec<u8>) {
        if buf.capacity() > MAX_KEPT_CAPACITY {
            return;
        }
        buf.clear();
        if let Ok(mut kept) = self.kept.lock() {
            if kept.len() < KEPT_BUFFERS {
                kept.push(buf);
            }
        }
    }
}

/// A pooled buffer lent to a `Bytes`; back to its pool when dropped.
struct Recycled {
    buf: Vec<u8>,
    pool: &'static BufferPool,
}

impl AsRef<[u8]> for Recycled {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Recycled {
    fn drop(&mut self) {
        self.pool.put_back(std::mem::take(&mut self.buf));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::jsonrpc::{Id, Response};

    fn response(text_len: usize) -> Message {
        let text = "x".repeat(text_len);
        Message::Response(Response::new_ok(Id::Number(7), &serde_json::json!({"text": text})).unwrap())
    }

    fn kept(pool: &BufferPool) -> Vec<(*const u8, usize)> {
        pool.kept.lock().unwrap().iter().map(|buf| (buf.as_ptr(), buf.len())).collect()
    }

    #[test]
    fn large_and_small_messages_encode_to_their_json() {
        static POOL: BufferPool = BufferPool::new();
        for len in [0, 10, POOLED_FROM_BYTES, 70_000, 70_000, 10] {
            let message = response(len);
            assert_eq!(POOL.encode(&message), Bytes::from(message.to_vec()), "text of {len} bytes");
        }
    }

    #[test]
    fn a_large_body_lends_its_buffer_to_the_next_once_dropped() {
        static POOL: BufferPool = BufferPool::new();
        let small = POOL.encode(&response(10));
        drop(small);
        assert!(kept(&POOL).is_empty(), "small bodies are not pooled");

        let first = POOL.encode(&response(70_000));
        let address = first.as_ptr();
        let clone = first.clone();
        drop(first);
        assert!(kept(&POOL).is_empty(), "still lent to a clone");
        drop(clone);
        assert_eq!(kept(&POOL), [(address, 0)], "back in the pool, emptied");

        let second = POOL.encode(&response(20_000));
        assert_eq!(second.as_ptr(), address, "the kept buffer is used again");
        assert_eq!(second, Bytes::from(response(20_000).to_vec()));
        assert!(kept(&POOL).is_empty());
    }

    #[test]
    fn the_pool_keeps_a_bounded_number_of_bounded_buffers() {
        static POOL: BufferPool = BufferPool::new();
        let big = POOL.encode(&response(MAX_KEPT_CAPACITY + 1));
        drop(big);
        assert!(kept(&POOL).is_empty(), "a buffer past the cap is freed");
        let many: Vec<Bytes> = (0..KEPT_BUFFERS + 3).map(|_| POOL.encode(&response(20_000))).collect();
        drop(many);
        assert_eq!(kept(&POOL).len(), KEPT_BUFFERS);
    }
}
