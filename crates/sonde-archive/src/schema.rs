//! The archive's schema, one for both backends, as numbered migrations.
//!
//! The SQL is the subset SQLite and PostgreSQL read alike: `TEXT`,
//! `BIGINT`, `DOUBLE PRECISION`, `BOOLEAN`, `ON CONFLICT … DO NOTHING`,
//! and `$N` parameters (the SQLite backend turns them into `?N`).
//! Times are nanoseconds since the Unix epoch (`*_ns`), so both backends
//! compare and group them the same way.

/// The migrations, in order; migration `i` takes the archive from schema
/// version `i` to `i + 1`. Never edit one that has shipped: add another.
pub const MIGRATIONS: &[&str] = &[
    // 1: results, their intervals, method results, campaigns and runs.
    r#"
CREATE TABLE results (
    id TEXT PRIMARY KEY,
    test TEXT NOT NULL,
    source TEXT,
    target TEXT,
    family TEXT,
    direction TEXT,
    start_ns BIGINT NOT NULL,
    duration_s DOUBLE PRECISION NOT NULL,
    interrupted BOOLEAN NOT NULL,
    campaign TEXT,
    run_id TEXT,
    method_id TEXT,
    throughput_bps DOUBLE PRECISION,
    loss_pct DOUBLE PRECISION,
    pdr_pct DOUBLE PRECISION,
    jitter_ms DOUBLE PRECISION,
    rtt_p50_ms DOUBLE PRECISION,
    doc TEXT NOT NULL
);
CREATE INDEX results_by_start ON results (start_ns);
CREATE INDEX results_by_target ON results (target, start_ns);
CREATE INDEX results_by_campaign ON results (campaign, start_ns);
CREATE INDEX results_by_method ON results (method_id);
CREATE TABLE intervals (
    result_id TEXT NOT NULL REFERENCES results (id),
    direction TEXT NOT NULL,
    start_s DOUBLE PRECISION NOT NULL,
    end_s DOUBLE PRECISION NOT NULL,
    at_ns BIGINT NOT NULL,
    omitted BOOLEAN NOT NULL,
    throughput_bps DOUBLE PRECISION,
    loss_pct DOUBLE PRECISION,
    jitter_ms DOUBLE PRECISION,
    rtt_ms DOUBLE PRECISION,
    PRIMARY KEY (result_id, direction, start_s)
);
CREATE INDEX intervals_by_time ON intervals (at_ns);
CREATE TABLE methods (
    id TEXT PRIMARY KEY,
    method TEXT NOT NULL,
    start_ns BIGINT NOT NULL,
    duration_s DOUBLE PRECISION NOT NULL,
    interrupted BOOLEAN NOT NULL,
    campaign TEXT,
    run_id TEXT,
    doc TEXT NOT NULL
);
CREATE TABLE campaigns (
    name TEXT PRIMARY KEY,
    plan TEXT NOT NULL,
    created_ns BIGINT NOT NULL,
    paused BOOLEAN NOT NULL
);
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    campaign TEXT NOT NULL,
    scheduled_ns BIGINT NOT NULL,
    started_ns BIGINT,
    ended_ns BIGINT,
    state TEXT NOT NULL,
    reason TEXT,
    UNIQUE (campaign, scheduled_ns)
);
CREATE TABLE run_events (
    run_id TEXT NOT NULL,
    at_ns BIGINT NOT NULL,
    kind TEXT NOT NULL,
    detail TEXT
);
CREATE INDEX run_events_by_run ON run_events (run_id, at_ns);
"#,
    // 2: intervals keyed by size too (a ping of several sizes has one
    // series per size); labels per result; who runs a run, and when it
    // last said so; leases on paths for throughput tests.
    r#"
