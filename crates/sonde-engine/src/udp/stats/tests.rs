//! Tests of the UDP estimators against hand-worked RFC examples.
use super::*;
use proptest::prelude::*;
use Arrival::{Duplicate as D, InOrder as I, Reordered as R};

fn feed(t: &mut SequenceTracker, seqs: &[u64]) -> Vec<Arrival> {
    seqs.iter().map(|&s| t.observe(s)).collect()
}

fn near(got: Option<i128>, want: u64) -> bool {
    got.is_some_and(|g| (g as f64 / want as f64 - 1.0).abs() < 1e-3)
}

#[test]
fn jitter_hand_computed_rfc3550_a8() {
    let mut j = JitterEstimator::new();
    j.update(0, 1_000); // transit 1000; one packet: J = 0
    assert_eq!(j.jitter_ns(), 0.0);
    j.update(20_000, 21_160); // transit 1160, D = 160: J = 0 + (160 - 0)/16 = 10
    assert_eq!(j.jitter_ns(), 10.0);
    j.update(40_000, 41_000); // transit 1000, |D| = 160: J = 10 + (160 - 10)/16 = 19.375
    assert_eq!(j.jitter_ns(), 19.375);
    j.update(60_000, 61_000); // transit 1000, D = 0: J = 19.375 - 19.375/16 = 18.1640625
    assert_eq!(j.jitter_ns(), 18.164_062_5);
}

#[test]
fn jitter_constant_transit_and_single_packet_are_zero() {
    let mut j = JitterEstimator::default();
    j.update(5, -7_000_000_000); // skewed clocks: negative transit
    assert_eq!(j.jitter_ns(), 0.0);
    for i in 1..100i64 {
        j.update(5 + i * 1_000_000, i * 1_000_000 - 7_000_000_000);
    }
    assert_eq!(j.jitter_ns(), 0.0);
}

#[test]
fn rfc4737_s3_3_late_packet_is_reordered() {
    // §3.3's NextExp rule on arrivals 1,2,3,5,6,7,4,8: only 4 has s < NextExp (8).
    let mut t = SequenceTracker::new();
    assert_eq!(t.next_expected(), 0);
    let (mut got, mut next) = (vec![], vec![]);
    for s in [1, 2, 3, 5, 6, 7, 4, 8] {
        got.push(t.observe(s));
        next.push(t.next_expected());
    }
    assert_eq!(got, [I, I, I, I, I, I, R, I]);
    assert_eq!(next, [2, 3, 4, 6, 7, 8, 8, 9]);
    assert_eq!([t.received(), t.reordered(), t.duplicates()], [8, 1, 0]);
    assert_eq!(t.lost(9), 1); // seq 0 never arrived
}

#[test]
fn rfc4737_s3_3_loss_is_not_reordering_early_packet_reorders_passed_ones() {
    let mut t = SequenceTracker::new();
    assert_eq!(feed(&mut t, &[0, 1, 3, 4]), [I, I, I, I]); // 2 lost: discontinuity
                                                           // 8 arrives early: 5, 6, 7 all have s < NextExp = 9.
    assert_eq!(feed(&mut t, &[8, 5, 6, 7, 9]), [I, R, R, R, I]);
    assert_eq!([t.received(), t.reordered(), t.lost(10)], [9, 3, 1]);
}

#[test]
fn rfc4737_s3_3_duplicates_are_noted_not_reordered() {
    let mut t = SequenceTracker::new();
    let got = feed(&mut t, &[0, 1, 1, 2, 0, 4, 3, 3, 4]);
    assert_eq!(got, [I, I, D, I, D, I, R, D, D]);
    assert_eq!([t.received(), t.duplicates(), t.reordered()], [5, 4, 1]);
    assert_eq!([t.stale(), t.lost(5)], [0, 0]);
}

