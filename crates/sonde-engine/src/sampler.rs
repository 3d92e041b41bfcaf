//! The interval sampler of one end of a test, TCP or UDP: when the
//! warm-up ends and when each interval window is cut.
//!
//! [`Sampler`] is the timing alone, a state machine that never reads a
//! clock: the caller passes the time (from the side's start), so every
//! decision is tested without sleeping. [`drive`] runs it on the calling
//! thread against the stream threads' done channel; what a cut reads
//! (TCP bytes and TCP_INFO, UDP tallies) is the side's [`SampleSide`].
//!
//! One rule closes the last window, for every side: when the data stops,
//! that is at the last byte or packet this end moved, or at the planned
//! end (omit + time) if that is later; after an early stop, at the last
//! data moved.

use sonde_model::SampleWindow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The timing of one end's run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SamplerPlan {
    /// The warm-up, left out of the measured part.
    pub omit: Duration,
    /// The measured part, after the warm-up.
    pub time: Duration,
    /// Length of an interval window; zero: no windows.
    pub interval: Duration,
    /// The data may end before the planned end (a test bounded by
    /// volume): the last window then closes at the last data moved.
    pub bounded: bool,
}

impl SamplerPlan {
    /// The planned end: omit + time.
    pub fn end(&self) -> Duration {
        self.omit + self.time
    }
}

/// What is due, in order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Event {
    /// The warm-up is over: the measured part starts with what the
    /// streams have moved by now.
    OmitEnd,
    /// An interval window closes now; `omitted` when it ends within the
    /// warm-up.
    Cut { window: SampleWindow, omitted: bool },
}

/// Where the run is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Running,
    /// Every stream ended; the open window closes at this time.
    Ended(Duration),
    Done,
}

/// The sampler's timing: omit point, window cuts, the last window.
#[derive(Debug, Clone)]
pub struct Sampler {
    plan: SamplerPlan,
    /// Start of the open window; at the planned end once none is open.
    window_start: Duration,
    omit_pending: bool,
    phase: Phase,
}

impl Sampler {
    pub fn new(plan: SamplerPlan) -> Self {
        Self {
            plan,
            window_start: if plan.interval.is_zero() {
                plan.end()
            } else {
                Duration::ZERO
            },
            omit_pending: !plan.omit.is_zero(),
            phase: Phase::Running,
        }
    }

    fn window_open(&self) -> bool {
        self.window_start < self.plan.end()
    }

    /// The next window boundary a timer cuts: never the planned end,
    /// whose window closes when the streams end.
    fn next_boundary(&self) -> Option<Duration> {
        let b = self.window_start + self.plan.interval;
        (self.window_open() && b < self.plan.end()).then_some(b)
    }

    /// When, from the start, [`Sampler::poll`] next has something to do;
    /// `None`: nothing until the streams end.
    pub fn poll_at(&self) -> Option<Duration> {
        if self.phase != Phase::Running {
            return None;
        }
        let omit = Some(self.plan.omit).filter(|_| self.omit_pending);
        [omit, self.next_boundary()].into_iter().flatten().min()
    }

    /// The next event due at `now` (from the start), if any; call until
    /// `None`. After [`Sampler::streams_ended`], the last events.
    pub fn poll(&mut self, now: Duration) -> Option<Event> {
        match self.phase {
            Phase::Done => None,
            Phase::Ended(_) if self.omit_pending => {
                // Ended within the warm-up: nothing was measured.
                self.omit_pending = false;
                Some(Event::OmitEnd)
            }
            Phase::Ended(end) => {
                self.phase = Phase::Done;
                self.window_open().then(|| self.cut(end))
            }
            Phase::Running => {
                let due = self.poll_at().filter(|&t| t <= now)?;
                if self.omit_pending && due == self.plan.omit {
                    self.omit_pending = false;
                    return Some(Event::OmitEnd);
                }
                Some(self.cut(due))
            }
        }
    }