CREATE TABLE intervals_v2 (
    result_id TEXT NOT NULL REFERENCES results (id),
    direction TEXT NOT NULL,
    size_bytes BIGINT NOT NULL,
    start_s DOUBLE PRECISION NOT NULL,
    end_s DOUBLE PRECISION NOT NULL,
    at_ns BIGINT NOT NULL,
    omitted BOOLEAN NOT NULL,
    throughput_bps DOUBLE PRECISION,
    loss_pct DOUBLE PRECISION,
    jitter_ms DOUBLE PRECISION,
    rtt_ms DOUBLE PRECISION,
    PRIMARY KEY (result_id, direction, size_bytes, start_s)
);
INSERT INTO intervals_v2 (result_id, direction, size_bytes, start_s, end_s, at_ns, omitted,
    throughput_bps, loss_pct, jitter_ms, rtt_ms)
    SELECT result_id, direction, 0, start_s, end_s, at_ns, omitted, throughput_bps, loss_pct,
    jitter_ms, rtt_ms FROM intervals;
DROP TABLE intervals;
ALTER TABLE intervals_v2 RENAME TO intervals;
CREATE INDEX intervals_by_time ON intervals (at_ns);
CREATE TABLE result_labels (
    result_id TEXT NOT NULL REFERENCES results (id),
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (result_id, key)
);
CREATE INDEX result_labels_by_key ON result_labels (key, value);
ALTER TABLE runs ADD COLUMN owner TEXT;
ALTER TABLE runs ADD COLUMN heartbeat_ns BIGINT;
CREATE INDEX runs_by_campaign ON runs (campaign, scheduled_ns);
CREATE TABLE path_leases (
    path TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    expires_ns BIGINT NOT NULL
);
"#,
    // 3: the agent's interface counters, sampled every few seconds (link
    // load beside latency); results by source for the mesh.
    r#"
CREATE TABLE interface_samples (
    interface TEXT NOT NULL,
    at_ns BIGINT NOT NULL,
    rx_bytes BIGINT NOT NULL,
    tx_bytes BIGINT NOT NULL,
    rx_packets BIGINT NOT NULL,
    tx_packets BIGINT NOT NULL,
    rx_dropped BIGINT NOT NULL,
    tx_dropped BIGINT NOT NULL,
    PRIMARY KEY (interface, at_ns)
);
CREATE INDEX results_by_source ON results (source, start_ns);
"#,
    // 4: store-and-forward: the destinations results are forwarded to,
    // and what each has still to get (filled in the transaction that
    // keeps a result, emptied as a destination confirms).
    r#"
CREATE TABLE forward_destinations (
    name TEXT PRIMARY KEY,
    added_ns BIGINT NOT NULL,
    delivered BIGINT NOT NULL,
    attempts BIGINT NOT NULL,
    last_ok_ns BIGINT,
    last_error TEXT,
    last_error_ns BIGINT
);
CREATE TABLE outbox (
    destination TEXT NOT NULL,
    item_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    queued_ns BIGINT NOT NULL,
    PRIMARY KEY (destination, item_id)
);
CREATE INDEX outbox_by_age ON outbox (destination, queued_ns, item_id);
"#,
    // 5: the mesh's agents, as they register with a central agent: who,
    // where, and when each last said so.
    r#"
CREATE TABLE mesh_agents (
    name TEXT PRIMARY KEY,
    addresses TEXT NOT NULL,
    location TEXT,
    version TEXT,
    first_seen_ns BIGINT NOT NULL,
    last_seen_ns BIGINT NOT NULL
);
"#,
    // 6: incidents (AIRT's model): constituencies, their networks and
    // contacts, incidents with their addresses, comments and history,
    // and mail templates.
    r#"
