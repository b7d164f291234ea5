-- wrk_latencies.lua - wrk_post.lua's request (kt_serve's non-streaming completion), and at the
-- end every latency wrk recorded (microseconds, one a line, from its histogram) written to the
-- file $KT_WRK_OUT, with a last line "requests N errors N duration_us N".
-- Run from the repository's root (bench_service_wrk.sh does).
dofile("examples/serving/wrk_post.lua")

done = function(summary, latency, requests)
  local f = assert(io.open(os.getenv("KT_WRK_OUT"), "w"))
  for i = 1, #latency do
    local value, count = latency(i)
    for _ = 1, count do
      f:write(string.format("%d\n", value))
    end
  end
  local e = summary.errors
  f:write(string.format("requests %d errors %d duration_us %d\n", summary.requests,
    e.connect + e.read + e.write + e.status + e.timeout, summary.duration))
  f:close()
end
