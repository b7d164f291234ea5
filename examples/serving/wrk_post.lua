-- wrk_post.lua - wrk's request for kt_serve's non-streaming completions (see README.md):
--   wrk -t1 -c4 -d10s -s examples/serving/wrk_post.lua http://127.0.0.1:PORT/v1/completions
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"prompt": "measure the kernel inside the server", "max_tokens": 16, "seed": 1}'