CREATE TABLE constituencies (
    code TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    notes TEXT NOT NULL,
    added_ns BIGINT NOT NULL
);
CREATE TABLE constituency_networks (
    prefix TEXT PRIMARY KEY,
    code TEXT NOT NULL,
    added_ns BIGINT NOT NULL
);
CREATE TABLE constituency_contacts (
    code TEXT NOT NULL,
    email TEXT NOT NULL,
    name TEXT NOT NULL,
    role TEXT NOT NULL,
    added_ns BIGINT NOT NULL,
    PRIMARY KEY (code, email)
);
CREATE TABLE incident_counter (last_id BIGINT NOT NULL);
INSERT INTO incident_counter (last_id) VALUES (0);
CREATE TABLE incidents (
    id BIGINT PRIMARY KEY,
    kind TEXT NOT NULL,
    state TEXT NOT NULL,
    status TEXT NOT NULL,
    severity TEXT NOT NULL,
    summary TEXT NOT NULL,
    source TEXT NOT NULL,
    opened_ns BIGINT NOT NULL,
    updated_ns BIGINT NOT NULL
);
CREATE INDEX incidents_by_status ON incidents (status, id);
CREATE TABLE incident_addresses (
    incident BIGINT NOT NULL,
    seq BIGINT NOT NULL,
    address TEXT NOT NULL,
    role TEXT NOT NULL,
    owner TEXT,
    PRIMARY KEY (incident, seq)
);
CREATE INDEX incident_addresses_by_owner ON incident_addresses (owner, incident);
CREATE TABLE incident_comments (
    incident BIGINT NOT NULL,
    seq BIGINT NOT NULL,
    author TEXT NOT NULL,
    text TEXT NOT NULL,
    at_ns BIGINT NOT NULL,
    PRIMARY KEY (incident, seq)
);
CREATE TABLE incident_history (
    incident BIGINT NOT NULL,
    seq BIGINT NOT NULL,
    at_ns BIGINT NOT NULL,
    actor TEXT NOT NULL,
    what TEXT NOT NULL,
    old_value TEXT,
    new_value TEXT,
    PRIMARY KEY (incident, seq)
);
CREATE TABLE mail_templates (
    name TEXT PRIMARY KEY,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    set_state TEXT,
    set_status TEXT,
    updated_ns BIGINT NOT NULL
);
"#,
    // 7: readings from probes: raw readings, their 15-minute aggregates
    // and each day's highs and lows.
    r#"
CREATE TABLE reading_series (
    probe TEXT NOT NULL,
    metric TEXT NOT NULL,
    unit TEXT NOT NULL,
    first_ns BIGINT NOT NULL,
    last_ns BIGINT NOT NULL,
    PRIMARY KEY (probe, metric)
);
CREATE TABLE readings (
    probe TEXT NOT NULL,
    metric TEXT NOT NULL,
    at_ns BIGINT NOT NULL,
    value DOUBLE PRECISION NOT NULL,
    with_value DOUBLE PRECISION,
    received_ns BIGINT NOT NULL,
    PRIMARY KEY (probe, metric, at_ns)
);
CREATE TABLE readings_15min (
    probe TEXT NOT NULL,
    metric TEXT NOT NULL,
    start_ns BIGINT NOT NULL,
    count BIGINT NOT NULL,
    mean DOUBLE PRECISION NOT NULL,
    min DOUBLE PRECISION NOT NULL,
    min_at_ns BIGINT NOT NULL,
    max DOUBLE PRECISION NOT NULL,
    max_at_ns BIGINT NOT NULL,
    with_at_max DOUBLE PRECISION,
    PRIMARY KEY (probe, metric, start_ns)
);
CREATE TABLE readings_day (
    probe TEXT NOT NULL,
    metric TEXT NOT NULL,
    start_ns BIGINT NOT NULL,
    count BIGINT NOT NULL,
    mean DOUBLE PRECISION NOT NULL,
    min DOUBLE PRECISION NOT NULL,
    min_at_ns BIGINT NOT NULL,
    max DOUBLE PRECISION NOT NULL,
    max_at_ns BIGINT NOT NULL,
    with_at_max DOUBLE PRECISION,
    PRIMARY KEY (probe, metric, start_ns)
);
"#,
    // 8: alerts: each rule's state per path, and every raised and
    // cleared notice.
    r#"