#[test]
fn tail_loss_with_duplicate_and_reordering() {
    // Sender sent 0..10; receiver got 0..6 as 0,2,1,3,3,5,4; 6..10 never came.
    let mut t = SequenceTracker::new();
    assert_eq!(feed(&mut t, &[0, 2, 1, 3, 3, 5, 4]), [I, I, R, I, D, I, R]);
    assert_eq!([t.received(), t.duplicates(), t.reordered()], [6, 1, 2]);
    assert_eq!(t.lost(10), 4);
    assert_eq!(t.lost(3), 0); // more received than "sent": saturates
}

#[test]
fn window_edge_stale_and_recycled_slots() {
    let mut t = SequenceTracker::new();
    feed(&mut t, &[0, 65_536]); // NextExp 65_537: window is 1..=65_536
    assert_eq!(t.observe(1), R); // oldest number inside the window
    assert_eq!(t.observe(0), D); // received before, now outside: stale
    assert_eq!(t.observe(65_535), R);
    assert_eq!([t.stale(), t.received()], [1, 4]);
    let mut t = SequenceTracker::new();
    feed(&mut t, &[0, 60_000, 65_537]); // 2nd jump clears 60_001..=65_537
    assert_eq!(t.observe(65_536), R); // slot 0, as seq 0's was
    feed(&mut t, &[10_000_000]); // a jump past the window clears it all
    assert_eq!(feed(&mut t, &[9_999_999, 9_999_999]), [R, D]);
    assert_eq!(t.observe(70_000), D); // never seen, but too old to tell
    assert_eq!([t.stale(), t.received()], [1, 6]);
}

#[test]
fn sequence_numbers_near_u64_max() {
    let (mut t, m) = (SequenceTracker::new(), u64::MAX);
    assert_eq!(feed(&mut t, &[m - 1, m, m, m - 2, 0]), [I, I, D, R, D]);
    assert_eq!([t.next_expected(), t.received(), t.lost(m)], [m, 3, m - 3]);
    let mut t = SequenceTracker::new();
    assert_eq!(feed(&mut t, &[m, m]), [I, D]);
}

#[test]
fn delay_negative_values_percentiles_and_pdv() {
    let mut d = DelayStats::new();
    assert_eq!([d.min_ns(), d.percentile_ns(50.0)], [None, None]);
    assert_eq!(d.mean_ns(), None);
    for v in [500, -300, -100, 200, 0] {
        d.record(v);
    }
    // Sorted -300 -100 0 200 500; rank = ceil(q * 5 / 100); mean 300 / 5.
    assert_eq!([d.min_ns(), d.max_ns()], [Some(-300), Some(500)]);
    assert_eq!((d.count(), d.mean_ns()), (5, Some(60.0)));
    let p = |q| d.percentile_ns(q).unwrap_or(i64::MIN);
    assert_eq!(
        [p(0.0), p(20.0), p(21.0), p(40.0)],
        [-300, -300, -100, -100]
    );
    assert_eq!([p(50.0), p(80.0), p(100.0), p(1e9)], [0, 200, 500, 500]);
    assert_eq!(d.percentile_ns(f64::NAN), None);
    let pdv = |q| d.pdv_percentile_ns(q).unwrap_or(i64::MIN);
    assert_eq!([pdv(0.0), pdv(50.0), pdv(100.0)], [0, 300, 800]);
}

#[test]
fn delay_resolution_relative_to_first_sample_and_clamped_range() {
    let (mut d, skew) = (DelayStats::new(), -5_000_000_000); // clocks 5 s apart
    for v in [1_000, 2_000, 123_456, 1_000_000] {
        d.record(skew + v);
    }
    assert_eq!(d.percentile_ns(25.0), Some(skew + 1_000)); // exact below 2048
    let p75 = d.percentile_ns(75.0).map(|p| i128::from(p - skew));
    assert!(near(p75, 123_456), "{p75:?}"); // within 0.1 %
    assert_eq!(d.percentile_ns(100.0), Some(skew + 1_000_000)); // max, exact
    let mut x = DelayStats::new();
    for v in [0, i64::MAX, i64::MIN] {
        x.record(v);
    }
    assert_eq!([x.min_ns(), x.max_ns()], [Some(i64::MIN), Some(i64::MAX)]);
    assert_eq!(x.mean_ns(), Some(-1.0 / 3.0));
    // The histograms clamp at ±1 h from the first sample (0).
    assert!(near(x.percentile_ns(100.0).map(i128::from), MAX_HIST_NS));
    assert!(near(
        x.percentile_ns(0.0).map(|p| -i128::from(p)),
        MAX_HIST_NS
    ));
    assert_eq!(x.pdv_percentile_ns(100.0), Some(i64::MAX)); // saturates
}

