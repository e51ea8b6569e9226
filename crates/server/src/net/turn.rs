//! The end of a worker's turn: connections that have replies ready wait until every
//! connection with input on this worker has run, then write, as Redis writes its replies in
//! beforeSleep. A client with many connections then finds several replies at once instead of
//! being woken for each (measured in docs/benchmarks.md, "Replies at the end of the turn").

use crate::tick::Tick;
use std::cell::RefCell;
use std::future::poll_fn;
use std::task::{Poll, Waker};

/// A loop that never runs out of work would never reach its end of turn: past this many
/// waiting connections, or this long since the first began to wait, they write at once.
const MAX_WAITING: usize = 64;
const MAX_WAIT_MICROS: u64 = 500;

#[derive(Default)]
struct Waiting {
    wakers: Vec<Waker>,
    since: Option<Tick>,
}

thread_local! {
    static WAITING: RefCell<Waiting> = RefCell::new(Waiting::default());
}

/// Resolves once this worker's event loop has nothing else to run (or the wait is bounded:
/// see MAX_WAITING). `now` is a recent clock reading (the end of the caller's last command),
/// so that waiting costs no clock read of its own.
pub async fn end(now: Tick) {
    let mut queued = false;
    poll_fn(|cx| {
        if queued {
            // Woken by `ended` (or earlier by anything else: writing sooner is harmless).
            return Poll::Ready(());
        }
        WAITING.with_borrow_mut(|w| {
            let since = *w.since.get_or_insert(now);
            if w.wakers.len() >= MAX_WAITING || now.micros_since(since) >= MAX_WAIT_MICROS {
                wake_all(w);
                return Poll::Ready(());
            }
            w.wakers.push(cx.waker().clone());
            queued = true;
            Poll::Pending
        })
    })
    .await
}

/// Called as the event loop is about to sleep: lets every waiting connection write.
pub fn ended() {
    WAITING.with_borrow_mut(wake_all);
}

fn wake_all(w: &mut Waiting) {
    w.since = None;
    for waker in w.wakers.drain(..) {
        waker.wake();
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    /// A connection waiting for the end of the turn writes only after every other task that
    /// was ready has run, and the loop then goes on (the park hook wakes it).
    #[test]
    fn waits_for_the_other_ready_tasks_then_resumes() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .on_thread_park(super::ended)
            .build()
            .expect("runtime");
        let log = Rc::new(RefCell::new(Vec::new()));
        let local = tokio::task::LocalSet::new();
        let l = log.clone();
        local.block_on(&rt, async move {
            let (a, b) = (l.clone(), l.clone());
            let first = tokio::task::spawn_local(async move {
                a.borrow_mut().push("first computed");
                super::end(crate::tick::Tick::now()).await;
                a.borrow_mut().push("first wrote");
            });
            let second = tokio::task::spawn_local(async move {
                for _ in 0..3 {
                    tokio::task::yield_now().await;
                }
                b.borrow_mut().push("second computed");
            });
            let _ = tokio::join!(first, second);
        });
        assert_eq!(
            *log.borrow(),
            ["first computed", "second computed", "first wrote"]
        );
    }

    /// Without an idle moment (no park hook here at all), the waiting connections still
    /// write once too many wait.
    #[test]
    fn a_loop_that_never_idles_still_writes() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let done = Rc::new(RefCell::new(0));
        let local = tokio::task::LocalSet::new();
        let d = done.clone();
        local.block_on(&rt, async move {
            let tasks: Vec<_> = (0..=super::MAX_WAITING)
                .map(|_| {
                    let d = d.clone();
                    tokio::task::spawn_local(async move {
                        super::end(crate::tick::Tick::now()).await;
                        *d.borrow_mut() += 1;
                    })
                })
                .collect();
            for t in tasks {
                let _ = t.await;
            }
        });
        assert_eq!(*done.borrow(), super::MAX_WAITING + 1);
    }
}
