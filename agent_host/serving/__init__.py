"""serving layer (see docs/architecture.md): a Build made into a ready OpenAI-compatible endpoint.

- `server.start(build, *, log_dir, seed=0, startup_timeout=None, port=None) -> ManagedServer`
  (context manager; `.endpoint`, `.alive()`, `.stop()`, `.restart()`, `.log_path`,
  `.last_log_lines(n)`, `.timings`, `.pid`, `.managed`)
- `metrics.snapshot(endpoint)`, `metrics.delta(before, after)`, `metrics.summarize(delta)`
- `models.ensure_model(name)` (`smollm2-135m`, `tiny-random`, `tiny-vlm`, `smollm2-135m-w4a16`,
  ...), `models.embedded_default_build()`, `models.tiny_random_build()`,
  `models.tiny_vlm_build()` (the builds themselves are config data: config/embedded_builds.yaml)
- `quantize.quantize(model, out, options, samples)`: GPTQ in the quantize environment
- `launch.plan(build, ...)`: the command line and environment of a build's server
- `procs`: process groups, PDEATHSIG, pidfiles and reaping of orphaned servers
"""
