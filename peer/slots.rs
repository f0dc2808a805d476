//! The cap on our requests in flight when a request past it waits for room
//! ([`session::WhenFull::Wait`](crate::proto::session::WhenFull::Wait)): a count of the slots
//! taken, and a wait for one to be given back.
//!
//! Not a tokio `Semaphore`: its permit is taken and given back under a mutex (about 130
//! instructions a request in process), where a slot here costs one atomic operation each way
//! while nobody waits. Not fair either: a request that finds a slot free takes it even while
//! others wait; those are woken one per slot given back and try again.

use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

/// At most `cap` slots taken at once.
pub(super) struct Slots {
    cap: usize,
    taken: AtomicUsize,
    /// Requests waiting for a slot: only while there are some does giving one back wake one.
    waiting: AtomicUsize,
    given_back: Notify,
}

/// A slot taken, given back when dropped.
pub(super) struct SlotTaken<'a> {
    slots: &'a Slots,
}

impl Slots {
    pub(super) fn new(cap: usize) -> Slots {
        Slots { cap, taken: AtomicUsize::new(0), waiting: AtomicUsize::new(0), given_back: Notify::new() }
    }

    /// A slot if one is free now.
    pub(super) fn try_take(&self) -> Option<SlotTaken<'_>> {
        // SeqCst: a waiter's count and the slots' are read crosswise (see `take` and the drop).
        let mut taken = self.taken.load(Ordering::SeqCst);
        while taken < self.cap {
            match self.taken.compare_exchange_weak(taken, taken + 1, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return Some(SlotTaken { slots: self }),
                Err(now) => taken = now,
            }
        }
        None
    }

    /// Waits for a slot. Cancel safe: dropping the wait takes nothing.
    pub(super) async fn take(&self) -> SlotTaken<'_> {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let _waiting = StopWaiting(&self.waiting);
        loop {
            // Registered before the slots are looked at: a slot given back after the look
            // wakes this wait (or leaves it a notification to find).
            let given_back = self.given_back.notified();
            tokio::pin!(given_back);
            given_back.as_mut().enable();
            if let Some(slot) = self.try_take() {
                return slot;
            }
            given_back.await;
        }
    }
}

impl Drop for SlotTaken<'_> {
    fn drop(&mut self) {
        self.slots.taken.fetch_sub(1, Ordering::SeqCst);
        if self.slots.waiting.load(Ordering::SeqCst) > 0 {
            self.slots.given_back.notify_one();
        }
    }
}

/// Counts a wait out of [`Slots::waiting`] however it ends.
struct StopWaiting<'a>(&'a AtomicUsize);

impl Drop for StopWaiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::task::poll_once;

    #[test]
    fn at_most_cap_slots_are_taken_and_a_dropped_one_is_free_again() {
        let slots = Slots::new(2);
        let first = slots.try_take().expect("a free slot");
        let _second = slots.try_take().expect("a free slot");
        assert!(slots.try_take().is_none(), "both taken");
        drop(first);
        assert!(slots.try_take().is_some(), "given back");
    }

    #[test]
    fn a_wait_is_woken_by_a_slot_given_back_and_a_dropped_wait_is_no_longer_counted() {
        let slots = Slots::new(1);
        let taken = slots.try_take().expect("a free slot");
        let mut dropped_wait = Box::pin(slots.take());
        assert!(poll_once(dropped_wait.as_mut()).is_pending(), "no slot free");
        drop(dropped_wait);
        assert_eq!(slots.waiting.load(Ordering::SeqCst), 0);
        let mut wait = Box::pin(slots.take());
        assert!(poll_once(wait.as_mut()).is_pending(), "no slot free");
        assert_eq!(slots.waiting.load(Ordering::SeqCst), 1);
        drop(taken);
        let slot = match poll_once(wait.as_mut()) {
            std::task::Poll::Ready(slot) => slot,
            std::task::Poll::Pending => panic!("the slot given back goes to the wait"),
        };
        assert!(slots.try_take().is_none(), "the wait holds it");
        drop(slot);
        drop(wait);
        assert_eq!(slots.waiting.load(Ordering::SeqCst), 0);
        assert!(slots.try_take().is_some());
    }
}