CREATE TABLE alert_states (
    rule TEXT NOT NULL,
    path TEXT NOT NULL,
    label TEXT NOT NULL,
    up BOOLEAN NOT NULL,
    run BIGINT NOT NULL,
    history TEXT NOT NULL,
    since_ns BIGINT,
    last_value DOUBLE PRECISION,
    last_result TEXT,
    updated_ns BIGINT NOT NULL,
    incident_id BIGINT,
    PRIMARY KEY (rule, path)
);
CREATE TABLE alert_events (
    rule TEXT NOT NULL,
    path TEXT NOT NULL,
    label TEXT NOT NULL,
    edge TEXT NOT NULL,
    at_ns BIGINT NOT NULL,
    value DOUBLE PRECISION,
    result_id TEXT NOT NULL,
    detail TEXT NOT NULL,
    PRIMARY KEY (rule, path, result_id)
);
CREATE INDEX alert_events_by_time ON alert_events (at_ns);
"#,
    // 9: each path's latest figures, kept as results are stored (what
    // `/metrics` serves); filled from the newest results on migration.
    r#"
CREATE TABLE path_latest (
    test TEXT NOT NULL,
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    direction TEXT NOT NULL,
    family TEXT NOT NULL,
    dscp BIGINT NOT NULL,
    result_id TEXT NOT NULL,
    start_ns BIGINT NOT NULL,
    throughput_bps DOUBLE PRECISION,
    loss_pct DOUBLE PRECISION,
    jitter_ms DOUBLE PRECISION,
    rtt_p50_ms DOUBLE PRECISION,
    PRIMARY KEY (test, source, target, direction, family, dscp)
);
CREATE INDEX path_latest_by_start ON path_latest (start_ns);
"#,
    // 10: each direction's own figures of a result (a bidirectional test
    // is two rows, never their sum): what stats, charts and heat maps
    // read. A result of one direction is copied from its columns here;
    // the store fills the bidirectional ones from their documents.
    r#"
CREATE TABLE result_figures (
    result_id TEXT NOT NULL REFERENCES results (id),
    direction TEXT NOT NULL,
    throughput_bps DOUBLE PRECISION,
    loss_pct DOUBLE PRECISION,
    pdr_pct DOUBLE PRECISION,
    jitter_ms DOUBLE PRECISION,
    rtt_p50_ms DOUBLE PRECISION,
    PRIMARY KEY (result_id, direction)
);
INSERT INTO result_figures (result_id, direction, throughput_bps, loss_pct, pdr_pct, jitter_ms,
    rtt_p50_ms)
SELECT id, COALESCE(direction, 'round_trip'), throughput_bps, loss_pct, pdr_pct, jitter_ms,
    rtt_p50_ms FROM results WHERE direction IS NULL OR direction <> 'bidir';
"#,
    // 11: `path_latest` per direction: a bidirectional test's row (the
    // sum of its directions) goes; the store fills its forward and
    // reverse rows from the newest results again.
    r#"
DELETE FROM path_latest WHERE direction = 'bidir';
"#,
    // 12: a run's steps, each claimed by the host that runs it (a battery
    // run from several hosts on one archive: every host joins the run and
    // claims the steps it leads), ended with its outcome, or missed with
    // why; the command line's overrides kept beside the plan's text; and
    // each result's two ends by address (what alerts identify a path by).
    r#"
CREATE TABLE run_steps (
    run_id TEXT NOT NULL,
    step BIGINT NOT NULL,
    name TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    holder TEXT,
    state TEXT NOT NULL,
    detail TEXT,
    heartbeat_ns BIGINT,
    ended_ns BIGINT,
    PRIMARY KEY (run_id, step)
);
ALTER TABLE campaigns ADD COLUMN overrides TEXT;
ALTER TABLE results ADD COLUMN source_addr TEXT;
ALTER TABLE results ADD COLUMN target_addr TEXT;
"#,
    // 13: a path's route changes, each found when a trace is kept that
    // differs from the one before it on the same path.
    r#"
