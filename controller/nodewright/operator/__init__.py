"""The controller process: the production driver of the reconcilers (work queues, timers,
leader election), its configuration, probes, metrics endpoint, JSON logs and shutdown.
`main.run` is `nodewright controller`; `process.Operator` is the part tests drive."""
