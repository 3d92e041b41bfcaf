//! Readings from probes (sensor values, router interface counters, any
//! metric with a unit): what a valid reading is, and how readings fold
//! into 15-minute aggregates and each day's highs and lows
//! (docs/readings.md).