CREATE TABLE path_changes (
    result_id TEXT PRIMARY KEY REFERENCES results (id),
    previous_id TEXT NOT NULL,
    source_addr TEXT,
    target_addr TEXT NOT NULL,
    at_ns BIGINT NOT NULL,
    at_hop BIGINT NOT NULL,
    route_before TEXT NOT NULL,
    route_after TEXT NOT NULL
);
CREATE INDEX path_changes_by_time ON path_changes (at_ns);
"#,
    // 14: each direction's figures by the metric registry's names, one
    // row per figure (a metric added to the registry needs no column);
    // `indexed_metrics` names the metrics whose rows every kept result
    // has: the store fills a metric's rows from the results' documents
    // the first time it opens an archive without it, then names it.
    // `path_latest` reads its figures from there.
    r#"
DROP TABLE result_figures;
CREATE TABLE result_figures (
    result_id TEXT NOT NULL REFERENCES results (id),
    direction TEXT NOT NULL,
    metric TEXT NOT NULL,
    value DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (result_id, direction, metric)
);
CREATE TABLE indexed_metrics (metric TEXT PRIMARY KEY);
ALTER TABLE path_latest DROP COLUMN throughput_bps;
ALTER TABLE path_latest DROP COLUMN loss_pct;
ALTER TABLE path_latest DROP COLUMN jitter_ms;
ALTER TABLE path_latest DROP COLUMN rtt_p50_ms;
"#,
    // 15: each path's latest result as the overview and the mesh grid
    // name a path (test, from, to, family, direction, step), kept in the
    // transaction that keeps the result: the grid reads every path's
    // latest without scanning the newest results. The store fills it
    // from every result kept before it (`latest::backfill`).
    r#"
CREATE TABLE result_latest (
    path_key TEXT PRIMARY KEY,
    result_id TEXT NOT NULL,
    latest_ns BIGINT NOT NULL
);
"#,
    // 16: the labels the grid and the overview show of each path's latest
    // result, beside it: the grid reads no label per row. Emptied, so
    // that the store fills it again with them.
    r#"
ALTER TABLE result_latest ADD COLUMN from_name TEXT;
ALTER TABLE result_latest ADD COLUMN to_name TEXT;
ALTER TABLE result_latest ADD COLUMN step_name TEXT;
ALTER TABLE result_latest ADD COLUMN agent_name TEXT;
DELETE FROM result_latest;
"#,
    // 17: each path's test beside it, indexed with the start: the grid of
    // one test reads that test's paths, newest first, from this table
    // alone and then each one's row (it scanned every result kept for
    // the test's). Emptied, so that the store fills it again.
    r#"
ALTER TABLE result_latest ADD COLUMN test_name TEXT;
DELETE FROM result_latest;
CREATE INDEX result_latest_by_test ON result_latest (test_name, latest_ns DESC);
"#,
    // 18: results by month. Figures and labels keep their result's start
    // beside them. On PostgreSQL this is not run: `partition::partition_pg`
    // moves results, intervals, figures and labels into monthly
    // partitions instead (their start as the partition key), and drops
    // the foreign keys to `results` a partitioned table cannot have.
    r#"
ALTER TABLE result_figures ADD COLUMN start_ns BIGINT;
ALTER TABLE result_labels ADD COLUMN start_ns BIGINT;
UPDATE result_figures SET start_ns = (SELECT r.start_ns FROM results r WHERE r.id = result_figures.result_id);
UPDATE result_labels SET start_ns = (SELECT r.start_ns FROM results r WHERE r.id = result_labels.result_id);
"#,
    // 19: each path's latest keeps a copy of the columns of its result's
    // row the grid and the overview read (`latest::KEPT_COLUMNS`), filled
    // here from the results: they read `result_latest` alone, with no
    // lookup of each path's result (a partitioned one on PostgreSQL).
    r#"