#[test]
fn delay_merge() {
    let (mut a, mut b, mut empty) = (DelayStats::new(), DelayStats::new(), DelayStats::new());
    a.record(100);
    a.record(300);
    b.record(-50);
    b.record(1_000);
    empty.merge(&a);
    assert_eq!((empty.count(), empty.percentile_ns(50.0)), (2, Some(100)));
    a.merge(&DelayStats::new());
    a.merge(&b); // sorted: -50 100 300 1000
    assert_eq!([a.min_ns(), a.max_ns()], [Some(-50), Some(1_000)]);
    assert_eq!((a.count(), a.mean_ns()), (4, Some(337.5)));
    let p = |q| a.percentile_ns(q).unwrap_or(i64::MIN);
    assert_eq!(
        [p(25.0), p(50.0), p(75.0), p(100.0)],
        [-50, 100, 300, 1_000]
    );
    assert_eq!(a.pdv_percentile_ns(75.0), Some(350));
}

#[test]
fn ipdv_consecutive_pairs_only_gap_resets() {
    let mut s = IpdvStats::new();
    assert_eq!(s.abs_percentile_ns(50.0), None);
    s.record(0, 100);
    s.record(2, 900); // gap: no pair
    assert_eq!(s.count(), 0);
    s.record(3, 1_000); // |1000 - 900| = 100
    s.record(3, 1_500); // same number: restarts the pairing
    s.record(5, 10); // gap
    s.record(7, 300); // gap
    s.record(6, 250); // 6, 7 both received, arrived swapped: |250 - 300| = 50
    s.record(7, 330); // |330 - 250| = 80
    assert_eq!(s.count(), 3);
    let p = |q| s.abs_percentile_ns(q).unwrap_or(0);
    assert_eq!([p(0.0), p(50.0), p(100.0)], [50, 80, 100]);
    let mut w = IpdvStats::new();
    w.record(u64::MAX, 0);
    w.record(0, 5); // no wrap-around pair
    w.record(u64::MAX, i64::MIN);
    w.record(u64::MAX - 1, i64::MAX); // |IPDV| = 2^64 - 1, clamped to 1 h
    assert_eq!(w.count(), 1);
    assert!(near(
        w.abs_percentile_ns(100.0).map(i128::from),
        MAX_HIST_NS
    ));
}

#[test]
fn ipdv_merge() {
    let (mut a, mut b) = (IpdvStats::new(), IpdvStats::new());
    for (seq, delay) in [(0, 0), (1, 10), (2, 40)] {
        a.record(seq, delay); // |IPDV| 10, 30
    }
    for (seq, delay) in [(10, 0), (11, -20), (12, 1_000)] {
        b.record(seq, delay); // |IPDV| 20, 1020
    }
    a.merge(&b);
    a.record(3, 45); // a's own pairing goes on: |45 - 40| = 5
    assert_eq!(a.count(), 5);
    let p = |q| a.abs_percentile_ns(q).unwrap_or(0);
    assert_eq!(
        [p(0.0), p(40.0), p(60.0), p(80.0), p(100.0)],
        [5, 10, 20, 30, 1_020]
    );
}

