//! A panic's message carried across a thread boundary. A scoped thread's panic
//! comes back from `join` as an opaque payload; re-raising it with `expect` puts
//! `Any { .. }` in the new message and loses the original one, so a report that
//! catches the panic (the damaged-data stage's cleanings) cannot say what failed.

use std::any::Any;
use std::thread::ScopedJoinHandle;

/// The message of a panic payload: the `&str` or `String` that `panic!` carries,
/// or `"(a non-string panic payload)"`.
pub fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("(a non-string panic payload)")
}

/// Joins a scoped thread; if it panicked, panics in turn with `"{thread}
/// panicked: {original message}"`.
pub fn join_scoped<T>(handle: ScopedJoinHandle<'_, T>, thread: &str) -> T {
    match handle.join() {
        Ok(value) => value,
        Err(payload) => panic!("{thread} panicked: {}", panic_message(&*payload)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `body` on a scoped thread joined by [`join_scoped`] and returns the
    /// message of the panic that reaches the caller.
    fn caught(body: impl FnOnce() + Send) -> String {
        let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            std::thread::scope(|scope| join_scoped(scope.spawn(body), "the test thread"))
        }))
        .expect_err("the thread panics");
        panic_message(&*payload).to_string()
    }

    #[test]
    fn a_scoped_threads_panic_message_survives_the_join() {
        let formatted = caught(|| panic!("offset {} out of order", 7));
        assert_eq!(formatted, "the test thread panicked: offset 7 out of order");
        let literal = caught(|| panic!("a literal message"));
        assert_eq!(literal, "the test thread panicked: a literal message");
        let other = caught(|| std::panic::panic_any(7u32));
        assert_eq!(
            other,
            "the test thread panicked: (a non-string panic payload)"
        );
    }

    #[test]
    fn a_thread_that_returns_is_joined_to_its_value() {
        let value = std::thread::scope(|scope| join_scoped(scope.spawn(|| 41 + 1), "adder"));
        assert_eq!(value, 42);
    }
}