    /// Every stream of this end has ended. `last_data`: when this end
    /// last moved a byte or packet, from the start (zero if never);
    /// `stopped_early`: the run was stopped before its end. The last
    /// window closes at `last_data`, or at the planned end if that is
    /// later and the run was neither stopped nor bounded by volume;
    /// never before it opened.
    pub fn streams_ended(&mut self, last_data: Duration, stopped_early: bool) {
        if self.phase != Phase::Running {
            return;
        }
        let end = if stopped_early || self.plan.bounded {
            last_data
        } else {
            last_data.max(self.plan.end())
        };
        self.phase = Phase::Ended(end.max(self.window_start));
    }

    fn cut(&mut self, to: Duration) -> Event {
        let from = self.window_start;
        self.window_start = to.min(self.plan.end());
        Event::Cut {
            window: SampleWindow {
                start_s: from.as_secs_f64(),
                end_s: to.as_secs_f64(),
            },
            omitted: to <= self.plan.omit,
        }
    }
}

/// What one end does at the sampler's events.
pub trait SampleSide {
    /// The warm-up is over (at most once a run).
    fn omit_end(&mut self);
    /// Closes an interval window: reads what each stream moved in it.
    fn cut(&mut self, window: SampleWindow, omitted: bool);
    /// When any stream of this end last moved data, from the start
    /// (zero if none did). Read once every stream has ended.
    fn last_data(&self) -> Duration;
}

fn apply(sampler: &mut Sampler, now: Duration, side: &mut dyn SampleSide) {
    while let Some(event) = sampler.poll(now) {
        match event {
            Event::OmitEnd => side.omit_end(),
            Event::Cut { window, omitted } => side.cut(window, omitted),
        }
    }
}

/// Starts the thread that moves stream `index`'s data with `body`;
/// `done` hears the index when it ends, so the driver knows. Without a
/// thread (the system refused one) `stop` is set and `None` returned.
pub fn spawn_worker(
    name: String,
    index: u16,
    done: mpsc::Sender<u16>,
    stop: &AtomicBool,
    body: impl FnOnce() -> std::io::Result<()> + Send + 'static,
) -> Option<std::thread::JoinHandle<()>> {
    let spawned = std::thread::Builder::new().name(name).spawn(move || {
        if let Err(e) = body() {
            tracing::warn!(stream = index, error = %e, "stream ended with an error");
        }
        let _ = done.send(index);
    });
    match spawned {
        Ok(h) => Some(h),
        Err(e) => {
            tracing::error!(error = %e, "cannot start a stream thread");
            stop.store(true, Ordering::Relaxed);
            None
        }
    }
}

