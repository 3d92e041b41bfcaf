//! The docs' lab walkthroughs marked `<!-- docs-test: lab -->` (in
//! README.md and docs/*.md), run as written (common/walkthrough.rs). The
//! ones marked with a name are run by the lab test that checks their
//! measurements (lab_sweep, lab_qos_method, lab_overhead, lab_tune);
//! tests/cli/docs_run.rs checks that each such name has its test. Needs
//! root; `SONDE_LAB=skip` skips elsewhere.

use crate::common;
use common::docs::Mark;
use common::lab_allowed;
use common::lab_cli::serial;
use common::walkthrough::Walkthrough;

#[test]
fn the_docs_lab_walkthroughs_run_as_written() {
    if !lab_allowed() {
        return;
    }
    // It measures (an 18 Mbit/s UDP flow through a 9 Mbit/s shaper).
    let _one = serial();
    let mut ran = 0;
    for walk in Walkthrough::marked(&Mark::Lab(None)) {
        ran += walk.run(&[]).ran.len();
    }
    assert!(ran >= 4, "{ran} lab lines ran");
}
