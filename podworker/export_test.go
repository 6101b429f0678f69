package podworker

// EngineNames and UseEngine let the external tests and benchmarks run the Runner on each
// engine; GoroutinesCreated counts the goroutines the process started.
var (
	EngineNames = func() []string {
		var names []string
		for _, e := range engines {
			names = append(names, e.name)
		}
		return names
	}()
	UseEngine         = useEngine
	GoroutinesCreated = goroutinesCreated
)