ALTER TABLE result_latest ADD COLUMN source TEXT;
ALTER TABLE result_latest ADD COLUMN target TEXT;
ALTER TABLE result_latest ADD COLUMN family TEXT;
ALTER TABLE result_latest ADD COLUMN direction TEXT;
ALTER TABLE result_latest ADD COLUMN campaign TEXT;
ALTER TABLE result_latest ADD COLUMN throughput_bps DOUBLE PRECISION;
ALTER TABLE result_latest ADD COLUMN loss_pct DOUBLE PRECISION;
ALTER TABLE result_latest ADD COLUMN pdr_pct DOUBLE PRECISION;
ALTER TABLE result_latest ADD COLUMN jitter_ms DOUBLE PRECISION;
ALTER TABLE result_latest ADD COLUMN rtt_p50_ms DOUBLE PRECISION;
ALTER TABLE result_latest ADD COLUMN source_addr TEXT;
ALTER TABLE result_latest ADD COLUMN target_addr TEXT;
UPDATE result_latest SET source = r.source, target = r.target, family = r.family,
    direction = r.direction, campaign = r.campaign, throughput_bps = r.throughput_bps,
    loss_pct = r.loss_pct, pdr_pct = r.pdr_pct, jitter_ms = r.jitter_ms,
    rtt_p50_ms = r.rtt_p50_ms, source_addr = r.source_addr, target_addr = r.target_addr
    FROM results r WHERE r.id = result_latest.result_id AND r.start_ns = result_latest.latest_ns;
"#,
    // 20: each 15-minute and daily summary of readings keeps the sum of
    // its readings beside their mean, and the count that sum is of: a
    // write adds its new readings' count and sum to the summaries they
    // fall in (the mean is their quotient, exact as a recomputation's),
    // and reads nothing back. A sum whose count is not the row's (an
    // older sonde still writing recomputes count and mean, not the sum)
    // is not trusted. Filled here from the readings, the days from their
    // buckets.
    r#"
ALTER TABLE readings_15min ADD COLUMN total DOUBLE PRECISION;
ALTER TABLE readings_15min ADD COLUMN total_count BIGINT;
ALTER TABLE readings_day ADD COLUMN total DOUBLE PRECISION;
ALTER TABLE readings_day ADD COLUMN total_count BIGINT;
UPDATE readings_15min SET total_count = count, total = (SELECT SUM(r.value) FROM readings r
    WHERE r.probe = readings_15min.probe AND r.metric = readings_15min.metric
    AND r.at_ns >= readings_15min.start_ns AND r.at_ns < readings_15min.start_ns + 900000000000);
UPDATE readings_day SET total_count = count, total = (SELECT SUM(b.total) FROM readings_15min b
    WHERE b.probe = readings_day.probe AND b.metric = readings_day.metric
    AND b.start_ns >= readings_day.start_ns AND b.start_ns < readings_day.start_ns + 86400000000000);
"#,
];

/// The columns of a result's `results` row that `result_latest` keeps a
/// copy of since 19, by the same names.
pub const LATEST_COLUMNS: [&str; 12] = [
    "source",
    "target",
    "family",
    "direction",
    "campaign",
    "throughput_bps",
    "loss_pct",
    "pdr_pct",
    "jitter_ms",
    "rtt_p50_ms",
    "source_addr",
    "target_addr",
];

/// The migration that partitions the archive by month on PostgreSQL (its
/// SQL is SQLite's only).
pub const PARTITIONED: u32 = 18;

/// The migration that made `result_figures` (one row per figure since
/// 14, filled from the results' documents as `indexed_metrics` says).
pub const RESULT_FIGURES: u32 = 10;

/// The last migration to change `path_latest` (made in 9, per direction
/// in 11), which the store then fills from the results kept before it.
pub const PATH_LATEST: u32 = 11;

/// The schema version this build writes and reads.
pub fn current() -> u32 {
    MIGRATIONS.len() as u32
}

/// The bookkeeping table, made before any migration.
pub const VERSION_TABLE: &str = "CREATE TABLE IF NOT EXISTS sonde_schema (version BIGINT NOT NULL)";
