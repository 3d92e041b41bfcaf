//! [`Events`]: one run's events, copied to every subscriber.
//!
//! Each subscriber gets its own channel and its own copy of every event,
//! so a slow consumer never makes another miss one. A subscriber whose
//! receiver is gone is dropped. Receivers end when the hub is closed
//! ([`Events::close`]) or every clone of it is dropped.

use sonde_model::Event;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};

/// A hub that copies each event to every subscriber.
#[derive(Debug, Clone, Default)]
pub struct Events {
    subscribers: Arc<Mutex<Vec<Sender<Event>>>>,
}

impl Events {
    pub fn new() -> Self {
        Self::default()
    }

    /// A new subscriber: every event emitted from now on.
    pub fn subscribe(&self) -> Receiver<Event> {
        let (tx, rx) = channel();
        self.subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(tx);
        rx
    }

    /// Sends `event` to every subscriber still listening.
    pub fn emit(&self, event: Event) {
        self.subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|s| s.send(event.clone()).is_ok());
    }

    /// Ends every subscriber's stream: their receivers see the end once
    /// they have read what was sent.
    pub fn close(&self) {
        self.subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_model::Warning;

    #[test]
    fn every_subscriber_gets_every_event_in_order() {
        let hub = Events::new();
        let a = hub.subscribe();
        let b = hub.subscribe();
        for _ in 0..3 {
            hub.emit(Event::Warning(Warning::NoLiveIntervals));
        }
        hub.close();
        assert_eq!(a.iter().count(), 3);
        assert_eq!(b.iter().count(), 3);
    }

    #[test]
    fn a_departed_subscriber_does_not_stop_the_others() {
        let hub = Events::new();
        drop(hub.subscribe());
        let b = hub.subscribe();
        hub.emit(Event::Warning(Warning::NoLiveIntervals));
        hub.close();
        assert_eq!(b.iter().count(), 1);
        assert!(hub.subscribers.lock().unwrap().is_empty());
    }
}
