-- wrk -s summary.lua: after the run, one line of JSON with the figures
-- bench/http-vs-wrk/run compares (wrk's latencies are in microseconds).
done = function(summary, latency, requests)
  local seconds = summary.duration / 1e6
  local e = summary.errors
  io.write(string.format(
    '{"requests": %d, "duration_s": %.6f, "requests_per_s": %.3f, ' ..
    '"errors": %d, "p50_ms": %.3f, "p90_ms": %.3f, "p99_ms": %.3f, ' ..
    '"p99_9_ms": %.3f, "max_ms": %.3f}\n',
    summary.requests, seconds, summary.requests / seconds,
    e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(50) / 1e3, latency:percentile(90) / 1e3,
    latency:percentile(99) / 1e3, latency:percentile(99.9) / 1e3,
    latency.max / 1e3))
end