/// Samples one end from `start` until each of its `streams` threads has
/// sent its index on `done` (or every sender of `done` is gone): cuts
/// what is due whenever it wakes, then closes the last window. Returns
/// whether the run was stopped early (`stop` once the streams ended),
/// the same value the last window was closed by.
pub fn drive(
    plan: SamplerPlan,
    start: Instant,
    done: &mpsc::Receiver<u16>,
    streams: usize,
    stop: &AtomicBool,
    side: &mut dyn SampleSide,
) -> bool {
    let mut sampler = Sampler::new(plan);
    let mut running = streams;
    loop {
        // What came due while this thread slept goes first, also when a
        // loaded machine wakes it only after the streams ended.
        apply(&mut sampler, start.elapsed(), side);
        if running == 0 {
            break;
        }
        // Err(true): every stream thread is gone; Err(false): a tick.
        let heard = match sampler.poll_at() {
            Some(t) => done
                .recv_timeout((start + t).saturating_duration_since(Instant::now()))
                .map_err(|e| e == mpsc::RecvTimeoutError::Disconnected),
            None => done.recv().map_err(|_| true),
        };
        match heard {
            Ok(_) => running -= 1,
            Err(true) => running = 0,
            Err(false) => {}
        }
    }
    let stopped_early = stop.load(Ordering::Relaxed);
    sampler.streams_ended(side.last_data(), stopped_early);
    apply(&mut sampler, start.elapsed(), side);
    stopped_early
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn plan(omit: u64, time: u64, interval: u64) -> SamplerPlan {
        SamplerPlan {
            omit: ms(omit),
            time: ms(time),
            interval: ms(interval),
            bounded: false,
        }
    }

    fn cut(from: u64, to: u64, omitted: bool) -> Event {
        Event::Cut {
            window: SampleWindow {
                start_s: ms(from).as_secs_f64(),
                end_s: ms(to).as_secs_f64(),
            },
            omitted,
        }
    }

    fn poll_all(s: &mut Sampler, now: u64) -> Vec<Event> {
        std::iter::from_fn(|| s.poll(ms(now))).collect()
    }

    fn end(s: &mut Sampler, last_data: u64, stopped_early: bool) -> Vec<Event> {
        s.streams_ended(ms(last_data), stopped_early);
        poll_all(s, u64::MAX / 2)
    }

    #[test]
    fn windows_are_cut_at_each_interval_and_the_last_when_the_data_stops() {
        let mut s = Sampler::new(plan(0, 3000, 1000));
        assert_eq!(s.poll_at(), Some(ms(1000)));
        assert_eq!(poll_all(&mut s, 999), []);
        assert_eq!(poll_all(&mut s, 1000), [cut(0, 1000, false)]);
        assert_eq!(s.poll_at(), Some(ms(2000)));
        assert_eq!(poll_all(&mut s, 2004), [cut(1000, 2000, false)]);
        // The planned end is no tick: the last window waits for the data.
        assert_eq!(s.poll_at(), None);
        assert_eq!(poll_all(&mut s, 3500), []);
        // A receiver read queued data until 3.02 s.
        assert_eq!(end(&mut s, 3020, false), [cut(2000, 3020, false)]);
        assert_eq!(poll_all(&mut s, 4000), []);
    }

    #[test]
    fn a_volume_bound_test_closes_its_last_window_at_the_last_data() {
        let mut s = Sampler::new(SamplerPlan {
            bounded: true,
            ..plan(0, 10_000, 1000)
        });
        assert_eq!(poll_all(&mut s, 1000), [cut(0, 1000, false)]);
        assert_eq!(end(&mut s, 1400, false), [cut(1000, 1400, false)]);
    }

    #[test]
    fn data_that_stopped_before_the_planned_end_closes_the_last_window_at_it() {
        // A UDP sender's last packet leaves before the end.
        let mut s = Sampler::new(plan(0, 2000, 1000));
        assert_eq!(poll_all(&mut s, 1000), [cut(0, 1000, false)]);
        assert_eq!(end(&mut s, 1990, false), [cut(1000, 2000, false)]);
        // Non-multiple: the last window is the shorter one.
        let mut s = Sampler::new(plan(0, 2500, 1000));
        assert_eq!(
            poll_all(&mut s, 2000),
            [cut(0, 1000, false), cut(1000, 2000, false)]
        );
        assert_eq!(end(&mut s, 0, false), [cut(2000, 2500, false)]);
    }

    #[test]
    fn the_warm_up_ends_once_before_the_cut_at_the_same_time() {
        let mut s = Sampler::new(plan(1000, 2000, 1000));
        assert_eq!(s.poll_at(), Some(ms(1000)));
        assert_eq!(poll_all(&mut s, 1000), [Event::OmitEnd, cut(0, 1000, true)]);
        assert_eq!(poll_all(&mut s, 2000), [cut(1000, 2000, false)]);
        assert_eq!(end(&mut s, 3001, false), [cut(2000, 3001, false)]);
    }

    #[test]
    fn a_warm_up_longer_than_an_interval_ends_between_cuts() {
        let mut s = Sampler::new(plan(1500, 2000, 1000));
        assert_eq!(poll_all(&mut s, 1000), [cut(0, 1000, true)]);
        assert_eq!(s.poll_at(), Some(ms(1500)));
        assert_eq!(poll_all(&mut s, 1500), [Event::OmitEnd]);
        assert_eq!(s.poll_at(), Some(ms(2000)));
        // Partly warm-up: shown as measured, as the interval it ends in.
        assert_eq!(poll_all(&mut s, 2000), [cut(1000, 2000, false)]);
        assert_eq!(poll_all(&mut s, 3000), [cut(2000, 3000, false)]);
        assert_eq!(s.poll_at(), None);
        assert_eq!(end(&mut s, 3400, false), [cut(3000, 3500, false)]);
    }

    #[test]
    fn interval_zero_cuts_no_window_and_one_longer_than_the_test_one() {
        let mut s = Sampler::new(plan(0, 2000, 0));
        assert_eq!(s.poll_at(), None);
        assert_eq!(poll_all(&mut s, 5000), []);
        assert_eq!(end(&mut s, 2100, false), []);
        // The warm-up still ends.
        let mut s = Sampler::new(plan(1000, 2000, 0));
        assert_eq!(s.poll_at(), Some(ms(1000)));
        assert_eq!(poll_all(&mut s, 1000), [Event::OmitEnd]);
        assert_eq!(s.poll_at(), None);
        assert_eq!(end(&mut s, 3000, true), []);
        let mut s = Sampler::new(plan(0, 2000, 5000));
        assert_eq!(s.poll_at(), None);
        assert_eq!(end(&mut s, 2000, false), [cut(0, 2000, false)]);
    }

    #[test]
    fn an_early_stop_closes_the_last_window_at_the_last_data() {
        let mut s = Sampler::new(plan(0, 10_000, 1000));
        assert_eq!(poll_all(&mut s, 3000).len(), 3);
        assert_eq!(end(&mut s, 3400, true), [cut(3000, 3400, false)]);
        // Data that stopped before the open window: it closes empty.
        let mut s = Sampler::new(plan(0, 10_000, 1000));
        assert_eq!(poll_all(&mut s, 4000).len(), 4);
        assert_eq!(end(&mut s, 3900, true), [cut(4000, 4000, false)]);
        // Stopped in the warm-up: it ends there, nothing was measured.
        let mut s = Sampler::new(plan(2000, 5000, 1000));
        assert_eq!(poll_all(&mut s, 1000), [cut(0, 1000, true)]);
        assert_eq!(
            end(&mut s, 1300, true),
            [Event::OmitEnd, cut(1000, 1300, true)]
        );
    }

    #[test]
    fn a_late_wake_up_finds_every_stream_finished() {
        // A 1 s test whose only window is the last one.
        let mut s = Sampler::new(plan(0, 1000, 1000));
        assert_eq!(s.poll_at(), None);
        assert_eq!(end(&mut s, 1000, false), [cut(0, 1000, false)]);
        // A 3 s test whose sampler first wakes at 3.2 s, the streams done.
        let mut s = Sampler::new(plan(1000, 2000, 1000));
        assert_eq!(
            poll_all(&mut s, 3200),
            [Event::OmitEnd, cut(0, 1000, true), cut(1000, 2000, false)]
        );
        assert_eq!(end(&mut s, 2990, false), [cut(2000, 3000, false)]);
    }

    struct Recorder(Vec<Event>, Duration);

    impl SampleSide for Recorder {
        fn omit_end(&mut self) {
            self.0.push(Event::OmitEnd);
        }
        fn cut(&mut self, window: SampleWindow, omitted: bool) {
            self.0.push(Event::Cut { window, omitted });
        }
        fn last_data(&self) -> Duration {
            self.1
        }
    }

    /// Drives a 3 s run with 1 s windows that started 10 s ago (every
    /// tick is due) whose two stream threads `ended` have ended; the
    /// others never started (their done senders are gone).
    fn driven(ended: u16, last_data: u64, stop: bool) -> (bool, Vec<Event>) {
        let (tx, rx) = mpsc::channel();
        for i in 0..ended {
            tx.send(i).unwrap();
        }
        let _alive = (ended == 2).then(|| tx.clone());
        drop(tx);
        let mut side = Recorder(Vec::new(), ms(last_data));
        let start = Instant::now() - Duration::from_secs(10);
        let stopped = drive(
            plan(0, 3000, 1000),
            start,
            &rx,
            2,
            &AtomicBool::new(stop),
            &mut side,
        );
        (stopped, side.0)
    }

    #[test]
    fn the_driver_cuts_what_is_due_then_closes_when_the_streams_end() {
        let due = [cut(0, 1000, false), cut(1000, 2000, false)];
        let (stopped, events) = driven(2, 3200, false);
        assert!(!stopped);
        assert_eq!(events, [due[0], due[1], cut(2000, 3200, false)]);
        // A thread that never started ends nothing; stopped, so the last
        // window closes at the last data (never before it opened).
        let (stopped, events) = driven(1, 1500, true);
        assert!(stopped);
        assert_eq!(events, [due[0], due[1], cut(2000, 2000, false)]);
    }
}