#[test]
fn loss_runs_are_counted_as_rfc3357_loss_periods() {
    let mut t = SequenceTracker::new();
    // 0 1 _ _ _ 5 6 _ 8 9 (and 2 late: the run of 3 becomes 2)
    feed(&mut t, &[0, 1, 5, 6, 8, 9]);
    assert_eq!(t.longest_loss_run(10), 3);
    t.observe(2);
    assert_eq!(t.longest_loss_run(10), 2);
    // The tail: 10..15 never came.
    assert_eq!(t.longest_loss_run(15), 5);
    // The head: the first packet received is 4.
    let mut h = SequenceTracker::new();
    feed(&mut h, &[4, 5]);
    assert_eq!(h.longest_loss_run(6), 4);
    // Nothing received of 7 sent.
    assert_eq!(SequenceTracker::new().longest_loss_run(7), 7);
}

#[test]
fn loss_runs_settled_as_the_window_moves_stay_counted() {
    let mut t = SequenceTracker::new();
    // A run of 1,000 lost, then far more than a window of packets.
    t.observe(0);
    for s in 1_001..(1_001 + 3 * DUP_WINDOW) {
        t.observe(s);
    }
    let end = 1_001 + 3 * DUP_WINDOW;
    assert_eq!(t.longest_loss_run(end), 1_000);
    // A copy of a settled number changes nothing.
    t.observe(500);
    assert_eq!(t.longest_loss_run(end), 1_000);
    // A jump of 2 windows: every number passed is lost.
    t.observe(end + 2 * DUP_WINDOW);
    assert_eq!(t.longest_loss_run(end + 2 * DUP_WINDOW + 1), 2 * DUP_WINDOW);
    // A hostile number near the top costs no time and claims no more
    // than the numbers below the end.
    t.observe(u64::MAX - 1);
    assert!(t.longest_loss_run(end) <= end);
}

proptest! {
    #[test]
    fn random_inputs_never_panic(
        pkts in prop::collection::vec(any::<(u64, i64, i64)>(), 0..200),
        qs in prop::collection::vec(any::<f64>(), 0..8),
    ) {
        let (mut t, mut j) = (SequenceTracker::new(), JitterEstimator::new());
        let (mut d, mut i) = (DelayStats::new(), IpdvStats::new());
        for &(seq, send, recv) in &pkts {
            t.observe(seq);
            j.update(send, recv);
            d.record(recv.wrapping_sub(send));
            d.record(send);
            i.record(seq, recv);
        }
        d.merge(&d.clone());
        i.merge(&i.clone());
        for &q in &qs {
            let _ = (d.percentile_ns(q), d.pdv_percentile_ns(q), i.abs_percentile_ns(q));
        }
        prop_assert!(j.jitter_ns().is_finite() && j.jitter_ns() >= 0.0);
        prop_assert_eq!(t.received() + t.duplicates(), pkts.len() as u64);
        let _ = (d.mean_ns(), t.lost(u64::MAX), t.next_expected());
        for end in [0, 1, u64::MAX, t.next_expected()] {
            prop_assert!(t.longest_loss_run(end) <= end);
        }
    }

    /// The longest loss run is the longest run of numbers below `end`
    /// never received, whatever the order and copies they came in.
    #[test]
    fn longest_loss_run_matches_naive_model(
        seqs in prop::collection::vec(0u64..300, 0..400),
        end in 0u64..320,
    ) {
        let mut t = SequenceTracker::new();
        let mut seen = [false; 320];
        for s in seqs {
            t.observe(s);
            seen[s as usize] = true;
        }
        let (mut run, mut longest) = (0u64, 0u64);
        for got in &seen[..end as usize] {
            run = if *got { 0 } else { run + 1 };
            longest = longest.max(run);
        }
        prop_assert_eq!(t.longest_loss_run(end), longest);
    }

    #[test]
    fn matches_naive_model_inside_window(seqs in prop::collection::vec(0u64..300, 0..400)) {
        let (mut t, mut seen, mut high) = (SequenceTracker::new(), vec![false; 300], None);
        for s in seqs {
            let want = match (seen[s as usize], high) {
                (true, _) => D,
                (false, Some(h)) if s < h => R,
                _ => I,
            };
            seen[s as usize] = true;
            high = high.max(Some(s));
            prop_assert_eq!(t.observe(s), want);
        }
        prop_assert_eq!(t.received(), seen.iter().filter(|&&x| x).count() as u64);
    }
}
