//! Running independent futures together: model calls that do not depend on
//! each other go out at once, so a host whose model answers concurrently
//! pays one round trip for all of them. No executor of its own: the joined
//! future is polled by whatever runs the call (the JS event loop, the
//! component's ready futures, a test executor).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Polls every future in order until all are ready; outputs in input order.
/// Every future is polled once before any is polled again, so the calls they
/// start reach the host in input order (hosts that replay a transcript rely
/// on that).
pub async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut pending: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut done: Vec<Option<F::Output>> = pending.iter().map(|_| None).collect();
    std::future::poll_fn(move |cx: &mut Context<'_>| {
        let mut all = true;
        for (f, out) in pending.iter_mut().zip(done.iter_mut()) {
            if out.is_none() {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => *out = Some(v),
                    Poll::Pending => all = false,
                }
            }
        }
        if all {
            Poll::Ready(done.iter_mut().map(|o| o.take().expect("ready")).collect())
        } else {
            Poll::Pending
        }
    })
    .await
}

/// Joins two futures of different types.
pub async fn join2<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let mut a = Box::pin(a);
    let mut b = Box::pin(b);
    let (mut ra, mut rb) = (None, None);
    std::future::poll_fn(move |cx: &mut Context<'_>| {
        if ra.is_none() {
            if let Poll::Ready(v) = a.as_mut().poll(cx) {
                ra = Some(v);
            }
        }
        if rb.is_none() {
            if let Poll::Ready(v) = b.as_mut().poll(cx) {
                rb = Some(v);
            }
        }
        if ra.is_some() && rb.is_some() {
            Poll::Ready((ra.take().expect("ready"), rb.take().expect("ready")))
        } else {
            Poll::Pending
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{block_on, yield_now};

    #[test]
    fn join_all_keeps_input_order_and_interleaves() {
        let log = std::cell::RefCell::new(Vec::new());
        let futs: Vec<_> = (0..3)
            .map(|i| {
                let log = &log;
                async move {
                    log.borrow_mut().push(("start", i));
                    yield_now().await;
                    log.borrow_mut().push(("end", i));
                    i * 10
                }
            })
            .collect();
        assert_eq!(block_on(join_all(futs)), vec![0, 10, 20]);
        let log = log.into_inner();
        // All three started before any finished: they ran together.
        assert_eq!(&log[..3], &[("start", 0), ("start", 1), ("start", 2)]);
    }

    #[test]
    fn join2_returns_both() {
        let (a, b) = block_on(join2(async { 1 }, async { "x" }));
        assert_eq!((a, b), (1, "x"));
    }
}
